package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunDrawsEveryChart writes a sweep of two sizes and checks that every chart is drawn
// as an SVG with both providers in its legend, and that a sweep without a chart's figure
// is an error naming it.
func TestRunDrawsEveryChart(t *testing.T) {
	fig := func(c, b float64) map[string]any { return map[string]any{"ccmkit": c, "baseline": b, "unit": "calls"} }
	size := func(n int, scale float64) map[string]any {
		figures := map[string]any{}
		for _, c := range charts {
			figures[c.key] = fig(2*scale, 100*scale)
		}
		figures["retained_heap_mb"] = fig(3*scale, 0) // the baseline retains nothing
		return map[string]any{"nodes": n, "services": n / 5, "baseline_run": true, "node_pages": (n + 499) / 500, "service_pages": (n/5 + 499) / 500, "figures": figures}
	}
	sw := map[string]any{
		"page_size": 500,
		"sizes":     []any{size(1000, 1), size(5000, 5)},
		"goal_size": map[string]any{"nodes": 5000},
		"goals":     []any{map[string]any{"figure": "retained_heap_mb", "at_most": 60}},
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "sweep.json")
	data, err := json.Marshal(sw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	require.NoError(t, run(in, dir))
	for _, c := range charts {
		svg, err := os.ReadFile(filepath.Join(dir, c.file))
		require.NoError(t, err)
		for _, want := range []string{"<svg", "ccmkit", "baseline", "5,000"} {
			assert.Contains(t, string(svg), want, c.file)
		}
	}

	delete(sw["sizes"].([]any)[0].(map[string]any)["figures"].(map[string]any), "restart_reads")
	data, err = json.Marshal(sw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	assert.ErrorContains(t, run(in, dir), `"restart_reads"`, "a sweep without a chart's figure")
}
