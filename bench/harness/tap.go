package harness

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// tap sits between a provider and the fake cloud. It delays every call by a latency that
// can be changed between measurements (the node-status pass at 100 ms per call), and it
// watches load balancer and target group writes for one target instance, to time how
// long a new Node takes to reach every load balancer, or a deleted one to leave them.
// Calls are counted at the fake, not here. It offers the cloud's target groups when the
// cloud has them.
type tap struct {
	inner   cloudapi.Client
	latency atomic.Int64 // time.Duration

	mu      sync.Mutex
	target  string            // the instance ID being watched; empty: none
	removed bool              // watching for writes without target instead
	reaches *Reaches          // IDs of load balancers that reach target
	lbGroup map[string]string // load balancer ID to the target group it names
	groups  map[string]bool   // IDs of target groups written with target (without it, when removed)
}

var (
	_ cloudapi.Client            = (*tap)(nil)
	_ cloudapi.TargetGroupClient = (*tap)(nil)
)

func newTap(inner cloudapi.Client) *tap { return &tap{inner: inner} }

// setLatency makes every following call wait d before it reaches the cloud.
func (t *tap) setLatency(d time.Duration) { t.latency.Store(int64(d)) }

// watch starts watching load balancer and target group writes for target. lbGroups maps
// the load balancers that name a target group (cloudapi.LoadBalancerSpec.TargetGroup) to
// it, as the cloud held them before; writes update it. The returned channel is closed once
// want different load balancers reach target: created or updated with target among their
// own targets, or naming a target group that was created or updated with it; with removed,
// once want load balancers were written so that they no longer do.
func (t *tap) watch(target string, want int, removed bool, lbGroups map[string]string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.target, t.removed, t.reaches = target, removed, NewReaches(want)
	t.lbGroup, t.groups = maps.Clone(lbGroups), map[string]bool{}
	if t.lbGroup == nil {
		t.lbGroup = map[string]string{}
	}
	return t.reaches.Done()
}

// observe notes a load balancer as a write returned it.
func (t *tap) observe(lb *cloudapi.LoadBalancer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.target == "" {
		return
	}
	if g := lb.Spec.TargetGroup; g != "" {
		t.lbGroup[lb.ID] = g
	} else {
		delete(t.lbGroup, lb.ID)
	}
	// t.groups holds the groups written as watched: with target, or without when removed.
	inGroup := lb.Spec.TargetGroup != "" && t.groups[lb.Spec.TargetGroup]
	if own := slices.Contains(lb.Spec.Targets, t.target); (!t.removed && (own || inGroup)) ||
		(t.removed && (inGroup || lb.Spec.TargetGroup == "" && !own)) {
		t.reaches.Reach(lb.ID)
	}
}

// observeGroup notes a target group as a write returned it: with target (without, when
// removed), every load balancer that names it reaches target (no longer does).
func (t *tap) observeGroup(g *cloudapi.TargetGroup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.target == "" || t.groups[g.ID] || slices.Contains(g.Spec.Targets, t.target) == t.removed {
		return
	}
	t.groups[g.ID] = true
	for lb, group := range t.lbGroup {
		if group == g.ID {
			t.reaches.Reach(lb)
		}
	}
}

// delay waits the configured latency, or until ctx is done.
func (t *tap) delay(ctx context.Context) error {
	d := time.Duration(t.latency.Load())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return cloudapi.NewError(cloudapi.ErrTransient, "", "", ctx.Err())
	}
}

func (t *tap) Instances() cloudapi.InstanceAPI { return tapInstances{t, t.inner.Instances()} }

func (t *tap) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := t.inner.LoadBalancers()
	if !ok {
		return nil, false
	}
	return tapLBs{t, api}, true
}

func (t *tap) Routes() (cloudapi.RouteAPI, bool) {
	api, ok := t.inner.Routes()
	if !ok {
		return nil, false
	}
	return tapRoutes{t, api}, true
}

// TargetGroups returns the cloud's target group API, tapped, when the cloud has one.
func (t *tap) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	api, ok := cloudapi.TargetGroups(t.inner)
	if !ok {
		return nil, false
	}
	return tapGroups{t, api}, true
}

type tapInstances struct {
	t     *tap
	inner cloudapi.InstanceAPI
}

func (a tapInstances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.GetInstance(ctx, id)
}

func (a tapInstances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.ListInstances(ctx, opts)
}

type tapLBs struct {
	t     *tap
	inner cloudapi.LoadBalancerAPI
}

func (a tapLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.GetLoadBalancer(ctx, id)
}

func (a tapLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.ListLoadBalancers(ctx, opts)
}

func (a tapLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	lb, err := a.inner.CreateLoadBalancer(ctx, spec)
	if err == nil {
		a.t.observe(lb)
	}
	return lb, err
}

func (a tapLBs) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	lb, err := a.inner.UpdateLoadBalancer(ctx, id, update)
	if err == nil {
		a.t.observe(lb)
	}
	return lb, err
}

func (a tapLBs) DeleteLoadBalancer(ctx context.Context, id string) error {
	if err := a.t.delay(ctx); err != nil {
		return err
	}
	return a.inner.DeleteLoadBalancer(ctx, id)
}

type tapRoutes struct {
	t     *tap
	inner cloudapi.RouteAPI
}

func (a tapRoutes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.ListRoutes(ctx, opts)
}

func (a tapRoutes) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.CreateRoute(ctx, spec)
}

func (a tapRoutes) DeleteRoute(ctx context.Context, id string) error {
	if err := a.t.delay(ctx); err != nil {
		return err
	}
	return a.inner.DeleteRoute(ctx, id)
}

type tapGroups struct {
	t     *tap
	inner cloudapi.TargetGroupAPI
}

func (a tapGroups) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	return a.inner.ListTargetGroups(ctx, opts)
}

func (a tapGroups) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	g, err := a.inner.CreateTargetGroup(ctx, spec)
	if err == nil {
		a.t.observeGroup(g)
	}
	return g, err
}

func (a tapGroups) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	if err := a.t.delay(ctx); err != nil {
		return nil, err
	}
	g, err := a.inner.UpdateTargetGroup(ctx, id, update)
	if err == nil {
		a.t.observeGroup(g)
	}
	return g, err
}

func (a tapGroups) DeleteTargetGroup(ctx context.Context, id string) error {
	if err := a.t.delay(ctx); err != nil {
		return err
	}
	return a.inner.DeleteTargetGroup(ctx, id)
}
