package harness

import (
	"strings"
	"testing"
	"time"

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

// TestStopChecksTheExitStatus checks that Stop succeeds only for a process that exits 0
// on SIGTERM: not for one that dies by the signal or exits with another code.
func TestStopChecksTheExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		wantErr      string
	}{
		{"exits 0", `trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done`, ""},
		{"exits 3", `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`, "exit status 3"},
		{"dies by the signal", `echo ready; exec sleep 60`, "signal: terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncWriter
			var out strings.Builder
			log.w = &out
			p, err := StartProcess(&log, "sh", "-c", tc.script)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				log.mu.Lock()
				defer log.mu.Unlock()
				return strings.Contains(out.String(), "ready")
			}, 10*time.Second, 10*time.Millisecond)
			err = p.Stop()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, "did not exit 0 on SIGTERM")
		})
	}
	_, err := StartProcess(nil)
	require.Error(t, err, "no command")
}
