// Package docgen writes the generated parts of ccmkit's Markdown references
// (docs/reference) and keeps them current: a reference is generated from the code that
// defines what it describes, never pasted.
//
// A generated part sits between two marker lines in a Markdown file:
//
//	<!-- begin generated: NAME (make docs) -->
//	...
//	<!-- end generated: NAME -->
//
// The test of the package that owns the source builds the part in memory and calls
// Check, which fails when the committed file differs; `make docs` runs those tests with
// UpdateEnv set, and Check then writes the file instead. A file generated whole (the Helm
// chart's admission policy) is kept by CheckFile alike. Only tests import this package.
package docgen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// UpdateEnv is the environment variable that makes Check write the generated part
// instead of comparing it (`make docs` sets it to 1).
const UpdateEnv = "CCMKIT_UPDATE_DOCS"

// Markers returns the begin and end marker lines of the generated part name.
func Markers(name string) (begin, end string) {
	return "<!-- begin generated: " + name + " (make docs) -->", "<!-- end generated: " + name + " -->"
}

// Replace returns doc with the generated part name replaced by content. It fails when
// doc lacks either marker, or has them out of order.
func Replace(doc, name, content string) (string, error) {
	begin, end := Markers(name)
	i := strings.Index(doc, begin+"\n")
	j := strings.Index(doc, "\n"+end)
	if i < 0 || j < 0 || j < i+len(begin) {
		return "", fmt.Errorf("the markers %q and %q, each on a line of its own and in this order, are missing", begin, end)
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return doc[:i+len(begin)+1] + content + doc[j+1:], nil
}

// Check holds the generated part name of the Markdown file at path (relative to the
// test's package) equal to content: it fails the test when they differ, or, with
// UpdateEnv set, writes content into the file.
func Check(t testing.TB, path, name, content string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the reference: %v", err)
	}
	doc, err := Replace(string(old), name, content)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	keep(t, path, fmt.Sprintf("the generated part %q", name), string(old), doc)
}

// CheckFile holds the whole file at path (relative to the test's package), a generated
// file such as a manifest, equal to content, as Check holds a part of one.
func CheckFile(t testing.TB, path, content string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reading the generated file: %v", err)
	}
	keep(t, path, "the generated file", string(old), content)
}

// keep fails the test when the file at path holds old instead of want, or, with UpdateEnv
// set, writes want into it. what names what is out of date.
func keep(t testing.TB, path, what, old, want string) {
	t.Helper()
	if old == want {
		return
	}
	if os.Getenv(UpdateEnv) != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
		t.Logf("wrote %s (%s)", path, what)
		return
	}
	t.Errorf("%s: %s is out of date: run `make docs` and commit the file", path, what)
}

// Table returns a Markdown table with the header and rows given; a cell's line breaks
// become spaces and its '|' is escaped.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.Join(strings.Fields(c), " ")
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString(strings.Repeat("|---", len(header)) + "|\n")
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
