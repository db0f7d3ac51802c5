package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// architecture is the page whose picture and package table name the repository's packages.
const architecture = "docs/architecture.md"

var (
	// localPath matches a path of this repository as the docs spell it: lower-case
	// elements without dots (so k8s.io/... is not one), an optional trailing slash for a
	// directory, or a last element with an extension for a file (hack/compat.sh).
	localPath = regexp.MustCompile(`^[a-z][a-z0-9_-]*(?:/[a-z][a-z0-9_-]*)*(?:/|\.[a-z]+)?$`)
	// slashPath finds a path with at least one slash in free text (the picture), between
	// spaces, brackets or punctuation that cannot belong to a path.
	slashPath = regexp.MustCompile(`(?:^|[\s(])([a-z][a-z0-9_-]*(?:/[a-z][a-z0-9_-]*)+)(?:$|[\s),:;'])`)
	// node finds the name at a node of the picture's tree, the first thing on its line
	// (├── instances, └─ cloudapi/faultinject, + lbclass:); a bracket's ├── further right
	// gathers lines and names no package.
	node = regexp.MustCompile(`^[\s│]*(?:[├└]─+|\+)\s+([a-z][a-z0-9_/-]*)`)
	// backticked finds a backticked span.
	backticked = regexp.MustCompile("`([^`]+)`")
)

// named is one package (or file) the page names, with the line that names it.
type named struct {
	path string
	line int
	// module is set when the line says the package is a module of its own.
	module bool
}

// architectureNames returns what the page's first fenced block (the picture, found as
// the snippets are) and its package table name: in the picture, every path with a slash and every name at a node of
// the tree (a layer's label at the start of a line, such as "backend", is not a package);
// in the table, every backticked name of a row's first cell, and every backticked path
// with a slash in the other cells.
func architectureNames(t *testing.T, text string) []named {
	t.Helper()
	var out []named
	if m := fence.FindStringSubmatchIndex(text); m != nil {
		first := 1 + strings.Count(text[:m[4]], "\n")
		for i, line := range strings.Split(text[m[4]:m[5]], "\n") {
			for _, p := range slashPath.FindAllStringSubmatch(line, -1) {
				out = append(out, named{path: p[1], line: first + i})
			}
			if p := node.FindStringSubmatch(line); p != nil && !strings.Contains(p[1], "/") { // a path with a slash is found above
				out = append(out, named{path: p[1], line: first + i})
			}
		}
	}
	inTable := false
	for i, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "| package |"):
			inTable = true
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			require.GreaterOrEqual(t, len(cells), 3, "%s:%d: a table row without two cells", architecture, i+1)
			module := strings.Contains(line, "own module") || strings.Contains(line, "module of its own")
			for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
				out = append(out, named{path: m[1], line: i + 1, module: module})
			}
			for _, cell := range cells[2:] {
				for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
					if strings.Contains(m[1], "/") && localPath.MatchString(m[1]) {
						out = append(out, named{path: m[1], line: i + 1})
					}
				}
			}
		}
	}
	return out
}

// missing returns why the named path does not exist in the repository at root, or "".
func missing(root string, n named) string {
	if !localPath.MatchString(n.path) {
		return "is not a path of this repository (lower-case elements, a slash between them)"
	}
	p := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(n.path, "/")))
	if filepath.Ext(p) != "" {
		if info, err := os.Stat(p); err != nil || info.IsDir() {
			return "is no file"
		}
		return ""
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return "is no directory"
	}
	hasGo := slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		return !e.IsDir() && strings.HasSuffix(e.Name(), ".go")
	})
	_, modErr := os.Stat(filepath.Join(p, "go.mod"))
	switch {
	case n.module && modErr != nil:
		return "is said to be a module of its own but has no go.mod"
	case !hasGo && modErr != nil:
		return "has no Go file and no go.mod"
	}
	return ""
}

// TestArchitectureNamesExist holds docs/architecture.md true to the tree: every package
// its picture and its package table name is a directory with Go files (or, for a module of
// its own, a go.mod), and every file it names exists.
func TestArchitectureNamesExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, architecture))
	require.NoError(t, err)
	names := architectureNames(t, string(data))
	// The page's shape, so that a change to it cannot silently turn the check off: the
	// picture's packages and the table's rows are both found.
	paths := make([]string, 0, len(names))
	for _, n := range names {
		paths = append(paths, n.path)
	}
	require.Subset(t, paths, []string{"internal/cloudclient", "lbclass", "instances", "loadbalancer/internal/plan", "e2e/"},
		"%s: the picture or the package table was not found", architecture)
	for _, n := range names {
		if why := missing(root, n); why != "" {
			t.Errorf("%s:%d names %q, which %s", architecture, n.line, n.path, why)
		}
	}
}

// TestMissing checks the existence rule on a tree made for it.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"pkg/a.go":           "package pkg",
		"tests/a_test.go":    "package tests",
		"mod/go.mod":         "module example.com/mod",
		"empty/README.md":    "no Go here",
		"nested/sub/b.go":    "package sub",
		"hack/tool.sh":       "#!/bin/sh",
		"dirwithext.sh/a.go": "package x",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	tests := []struct {
		name string
		n    named
		want string
	}{
		{"package", named{path: "pkg"}, ""},
		{"only tests", named{path: "tests"}, ""},
		{"trailing slash", named{path: "pkg/"}, ""},
		{"nested module", named{path: "mod", module: true}, ""},
		{"nested module without Go files", named{path: "mod/"}, ""},
		{"file", named{path: "hack/tool.sh"}, ""},
		{"absent", named{path: "gone"}, "is no directory"},
		{"no Go files", named{path: "empty"}, "has no Go file and no go.mod"},
		{"Go files only below", named{path: "nested"}, "has no Go file and no go.mod"},
		{"module without go.mod", named{path: "pkg", module: true}, "is said to be a module of its own but has no go.mod"},
		{"absent file", named{path: "hack/gone.sh"}, "is no file"},
		{"directory named like a file", named{path: "dirwithext.sh"}, "is no file"},
		{"not a path", named{path: "cloudapi.Client"}, "is not a path of this repository (lower-case elements, a slash between them)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, missing(dir, tt.n))
		})
	}
}

// TestArchitectureNames checks what is read from a page shaped like docs/architecture.md.
func TestArchitectureNames(t *testing.T) {
	page := strings.Join([]string{
		"# title",
		"",
		"```",
		"upstream controllers — from k8s.io/cloud-provider",
		"  + lbclass: the controller",
		"provider      registration (provider/builtin's init)",
		"        ├── instances     InstancesV2 (+ legacy)  ┐",
		"        ├── zones         Zones                   ├── share one snapshot",
		"        └── loadbalancer  Service → LB",
		"internal/cloudclient   the one decorator (internal/instancecache)",
		"backend       fake  |  an adapter",
		"              └─ cloudapi/faultinject: fault injection",
		"```",
		"",
		"## Packages",
		"",
		"| package | what it is for |",
		"|---|---|",
		"| `cloudapi` | The API (`Client`, `LoadBalancerShape.Update`), over `k8s.io/utils/clock/testing`. |",
		"| `e2e/` (own module) | The suite; see `internal/instancecache` and `api/ccmkit.txt`. |",
		"| `hack/compat.sh` | `make compat`. |",
		"| `examples/restcloud/restcloud-server` | In `.cache/controlplane`. |",
		"",
		"```",
		"not/the/picture",
		"```",
	}, "\n")
	got := architectureNames(t, page)
	assert.Equal(t, []named{
		{path: "lbclass", line: 5},
		{path: "provider/builtin", line: 6},
		{path: "instances", line: 7},
		{path: "zones", line: 8},
		{path: "loadbalancer", line: 9},
		{path: "internal/cloudclient", line: 10},
		{path: "internal/instancecache", line: 10},
		{path: "cloudapi/faultinject", line: 12},
		{path: "cloudapi", line: 19},
		{path: "e2e/", line: 20, module: true},
		{path: "internal/instancecache", line: 20},
		{path: "api/ccmkit.txt", line: 20},
		{path: "hack/compat.sh", line: 21},
		{path: "examples/restcloud/restcloud-server", line: 22},
	}, got)
}
