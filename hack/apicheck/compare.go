package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
)

// Verdict says whom an API change breaks.
type Verdict int

// The verdicts, from harmless to worst.
const (
	// Compatible: code that compiled against the old API compiles against the new one
	// (an addition; Go's own compatibility rules count a new struct field or method here).
	Compatible Verdict = iota
	// BreaksImplementers: types of other packages that implement an interface no longer
	// do (a method added to an interface that other packages can implement).
	BreaksImplementers
	// BreaksCallers: code that uses the identifier no longer compiles, or means something
	// else (a removal, a changed signature, type, constant value or struct tag).
	BreaksCallers
	// BreaksBoth: a changed method of an interface other packages can implement.
	BreaksBoth
)

// String is the verdict as the report prints it.
func (v Verdict) String() string {
	switch v {
	case Compatible:
		return "compatible"
	case BreaksImplementers:
		return "BREAKING (implementers)"
	case BreaksCallers:
		return "BREAKING (callers)"
	case BreaksBoth:
		return "BREAKING (callers, implementers)"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Breaking reports whether the change breaks any code that compiled before.
func (v Verdict) Breaking() bool { return v != Compatible }

// Change is one difference between two API descriptions.
type Change struct {
	// Kind is "added", "removed" or "changed".
	Kind string
	// Verdict says whom the change breaks.
	Verdict Verdict
	// Line is the new line, or the old one when removed; for a whole package, "pkg PATH".
	Line string
	// Was is the old line of a change.
	Was string
	// Folded counts the lines of a type or package added or removed with it that the
	// change stands for (its fields and methods; its identifiers).
	Folded int
}

// kind of line in the description.
type kind int

const (
	declLine    kind = iota // const, var, func or type declaration
	fieldLine               // type T struct, F ...
	imethodLine             // type I interface, M(...)
	methodLine              // method (T) M(...)
)

// feature is one parsed line.
type feature struct {
	line  string
	pkg   string
	key   string // unique within pkg: "func F", "type T", "type T, F", "method T.M", ...
	kind  kind
	owner string // the type a field, interface method or method belongs to
	ptr   bool   // a method of *T only
	decl  string // a type declaration line's text after the name: "struct", "interface", ...
}

// parse reads one line of the description (see doc.go for the grammar).
func parse(line string) (feature, error) {
	bad := func(why string) (feature, error) {
		return feature{}, fmt.Errorf("%q: %s", line, why)
	}
	rest, ok := strings.CutPrefix(line, "pkg ")
	if !ok {
		return bad(`a line starts with "pkg "`)
	}
	pkg, rest, ok := strings.Cut(rest, ", ")
	if !ok {
		return bad(`no ", " after the package path`)
	}
	f := feature{line: line, pkg: pkg}
	word, body, _ := strings.Cut(rest, " ")
	switch word {
	case "const", "var":
		name, _, _ := strings.Cut(body, " ")
		f.key = word + " " + name
	case "func":
		name := ident(body)
		f.key = "func " + name
	case "method":
		recv, ok := strings.CutPrefix(body, "(")
		if !ok {
			return bad("no ( after method")
		}
		recv, after, ok := strings.Cut(recv, ") ")
		if !ok {
			return bad("no ) after the receiver")
		}
		recv, f.ptr = strings.CutPrefix(recv, "*")
		f.owner = ident(recv)
		f.kind = methodLine
		f.key = "method " + f.owner + "." + ident(after)
	case "type":
		name := ident(body)
		after := skipBrackets(body[len(name):])
		decl, ok := strings.CutPrefix(after, " ")
		if name == "" || !ok {
			return bad("no type name and declaration after type")
		}
		if member, ok := strings.CutPrefix(decl, "struct, "); ok {
			f.kind, f.owner = fieldLine, name
			if embedded, ok := strings.CutPrefix(member, "embedded "); ok {
				member = embeddedName(embedded)
			}
			f.key = "type " + name + ", " + ident(member)
		} else if member, ok := strings.CutPrefix(decl, "interface, "); ok {
			f.kind, f.owner = imethodLine, name
			f.key = "type " + name + ", " + ident(member)
		} else {
			f.key, f.decl = "type "+name, decl
		}
	default:
		return bad("not a const, var, func, type or method")
	}
	if strings.HasSuffix(f.key, " ") || strings.HasSuffix(f.key, ".") || strings.HasSuffix(f.key, ", ") {
		return bad("no identifier where one belongs")
	}
	return f, nil
}

// ident is the identifier s starts with.
func ident(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	if end < 0 {
		return s
	}
	return s[:end]
}

// skipBrackets drops a leading type parameter list "[...]".
func skipBrackets(s string) string {
	if !strings.HasPrefix(s, "[") {
		return s
	}
	depth := 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}

// embeddedName is the field name of an embedded field of type s ("*k8s.io/x.T[int]" → "T").
func embeddedName(s string) string {
	s = strings.TrimPrefix(s, "*")
	if end := strings.IndexAny(s, "[ "); end >= 0 {
		s = s[:end]
	}
	if dot := strings.LastIndex(s, "."); dot >= 0 {
		s = s[dot+1:]
	}
	return s
}

// description is a parsed API description.
type description struct {
	features map[string]feature // by package and key
	pkgs     map[string]int     // lines per package
}

func index(lines []string) (description, error) {
	d := description{features: make(map[string]feature), pkgs: make(map[string]int)}
	for _, line := range lines {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f, err := parse(line)
		if err != nil {
			return description{}, err
		}
		id := f.pkg + "\x00" + f.key
		if prev, dup := d.features[id]; dup {
			return description{}, fmt.Errorf("two lines describe one identifier:\n  %s\n  %s", prev.line, line)
		}
		d.features[id] = f
		d.pkgs[f.pkg]++
	}
	for _, f := range d.features {
		if f.owner != "" && !d.has(f.pkg, "type "+f.owner) {
			return description{}, fmt.Errorf("no declaration of type %s for the line %q", f.owner, f.line)
		}
	}
	return d, nil
}

func (d description) has(pkg, key string) bool {
	_, ok := d.features[pkg+"\x00"+key]
	return ok
}

// Compare lists the changes from the API description oldLines to newLines, breaking ones
// first. A type or package that was added or removed as a whole is one change, not one
// per line. Lines starting with # and empty lines are skipped; any other line that is not
// in the description's grammar is an error.
func Compare(oldLines, newLines []string) ([]Change, error) {
	old, err := index(oldLines)
	if err != nil {
		return nil, fmt.Errorf("the old API: %w", err)
	}
	cur, err := index(newLines)
	if err != nil {
		return nil, fmt.Errorf("the new API: %w", err)
	}
	var changes []Change
	wholes := make(map[string]*Change) // a whole package or type added or removed, by id
	whole := func(id string, c Change) *Change {
		if w, ok := wholes[id]; ok {
			return w
		}
		w := &c
		wholes[id] = w
		return w
	}

	for id, f := range sortedFeatures(old) {
		if _, ok := cur.features[id]; ok {
			continue
		}
		switch {
		case cur.pkgs[f.pkg] == 0:
			whole("pkg "+f.pkg, Change{Kind: "removed", Verdict: BreaksCallers, Line: "pkg " + f.pkg}).Folded++
		case f.owner != "" && !cur.has(f.pkg, "type "+f.owner):
			whole(f.pkg+"\x00type "+f.owner, Change{Kind: "removed", Verdict: BreaksCallers}).Folded++
		case f.kind == declLine && strings.HasPrefix(f.key, "type "):
			whole(id, Change{Kind: "removed", Verdict: BreaksCallers}).Line = f.line
		default:
			changes = append(changes, Change{Kind: "removed", Verdict: BreaksCallers, Line: f.line})
		}
	}

	for id, f := range sortedFeatures(cur) {
		o, existed := old.features[id]
		switch {
		case existed && o.line == f.line:
		case existed:
			changes = append(changes, Change{Kind: "changed", Verdict: changeVerdict(o, f, cur), Line: f.line, Was: o.line})
		case old.pkgs[f.pkg] == 0:
			whole("pkg "+f.pkg, Change{Kind: "added", Verdict: Compatible, Line: "pkg " + f.pkg}).Folded++
		case f.owner != "" && !old.has(f.pkg, "type "+f.owner):
			whole(f.pkg+"\x00type "+f.owner, Change{Kind: "added", Verdict: Compatible}).Folded++
		case f.kind == declLine && strings.HasPrefix(f.key, "type "):
			whole(id, Change{Kind: "added", Verdict: Compatible}).Line = f.line
		case f.kind == imethodLine && implementable(cur, f):
			changes = append(changes, Change{Kind: "added", Verdict: BreaksImplementers, Line: f.line})
		default:
			changes = append(changes, Change{Kind: "added", Verdict: Compatible, Line: f.line})
		}
	}

	for _, w := range wholes {
		changes = append(changes, *w)
	}
	sort.Slice(changes, func(i, j int) bool {
		a, b := changes[i], changes[j]
		if a.Verdict != b.Verdict {
			return a.Verdict > b.Verdict
		}
		return a.Line < b.Line
	})
	return changes, nil
}

// sortedFeatures yields the features of d by id, so that the report is deterministic.
func sortedFeatures(d description) func(yield func(string, feature) bool) {
	ids := make([]string, 0, len(d.features))
	for id := range d.features {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return func(yield func(string, feature) bool) {
		for _, id := range ids {
			if !yield(id, d.features[id]) {
				return
			}
		}
	}
}

// implementable reports whether types outside its package can implement the interface
// that the interface method line f belongs to, in the description d.
func implementable(d description, f feature) bool {
	decl, ok := d.features[f.pkg+"\x00type "+f.owner]
	return ok && decl.decl == "interface"
}

// sameHead reports whether two type declaration lines declare the same type name with
// the same type parameters.
func sameHead(a, b feature) bool {
	return strings.TrimSuffix(a.line, a.decl) == strings.TrimSuffix(b.line, b.decl)
}

// changeVerdict judges a line that changed.
func changeVerdict(old, cur feature, d description) Verdict {
	switch {
	case old.kind == methodLine && old.ptr && !cur.ptr &&
		strings.Replace(old.line, "(*", "(", 1) == cur.line:
		// A method of *T that moved to T: *T still has it, and now T too.
		return Compatible
	case old.kind == declLine && sameHead(old, cur) && old.decl == sealedInterface && cur.decl == "interface":
		// An interface that only its package could implement lost its unexported method.
		return Compatible
	case old.kind == declLine && sameHead(old, cur) && old.decl == "interface" && cur.decl == sealedInterface:
		// Other packages can no longer implement it; callers see the same methods.
		return BreaksImplementers
	case cur.kind == imethodLine && implementable(d, cur):
		return BreaksBoth
	}
	return BreaksCallers
}

// Report writes the changes for a person: one line each, marked with its verdict, and
// what to do about them.
func Report(w io.Writer, file string, changes []Change) {
	breaking := 0
	for _, c := range changes {
		if c.Verdict.Breaking() {
			breaking++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The exported API differs from %s: %d breaking, %d compatible change(s).\n\n",
		file, breaking, len(changes)-breaking)
	const width = len("BREAKING (callers, implementers)")
	for _, c := range changes {
		line := c.Line
		switch {
		case c.Folded > 0 && !strings.Contains(c.Line, ", "):
			line += fmt.Sprintf(" (the whole package, %d lines)", c.Folded)
		case c.Folded > 0:
			line += fmt.Sprintf(" (with %d more lines: its fields and methods)", c.Folded)
		}
		fmt.Fprintf(&b, "%-*s  %-7s  %s\n", width, c.Verdict, c.Kind, line)
		if c.Was != "" {
			fmt.Fprintf(&b, "%-*s  %-7s  %s\n", width, "", "was", c.Was)
		}
	}
	fmt.Fprintf(&b, "\nIf the changes are intended, record them with `make api` and commit %s;\n", file)
	b.WriteString("give each breaking change an entry under Unreleased in CHANGELOG.md that says what\n")
	b.WriteString("consumers must do (docs/versioning.md).\n")
	_, _ = io.WriteString(w, b.String()) // to the terminal: nowhere else to report an error
}
