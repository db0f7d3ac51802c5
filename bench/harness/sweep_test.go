package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepSmall runs the sweep machinery at two small sizes and checks the JSON it writes:
// every size with every figure of both providers, the page counts, and the goals checked at
// the largest size against its own figures.
func TestSweepSmall(t *testing.T) {
	var out, logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	// testing.Benchmark's rounds (P6) take a second each by default.
	old := flag.Lookup("test.benchtime").Value.String()
	require.NoError(t, flag.Set("test.benchtime", "20x"))
	t.Cleanup(func() { _ = flag.Set("test.benchtime", old) })
	sizes := []int{30, 60}
	dir := t.TempDir()
	sr, err := sweep(context.Background(), smallConfig(), sizes, 30, dir, &out, &logs)
	require.NoError(t, err)
	sr.print(&out)

	data, err := os.ReadFile(filepath.Join(dir, sweepFile))
	require.NoError(t, err)
	var got sweepReport
	require.NoError(t, json.Unmarshal(data, &got))
	require.Len(t, got.Sizes, len(sizes))
	for i, z := range got.Sizes {
		assert.Equal(t, sizes[i], z.Nodes)
		assert.Equal(t, sizes[i]/servicesPerNode, z.Services)
		assert.Equal(t, ceilDiv(z.Nodes, smallConfig().pageSize), z.NodePages)
		assert.Equal(t, ceilDiv(z.Services, smallConfig().pageSize), z.ServicePages)
		for _, row := range sweepRows {
			f, ok := z.Figures[row.key]
			require.True(t, ok, "%d Nodes: %s", z.Nodes, row.key)
			assert.NotEmpty(t, f.Unit, row.key)
		}
		quiet := z.Figures[sweepQuiet]
		assert.NotEmpty(t, quiet.CcmkitCalls, "the calls by operation")
		assert.Positive(t, z.Figures[sweepRestartReads].Ccmkit)
		assert.Equal(t, z.Nodes <= 30, z.BaselineRun, "the baseline runs up to -sweep-baseline-nodes")
		if z.BaselineRun {
			assert.Less(t, quiet.Ccmkit, quiet.Baseline, "%d Nodes: the quiet cluster", z.Nodes)
			assert.Positive(t, z.Figures[sweepNodeAdd].Baseline)
		} else {
			assert.Zero(t, z.Figures[sweepNodeAdd].Baseline)
			assert.Empty(t, z.Figures[sweepQuiet].BaselineCalls)
		}
		assert.Positive(t, z.Figures[sweepEnsureCPU].Ccmkit, "the CPU time per ensure")
		assert.NotEmpty(t, z.Figures[sweepNodeAddGroups].CcmkitCalls, "node_add_groups: the calls by operation")
		assert.Equal(t, z.Figures[sweepNodeAdd].Baseline, z.Figures[sweepNodeAddGroups].Baseline, "the baseline has no target groups: its node_add")
	}
	last := got.Sizes[len(got.Sizes)-1]
	assert.Equal(t, sweepSizeKey{Nodes: last.Nodes, Services: last.Services}, got.GoalSize)
	require.Len(t, got.Goals, 4)
	for _, g := range got.Goals {
		assert.Equal(t, last.Figures[g.Figure].Ccmkit, g.Ccmkit, g.Figure)
		assert.Equal(t, g.Ccmkit <= g.AtMost, g.Met, g.Figure)
	}
	assert.Equal(t, float64(last.ServicePages+last.NodePages+1), got.Goals[3].AtMost, "the restart goal")
	assert.Contains(t, out.String(), "ccmkit's goals at 60 Nodes, 12 Services")
	assert.Contains(t, out.String(), "the baseline was not run at 60 Nodes")
}

func TestParseSweepNodes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{in: "1000,5000,20000", want: []int{1000, 5000, 20000}},
		{in: " 10 , 20", want: []int{10, 20}},
		{in: "", err: "is not a number"},
		{in: "10,x", err: "is not a number"},
		{in: "4", err: "at least 5"},
		{in: "20,10", err: "must increase"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSweepNodes(tt.in)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
