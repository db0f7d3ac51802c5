package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/internal/docgen"
)

// TestDocsConfigReference keeps README.md's reference of the hcloud section and of the
// environment variables the adapter reads (adapter.Env) equal to the code (`make docs`,
// or CCMKIT_UPDATE_DOCS=1, rewrites it).
func TestDocsConfigReference(t *testing.T) {
	ref, err := docgen.ConfigReference(".", "Config", "hcloud")
	require.NoError(t, err)
	var rows [][]string
	for _, e := range adapter.Env {
		key := "none"
		if e.Key != "" {
			key = "`" + e.Key + "`"
		}
		rows = append(rows, []string{"`" + e.Name + "`", key, e.Doc})
	}
	ref += "### Environment variables of Hetzner's own CCM\n\n" +
		"Each is read where the cloud config does not set its key (the file wins); one set to the empty string counts as unset; " +
		"a switch is read as that CCM read it (`1`, `t`, `true`, `0`, `f`, `false`, ...), and a value that does not parse is an error naming the variable. " +
		"One without a key is not read: if set, the start logs it.\n\n" +
		docgen.Table([]string{"variable", "cloud config key", "meaning"}, rows)
	docgen.Check(t, "../README.md", "hcloud.Config", ref)
}
