package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestBenchSmall runs every measurement at a small size and checks what must hold
// whatever the figures are: the JSON report is complete, ccmkit's quiet cluster costs
// fewer calls than the pass-through baseline, a converged load balancer is not written,
// the fixture is converged (no Node writes), and a new Node reaches every load balancer.
func TestBenchSmall(t *testing.T) {
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	rep, err := run(context.Background(), smallConfig(), &logs, nil)
	require.NoError(t, err)
	for _, line := range []string{"ccmkit: node_add 2 of 2: ", "ccmkit: node_delete 2 of 2: ", "baseline: node_add 2 of 2: ", "baseline: node_delete 2 of 2: "} {
		assert.Contains(t, logs.String(), line, "every repetition of node_add and node_delete")
	}

	path := filepath.Join(t.TempDir(), "bench.json")
	require.NoError(t, rep.writeJSON(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var figures map[string]map[string]any
	require.NoError(t, json.Unmarshal(data, &figures))

	for _, key := range []string{
		"P1", "P1_outage", "P2_ensure_reads", "P2_ensure_writes", "P2_update_writes", "P3",
		"P4_reads", "P4_writes", "P5", "P6", "P6_allocs", "node_add_writes", "node_add_seconds",
		"node_delete_writes", "node_delete_seconds", "node_delete_lbs",
		"P2_settings_calls", "P6_settings", "P6_settings_allocs",
		"node_add_groups_calls", "node_add_groups_lb_calls", "node_add_groups_seconds", "node_add_groups_lbs",
	} {
		assert.Contains(t, figures, key)
	}
	for key, f := range figures {
		for _, side := range []string{"ccmkit", "baseline"} {
			assert.IsType(t, float64(0), f[side], "%s.%s", key, side)
		}
		assert.NotEmpty(t, f["unit"], "%s.unit", key)
	}
	value := func(key, side string) float64 {
		t.Helper()
		v, ok := figures[key][side].(float64)
		require.True(t, ok, "%s.%s", key, side)
		return v
	}

	assert.Less(t, value("P1", "ccmkit"), value("P1", "baseline"))
	assert.Less(t, value("P1_outage", "ccmkit"), value("P1_outage", "baseline"))
	assert.Zero(t, value("P2_ensure_writes", "ccmkit"))
	assert.Equal(t, float64(smallConfig().services), value("node_delete_writes", "ccmkit"), "one write per load balancer")
	assert.Zero(t, value("P2_update_writes", "ccmkit"))
	assert.Zero(t, value("P2_settings_calls", "ccmkit"), "a converged Service with every setting costs no call")
	assert.Equal(t, 1.0, value("P2_ensure_writes", "baseline"), "the baseline writes every converged load balancer once")
	assert.Equal(t, 1.0, value("P2_update_writes", "baseline"))
	assert.Equal(t, "baseline", figures["P3"]["extrapolated"], "the baseline's pass was timed on a subset")
	assert.Contains(t, figures["P3"]["note"], "scaled linearly")
	for _, side := range []string{"ccmkit", "baseline"} {
		assert.Zero(t, value("P3_node_writes", side), "%s: a status pass over converged Nodes writes none", side)
		assert.Equal(t, float64(smallConfig().services), value("node_add_lbs", side), "%s: every load balancer has the new Node", side)
		assert.Positive(t, value("node_add_writes", side), side)
		assert.Zero(t, value("node_delete_lbs", side), "%s: no load balancer keeps the deleted Node", side)
		assert.Positive(t, value("node_delete_writes", side), side)
		assert.Positive(t, value("P4_reads", side), side)
	}
	assert.Zero(t, rep.results[0].p1KubeWrites+rep.result("baseline").p1KubeWrites, "quiet passes over a converged cluster write no object")
	assert.Equal(t, float64(smallConfig().services), value("node_add_groups_lbs", "ccmkit"), "every load balancer reaches the new Node")
	assert.Equal(t, true, figures["node_add_groups_calls"]["meets_goal"], "node_add_groups within its goal")
	assert.Equal(t, true, figures["node_add_groups_lb_calls"]["meets_goal"], "the load balancers' part within ⌈S/P⌉ + 1")
	assert.Less(t, value("node_add_groups_calls", "ccmkit"), float64(rep.results[0].nodeAddCalls.Total()), "target groups make a Node added cheaper than node_add")
	assert.Equal(t, value("node_add_lbs", "baseline"), value("node_add_groups_lbs", "baseline"), "the baseline has no target groups: its node_add")
	assert.Equal(t, float64(rep.result("baseline").nodeAddCalls.Total()), value("node_add_groups_calls", "baseline"))

	// Each run's seconds of node_add and node_delete are kept, in order, and printed
	// beside their median.
	var table bytes.Buffer
	rep.printTable(&table)
	for _, side := range []string{"ccmkit", "baseline"} {
		x := rep.result(side)
		for name, runs := range map[string][]float64{"node_add": x.nodeAddRuns, "node_delete": x.nodeDeleteRuns} {
			require.Len(t, runs, smallConfig().nodeRepeats, "%s %s", side, name)
			assert.Equal(t, value(name+"_seconds", side), median(runs), "%s %s: the median of its runs", side, name)
		}
		assert.Contains(t, table.String(), fmt.Sprintf("%s %.3f %.3f", side, x.nodeDeleteRuns[0], x.nodeDeleteRuns[1]))
	}
	assert.Contains(t, table.String(), "node_add_seconds of each run, in order: ccmkit ")
	assert.Contains(t, table.String(), "node_delete_seconds of each run, in order: ccmkit ")
}

// TestNodeAddGroupsSmall runs node_add_groups alone at a small size: ccmkit's world over a
// fake cloud with target groups, whose load balancers are created in their groups, and a
// Node added. Every load balancer must reach the new Node through its group, and the calls
// are counted at the fake.
func TestNodeAddGroupsSmall(t *testing.T) {
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	silenceKlog()
	cfg := smallConfig()
	r := &result{}
	require.NoError(t, measureGroups(context.Background(), cfg, r, &progress{w: &logs, start: time.Now()}))

	assert.Equal(t, cfg.services, r.groupedLBs, "every load balancer names a target group before the Node")
	assert.Positive(t, r.groupsBefore)
	assert.Equal(t, cfg.services, r.nodeAddGroupsLBs, "every load balancer reaches the new Node")

	calls := r.nodeAddGroupsCalls
	assert.Positive(t, calls.Total(), "the calls are counted at the fake")
	assert.Equal(t, int64(ceilDiv(cfg.nodes+1, cfg.pageSize)), calls.Of(string(cloudapi.OpListInstances)),
		"the new Node is initialized with one instance list, as in node_add")
	assert.Zero(t, calls.Of(string(cloudapi.OpUpdateLoadBalancer)), "no load balancer is written: their group is")
	assert.Equal(t, int64(r.groupsBefore), calls.Writes(), "one write per target group")
	assert.Equal(t, int64(r.groupsBefore), calls.Of(string(cloudapi.OpUpdateTargetGroup)))
	assert.LessOrEqual(t, calls.Total()-calls.Of(string(cloudapi.OpListInstances)), int64(ceilDiv(cfg.services, cfg.pageSize)+1),
		"beyond the Node's initialization, at most a list of ⌈S/P⌉ pages and a group write")
	assert.Positive(t, r.nodeAddGroupsSeconds)
	assert.Contains(t, logs.String(), "node_add_groups:", "the log line with the calls by operation")
}

// TestTapReach checks when the tap counts a load balancer as reaching the watched
// instance: with it among its own targets, or naming a target group written with it,
// whether the group was written before or after the load balancer.
func TestTapReach(t *testing.T) {
	lb := func(id, group string, targets ...string) *cloudapi.LoadBalancer {
		return &cloudapi.LoadBalancer{ID: id, Spec: cloudapi.LoadBalancerSpec{TargetGroup: group, Targets: targets}}
	}
	group := func(id string, targets ...string) *cloudapi.TargetGroup {
		return &cloudapi.TargetGroup{ID: id, Spec: cloudapi.TargetGroupSpec{Targets: targets}}
	}
	tests := []struct {
		name     string
		lbGroups map[string]string // as the cloud held them before the watch
		writes   []any             // *cloudapi.LoadBalancer or *cloudapi.TargetGroup, in order
		want     int
		reached  []string
		removed  bool // watching for writes without the instance
	}{
		{"own targets", nil, []any{lb("lb-1", "", "i-0", "i-new"), lb("lb-2", "", "i-0")}, 2, []string{"lb-1"}, false},
		{"a group written with the instance reaches the load balancers that name it",
			map[string]string{"lb-1": "tg-1", "lb-2": "tg-1", "lb-3": "tg-2"},
			[]any{group("tg-1", "i-0", "i-new"), group("tg-2", "i-0")}, 3, []string{"lb-1", "lb-2"}, false},
		{"a load balancer written into a group that has the instance",
			nil, []any{group("tg-1", "i-new"), lb("lb-1", "tg-1")}, 1, []string{"lb-1"}, false},
		{"a load balancer moved out of its group before the group's write",
			map[string]string{"lb-1": "tg-1"}, []any{lb("lb-1", ""), group("tg-1", "i-new")}, 1, nil, false},
		{"the same load balancer twice counts once",
			nil, []any{lb("lb-1", "", "i-new"), lb("lb-1", "", "i-new")}, 2, []string{"lb-1"}, false},
		{"removed: a load balancer written without the instance",
			nil, []any{lb("lb-1", "", "i-0"), lb("lb-2", "", "i-0", "i-new")}, 2, []string{"lb-1"}, true},
		{"removed: a group written without the instance takes it from the load balancers that name it",
			map[string]string{"lb-1": "tg-1", "lb-2": "tg-2"}, []any{group("tg-1", "i-0"), group("tg-2", "i-0", "i-new")}, 1, []string{"lb-1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := newTap(nil)
			done := tp.watch("i-new", tt.want, tt.removed, tt.lbGroups)
			for _, w := range tt.writes {
				switch w := w.(type) {
				case *cloudapi.LoadBalancer:
					tp.observe(w)
				case *cloudapi.TargetGroup:
					tp.observeGroup(w)
				}
			}
			assert.ElementsMatch(t, tt.reached, tp.reaches.Reached())
			select {
			case <-done:
				assert.Len(t, tt.reached, tt.want, "done only once want load balancers reach the instance")
			default:
				assert.Less(t, len(tt.reached), tt.want, "done once want load balancers reach the instance")
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*config)
		want  string
	}{
		{"valid", func(*config) {}, ""},
		{"no nodes", func(c *config) { c.nodes = 0 }, "-nodes"},
		{"too many NotReady", func(c *config) { c.notReady = 61 }, "-not-ready"},
		{"no minutes", func(c *config) { c.minutes = 0 }, "-minutes"},
		{"no subset", func(c *config) { c.p3Subset = 0 }, "-p3-subset"},
		{"negative qps", func(c *config) { c.qps = -1 }, "-qps"},
		{"no quiet period", func(c *config) { c.quiet = 0 }, "-quiet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.notReady = 20
			tt.tweak(&cfg)
			err := cfg.validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestChoosePeers picks the peer columns -peers names, in the peers' order.
func TestChoosePeers(t *testing.T) {
	a, b := fakeColumn{kind: "a"}, fakeColumn{kind: "b"}
	peers := []Column{a, b}
	tests := []struct {
		only string
		want []Column
		err  string
	}{
		{"", peers, ""},
		{"b", []Column{b}, ""},
		{"b, a", []Column{b, a}, ""},
		{"none", nil, ""},
		{"c", nil, `"c" is not a peer column (the peers: a, b, or none)`},
		{"a,", nil, `"" is not a peer column`},
		{"a, a", nil, `"a" is named twice`},
	}
	for _, tt := range tests {
		t.Run(tt.only, func(t *testing.T) {
			got, err := choosePeers(peers, tt.only)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// onOtherCloud is a column of ccmkit over another cloud, with a request budget.
type onOtherCloud struct{ fakeColumn }

func (onOtherCloud) Budget() (float64, string) { return 60, "sixty a minute" }

// TestOnCcmkitIsNoPeer: a column of ccmkit over another cloud is left out of the best peer
// and the ratio, and its P1 is set against its cloud's budget, in the table and the JSON.
func TestOnCcmkitIsNoPeer(t *testing.T) {
	cols := []Column{fakeColumn{kind: kindCcmkit}, fakeColumn{kind: kindBaseline}, onOtherCloud{fakeColumn{kind: "other"}}}
	results := []*result{{p1: 2, p1Outage: 4}, {p1: 200, p1Outage: 400}, {p1: 30, p1Outage: 90}}
	rep := newReport(smallConfig(), cols, results, []bool{true, true, true})
	figs := rep.jsonFigures()
	assert.Equal(t, "baseline", figs["P1"]["best_peer"], "the lower P1 of ccmkit over the other cloud is no peer's")
	assert.InDelta(t, 0.01, figs["P1"]["ccmkit_per_best_peer"], 1e-9)
	assert.Equal(t, 0.5, figs["P1"]["other_budget_share"])
	assert.Equal(t, 1.5, figs["P1_outage"]["other_budget_share"])
	var out bytes.Buffer
	rep.printTable(&out)
	assert.Contains(t, out.String(), "other budget: P1 30.0 requests a minute, 50% of 60 a minute (sixty a minute); P1_outage 90.0, 150%")
	assert.NotContains(t, out.String(), "Where a peer wins:\n  P1:", "ccmkit over another cloud wins nothing from ccmkit")
}

// TestMedian checks the median of node_add's and node_delete's repetitions.
func TestMedian(t *testing.T) {
	assert.InDelta(t, 0.2, median([]float64{0.3, 0.1, 0.2}), 1e-12)
	assert.InDelta(t, 0.25, median([]float64{0.4, 0.1, 0.2, 0.3}), 1e-12)
	assert.InDelta(t, 0.7, median([]float64{0.7}), 1e-12)
}
