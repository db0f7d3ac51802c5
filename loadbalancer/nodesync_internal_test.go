package loadbalancer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestNodeSyncReadBeganAfterTheChange: the base of a node sync's write is a list of the
// cluster's load balancers that began after the node set arrived (the tick), never one
// that began before, even one that ended after it; and only while the Service's entry is
// that list's: after a write or a failed call about the Service, not until a list that
// began after it.
func TestNodeSyncReadBeganAfterTheChange(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &heldList{
		lbs:     []cloudapi.LoadBalancer{testLB("lb-1", "a", "i-1"), testLB("lb-2", "b", "i-1")},
		started: make(chan struct{}, 10),
		release: make(chan struct{}),
	}
	s := newSnapshot(h, "c1", time.Minute, 0, clk)

	listed := make(chan error)
	go func() { listed <- s.refresh(t.Context()) }()
	<-h.started
	since := s.tick() // the node set arrives while the list runs
	close(h.release)
	require.NoError(t, <-listed)
	lbs, ok := s.lookup(t.Context(), "a")
	require.True(t, ok, "the list that began before the change still answers what needs no write")
	assert.Equal(t, []string{"i-1"}, lbs[0].Spec.Targets)

	h.lbs = []cloudapi.LoadBalancer{testLB("lb-1", "a", "i-1", "i-9"), testLB("lb-2", "b", "i-1")} // changed behind ccmkit's back
	lb, ok := s.listedSince(t.Context(), "a", since)
	require.True(t, ok)
	assert.Equal(t, []string{"i-1", "i-9"}, lb.Spec.Targets, "the base is a list begun after the change")
	assert.EqualValues(t, 2, h.calls.Load())
	_, ok = s.listedSince(t.Context(), "b", since)
	assert.True(t, ok)
	assert.EqualValues(t, 2, h.calls.Load(), "every Service of the node sync shares that list")

	written := testLB("lb-1", "a", "i-1", "i-2")
	s.record("a", &written) // a write's answer is no read begun after the write
	_, ok = s.listedSince(t.Context(), "a", since)
	assert.False(t, ok, "after a write, not that list")
	s.forget("b")
	_, ok = s.listedSince(t.Context(), "b", since)
	assert.False(t, ok, "after a failed call, not that list")
	assert.EqualValues(t, 2, h.calls.Load())

	later := s.tick() // the next node set
	lb, ok = s.listedSince(t.Context(), "a", later)
	require.True(t, ok, "a list begun after the write is a fresh read again")
	assert.Equal(t, []string{"i-1", "i-9"}, lb.Spec.Targets)
	_, ok = s.listedSince(t.Context(), "b", later)
	assert.True(t, ok, "and after the failed call")
	assert.EqualValues(t, 3, h.calls.Load())

	clk.Step(time.Minute + time.Second)
	_, ok = s.listedSince(t.Context(), "a", later)
	assert.True(t, ok)
	assert.EqualValues(t, 4, h.calls.Load(), "a list older than maxAge is listed again")

	h.lbs = append(h.lbs, testLB("lb-3", "a", "i-1"))
	_, ok = s.listedSince(t.Context(), "a", s.tick())
	assert.False(t, ok, "duplicates are read by owner tags")
	_, ok = s.listedSince(t.Context(), "c", s.tick())
	assert.False(t, ok, "absent from the list is confirmed by owner tags")
}

// TestConcurrentNodeSyncsShareOneList: the service controller's workers update the
// Services of one node sync at once; they share one list.
func TestConcurrentNodeSyncsShareOneList(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &heldList{
		lbs:     []cloudapi.LoadBalancer{testLB("lb-1", "a", "i-1"), testLB("lb-2", "b", "i-1")},
		started: make(chan struct{}, 10),
		release: make(chan struct{}),
	}
	s := newSnapshot(h, "c1", time.Minute, 0, clk)
	var c nodeSetClock
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-1"}}}

	const workers = 8
	var wg sync.WaitGroup
	oks := make([]bool, workers)
	for i := range workers {
		wg.Go(func() {
			since, tracked, _, _ := c.observe(t.Context(), nodes, s.tick)
			if tracked {
				_, oks[i] = s.listedSince(t.Context(), []string{"a", "b"}[i%2], since)
			}
		})
	}
	<-h.started
	close(h.release)
	wg.Wait()
	assert.Equal(t, []bool{true, true, true, true, true, true, true, true}, oks)
	// A worker may observe the node set only after the list began: the list then serves it
	// too, since the node set arrived with the first worker.
	assert.EqualValues(t, 1, h.calls.Load(), "one list for every worker")
}

// TestFailedListFallsBack: while the list of the cluster's load balancers fails, a node
// sync gets no base from it (its callers read by owner tags), and the list is not retried
// before its backoff.
func TestFailedListFallsBack(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &failingList{}
	f.fail.Store(true)
	s := newSnapshot(f, "c1", time.Minute, 0, clk)
	since := s.tick()
	for range 5 {
		_, ok := s.listedSince(t.Context(), "a", since)
		assert.False(t, ok)
	}
	assert.EqualValues(t, 1, f.calls.Load(), "one list, then the backoff")
	f.fail.Store(false)
	clk.Step(2 * time.Second)
	_, ok := s.listedSince(t.Context(), "a", since)
	assert.True(t, ok)
}

// TestNodeSetClock: a node set arrives once, when it first differs from the last one.
func TestNodeSetClock(t *testing.T) {
	var c nodeSetClock
	var n uint64
	tick := func() uint64 { n++; return n }
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + name}}
	}
	a, b, x := node("a"), node("b"), node("x")
	since, ok, _, ab := c.observe(t.Context(), []*corev1.Node{a, b}, tick)
	require.True(t, ok)
	assert.EqualValues(t, 1, since)
	assert.NotZero(t, ab)
	since, _, _, id := c.observe(t.Context(), []*corev1.Node{b, a}, tick)
	assert.EqualValues(t, 1, since, "the same node set in another order")
	assert.Equal(t, ab, id, "the same node set, the same name")
	since, _, _, abx := c.observe(t.Context(), []*corev1.Node{a, b, x}, tick)
	assert.EqualValues(t, 2, since, "a node added")
	assert.NotContains(t, []nodeSetID{0, ab}, abx)
	since, _, _, id = c.observe(t.Context(), []*corev1.Node{a, b}, tick)
	assert.EqualValues(t, 3, since, "back to the old node set is a change too")
	assert.NotContains(t, []nodeSetID{0, ab, abx}, id, "a name is never given again")
	_, ok, _, id = c.observe(t.Context(), []*corev1.Node{a, a}, tick)
	assert.False(t, ok, "a Node given twice: the arrival cannot be told")
	assert.Zero(t, id, "nor its name")
	since, _, _, ab = c.observe(t.Context(), []*corev1.Node{a, b}, tick)
	assert.EqualValues(t, 4, since)
	b.Spec.ProviderID = "ccmkit://moved"
	since, _, _, id = c.observe(t.Context(), []*corev1.Node{a, b}, tick)
	assert.EqualValues(t, 5, since, "a provider ID changed in place")
	assert.NotContains(t, []nodeSetID{0, ab}, id, "a provider ID changed in place: another name")
	since, _, _, _ = c.observe(t.Context(), nil, tick)
	assert.EqualValues(t, 6, since)
	since, _, _, _ = c.observe(t.Context(), nil, tick)
	assert.EqualValues(t, 6, since, "no nodes twice")
}

// TestNodeSetClockNamesNoReplacedNodeSet: a call that looks for a stand-in while another
// call's node set replaces its own gets no name for its Nodes (its targets are then
// checked, never taken as the other set's).
func TestNodeSetClockNamesNoReplacedNodeSet(t *testing.T) {
	var n uint64
	tick := func() uint64 { n++; return n }
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: id}}
	}
	for _, tc := range []struct {
		name  string
		other func(a, b *corev1.Node) []*corev1.Node
	}{
		{"another node set", func(a, b *corev1.Node) []*corev1.Node { return []*corev1.Node{a, b} }},
		{"a Node given twice", func(a, _ *corev1.Node) []*corev1.Node { return []*corev1.Node{a, a} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, fresh := node("a", "ccmkit://i-a"), node("b", "ccmkit://i-b"), node("new", "")
			entered, release := make(chan struct{}), make(chan struct{})
			c := nodeSetClock{known: func(_ context.Context, name string) (string, bool) {
				if name == "new" {
					close(entered)
					<-release
					return "ccmkit://i-new", true
				}
				return "", false
			}}
			type result struct {
				ok  bool
				out []*corev1.Node
				id  nodeSetID
			}
			got := make(chan result, 1)
			go func() {
				_, ok, out, id := c.observe(t.Context(), []*corev1.Node{a, fresh}, tick)
				got <- result{ok, out, id}
			}()
			<-entered // the first call checked its node set and looks for the stand-in
			_, _, _, other := c.observe(t.Context(), tc.other(a, b), tick)
			close(release)
			r := <-got
			require.True(t, r.ok)
			assert.Zero(t, r.id, "its node set was replaced: no name, never the other set's (%d)", other)
			assert.Equal(t, []*corev1.Node{a, fresh}, r.out, "the other set has no stand-in for its Node")
		})
	}
}

// TestNodeSetClockStandsInForANodeBeingInitialized: a Node without a provider ID whose
// provider ID known finds is handed on as one stand-in with that provider ID, and the
// node set in which the Node has that provider ID (the cloud node controller's update)
// is the same arrival; without known, or with another provider ID, it is a new one.
func TestNodeSetClockStandsInForANodeBeingInitialized(t *testing.T) {
	var n uint64
	tick := func() uint64 { n++; return n }
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-a"}}
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{"k": "v"}}}
	initialized := fresh.DeepCopy()
	initialized.Spec.ProviderID = "ccmkit://i-new"

	found := false
	asked := 0
	c := nodeSetClock{known: func(_ context.Context, name string) (string, bool) {
		asked++
		if name != "new" || !found {
			return "", false
		}
		return "ccmkit://i-new", true
	}}
	since, ok, out, unknown := c.observe(t.Context(), []*corev1.Node{a, fresh}, tick)
	require.True(t, ok)
	assert.EqualValues(t, 1, since)
	assert.Same(t, fresh, out[1], "not known yet: the Node as it is")

	found = true // the node controller's instance list is in
	since, _, out, id := c.observe(t.Context(), []*corev1.Node{fresh, a}, tick)
	assert.EqualValues(t, 1, since, "the same node set")
	assert.NotContains(t, []nodeSetID{0, unknown}, id, "with a stand-in, the Nodes handed on are others: another name")
	require.NotSame(t, fresh, out[0])
	standIn := out[0]
	assert.Equal(t, "ccmkit://i-new", standIn.Spec.ProviderID)
	assert.Equal(t, fresh.Labels, standIn.Labels)
	assert.Empty(t, fresh.Spec.ProviderID, "the Node given is not changed")
	assert.Same(t, a, out[1])

	_, _, out, again := c.observe(t.Context(), []*corev1.Node{a, fresh}, tick)
	assert.Same(t, standIn, out[1], "one stand-in while the node set holds the Node")
	assert.Equal(t, id, again, "the same stand-in, the same name")
	assert.Equal(t, 2, asked, "found once, not asked again")

	since, _, out, again = c.observe(t.Context(), []*corev1.Node{a, initialized}, tick)
	assert.EqualValues(t, 1, since, "initialized with the provider ID found: the same arrival")
	assert.Same(t, initialized, out[1])
	assert.NotContains(t, []nodeSetID{0, unknown, id}, again, "other Node objects: another name")
	since, _, _, _ = c.observe(t.Context(), []*corev1.Node{a, initialized}, tick)
	assert.EqualValues(t, 1, since)

	// Another provider ID than the one found is a new node set.
	c.observe(t.Context(), []*corev1.Node{a, fresh}, tick)
	other := fresh.DeepCopy()
	other.Spec.ProviderID = "ccmkit://i-other"
	since, _, _, _ = c.observe(t.Context(), []*corev1.Node{a, other}, tick)
	assert.EqualValues(t, 3, since)

	// Without known, the Node is skipped until it has a provider ID: a new arrival then.
	var plain nodeSetClock
	n = 0
	_, _, out, _ = plain.observe(t.Context(), []*corev1.Node{a, fresh}, tick)
	assert.Same(t, fresh, out[1])
	since, _, _, _ = plain.observe(t.Context(), []*corev1.Node{a, initialized}, tick)
	assert.EqualValues(t, 2, since)
}
