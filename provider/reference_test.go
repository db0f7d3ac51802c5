package provider

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/docgen"
)

// TestDocsConfigReference keeps docs/reference/config.md's tables equal to Config's doc
// comments (`make docs` rewrites them).
func TestDocsConfigReference(t *testing.T) {
	ref, err := docgen.ConfigReference(".", "Config", "")
	require.NoError(t, err)
	docgen.Check(t, "../docs/reference/config.md", "provider.Config", ref)
}
