package doccheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const root = "../.."

// pages returns the Markdown files whose snippets must compile, relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	require.NoError(t, err)
	return files
}

// fence matches a fenced block at the start of a line: its info string and its body.
var fence = regexp.MustCompile("(?ms)^```([^\\n`]*)\\n(.*?)^```[ \\t]*$")

// snippet is one ```go block of a page.
type snippet struct {
	page, pkg string
	line      int
	src       string
}

// snippets returns the page's ```go blocks that are not fragments, and fails on an
// indented ```go fence (a block in a list item, which would escape the check).
func snippets(t *testing.T, page string) []snippet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, page))
	require.NoError(t, err)
	text := string(data)
	for _, m := range regexp.MustCompile("(?m)^[ \\t]+```go").FindAllStringIndex(text, -1) {
		t.Errorf("%s:%d: an indented ```go block: put it at the start of a line, so that it is compiled", page, 1+strings.Count(text[:m[0]], "\n"))
	}
	var out []snippet
	for _, m := range fence.FindAllStringSubmatchIndex(text, -1) {
		info := strings.Fields(text[m[2]:m[3]])
		if len(info) == 0 || info[0] != "go" || slices.Contains(info[1:], "fragment") {
			continue
		}
		line := 1 + strings.Count(text[:m[0]], "\n")
		src := text[m[4]:m[5]]
		f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, parser.PackageClauseOnly)
		if err != nil {
			t.Errorf("%s:%d: a ```go block must start with its package clause, or be marked ```go fragment: %v", page, line, err)
			continue
		}
		out = append(out, snippet{page: page, pkg: f.Name.Name, line: line, src: src})
	}
	return out
}

// TestSnippetsCompile writes each page's snippets into packages inside the module (one
// per page and package name, in a directory the ./... patterns skip) and runs go vet on
// them all at once.
func TestSnippetsCompile(t *testing.T) {
	dir, err := os.MkdirTemp(".", "_snippets-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	pkgDirs := map[string]string{} // page and package → directory
	var args []string
	where := map[string]string{} // file → page:line, to read go vet's output
	count := 0
	for _, page := range pages(t) {
		for _, s := range snippets(t, page) {
			key := s.page + "\x00" + s.pkg
			d, ok := pkgDirs[key]
			if !ok {
				d = filepath.Join(dir, fmt.Sprintf("p%d", len(pkgDirs)))
				require.NoError(t, os.Mkdir(d, 0o755))
				pkgDirs[key] = d
				args = append(args, "./"+filepath.ToSlash(d))
			}
			name := fmt.Sprintf("snippet%d.go", count)
			if strings.HasSuffix(s.pkg, "_test") || strings.Contains(s.src, "\"testing\"") {
				name = fmt.Sprintf("snippet%d_test.go", count)
			}
			require.NoError(t, os.WriteFile(filepath.Join(d, name), []byte(s.src), 0o644))
			where[name] = fmt.Sprintf("%s:%d", s.page, s.line)
			count++
		}
	}
	require.NotZero(t, count, "no ```go block found")
	t.Logf("compiling %d snippets in %d packages", count, len(pkgDirs))

	cmd := exec.Command("go", append([]string{"vet"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		report := string(out)
		for name, at := range where {
			report = strings.ReplaceAll(report, name, name+" ("+at+")")
		}
		t.Errorf("the docs' Go snippets do not compile (each file is a ```go block of the page named):\n%s", report)
	}
}

// TestQuotedVersions holds every k8s.io module version the docs quote (module@vX.Y.Z)
// equal to the one go.mod requires. hack/compat.sh's scratch copies, whose go.mod it moved
// to another minor (CCMKIT_COMPAT names the target), skip it: the docs quote the
// checked-in go.mod.
func TestQuotedVersions(t *testing.T) {
	if target := os.Getenv("CCMKIT_COMPAT"); target != "" {
		t.Skipf("go.mod moved to the compat target %s", target)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	required := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(k8s\.io/\S+) (v\S+)`).FindAllStringSubmatch(string(gomod), -1) {
		required[m[1]] = m[2]
	}
	quoted := regexp.MustCompile(`(k8s\.io/[\w./-]+)@(v\d+\.\d+\.\d+)`)
	for _, page := range pages(t) {
		data, err := os.ReadFile(filepath.Join(root, page))
		require.NoError(t, err)
		for _, m := range quoted.FindAllStringSubmatch(string(data), -1) {
			if want, ok := required[m[1]]; ok {
				assert.Equal(t, want, m[2], "%s quotes %s@%s, go.mod requires %s", page, m[1], m[2], want)
			}
		}
	}
}
