package routes_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
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

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/routes"
)

// taglessCloud is a fake cloud whose routes carry no tags, as Hetzner's; the env's pod
// CIDRs are 10.244.0.0/16 and fd00:10:244::/48.
var taglessCloud = fake.Config{Capabilities: fake.Capabilities{TaglessRoutes: true}}

// seed adds a route to the cloud behind ccmkit's back, as a person or another cluster.
func (e *env) seed(t *testing.T, dst, target string) cloudapi.Route {
	t.Helper()
	api, _ := e.cloud.Routes()
	rt, err := api.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: dst, TargetInstanceID: target})
	require.NoError(t, err)
	return *rt
}

func TestTaglessRoutesAreTheClustersByPodCIDRAndNode(t *testing.T) {
	e := newEnv(t, 3, taglessCloud)
	ctx := t.Context()
	require.NoError(t, e.cloud.AddInstance(cloudapi.Instance{ID: "i-bastion", Name: "bastion"}), "an instance that is no Node")
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "hint", route(0, "10.244.0.0/24")))
	require.Empty(t, e.cloud.Inventory().Routes[0].Tags, "the cloud keeps no tags")
	e.seed(t, "10.244.1.0/24", "i-00001") // by hand, but into the pod CIDRs to a Node: the rule cannot tell it apart

	foreign := []struct{ name, dst, target string }{
		{"into the pod CIDRs to an instance that is no Node", "10.244.7.0/24", "i-bastion"},
		{"outside the pod CIDRs to a Node", "10.99.0.0/24", "i-00002"},
		{"another cluster's pod CIDR, to its own instance", "10.245.0.0/24", "i-bastion"},
		{"wider than the pod CIDRs, to a Node", "10.0.0.0/8", "i-00002"},
		{"to an instance that is gone", "10.244.9.0/24", "i-gone"},
	}
	require.NoError(t, e.cloud.AddInstance(cloudapi.Instance{ID: "i-gone", Name: "node-gone"}))
	e.nodes.Store("node-gone", true)
	seeded := map[string]cloudapi.Route{}
	for _, f := range foreign {
		seeded[f.name] = e.seed(t, f.dst, f.target)
	}
	require.NoError(t, e.cloud.DeleteInstance("i-gone"))

	before := e.cloud.Calls()
	got, err := e.routes.ListRoutes(ctx, "c")
	require.NoError(t, err)
	calls := e.cloud.Calls().Sub(before)
	assert.Equal(t, fake.Calls{cloudapi.OpListRoutes: 1}, calls,
		"the targets from the instance snapshot; a blackhole's gone target not asked for (the deletion brake counts such answers)")
	var listed []string
	for _, r := range got {
		listed = append(listed, r.DestinationCIDR+" "+string(r.TargetNode))
	}
	assert.Equal(t, []string{"10.244.0.0/24 node-00000", "10.244.1.0/24 node-00001"}, listed,
		"only the routes into the pod CIDRs to a Node's instance are the cluster's")

	for _, f := range foreign {
		t.Run(f.name, func(t *testing.T) {
			rt := seeded[f.name]
			err := e.routes.DeleteRoute(ctx, "c", &cloudprovider.Route{Name: rt.ID, DestinationCIDR: rt.DestinationCIDR, TargetNode: "node-00002"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), `routes carry no tags, and this one`)
			assert.True(t, slices.ContainsFunc(e.cloud.Inventory().Routes, func(r cloudapi.Route) bool { return r.ID == rt.ID }),
				"a route that is not the cluster's is never deleted")
		})
	}

	err = e.routes.CreateRoute(ctx, "c", "", route(2, "10.99.1.0/24"))
	require.Error(t, err, "a route ccmkit would not know as the cluster's is not created")
	assert.Contains(t, err.Error(), "routes.clusterCIDRs")
	assert.Len(t, e.cloud.Inventory().Routes, 2+len(foreign))
}

func TestTaglessRouteOfAGoneNodeIsDeletedByTheProcessThatKnewIt(t *testing.T) {
	e := newEnv(t, 2, taglessCloud)
	ctx := t.Context()
	require.NoError(t, e.routes.CreateRoute(ctx, "c", "", route(1, "10.244.1.0/24")))
	dsts, _ := e.list(t)
	require.Equal(t, []string{"10.244.1.0/24"}, dsts)

	// The Node and its instance go; the next list no longer finds a Node for the route.
	e.nodes.Delete(nodeName(1))
	require.NoError(t, e.cloud.DeleteInstance("i-00001"))
	e.expire()
	r := e.held(t, "10.244.1.0/24")
	assert.Equal(t, nodeName(1), string(r.TargetNode), "the snapshot knew it as the Node's")
	assert.True(t, r.Blackhole, "the route controller deletes a blackhole")
	require.NoError(t, e.routes.DeleteRoute(ctx, "c", r))
	assert.Empty(t, e.cloud.Inventory().Routes)

	// A process that never knew the route cannot tell it from one made by hand: it keeps it.
	kept := e.seed(t, "10.244.2.0/24", "i-00000")
	e.nodes.Delete(nodeName(0))
	api, _ := e.chaos.Routes()
	fresh, err := routes.New(api, instancecache.New(e.chaos.Instances(), instancecache.Options{}), routes.Options{
		ClusterID: "c1", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, NodeNames: e.nodeNames})
	require.NoError(t, err)
	got, err := fresh.ListRoutes(ctx, "c")
	require.NoError(t, err)
	assert.Empty(t, got)
	require.Error(t, fresh.DeleteRoute(ctx, "c", &cloudprovider.Route{Name: kept.ID, DestinationCIDR: kept.DestinationCIDR}))
	assert.Len(t, e.cloud.Inventory().Routes, 1)
}

func TestTaglessListCostsOneRouteListAndOneNodeList(t *testing.T) {
	e := newEnv(t, 50, taglessCloud)
	for i := range 50 {
		e.seed(t, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24).String(), "i-"+nodeName(i)[5:])
	}
	e.cloud.ResetCalls()
	dsts, lists := e.list(t)
	assert.Len(t, dsts, 50)
	assert.Equal(t, int64(1), lists)
	assert.Equal(t, int64(1), e.cloud.Calls()[cloudapi.OpListInstances], "the instances from one list, not a call per route")
	assert.Zero(t, e.cloud.Calls()[cloudapi.OpGetInstance])
	assert.Equal(t, int64(1), e.nodeLists.Load(), "the Nodes listed once per route list")

	e.expire()
	_, lists = e.list(t)
	assert.Equal(t, int64(1), lists)
	assert.Equal(t, int64(1), e.nodeLists.Load(), "routes known as the cluster's need no Node list")
}

func TestNewRequiresPodCIDRsAndNodesWhenRoutesCarryNoTags(t *testing.T) {
	cloud, err := fake.New(taglessCloud)
	require.NoError(t, err)
	api, _ := cloud.Routes()
	lookup := instancecache.New(cloud.Instances(), instancecache.Options{})
	_, err = routes.New(api, lookup, routes.Options{ClusterID: "c1", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.1/16"), netip.MustParsePrefix("0.0.0.0/0")}})
	require.Error(t, err)
	for _, want := range []string{"NodeNames is required", "10.244.0.1/16 is not a canonical CIDR", "0.0.0.0/0 is not a canonical CIDR"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = routes.New(api, lookup, routes.Options{ClusterID: "c1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ClusterCIDRs are required")
}

// TestRouteControllerOverTaglessRoutes runs the upstream route controller, which deletes
// every route in its cluster CIDR that it does not want, over routes that carry no tags:
// the Nodes get their routes, a Node that goes loses its route also when the route table
// was listed after its instance went (and the route no longer leads to a Node), and the
// routes that are not the cluster's (one into the pod CIDR to an instance that is no
// Node, one outside it) are never touched.
func TestRouteControllerOverTaglessRoutes(t *testing.T) {
	const n = 3
	e := newEnv(t, n, taglessCloud)
	require.NoError(t, e.cloud.AddInstance(cloudapi.Instance{ID: "i-bastion", Name: "bastion"}))
	foreign := []cloudapi.Route{e.seed(t, "10.244.100.0/24", "i-bastion"), e.seed(t, "10.99.0.0/24", "i-00001")}

	kube := kubefake.NewClientset()
	for i := range n {
		cidr := fmt.Sprintf("10.244.%d.0/24", i)
		_, err := kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)},
			Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, clusterCIDR, _ := net.ParseCIDR("10.244.0.0/16")
	rc, err := routecontroller.New(e.routes, kube, factory.Core().V1().Nodes(), "c", []*net.IPNet{clusterCIDR})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	go rc.Run(ctx, 50*time.Millisecond, controllersmetrics.NewControllerManagerMetrics("test"))

	dsts := func() []string {
		var out []string
		for _, r := range e.cloud.Inventory().Routes {
			out = append(out, r.DestinationCIDR)
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool { return len(dsts()) == n+len(foreign) }, time.Minute, 20*time.Millisecond, "a route for every Node")

	relisted := func() {
		t.Helper()
		before := e.cloud.Calls()[cloudapi.OpListRoutes]
		e.expire()
		require.Eventually(t, func() bool { return e.cloud.Calls()[cloudapi.OpListRoutes] > before }, time.Minute, 10*time.Millisecond)
	}

	// Instance 1 goes and the route table is listed again before the node lifecycle
	// controller deletes Node 1: the route, which no longer leads to a Node, is still the
	// cluster's, a blackhole the route controller deletes.
	require.NoError(t, e.cloud.DeleteInstance("i-00001"))
	e.nodes.Delete(nodeName(1))
	relisted()
	require.NoError(t, kube.CoreV1().Nodes().Delete(t.Context(), nodeName(1), metav1.DeleteOptions{}))
	want := []string{"10.244.0.0/24", "10.244.100.0/24", "10.244.2.0/24", "10.99.0.0/24"}
	require.Eventually(t, func() bool { return slices.Equal(dsts(), want) }, time.Minute, 20*time.Millisecond, "the gone Node's route deleted, no other")
	relisted()
	assert.Equal(t, want, dsts(), "the routes that are not the cluster's are never deleted")
}

// TestTaglessFirstListFillsTheInstanceSnapshotOnce: over a table without tags, the
// process's first route list lists the instances (before the table, so that an adapter
// may answer the table's gateways from that list: examples/hcloud's
// TestQuietProjectWithRoutesCalls checks the order), once: not a table with tags, not again while the
// table's list keeps failing (a misnamed network would otherwise cost a list of every
// instance a minute), and not again after a list succeeded.
func TestTaglessFirstListFillsTheInstanceSnapshotOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     fake.Config
		failing bool
		want    int64 // instance lists in 10 minutes of a route list every 10 s
	}{
		{"tagless", taglessCloud, false, 1},
		{"tagless, the table's list failing", taglessCloud, true, 1},
		{"tagged", fake.Config{}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3, tc.cfg)
			if tc.failing {
				e.chaos.SetRules([]faultinject.Rule{{Ops: []cloudapi.Operation{cloudapi.OpListRoutes}, Probability: 1, Kind: faultinject.Refuse}})
			}
			before := e.cloud.Calls()
			for range 60 {
				_, err := e.routes.ListRoutes(t.Context(), "c")
				require.Equal(t, tc.failing, err != nil, "%v", err)
				e.clock.Step(10 * time.Second)
			}
			assert.Equal(t, tc.want, e.cloud.Calls().Sub(before)[cloudapi.OpListInstances])
		})
	}
}
