package loadbalancer_test

import (
	"testing"

	"github.com/ccmkit/ccmkit/internal/docgen"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestDocsAnnotationReference keeps docs/reference/annotations.md's table equal to
// Annotations (`make docs` rewrites it).
func TestDocsAnnotationReference(t *testing.T) {
	docgen.Check(t, "../docs/reference/annotations.md", "loadbalancer.Annotations",
		loadbalancer.AnnotationReference(loadbalancer.DefaultAnnotationPrefix))
}
