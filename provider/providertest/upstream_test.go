package providertest_test

// The scenarios of upstream's controller tests (k8s.io/cloud-provider/controllers/...),
// each run twice through the upstream controller: once over k8s.io/cloud-provider/fake,
// set up as upstream's tests set it up, and once over providertest.New. Both must come to
// the same outcome in Kubernetes; the ccmkit run then checks what the upstream fake
// cannot show: each load balancer's own address, a Node deleted only when its instance
// is gone, and the exact cloud calls.

import (
	"cmp"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	routecontroller "k8s.io/cloud-provider/controllers/route"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	fakecloud "k8s.io/cloud-provider/fake"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the controllers' feature gates, as the CCM registers them

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// clusterName is the cluster name the controllers pass to the cloud: the upstream fake
// keys routes by it; ccmkit uses its config's cluster ID, providertest.DefaultClusterID.
const clusterName = providertest.DefaultClusterID

// eventually waits for what a controller running on its own goroutines does.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 5*time.Millisecond, msg)
}

// ---- Service controller ----

func lbService(name string, ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		// client-go's fake clientset gives objects no UID; ccmkit tags a load balancer
		// with its Service's UID, so the test gives one.
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for i, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: p, NodePort: 30000 + int32(i)})
	}
	return svc
}

func newNode(name, providerID string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

// services is the upstream service controller over a cloud, with one worker (the upstream
// fake writes its Balancers map without a lock), on client-go's fake clientset.
type services struct{ kube *kubefake.Clientset }

func runServiceController(t *testing.T, cloud cloudprovider.Interface) *services {
	t.Helper()
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	ctrl, err := servicecontroller.New(cloud, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(), clusterName, utilfeature.DefaultFeatureGate)
	require.NoError(t, err)
	watching := providertest.WatchesStarted(kube, "services", "nodes")
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("test"))
	}()
	select { // an object created before the watches start would be lost to the controller
	case <-watching:
	case <-time.After(time.Minute):
		t.Fatal("the informers' watches did not start")
	}
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	return &services{kube: kube}
}

func (s *services) get(t *testing.T, name string) *corev1.Service {
	t.Helper()
	svc, err := s.kube.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return svc
}

func (s *services) ingress(t *testing.T, name string) []corev1.LoadBalancerIngress {
	t.Helper()
	return s.get(t, name).Status.LoadBalancer.Ingress
}

// create creates the Services and waits until each has an address.
func (s *services) create(t *testing.T, svcs ...*corev1.Service) {
	t.Helper()
	for _, svc := range svcs {
		_, err := s.kube.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, svc := range svcs {
		eventually(t, func() bool { return len(s.ingress(t, svc.Name)) > 0 }, "the Service "+svc.Name+" gets an address")
	}
}

// addNode adds a Node. The test adds Nodes only once the Services have their addresses:
// the upstream controller's node sync reads its Service cache without the service sync's
// lock (an upstream data race), so the two must not overlap under -race.
func (s *services) addNode(t *testing.T, n *corev1.Node) {
	t.Helper()
	_, err := s.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (s *services) update(t *testing.T, name string, change func(*corev1.Service)) {
	t.Helper()
	svc := s.get(t, name)
	change(svc)
	_, err := s.kube.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// delete deletes a Service as the API server does: it sets the deletion timestamp, waits
// for the service controller to remove its finalizer and the address, then removes the
// Service.
func (s *services) delete(t *testing.T, name string) {
	t.Helper()
	require.Contains(t, s.get(t, name).Finalizers, "service.kubernetes.io/load-balancer-cleanup")
	s.update(t, name, func(svc *corev1.Service) { svc.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
	eventually(t, func() bool {
		svc := s.get(t, name)
		return len(svc.Finalizers) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0
	}, "the service controller lets the Service "+name+" go")
	require.NoError(t, s.kube.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{}))
}

func addPort(svc *corev1.Service) {
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443})
}

// spy records the upstream fake's Ensure and Update calls through its callbacks, which
// run under the fake's locks, so the test reads them safely while the controller runs.
type spy struct {
	mu      sync.Mutex
	ensures []fakecloud.UpdateBalancerCall
	updates []fakecloud.UpdateBalancerCall
}

func (s *spy) counts() (ensures, updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ensures), len(s.updates)
}

func TestServiceControllerEnsureUpdateDelete(t *testing.T) {
	t.Parallel()

	t.Run("k8s.io/cloud-provider/fake", func(t *testing.T) {
		t.Parallel()
		// As upstream's service controller tests set it up: one address for every load
		// balancer, and whether one exists is a flag the test sets.
		cloud := &fakecloud.Cloud{ExternalIP: net.ParseIP("198.51.100.1")}
		cloud.Region = "eu-1"
		var rec spy
		cloud.EnsureCallCb = func(c fakecloud.UpdateBalancerCall) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.ensures = append(rec.ensures, c)
		}
		cloud.UpdateCallCb = func(c fakecloud.UpdateBalancerCall) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.updates = append(rec.updates, c)
		}
		s := runServiceController(t, cloud)

		// Ensure: two Services get an address.
		s.create(t, lbService("web", 80), lbService("api", 80))
		web, api := s.ingress(t, "web"), s.ingress(t, "api")
		assert.Equal(t, "198.51.100.1", web[0].IP)
		assert.Equal(t, web[0].IP, api[0].IP, "the upstream fake gives every load balancer the same address")
		assert.Len(t, cloud.Balancers, 2)
		assert.Equal(t, []string{"create", "get-zone", "create", "get-zone"}, cloud.Calls, "interface methods, not cloud calls")

		// Update: a Node joins; both load balancers are updated with it.
		s.addNode(t, newNode("node-1", "ccmkit://i-1", corev1.ConditionTrue))
		eventually(t, func() bool { _, u := rec.counts(); return u == 2 }, "both load balancers get the Node")
		for _, u := range rec.updates {
			require.Len(t, u.Hosts, 1)
			assert.Equal(t, "node-1", u.Hosts[0].Name)
		}

		// Ensure again: a port is added to web.
		s.update(t, "web", addPort)
		eventually(t, func() bool { in := s.ingress(t, "web"); return len(in) == 1 && len(in[0].Ports) == 2 }, "web's status lists both ports")
		assert.Len(t, cloud.Balancers[cloudprovider.DefaultLoadBalancerName(lbService("web"))].Ports, 2)

		// Delete: the controller deletes only if GetLoadBalancer says it exists, which the
		// upstream fake says of every Service or of none.
		cloud.Exists = true
		s.delete(t, "web")
		assert.Equal(t, "delete", cloud.Calls[len(cloud.Calls)-1])
		assert.Len(t, cloud.Balancers, 2, "the upstream fake cannot show that the load balancer is gone")
	})

	t.Run("providertest", func(t *testing.T) {
		t.Parallel()
		c := providertest.New(t, providertest.WithFake(fake.Config{
			Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}},
		}))
		s := runServiceController(t, c.Provider)
		owned := func(svc string) []cloudapi.LoadBalancer {
			return c.Fake.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-" + svc})
		}

		// Ensure: two Services get an address each, their own.
		s.create(t, lbService("web", 80), lbService("api", 80))
		web, api := s.ingress(t, "web"), s.ingress(t, "api")
		require.Len(t, owned("web"), 1, c.Describe())
		require.Len(t, owned("api"), 1, c.Describe())
		assert.NotEqual(t, web[0].IP, api[0].IP, "every load balancer has its own address")
		assert.Equal(t, owned("web")[0].Addresses[0], web[0].IP)
		assert.Equal(t, owned("api")[0].Addresses[0], api[0].IP)
		assert.Equal(t, corev1.LoadBalancerIPModeVIP, *web[0].IPMode)
		// The first Ensure lists the cluster's load balancers for the snapshot; each looks
		// its Service up by owner tags before it creates.
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 3, cloudapi.OpCreateLoadBalancer: 2}, c.Fake.Calls())

		// Update: a Node joins; both load balancers target its instance, in place.
		c.Fake.ResetCalls()
		s.addNode(t, newNode("node-1", "ccmkit://i-1", corev1.ConditionTrue))
		eventually(t, func() bool {
			return slices.Equal(owned("web")[0].Spec.Targets, []string{"i-1"}) && slices.Equal(owned("api")[0].Spec.Targets, []string{"i-1"})
		}, "both load balancers target the Node's instance")
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 2}, c.Fake.Calls(),
			"one list of the cluster's load balancers, begun after the Node arrived, serves both writes")
		assert.Equal(t, web[0].IP, owned("web")[0].Addresses[0], "the address stays")

		// Ensure again: a port is added to web, in place.
		c.Fake.ResetCalls()
		before := owned("web")[0]
		s.update(t, "web", addPort)
		eventually(t, func() bool { return len(owned("web")[0].Spec.Listeners) == 2 }, "web's load balancer listens on both ports")
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, c.Fake.Calls())
		after := owned("web")[0]
		assert.Equal(t, before.ID, after.ID, "the same load balancer")
		assert.Equal(t, before.Addresses, after.Addresses, "with the same address")
		history := c.Fake.LoadBalancerHistory()
		last := history[len(history)-1]
		assert.True(t, last.ChangesMatch(), "the update described exactly what it changed")
		assert.Len(t, last.Changes.AddListeners, 1)

		// Delete: web's load balancer goes, api's stays.
		c.Fake.ResetCalls()
		s.delete(t, "web")
		assert.Empty(t, owned("web"), c.Describe())
		assert.Len(t, owned("api"), 1)
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpDeleteLoadBalancer: 1}, c.Fake.Calls(),
			"GetLoadBalancer and the delete each read the Service's load balancer by owner tags")
	})
}

// ---- Node lifecycle controller ----

// lifecycleNodes are a Ready Node, a NotReady Node whose instance is stopped and a
// NotReady Node whose instance has vanished.
func lifecycleNodes() *kubefake.Clientset {
	return kubefake.NewClientset(
		newNode("node-1", "ccmkit://i-1", corev1.ConditionTrue),
		newNode("node-2", "ccmkit://i-2", corev1.ConditionFalse),
		newNode("node-3", "ccmkit://i-3", corev1.ConditionFalse),
	)
}

// nodeStates returns each Node's name and whether it has the shutdown taint.
func nodeStates(t *testing.T, kube *kubefake.Clientset) map[string]bool {
	t.Helper()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]bool{}
	for _, n := range list.Items {
		out[n.Name] = slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == cloudproviderapi.TaintNodeShutdown })
	}
	return out
}

func TestNodeLifecycleWithAVanishedInstance(t *testing.T) {
	t.Parallel()

	// The upstream fake answers every Node alike, from three flags: it cannot have one
	// instance stopped and another gone.
	for _, tc := range []struct {
		name  string
		cloud *fakecloud.Cloud
		want  map[string]bool // Node → shutdown taint
	}{
		{
			name:  "ExistsByProviderID false",
			cloud: &fakecloud.Cloud{ExistsByProviderID: false},
			want:  map[string]bool{"node-1": false}, // the stopped instance's Node is deleted too
		},
		{
			name:  "ExistsByProviderID and NodeShutdown true",
			cloud: &fakecloud.Cloud{ExistsByProviderID: true, NodeShutdown: true},
			want:  map[string]bool{"node-1": false, "node-2": true, "node-3": true}, // the vanished instance's Node stays
		},
		{
			name:  "ErrByProviderID",
			cloud: &fakecloud.Cloud{ErrByProviderID: errors.New("cloud down")},
			want:  map[string]bool{"node-1": false, "node-2": false, "node-3": false},
		},
	} {
		t.Run("k8s.io/cloud-provider/fake/"+tc.name, func(t *testing.T) {
			t.Parallel()
			kube := lifecycleNodes()
			providertest.MonitorNodes(t, tc.cloud, kube)
			assert.Equal(t, tc.want, nodeStates(t, kube))
		})
	}

	t.Run("providertest", func(t *testing.T) {
		t.Parallel()
		c := providertest.New(t, providertest.WithFake(fake.Config{Instances: []fake.Instance{
			{ID: "i-1", Name: "node-1"},
			{ID: "i-2", Name: "node-2", State: cloudapi.InstanceStopped},
			// i-3 has vanished.
		}}))
		kube := lifecycleNodes()
		providertest.MonitorNodes(t, c.Provider, kube)
		assert.Equal(t, map[string]bool{"node-1": false, "node-2": true}, nodeStates(t, kube),
			"only the vanished instance's Node is deleted; the stopped one's is tainted")
		assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 1, cloudapi.OpGetInstance: 1}, c.Fake.Calls(),
			"one list for the pass, and one GetInstance confirming that i-3 is gone")
	})

	t.Run("providertest/the cloud fails", func(t *testing.T) {
		t.Parallel()
		c := providertest.New(t,
			providertest.WithFake(fake.Config{Instances: []fake.Instance{
				{ID: "i-1", Name: "node-1"},
				{ID: "i-2", Name: "node-2", State: cloudapi.InstanceStopped},
			}}),
			providertest.WithFaults(faultinject.Config{Rules: []faultinject.Rule{{
				Ops: []cloudapi.Operation{cloudapi.OpListInstances, cloudapi.OpGetInstance}, Probability: 1, Kind: faultinject.Transient,
			}}}))
		kube := lifecycleNodes()
		providertest.MonitorNodes(t, c.Provider, kube)
		assert.Equal(t, map[string]bool{"node-1": false, "node-2": false, "node-3": false}, nodeStates(t, kube),
			"a cloud error is never an instance gone")
		iv2, _ := c.Provider.InstancesV2()
		_, err := iv2.InstanceExists(t.Context(), newNode("node-3", "ccmkit://i-3", corev1.ConditionFalse))
		require.ErrorIs(t, err, cloudapi.ErrTransient, "the error is typed")
		assert.Empty(t, c.Fake.Calls(), "no call reached the cloud")

		// The cloud recovers; once the failed list's backoff has passed, the next pass
		// sees it.
		c.Faults.SetRules(nil)
		c.Advance(30 * time.Second)
		providertest.MonitorNodes(t, c.Provider, kube)
		assert.Equal(t, map[string]bool{"node-1": false, "node-2": true}, nodeStates(t, kube))
		assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 1, cloudapi.OpGetInstance: 1}, c.Fake.Calls())
	})
}

// ---- Route controller ----

var clusterCIDR = &net.IPNet{IP: net.IPv4(10, 244, 0, 0), Mask: net.CIDRMask(16, 32)}

// routeNodes are two Nodes with pod CIDRs. A third, node-3, is gone and its route stale.
func routeNodes() *kubefake.Clientset {
	var objs []*corev1.Node
	for _, n := range []struct{ name, cidr string }{{"node-1", "10.244.1.0/24"}, {"node-2", "10.244.2.0/24"}} {
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec:       corev1.NodeSpec{PodCIDR: n.cidr, PodCIDRs: []string{n.cidr}},
		})
	}
	return kubefake.NewClientset(objs[0], objs[1])
}

// reconcileRoutes runs the upstream route controller until the first reconcile is done
// (one reconcile: the next is an hour away), as cond says, then stops it.
func reconcileRoutes(t *testing.T, routes cloudprovider.Routes, kube *kubefake.Clientset, done func() bool) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(kube, 0)
	rc, err := routecontroller.New(routes, kube, factory.Core().V1().Nodes(), clusterName, []*net.IPNet{clusterCIDR})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		rc.Run(ctx, time.Hour, controllersmetrics.NewControllerManagerMetrics("test"))
	}()
	defer func() {
		cancel()
		<-stopped
		factory.Shutdown()
	}()
	eventually(t, done, "the route controller reconciles")
}

// networkReady reports whether every Node in kube has NetworkUnavailable false, which the
// route controller sets once the Node's routes exist.
func networkReady(kube *kubefake.Clientset) bool {
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, n := range list.Items {
		if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse
		}) {
			return false
		}
	}
	return true
}

type nodeRoute struct{ node, cidr string }

var wantRoutes = []nodeRoute{{"node-1", "10.244.1.0/24"}, {"node-2", "10.244.2.0/24"}}

func TestRouteControllerReconcile(t *testing.T) {
	t.Parallel()

	t.Run("k8s.io/cloud-provider/fake", func(t *testing.T) {
		t.Parallel()
		// As upstream's route controller tests set it up: the test makes the route map
		// (without it, CreateRoute panics) and fills in the routes that exist.
		cloud := &fakecloud.Cloud{RouteMap: map[string]*fakecloud.Route{
			"stale": {ClusterName: clusterName, Route: cloudprovider.Route{Name: "stale", TargetNode: "node-3", DestinationCIDR: "10.244.3.0/24"}},
			"other": {ClusterName: "other", Route: cloudprovider.Route{Name: "other", TargetNode: "node-9", DestinationCIDR: "10.244.9.0/24"}},
		}}
		routes := func() []nodeRoute {
			cloud.Lock.Lock()
			defer cloud.Lock.Unlock()
			var out []nodeRoute
			for _, r := range cloud.RouteMap {
				if r.ClusterName == clusterName {
					out = append(out, nodeRoute{string(r.Route.TargetNode), r.Route.DestinationCIDR})
				}
			}
			slices.SortFunc(out, compareRoutes)
			return out
		}
		kube := routeNodes()
		reconcileRoutes(t, cloud, kube, func() bool { return networkReady(kube) && slices.Equal(routes(), wantRoutes) })
		cloud.Lock.Lock()
		assert.Contains(t, cloud.RouteMap, "other", "another cluster's route stays")
		cloud.Lock.Unlock()

		// A restarted controller on the converged cluster lists and changes nothing.
		calls := func() []string { cloud.Lock.Lock(); defer cloud.Lock.Unlock(); return slices.Clone(cloud.Calls) }
		before := len(calls())
		reconcileRoutes(t, cloud, kube, func() bool { return len(calls()) > before })
		assert.Equal(t, []string{"list-routes"}, calls()[before:])
		assert.Equal(t, wantRoutes, routes())
	})

	t.Run("providertest", func(t *testing.T) {
		t.Parallel()
		c := providertest.New(t, providertest.WithFake(fake.Config{Instances: []fake.Instance{
			{ID: "i-1", Name: "node-1"}, {ID: "i-2", Name: "node-2"}, {ID: "i-3", Name: "node-3"},
		}}))
		// The routes that exist: node-3's, made by ccmkit before node-3 and its instance
		// went (a blackhole now), and one of another cluster to node-1's instance.
		r, _ := c.Provider.Routes()
		require.NoError(t, r.CreateRoute(t.Context(), clusterName, "", &cloudprovider.Route{TargetNode: "node-3", DestinationCIDR: "10.244.3.0/24"}))
		require.NoError(t, c.Fake.DeleteInstance("i-3"))
		api, _ := c.Fake.Routes()
		_, err := api.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.9.0/24", TargetInstanceID: "i-1", Tags: map[string]string{cloudapi.TagCluster: "other"}})
		require.NoError(t, err)
		c.Fake.ResetCalls()

		routes := func() []nodeRoute {
			var out []nodeRoute
			for _, r := range c.Fake.Inventory().RoutesTagged(map[string]string{cloudapi.TagCluster: providertest.DefaultClusterID}) {
				out = append(out, nodeRoute{r.Tags[cloudapi.TagNode], r.DestinationCIDR})
			}
			slices.SortFunc(out, compareRoutes)
			return out
		}
		kube := routeNodes()
		reconcileRoutes(t, r, kube, func() bool { return networkReady(kube) && slices.Equal(routes(), wantRoutes) })
		inv := c.Fake.Inventory()
		assert.Len(t, inv.RoutesTagged(map[string]string{cloudapi.TagCluster: "other"}), 1, "another cluster's route stays")
		for _, rt := range inv.RoutesTagged(map[string]string{cloudapi.TagCluster: providertest.DefaultClusterID}) {
			assert.Equal(t, "i-"+rt.Tags[cloudapi.TagNode][len("node-"):], rt.TargetInstanceID, "each route goes to its Node's instance")
			assert.False(t, rt.Blackhole)
		}
		assert.Equal(t, fake.Calls{cloudapi.OpListRoutes: 1, cloudapi.OpCreateRoute: 2, cloudapi.OpDeleteRoute: 1}, c.Fake.Calls(),
			"one list, a create per Node, the blackhole deleted; the instances from the snapshot")

		// A restarted controller on the converged cluster, once cache.maxAge has passed: one
		// call. (Within it, the provider answers from its snapshot of the route table.)
		c.Fake.ResetCalls()
		c.ExpireSnapshots()
		reconcileRoutes(t, r, kube, func() bool { return c.Fake.Calls()[cloudapi.OpListRoutes] > 0 })
		assert.Equal(t, fake.Calls{cloudapi.OpListRoutes: 1}, c.Fake.Calls(), "a quiet reconcile is one route list")
		assert.Equal(t, wantRoutes, routes())
	})
}

func compareRoutes(a, b nodeRoute) int {
	return cmp.Or(strings.Compare(a.node, b.node), strings.Compare(a.cidr, b.cidr))
}
