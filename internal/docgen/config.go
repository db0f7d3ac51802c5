package docgen

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// ConfigReference returns the Markdown reference of a YAML config: the struct type
// typeName of the Go package in dir, read from its source (go/parser, go/doc). Each
// struct the config nests is a section under a "### `key`" heading (keyPrefix and the
// YAML keys leading to it) with the type's doc comment and a table of its fields: YAML
// key, type, default and the field's doc comment. A field's YAML key is its yaml tag;
// its default is what the doc comment says ("default 10", "Defaults to ID", "Default:
// none"), a Default* constant of the package named there replaced by its value. A field
// without a yaml tag is not part of the YAML and left out.
func ConfigReference(dir, typeName, keyPrefix string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return "", err
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "", doc.AllDecls)
	if err != nil {
		return "", err
	}
	g := configGen{types: map[string]*doc.Type{}, consts: map[string]string{}}
	for _, t := range d.Types {
		g.types[t.Name] = t
		g.collectConsts(t.Consts)
	}
	g.collectConsts(d.Consts)
	if _, ok := g.types[typeName]; !ok {
		return "", fmt.Errorf("%s: no type %s", dir, typeName)
	}
	if err := g.section(typeName, keyPrefix); err != nil {
		return "", err
	}
	return g.b.String(), nil
}

type configGen struct {
	types  map[string]*doc.Type
	consts map[string]string // name → Go literal value, for constants of a basic literal
	b      strings.Builder
}

func (g *configGen) collectConsts(values []*doc.Value) {
	for _, v := range values {
		for _, spec := range v.Decl.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						g.consts[name.Name] = lit.Value
					}
				}
			}
		}
	}
}

// structOf returns the struct type named name in the package, or nil.
func (g *configGen) structOf(name string) *ast.StructType {
	t, ok := g.types[name]
	if !ok {
		return nil
	}
	for _, spec := range t.Decl.Specs {
		if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == name {
			if st, ok := ts.Type.(*ast.StructType); ok && hasYAMLFields(st) {
				return st
			}
		}
	}
	return nil
}

func hasYAMLFields(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if yamlKey(f) != "" {
			return true
		}
	}
	return false
}

// yamlKey returns the field's YAML key, "" for a field without a yaml tag.
func yamlKey(f *ast.Field) string {
	if f.Tag == nil || len(f.Names) != 1 || !f.Names[0].IsExported() {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	key, _, _ := strings.Cut(reflect.StructTag(tag).Get("yaml"), ",")
	if key == "-" {
		return ""
	}
	return key
}

// nested returns the struct type name a field's YAML value is a struct (or a list of
// structs) of, and the key suffix of its elements ("" or "[]").
func (g *configGen) nested(expr ast.Expr) (name, suffix string) {
	switch e := expr.(type) {
	case *ast.Ident:
		if g.structOf(e.Name) != nil {
			return e.Name, ""
		}
	case *ast.ArrayType:
		if id, ok := e.Elt.(*ast.Ident); ok && e.Len == nil && g.structOf(id.Name) != nil {
			return id.Name, "[]"
		}
	}
	return "", ""
}

func (g *configGen) section(typeName, key string) error {
	st := g.structOf(typeName)
	heading := "`" + key + "`"
	if key == "" {
		heading = "Top level"
	}
	fmt.Fprintf(&g.b, "### %s\n\n", heading)
	if text := paragraph(g.types[typeName].Doc); text != "" {
		fmt.Fprintf(&g.b, "%s\n\n", text)
	}
	type sub struct{ typeName, key string }
	var rows [][]string
	var subs []sub
	for _, f := range st.Fields.List {
		k := yamlKey(f)
		if k == "" {
			continue
		}
		full := k
		if key != "" {
			full = key + "." + k
		}
		if name, suffix := g.nested(f.Type); name != "" {
			subs = append(subs, sub{name, full + suffix})
			continue
		}
		text := paragraph(f.Doc.Text())
		rows = append(rows, []string{"`" + full + "`", typeString(f.Type), g.defaultOf(text), text})
	}
	if len(rows) > 0 {
		g.b.WriteString(Table([]string{"key", "type", "default", "meaning"}, rows))
		g.b.WriteString("\n")
	} else if len(subs) == 0 {
		return fmt.Errorf("type %s has no YAML fields", typeName)
	}
	for _, s := range subs {
		if err := g.section(s.typeName, s.key); err != nil {
			return err
		}
	}
	return nil
}

var yamlNote = regexp.MustCompile(` ?\(YAML "[^"]*"\)`)

// paragraph joins a doc comment into one paragraph without its "(YAML "key")" notes.
func paragraph(text string) string {
	return yamlNote.ReplaceAllString(strings.Join(strings.Fields(text), " "), "")
}

var defaultPhrase = regexp.MustCompile(`(?:^|[;.,(] ?)(?:[Dd]efaults? to|[Dd]efault:?) ((?:"[^"]*"|\[[^\]]*\]|[^;, ])+(?: and (?:"[^"]*"|[^;, ])+)?)`)

// defaultOf returns the default a field's doc states, "—" when it states none.
func (g *configGen) defaultOf(text string) string {
	m := defaultPhrase.FindStringSubmatch(text)
	if m == nil {
		return "—"
	}
	words := strings.Split(strings.TrimRight(m[1], ".:"), " and ")
	for i, w := range words {
		if v, ok := g.consts[w]; ok {
			w = v
		}
		words[i] = "`" + strings.Trim(w, `"`) + "`"
	}
	return strings.Join(words, " and ")
}

// typeString names a field's type as a YAML reader sees it.
func typeString(expr ast.Expr) string {
	switch e := expr.(type) {
	case *ast.Ident:
		switch e.Name {
		case "string", "Secret":
			return "string"
		case "bool":
			return "boolean"
		case "int", "int32", "int64", "uint", "uint32":
			return "integer"
		case "float32", "float64":
			return "number"
		}
		return e.Name
	case *ast.StarExpr:
		return typeString(e.X)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" && e.Sel.Name == "Duration" {
			return "duration"
		}
		return "string" // a named string type of another package, such as cloudapi.IPFamily
	case *ast.ArrayType:
		return "list of " + typeString(e.Elt)
	case *ast.MapType:
		return "map of " + typeString(e.Key) + " to " + typeString(e.Value)
	}
	return fmt.Sprintf("%T", expr)
}
