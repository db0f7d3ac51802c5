package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// sweepFile is the name of the sweep's JSON report in its output directory;
// hack/benchplot reads it and draws the plots beside it.
const sweepFile = "sweep.json"

// defaultSweepNodes are the cluster sizes of -sweep; each size has a fifth as many
// Services.
const defaultSweepNodes = "1000,5000,20000"

// defaultSweepBaselineNodes is the largest size the sweep runs the baseline at by default.
// The baseline's time to build its cluster and to add a Node grows with N × S (a write of
// every load balancer with every Node): at 5,000 Nodes they took 77 s and 137 s on 2 busy
// cores, at 20,000 Nodes they would take 16 times as long; its call counts there follow
// from the curve up to 5,000 Nodes (one call per object).
const defaultSweepBaselineNodes = 5000

// servicesPerNode is S/N in the sweep.
const servicesPerNode = 5

// The sweep's figures, keys of sweepSize.Figures and of the plots.
const (
	sweepQuiet        = "quiet_calls_per_min"
	sweepOutage       = "outage_calls_per_min"
	sweepRestartReads = "restart_reads"
	sweepNodeAdd      = "node_add_calls"
	// sweepNodeAddGroups is ccmkit's node_add_groups; the baseline's is its node_add.
	sweepNodeAddGroups = "node_add_groups_calls"
	sweepHeap          = "retained_heap_mb"
	sweepEnsureCPU     = "ensure_cpu_ms"
)

// sweepReport is the JSON the sweep writes.
type sweepReport struct {
	Date     string `json:"date"`
	PageSize int    `json:"page_size"`
	Minutes  int    `json:"minutes"`
	// Note says how the figures were taken; bench/doc.go has the details.
	Note  string      `json:"note"`
	Sizes []sweepSize `json:"sizes"`
	// Goals are checked at GoalSize, the sweep's largest.
	GoalSize sweepSizeKey `json:"goal_size"`
	Goals    []sweepGoal  `json:"goals"`
}

type sweepSizeKey struct {
	Nodes    int `json:"nodes"`
	Services int `json:"services"`
}

// sweepSize is what the side-by-side found at one size.
type sweepSize struct {
	Nodes    int `json:"nodes"`
	Services int `json:"services"`
	// NodePages and ServicePages are ⌈N/P⌉ and ⌈S/P⌉: what ccmkit's list costs scale with.
	NodePages    int `json:"node_pages"`
	ServicePages int `json:"service_pages"`
	NotReady     int `json:"not_ready"`
	// BaselineRun is false when the baseline was not run at this size: its figures are 0.
	BaselineRun bool                   `json:"baseline_run"`
	Figures     map[string]sweepFigure `json:"figures"`
	WallSeconds float64                `json:"wall_seconds"`
}

// sweepFigure is one figure of both providers at one size, with the calls by operation
// where it counts calls.
type sweepFigure struct {
	Ccmkit        float64          `json:"ccmkit"`
	Baseline      float64          `json:"baseline"`
	Unit          string           `json:"unit"`
	CcmkitCalls   map[string]int64 `json:"ccmkit_calls,omitempty"`
	BaselineCalls map[string]int64 `json:"baseline_calls,omitempty"`
}

// sweepGoal is one of ccmkit's goals at the sweep's largest size.
type sweepGoal struct {
	Figure  string  `json:"figure"`
	Goal    string  `json:"goal"`
	AtMost  float64 `json:"at_most"`
	Ccmkit  float64 `json:"ccmkit"`
	Unit    string  `json:"unit"`
	Met     bool    `json:"met"`
	Measure string  `json:"measured"` // what the figure is made of
}

// parseSweepNodes parses -sweep-nodes: a comma-separated list of increasing sizes.
func parseSweepNodes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < servicesPerNode {
			return nil, fmt.Errorf("-sweep-nodes %q: %q is not a number of Nodes of at least %d", s, f, servicesPerNode)
		}
		if len(sizes) > 0 && n <= sizes[len(sizes)-1] {
			return nil, fmt.Errorf("-sweep-nodes %q: the sizes must increase", s)
		}
		sizes = append(sizes, n)
	}
	if len(sizes) == 0 {
		return nil, errors.New("-sweep-nodes is empty")
	}
	return sizes, nil
}

// sweep runs the side-by-side at each size, N Nodes and N/5 Services, with cfg's other
// settings, and returns what it found; every size's table goes to out as it is done.
//
// The baseline runs at the sizes up to baselineNodes (every size when 0). After each size
// the sweep so far, goals checked at its largest size, is written to dir, so that a sweep
// cut short keeps the sizes it finished.
func sweep(ctx context.Context, cfg config, sizes []int, baselineNodes int, dir string, out, stderr io.Writer) (*sweepReport, error) {
	sr := &sweepReport{
		Date:     time.Now().UTC().Format(time.RFC3339),
		PageSize: cfg.pageSize,
		Minutes:  cfg.minutes,
		Note: "calls counted at the fake cloud; quiet and outage over simulated minutes; restart reads until every controller synced once; " +
			"node_add every call from a new Node's registration until the cloud is quiet; node_add_groups the same over a cloud with target groups (the baseline's: its node_add); retained heap of the provider alone after a restart; " +
			"ensure CPU the process's user+system CPU time per converged EnsureLoadBalancer with the fake cloud's work and GC included",
	}
	for _, n := range sizes {
		c := cfg
		c.nodes, c.services, c.notReady = n, max(1, n/servicesPerNode), -1
		c.noBaseline = baselineNodes > 0 && n > baselineNodes
		start := time.Now()
		rep, err := run(ctx, c, stderr, nil)
		if err != nil {
			return nil, fmt.Errorf("%d Nodes: %w", n, err)
		}
		rep.printTable(out)
		_, _ = fmt.Fprintln(out)
		sr.Sizes = append(sr.Sizes, newSweepSize(rep, time.Since(start)))
		sr.checkGoals()
		if err := sr.writeJSON(dir); err != nil {
			return nil, err
		}
		// The next size builds its worlds from scratch: give this one's memory back.
		rep = nil
		runtime.GC()
		debug.FreeOSMemory()
	}
	return sr, nil
}

func newSweepSize(rep *report, wall time.Duration) sweepSize {
	cfg, c, b := rep.cfg, rep.results[0], rep.result(string(kindBaseline))
	calls := func(unit string, cc, bc Calls, perMin bool) sweepFigure {
		f := sweepFigure{Ccmkit: float64(cc.Total()), Baseline: float64(bc.Total()), Unit: unit, CcmkitCalls: cc.ByName(), BaselineCalls: bc.ByName()}
		if perMin {
			f.Ccmkit /= float64(cfg.minutes)
			f.Baseline /= float64(cfg.minutes)
		}
		return f
	}
	reads := func(cs Calls) Calls { return cs.Only(func(op Op) bool { return !op.Write }) }
	return sweepSize{
		Nodes: cfg.nodes, Services: cfg.services, NotReady: cfg.notReady, BaselineRun: !cfg.noBaseline,
		NodePages: ceilDiv(cfg.nodes, cfg.pageSize), ServicePages: ceilDiv(cfg.services, cfg.pageSize),
		Figures: map[string]sweepFigure{
			sweepQuiet:         calls("calls/min", c.p1Calls, b.p1Calls, true),
			sweepOutage:        calls("calls/min", c.p1OutCalls, b.p1OutCalls, true),
			sweepRestartReads:  calls("calls", reads(c.p4Calls), reads(b.p4Calls), false),
			sweepNodeAdd:       calls("calls", c.nodeAddCalls, b.nodeAddCalls, false),
			sweepNodeAddGroups: calls("calls", c.nodeAddGroupsCalls, b.nodeAddCalls, false),
			sweepHeap:          {Ccmkit: c.p5, Baseline: b.p5, Unit: "MB"},
			sweepEnsureCPU:     {Ccmkit: c.p6CPUNsPerOp / 1e6, Baseline: b.p6CPUNsPerOp / 1e6, Unit: "ms"},
		},
		WallSeconds: wall.Seconds(),
	}
}

// checkGoals checks ccmkit's goals at the sweep's largest size.
func (sr *sweepReport) checkGoals() {
	if len(sr.Sizes) == 0 {
		return
	}
	z := sr.Sizes[len(sr.Sizes)-1]
	sr.GoalSize = sweepSizeKey{Nodes: z.Nodes, Services: z.Services}
	sr.Goals = nil
	goal := func(key, text string, atMost float64) {
		f := z.Figures[key]
		measured := ""
		if len(f.CcmkitCalls) > 0 {
			measured = namedCalls(f.CcmkitCalls)
		} else if len(sr.Sizes) > 1 {
			// What each Node adds, between the two largest sizes (S grows with N).
			y := sr.Sizes[len(sr.Sizes)-2]
			per := (f.Ccmkit - y.Figures[key].Ccmkit) / float64(z.Nodes-y.Nodes)
			measured = fmt.Sprintf("%s %s per 1,000 Nodes (and 200 Services) between %d and %d Nodes", compact(per*1000), f.Unit, y.Nodes, z.Nodes)
		}
		sr.Goals = append(sr.Goals, sweepGoal{Figure: key, Goal: text, AtMost: atMost, Ccmkit: f.Ccmkit, Unit: f.Unit, Met: f.Ccmkit <= atMost, Measure: measured})
	}
	goal(sweepQuiet, fmt.Sprintf("≤ 3 + ⌈N/P⌉/5 = 3 + %d/5", z.NodePages), 3+float64(z.NodePages)/5)
	goal(sweepHeap, "≤ 60 MB", 60)
	goal(sweepEnsureCPU, "≤ 4 ms of CPU", 4)
	goal(sweepRestartReads, fmt.Sprintf("≤ ⌈S/P⌉ + ⌈N/P⌉ + 1 = %d + %d + 1", z.ServicePages, z.NodePages), float64(z.ServicePages+z.NodePages+1))
}

// namedCalls lists calls by operation name, in name order.
func namedCalls(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, m[name]))
	}
	return strings.Join(parts, ", ")
}

// sweepRows are the sweep table's rows: figure key and label.
var sweepRows = []struct{ key, label string }{
	{sweepQuiet, "quiet cluster"},
	{sweepOutage, "zone outage"},
	{sweepRestartReads, "restart reads"},
	{sweepNodeAdd, "node added"},
	{sweepNodeAddGroups, "node added, target groups"},
	{sweepHeap, "retained heap"},
	{sweepEnsureCPU, "converged Ensure CPU"},
}

// print writes the sweep's table, figure by size, and the goals.
func (sr *sweepReport) print(out io.Writer) {
	_, _ = fmt.Fprintf(out, "cost curve: N Nodes, S = N/%d LoadBalancer Services, page size P = %d; ccmkit / baseline\n\n", servicesPerNode, sr.PageSize)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "figure\tunit\t"
	pages := "\t⌈N/P⌉, ⌈S/P⌉\t"
	for _, z := range sr.Sizes {
		header += fmt.Sprintf("N=%d, S=%d\t", z.Nodes, z.Services)
		pages += fmt.Sprintf("%d, %d\t", z.NodePages, z.ServicePages)
	}
	_, _ = fmt.Fprintln(tw, header)
	_, _ = fmt.Fprintln(tw, pages)
	for _, row := range sweepRows {
		line := row.label + "\t"
		for i, z := range sr.Sizes {
			f := z.Figures[row.key]
			if i == 0 {
				line += f.Unit + "\t"
			}
			base := "-"
			if z.BaselineRun {
				base = compact(f.Baseline)
			}
			line += fmt.Sprintf("%s / %s\t", compact(f.Ccmkit), base)
		}
		_, _ = fmt.Fprintln(tw, line)
	}
	wall := "wall time\ts\t"
	for _, z := range sr.Sizes {
		wall += fmt.Sprintf("%.0f\t", z.WallSeconds)
	}
	_, _ = fmt.Fprintln(tw, wall)
	_ = tw.Flush()
	for _, z := range sr.Sizes {
		if !z.BaselineRun {
			_, _ = fmt.Fprintf(out, "-: the baseline was not run at %d Nodes (-sweep-baseline-nodes)\n", z.Nodes)
		}
	}
	_, _ = fmt.Fprintf(out, "\nccmkit's goals at %d Nodes, %d Services:\n", sr.GoalSize.Nodes, sr.GoalSize.Services)
	for _, g := range sr.Goals {
		met := "met"
		if !g.Met {
			met = "MISSED"
		}
		_, _ = fmt.Fprintf(out, "  %s: %s %s, goal %s (%s): %s", g.Figure, compact(g.Ccmkit), g.Unit, g.Goal, compact(g.AtMost), met)
		if g.Measure != "" {
			_, _ = fmt.Fprintf(out, "; %s", g.Measure)
		}
		_, _ = fmt.Fprintln(out)
	}
}

// compact prints a figure with about three significant digits.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a == 0 || a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// writeJSON writes the sweep to dir/sweep.json.
func (sr *sweepReport) writeJSON(dir string) error {
	data, err := json.MarshalIndent(sr, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing the sweep: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, sweepFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the sweep: %w", err)
	}
	return nil
}
