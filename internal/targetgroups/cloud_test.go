package targetgroups

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// cluster is the cluster ID of the tests' stores.
const cluster = "c1"

// maxAge is the tests' Config.MaxAge.
const maxAge = time.Minute

// groupCloud is an in-test cloudapi.TargetGroupAPI: groups by ID, every call recorded
// (calls), and an error to answer per operation (fail).
type groupCloud struct {
	mu     sync.Mutex
	groups map[string]cloudapi.TargetGroup
	seq    int
	calls  []string
	// fail, when it has an error for an operation, answers it instead of the call.
	fail map[cloudapi.Operation]error
	// lost, when set, is the error a create answers after it created the group.
	lost error
	// onCreate, when set, runs as a create begins.
	onCreate func()
	// inUse are the groups whose delete the cloud refuses (cloudapi.ErrConflict).
	inUse map[string]bool
	// onList, when set, runs at each list, before it reads the groups.
	onList func()
}

var _ cloudapi.TargetGroupAPI = (*groupCloud)(nil)

func newGroupCloud() *groupCloud {
	return &groupCloud{groups: map[string]cloudapi.TargetGroup{}, fail: map[cloudapi.Operation]error{}, inUse: map[string]bool{}}
}

// put stores a group as if another process had made it, and returns its ID.
func (c *groupCloud) put(name string, tags map[string]string, targets ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := fmt.Sprintf("tg-%02d", c.seq)
	c.groups[id] = cloudapi.TargetGroup{ID: id, Spec: cloudapi.TargetGroupSpec{Name: name, Targets: targets, Tags: tags}}
	return id
}

// get returns the group with ID id as the cloud holds it.
func (c *groupCloud) get(id string) (cloudapi.TargetGroup, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[id]
	return g.Clone(), ok
}

// ids returns the IDs of the groups the cloud holds, sorted.
func (c *groupCloud) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.groups))
}

// took returns the calls made since the last took, and forgets them.
func (c *groupCloud) took() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *groupCloud) call(op cloudapi.Operation, what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, what)
	return c.fail[op]
}

func (c *groupCloud) ListTargetGroups(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	what := "list cluster"
	if k, ok := opts.Tags[cloudapi.TagTargetGroup]; ok {
		what = "list " + k
	}
	if err := c.call(cloudapi.OpListTargetGroups, what); err != nil {
		return nil, err
	}
	if c.onList != nil {
		c.onList()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	page := &cloudapi.TargetGroupPage{}
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		if g := c.groups[id]; cloudapi.MatchTags(g.Spec.Tags, opts.Tags) {
			page.Items = append(page.Items, g.Clone())
		}
	}
	return page, nil
}

func (c *groupCloud) CreateTargetGroup(_ context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	if err := c.call(cloudapi.OpCreateTargetGroup, "create"); err != nil {
		return nil, err
	}
	if c.onCreate != nil {
		c.onCreate()
	}
	c.mu.Lock()
	for _, g := range c.groups {
		if g.Spec.Name == spec.Name {
			c.mu.Unlock()
			return nil, cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpCreateTargetGroup, spec.Name, nil)
		}
	}
	c.mu.Unlock()
	id := c.put(spec.Name, maps.Clone(spec.Tags), slices.Clone(spec.Targets)...)
	if c.lost != nil {
		return nil, c.lost
	}
	g, _ := c.get(id)
	return &g, nil
}

func (c *groupCloud) UpdateTargetGroup(_ context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	if err := c.call(cloudapi.OpUpdateTargetGroup, "update "+id); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[id]
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpUpdateTargetGroup, id, nil)
	}
	g.Spec.Targets = slices.Clone(update.Spec.Targets)
	sort.Sort(sort.Reverse(sort.StringSlice(g.Spec.Targets))) // any order: the store sorts
	g.Spec.Tags = maps.Clone(update.Spec.Tags)
	c.groups[id] = g
	out := g.Clone()
	return &out, nil
}

func (c *groupCloud) DeleteTargetGroup(_ context.Context, id string) error {
	if err := c.call(cloudapi.OpDeleteTargetGroup, "delete "+id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inUse[id] {
		return cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpDeleteTargetGroup, id, nil)
	}
	if _, ok := c.groups[id]; !ok {
		return cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteTargetGroup, id, nil)
	}
	delete(c.groups, id)
	return nil
}

// loadBalancers is an in-test LoadBalancers: an order of events, the groups the load
// balancers name (by group ID, the IDs of the load balancers naming it), and a refresh
// that is counted and may fail.
type loadBalancers struct {
	mu         sync.Mutex
	seq        uint64
	named      map[string][]string
	refreshes  int
	refreshErr error
}

var _ LoadBalancers = (*loadBalancers)(nil)

func (l *loadBalancers) Tick() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

func (l *loadBalancers) Names(group, except string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.named[group], func(lb string) bool { return lb != except })
}

func (l *loadBalancers) Refresh(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshes++
	return l.refreshErr
}

// name records that the load balancer with ID lb names group (none: nothing names it).
func (l *loadBalancers) name(group string, lbs ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.named == nil {
		l.named = map[string][]string{}
	}
	l.named[group] = lbs
}

// env is a Store over a groupCloud and a loadBalancers, on a fake clock.
type env struct {
	*Store
	cloud *groupCloud
	lbs   *loadBalancers
	clock *clocktesting.FakePassiveClock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{cloud: newGroupCloud(), lbs: &loadBalancers{}, clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))}
	e.Store = New(Config{API: e.cloud, ClusterID: cluster, NamePrefix: "k8s-c1", MaxAge: maxAge, Clock: e.clock, LoadBalancers: e.lbs})
	return e
}

// step moves the clock on by d.
func (e *env) step(d time.Duration) { e.clock.SetTime(e.clock.Now().Add(d)) }

// acquire is Acquire with the test's context and a discarding logger.
func (e *env) acquire(t *testing.T, k string, targets []string, since uint64) (string, func(), error) {
	t.Helper()
	return e.Acquire(t.Context(), klog.Background(), k, targets, since)
}

// drop is Drop with the test's context.
func (e *env) drop(t *testing.T, except string, ids ...string) {
	t.Helper()
	e.Drop(t.Context(), klog.Background(), except, ids...)
}

// ours are the tags of the cluster's group of key k.
func ours(k string) map[string]string {
	return map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: k}
}

// klogDiscard is a logger for calls whose logs the test does not read.
func klogDiscard() klog.Logger { return klog.Background().V(10) }
