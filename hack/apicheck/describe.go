package main

import (
	"fmt"
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// Describe returns the exported API of pkg as the lines of the API description, sorted:
// one line per exported constant, variable, function, type, method, struct field and
// interface method, each starting with "pkg <import path>, ". The format is in doc.go.
//
// Types of pkg itself are written unqualified, every other package's by its full import
// path, so that two packages of the same name (k8s.io/api/core/v1 and
// k8s.io/apimachinery/pkg/apis/meta/v1) never read alike. Parameter and result names are
// left out: they are not API.
//
// An error names a type that the description has no words for (a kind of type added to Go
// after this program was written), rather than writing it wrong.
func Describe(pkg *types.Package) ([]string, error) {
	d := describer{pkg: pkg, prefix: "pkg " + pkg.Path() + ", "}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			d.emit("const %s %s = %s", name, d.typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			d.emit("var %s %s", name, d.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			d.emit("func %s%s%s", name, d.typeParams(sig.TypeParams()), d.signature(sig))
		case *types.TypeName:
			d.typeName(obj)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	sort.Strings(d.lines)
	return d.lines, nil
}

// describer collects the lines of one package.
type describer struct {
	pkg    *types.Package
	prefix string
	lines  []string
	err    error // the first type typ could not write
}

func (d *describer) emit(format string, args ...any) {
	d.lines = append(d.lines, d.prefix+fmt.Sprintf(format, args...))
}

// typeName writes an exported type: its declaration line, then its struct fields or
// interface methods, then the methods of its value and pointer method sets (promoted
// methods included: callers reach them by the same selector).
func (d *describer) typeName(obj *types.TypeName) {
	name := obj.Name()
	if alias, ok := obj.Type().(*types.Alias); ok {
		d.emit("type %s%s = %s", name, d.typeParams(alias.TypeParams()), d.typ(alias.Rhs()))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok { // an alias when the importer does not materialize aliases
		d.emit("type %s = %s", name, d.typ(obj.Type()))
		return
	}
	head := name + d.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		d.emit("type %s struct", head)
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			line := f.Name() + " " + d.typ(f.Type())
			if f.Embedded() {
				line = "embedded " + d.typ(f.Type())
			}
			d.emit("type %s struct, %s%s", head, line, tag(u.Tag(i)))
		}
	case *types.Interface:
		d.emit("type %s %s", head, d.interfaceDecl(u))
		for i := range u.NumMethods() {
			m := u.Method(i)
			if m.Exported() {
				d.emit("type %s interface, %s%s", head, m.Name(), d.signature(m.Type().(*types.Signature)))
			}
		}
		return // an interface's methods are its own lines, not method sets
	default:
		d.emit("type %s %s", head, d.typ(u))
	}
	recv := name
	if tps := named.TypeParams(); tps.Len() > 0 {
		names := make([]string, tps.Len())
		for i := range tps.Len() {
			names[i] = tps.At(i).Obj().Name()
		}
		recv += "[" + strings.Join(names, ", ") + "]"
	}
	values := types.NewMethodSet(named)
	for i := range values.Len() {
		d.method(recv, values.At(i))
	}
	pointers := types.NewMethodSet(types.NewPointer(named))
	for i := range pointers.Len() {
		if sel := pointers.At(i); values.Lookup(sel.Obj().Pkg(), sel.Obj().Name()) == nil {
			d.method("*"+recv, sel)
		}
	}
}

func (d *describer) method(recv string, sel *types.Selection) {
	if !sel.Obj().Exported() {
		return
	}
	d.emit("method (%s) %s%s", recv, sel.Obj().Name(), d.signature(sel.Type().(*types.Signature)))
}

// interfaceDecl is what a named interface's declaration line says after "type I ": just
// "interface" when a type outside the package can implement it (so a new method breaks
// implementers), "interface{ unexported methods }" when an unexported method keeps
// every other package from implementing it, and the whole literal for a constraint with
// type terms.
func (d *describer) interfaceDecl(u *types.Interface) string {
	if !u.IsMethodSet() {
		return d.typ(u)
	}
	for i := range u.NumMethods() {
		if !u.Method(i).Exported() {
			return sealedInterface
		}
	}
	return "interface"
}

// sealedInterface is the declaration of an interface with an unexported method.
const sealedInterface = "interface{ unexported methods }"

// tag writes a struct tag as Go source does, after a space; the yaml and json tags are
// the names a field has in the cloud config and on the wire, so they are API too.
func tag(t string) string {
	if t == "" {
		return ""
	}
	if strconv.CanBackquote(t) {
		return " `" + t + "`"
	}
	return " " + strconv.Quote(t)
}

func (d *describer) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range tps.Len() {
		tp := tps.At(i)
		parts[i] = tp.Obj().Name() + " " + d.typ(tp.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature writes "(P1, P2) R" or "(P1) (R1, R2)": types only, the last parameter as
// "...T" when variadic.
func (d *describer) signature(sig *types.Signature) string {
	var b strings.Builder
	b.WriteString("(")
	params := sig.Params()
	for i := range params.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		b.WriteString(d.typ(t))
	}
	b.WriteString(")")
	results := sig.Results()
	switch results.Len() {
	case 0:
	case 1:
		b.WriteString(" " + d.typ(results.At(0).Type()))
	default:
		parts := make([]string, results.Len())
		for i := range results.Len() {
			parts[i] = d.typ(results.At(i).Type())
		}
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	return b.String()
}

// typ writes a type the way it is written in Go, with three normalizations that keep the
// description stable across spellings of the same type: an alias is written as the type
// it stands for (identity is what callers depend on), an empty interface as "any", and
// byte and rune as uint8 and int32.
func (d *describer) typ(t types.Type) string {
	if a, ok := t.(*types.Alias); ok && a.Obj().Pkg() == nil && a.Obj().Name() == "any" {
		return "any"
	}
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		switch t.Kind() {
		case types.Byte:
			return "uint8"
		case types.Rune:
			return "int32"
		case types.UnsafePointer:
			return "unsafe.Pointer"
		}
		return t.Name()
	case *types.Pointer:
		return "*" + d.typ(t.Elem())
	case *types.Slice:
		return "[]" + d.typ(t.Elem())
	case *types.Array:
		return "[" + strconv.FormatInt(t.Len(), 10) + "]" + d.typ(t.Elem())
	case *types.Map:
		return "map[" + d.typ(t.Key()) + "]" + d.typ(t.Elem())
	case *types.Chan:
		elem := d.typ(t.Elem())
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + elem
		case types.RecvOnly:
			return "<-chan " + elem
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			elem = "(" + elem + ")"
		}
		return "chan " + elem
	case *types.Signature:
		return "func" + d.signature(t)
	case *types.Struct:
		fields := make([]string, t.NumFields())
		for i := range t.NumFields() {
			f := t.Field(i)
			fields[i] = d.typ(f.Type()) + tag(t.Tag(i))
			if !f.Embedded() {
				fields[i] = f.Name() + " " + fields[i]
			}
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	case *types.Interface:
		return d.interfaceLiteral(t)
	case *types.Union:
		terms := make([]string, t.Len())
		for i := range t.Len() {
			terms[i] = d.typ(t.Term(i).Type())
			if t.Term(i).Tilde() {
				terms[i] = "~" + terms[i]
			}
		}
		return strings.Join(terms, " | ")
	case *types.Named:
		return d.qualified(t.Obj()) + d.typeArgs(t.TypeArgs())
	case *types.TypeParam:
		return t.Obj().Name()
	}
	// The cases above are every type a declaration can have in the Go this was written
	// for; a new kind of type is an error rather than a line that could hide a change.
	if d.err == nil {
		d.err = fmt.Errorf("package %s: no description for the type %s (%T): teach hack/apicheck/describe.go to write it", d.pkg.Path(), t, t)
	}
	return "?"
}

func (d *describer) interfaceLiteral(t *types.Interface) string {
	if t.Empty() && !t.IsImplicit() {
		return "any"
	}
	var elems []string
	for i := range t.NumEmbeddeds() {
		elems = append(elems, d.typ(t.EmbeddedType(i)))
	}
	if t.IsImplicit() { // the constraint [T ~int | ~string], written without interface{}
		return strings.Join(elems, "; ")
	}
	for i := range t.NumExplicitMethods() {
		m := t.ExplicitMethod(i)
		elems = append(elems, m.Name()+d.signature(m.Type().(*types.Signature)))
	}
	return "interface{ " + strings.Join(elems, "; ") + " }"
}

func (d *describer) qualified(obj *types.TypeName) string {
	if obj.Pkg() == nil || obj.Pkg() == d.pkg { // error, comparable, or this package's own
		return obj.Name()
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

func (d *describer) typeArgs(args *types.TypeList) string {
	if args.Len() == 0 {
		return ""
	}
	parts := make([]string, args.Len())
	for i := range args.Len() {
		parts[i] = d.typ(args.At(i))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
