package loadbalancer

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

func testLB(id, uid string, targets ...string) cloudapi.LoadBalancer {
	return cloudapi.LoadBalancer{
		ID:        id,
		Spec:      cloudapi.LoadBalancerSpec{Name: id, Targets: targets, Tags: map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: uid}},
		Addresses: []string{"203.0.113.1"},
		Status:    cloudapi.LoadBalancerActive,
	}
}

// heldList answers ListLoadBalancers with one page of lbs, once release is closed, and
// reports each call on started. Its other methods are not called.
type heldList struct {
	cloudapi.LoadBalancerAPI
	lbs     []cloudapi.LoadBalancer
	started chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func (h *heldList) ListLoadBalancers(context.Context, cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	h.calls.Add(1)
	h.started <- struct{}{}
	<-h.release
	page := &cloudapi.LoadBalancerPage{}
	for _, lb := range h.lbs {
		page.Items = append(page.Items, lb.Clone())
	}
	return page, nil
}

// TestListKeepsWhatChangedWhileItRan: a Service's entry recorded or forgotten while a list
// was under way is newer than what the list saw, and the list must not put the older
// view back; a list that begins later replaces it.
func TestListKeepsWhatChangedWhileItRan(t *testing.T) {
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
	updated := testLB("lb-1", "a", "i-1", "i-2")
	s.record("a", &updated) // the answer of a write made while the list ran
	s.forget("b")           // a call about b failed while the list ran

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok := s.lookup(canceled, "a")
	assert.False(t, ok, "a caller that gives up waiting for the list does not know")

	close(h.release)
	require.NoError(t, <-listed)
	assert.EqualValues(t, 1, h.calls.Load(), "the waiter shared the list")
	lbs, ok := s.lookup(t.Context(), "a")
	require.True(t, ok)
	require.Len(t, lbs, 1)
	assert.Equal(t, []string{"i-1", "i-2"}, lbs[0].Spec.Targets, "the write's answer is newer than the list")
	_, ok = s.lookup(t.Context(), "b")
	assert.False(t, ok, "the failed call is newer than the list")
	lbs, ok = s.lookup(t.Context(), "c")
	assert.True(t, ok)
	assert.Empty(t, lbs, "absent from the list")

	clk.Step(2 * time.Minute)
	lbs, ok = s.lookup(t.Context(), "a")
	require.True(t, ok)
	require.Len(t, lbs, 1)
	assert.Equal(t, []string{"i-1"}, lbs[0].Spec.Targets, "a later list replaces the entry")
	_, ok = s.lookup(t.Context(), "b")
	assert.True(t, ok, "and knows b again")
	assert.EqualValues(t, 2, h.calls.Load())
}

// TestTargetSetsAreStoredOnce: equal target sets, in any order and with duplicates, share
// one stored copy, which is sorted and not the caller's slice.
func TestTargetSetsAreStoredOnce(t *testing.T) {
	sets := newTargetSets()
	a := []string{"i-1", "i-2", "i-3"}
	b := []string{"i-3", "i-1", "i-2", "i-1"}
	sa, sb := sets.intern(a), sets.intern(b)
	assert.Equal(t, a, sa)
	assert.Same(t, &sa[0], &sb[0], "one copy for both")
	assert.NotSame(t, &a[0], &sa[0], "not the caller's slice")
	sc := sets.intern([]string{"i-1", "i-2"})
	assert.Equal(t, []string{"i-1", "i-2"}, sc)
	assert.Nil(t, sets.intern(nil))

	lb := testLB("lb-1", "a", "i-2", "i-1", "i-3")
	c := sets.compact(&lb)
	assert.Same(t, &sa[0], &c.Spec.Targets[0])
	assert.Equal(t, []string{"i-2", "i-1", "i-3"}, lb.Spec.Targets, "the original is untouched")
}

// generatedList answers ListLoadBalancers with n load balancers of cluster c1 that all
// target the same instances, building every page in fresh memory, as an adapter that
// decodes the cloud's answer does: the target lists always, their strings too when
// freshStrings is set. Its other methods are not called.
type generatedList struct {
	cloudapi.LoadBalancerAPI
	n            int
	targets      []string
	freshStrings bool
}

func newGeneratedList(n, targets int, freshStrings bool) *generatedList {
	g := &generatedList{n: n, freshStrings: freshStrings}
	for i := range targets {
		g.targets = append(g.targets, fmt.Sprintf("i-%08d", i))
	}
	return g
}

func (g *generatedList) ListLoadBalancers(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	start := 0
	if opts.PageToken != "" {
		var err error
		if start, err = strconv.Atoi(opts.PageToken); err != nil {
			return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpListLoadBalancers, "", err)
		}
	}
	end := min(start+opts.PageSize, g.n)
	page := &cloudapi.LoadBalancerPage{}
	for i := start; i < end; i++ {
		targets := slices.Clone(g.targets)
		if g.freshStrings {
			for j, id := range targets {
				targets[j] = strings.Clone(id)
			}
		}
		id := fmt.Sprintf("lb-%06d", i)
		page.Items = append(page.Items, cloudapi.LoadBalancer{
			ID: id,
			Spec: cloudapi.LoadBalancerSpec{
				Name: "c1-a" + id,
				Listeners: []cloudapi.Listener{
					{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
					{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443},
				},
				Targets:     targets,
				HealthCheck: &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: KubeProxyHealthzPort, Path: "/healthz", Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3},
				Tags: map[string]string{
					cloudapi.TagCluster:     "c1",
					cloudapi.TagService:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
					cloudapi.TagServiceName: fmt.Sprintf("default/svc-%06d", i),
				},
			},
			Addresses: []string{fmt.Sprintf("100.64.%d.%d", i/256, i%256)},
			Status:    cloudapi.LoadBalancerActive,
		})
	}
	if end < g.n {
		page.NextPageToken = strconv.Itoa(end)
	}
	return page, nil
}

// retainedHeap returns the bytes of heap that a snapshot of g keeps after a refresh: live
// heap after a garbage collection, with the snapshot filled, less the same before.
func retainedHeap(t testing.TB, g *generatedList) uint64 {
	s := newSnapshot(g, "c1", time.Minute, 500, clock.RealClock{})
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	require.NoError(t, s.refresh(context.Background()))
	runtime.GC()
	runtime.ReadMemStats(&m)
	after := m.HeapAlloc
	lbs, ok := s.lookup(context.Background(), "00000000-0000-4000-8000-000000000000")
	require.True(t, ok)
	require.Len(t, lbs, 1)
	runtime.KeepAlive(s)
	if after < before {
		return 0
	}
	return after - before
}

// TestSnapshotRetainedHeap: the snapshot of 1,000 load balancers that each target the
// same 5,000 instances stays small, because the target set is stored once; as separate
// lists the targets alone would take 1,000 × 5,000 × 16 bytes, 80 MB. (The instance IDs'
// bytes are shared here, to keep the test quick; the benchmark counts them too.)
func TestSnapshotRetainedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 5 million target IDs")
	}
	const limit = 8 << 20 // generous: about 1 MiB measured
	retained := retainedHeap(t, newGeneratedList(1000, 5000, false))
	t.Logf("snapshot of 1,000 load balancers × 5,000 targets retains %.2f MiB", float64(retained)/(1<<20))
	assert.Less(t, retained, uint64(limit))
}

// BenchmarkSnapshotRetainedHeap1000x5000 reports the heap the snapshot of 1,000 load
// balancers that each target the same 5,000 instances retains (MiB-retained). Its ns/op
// includes building the pages, as an adapter would decode them.
func BenchmarkSnapshotRetainedHeap1000x5000(b *testing.B) {
	g := newGeneratedList(1000, 5000, true)
	var retained uint64
	for b.Loop() {
		retained = retainedHeap(b, g)
	}
	b.ReportMetric(float64(retained)/(1<<20), "MiB-retained")
}

// failingList fails every ListLoadBalancers while fail is set, and counts the calls.
type failingList struct {
	cloudapi.LoadBalancerAPI
	fail  atomic.Bool
	calls atomic.Int32
}

func (f *failingList) ListLoadBalancers(context.Context, cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListLoadBalancers, "", nil)
	}
	lb := testLB("lb-1", "a", "i-1")
	return &cloudapi.LoadBalancerPage{Items: []cloudapi.LoadBalancer{lb}}, nil
}

// TestFailedListBacksOff: while the cluster list fails, lookups answer "do not know"
// without listing again on every call; the list is retried after a backoff that doubles
// from sharedlist.MinBackoff to sharedlist.MaxBackoff, and a success resets it.
func TestFailedListBacksOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &failingList{}
	f.fail.Store(true)
	s := newSnapshot(f, "c1", time.Minute, 0, clk)

	for range 5 {
		_, ok := s.lookup(t.Context(), "a")
		assert.False(t, ok, "a failed list is never an answer")
	}
	assert.EqualValues(t, 1, f.calls.Load(), "one list, then the backoff")

	var waits []time.Duration
	for range 7 {
		before := f.calls.Load()
		waited := time.Duration(0)
		for f.calls.Load() == before {
			require.Less(t, waited, time.Minute)
			clk.Step(250 * time.Millisecond)
			waited += 250 * time.Millisecond
			_, ok := s.lookup(t.Context(), "a")
			require.False(t, ok)
		}
		waits = append(waits, waited)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}, waits)

	f.fail.Store(false)
	clk.Step(sharedlist.MaxBackoff)
	lbs, ok := s.lookup(t.Context(), "a")
	require.True(t, ok, "the list works again")
	require.Len(t, lbs, 1)
	s.mu.Lock()
	assert.Zero(t, s.lists.Backoff(), "a success resets the backoff")
	s.mu.Unlock()
}

// notFoundList answers every ListLoadBalancers with ErrNotFound, as a backend might for a
// 404 of its list endpoint.
type notFoundList struct{ cloudapi.LoadBalancerAPI }

func (notFoundList) ListLoadBalancers(context.Context, cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpListLoadBalancers, "", nil)
}

// TestListNotFoundIsNeverNoLoadBalancer: a list answered "not found" must not read as "the
// Service has no load balancer" (the class UpdateLoadBalancer returns for that), neither
// in the owner-tag lookup nor in the cluster snapshot.
func TestListNotFoundIsNeverNoLoadBalancer(t *testing.T) {
	s := newSnapshot(notFoundList{}, "c1", time.Minute, 0, clock.RealClock{})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "a"}}
	_, err := s.find(t.Context(), svc, string(svc.UID))
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.ErrorIs(t, err, cloudapi.ErrTransient)

	err = s.refresh(t.Context())
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
}

// noPageList answers every ListLoadBalancers with neither a page nor an error.
type noPageList struct{ cloudapi.LoadBalancerAPI }

func (noPageList) ListLoadBalancers(context.Context, cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return nil, nil // the hostile answer under test
}

// TestListWithoutAPageIsAnError: a list answered with neither a page nor an error fails
// (ErrTransient), in the owner-tag lookup and in the cluster snapshot, never panics and
// never reads as "no load balancer".
func TestListWithoutAPageIsAnError(t *testing.T) {
	s := newSnapshot(noPageList{}, "c1", time.Minute, 0, clock.RealClock{})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "a"}}
	_, err := s.find(t.Context(), svc, string(svc.UID))
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)

	require.ErrorIs(t, s.refresh(t.Context()), cloudapi.ErrTransient)
}
