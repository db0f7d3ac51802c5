package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// sweep is the part of bench's sweep.json the plots need.
type sweep struct {
	PageSize int `json:"page_size"`
	Sizes    []struct {
		Nodes        int               `json:"nodes"`
		Services     int               `json:"services"`
		NodePages    int               `json:"node_pages"`
		ServicePages int               `json:"service_pages"`
		BaselineRun  bool              `json:"baseline_run"`
		Figures      map[string]figure `json:"figures"`
	} `json:"sizes"`
	GoalSize struct {
		Nodes int `json:"nodes"`
	} `json:"goal_size"`
	Goals []struct {
		Figure string  `json:"figure"`
		AtMost float64 `json:"at_most"`
	} `json:"goals"`
}

type figure struct {
	Ccmkit   float64 `json:"ccmkit"`
	Baseline float64 `json:"baseline"`
	Unit     string  `json:"unit"`
}

// chart is one plot: a figure of the sweep, and the reference curves drawn beside it.
type chart struct {
	key, file, title string
	log              bool // logarithmic y axis (the x axis always is)
	// refs are dashed reference curves, each a function of the size.
	refs []ref
}

type ref struct {
	label string
	at    func(n, s, np, sp float64) float64
}

var charts = []chart{
	{key: "quiet_calls_per_min", file: "sweep_quiet.svg", title: "Quiet cluster: cloud calls per minute", log: true, refs: []ref{
		{"goal: 3 + ceil(N/P)/5", func(_, _, np, _ float64) float64 { return 3 + np/5 }},
		{"N/5 (one read per Node per 5 min)", func(n, _, _, _ float64) float64 { return n / 5 }},
	}},
	{key: "outage_calls_per_min", file: "sweep_outage.svg", title: "A zone's Nodes NotReady: cloud calls per minute", log: true, refs: []ref{
		{"ceil(N/P) (a full list per minute)", func(_, _, np, _ float64) float64 { return np }},
		{"8N (2 reads per NotReady Node, a third, every 5 s)", func(n, _, _, _ float64) float64 { return 8 * n }},
	}},
	{key: "restart_reads", file: "sweep_restart_reads.svg", title: "Restart: cloud reads until synced", log: true, refs: []ref{
		{"goal: ceil(S/P) + ceil(N/P) + 1", func(_, _, np, sp float64) float64 { return sp + np + 1 }},
		{"N + S (a read per object)", func(n, s, _, _ float64) float64 { return n + s }},
	}},
	{key: "node_add_calls", file: "sweep_node_add.svg", title: "A Node added: cloud calls", log: true, refs: []ref{
		{"2S (a read and a write per load balancer)", func(_, s, _, _ float64) float64 { return 2 * s }},
		{"ceil(S/P) + 1 (the goal with shared target groups)", func(_, _, _, sp float64) float64 { return sp + 1 }},
	}},
	{key: "node_add_groups_calls", file: "sweep_node_add_groups.svg", title: "A Node added, cloud with target groups: cloud calls", log: true, refs: []ref{
		{"2S (a read and a write per load balancer)", func(_, s, _, _ float64) float64 { return 2 * s }},
		// ceil((N+1)/P) is ceil(N/P) + 1: the sweep's sizes are multiples of P.
		{"goal: ceil((N+1)/P) + ceil(S/P) + 1 (the Node's instance list, then the groups)", func(_, _, np, sp float64) float64 { return np + 1 + sp + 1 }},
	}},
	{key: "retained_heap_mb", file: "sweep_heap.svg", title: "Heap retained by the provider (MB)"},
	{key: "ensure_cpu_ms", file: "sweep_ensure_cpu.svg", title: "CPU per converged EnsureLoadBalancer (ms)"},
}

func main() {
	in := flag.String("in", "docs/benchmarks/sweep.json", "the sweep's JSON, written by `go run ./bench -sweep`")
	out := flag.String("out", "", "the directory the SVGs are written to (default: the directory of -in)")
	flag.Parse()
	if *out == "" {
		*out = filepath.Dir(*in)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var sw sweep
	if err := json.Unmarshal(data, &sw); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(sw.Sizes) == 0 {
		return fmt.Errorf("%s: no sizes", in)
	}
	for _, c := range charts {
		p, err := draw1(sw, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.file, err)
		}
		path := filepath.Join(out, c.file)
		if err := save(p, path); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "benchplot: wrote", path)
	}
	return nil
}

// The plot area's size; the canvas is as wide as the widest of the plot, its title and its
// legend's longest entry, and as tall as the plot with the legend below it.
const (
	plotWidth  = 6 * vg.Inch
	plotHeight = 3.6 * vg.Inch
	margin     = 0.15 * vg.Inch
	fontSlack  = 1.25
)

// chartLayout is where save draws a chart: the plot on top, the legend in a band of its
// own below it, so that no entry is cut short or drawn over the data.
type chartLayout struct {
	width, height vg.Length
	legend        vg.Length // the legend band's height, at the bottom
}

// layout sizes the canvas of p, whose legend save draws below the plot.
func layout(p *plot.Plot) chartLayout {
	tall := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: plotWidth, Y: plotHeight}}}
	leg := p.Legend.Rectangle(tall).Size()
	title := p.Title.TextStyle.Rectangle(p.Title.Text).Size()
	// A viewer without the SVG's font draws text in a wider one (DejaVu Serif for
	// Liberation Serif: about a fifth wider); leave room for it.
	width := max(plotWidth, fontSlack*leg.X+2*margin, fontSlack*title.X+2*margin)
	return chartLayout{width: width, height: plotHeight + leg.Y + 2*margin, legend: leg.Y + 2*margin}
}

// plotCanvas is the part of the canvas dc (of the layout's size) the plot is drawn in.
func (l chartLayout) plotCanvas(dc draw.Canvas) draw.Canvas { return draw.Crop(dc, 0, 0, l.legend, 0) }

// legendCanvas is the band below the plot the legend is drawn in.
func (l chartLayout) legendCanvas(dc draw.Canvas) draw.Canvas {
	return draw.Crop(dc, margin, -margin, margin, -(l.height - l.legend + margin))
}

// save writes p as an SVG to path, its legend below the plot.
func save(p *plot.Plot, path string) error {
	l := layout(p)
	c := vgsvg.New(l.width, l.height)
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend() // the plot draws no legend of its own
	defer func() { p.Legend = legend }()
	p.Draw(l.plotCanvas(dc))
	legend.Top, legend.Left = true, true
	legend.Draw(l.legendCanvas(dc))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

var (
	ccmkitColor   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	baselineColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	refColor      = color.Gray{Y: 0x80}
)

// draw1 draws chart c of the sweep: ccmkit and the baseline by Nodes, both axes
// logarithmic for call counts, and the chart's reference curves dashed.
func draw1(sw sweep, c chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "Nodes N (Services S = N/5, page size P = " + strconv.Itoa(sw.PageSize) + ")"
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, z := range sw.Sizes {
		ticks = append(ticks, plot.Tick{Value: float64(z.Nodes), Label: thousands(z.Nodes)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if c.log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())

	series := func(baseline bool, v func(f figure, n, s, np, sp float64) float64) (plotter.XYs, error) {
		var xys plotter.XYs
		for _, z := range sw.Sizes {
			f, ok := z.Figures[c.key]
			if !ok {
				return nil, fmt.Errorf("size %d has no figure %q", z.Nodes, c.key)
			}
			if baseline && !z.BaselineRun {
				continue // not measured at this size
			}
			y := v(f, float64(z.Nodes), float64(z.Services), float64(z.NodePages), float64(z.ServicePages))
			if c.log && y <= 0 {
				continue // not drawable on a log scale; the table has it
			}
			xys = append(xys, plotter.XY{X: float64(z.Nodes), Y: y})
		}
		return xys, nil
	}
	line := func(label string, xys plotter.XYs, col color.Color, dashed bool, shape draw.GlyphDrawer) error {
		if len(xys) == 0 {
			return nil
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = col, vg.Points(1.5)
		if dashed {
			l.Dashes, l.Width = []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
		}
		p.Add(l)
		if shape == nil {
			p.Legend.Add(label, l)
			return nil
		}
		pts, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		pts.Color, pts.Shape, pts.Radius = col, shape, vg.Points(3)
		p.Add(pts)
		p.Legend.Add(label, l, pts)
		return nil
	}
	for _, s := range []struct {
		label    string
		col      color.Color
		shape    draw.GlyphDrawer
		baseline bool
		v        func(figure) float64
	}{
		{"ccmkit", ccmkitColor, draw.CircleGlyph{}, false, func(f figure) float64 { return f.Ccmkit }},
		{"baseline (pass-through)", baselineColor, draw.SquareGlyph{}, true, func(f figure) float64 { return f.Baseline }},
	} {
		xys, err := series(s.baseline, func(f figure, _, _, _, _ float64) float64 { return s.v(f) })
		if err != nil {
			return nil, err
		}
		if err := line(s.label, xys, s.col, false, s.shape); err != nil {
			return nil, err
		}
	}
	for _, r := range c.refs {
		xys, err := series(false, func(_ figure, n, s, np, sp float64) float64 { return r.at(n, s, np, sp) })
		if err != nil {
			return nil, err
		}
		if err := line(r.label, xys, refColor, true, nil); err != nil {
			return nil, err
		}
	}
	for _, g := range sw.Goals {
		if g.Figure != c.key || c.refs != nil {
			continue // a chart with reference curves draws its goal among them
		}
		pts, err := plotter.NewScatter(plotter.XYs{{X: float64(sw.GoalSize.Nodes), Y: g.AtMost}})
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = refColor, draw.PyramidGlyph{}, vg.Points(4)
		p.Add(pts)
		p.Legend.Add(fmt.Sprintf("goal at %s Nodes: ≤ %s", thousands(sw.GoalSize.Nodes), strconv.FormatFloat(g.AtMost, 'f', -1, 64)), pts)
	}
	if math.IsInf(p.Y.Max, 0) || math.IsNaN(p.Y.Max) {
		return nil, errors.New("no drawable value")
	}
	// Room above the curves, and beside the outermost sizes; the legend is drawn below
	// the plot (save).
	if c.log {
		p.Y.Max *= 3
	} else {
		p.Y.Min, p.Y.Max = 0, p.Y.Max*1.15
	}
	p.X.Min, p.X.Max = p.X.Min/1.3, p.X.Max*1.3
	return p, nil
}

// thousands prints n with a comma between thousands: 20,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
