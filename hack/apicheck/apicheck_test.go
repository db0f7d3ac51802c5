package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const examplePath = "github.com/ccmkit/ccmkit/hack/apicheck/testdata/example"

// TestDescribeExample pins the description's format on testdata/example, read both from
// the compiler's export data (as make api does) and type checked from source: the two must
// agree, so nothing the export data drops or spells differently goes unnoticed.
func TestDescribeExample(t *testing.T) {
	want := []string{
		`const Mode Kind = 1`,
		`const Name untyped string = "example"`,
		`const Ratio untyped float = 1/1000`,
		`const Retries untyped int = 3`,
		`const Wait time.Duration = 2000000000`,
		`func Bytes([]uint8, int32) (int, error)`,
		`func Chans(chan int, <-chan string, chan<- error, chan (<-chan int))`,
		`func Sum[N Number, K comparable](map[K]N) N`,
		`func Variadic(context.Context, string, ...any) (int, error)`,
		`func Within(time.Duration, any) bool`,
		`method (*Base) Reset()`,
		`method (*Config) Validate() error`,
		`method (*Set[T]) Add(T)`,
		`method (Config) Read([]uint8) (int, error)`,
		`method (Config) Reset()`,
		`method (Kind) String() string`,
		`type Base struct`,
		"type Base struct, Version string `json:\"version\"`",
		`type Config struct`,
		`type Config struct, Buckets [4]uint8`,
		`type Config struct, Hook func(context.Context, *Config) error`,
		"type Config struct, Limits struct{QPS float64 `yaml:\"qps\"`; Burst int} `yaml:\"limits\"`",
		"type Config struct, Timeout time.Duration `yaml:\"timeout\" json:\"timeout,omitempty\"`",
		`type Config struct, embedded *Base`,
		`type Config struct, embedded io.Reader`,
		`type Duration = time.Duration`,
		`type Handler func(context.Context, <-chan []string) (map[string][]*Config, error)`,
		`type Kind int`,
		`type Number interface{ ~int | ~int64 | float64 }`,
		`type Sealed interface, Kind() Kind`,
		`type Sealed interface{ unexported methods }`,
		`type Set[T comparable] struct`,
		`type Set[T comparable] struct, Items map[T]struct{}`,
		`type Store interface`,
		`type Store interface, Close() error`,
		`type Store interface, Get(context.Context, string) ([]uint8, error)`,
		`var ErrExample error`,
	}
	for i := range want {
		want[i] = "pkg " + examplePath + ", " + want[i]
	}
	tests := []struct {
		name string
		load func(t *testing.T) *types.Package
	}{
		{"export data", func(t *testing.T) *types.Package {
			pkgs, err := Load(".", []string{examplePath})
			require.NoError(t, err)
			require.Len(t, pkgs, 1)
			return pkgs[0]
		}},
		{"source", func(t *testing.T) *types.Package {
			return checkDir(t, filepath.Join("testdata", "example"), examplePath)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Describe(tt.load(t))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// checkDir type checks the package in dir from source, its imports from the standard
// library's export data.
func checkDir(t *testing.T, dir, path string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", nil)}
	pkg, err := conf.Check(path, fset, files, nil)
	require.NoError(t, err)
	return pkg
}

// fixtures type checks Go sources held in memory: "example.com/dep" for other packages'
// types, and the package under test at "example.com/p".
type fixtures map[string]string

func (fx fixtures) Import(path string) (*types.Package, error) {
	src, ok := fx[path]
	if !ok {
		return nil, fmt.Errorf("no fixture %s", path)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path+".go", src, 0)
	if err != nil {
		return nil, err
	}
	conf := types.Config{Importer: fx}
	return conf.Check(path, fset, []*ast.File{f}, nil)
}

const depSource = `package dep
type T struct{}
type U struct{}`

// describeSource is the description of the package p with the source src ("" is no
// package at all).
func describeSource(t *testing.T, src string) []string {
	t.Helper()
	if src == "" {
		return nil
	}
	pkg, err := fixtures{"example.com/dep": depSource, "example.com/p": src}.Import("example.com/p")
	require.NoError(t, err, src)
	lines, err := Describe(pkg)
	require.NoError(t, err)
	return lines
}

// summary is each change as "verdict kind line", without the package prefix.
func summary(changes []Change) []string {
	var out []string
	for _, c := range changes {
		s := fmt.Sprintf("%s %s %s", c.Verdict, c.Kind, strings.TrimPrefix(c.Line, "pkg example.com/p, "))
		if c.Was != "" {
			s += " | was " + strings.TrimPrefix(c.Was, "pkg example.com/p, ")
		}
		if c.Folded > 0 {
			s += fmt.Sprintf(" +%d", c.Folded)
		}
		out = append(out, s)
	}
	return out
}

func TestCompare(t *testing.T) {
	const (
		callers      = "BREAKING (callers)"
		implementers = "BREAKING (implementers)"
		both         = "BREAKING (callers, implementers)"
		compatible   = "compatible"
	)
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{
			name: "unchanged",
			old:  "package p\nfunc F(int) error { return nil }",
			new:  "package p\nfunc F(int) error { return nil }",
		},
		{
			name: "only names and spellings change: parameter names, interface{} and any, byte and uint8, an alias",
			old:  "package p\ntype A = int\nfunc F(a interface{}, b []byte, c A) (err error) { return nil }",
			new:  "package p\ntype A = int\nfunc F(x any, y []uint8, z int) error { return nil }",
		},
		{
			name: "unexported declarations are not API",
			old:  "package p\nfunc f() {}\ntype T struct{ x int }",
			new:  "package p\nfunc g(int) {}\ntype T struct{ y string }",
		},
		{
			name: "a function added",
			old:  "package p\nfunc F() {}",
			new:  "package p\nfunc F() {}\nfunc G() {}",
			want: []string{compatible + " added func G()"},
		},
		{
			name: "a function removed",
			old:  "package p\nfunc F() {}\nfunc G() {}",
			new:  "package p\nfunc F() {}",
			want: []string{callers + " removed func G()"},
		},
		{
			name: "a signature changed",
			old:  "package p\nfunc F(string) error { return nil }",
			new:  "package p\nfunc F(string, int) error { return nil }",
			want: []string{callers + " changed func F(string, int) error | was func F(string) error"},
		},
		{
			name: "a parameter's type moved to another package",
			old:  "package p\nimport \"example.com/dep\"\nfunc F(dep.T) {}",
			new:  "package p\nimport \"example.com/dep\"\nfunc F(dep.U) {}",
			want: []string{callers + " changed func F(example.com/dep.U) | was func F(example.com/dep.T)"},
		},
		{
			name: "a struct field added",
			old:  "package p\ntype O struct{ A int }",
			new:  "package p\ntype O struct{ A int; B string }",
			want: []string{compatible + " added type O struct, B string"},
		},
		{
			name: "a struct field removed",
			old:  "package p\ntype O struct{ A int; B string }",
			new:  "package p\ntype O struct{ A int }",
			want: []string{callers + " removed type O struct, B string"},
		},
		{
			name: "a struct field's type changed",
			old:  "package p\ntype O struct{ Now func() int }",
			new:  "package p\ntype O struct{ Now interface{ Now() int } }",
			want: []string{callers + " changed type O struct, Now interface{ Now() int } | was type O struct, Now func() int"},
		},
		{
			name: "a struct tag changed: the field's name in the cloud config",
			old:  "package p\ntype C struct{ QPS float64 `yaml:\"qps\"` }",
			new:  "package p\ntype C struct{ QPS float64 `yaml:\"rate\"` }",
			want: []string{callers + " changed type C struct, QPS float64 `yaml:\"rate\"` | was type C struct, QPS float64 `yaml:\"qps\"`"},
		},
		{
			name: "an embedded field's type gained a method: promoted, so compatible",
			old:  "package p\ntype B struct{}\ntype O struct{ B }",
			new:  "package p\ntype B struct{}\nfunc (B) M() {}\ntype O struct{ B }",
			want: []string{compatible + " added method (B) M()", compatible + " added method (O) M()"},
		},
		{
			name: "a method added to an interface other packages implement",
			old:  "package p\ntype I interface{ A() }",
			new:  "package p\ntype I interface{ A(); B() error }",
			want: []string{implementers + " added type I interface, B() error"},
		},
		{
			name: "a method added to an interface only its package can implement",
			old:  "package p\ntype I interface{ A(); seal() }",
			new:  "package p\ntype I interface{ A(); B() error; seal() }",
			want: []string{compatible + " added type I interface, B() error"},
		},
		{
			name: "a method removed from an interface",
			old:  "package p\ntype I interface{ A(); B() }",
			new:  "package p\ntype I interface{ A() }",
			want: []string{callers + " removed type I interface, B()"},
		},
		{
			name: "an interface method's signature changed",
			old:  "package p\ntype I interface{ A(int) }",
			new:  "package p\ntype I interface{ A(int64) }",
			want: []string{both + " changed type I interface, A(int64) | was type I interface, A(int)"},
		},
		{
			name: "an interface sealed with an unexported method",
			old:  "package p\ntype I interface{ A() }",
			new:  "package p\ntype I interface{ A(); seal() }",
			want: []string{implementers + " changed type I interface{ unexported methods } | was type I interface"},
		},
		{
			name: "an interface opened",
			old:  "package p\ntype I interface{ A(); seal() }",
			new:  "package p\ntype I interface{ A() }",
			want: []string{compatible + " changed type I interface | was type I interface{ unexported methods }"},
		},
		{
			name: "a new interface is one addition, not a method added to an interface",
			old:  "package p\nfunc F() {}",
			new:  "package p\nfunc F() {}\ntype I interface{ A(); B() }",
			want: []string{compatible + " added type I interface +2"},
		},
		{
			name: "a removed type is one removal with its fields and methods",
			old:  "package p\nfunc F() {}\ntype O struct{ A, B int }\nfunc (*O) M() {}",
			new:  "package p\nfunc F() {}",
			want: []string{callers + " removed type O struct +3"},
		},
		{
			name: "a method moved from *T to T: *T still has it",
			old:  "package p\ntype T struct{}\nfunc (*T) M() {}",
			new:  "package p\ntype T struct{}\nfunc (T) M() {}",
			want: []string{compatible + " changed method (T) M() | was method (*T) M()"},
		},
		{
			name: "a method moved from T to *T: a T no longer has it",
			old:  "package p\ntype T struct{}\nfunc (T) M() {}",
			new:  "package p\ntype T struct{}\nfunc (*T) M() {}",
			want: []string{callers + " changed method (*T) M() | was method (T) M()"},
		},
		{
			name: "a constant's value changed",
			old:  "package p\nconst Tag = \"ccmkit.io/cluster\"",
			new:  "package p\nconst Tag = \"ccmkit.io/cluster-id\"",
			want: []string{callers + ` changed const Tag untyped string = "ccmkit.io/cluster-id" | was const Tag untyped string = "ccmkit.io/cluster"`},
		},
		{
			name: "a type parameter's constraint narrowed",
			old:  "package p\nfunc F[C any](C) {}",
			new:  "package p\nfunc F[C comparable](C) {}",
			want: []string{callers + " changed func F[C comparable](C) | was func F[C any](C)"},
		},
		{
			name: "a variable became a function",
			old:  "package p\nvar Now func() int",
			new:  "package p\nfunc Now() int { return 0 }",
			want: []string{callers + " removed var Now func() int", compatible + " added func Now() int"},
		},
		{
			name: "a package removed",
			old:  "package p\nfunc F() {}\ntype T int",
			new:  "",
			want: []string{callers + " removed pkg example.com/p +2"},
		},
		{
			name: "a package added",
			old:  "",
			new:  "package p\nfunc F() {}\ntype T int",
			want: []string{compatible + " added pkg example.com/p +2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := Compare(describeSource(t, tt.old), describeSource(t, tt.new))
			require.NoError(t, err)
			assert.Equal(t, tt.want, summary(changes))
		})
	}
}

func TestCompareRefusesMalformedDescriptions(t *testing.T) {
	const p = "pkg example.com/p, "
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"no package", []string{"func F()"}, `starts with "pkg "`},
		{"no comma after the package", []string{"pkg example.com/p func F()"}, `no ", " after the package path`},
		{"an unknown kind of line", []string{p + "fn F()"}, "not a const, var, func, type or method"},
		{"no name", []string{p + "func (int)"}, "no identifier"},
		{"a method without a receiver", []string{p + "method M()"}, "no ( after method"},
		{"a type without a declaration", []string{p + "type T"}, "no type name and declaration"},
		{"a field of an undeclared type", []string{p + "type T struct, A int"}, "no declaration of type T"},
		{"two lines for one identifier", []string{p + "func F()", p + "func F(int)"}, "two lines describe one identifier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compare(tt.lines, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestPublic(t *testing.T) {
	const m = "github.com/ccmkit/ccmkit"
	tests := []struct {
		path string
		want bool
	}{
		{m + "/cloudapi", true},
		{m + "/cloudapi/faultinject", true},
		{m + "/provider/providertest", true},
		{m + "/internal/cloudclient", false},
		{m + "/provider/internal/x", false},
		{m + "/examples/restcloud/adapter", false},
		{m + "/bench/baseline", false},
		{m + "/deploy", false},
		{m + "/benchmarks", true}, // a prefix of a name is not the directory
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			assert.Equal(t, tt.want, public(m, tt.path))
		})
	}
}

// TestRun runs the command over a module of its own: it writes the description, accepts
// it, then reports an API change with its verdict and the command that records it.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.26\n",
		"lib/lib.go":            "package lib\n\n// F is API.\nfunc F(s string) error { return nil }\n",
		"internal/x/x.go":       "package x\n\n// G is internal.\nfunc G() {}\n",
		"examples/demo/demo.go": "package demo\n\n// H is an example's.\nfunc H() {}\n",
		"cmd/tool/main.go":      "package main\n\nfunc main() {}\n",
		"lib/testdata/x/x.go":   "package x\n\n// I is test data.\nfunc I() {}\n",
		"lib/lib_test.go":       "package lib\n",
		"lib/more/more.go":      "package more\n\n// V is API.\nvar V int\n",
	})
	const file = "api.txt"

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"-w", file}, dir, &stdout, &stderr), stderr.String())
	written, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	assert.Equal(t, header+
		"pkg example.com/m/lib, func F(string) error\n"+
		"pkg example.com/m/lib/more, var V int\n", string(written))

	stdout.Reset()
	require.Equal(t, exitOK, run([]string{file}, dir, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "api.txt describes the exported API (2 lines)")

	writeFiles(t, dir, map[string]string{"lib/lib.go": "package lib\n\n// F is API.\nfunc F(s string, n int) error { return nil }\n\n// K is new.\nfunc K() {}\n"})
	stderr.Reset()
	require.Equal(t, exitChanged, run([]string{file}, dir, &stdout, &stderr))
	report := stderr.String()
	assert.Contains(t, report, "BREAKING (callers)                changed  pkg example.com/m/lib, func F(string, int) error\n")
	assert.Contains(t, report, "                                  was      pkg example.com/m/lib, func F(string) error\n")
	assert.Contains(t, report, "compatible                        added    pkg example.com/m/lib, func K()\n")
	assert.Contains(t, report, "record them with `make api`")

	written = bytes.Replace(written, []byte("pkg example.com/m/lib/more, var V int\n"), nil, 1)
	written = append(written, "pkg example.com/m/lib/more, var V int\n"...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), append([]byte("\n"), written...), 0o644))
	writeFiles(t, dir, map[string]string{"lib/lib.go": "package lib\n\n// F is API.\nfunc F(s string) error { return nil }\n"})
	stderr.Reset()
	assert.Equal(t, exitChanged, run([]string{file}, dir, &stdout, &stderr), "a description in another form than make api's")
	assert.Contains(t, stderr.String(), "not as `make api` writes it")
}

func TestRunRefusesBadUse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "usage: go run ./hack/apicheck [-w] FILE"},
		{"two files", []string{"a.txt", "b.txt"}, "usage: go run ./hack/apicheck [-w] FILE"},
		{"an unknown flag", []string{"-x", "a.txt"}, "flag provided but not defined: -x"},
		{"no description to check", []string{"missing.txt"}, "missing.txt does not exist; write it with `make api`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, exitError, run(tt.args, t.TempDir(), &stdout, &stderr))
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}
