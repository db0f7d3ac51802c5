package sweeper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
	"github.com/ccmkit/ccmkit/sweeper"
)

const (
	cluster = "c1"
	grace   = 10 * time.Minute
)

// world is a fake cloud behind a fault injector (off), a clientset holding the live
// Services and Nodes, informers over it, and a sweeper over all three.
type world struct {
	t      *testing.T
	cloud  *fake.Cloud
	faults *faultinject.Client
	kube   *kubefake.Clientset
	clock  *clocktesting.FakeClock
	rec    *record.FakeRecorder
	swept  map[string]int
	mu     sync.Mutex
	s      *sweeper.Sweeper
}

func newService(ns, name, uid string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
}

func newNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// setup tweaks the world newWorld builds.
type setup struct {
	config fake.Config
	// wrapLBs and wrapGroups wrap the sweeper's load balancer and target group APIs.
	wrapLBs    func(cloudapi.LoadBalancerAPI) cloudapi.LoadBalancerAPI
	wrapGroups func(cloudapi.TargetGroupAPI) cloudapi.TargetGroupAPI
	// keepLBs hands the sweeper the load balancers to list only
	// (Options.ListedLoadBalancers), as a provider that keeps them on delete does.
	keepLBs bool
	// groupMaxAge is Options.TargetGroupMaxAge; by default the wait of
	// targetgroups.Deletable for a group nothing named is the grace period.
	groupMaxAge time.Duration
	// shares are the options of the load balancers whose ShareKey the sweeper reads
	// shares by; noShares leaves Options.ShareKey nil.
	shares   loadbalancer.Options
	noShares bool
}

// newWorld builds the world; informerObjects are what the informers see, liveObjects
// what a live read of the API answers (nil: the same). The sweeper sweeps the target
// groups when a tweak gives the fake the capability.
func newWorld(t *testing.T, informerObjects, liveObjects []runtime.Object, tweaks ...func(*setup)) *world {
	t.Helper()
	st := setup{config: fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "n1"}, {ID: "i-2", Name: "n2"}}}, groupMaxAge: grace / targetgroups.KeepNew}
	for _, tweak := range tweaks {
		tweak(&st)
	}
	cloud, err := fake.New(st.config)
	require.NoError(t, err)
	faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
	informed := kubefake.NewClientset(informerObjects...)
	live := informed
	if liveObjects != nil {
		live = kubefake.NewClientset(liveObjects...)
	}
	factory := informers.NewSharedInformerFactory(informed, 0)
	t.Cleanup(factory.Shutdown) // after cancel: cleanups run last first
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &world{t: t, cloud: cloud, faults: faults, kube: live, clock: clocktesting.NewFakeClock(time.Unix(1e9, 0)),
		rec: record.NewFakeRecorder(100), swept: map[string]int{}}
	lbs, _ := faults.LoadBalancers()
	if st.wrapLBs != nil {
		lbs = st.wrapLBs(lbs)
	}
	rts, _ := faults.Routes()
	opts := sweeper.Options{
		ClusterID: cluster, GracePeriod: grace, Interval: time.Minute, Clock: w.clock, Recorder: w.rec, TargetGroupMaxAge: st.groupMaxAge,
		OnSwept: func(kind sweeper.Kind, result string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.swept[string(kind)+"/"+result]++
		},
	}
	if groups, ok := cloudapi.TargetGroups(faults); ok {
		opts.TargetGroups = groups
		if st.wrapGroups != nil {
			opts.TargetGroups = st.wrapGroups(groups)
		}
	}
	if !st.noShares {
		st.shares.ClusterID = cluster
		st.shares.ProviderID, err = providerid.Default("ccmkit")
		require.NoError(t, err)
		lb, err := loadbalancer.New(lbs, st.shares)
		require.NoError(t, err)
		opts.ShareKey = lb.ShareKey
	}
	if st.keepLBs {
		opts.ListedLoadBalancers, lbs = lbs, nil
	}
	w.s, err = sweeper.New(lbs, rts, live, factory.Core().V1().Services(), factory.Core().V1().Nodes(), opts)
	require.NoError(t, err)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

// lb creates a load balancer with tags and returns its ID.
func (w *world) lb(name string, tags map[string]string) string {
	w.t.Helper()
	api, _ := w.cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(context.Background(), cloudapi.LoadBalancerSpec{Name: name, Tags: tags})
	require.NoError(w.t, err)
	return lb.ID
}

// route creates a route to instance with tags and returns its ID.
func (w *world) route(cidr, instance string, tags map[string]string) string {
	w.t.Helper()
	api, _ := w.cloud.Routes()
	rt, err := api.CreateRoute(context.Background(), cloudapi.RouteSpec{DestinationCIDR: cidr, TargetInstanceID: instance, Tags: tags})
	require.NoError(w.t, err)
	return rt.ID
}

func (w *world) lbIDs() []string {
	var ids []string
	for _, lb := range w.cloud.Inventory().LoadBalancers {
		ids = append(ids, lb.ID)
	}
	return ids
}

func (w *world) routeIDs() []string {
	var ids []string
	for _, rt := range w.cloud.Inventory().Routes {
		ids = append(ids, rt.ID)
	}
	return ids
}

func (w *world) events() []string {
	var out []string
	for {
		select {
		case ev := <-w.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func owned(uid, svc string) map[string]string {
	return map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagService: uid, cloudapi.TagServiceName: svc}
}

func TestSweepDeletesOnlyOrphansAfterTheGracePeriod(t *testing.T) {
	objs := []runtime.Object{newService("ns", "live", "uid-live"), newService("ns", "renamed", "uid-new"), newNode("n1")}
	w := newWorld(t, objs, nil)
	live := w.lb("live", owned("uid-live", "ns/live"))
	gone := w.lb("gone", owned("uid-gone", "ns/gone"))
	replaced := w.lb("replaced", owned("uid-old", "ns/renamed")) // same name, another UID: gone
	foreign := w.lb("foreign", nil)
	released := w.lb("released", map[string]string{"team": "a"})
	other := w.lb("other", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagService: "uid-gone", cloudapi.TagServiceName: "ns/gone"})
	noName := w.lb("noname", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagService: "uid-x"})
	liveRoute := w.route("10.0.1.0/24", "i-1", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagNode: "n1"})
	goneRoute := w.route("10.0.2.0/24", "i-2", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagNode: "n2"})
	otherRoute := w.route("10.0.3.0/24", "i-2", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagNode: "n2"})
	foreignRoute := w.route("10.0.4.0/24", "i-2", nil)
	w.cloud.ResetCalls()
	ctx := context.Background()

	res, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted, "nothing before the grace period")
	assert.Equal(t, 3, res.Suspects, "gone, replaced and the route of n2")
	assert.Zero(t, w.cloud.Calls().Writes())

	w.clock.Step(grace - time.Second)
	res, err = w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted, "still in the grace period")

	w.clock.Step(time.Second)
	before := w.cloud.Calls()
	res, err = w.s.Sweep(ctx)
	require.NoError(t, err)
	var deleted []string
	for _, r := range res.Deleted {
		deleted = append(deleted, r.ID)
	}
	assert.ElementsMatch(t, []string{gone, replaced, goneRoute}, deleted)
	assert.ElementsMatch(t, []string{live, foreign, released, other, noName}, w.lbIDs())
	assert.ElementsMatch(t, []string{liveRoute, otherRoute, foreignRoute}, w.routeIDs())
	calls := w.cloud.Calls().Sub(before)
	assert.Equal(t, int64(2), calls[cloudapi.OpGetLoadBalancer], "one re-read per orphaned load balancer")
	assert.Equal(t, int64(2), calls[cloudapi.OpDeleteLoadBalancer])
	assert.Equal(t, int64(1), calls[cloudapi.OpDeleteRoute])
	assert.Equal(t, map[string]int{"load_balancer/deleted": 2, "route/deleted": 1}, w.swept)
	events := w.events()
	assert.Len(t, events, 3)
	for _, ev := range events {
		assert.Contains(t, ev, "Normal DeletedOrphaned")
	}
	assert.Zero(t, res.Suspects)

	res, err = w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted)
	assert.Zero(t, res.Suspects)
}

// A Service that the informers lack but the API has (brand new, say) is never gone.
func TestSweepTrustsOnlyALiveReadThatTheOwnerIsGone(t *testing.T) {
	w := newWorld(t, []runtime.Object{}, []runtime.Object{newService("ns", "new", "uid-new"), newNode("n1")})
	lb := w.lb("new", owned("uid-new", "ns/new"))
	rt := w.route("10.0.1.0/24", "i-1", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagNode: "n1"})
	ctx := context.Background()
	_, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	w.clock.Step(grace)
	res, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted)
	assert.Equal(t, []string{lb}, w.lbIDs())
	assert.Equal(t, []string{rt}, w.routeIDs())
	assert.Zero(t, w.cloud.Calls()[cloudapi.OpDeleteLoadBalancer]+w.cloud.Calls()[cloudapi.OpDeleteRoute])
}

func TestSweepErrorsNeverDelete(t *testing.T) {
	apiDown := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		// deletes are the delete calls that reach the cloud (and fail there).
		deletes int64
		failed  map[string]int
	}{
		{name: "live read of the Service fails", setup: func(w *world) {
			w.kube.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, apiDown })
			w.kube.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, apiDown })
		}},
		{name: "cloud lists fail", setup: func(w *world) {
			w.faults.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
			w.faults.Script(cloudapi.OpListRoutes, faultinject.Fault{Kind: faultinject.Throttle})
		}},
		{name: "cloud re-reads fail", setup: func(w *world) {
			w.faults.Script(cloudapi.OpGetLoadBalancer, faultinject.Fault{Kind: faultinject.Timeout})
			w.faults.Script(cloudapi.OpListRoutes, faultinject.Fault{}, faultinject.Fault{Kind: faultinject.Transient})
		}},
		{name: "deletes fail", setup: func(w *world) {
			w.faults.Script(cloudapi.OpDeleteLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
			w.faults.Script(cloudapi.OpDeleteRoute, faultinject.Fault{Kind: faultinject.Throttle})
		}, failed: map[string]int{"load_balancer/failed": 1, "route/failed": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{}, nil)
			lb := w.lb("gone", owned("uid-gone", "ns/gone"))
			rt := w.route("10.0.2.0/24", "i-2", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagNode: "n2"})
			ctx := context.Background()
			_, err := w.s.Sweep(ctx)
			require.NoError(t, err)
			w.clock.Step(grace)
			tc.setup(w)
			res, err := w.s.Sweep(ctx)
			require.Error(t, err)
			assert.Empty(t, res.Deleted)
			assert.Equal(t, []string{lb}, w.lbIDs())
			assert.Equal(t, []string{rt}, w.routeIDs())
			assert.Zero(t, w.cloud.Calls()[cloudapi.OpDeleteLoadBalancer]+w.cloud.Calls()[cloudapi.OpDeleteRoute], "no delete reached the cloud")
			if tc.failed == nil {
				tc.failed = map[string]int{}
			}
			assert.Equal(t, tc.failed, w.swept)
			for _, ev := range w.events() {
				assert.Contains(t, ev, "Warning DeleteOrphanFailed")
			}

			// Once the faults are over, the next sweep deletes them.
			w.kube.ReactionChain = w.kube.ReactionChain[len(w.kube.ReactionChain)-len(kubefake.NewClientset().ReactionChain):]
			res, err = w.s.Sweep(ctx)
			require.NoError(t, err)
			assert.Len(t, res.Deleted, 2)
			assert.Empty(t, w.lbIDs())
			assert.Empty(t, w.routeIDs())
		})
	}
}

// An owner that comes back during the grace period (the informer had not seen it yet)
// restarts the grace period when it goes again.
func TestSweepForgetsASuspectWhoseOwnerIsBack(t *testing.T) {
	w := newWorld(t, []runtime.Object{}, nil)
	w.lb("svc", owned("uid-1", "ns/svc"))
	ctx := context.Background()
	res, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Suspects)
	api, _ := w.cloud.LoadBalancers()
	lbs := w.cloud.Inventory().LoadBalancers
	spec := lbs[0].Spec.Clone()
	spec.Tags[cloudapi.TagService] = "uid-2" // re-owned by a new Service of the same name
	_, err = api.UpdateLoadBalancer(ctx, lbs[0].ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.LoadBalancerChanges{Tags: true}})
	require.NoError(t, err)
	w.clock.Step(grace)
	res, err = w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted, "a new owner UID is a new suspect")
	assert.Equal(t, 1, res.Suspects)
}

func TestSweepWaitsForTheInformers(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0) // never started
	lbs, _ := cloud.LoadBalancers()
	s, err := sweeper.New(lbs, nil, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(), sweeper.Options{ClusterID: cluster})
	require.NoError(t, err)
	_, err = s.Sweep(context.Background())
	require.ErrorContains(t, err, "not synced")
	assert.Zero(t, cloud.Calls().Total())
}

func TestNewRefusesBadOptions(t *testing.T) {
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, err := sweeper.New(nil, nil, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		sweeper.Options{GracePeriod: -1, Interval: -1})
	require.Error(t, err)
	for _, want := range []string{"cluster ID", "grace period", "interval"} {
		assert.ErrorContains(t, err, want)
	}
	var _ kubernetes.Interface = kube
}

// Run sweeps at once, then every interval on its clock, and stops with its context.
func TestRunSweepsEveryInterval(t *testing.T) {
	w := newWorld(t, []runtime.Object{}, nil)
	w.lb("gone", owned("uid-gone", "ns/gone"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.s.Run(ctx)
	}()
	lists := func() int64 { return w.cloud.Calls()[cloudapi.OpListLoadBalancers] }
	// A sweep notes its load balancers' suspects after it has listed them and before it lists
	// the routes, the last thing it lists (this world has none, so nothing reads the clock
	// after that list): the clock is stepped only once a sweep has listed both, else a sweep
	// could note the time of the step after its own and the grace period never pass.
	swept := func(n int64) bool {
		calls := w.cloud.Calls()
		return calls[cloudapi.OpListLoadBalancers] == n && calls[cloudapi.OpListRoutes] == n
	}
	require.Eventually(t, func() bool { return swept(1) }, 10*time.Second, time.Millisecond, "the first sweep at once")
	for sweeps := int64(2); w.clock.Since(time.Unix(1e9, 0)) < grace; sweeps++ {
		w.clock.Step(time.Minute)
		require.Eventually(t, func() bool { return swept(sweeps) }, 10*time.Second, time.Millisecond, "sweep %d", sweeps)
	}
	require.Eventually(t, func() bool { return len(w.lbIDs()) == 0 }, 10*time.Second, time.Millisecond, "deleted once the grace period passed")
	assert.Equal(t, int64(grace/time.Minute)+1, lists(), "one list per sweep")
	cancel()
	<-done
}

// Ownership is the Service's UID: a load balancer whose name tag names no Service (a cloud
// that shortened the tag, a hand edit) belongs to the live Service with its UID.
func TestSweepKeepsALoadBalancerWhoseUIDIsLiveWhateverItsNameTag(t *testing.T) {
	w := newWorld(t, []runtime.Object{newService("ns", "web", "uid-web")}, nil)
	lb := w.lb("web", owned("uid-web", "ns/we"))
	ctx := context.Background()
	_, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	w.clock.Step(grace)
	res, err := w.s.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Deleted)
	assert.Zero(t, res.Suspects)
	assert.Equal(t, []string{lb}, w.lbIDs())
	assert.Zero(t, w.cloud.Calls()[cloudapi.OpDeleteLoadBalancer])
}
