package routes_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	routecontroller "k8s.io/cloud-provider/controllers/route"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the route controller's feature gates, as the CCM registers them
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/routes"
)

type env struct {
	cloud  *fake.Cloud
	chaos  *faultinject.Client
	routes *routes.Routes
	// clock is the clock of the route and instance snapshots, which stands still unless
	// the test moves it; nil when newEnvWithClock was given another clock.
	clock *clocktesting.FakeClock
	// nodes are the names of the cluster's Nodes (node-00000 ... at first), which
	// routes.Options.NodeNames answers over a cloud whose routes carry no tags;
	// nodeLists counts its calls.
	nodes     sync.Map
	nodeLists atomic.Int64
	// lookup is the instance snapshot the routes find Nodes' instances in.
	lookup *instancecache.Cache
}

// maxAge is the snapshots' maximum age in these tests.
const maxAge = time.Minute

// newEnv makes n instances (node-00000 is instance i-00000) in a fake cloud with cfg,
// behind a fault injector that injects nothing until told, and Routes over them, whose
// snapshots age by env.clock.
func newEnv(t testing.TB, n int, cfg fake.Config) *env {
	t.Helper()
	return newEnvWithBrake(t, n, cfg, instancecache.Brake{})
}

// newEnvWithBrake is newEnv with the instance snapshot's deletion brake.
func newEnvWithBrake(t testing.TB, n int, cfg fake.Config, brake instancecache.Brake) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	e := buildEnv(t, n, cfg, instancecache.Options{MaxAge: maxAge, Clock: clk, Brake: brake})
	e.clock = clk
	return e
}

// newEnvWithClock is newEnv with the snapshots aging by clk.
func newEnvWithClock(t testing.TB, n int, cfg fake.Config, clk clock.PassiveClock) *env {
	t.Helper()
	return buildEnv(t, n, cfg, instancecache.Options{MaxAge: maxAge, Clock: clk})
}

// buildEnv is newEnv with the instance snapshot's options; the route snapshot ages by
// their clock.
func buildEnv(t testing.TB, n int, cfg fake.Config, lookupOpts instancecache.Options) *env {
	t.Helper()
	clk := lookupOpts.Clock
	for i := range n {
		cfg.Instances = append(cfg.Instances, fake.Instance{ID: fmt.Sprintf("i-%05d", i), Name: nodeName(i)})
	}
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	chaos := faultinject.Wrap(cloud, faultinject.Config{})
	api, ok := chaos.Routes()
	require.True(t, ok)
	lookup := instancecache.New(chaos.Instances(), lookupOpts)
	e := &env{cloud: cloud, chaos: chaos, lookup: lookup}
	for i := range n {
		e.nodes.Store(nodeName(i), true)
	}
	opts := routes.Options{ClusterID: "c1", MaxAge: maxAge, Clock: clk}
	if cfg.Capabilities.TaglessRoutes {
		opts.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/48")}
		opts.NodeNames = e.nodeNames
	}
	r, err := routes.New(api, lookup, opts)
	require.NoError(t, err)
	e.routes = r
	return e
}

// nodeNames lists the env's Nodes (env.nodes), as routes.Options.NodeNames, counted.
func (e *env) nodeNames(context.Context) ([]string, error) {
	e.nodeLists.Add(1)
	var out []string
	e.nodes.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	return out, nil
}

// expire moves the clock past the snapshots' maximum age.
func (e *env) expire() { e.clock.Step(maxAge + time.Nanosecond) }

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

func route(node int, cidr string) *cloudprovider.Route {
	return &cloudprovider.Route{TargetNode: types.NodeName(nodeName(node)), DestinationCIDR: cidr}
}

func TestCreateListDelete(t *testing.T) {
	e := newEnv(t, 3, fake.Config{})
	ctx := t.Context()
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "hint", route(0, "10.244.0.0/24")))
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "hint", route(0, "fd00:10:244::/64")), "dual-stack nodes get a route per family")
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "hint", route(1, "10.244.1.0/24")))

	got, err := e.routes.ListRoutes(ctx, "c")
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, "node-00000", string(got[0].TargetNode))
	assert.Equal(t, "10.244.0.0/24", got[0].DestinationCIDR)
	assert.Equal(t, "fd00:10:244::/64", got[1].DestinationCIDR)
	inv := e.cloud.Inventory()
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagNode: "node-00000"}, inv.Routes[0].Tags)
	assert.Equal(t, "i-00000", inv.Routes[0].TargetInstanceID)

	require.NoError(t, e.routes.DeleteRoute(ctx, "c", got[2]))
	require.NoError(t, e.routes.DeleteRoute(ctx, "c", got[2]), "a route that is gone is success")
	assert.Len(t, e.cloud.Inventory().Routes, 2)
}

func TestOtherOwnersAreInvisibleAndUntouched(t *testing.T) {
	e := newEnv(t, 2, fake.Config{})
	ctx := t.Context()
	api, _ := e.cloud.Routes()
	other, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.99.0.0/24", TargetInstanceID: "i-00000", Tags: map[string]string{cloudapi.TagCluster: "other"}})
	require.NoError(t, err)
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.98.0.0/24", TargetInstanceID: "i-00001"})
	require.NoError(t, err)
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(0, "10.244.0.0/24")))

	got, err := e.routes.ListRoutes(ctx, "c")
	require.NoError(t, err)
	require.Len(t, got, 1, "only the cluster's routes are listed")

	err = e.routes.DeleteRoute(ctx, "c", &cloudprovider.Route{Name: other.ID, DestinationCIDR: other.DestinationCIDR, TargetNode: "node-00000"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `it is not a route of cluster "c1" (cluster tag "other")`)
	assert.Len(t, e.cloud.Inventory().Routes, 3, "another cluster's route is never deleted")

	err = e.routes.CreateRoute(ctx, "c", "", route(1, "10.99.0.0/24"))
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), fmt.Sprintf(`route %s already sends 10.99.0.0/24 to instance i-00000 (cluster tag "other"`, other.ID))
}

func TestCreateIsIdempotent(t *testing.T) {
	e := newEnv(t, 2, fake.Config{})
	ctx := t.Context()
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(0, "10.244.0.0/24")))
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(0, "10.244.0.0/24")), "an identical route is success")
	assert.Len(t, e.cloud.Inventory().Routes, 1)

	err := e.routes.CreateRoute(ctx, "c", "", route(1, "10.244.0.0/24"))
	require.ErrorIs(t, err, cloudapi.ErrConflict, "the same destination to another node")

	e.chaos.Script(cloudapi.OpCreateRoute, faultinject.Fault{Kind: faultinject.Ambiguous})
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(1, "10.244.1.0/24")), "a create whose answer was lost is found")
	assert.Len(t, e.cloud.Inventory().Routes, 2)
}

func TestNodeAddressesAndMissingInstances(t *testing.T) {
	e := newEnv(t, 1, fake.Config{})
	ctx := t.Context()
	r := route(0, "fd00:10:244::/64")
	r.EnableNodeAddresses = true
	r.TargetNodeAddresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeInternalIP, Address: "fd00::1"}}
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", r))
	assert.Equal(t, "fd00::1", e.cloud.Inventory().Routes[0].TargetAddress, "the next hop of the route's family")

	err := e.routes.CreateRoute(ctx, "c", "", &cloudprovider.Route{TargetNode: "nobody", DestinationCIDR: "10.244.9.0/24"})
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), "finding the node's instance")

	require.NoError(t, e.cloud.DeleteInstance("i-00000"))
	got, err := e.routes.ListRoutes(ctx, "c")
	require.NoError(t, err)
	assert.True(t, got[0].Blackhole, "a route to a deleted instance is a blackhole, which the route controller deletes")
}

func TestListErrorsAreErrors(t *testing.T) {
	e := newEnv(t, 1, fake.Config{})
	e.chaos.Script(cloudapi.OpListRoutes, faultinject.Fault{Kind: faultinject.Transient})
	_, err := e.routes.ListRoutes(t.Context(), "c")
	require.ErrorIs(t, err, cloudapi.ErrTransient, "a failed list is never an empty route table")
}

// TestRouteControllerQuietReconcilesListOncePerMaxAge runs the upstream route controller
// against 5,000 Nodes. Bringing the cluster up costs one route list and a create per Node:
// the creates keep the snapshot current. Once every Node has its route, a reconcile costs
// no cloud call while the snapshot is younger than the maximum age, and the first one after
// it one route list.
func TestRouteControllerQuietReconcilesListOncePerMaxAge(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 nodes")
	}
	const n = 5000
	e := newEnv(t, n, fake.Config{PageSize: 500})
	objs := make([]runtime.Object, n)
	for i := range n {
		objs[i] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)},
			Spec:       corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), PodCIDRs: []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)}},
		}
	}
	kube := kubefake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, clusterCIDR, err := net.ParseCIDR("10.64.0.0/10")
	require.NoError(t, err)
	counted := &countingRoutes{Routes: e.routes}
	rc, err := routecontroller.New(counted, kube, factory.Core().V1().Nodes(), "c", []*net.IPNet{clusterCIDR})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	go rc.Run(ctx, 100*time.Millisecond, controllersmetrics.NewControllerManagerMetrics("test"))

	require.Eventually(t, func() bool { return len(e.cloud.Inventory().Routes) == n }, 5*time.Minute, 50*time.Millisecond, "every node gets its route")
	// Let the reconcile that created them finish: the next one starts after it.
	counted.awaitReconciles(t, 2)
	upCalls := e.cloud.Calls()
	t.Logf("bringing up %d routes: %v", n, upCalls)
	assert.Equal(t, int64(1), upCalls[cloudapi.OpListRoutes], "one route list: the creates keep the snapshot current")
	assert.Equal(t, int64(n), upCalls[cloudapi.OpCreateRoute])

	before := e.cloud.Calls()
	lists := counted.awaitReconciles(t, 3)
	quiet := e.cloud.Calls().Sub(before)
	t.Logf("%d quiet reconciles within the maximum age over %d routes: %v", lists, n, quiet)
	assert.Zero(t, quiet.Total(), "a quiet reconcile within the maximum age costs no call: %v", quiet)

	// Counted before the step: the reconcile last counted may read the clock after it, and
	// its list belongs to the window.
	before = e.cloud.Calls()
	e.expire()
	lists = counted.awaitReconciles(t, 3)
	cancel()
	expired := e.cloud.Calls().Sub(before)
	t.Logf("%d quiet reconciles over %d routes, the maximum age past before the first: %v", lists, n, expired)
	assert.Equal(t, fake.Calls{cloudapi.OpListRoutes: 1}, expired, "one route list after the maximum age, and nothing else")
	assert.Len(t, e.cloud.Inventory().Routes, n)
}

// countingRoutes counts the route controller's ListRoutes, one per reconcile.
type countingRoutes struct {
	*routes.Routes
	lists atomic.Int64
}

func (c *countingRoutes) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	c.lists.Add(1)
	return c.Routes.ListRoutes(ctx, clusterName)
}

// awaitReconciles waits until the route controller has begun n more reconciles, and
// returns how many whole reconciles it made meanwhile (n-1: the last has only begun).
func (c *countingRoutes) awaitReconciles(t *testing.T, n int64) int64 {
	t.Helper()
	from := c.lists.Load()
	require.Eventually(t, func() bool { return c.lists.Load() >= from+n }, 3*time.Minute, 10*time.Millisecond)
	return n - 1
}

// TestRouteControllerConvergesUnderFaults runs the upstream route controller while a third
// of the cloud calls fail (throttled, transient, or applied with the answer lost), removes
// Nodes whose instances are deleted, and checks that once the faults stop every Node has
// exactly its route, no route to a missing instance survives, and another cluster's routes
// are untouched.
func TestRouteControllerConvergesUnderFaults(t *testing.T) {
	const n = 60
	// Time passes as ccmkit reads the clock: a failed list's backoff and the snapshot's
	// maximum age go by while the controller runs.
	e := newEnvWithClock(t, n, fake.Config{}, clocktest.NewTicking(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), 100*time.Millisecond))
	api, _ := e.cloud.Routes()
	foreign, err := api.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.64.200.0/24", TargetInstanceID: "i-00000", Tags: map[string]string{cloudapi.TagCluster: "other"}})
	require.NoError(t, err)
	e.chaos.SetRules([]faultinject.Rule{
		{Probability: 0.1, Kind: faultinject.Throttle},
		{Probability: 0.1, Kind: faultinject.Transient},
		{Ops: []cloudapi.Operation{cloudapi.OpCreateRoute, cloudapi.OpDeleteRoute}, Probability: 0.15, Kind: faultinject.Ambiguous},
	})

	kube := kubefake.NewClientset()
	for i := range n {
		cidr := fmt.Sprintf("10.64.%d.0/24", i)
		_, err := kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)},
			Spec:       corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr, fmt.Sprintf("fd00:10:64:%x::/64", i)}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, v4, _ := net.ParseCIDR("10.64.0.0/16")
	_, v6, _ := net.ParseCIDR("fd00:10:64::/48")
	rc, err := routecontroller.New(e.routes, kube, factory.Core().V1().Nodes(), "c", []*net.IPNet{v4, v6})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	go rc.Run(ctx, 50*time.Millisecond, controllersmetrics.NewControllerManagerMetrics("test"))

	ours := func() []cloudapi.Route {
		return e.cloud.Inventory().RoutesTagged(map[string]string{cloudapi.TagCluster: "c1"})
	}
	require.Eventually(t, func() bool { return len(ours()) >= 2*n }, 3*time.Minute, 20*time.Millisecond, "routes for every node, under faults")

	// Five instances are deleted; their Nodes go.
	for i := range 5 {
		require.NoError(t, e.cloud.DeleteInstance(fmt.Sprintf("i-%05d", i)))
		require.NoError(t, kube.CoreV1().Nodes().Delete(t.Context(), nodeName(i), metav1.DeleteOptions{}))
	}
	time.Sleep(300 * time.Millisecond) // some reconciles still under faults
	e.chaos.SetEnabled(false)
	require.Eventually(t, func() bool {
		rs := ours()
		if len(rs) != 2*(n-5) {
			return false
		}
		for _, r := range rs {
			if r.Blackhole {
				return false
			}
		}
		return true
	}, 3*time.Minute, 20*time.Millisecond, "converged: one route per remaining node and family, none to a missing instance")

	seen := map[string]bool{}
	for _, r := range ours() {
		assert.False(t, seen[r.DestinationCIDR], "one route per destination")
		seen[r.DestinationCIDR] = true
	}
	inv := e.cloud.Inventory()
	foreignLeft := inv.RoutesTagged(map[string]string{cloudapi.TagCluster: "other"})
	require.Len(t, foreignLeft, 1, "another cluster's route is never touched")
	assert.Equal(t, foreign.ID, foreignLeft[0].ID)
	injected := e.chaos.Injected().Total()
	faults := 0
	for _, k := range injected.Faults {
		faults += k
	}
	t.Logf("%d cloud calls, %d faults injected", injected.Calls, faults)
	assert.Positive(t, injected.Faults[faultinject.Ambiguous], "ambiguous writes really happened")
}

// cyclingRoutes answers page tokens in a cycle a→b→a, without end.
type cyclingRoutes struct {
	cloudapi.RouteAPI
	pages int
}

func (c *cyclingRoutes) ListRoutes(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	c.pages++
	return &cloudapi.RoutePage{NextPageToken: map[string]string{"": "a", "a": "b", "b": "a"}[opts.PageToken]}, nil
}

// A cloud whose page tokens cycle ends every route list with a clear error after three
// pages: the cluster's routes, and the whole table that a delete looks a route up in.
func TestPageTokenCycleEndsEveryList(t *testing.T) {
	api := &cyclingRoutes{}
	r, err := routes.New(api, instancecache.New(nil, instancecache.Options{}), routes.Options{ClusterID: "c1"})
	require.NoError(t, err)
	_, err = r.ListRoutes(t.Context(), "c")
	require.ErrorIs(t, err, paging.ErrBadPaging)
	assert.Equal(t, 3, api.pages)

	api.pages = 0
	err = r.DeleteRoute(t.Context(), "c", &cloudprovider.Route{Name: "r-unknown", DestinationCIDR: "10.0.0.0/24"})
	require.ErrorIs(t, err, paging.ErrBadPaging, "the lookup before deleting a route the last list did not confirm")
	assert.Equal(t, 3, api.pages)
}
