package instancecache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// cloud is a small paginated instance API that counts calls. gate, when set, holds every
// call until it is closed, so tests can pile up concurrent lookups; onPage, when set, is
// called at every page of a list (a test moves its clock there: a list that takes time).
type cloud struct {
	mu        sync.Mutex
	instances map[string]cloudapi.Instance
	pageSize  int
	lists     atomic.Int64
	gets      atomic.Int64
	failNext  error
	gate      chan struct{}
	onPage    func()
}

func newCloud(n int) *cloud {
	c := &cloud{instances: map[string]cloudapi.Instance{}, pageSize: 500}
	for i := range n {
		c.add(fmt.Sprintf("i-%05d", i), fmt.Sprintf("node-%05d", i), cloudapi.InstanceRunning)
	}
	return c
}

func (c *cloud) add(id, name string, state cloudapi.InstanceState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.instances[id] = cloudapi.Instance{ID: id, Name: name, State: state}
}

func (c *cloud) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.instances, id)
}

func (c *cloud) wait() error {
	c.mu.Lock()
	gate, err := c.gate, c.failNext
	c.failNext = nil
	c.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return err
}

func (c *cloud) GetInstance(_ context.Context, id string) (*cloudapi.Instance, error) {
	c.gets.Add(1)
	if err := c.wait(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	inst, ok := c.instances[id]
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, nil)
	}
	return &inst, nil
}

func (c *cloud) ListInstances(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	c.lists.Add(1)
	if err := c.wait(); err != nil {
		return nil, err
	}
	if c.onPage != nil {
		c.onPage()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.instances))
	for id := range c.instances {
		if id > opts.PageToken {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page := &cloudapi.InstancePage{}
	size := c.pageSize
	if opts.PageSize > 0 && opts.PageSize < size {
		size = opts.PageSize
	}
	for _, id := range ids {
		if len(page.Items) == size {
			page.NextPageToken = page.Items[len(page.Items)-1].ID
			break
		}
		page.Items = append(page.Items, c.instances[id])
	}
	return page, nil
}

func (c *cloud) calls() int64 { return c.lists.Load() + c.gets.Load() }

// t0 is the time on the tests' fake clocks when they begin.
var t0 = time.Unix(1_800_000_000, 0)

func newCache(c *cloud, maxAge time.Duration) (*Cache, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(t0)
	return New(c, Options{MaxAge: maxAge, PageSize: 500, Clock: clk}), clk
}

func TestFreshSnapshotCostsNothing(t *testing.T) {
	ctx := context.Background()
	c := newCloud(1200)
	cache, clk := newCache(c, time.Minute)
	for i := range 1200 {
		inst, err := cache.ByID(ctx, fmt.Sprintf("i-%05d", i))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("node-%05d", i), inst.Name)
	}
	assert.EqualValues(t, 3, c.lists.Load(), "one paginated list of 3 pages")
	assert.EqualValues(t, 0, c.gets.Load())

	clk.Step(time.Minute)
	_, err := cache.ByName(ctx, "node-00042")
	require.NoError(t, err)
	assert.EqualValues(t, 3, c.calls(), "still fresh at MaxAge")

	clk.Step(time.Nanosecond)
	_, err = cache.ByID(ctx, "i-00001")
	require.NoError(t, err)
	assert.EqualValues(t, 6, c.calls(), "stale after MaxAge: one more list")
}

func TestConcurrentMissesShareOneList(t *testing.T) {
	c := newCloud(1000)
	c.gate = make(chan struct{})
	cache, _ := newCache(c, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cache.ByID(context.Background(), fmt.Sprintf("i-%05d", i*5))
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return c.lists.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the others pile up behind the list
	c.openGate()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, c.lists.Load(), "200 concurrent lookups, one list of 2 pages")
	assert.EqualValues(t, 0, c.gets.Load())
}

func TestMissInFreshSnapshotIsOneGet(t *testing.T) {
	ctx := context.Background()
	c := newCloud(1000)
	cache, _ := newCache(c, time.Minute)
	_, err := cache.ByID(ctx, "i-00000")
	require.NoError(t, err)
	require.EqualValues(t, 2, c.calls())

	c.add("i-new", "node-new", cloudapi.InstanceRunning)
	inst, err := cache.ByID(ctx, "i-new")
	require.NoError(t, err)
	assert.Equal(t, "node-new", inst.Name)
	assert.EqualValues(t, 1, c.gets.Load(), "a single miss is one get, not a relist")
	assert.EqualValues(t, 2, c.lists.Load())

	_, err = cache.ByID(ctx, "i-new")
	require.NoError(t, err)
	_, err = cache.ByName(ctx, "node-new")
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.gets.Load(), "the fetched instance joins the snapshot")
}

func TestManyMissesRelistInstead(t *testing.T) {
	ctx := context.Background()
	c := newCloud(1000) // 2 pages
	cache, _ := newCache(c, time.Minute)
	_, err := cache.ByID(ctx, "i-00000")
	require.NoError(t, err)
	for i := range 10 {
		c.add(fmt.Sprintf("j-%d", i), fmt.Sprintf("new-%d", i), cloudapi.InstanceRunning)
	}
	for i := range 10 {
		_, err := cache.ByID(ctx, fmt.Sprintf("j-%d", i))
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, c.gets.Load(), "two gets cost as much as a 2-page relist")
	assert.EqualValues(t, 2+3, c.lists.Load(), "the third miss relists (1,010 instances: 3 pages); the rest hit")
}

func TestNotFoundOnlyFromTheCloud(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	cache, _ := newCache(c, time.Minute)
	_, err := cache.ByID(ctx, "i-00001")
	require.NoError(t, err)

	c.failNext = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-gone", nil)
	_, err = cache.ByID(ctx, "i-gone")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound, "a failed confirmation is an error, never gone")

	_, err = cache.ByID(ctx, "i-gone")
	require.ErrorIs(t, err, cloudapi.ErrNotFound, "the cloud's own answer")
	assert.EqualValues(t, 2, c.gets.Load(), "errors are not cached")

	c.remove("i-00002")
	inst, err := cache.ByID(ctx, "i-00002")
	require.NoError(t, err, "within MaxAge the snapshot may still say it exists: stale in the safe direction")
	assert.Equal(t, "i-00002", inst.ID)
}

func TestListErrorsAreErrors(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	cache, clk := newCache(c, time.Minute)
	c.failNext = cloudapi.Throttled(cloudapi.OpListInstances, time.Second, nil)
	_, err := cache.ByName(ctx, "node-00001")
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)

	_, err = cache.ByName(ctx, "node-00001")
	require.ErrorIs(t, err, cloudapi.ErrThrottled, "within the backoff: the last list's error, no new list")
	assert.EqualValues(t, 1, c.lists.Load())

	clk.Step(sharedlist.MinBackoff)
	_, err = cache.ByName(ctx, "node-00001")
	require.NoError(t, err, "after the backoff the next lookup lists again")
	assert.EqualValues(t, 2, c.lists.Load())
}

// TestFailingListFallsBackToGet keeps the list failing: lookups by ID still answer, one
// GetInstance each, and the whole list is not started again on every lookup but after a
// backoff that doubles up to sharedlist.MaxBackoff. While the list fails, a GetInstance
// not-found is not "gone".
func TestFailingListFallsBackToGet(t *testing.T) {
	ctx := context.Background()
	c := &failingLists{cloud: newCloud(10)}
	c.fail.Store(true)
	cache, clk := newCache(c.cloud, time.Minute)
	cache.api = c

	for range 5 {
		inst, err := cache.ByID(ctx, "i-00003")
		require.NoError(t, err, "one GetInstance answers while the list fails")
		assert.Equal(t, "i-00003", inst.ID)
	}
	assert.EqualValues(t, 1, c.lists.Load(), "one list, then the backoff")
	assert.EqualValues(t, 5, c.gets.Load())

	_, err := cache.ByID(ctx, "i-missing")
	require.ErrorIs(t, err, ErrUnconfirmed, "a not-found while the list fails is not taken on the cloud's word")
	require.NotErrorIs(t, err, cloudapi.ErrNotFound, "never \"gone\" while the list fails")

	var waits []time.Duration
	for range 7 {
		before := c.lists.Load()
		for d := time.Duration(0); c.lists.Load() == before; d += 250 * time.Millisecond {
			require.Less(t, d, time.Minute, "a list is retried within a minute")
			clk.Step(250 * time.Millisecond)
			_, err := cache.ByID(ctx, "i-00003")
			require.NoError(t, err)
			if c.lists.Load() > before {
				waits = append(waits, d+250*time.Millisecond)
			}
		}
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}, waits,
		"the backoff doubles from 1s and stops at 30s")

	c.fail.Store(false)
	clk.Step(sharedlist.MaxBackoff)
	_, err = cache.ByID(ctx, "i-00004")
	require.NoError(t, err)
	gets := c.gets.Load()
	_, err = cache.ByID(ctx, "i-00005")
	require.NoError(t, err)
	assert.Equal(t, gets, c.gets.Load(), "listed again: served from the snapshot")
}

// failingLists is a cloud whose lists fail while fail is set.
type failingLists struct {
	*cloud
	fail  atomic.Bool
	lists atomic.Int64
}

func (f *failingLists) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	f.lists.Add(1)
	if f.fail.Load() {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListInstances, "", nil)
	}
	return f.cloud.ListInstances(ctx, opts)
}

func TestByName(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	c.add("i-old", "reused", cloudapi.InstanceTerminated)
	c.add("i-cur", "reused", cloudapi.InstanceRunning)
	c.add("i-t", "only-terminated", cloudapi.InstanceTerminated)
	c.add("i-a", "twin", cloudapi.InstanceRunning)
	c.add("i-b", "twin", cloudapi.InstanceStopped)
	cache, clk := newCache(c, time.Minute)

	inst, err := cache.ByName(ctx, "reused")
	require.NoError(t, err)
	assert.Equal(t, "i-cur", inst.ID, "a live instance wins over a terminated one of the same name")

	inst, err = cache.ByName(ctx, "only-terminated")
	require.NoError(t, err)
	assert.Equal(t, cloudapi.InstanceTerminated, inst.State)

	_, err = cache.ByName(ctx, "twin")
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), `2 running instances are named "twin" (i-a and i-b)`)

	before := c.calls()
	_, err = cache.ByName(ctx, "nobody")
	require.ErrorIs(t, err, cloudapi.ErrNotFound, "the list that answered began with this lookup")
	assert.Equal(t, before, c.calls(), "the clock has not moved: the snapshot is from this instant")

	clk.Step(time.Second)
	c.add("i-late", "late", cloudapi.InstanceRunning)
	inst, err = cache.ByName(ctx, "late")
	require.NoError(t, err, "a name missing from an older snapshot relists before answering")
	assert.Equal(t, "i-late", inst.ID)
}

func TestCanceledWaiterDoesNotFailOthers(t *testing.T) {
	c := newCloud(10)
	c.gate = make(chan struct{})
	cache, _ := newCache(c, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := cache.ByID(ctx, "i-00001"); first <- err }()
	require.Eventually(t, func() bool { return c.lists.Load() == 1 }, 5*time.Second, time.Millisecond)
	second := make(chan error, 1)
	go func() { _, err := cache.ByID(context.Background(), "i-00002"); second <- err }()
	cancel()
	c.openGate()
	require.NoError(t, <-second)
	err := <-first
	if err != nil {
		assert.True(t, strings.Contains(err.Error(), "canceled"), err.Error())
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	}
	assert.EqualValues(t, 1, c.lists.Load())
}

// TestFailingRelistFallsBackToGet: a fresh snapshot, one by-ID miss already paid (so a relist is "cheaper"), then the
// list starts failing: a lookup by ID of an instance the cloud has must still answer
// through GetInstance, as it does when ensureFresh's list fails.
func TestFailingRelistFallsBackToGet(t *testing.T) {
	ctx := context.Background()
	c := &failingLists{cloud: newCloud(10)}
	cache, _ := newCache(c.cloud, time.Hour)
	cache.api = c
	_, err := cache.ByID(ctx, "i-00001")
	require.NoError(t, err)
	c.add("i-new1", "node-new1", cloudapi.InstanceRunning)
	c.add("i-new2", "node-new2", cloudapi.InstanceRunning)
	_, err = cache.ByID(ctx, "i-new1") // a miss: one GetInstance
	require.NoError(t, err)
	c.fail.Store(true)
	for range 3 {
		inst, err := cache.ByID(ctx, "i-new2")
		if assert.NoError(t, err, "the cloud has i-new2; only the list fails") {
			assert.Equal(t, "i-new2", inst.ID)
		}
	}
}

// TestStarterOfAListStopsWaitingWhenCanceled: the lookup that starts a list waits for it
// like any other and returns when its context ends, while the list goes on for the rest.
func TestStarterOfAListStopsWaitingWhenCanceled(t *testing.T) {
	c := newCloud(10)
	c.gate = make(chan struct{})
	cache, _ := newCache(c, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := cache.ByName(ctx, "node-00001"); first <- err }()
	require.Eventually(t, func() bool { return c.lists.Load() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err := <-first // returns while the list is still held
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)

	second := make(chan error, 1)
	go func() { _, err := cache.ByName(context.Background(), "node-00002"); second <- err }()
	c.openGate()
	require.NoError(t, <-second)
	assert.EqualValues(t, 1, c.lists.Load(), "the second lookup shared the list the first started")
}

// TestListNotFoundIsNeverGone: an adapter that answers a list with ErrNotFound (a 404 on
// the list endpoint) must not make a Node's instance "gone": lookups by name fail with a
// transient error, lookups by ID ask for the one instance.
func TestListNotFoundIsNeverGone(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	cache, _ := newCache(c, time.Minute)
	c.failNext = cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpListInstances, "", nil)
	_, err := cache.ByName(ctx, "node-00001")
	require.Error(t, err)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.ErrorIs(t, err, cloudapi.ErrTransient)
	_, err = cache.ByName(ctx, "node-00001")
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound, "nor the cached error during the backoff")
	inst, err := cache.ByID(ctx, "i-00002")
	require.NoError(t, err)
	assert.Equal(t, "i-00002", inst.ID)
}

// openGate lets the list held at the gate, and every later one, go on.
func (c *cloud) openGate() {
	c.mu.Lock()
	close(c.gate)
	c.gate = nil
	c.mu.Unlock()
}

// TestKnownListsOncePerName checks Known's lists: none in a fresh snapshot that has the
// name; one for a name the snapshot lacks (or when it is stale), shared by the names
// asked about within knownListGap, and none for that name again within MaxAge, unless
// its list failed (then the next list once the backoff allows). The clock moves between
// the asks, as a real one would: a frozen one would let the first list serve them all.
func TestKnownListsOncePerName(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	c.add("i-t", "gone", cloudapi.InstanceTerminated)
	cache, clk := newCache(c, time.Minute)
	lists := func() int64 { return c.lists.Load() }

	inst, ok := cache.Known(ctx, "node-00001")
	require.True(t, ok, "no snapshot yet: it lists")
	assert.Equal(t, "i-00001", inst.ID)
	assert.EqualValues(t, 1, lists(), "one list of one page")
	clk.Step(2 * time.Second)
	inst, ok = cache.Known(ctx, " Node-00002 ")
	require.True(t, ok)
	assert.Equal(t, "i-00002", inst.ID, "names compare as NameKey")
	assert.EqualValues(t, 1, lists(), "in a fresh snapshot: no call")

	_, ok = cache.Known(ctx, "gone")
	assert.False(t, ok, "a terminated instance is not known")
	assert.EqualValues(t, 2, lists(), "no live instance of that name: one list for it")
	clk.Step(2 * time.Second)
	_, ok = cache.Known(ctx, "gone")
	assert.False(t, ok)
	assert.EqualValues(t, 2, lists(), "asked about again within MaxAge: no list")

	c.add("i-new", "new", cloudapi.InstanceRunning)
	clk.Step(2 * time.Second)
	inst, ok = cache.Known(ctx, "new")
	require.True(t, ok, "a new instance: found by the list made for it")
	assert.Equal(t, "i-new", inst.ID)
	assert.EqualValues(t, 3, lists())

	clk.Step(2 * time.Second)
	for _, name := range []string{"a", "b", "c"} {
		_, ok = cache.Known(ctx, name)
		assert.False(t, ok, name)
		clk.Step(100 * time.Millisecond)
	}
	assert.EqualValues(t, 4, lists(), "the names asked about within a second share one list")

	clk.Step(time.Minute)
	inst, ok = cache.Known(ctx, "new")
	require.True(t, ok, "a snapshot older than MaxAge: listed again")
	assert.Equal(t, "i-new", inst.ID)
	assert.EqualValues(t, 5, lists())

	clk.Step(2 * time.Second)
	c.mu.Lock()
	c.failNext = errors.New("unavailable")
	c.mu.Unlock()
	_, ok = cache.Known(ctx, "late")
	assert.False(t, ok, "its list failed")
	assert.EqualValues(t, 6, lists())
	_, ok = cache.Known(ctx, "late")
	assert.False(t, ok)
	assert.EqualValues(t, 6, lists(), "within the backoff after the failure: no list")
	c.add("i-late", "late", cloudapi.InstanceRunning)
	clk.Step(2 * time.Second)
	inst, ok = cache.Known(ctx, "late")
	require.True(t, ok, "its list failed: the next one, once the backoff allows, serves it")
	assert.Equal(t, "i-late", inst.ID)
	assert.EqualValues(t, 7, lists())
	assert.Zero(t, c.gets.Load(), "Known makes no GetInstance")

	t.Run("MaxAge zero: no list", func(t *testing.T) {
		c := newCloud(2)
		cache, _ := newCache(c, 0)
		_, ok := cache.Known(ctx, "node-00001")
		assert.False(t, ok)
		assert.Zero(t, c.calls())
	})

	t.Run("the names asked about are bounded", func(t *testing.T) {
		c := newCloud(1)
		cache, clk := newCache(c, time.Minute)
		for i := range maxKnownLists {
			cache.Known(ctx, fmt.Sprint("missing-", i))
		}
		require.EqualValues(t, 1, c.lists.Load(), "asked about at once: one list")
		c.add("i-more", "more", cloudapi.InstanceRunning)
		clk.Step(2 * time.Second)
		_, ok := cache.Known(ctx, "more")
		assert.False(t, ok, "so many names asked about within MaxAge: no list for another")
		assert.EqualValues(t, 1, c.lists.Load())
		clk.Step(time.Minute)
		inst, ok := cache.Known(ctx, "more")
		require.True(t, ok, "once they are older than MaxAge: listed")
		assert.Equal(t, "i-more", inst.ID)
		assert.EqualValues(t, 2, c.lists.Load())
		assert.Len(t, cache.asks.at, 1, "the names asked about MaxAge ago or longer are forgotten")
	})

	t.Run("an ask while another's list is about to begin", func(t *testing.T) {
		// Another ask remembered the name and is about to list: this one waits for
		// that list (or begins it), never answers without it.
		c := newCloud(1)
		cache, clk := newCache(c, time.Minute)
		_, ok := cache.Known(ctx, "node-00000")
		require.True(t, ok)
		c.add("i-new", "new", cloudapi.InstanceRunning)
		clk.Step(2 * time.Second)
		_, _, ok = cache.knownListSince("new", clk.Now())
		require.True(t, ok)
		inst, ok := cache.Known(ctx, "new")
		require.True(t, ok, "the list the other ask is about to make serves this one")
		assert.Equal(t, "i-new", inst.ID)
		assert.EqualValues(t, 2, c.lists.Load())
	})
}

// TestKnownListsOverTime: with lists that take time, as a large cloud's do, the names a
// node sync asks about one after the other share one list, and Nodes that never get a
// provider ID, appearing at different times and asked about at every node sync, cost one
// list each at first and one per MaxAge for all of them after.
func TestKnownListsOverTime(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	cache, clk := newCache(c, time.Minute)
	c.onPage = func() { clk.Step(1500 * time.Millisecond) } // one page, 1.5 s
	_, err := cache.ByName(ctx, "node-00001")
	require.NoError(t, err)

	clk.Step(10 * time.Second)
	before := c.lists.Load()
	for i := range 5 {
		_, ok := cache.Known(ctx, fmt.Sprint("stray-", i))
		assert.False(t, ok)
	}
	assert.Equal(t, before+1, c.lists.Load(), "five names asked about one after the other: one list")

	c = newCloud(10)
	cache, clk = newCache(c, time.Minute)
	c.onPage = func() { clk.Step(1500 * time.Millisecond) }
	_, err = cache.ByName(ctx, "node-00001")
	require.NoError(t, err)
	before = c.lists.Load()
	var strays []string
	for s := 0; s < 300; s += 10 { // a node sync every 10 s for 5 minutes
		if s%15 == 0 && len(strays) < 4 { // a stray Node appears every 15 s
			strays = append(strays, fmt.Sprint("stray-", len(strays)))
		}
		for _, name := range strays {
			_, ok := cache.Known(ctx, name)
			assert.False(t, ok)
		}
		clk.SetTime(t0.Add(time.Duration(s+10) * time.Second))
	}
	// Each stray's first ask: 4 lists; then one per MaxAge: 5 in 5 minutes.
	assert.LessOrEqual(t, c.lists.Load()-before, int64(4+5))
}

// TestKnownConcurrentAsksShareOneList: many asks about one new Node at once (a node sync
// with concurrent service syncs) cost one list, and each finds the instance.
func TestKnownConcurrentAsksShareOneList(t *testing.T) {
	ctx := context.Background()
	c := newCloud(10)
	cache, clk := newCache(c, time.Minute)
	_, err := cache.ByName(ctx, "node-00001")
	require.NoError(t, err)
	c.add("i-new", "new", cloudapi.InstanceRunning)
	clk.Step(2 * time.Second)
	var wg sync.WaitGroup
	found := make(chan string, 16)
	for range 16 {
		wg.Go(func() {
			if inst, ok := cache.Known(ctx, "new"); ok {
				found <- inst.ID
			}
		})
	}
	wg.Wait()
	close(found)
	var ids []string
	for id := range found {
		ids = append(ids, id)
	}
	assert.Len(t, ids, 16, "every ask found the instance")
	assert.EqualValues(t, 2, c.lists.Load(), "one list for all of them")
}

// TestKnownAndALookupShareOneList checks that Known waits for another lookup's list under
// way and answers from it, and that a lookup by name that misses while Known's list is
// under way finds the instance in it: a new Node costs one list, whichever of the two
// begins it.
func TestKnownAndALookupShareOneList(t *testing.T) {
	ctx := context.Background()
	for _, first := range []string{"lookup", "Known"} {
		t.Run(first+" first", func(t *testing.T) {
			c := newCloud(10)
			cache, clk := newCache(c, time.Minute)
			_, err := cache.ByName(ctx, "node-00001")
			require.NoError(t, err)
			before := c.calls()
			c.add("i-new", "new", cloudapi.InstanceRunning)
			clk.Step(time.Second) // the Node appears after the last list
			c.mu.Lock()
			c.gate = make(chan struct{})
			c.mu.Unlock()

			looked, known := make(chan string, 1), make(chan string, 1)
			lookup := func() {
				inst, err := cache.ByName(ctx, "new")
				if err != nil {
					looked <- err.Error()
					return
				}
				looked <- inst.ID
			}
			ask := func() {
				inst, ok := cache.Known(ctx, "new")
				if !ok {
					known <- ""
					return
				}
				known <- inst.ID
			}
			if first == "lookup" {
				go lookup()
			} else {
				go ask()
			}
			require.Eventually(t, func() bool { return c.calls() > before }, 5*time.Second, time.Millisecond, "the first one's list began")
			clk.Step(time.Second) // the second begins after that list
			missed := make(chan struct{})
			if first == "lookup" {
				go ask()
			} else {
				// The lookup's first read of the snapshot misses while Known's list is
				// held: it then takes the instance from that list, or lists again.
				var once sync.Once
				cache.afterNameRead = func() { once.Do(func() { close(missed) }) }
				go lookup()
				<-missed
			}
			select {
			case id := <-known:
				t.Fatalf("Known answered %q while the list was under way", id)
			case id := <-looked:
				t.Fatalf("the lookup answered %q while the list was under way", id)
			case <-time.After(20 * time.Millisecond):
			}
			c.openGate()
			assert.Equal(t, "i-new", <-looked)
			assert.Equal(t, "i-new", <-known)
			assert.Equal(t, before+1, c.calls(), "one list of one page for both")
		})
	}
}
