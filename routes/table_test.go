package routes_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	routecontroller "k8s.io/cloud-provider/controllers/route"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/routes"
)

// list returns the destinations ListRoutes answers, in its order, and the cloud's route
// lists it cost.
func (e *env) list(t *testing.T) ([]string, int64) {
	t.Helper()
	before := e.cloud.Calls()
	got, err := e.routes.ListRoutes(t.Context(), "c")
	require.NoError(t, err)
	var dsts []string
	for _, r := range got {
		dsts = append(dsts, r.DestinationCIDR)
	}
	return dsts, e.cloud.Calls().Sub(before)[cloudapi.OpListRoutes]
}

// held returns the route ListRoutes answers for dst, or fails the test.
func (e *env) held(t *testing.T, dst string) *cloudprovider.Route {
	t.Helper()
	got, err := e.routes.ListRoutes(t.Context(), "c")
	require.NoError(t, err)
	i := slices.IndexFunc(got, func(r *cloudprovider.Route) bool { return r.DestinationCIDR == dst })
	require.GreaterOrEqual(t, i, 0, "no route for %s in %v", dst, got)
	return got[i]
}

func TestListRoutesAnswersFromTheSnapshot(t *testing.T) {
	e := newEnv(t, 4, fake.Config{})
	ctx := t.Context()
	for i, dst := range []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"} {
		require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(i, dst)))
	}

	for i := range 5 {
		dsts, lists := e.list(t)
		assert.Equal(t, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, dsts)
		want := int64(0)
		if i == 0 {
			want = 1
		}
		assert.Equal(t, want, lists, "call %d: the first lists, the others answer from the snapshot", i)
	}
	e.clock.Step(maxAge)
	_, lists := e.list(t)
	assert.Zero(t, lists, "a snapshot exactly as old as the maximum age is fresh")
	e.clock.Step(time.Nanosecond)
	_, lists = e.list(t)
	assert.Equal(t, int64(1), lists, "older: one list")

	// ccmkit's own writes keep the snapshot current, with no list.
	before := e.cloud.Calls()
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(3, "10.244.3.0/24")))
	require.NoError(t, e.routes.DeleteRoute(ctx, "c", e.held(t, "10.244.0.0/24")))
	dsts, lists := e.list(t)
	assert.Equal(t, []string{"10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"}, dsts, "the create and the delete are in the snapshot")
	assert.Zero(t, lists)
	writes := e.cloud.Calls().Sub(before)
	assert.Zero(t, writes[cloudapi.OpListRoutes], "a route the snapshot holds is deleted without a lookup: %v", writes)
	assert.Equal(t, int64(1), writes[cloudapi.OpCreateRoute])
	assert.Equal(t, int64(1), writes[cloudapi.OpDeleteRoute])

	e.expire()
	dsts, lists = e.list(t)
	assert.Equal(t, []string{"10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"}, dsts, "the cloud agrees")
	assert.Equal(t, int64(1), lists)
}

// A write that failed may have been applied all the same: the next ListRoutes lists, unless
// a fresh read settled what the cloud holds.
func TestAFailedWriteMakesTheNextListRoutesList(t *testing.T) {
	create := func(t *testing.T, e *env) error {
		return e.routes.CreateRoute(t.Context(), "c", "", route(2, "10.244.2.0/24"))
	}
	remove := func(t *testing.T, e *env) error {
		return e.routes.DeleteRoute(t.Context(), "c", e.held(t, "10.244.0.0/24"))
	}
	for _, tc := range []struct {
		name  string
		op    cloudapi.Operation
		kind  faultinject.Kind
		write func(t *testing.T, e *env) error
		// wantErr is the error the write returns, nil for none.
		wantErr error
		// wantLists are the route lists of the ListRoutes after the write.
		wantLists int64
		want      []string
	}{
		{
			name: "create refused", op: cloudapi.OpCreateRoute, kind: faultinject.Transient,
			write:   create,
			wantErr: cloudapi.ErrTransient, wantLists: 1, want: []string{"10.244.0.0/24", "10.244.1.0/24"},
		},
		{
			name: "create throttled", op: cloudapi.OpCreateRoute, kind: faultinject.Throttle,
			write:   create,
			wantErr: cloudapi.ErrThrottled, wantLists: 1, want: []string{"10.244.0.0/24", "10.244.1.0/24"},
		},
		{
			// The create looks for the route after the lost answer, finds it, and
			// records it: that fresh read settled it.
			name: "create applied, its answer lost", op: cloudapi.OpCreateRoute, kind: faultinject.Ambiguous,
			write:     create,
			wantLists: 0, want: []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"},
		},
		{
			name: "delete refused", op: cloudapi.OpDeleteRoute, kind: faultinject.Transient,
			write:   remove,
			wantErr: cloudapi.ErrTransient, wantLists: 1, want: []string{"10.244.0.0/24", "10.244.1.0/24"},
		},
		{
			name: "delete applied, its answer lost", op: cloudapi.OpDeleteRoute, kind: faultinject.Ambiguous,
			write:   remove,
			wantErr: cloudapi.ErrTransient, wantLists: 1, want: []string{"10.244.1.0/24"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3, fake.Config{})
			require.NoError(t, e.routes.CreateRoute(t.Context(), "c", "", route(0, "10.244.0.0/24")))
			require.NoError(t, e.routes.CreateRoute(t.Context(), "c", "", route(1, "10.244.1.0/24")))
			_, lists := e.list(t)
			require.Equal(t, int64(1), lists)

			e.chaos.Script(tc.op, faultinject.Fault{Kind: tc.kind})
			err := tc.write(t, e)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			dsts, lists := e.list(t)
			assert.Equal(t, tc.wantLists, lists)
			assert.Equal(t, tc.want, dsts)
			_, lists = e.list(t)
			assert.Zero(t, lists, "the list after the write is trusted")
		})
	}
}

// What changes behind ccmkit's back is seen once the snapshot is older than the maximum
// age: a route deleted, and a route whose instance was deleted (a blackhole, which the route
// controller deletes).
func TestChangesBehindTheBackAreSeenAfterMaxAge(t *testing.T) {
	e := newEnv(t, 3, fake.Config{})
	for i, dst := range []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"} {
		require.NoError(t, e.routes.CreateRoute(t.Context(), "c", "", route(i, dst)))
	}
	_, lists := e.list(t)
	require.Equal(t, int64(1), lists)

	api, _ := e.cloud.Routes()
	require.NoError(t, api.DeleteRoute(t.Context(), e.held(t, "10.244.0.0/24").Name))
	require.NoError(t, e.cloud.DeleteInstance("i-00001"))
	dsts, lists := e.list(t)
	assert.Equal(t, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, dsts, "within the maximum age: the snapshot")
	assert.Zero(t, lists)
	assert.False(t, e.held(t, "10.244.1.0/24").Blackhole)

	e.expire()
	dsts, lists = e.list(t)
	assert.Equal(t, []string{"10.244.1.0/24", "10.244.2.0/24"}, dsts, "after it: the cloud's table")
	assert.Equal(t, int64(1), lists)
	assert.True(t, e.held(t, "10.244.1.0/24").Blackhole)
}

func TestAFailedListIsAnErrorNotTheOldSnapshot(t *testing.T) {
	e := newEnv(t, 1, fake.Config{})
	require.NoError(t, e.routes.CreateRoute(t.Context(), "c", "", route(0, "10.244.0.0/24")))
	_, lists := e.list(t)
	require.Equal(t, int64(1), lists)

	e.expire()
	e.chaos.Script(cloudapi.OpListRoutes, faultinject.Fault{Kind: faultinject.Transient})
	got, err := e.routes.ListRoutes(t.Context(), "c")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Nil(t, got)

	before := e.cloud.Calls()
	_, err = e.routes.ListRoutes(t.Context(), "c")
	require.ErrorIs(t, err, cloudapi.ErrTransient, "during the backoff after a failed list: the failure, at once")
	assert.Contains(t, err.Error(), "the list of the cluster's routes failed")
	assert.Zero(t, e.cloud.Calls().Sub(before).Total())

	e.clock.Step(time.Second)
	dsts, lists := e.list(t)
	assert.Equal(t, []string{"10.244.0.0/24"}, dsts)
	assert.Equal(t, int64(1), lists)
}

func TestConcurrentListRoutesShareOneList(t *testing.T) {
	e := newEnv(t, 1, fake.Config{})
	require.NoError(t, e.routes.CreateRoute(t.Context(), "c", "", route(0, "10.244.0.0/24")))
	const callers = 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			got, err := e.routes.ListRoutes(t.Context(), "c")
			assert.NoError(t, err)
			assert.Len(t, got, 1)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), e.cloud.Calls()[cloudapi.OpListRoutes])
}

// gatedRoutes holds the answer of the cluster's route list (the one with a tag filter)
// once armed: the list has read the table, and its answer arrives after the writes the test
// makes meanwhile.
type gatedRoutes struct {
	cloudapi.RouteAPI
	mu      sync.Mutex
	gate    chan struct{} // nil: not armed
	started chan struct{}
}

func (g *gatedRoutes) arm() (started, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.started = make(chan struct{}), make(chan struct{})
	return g.started, g.gate
}

func (g *gatedRoutes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	page, err := g.RouteAPI.ListRoutes(ctx, opts)
	g.mu.Lock()
	gate, started := g.gate, g.started
	if opts.Tags != nil {
		g.gate = nil
	}
	g.mu.Unlock()
	if gate != nil && opts.Tags != nil {
		close(started)
		<-gate
	}
	return page, err
}

// The writes made while a list is under way are in the snapshot that list makes: it read
// the table before them. A write that failed meanwhile makes the list after it.
func TestWritesDuringAListAreKept(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fault is the fault of the delete made during the list.
		fault     faultinject.Kind
		wantLists int64
	}{
		{name: "writes succeed", fault: faultinject.None, wantLists: 1},
		{name: "the delete's answer is lost", fault: faultinject.Ambiguous, wantLists: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-00000", Name: nodeName(0)}, {ID: "i-00001", Name: nodeName(1)}, {ID: "i-00002", Name: nodeName(2)}}})
			require.NoError(t, err)
			chaos := faultinject.Wrap(cloud, faultinject.Config{})
			inner, _ := chaos.Routes()
			api := &gatedRoutes{RouteAPI: inner}
			r, err := routes.New(api, instancecache.New(chaos.Instances(), instancecache.Options{MaxAge: maxAge, Clock: clk}), routes.Options{ClusterID: "c1", MaxAge: maxAge, Clock: clk})
			require.NoError(t, err)
			e := &env{cloud: cloud, chaos: chaos, routes: r, clock: clk}
			require.NoError(t, r.CreateRoute(t.Context(), "c", "", route(0, "10.244.0.0/24")))
			require.NoError(t, r.CreateRoute(t.Context(), "c", "", route(1, "10.244.1.0/24")))
			doomed := e.held(t, "10.244.0.0/24")

			e.expire()
			started, release := api.arm()
			before := cloud.Calls()
			type answer struct {
				routes []*cloudprovider.Route
				err    error
			}
			listed := make(chan answer, 1)
			go func() {
				got, err := r.ListRoutes(t.Context(), "c")
				listed <- answer{got, err}
			}()
			<-started
			require.NoError(t, r.CreateRoute(t.Context(), "c", "", route(2, "10.244.2.0/24")))
			chaos.Script(cloudapi.OpDeleteRoute, faultinject.Fault{Kind: tc.fault})
			err = r.DeleteRoute(t.Context(), "c", doomed)
			if tc.fault == faultinject.None {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			close(release)
			a := <-listed
			require.NoError(t, a.err)
			var dsts []string
			for _, rt := range a.routes {
				dsts = append(dsts, rt.DestinationCIDR)
			}
			assert.Equal(t, []string{"10.244.1.0/24", "10.244.2.0/24"}, dsts, "the list began before the create and the delete")
			assert.Equal(t, tc.wantLists, cloud.Calls().Sub(before)[cloudapi.OpListRoutes])

			dsts, lists := e.list(t)
			assert.Equal(t, []string{"10.244.1.0/24", "10.244.2.0/24"}, dsts)
			assert.Zero(t, lists)
		})
	}
}

// TestRouteControllerRepairsARouteDeletedBehindItsBackAfterMaxAge runs the upstream route
// controller: a route deleted behind ccmkit's back stays missing while the snapshot is
// younger than the maximum age, at no cost, and is created again by the first reconcile
// after it.
func TestRouteControllerRepairsARouteDeletedBehindItsBackAfterMaxAge(t *testing.T) {
	const n = 3
	e := newEnv(t, n, fake.Config{})
	kube := kubefake.NewClientset()
	for i := range n {
		cidr := fmt.Sprintf("10.64.%d.0/24", i)
		_, err := kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)},
			Spec:       corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, clusterCIDR, _ := net.ParseCIDR("10.64.0.0/16")
	counted := &countingRoutes{Routes: e.routes}
	rc, err := routecontroller.New(counted, kube, factory.Core().V1().Nodes(), "c", []*net.IPNet{clusterCIDR})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	defer func() { cancel(); <-stopped }()
	factory.Start(ctx.Done())
	go func() {
		defer close(stopped)
		rc.Run(ctx, 20*time.Millisecond, controllersmetrics.NewControllerManagerMetrics("test"))
	}()

	ours := func() []cloudapi.Route {
		return e.cloud.Inventory().RoutesTagged(map[string]string{cloudapi.TagCluster: "c1"})
	}
	require.Eventually(t, func() bool { return len(ours()) == n }, time.Minute, 10*time.Millisecond)
	counted.awaitReconciles(t, 2)

	api, _ := e.cloud.Routes()
	gone := ours()[0]
	require.NoError(t, api.DeleteRoute(t.Context(), gone.ID))
	before := e.cloud.Calls()
	counted.awaitReconciles(t, 5)
	assert.Len(t, ours(), n-1, "not seen within the maximum age")
	assert.Zero(t, e.cloud.Calls().Sub(before).Total(), "quiet reconciles within the maximum age cost no call")

	e.expire()
	require.Eventually(t, func() bool { return len(ours()) == n }, time.Minute, 10*time.Millisecond, "created again after the maximum age")
	counted.awaitReconciles(t, 2)
	calls := e.cloud.Calls().Sub(before)
	assert.Equal(t, int64(1), calls[cloudapi.OpListRoutes], "one list: %v", calls)
	assert.Equal(t, int64(1), calls[cloudapi.OpCreateRoute], "%v", calls)
	assert.Zero(t, calls[cloudapi.OpDeleteRoute], "%v", calls)
	assert.True(t, slices.ContainsFunc(ours(), func(r cloudapi.Route) bool {
		return r.DestinationCIDR == gone.DestinationCIDR && r.TargetInstanceID == gone.TargetInstanceID
	}))
}

func TestNewRejectsBadOptions(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	api, _ := cloud.Routes()
	lookup := instancecache.New(cloud.Instances(), instancecache.Options{})
	for _, tc := range []struct {
		name string
		opts routes.Options
		want []string
	}{
		{name: "no cluster ID", opts: routes.Options{}, want: []string{"a cluster ID is required"}},
		{name: "negative", opts: routes.Options{ClusterID: "c1", MaxAge: -time.Second, PageSize: -1}, want: []string{"MaxAge -1s is negative", "PageSize -1 is negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := routes.New(api, lookup, tc.opts)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err = routes.New(api, lookup, routes.Options{ClusterID: "c1"})
	require.NoError(t, err, "zero MaxAge and Clock: the defaults")
}
