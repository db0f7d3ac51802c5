package instancecache

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// A Node whose VM was replaced by a new one of the same name must not read as gone while
// an older snapshot holds the old, terminated instance.
func TestTerminatedNameIsConfirmedByANewerList(t *testing.T) {
	ctx := context.Background()
	c := newCloud(3)
	c.add("i-old", "worker-1", cloudapi.InstanceTerminated)
	cache, clk := newCache(c, time.Minute)
	_, err := cache.ByID(ctx, "i-00000") // the snapshot: worker-1 is only the terminated i-old
	require.NoError(t, err)

	// Inside maxAge, a terminated match is confirmed by a list begun after the lookup.
	clk.Step(time.Second)
	inst, err := cache.ByName(ctx, "worker-1")
	require.NoError(t, err)
	assert.Equal(t, cloudapi.InstanceTerminated, inst.State, "the newer list agrees: gone")
	assert.EqualValues(t, 2, c.lists.Load())

	// The VM is replaced by a new one of the same name: the newer list has it.
	clk.Step(time.Second)
	c.add("i-new", "worker-1", cloudapi.InstanceRunning)
	inst, err = cache.ByName(ctx, "worker-1")
	require.NoError(t, err)
	assert.Equal(t, "i-new", inst.ID, "not the terminated i-old of the older snapshot")
	assert.EqualValues(t, 3, c.lists.Load())
}

// Kubelets register their hostname in lower case: instance "Worker-1" is Node "worker-1".
func TestNamesCompareAsTheKubeletDerivesThem(t *testing.T) {
	ctx := context.Background()
	c := newCloud(0)
	c.add("i-1", "Worker-1", cloudapi.InstanceRunning)
	c.add("i-2", " Edge-Node ", cloudapi.InstanceRunning)
	c.add("i-3", "Twin", cloudapi.InstanceRunning)
	c.add("i-4", "twin", cloudapi.InstanceRunning)
	cache, _ := newCache(c, time.Minute)

	for node, want := range map[string]string{"worker-1": "i-1", "Worker-1": "i-1", "edge-node": "i-2"} {
		inst, err := cache.ByName(ctx, node)
		if assert.NoError(t, err, node) {
			assert.Equal(t, want, inst.ID, node)
		}
	}
	_, err := cache.ByName(ctx, "twin")
	require.Error(t, err, "two instances whose names are the same Node name: the Node could be either")
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
}

// tokenCycle answers page tokens in a cycle a→b→a, without end.
type tokenCycle struct {
	*cloud
	mu    sync.Mutex
	pages int
}

func (t *tokenCycle) ListInstances(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pages++
	next := map[string]string{"": "a", "a": "b", "b": "a"}[opts.PageToken]
	return &cloudapi.InstancePage{Items: []cloudapi.Instance{{ID: "i-" + opts.PageToken, Name: "n", State: cloudapi.InstanceRunning}}, NextPageToken: next}, nil
}

// A cloud whose page tokens cycle makes the list fail with a clear error, after three
// pages, instead of spinning; lookups by name fail, never "gone".
func TestPageTokenCycleEndsTheList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a guard against the old endless loop, not a measure
	defer cancel()
	c := &tokenCycle{cloud: newCloud(0)}
	cache := New(c, Options{MaxAge: time.Minute})
	_, err := cache.ByName(ctx, "n")
	require.ErrorIs(t, err, paging.ErrBadPaging)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), `"a"`)
	c.mu.Lock()
	assert.Equal(t, 3, c.pages)
	c.mu.Unlock()
}

// The lookup that starts a GetInstance stops waiting at its own deadline, as the others
// that join it do.
func TestStarterOfAGetStopsWaitingWhenCanceled(t *testing.T) {
	c := newCloud(3)
	cache, _ := newCache(c, time.Hour)
	_, err := cache.ByID(context.Background(), "i-00000") // the snapshot
	require.NoError(t, err)
	c.add("i-late", "late", cloudapi.InstanceRunning)
	c.gate = make(chan struct{}) // every call now waits for the gate

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := cache.ByID(ctx, "i-late"); done <- err }()
	require.Eventually(t, func() bool { return c.gets.Load() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err = <-done // returns while the GetInstance is still held at the gate
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)

	// The call goes on for whoever waits next, and is shared.
	second := make(chan error, 1)
	go func() { _, err := cache.ByID(context.Background(), "i-late"); second <- err }()
	c.openGate()
	require.NoError(t, <-second)
	assert.EqualValues(t, 1, c.gets.Load())
}

// A cloud that answers GetInstance with another instance than the one asked for is an
// error, never that instance.
func TestGetAnsweringAnotherInstanceIsAnError(t *testing.T) {
	c := &wrongGet{cloud: newCloud(3)}
	cache, _ := newCache(c.cloud, time.Hour)
	cache.api = c
	_, err := cache.ByID(context.Background(), "i-00000")
	require.NoError(t, err)
	_, err = cache.ByID(context.Background(), "i-other")
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), `answered instance "i-00001"`)
}

type wrongGet struct{ *cloud }

func (w *wrongGet) GetInstance(ctx context.Context, _ string) (*cloudapi.Instance, error) {
	return w.cloud.GetInstance(ctx, "i-00001")
}

// shrinking is a cloud whose list can be cut to its first keep instances, as a cloud
// answering a truncated list in an incident does, while GetInstance tells the truth.
type shrinking struct {
	*cloud
	mu   sync.Mutex
	keep int // -1: the whole list
}

func (s *shrinking) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	page, err := s.cloud.ListInstances(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keep >= 0 {
		page.Items, page.NextPageToken = page.Items[:min(s.keep, len(page.Items))], ""
	}
	return page, nil
}

func (s *shrinking) cut(keep int) { s.mu.Lock(); s.keep = keep; s.mu.Unlock() }

type checks struct {
	mu  sync.Mutex
	got map[string]int
}

func (c *checks) observe(reason CheckReason, result CheckResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got[string(reason)+"/"+string(result)]++
}

func (c *checks) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.got {
		out[k] = v
	}
	return out
}

func newShrinking(t *testing.T, n int) (*shrinking, *Cache, *clocktesting.FakeClock, *checks) {
	t.Helper()
	s := &shrinking{cloud: newCloud(n), keep: -1}
	seen := &checks{got: map[string]int{}}
	clk := clocktesting.NewFakeClock(t0)
	cache := New(s, Options{MaxAge: time.Minute, PageSize: 500, Clock: clk, OnCheck: seen.observe})
	_, err := cache.ByID(context.Background(), "i-00000")
	require.NoError(t, err)
	return s, cache, clk, seen
}

// A list that suddenly lacks most instances is confirmed instance by instance before any
// of them reads as gone, also over several truncated lists in a row.
func TestShrunkenListIsConfirmedInstanceByInstance(t *testing.T) {
	ctx := context.Background()
	s, cache, clk, seen := newShrinking(t, 20)
	s.remove("i-00019") // really gone
	s.cut(2)            // the list now answers i-00000 and i-00001 only

	for round := range 2 { // two lists in a row, both truncated
		clk.Step(2 * time.Minute)
		gets := s.gets.Load()
		inst, err := cache.ByName(ctx, "node-00007")
		require.NoError(t, err, "round %d: a Node whose instance runs is not gone because the list lost it", round)
		assert.Equal(t, "i-00007", inst.ID)
		assert.Equal(t, gets+1, s.gets.Load(), "one GetInstance decides")
		inst, err = cache.ByID(ctx, "i-00008")
		require.NoError(t, err)
		assert.Equal(t, "i-00008", inst.ID)
	}
	_, err := cache.ByName(ctx, "node-00019")
	require.ErrorIs(t, err, cloudapi.ErrNotFound, "GetInstance confirms the one really gone")
	assert.Equal(t, map[string]int{"list_shrank/exists": 4, "list_shrank/gone": 1}, seen.counts(),
		"node-00007 and i-00008 checked once for each list that lost them, node-00019 once")

	s.cut(-1) // the cloud recovers: every lost instance is live again, nothing left to check
	clk.Step(2 * time.Minute)
	_, err = cache.ByID(ctx, "i-00000")
	require.NoError(t, err)
	assert.Empty(t, cache.vanished)
}

// A list that answers most instances terminated is as suspect as one that lacks them.
func TestListAnsweringMostTerminatedIsConfirmed(t *testing.T) {
	ctx := context.Background()
	s, cache, clk, seen := newShrinking(t, 10)
	for i := range 5 {
		s.add("i-0000"+strconv.Itoa(i), "node-0000"+strconv.Itoa(i), cloudapi.InstanceTerminated)
	}
	lying := &terminatedLists{shrinking: s, truth: newCloud(10)}
	cache.api = lying
	clk.Step(2 * time.Minute)
	inst, err := cache.ByID(ctx, "i-00003")
	require.NoError(t, err)
	assert.Equal(t, cloudapi.InstanceRunning, inst.State, "GetInstance says it runs")
	assert.Equal(t, map[string]int{"list_shrank/exists": 1}, seen.counts())
}

// terminatedLists lists what shrinking lists, but GetInstance answers from truth.
type terminatedLists struct {
	*shrinking
	truth *cloud
}

func (t *terminatedLists) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return t.truth.GetInstance(ctx, id)
}

// A scale-down below SuspectShare is no incident: gone at once, no check.
func TestOrdinaryScaleDownIsNotChecked(t *testing.T) {
	ctx := context.Background()
	s, cache, clk, seen := newShrinking(t, 20)
	s.remove("i-00005") // 1 of 20: 5 %
	clk.Step(2 * time.Minute)
	_, err := cache.ByName(ctx, "node-00005")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Empty(t, seen.counts())
	assert.EqualValues(t, 0, s.gets.Load())
}

// scripted answers the list's page i with the token script[i] (0: the last page) and
// one instance, and answers without end (a new token each page) past the script when its
// last byte is odd.
type scripted struct {
	*cloud
	script []byte
	mu     sync.Mutex
	calls  int
}

func (s *scripted) ListInstances(_ context.Context, _ cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls
	s.calls++
	page := &cloudapi.InstancePage{Items: []cloudapi.Instance{{ID: "i-" + strconv.Itoa(i), Name: "node-" + strconv.Itoa(i), State: cloudapi.InstanceRunning}}}
	switch {
	case i < len(s.script) && s.script[i] != 0:
		page.NextPageToken = "t" + strconv.Itoa(int(s.script[i]))
	case i >= len(s.script) && len(s.script) > 0 && s.script[len(s.script)-1]%2 == 1:
		page.NextPageToken = "n" + strconv.Itoa(i)
	}
	return page, nil
}

// FuzzListPageTokens drives the instance snapshot's list with arbitrary page token
// sequences: every lookup ends, with an instance, an error, or "not found" only after a
// list that ended well, within paging.MaxPages pages.
func FuzzListPageTokens(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{1, 2, 0}, uint8(1))
	f.Add([]byte{1, 2, 1}, uint8(2))
	f.Add([]byte{5, 5}, uint8(0))
	f.Add([]byte{3}, uint8(9))
	f.Fuzz(func(t *testing.T, script []byte, want uint8) {
		s := &scripted{cloud: newCloud(0), script: script}
		cache := New(s, Options{MaxAge: time.Minute})
		inst, err := cache.ByName(context.Background(), "node-"+strconv.Itoa(int(want)))
		s.mu.Lock()
		calls := s.calls
		s.mu.Unlock()
		require.LessOrEqual(t, calls, paging.MaxPages)
		switch {
		case err == nil:
			assert.Equal(t, "i-"+strconv.Itoa(int(want)), inst.ID)
		case cloudapi.IsNotFound(err):
			// Only after a list that ended well, and so saw every page.
			assert.GreaterOrEqual(t, int(want), calls, "not found only for a name on no page listed")
		default:
			require.ErrorIs(t, err, paging.ErrBadPaging)
		}
	})
}

// An instance that a check found running stays to be checked when the next list loses
// it again, even when that list loses too few instances to be suspect on its own.
func TestCheckedInstanceLostAgainIsCheckedAgain(t *testing.T) {
	ctx := context.Background()
	s, cache, clk, seen := newShrinking(t, 20)
	s.cut(15) // 5 of 20 lost: suspect
	clk.Step(2 * time.Minute)
	inst, err := cache.ByName(ctx, "node-00017")
	require.NoError(t, err)
	assert.Equal(t, "i-00017", inst.ID)

	clk.Step(2 * time.Minute) // the next list loses only i-00017 again: 1 of 16
	inst, err = cache.ByName(ctx, "node-00017")
	require.NoError(t, err, "a running instance never reads as gone because a list keeps leaving it out")
	assert.Equal(t, "i-00017", inst.ID)
	assert.Equal(t, map[string]int{"list_shrank/exists": 2}, seen.counts())
}

// noPage answers ListInstances with neither a page nor an error.
type noPage struct{ *cloud }

func (noPage) ListInstances(context.Context, cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return nil, nil // the hostile answer under test
}

// A cloud that answers a list with neither a page nor an error makes the lookup fail,
// never panic and never read as "no instances".
func TestListWithoutAPageIsAnErrorNotEmpty(t *testing.T) {
	cache := New(noPage{cloud: newCloud(0)}, Options{MaxAge: time.Minute})
	_, err := cache.ByName(context.Background(), "node-1")
	require.Error(t, err)
	assert.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), "neither a page nor an error")
}

// A lookup by name that meets another lookup's check of the same instance still finds
// it: lookupName reads the snapshot and the instances to check as one, so a check that
// moves the instance from the ones to check into the snapshot meanwhile (here: a ByID
// of it, run at the moment lookupName has read the snapshot) never leaves it out of both,
// which would read a running instance as gone.
func TestByNameMeetingACheckOfTheSameInstance(t *testing.T) {
	ctx := context.Background()
	s, cache, clk, seen := newShrinking(t, 20)
	s.cut(15) // 5 of 20 lost: each is checked before it reads as gone
	clk.Step(2 * time.Minute)
	_, err := cache.ByID(ctx, "i-00000") // the list that loses them
	require.NoError(t, err)
	require.Contains(t, cache.vanished, "i-00017")

	checked := false
	cache.afterNameRead = func() {
		if checked {
			return
		}
		checked = true
		inst, err := cache.ByID(ctx, "i-00017") // another lookup's check: it runs
		require.NoError(t, err)
		require.Equal(t, "i-00017", inst.ID)
	}
	inst, err := cache.ByName(ctx, "node-00017")
	require.True(t, checked, "the other lookup ran between the reads")
	require.NoError(t, err, "a running instance never reads as gone because another lookup checked it meanwhile")
	assert.Equal(t, "i-00017", inst.ID)
	assert.Equal(t, map[string]int{"list_shrank/exists": 2}, seen.counts(), "each lookup checked it once")
}
