package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
)

// figure is one line of the report: a figure of both providers and ccmkit's goal.
type figure struct {
	key      string
	unit     string
	ccmkit   float64
	baseline float64
	digits   int      // decimals printed in the table
	goal     *float64 // ccmkit's goal: at most this; nil when the figure has none
	note     string
	// extrapolated names the side whose figure is scaled from a partial measurement.
	extrapolated string
}

func (f figure) meets() *bool {
	if f.goal == nil {
		return nil
	}
	ok := f.ccmkit <= *f.goal
	return &ok
}

// report is what a run found.
type report struct {
	cfg     config
	figures []figure
	ccmkit  *result
	base    *result
}

func atMost(v float64) *float64 { return &v }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// newReport puts the two results side by side with the goals.
func newReport(cfg config, c, b *result) *report {
	s := float64(cfg.services)
	rep := &report{cfg: cfg, ccmkit: c, base: b}
	add := func(f figure) { rep.figures = append(rep.figures, f) }
	add(figure{key: "P1", unit: "calls/min", ccmkit: c.p1, baseline: b.p1, digits: 1, goal: atMost(3),
		note: fmt.Sprintf("every Node Ready, no Service change, %d virtual minutes; UpdateNodeStatus every 5 min and MonitorNodes every 5 s called directly, the route controller's reconcile (not exported) released once every 10 s from its Run loop by a gate in front of its ListRoutes", cfg.minutes)})
	add(figure{key: "P1_outage", unit: "calls/min", ccmkit: c.p1Outage, baseline: b.p1Outage, digits: 1, goal: atMost(12),
		note: fmt.Sprintf("the same with %d of %d Nodes NotReady (a zone cut off; its instances keep running)", cfg.notReady, cfg.nodes)})
	add(figure{key: "P2_ensure_reads", unit: "calls", ccmkit: float64(c.p2EnsureReads), baseline: float64(b.p2EnsureReads), goal: atMost(1)})
	add(figure{key: "P2_ensure_writes", unit: "calls", ccmkit: float64(c.p2EnsureWrites), baseline: float64(b.p2EnsureWrites), goal: atMost(0)})
	add(figure{key: "P2_update_writes", unit: "calls", ccmkit: float64(c.p2UpdateWrites), baseline: float64(b.p2UpdateWrites), goal: atMost(0)})
	p3note := fmt.Sprintf("%v per cloud call", cfg.latency)
	if b.p3Note != "" {
		p3note += "; baseline " + b.p3Note
	}
	if c.p3Note != "" {
		p3note += "; ccmkit " + c.p3Note
	}
	var extrapolated []string
	if c.p3Note != "" {
		extrapolated = append(extrapolated, string(kindCcmkit))
	}
	if b.p3Note != "" {
		extrapolated = append(extrapolated, string(kindBaseline))
	}
	add(figure{key: "P3", unit: "s", ccmkit: c.p3, baseline: b.p3, digits: 2, goal: atMost(2), note: p3note, extrapolated: strings.Join(extrapolated, ",")})
	add(figure{key: "P3_no_latency", unit: "s", ccmkit: c.p3NoLatency, baseline: b.p3NoLatency, digits: 2,
		note: "the same pass over every Node with instant cloud calls"})
	add(figure{key: "P3_node_writes", unit: "writes", ccmkit: float64(c.p3Patches), baseline: float64(b.p3Patches), goal: atMost(0),
		note: "Node writes of that pass on a converged cluster"})
	add(figure{key: "P4_reads", unit: "calls", ccmkit: float64(c.p4Reads), baseline: float64(b.p4Reads),
		goal: atMost(float64(ceilDiv(cfg.services, cfg.pageSize) + ceilDiv(cfg.nodes, cfg.pageSize) + 1)),
		note: "a new provider and new controllers over the converged cluster, until the status pass, one route reconcile and every Service's sync are done and the cloud is quiet; the Services reach the informers after the service controller's node sync of the Nodes' add events (an upstream data race otherwise)"})
	add(figure{key: "P4_writes", unit: "calls", ccmkit: float64(c.p4Writes), baseline: float64(b.p4Writes), goal: atMost(0)})
	add(figure{key: "P5", unit: "MB", ccmkit: c.p5, baseline: b.p5, digits: 2, goal: atMost(15),
		note: "heap retained by the provider alone (10^6 bytes)"})
	add(figure{key: "P6", unit: "ns/op", ccmkit: c.p6NsPerOp, baseline: b.p6NsPerOp, goal: atMost(1e6),
		note: fmt.Sprintf("converged EnsureLoadBalancer with %d Nodes in a lister's (random) order, the fake cloud's work included", cfg.nodes)})
	add(figure{key: "P6_cpu", unit: "ns/op", ccmkit: c.p6CPUNsPerOp, baseline: b.p6CPUNsPerOp,
		note: "P6 as the process's CPU time (user and system, getrusage) per call over the benchmark's last round, garbage collection included; less noisy than wall time on a shared machine"})
	add(figure{key: "P6_allocs", unit: "allocs/op", ccmkit: c.p6AllocsPerOp, baseline: b.p6AllocsPerOp})
	add(figure{key: "P6_sorted_nodes", unit: "ns/op", ccmkit: c.p6SortedNsPerOp, baseline: b.p6SortedNsPerOp,
		note: "the same with the Nodes sorted by name, as a benchmark passing a fixed slice measures it"})
	add(figure{key: "P2_settings_calls", unit: "calls", ccmkit: float64(c.p2SettingsCalls), baseline: float64(b.p2SettingsCalls), goal: atMost(0),
		note: "P2's EnsureLoadBalancer of a Service with a node selector, session affinity, HTTP and HTTPS ports with certificates, the hostname annotation and an adapter-declared setting (size; every Service has its default)"})
	add(figure{key: "P6_settings", unit: "ns/op", ccmkit: c.p6SettingsNsPerOp, baseline: b.p6SettingsNsPerOp, goal: atMost(1e6),
		note: "P6 of the same Service"})
	add(figure{key: "P6_settings_allocs", unit: "allocs/op", ccmkit: c.p6SettingsAllocs, baseline: b.p6SettingsAllocs})
	add(figure{key: "node_add_writes", unit: "calls", ccmkit: float64(c.nodeAddWrites), baseline: float64(b.nodeAddWrites), goal: atMost(s)})
	add(figure{key: "node_add_seconds", unit: "s", ccmkit: c.nodeAddSeconds, baseline: b.nodeAddSeconds, digits: 2,
		note: "from the Node's creation until every load balancer has it"})
	add(figure{key: "node_add_lbs", unit: "load balancers", ccmkit: float64(c.nodeAddLBs), baseline: float64(b.nodeAddLBs),
		note: fmt.Sprintf("load balancers that have the new Node at the end, of %d", cfg.services)})
	// The baseline has no target groups: its figures beside node_add_groups are its
	// node_add's, what a Node added costs it on any cloud.
	// The goal: the instance list that initializes the new Node (node_add's too; N + 1
	// instances by then), then a list of at most ⌈S/P⌉ pages (the groups, at most one per
	// load balancer) and one write of their group.
	nodePages, lbPages := ceilDiv(cfg.nodes+1, cfg.pageSize), ceilDiv(cfg.services, cfg.pageSize)
	add(figure{key: "node_add_groups_calls", unit: "calls", ccmkit: float64(c.nodeAddGroupsCalls.Total()), baseline: float64(b.nodeAddCalls.Total()),
		goal: atMost(float64(nodePages + lbPages + 1)),
		note: fmt.Sprintf("node_add over a cloud with target groups, every call until the cloud is quiet: ccmkit over a second converged cluster whose load balancers were created with the capability (%d of %d named one of %d target groups before the Node); goal ⌈(N+1)/P⌉ + ⌈S/P⌉ + 1 = %d + %d + 1: the instance list that initializes the Node, as in node_add, then a list of at most ⌈S/P⌉ pages (of the target groups, at most one per load balancer) and one group write. Baseline: it has no target groups, its node_add, every call",
			c.groupedLBs, cfg.services, c.groupsBefore, nodePages, lbPages)})
	lbSide := func(calls fakecloud.Calls) float64 {
		return float64(calls.Total() - calls[cloudapi.OpListInstances] - calls[cloudapi.OpGetInstance])
	}
	add(figure{key: "node_add_groups_lb_calls", unit: "calls", ccmkit: lbSide(c.nodeAddGroupsCalls), baseline: lbSide(b.nodeAddCalls),
		goal: atMost(float64(lbPages + 1)),
		note: fmt.Sprintf("node_add_groups_calls without the instance calls that initialize the Node: what the load balancers cost, goal ⌈S/P⌉ + 1 = %d + 1 (one list, one write per group); baseline: its node_add, load balancer calls", lbPages)})
	add(figure{key: "node_add_groups_seconds", unit: "s", ccmkit: c.nodeAddGroupsSeconds, baseline: b.nodeAddSeconds, digits: 2, goal: atMost(1),
		note: "from the Node's creation until every load balancer reaches it (through its target group); baseline: its node_add_seconds"})
	add(figure{key: "node_add_groups_lbs", unit: "load balancers", ccmkit: float64(c.nodeAddGroupsLBs), baseline: float64(b.nodeAddLBs),
		note: fmt.Sprintf("load balancers that reach the new Node at the end, through their target group or their own targets, of %d; baseline: its node_add_lbs", cfg.services)})
	return rep
}

// printTable writes the figures as a table, the goals beside them, then the notes.
func (r *report) printTable(out io.Writer) {
	cfg := r.cfg
	limit := fmt.Sprintf("cloudAPI.qps=%v", cfg.qps)
	if math.IsInf(cfg.qps, 1) {
		limit = "cloudAPI.unlimited=true"
	}
	_, _ = fmt.Fprintf(out, "ccmkit vs baseline: %d Nodes, %d LoadBalancer Services, page size %d, upstream controllers of k8s.io/cloud-provider, fake cloud; ccmkit %s\n\n",
		cfg.nodes, cfg.services, cfg.pageSize, limit)
	if cfg.noBaseline {
		_, _ = fmt.Fprint(out, "The baseline was not run at this size: its figures read 0.\n\n")
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintln(tw, "figure\tunit\tccmkit\tbaseline\tccmkit goal\tmeets\t")
	for _, f := range r.figures {
		goal, meets := "-", "-"
		if f.goal != nil {
			goal = "≤ " + num(*f.goal, f.digits)
			meets = "no"
			if *f.meets() {
				meets = "yes"
			}
		}
		ccm, base := num(f.ccmkit, f.digits), num(f.baseline, f.digits)
		if strings.Contains(f.extrapolated, string(kindCcmkit)) {
			ccm += " (extrapolated)"
		}
		if strings.Contains(f.extrapolated, string(kindBaseline)) {
			base += " (extrapolated)"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", f.key, f.unit, ccm, base, goal, meets)
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(out)
	for _, f := range r.figures {
		if f.note != "" {
			_, _ = fmt.Fprintf(out, "%s: %s\n", f.key, f.note)
		}
	}
	_, _ = fmt.Fprintln(out)
	for _, d := range []struct {
		name string
		c, b fakecloud.Calls
	}{
		{"P1 calls in all", r.ccmkit.p1Calls, r.base.p1Calls},
		{"P1_outage calls in all", r.ccmkit.p1OutCalls, r.base.p1OutCalls},
		{"P4 calls", r.ccmkit.p4Calls, r.base.p4Calls},
		{"node_add calls", r.ccmkit.nodeAddCalls, r.base.nodeAddCalls},
	} {
		_, _ = fmt.Fprintf(out, "%s: ccmkit %s; baseline %s\n", d.name, callString(d.c), callString(d.b))
	}
	_, _ = fmt.Fprintf(out, "node_add_groups calls: ccmkit %s; baseline none of its own (no target groups: its node_add calls)\n", callString(r.ccmkit.nodeAddGroupsCalls))
	_, _ = fmt.Fprintf(out, "wall time: ccmkit %.0fs (setup %.0fs) and %.0fs with target groups (setup %.0fs), baseline %.0fs (setup %.0fs)\n",
		r.ccmkit.total.Seconds(), r.ccmkit.setup.Seconds(), r.ccmkit.groupsTotal.Seconds(), r.ccmkit.groupsSetup.Seconds(), r.base.total.Seconds(), r.base.setup.Seconds())
}

func num(v float64, digits int) string { return fmt.Sprintf("%.*f", digits, v) }

// callString lists the calls per operation in the order of cloudapi.Operations.
func callString(c fakecloud.Calls) string {
	var parts []string
	for _, op := range cloudapi.Operations() {
		if n := c[op]; n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// jsonFigure is one figure in the JSON report.
type jsonFigure struct {
	Ccmkit     float64  `json:"ccmkit"`
	Baseline   float64  `json:"baseline"`
	Unit       string   `json:"unit"`
	GoalAtMost *float64 `json:"goal_at_most,omitempty"`
	MeetsGoal  *bool    `json:"meets_goal,omitempty"`
	Note       string   `json:"note,omitempty"`
	// Extrapolated names the sides ("baseline", "ccmkit") whose figure is scaled from a
	// partial measurement; the note says how.
	Extrapolated string `json:"extrapolated,omitempty"`
}

// jsonFigures returns the figures by key.
func (r *report) jsonFigures() map[string]jsonFigure {
	out := make(map[string]jsonFigure, len(r.figures))
	for _, f := range r.figures {
		out[f.key] = jsonFigure{Ccmkit: f.ccmkit, Baseline: f.baseline, Unit: f.unit, GoalAtMost: f.goal, MeetsGoal: f.meets(), Note: f.note, Extrapolated: f.extrapolated}
	}
	return out
}

// writeJSON writes the figures to path.
func (r *report) writeJSON(path string) error {
	data, err := json.MarshalIndent(r.jsonFigures(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the JSON report: %w", err)
	}
	return nil
}
