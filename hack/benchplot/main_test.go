package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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

	var got sweep
	require.NoError(t, json.Unmarshal(data, &got))
	for _, c := range charts {
		t.Run(c.file, func(t *testing.T) {
			p, err := draw1(got, c)
			require.NoError(t, err)
			l := layout(p)
			dc := draw.New(vgsvg.New(l.width, l.height))
			legend := p.Legend
			legend.Top, legend.Left = true, true
			band := l.legendCanvas(dc)
			r := legend.Rectangle(band)
			assert.GreaterOrEqual(t, r.Min.X, vg.Length(0), "the legend starts on the canvas")
			assert.LessOrEqual(t, r.Max.X, l.width, "every legend entry is drawn in full")
			assert.GreaterOrEqual(t, r.Min.Y, band.Min.Y-0.01, "the legend fits its band")
			data := p.DataCanvas(l.plotCanvas(dc))
			assert.GreaterOrEqual(t, data.Min.Y, r.Max.Y, "the legend is below the data, not over it")
			assert.LessOrEqual(t, p.Title.TextStyle.Rectangle(p.Title.Text).Size().X, l.width, "the title is drawn in full")
		})
	}

	delete(sw["sizes"].([]any)[0].(map[string]any)["figures"].(map[string]any), "restart_reads")
	data, err = json.Marshal(sw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	assert.ErrorContains(t, run(in, dir), `"restart_reads"`, "a sweep without a chart's figure")
}
