package loadbalancer_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// annotationTable is the README's annotation reference, as Annotations describes it.
func annotationTable() string {
	var b strings.Builder
	b.WriteString("| annotation | values | default | what it does |\n|---|---|---|---|\n")
	for _, a := range loadbalancer.Annotations() {
		fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", loadbalancer.DefaultAnnotationPrefix, a.Name, a.Values, a.Default, a.Doc)
	}
	return b.String()
}

// TestREADMEAnnotationReference keeps the README's annotation table equal to Annotations.
// Run with CCMKIT_PRINT_ANNOTATIONS=1 to print the table to paste.
func TestREADMEAnnotationReference(t *testing.T) {
	want := annotationTable()
	if os.Getenv("CCMKIT_PRINT_ANNOTATIONS") != "" {
		fmt.Print(want)
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), want, "the README's annotation reference is out of date: run CCMKIT_PRINT_ANNOTATIONS=1 go test -run TestREADMEAnnotationReference ./loadbalancer and paste the table")
}
