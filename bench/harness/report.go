package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// figure is one line of the report: a figure of every column and ccmkit's goal.
type figure struct {
	key    string
	unit   string
	values []float64 // by column, in the report's order: ccmkit first
	digits int       // decimals printed in the table
	goal   *float64  // ccmkit's goal: at most this; nil when the figure has none
	note   string
	// extrapolated names the columns whose figure is scaled from a partial measurement.
	extrapolated []string
	// count is true for a figure that is checked, not minimized (load balancers that
	// reach a Node): it has no ratio.
	count bool
}

func (f figure) ccmkit() float64 { return f.values[0] }

func (f figure) meets() *bool {
	if f.goal == nil {
		return nil
	}
	ok := f.ccmkit() <= *f.goal
	return &ok
}

// best returns the index of the peer (peers[i]: a column that is not ccmkit's, on the fake
// or another cloud, and ran) that has the figure with the lowest value, or -1 when there
// is none.
func (f figure) best(peers []bool) int {
	b := -1
	for i := 1; i < len(f.values); i++ {
		if peers[i] && !math.IsNaN(f.values[i]) && (b < 0 || f.values[i] < f.values[b]) {
			b = i
		}
	}
	return b
}

// ratio returns ccmkit / the best peer's value as the table prints it.
func (f figure) ratio(peers []bool) string {
	b := f.best(peers)
	switch {
	case f.count || b < 0:
		return "-"
	case f.values[b] == 0 && f.ccmkit() == 0:
		return "="
	case f.values[b] == 0:
		return "∞"
	}
	return compact(f.ccmkit() / f.values[b])
}

// report is what a run found.
type report struct {
	cfg     config
	columns []Column  // ccmkit's first
	results []*result // by column
	ran     []bool    // by column: false for a peer not run at this size (its figures read 0)
	peers   []bool    // by column: ran, and no provider of ccmkit's (OnCcmkit)
	figures []figure
}

func atMost(v float64) *float64 { return &v }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// result returns the result of the column named name, or nil.
func (r *report) result(name string) *result {
	for i, c := range r.columns {
		if c.Name() == name {
			return r.results[i]
		}
	}
	return nil
}

// newReport puts the columns' results side by side with ccmkit's goals.
func newReport(cfg config, columns []Column, results []*result, ran []bool) *report {
	s := float64(cfg.services)
	rep := &report{cfg: cfg, columns: columns, results: results, ran: ran}
	for i, c := range columns {
		_, ours := c.(OnCcmkit)
		rep.peers = append(rep.peers, i > 0 && ran[i] && !ours)
	}
	add := func(f figure, of func(*result) float64) {
		for _, r := range results {
			f.values = append(f.values, of(r))
		}
		rep.figures = append(rep.figures, f)
	}
	count := func(of func(*result) int64) func(*result) float64 {
		return func(r *result) float64 { return float64(of(r)) }
	}
	add(figure{key: "P1", unit: "calls/min", digits: 1, goal: atMost(3),
		note: fmt.Sprintf("every Node Ready, no Service change, %d virtual minutes; UpdateNodeStatus every 5 min and MonitorNodes every 5 s called directly, the route controller's reconcile (not exported) released once every 10 s from its Run loop by a gate in front of its ListRoutes", cfg.minutes)},
		func(r *result) float64 { return r.p1 })
	outageNote := fmt.Sprintf("the same with %d of %d Nodes NotReady (a zone cut off; its instances keep running)", cfg.notReady, cfg.nodes)
	var outageScaled []string
	for i, r := range results {
		if r.p1OutageNote != "" {
			outageNote += "; " + columns[i].Name() + " " + r.p1OutageNote + " (it waits in real time for each call)"
			outageScaled = append(outageScaled, columns[i].Name())
		}
	}
	add(figure{key: "P1_outage", unit: "calls/min", digits: 1, goal: atMost(12), note: outageNote, extrapolated: outageScaled},
		func(r *result) float64 { return r.p1Outage })
	add(figure{key: "P2_ensure_reads", unit: "calls", goal: atMost(1)}, count(func(r *result) int64 { return r.p2EnsureReads }))
	add(figure{key: "P2_ensure_writes", unit: "calls", goal: atMost(0)}, count(func(r *result) int64 { return r.p2EnsureWrites }))
	add(figure{key: "P2_update_writes", unit: "calls", goal: atMost(0)}, count(func(r *result) int64 { return r.p2UpdateWrites }))
	p3note := fmt.Sprintf("%v per cloud call", cfg.latency)
	var extrapolated []string
	for i, r := range results {
		if r.p3Note != "" {
			p3note += "; " + columns[i].Name() + " " + r.p3Note
			extrapolated = append(extrapolated, columns[i].Name())
		}
	}
	add(figure{key: "P3", unit: "s", digits: 2, goal: atMost(2), note: p3note, extrapolated: extrapolated},
		func(r *result) float64 { return r.p3 })
	add(figure{key: "P3_no_latency", unit: "s", digits: 2, note: "the same pass over every Node with instant cloud calls"},
		func(r *result) float64 { return r.p3NoLatency })
	add(figure{key: "P3_node_writes", unit: "writes", goal: atMost(0), note: "Node writes of that pass on a converged cluster"},
		count(func(r *result) int64 { return r.p3Patches }))
	add(figure{key: "P4_reads", unit: "calls",
		goal: atMost(float64(ceilDiv(cfg.services, cfg.pageSize) + ceilDiv(cfg.nodes, cfg.pageSize) + 1)),
		note: "a new provider and new controllers over the converged cluster, until the status pass, one route reconcile and every Service's sync are done and the cloud is quiet; the Services reach the informers after the service controller's node sync of the Nodes' add events (an upstream data race otherwise)"},
		count(func(r *result) int64 { return r.p4Reads }))
	add(figure{key: "P4_writes", unit: "calls", goal: atMost(0)}, count(func(r *result) int64 { return r.p4Writes }))
	add(figure{key: "P5", unit: "MB", digits: 2, goal: atMost(15), note: "heap retained by the provider alone (10^6 bytes)"},
		func(r *result) float64 { return r.p5 })
	add(figure{key: "P6", unit: "ns/op", goal: atMost(1e6),
		note: fmt.Sprintf("converged EnsureLoadBalancer with %d Nodes in a lister's (random) order, the cloud's work included", cfg.nodes)},
		func(r *result) float64 { return r.p6NsPerOp })
	add(figure{key: "P6_cpu", unit: "ns/op",
		note: "P6 as the process's CPU time (user and system, getrusage) per call over the benchmark's last round, garbage collection included; less noisy than wall time on a shared machine"},
		func(r *result) float64 { return r.p6CPUNsPerOp })
	add(figure{key: "P6_allocs", unit: "allocs/op"}, func(r *result) float64 { return r.p6AllocsPerOp })
	add(figure{key: "P6_sorted_nodes", unit: "ns/op", note: "the same with the Nodes sorted by name, as a benchmark passing a fixed slice measures it"},
		func(r *result) float64 { return r.p6SortedNsPerOp })
	settingsNote := "P2's EnsureLoadBalancer of a Service with a node selector, session affinity, HTTP and HTTPS ports with certificates, the hostname annotation and an adapter-declared setting (size; every Service has its default); the annotations are ccmkit's, which a peer ignores"
	for i, r := range results {
		if r.settingsRefused != "" {
			settingsNote += fmt.Sprintf("; %s refuses the Service (n/a): %s", columns[i].Name(), r.settingsRefused)
		}
	}
	settings := func(of func(*result) float64) func(*result) float64 {
		return func(r *result) float64 {
			if r.settingsRefused != "" {
				return math.NaN()
			}
			return of(r)
		}
	}
	add(figure{key: "P2_settings_calls", unit: "calls", goal: atMost(0), note: settingsNote},
		settings(count(func(r *result) int64 { return r.p2SettingsCalls })))
	add(figure{key: "P6_settings", unit: "ns/op", goal: atMost(1e6), note: "P6 of the same Service"},
		settings(func(r *result) float64 { return r.p6SettingsNsPerOp }))
	add(figure{key: "P6_settings_allocs", unit: "allocs/op"}, settings(func(r *result) float64 { return r.p6SettingsAllocs }))
	add(figure{key: "node_add_writes", unit: "calls", goal: atMost(s)}, count(func(r *result) int64 { return r.nodeAddWrites }))
	repeats := "; timed from a garbage collection, as a Go benchmark is"
	if cfg.repeats() > 1 {
		repeats = fmt.Sprintf("; the median of %d runs (-node-repeats), each with the controllers started afresh (after the first, on a world their startup puts back: the instance out of, or back in, every load balancer) and timed from a garbage collection, as a Go benchmark is", cfg.repeats())
	}
	add(figure{key: "node_add_seconds", unit: "s", digits: 2, note: "from the Node's creation until every load balancer has it" + repeats},
		func(r *result) float64 { return r.nodeAddSeconds })
	add(figure{key: "node_add_lbs", unit: "load balancers", count: true,
		note: fmt.Sprintf("load balancers that have the new Node at the end, of %d", cfg.services)},
		func(r *result) float64 { return float64(r.nodeAddLBs) })
	add(figure{key: "node_delete_writes", unit: "calls", goal: atMost(s),
		note: "a Node's instance deleted in the cloud and the Node NotReady: every cloud write until the cloud is quiet, as the lifecycle controller (a pass every 5 virtual seconds) deletes the Node and the service controller takes it out of every load balancer"},
		count(func(r *result) int64 { return r.nodeDeleteWrites }))
	add(figure{key: "node_delete_seconds", unit: "s", digits: 2, note: "from the Node's NotReady until every load balancer was written without it" + repeats},
		func(r *result) float64 { return r.nodeDeleteSeconds })
	add(figure{key: "node_delete_lbs", unit: "load balancers", count: true,
		note: fmt.Sprintf("load balancers that still have the deleted Node's instance at the end, of %d (0: every one)", cfg.services)},
		func(r *result) float64 { return float64(r.nodeDeleteLBs) })
	// The peers have no target groups: their figures beside node_add_groups are their
	// node_add's, what a Node added costs them on any cloud.
	// The goal: the instance list that initializes the new Node (node_add's too; N + 1
	// instances by then), then a list of at most ⌈S/P⌉ pages (the groups, at most one per
	// load balancer) and one write of their group.
	c := results[0]
	nodePages, lbPages := ceilDiv(cfg.nodes+1, cfg.pageSize), ceilDiv(cfg.services, cfg.pageSize)
	groupCalls := func(r *result) Calls {
		if r.groups {
			return r.nodeAddGroupsCalls
		}
		return r.nodeAddCalls
	}
	add(figure{key: "node_add_groups_calls", unit: "calls",
		goal: atMost(float64(nodePages + lbPages + 1)),
		note: fmt.Sprintf("node_add over a cloud with target groups, every call until the cloud is quiet: ccmkit over a second converged cluster whose load balancers were created with the capability (%d of %d named one of %d target groups before the Node); goal ⌈(N+1)/P⌉ + ⌈S/P⌉ + 1 = %d + %d + 1: the instance list that initializes the Node, as in node_add, then a list of at most ⌈S/P⌉ pages (of the target groups, at most one per load balancer) and one group write. A peer: its node_add, every call",
			c.groupedLBs, cfg.services, c.groupsBefore, nodePages, lbPages)},
		func(r *result) float64 { return float64(groupCalls(r).Total()) })
	add(figure{key: "node_add_groups_lb_calls", unit: "calls",
		goal: atMost(float64(lbPages + 1)),
		note: fmt.Sprintf("node_add_groups_calls without the instance calls that initialize the Node: what the load balancers cost, goal ⌈S/P⌉ + 1 = %d + 1 (one list, one write per group); a peer: its node_add's calls but those on instances", lbPages)},
		func(r *result) float64 { g := groupCalls(r); return float64(g.Total() - g.InstanceCalls()) })
	add(figure{key: "node_add_groups_seconds", unit: "s", digits: 2, goal: atMost(1),
		note: "from the Node's creation until every load balancer reaches it (through its target group); a peer: its node_add_seconds"},
		func(r *result) float64 {
			if r.groups {
				return r.nodeAddGroupsSeconds
			}
			return r.nodeAddSeconds
		})
	add(figure{key: "node_add_groups_lbs", unit: "load balancers", count: true,
		note: fmt.Sprintf("load balancers that reach the new Node at the end, through their target group or their own targets, of %d; a peer: its node_add_lbs", cfg.services)},
		func(r *result) float64 {
			if r.groups {
				return float64(r.nodeAddGroupsLBs)
			}
			return float64(r.nodeAddLBs)
		})
	return rep
}

// OnCcmkit is a Column whose provider is ccmkit's, over a cloud other than the fake: its
// figures stand beside the others, and it is no peer (the ratio is ccmkit's to the best
// peer's). Budget is what the cloud allows a project: requests a minute (0: no budget) and
// what the limit is, which the report sets P1 against.
type OnCcmkit interface {
	Column
	Budget() (perMinute float64, limit string)
}

// Explainer is a Column that says why it wins a figure against ccmkit.
type Explainer interface {
	// Why returns why the column's figure key is lower than ccmkit's, or "".
	Why(key string) string
}

// printTable writes the figures as a table, each column's beside ccmkit's, the ratio of
// ccmkit's to the best peer's and the goals, then the notes, the figures a peer wins and
// why, and the calls by operation.
func (r *report) printTable(out io.Writer) {
	cfg := r.cfg
	limit := fmt.Sprintf("cloudAPI.qps=%v", cfg.qps)
	if math.IsInf(cfg.qps, 1) {
		limit = "cloudAPI.unlimited=true"
	}
	names := make([]string, len(r.columns))
	for i, c := range r.columns {
		names[i] = c.Name()
	}
	_, _ = fmt.Fprintf(out, "%s: %d Nodes, %d LoadBalancer Services, page size %d, upstream controllers of k8s.io/cloud-provider, each provider over its own in-memory cloud; ccmkit %s\n\n",
		strings.Join(names, " vs "), cfg.nodes, cfg.services, cfg.pageSize, limit)
	for i, ran := range r.ran {
		if !ran {
			_, _ = fmt.Fprintf(out, "%s was not run at this size: its figures read 0.\n\n", names[i])
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(tw, "figure\tunit\t%s\tccmkit / best peer\tccmkit goal\tmeets\t\n", strings.Join(names, "\t"))
	for _, f := range r.figures {
		goal, meets := "-", "-"
		if f.goal != nil {
			goal = "≤ " + num(*f.goal, f.digits)
			meets = "no"
			if *f.meets() {
				meets = "yes"
			}
		}
		line := f.key + "\t" + f.unit + "\t"
		for i, v := range f.values {
			line += num(v, f.digits)
			if slices.Contains(f.extrapolated, names[i]) {
				line += " (extrapolated)"
			}
			line += "\t"
		}
		_, _ = fmt.Fprintf(tw, "%s%s\t%s\t%s\t\n", line, f.ratio(r.peers), goal, meets)
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(out)
	for _, f := range r.figures {
		if f.note != "" {
			_, _ = fmt.Fprintf(out, "%s: %s\n", f.key, f.note)
		}
	}
	r.printBudgets(out)
	r.printWins(out)
	_, _ = fmt.Fprintln(out)
	for _, d := range []struct {
		name string
		of   func(*result) Calls
	}{
		{"P1 calls in all", func(x *result) Calls { return x.p1Calls }},
		{"P1_outage calls in all", func(x *result) Calls { return x.p1OutCalls }},
		{"P4 calls", func(x *result) Calls { return x.p4Calls }},
		{"node_add calls", func(x *result) Calls { return x.nodeAddCalls }},
		{"node_delete calls", func(x *result) Calls { return x.nodeDeleteCalls }},
	} {
		parts := make([]string, len(names))
		for i, x := range r.results {
			parts[i] = names[i] + " " + d.of(x).String()
		}
		_, _ = fmt.Fprintf(out, "%s: %s\n", d.name, strings.Join(parts, "; "))
	}
	c := r.results[0]
	_, _ = fmt.Fprintf(out, "node_add_groups calls: ccmkit %s; the peers none of their own (no target groups: their node_add calls)\n", c.nodeAddGroupsCalls)
	if r.cfg.repeats() > 1 {
		for _, d := range []struct {
			name string
			of   func(*result) []float64
		}{
			{"node_add_seconds", func(x *result) []float64 { return x.nodeAddRuns }},
			{"node_delete_seconds", func(x *result) []float64 { return x.nodeDeleteRuns }},
		} {
			var parts []string
			for i, x := range r.results {
				if !r.ran[i] {
					continue
				}
				runs := make([]string, len(d.of(x)))
				for j, s := range d.of(x) {
					runs[j] = fmt.Sprintf("%.3f", s)
				}
				parts = append(parts, names[i]+" "+strings.Join(runs, " "))
			}
			_, _ = fmt.Fprintf(out, "%s of each run, in order: %s\n", d.name, strings.Join(parts, "; "))
		}
	}
	wall := fmt.Sprintf("wall time: ccmkit %.0fs (setup %.0fs) and %.0fs with target groups (setup %.0fs)", c.total.Seconds(), c.setup.Seconds(), c.groupsTotal.Seconds(), c.groupsSetup.Seconds())
	for i, x := range r.results[1:] {
		wall += fmt.Sprintf(", %s %.0fs (setup %.0fs)", names[i+1], x.total.Seconds(), x.setup.Seconds())
	}
	_, _ = fmt.Fprintln(out, wall)
}

// printBudgets sets the P1 of every column over a cloud with a request budget against it.
func (r *report) printBudgets(out io.Writer) {
	for i, c := range r.columns {
		o, ok := c.(OnCcmkit)
		if !ok || !r.ran[i] {
			continue
		}
		if budget, limit := o.Budget(); budget > 0 {
			p1 := r.results[i].p1
			_, _ = fmt.Fprintf(out, "%s budget: P1 %.1f requests a minute, %.0f%% of %.0f a minute (%s); P1_outage %.1f, %.0f%%\n",
				c.Name(), p1, 100*p1/budget, budget, limit, r.results[i].p1Outage, 100*r.results[i].p1Outage/budget)
		}
	}
}

// printWins lists the figures where a peer is lower than ccmkit, with the peer's reason
// where it gives one (Explainer).
func (r *report) printWins(out io.Writer) {
	var lines []string
	for _, f := range r.figures {
		b := f.best(r.peers)
		if f.count || b < 0 || f.values[b] >= f.ccmkit() {
			continue
		}
		line := fmt.Sprintf("  %s: %s %s against ccmkit's %s", f.key, r.columns[b].Name(), num(f.values[b], f.digits), num(f.ccmkit(), f.digits))
		if e, ok := r.columns[b].(Explainer); ok {
			if why := e.Why(f.key); why != "" {
				line += ": " + why
			}
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	_, _ = fmt.Fprintf(out, "\nWhere a peer wins:\n%s\n", strings.Join(lines, "\n"))
}

// num prints a figure; NaN is a figure the column does not have.
func num(v float64, digits int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", digits, v)
}

// jsonFigures returns the figures by key, each a map of every column's value by column
// name, the unit, ccmkit's goal, the ratio of ccmkit's value to the best peer's, and the
// note.
func (r *report) jsonFigures() map[string]map[string]any {
	out := make(map[string]map[string]any, len(r.figures))
	for _, f := range r.figures {
		m := map[string]any{"unit": f.unit}
		for i, c := range r.columns {
			if math.IsNaN(f.values[i]) {
				m[c.Name()] = nil // n/a
			} else {
				m[c.Name()] = f.values[i]
			}
		}
		if f.goal != nil {
			m["goal_at_most"], m["meets_goal"] = *f.goal, *f.meets()
		}
		if f.note != "" {
			m["note"] = f.note
		}
		if len(f.extrapolated) > 0 {
			// The columns whose figure is scaled from a partial measurement; the note says how.
			m["extrapolated"] = strings.Join(f.extrapolated, ",")
		}
		if f.key == "P1" || f.key == "P1_outage" {
			for i, c := range r.columns {
				if o, ok := c.(OnCcmkit); ok && r.ran[i] {
					if budget, _ := o.Budget(); budget > 0 {
						// The column's share of its cloud's budget of requests a minute.
						m[c.Name()+"_budget_per_minute"], m[c.Name()+"_budget_share"] = budget, f.values[i]/budget
					}
				}
			}
		}
		if b := f.best(r.peers); !f.count && b >= 0 {
			m["best_peer"] = r.columns[b].Name()
			if f.values[b] != 0 {
				m["ccmkit_per_best_peer"] = f.ccmkit() / f.values[b]
			}
		}
		out[f.key] = m
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
