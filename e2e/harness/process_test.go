package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithStateFile(t *testing.T) {
	for _, tc := range []struct{ name, config string }{
		{"a fake section", "# the demo\ncluster: {id: demo}\nfake:\n  pageSize: 5 # small\n"},
		{"a state file already", "cluster: {id: demo}\nfake:\n  stateFile: old.json\n"},
		{"no fake section", "cluster: {id: demo}\n"},
		{"an empty fake section", "cluster: {id: demo}\nfake:\n"},
		{"an empty file", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := WithStateFile([]byte(tc.config), "/run/state.json")
			require.NoError(t, err)
			got, err := StateFileOf(out)
			require.NoError(t, err)
			assert.Equal(t, "/run/state.json", got)
			if tc.config != "" {
				before, err := StateFileOf([]byte(tc.config))
				require.NoError(t, err)
				assert.NotEqual(t, got, before)
			}
		})
	}
	out, err := WithStateFile([]byte("# the demo\nfake:\n  pageSize: 5 # small\n"), "s.json")
	require.NoError(t, err)
	assert.Equal(t, "# the demo\nfake:\n  pageSize: 5 # small\n  stateFile: s.json\n", string(out), "comments and keys are kept")

	_, err = WithStateFile([]byte("fake: [1]\n"), "s.json")
	require.ErrorContains(t, err, `"fake" is not a mapping`)
}

func TestCommandLineQuotesForAShell(t *testing.T) {
	p := &CCMProcess{Args: []string{"/bin/ccm", "--controllers=*", "--cloud-config=/tmp/a b/c.yaml", "--name=it's"}}
	assert.Equal(t, `/bin/ccm '--controllers=*' '--cloud-config=/tmp/a b/c.yaml' '--name=it'\''s'`, p.CommandLine())
}
