package soak

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

var (
	flagOps    = flag.Int("soak.ops", 0, "operations of one run; 0 without -soak.seed runs the default soak (a few seeds, sized for CI)")
	flagSeed   = flag.Int64("soak.seed", 0, "seed of one run; 0 with -soak.ops picks one from the clock and logs it")
	flagFaults = flag.Float64("soak.faults", 0.2, "share of cloud calls that fail while faults are on")
	flagOnly   = flag.String("soak.only", "", "replay only these operations of the history, by index (\"3,17,42\"), as a failure prints them")
	flagShrink = flag.Duration("soak.shrink", 2*time.Minute, "wall-time budget for shrinking a failing history; 0 does not shrink")
	flagLog    = flag.Bool("soak.log", false, "log every operation of the history")
)

// defaultRuns is the soak of `go test ./...`: seeds that also vary the cloud's knobs (see
// paramsFor), sized to take seconds under -race.
var defaultRuns = []struct {
	seed int64
	ops  int
}{
	{seed: 1, ops: 3000},
	{seed: 2, ops: 3000},
	{seed: 3, ops: 3000},
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSoak(t *testing.T) {
	if *flagOps > 0 || *flagSeed != 0 {
		seed, n := *flagSeed, *flagOps
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		if n <= 0 {
			n = defaultRuns[0].ops
		}
		soak(t, seed, n)
		return
	}
	for _, r := range defaultRuns {
		t.Run(fmt.Sprintf("seed=%d", r.seed), func(t *testing.T) { soak(t, r.seed, r.ops) })
	}
}

// soak runs the history of seed with n operations (or the part -soak.only names), and on
// a violation shrinks the history and reports the seed and the smallest failing history.
func soak(t *testing.T, seed int64, n int) {
	p := paramsFor(seed, *flagFaults)
	ops := generate(seed, n)
	replay := *flagOnly != ""
	if replay {
		var err error
		ops, err = only(ops, *flagOnly)
		require.NoError(t, err)
	}
	if *flagLog {
		for _, o := range ops {
			t.Log(o)
		}
	}
	start := time.Now()
	res, err := run(p, ops)
	require.NoError(t, err, "%s", p)
	t.Logf("%s: %d operations (%d skipped), %s virtual, %s wall; %s; %d load balancer writes, %d Nodes deleted by the lifecycle controller",
		p, res.executed, res.skipped, res.virtual.Round(time.Second), time.Since(start).Round(time.Millisecond),
		faultSummary(res.injected), res.lbWrites, res.nodeDeletions)

	if len(res.violations) > 0 {
		t.Errorf("%s: %d violations:\n%s", p, len(res.violations), listViolations(res.violations))
		reportShrunk(t, p, n, ops, res.violations)
		return
	}
	if replay {
		return
	}
	// The run must have done what a soak is for, or its silence proves nothing.
	assert.NotZero(t, res.lbWrites, "no load balancer was ever written")
	if p.faultRate > 0 {
		assert.NotZero(t, sumFaults(res.injected), "no fault was injected")
	}
}

// reportShrunk shrinks a failing history to one that fails a check of the same name and
// reports it with the command that replays it.
func reportShrunk(t *testing.T, p params, n int, ops []op, violations []violation) {
	t.Helper()
	if *flagShrink <= 0 {
		t.Logf("reproduce: go test ./internal/soak -run 'TestSoak$' %s", replayFlags(p, n, ops))
		return
	}
	want := checks(violations)
	deadline := time.Now().Add(*flagShrink)
	fails := func(sub []op) bool {
		if time.Now().After(deadline) {
			return false
		}
		res, err := run(p, sub)
		return err == nil && slices.ContainsFunc(checks(res.violations), func(c string) bool { return slices.Contains(want, c) })
	}
	small, runs := shrink(ops, fails, 1<<20)
	res, err := run(p, small)
	require.NoError(t, err)
	lines := make([]string, len(small))
	for i, o := range small {
		lines[i] = "  " + o.String()
	}
	t.Errorf("shrunk in %d runs to %d of %d operations, which fail with:\n%s\nhistory:\n%s\nreproduce: go test ./internal/soak -run 'TestSoak$' %s",
		runs, len(small), len(ops), listViolations(res.violations), strings.Join(lines, "\n"), replayFlags(p, n, small))
}

func replayFlags(p params, n int, ops []op) string {
	return fmt.Sprintf("-soak.seed=%d -soak.ops=%d -soak.faults=%g -soak.only=%s", p.seed, n, p.faultRate, indices(ops))
}

func listViolations(vs []violation) string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = "  " + v.String()
	}
	return strings.Join(lines, "\n")
}

func sumFaults(c faultinject.OpCounts) int {
	n := 0
	for _, v := range c.Faults {
		n += v
	}
	return n
}

func faultSummary(c faultinject.OpCounts) string {
	parts := []string{}
	for _, k := range slices.Sorted(maps.Keys(c.Faults)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.Faults[k]))
	}
	return fmt.Sprintf("%d cloud calls while faults were on, %d faults (%.1f%%: %s)",
		c.Calls, sumFaults(c), 100*float64(sumFaults(c))/float64(max(c.Calls, 1)), strings.Join(parts, ", "))
}

// TestSoakIsDeterministic runs one history twice: the same seed must make the same calls,
// the same load balancer writes and the same faults, or a failure could not be replayed.
func TestSoakIsDeterministic(t *testing.T) {
	p := paramsFor(11, 0.2)
	ops := generate(11, 300)
	first, err := run(p, ops)
	require.NoError(t, err)
	second, err := run(p, ops)
	require.NoError(t, err)
	require.NotZero(t, first.lbWrites)
	assert.Equal(t, first.calls, second.calls)
	assert.Equal(t, first.injected, second.injected)
	assert.Equal(t, first.lbWrites, second.lbWrites)
	assert.Equal(t, first.violations, second.violations)
	assert.Equal(t, first.virtual, second.virtual)
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := generate(5, 200), generate(5, 200)
	require.Equal(t, a, b)
	assert.NotEqual(t, a, generate(6, 200))
	kinds := map[opKind]bool{}
	for _, o := range generate(5, 2000) {
		kinds[o.Kind] = true
	}
	assert.Len(t, kinds, len(opNames), "every kind of operation is generated")
}

func TestQueueBackoff(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	q := newQueue(serviceMinRetryDelay, serviceMaxRetryDelay)
	var waits []time.Duration
	for range 9 {
		q.addRateLimited("a", now)
		_, at, ok := q.peek()
		require.True(t, ok)
		waits = append(waits, at.Sub(now))
		delete(q.due, "a")
	}
	assert.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second,
		80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}, waits)
	q.forget("a")
	q.add("b", now.Add(time.Second))
	q.add("b", now.Add(time.Hour)) // a later add keeps the earlier due time
	q.add("c", now.Add(time.Second))
	key, at, _ := q.peek()
	assert.Equal(t, "b", key)
	assert.Equal(t, now.Add(time.Second), at)
	assert.Empty(t, q.failures)
}
