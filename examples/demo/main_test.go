package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs `make demo-inmemory`, the demo on its embedded cloud config, and
// checks that it told the whole story.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the controllers for several seconds")
	}
	var out strings.Builder
	require.NoError(t, run(nil, &out), out.String())
	story := out.String()
	for _, want := range []string{
		"node-a  ccmkit://i-0001  m5.large",
		"InternalIP=10.0.0.11 InternalIP=fd00::11 ExternalIP=198.51.100.11 Hostname=node-a",
		"Node node-b has the taint node.cloudprovider.kubernetes.io/shutdown",
		"Node node-c is deleted",
		"5 cloud calls failed on purpose",
		"Nodes node-a, node-b are still there",
		"initialize the Nodes",
	} {
		assert.Contains(t, story, want)
	}
}

func TestDemoBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(path, []byte("cluster: {id: demo}\nfake:\n  pagesize: 3\n"), 0o600))
	var out strings.Builder
	err := run([]string{"-config", path}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 3: unknown key "pagesize" in fake`)

	err = run([]string{"-config", filepath.Join(t.TempDir(), "missing.yaml")}, &out)
	require.ErrorIs(t, err, os.ErrNotExist)
}
