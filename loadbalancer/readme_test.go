package loadbalancer_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestREADMEAnnotationReference keeps the README's annotation table equal to Annotations.
// Run with CCMKIT_PRINT_ANNOTATIONS=1 to print the table to paste.
func TestREADMEAnnotationReference(t *testing.T) {
	want := loadbalancer.AnnotationReference(loadbalancer.DefaultAnnotationPrefix)
	if os.Getenv("CCMKIT_PRINT_ANNOTATIONS") != "" {
		fmt.Print(want)
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), want, "the README's annotation reference is out of date: run CCMKIT_PRINT_ANNOTATIONS=1 go test -run TestREADMEAnnotationReference ./loadbalancer and paste the table")
}
