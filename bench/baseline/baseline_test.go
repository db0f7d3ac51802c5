package baseline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/bench/baseline"
	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

func newCloud(t *testing.T, n int) (*fake.Cloud, *baseline.Cloud) {
	t.Helper()
	cfg := fake.Config{PageSize: 2}
	for i := range n {
		cfg.Instances = append(cfg.Instances, fake.Instance{
			ID: fmt.Sprintf("i-%d", i), Name: fmt.Sprintf("node-%d", i), Type: "small", Zone: "z1",
			Addresses: []fake.Address{{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("10.0.0.%d", i+1)}},
		})
	}
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	p, err := baseline.New(cloud, baseline.Options{ClusterID: "c1"})
	require.NoError(t, err)
	return cloud, p
}

type nodeTweak func(*corev1.Node)

func withProviderID(id string) nodeTweak { return func(n *corev1.Node) { n.Spec.ProviderID = id } }

func newNode(name string, tweaks ...nodeTweak) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, tw := range tweaks {
		tw(n)
	}
	return n
}

func TestNewNeedsClientAndClusterID(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	_, err = baseline.New(nil, baseline.Options{ClusterID: "c"})
	assert.ErrorContains(t, err, "cloud client")
	_, err = baseline.New(cloud, baseline.Options{})
	assert.ErrorContains(t, err, "cluster ID")
}

func TestInstanceLookupsCallTheCloudEveryTime(t *testing.T) {
	tests := []struct {
		name      string
		node      *corev1.Node
		wantCalls fake.Calls
		wantID    string
	}{
		{"by provider ID: one GetInstance", newNode("node-4", withProviderID("baseline://i-4")), fake.Calls{cloudapi.OpGetInstance: 1}, "baseline://i-4"},
		{"by name: a list of every page", newNode("node-4"), fake.Calls{cloudapi.OpListInstances: 3}, "baseline://i-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud, p := newCloud(t, 5)
			iv2, ok := p.InstancesV2()
			require.True(t, ok)
			for range 2 {
				md, err := iv2.InstanceMetadata(context.Background(), tt.node)
				require.NoError(t, err)
				assert.Equal(t, tt.wantID, md.ProviderID)
				assert.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}, md.NodeAddresses)
				assert.Equal(t, "z1", md.Zone)
			}
			want := fake.Calls{}
			for op, n := range tt.wantCalls {
				want[op] = 2 * n
			}
			assert.Equal(t, want, cloud.Calls(), "no cache: the second lookup costs as much as the first")
		})
	}
}

func TestInstanceStates(t *testing.T) {
	cloud, p := newCloud(t, 3)
	require.NoError(t, cloud.SetInstanceState("i-1", cloudapi.InstanceStopped))
	require.NoError(t, cloud.DeleteInstance("i-2"))
	iv2, _ := p.InstancesV2()
	ctx := context.Background()
	tests := []struct {
		node         *corev1.Node
		exists       bool
		shutdown     bool
		shutdownErr  error
		metadataGone bool
	}{
		{node: newNode("node-0", withProviderID("baseline://i-0")), exists: true},
		{node: newNode("node-1", withProviderID("baseline://i-1")), exists: true, shutdown: true},
		{node: newNode("node-2", withProviderID("baseline://i-2")), shutdownErr: cloudprovider.InstanceNotFound, metadataGone: true},
		{node: newNode("node-9"), shutdownErr: cloudprovider.InstanceNotFound, metadataGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.node.Name, func(t *testing.T) {
			exists, err := iv2.InstanceExists(ctx, tt.node)
			require.NoError(t, err)
			assert.Equal(t, tt.exists, exists)
			shutdown, err := iv2.InstanceShutdown(ctx, tt.node)
			assert.ErrorIs(t, err, tt.shutdownErr)
			assert.Equal(t, tt.shutdown, shutdown)
			_, err = iv2.InstanceMetadata(ctx, tt.node)
			if tt.metadataGone {
				assert.ErrorIs(t, err, cloudprovider.InstanceNotFound)
			} else {
				assert.NoError(t, err)
			}
		})
	}
	_, err := iv2.InstanceExists(ctx, newNode("x", withProviderID("other://i-0")))
	assert.ErrorContains(t, err, "baseline://")
}

func TestLoadBalancerWritesOnEveryCall(t *testing.T) {
	cloud, p := newCloud(t, 3)
	lb, ok := p.LoadBalancer()
	require.True(t, ok)
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-1")},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	nodes := []*corev1.Node{newNode("node-0", withProviderID("baseline://i-0")), newNode("node-1", withProviderID("baseline://i-1")), newNode("node-x")}

	st, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes)
	require.NoError(t, err)
	require.Len(t, st.Ingress, 1)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpCreateLoadBalancer: 1}, cloud.Calls())

	steps := []struct {
		name string
		call func() error
	}{
		{"converged EnsureLoadBalancer", func() error { _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes); return err }},
		{"UpdateLoadBalancer with the same nodes", func() error { return lb.UpdateLoadBalancer(ctx, "c", svc, nodes) }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := cloud.Calls()
			require.NoError(t, s.call())
			assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, cloud.Calls().Sub(before), "a read-modify-write, also when nothing changed")
		})
	}

	require.NoError(t, lb.UpdateLoadBalancer(ctx, "c", svc, nodes[:1]))
	lbs := cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-1"})
	require.Len(t, lbs, 1)
	assert.Equal(t, []string{"i-0"}, lbs[0].Spec.Targets)
	assert.Equal(t, []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}, lbs[0].Spec.Listeners)
	assert.Equal(t, st.Ingress[0].IP, lbs[0].Addresses[0])

	got, exists, err := lb.GetLoadBalancer(ctx, "c", svc)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, st, got)

	require.NoError(t, lb.EnsureLoadBalancerDeleted(ctx, "c", svc))
	assert.Empty(t, cloud.Inventory().LoadBalancers)
	assert.ErrorIs(t, lb.UpdateLoadBalancer(ctx, "c", svc, nodes), cloudapi.ErrNotFound)
}

func TestRoutes(t *testing.T) {
	cloud, p := newCloud(t, 3)
	r, ok := p.Routes()
	require.True(t, ok)
	ctx := context.Background()

	require.NoError(t, r.CreateRoute(ctx, "c", "hint", &cloudprovider.Route{TargetNode: "node-2", DestinationCIDR: "10.244.2.0/24"}))
	assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 2, cloudapi.OpCreateRoute: 1}, cloud.Calls(), "the instance is found by name in a list")
	assert.ErrorIs(t, r.CreateRoute(ctx, "c", "", &cloudprovider.Route{TargetNode: "node-9", DestinationCIDR: "10.244.9.0/24"}), cloudapi.ErrNotFound)
	assert.ErrorContains(t, r.CreateRoute(ctx, "c", "", &cloudprovider.Route{TargetNode: "node-1", DestinationCIDR: "nope"}), "not a CIDR")

	routes, err := r.ListRoutes(ctx, "c")
	require.NoError(t, err)
	require.Len(t, routes, 1)
	assert.Equal(t, types.NodeName("node-2"), routes[0].TargetNode)
	assert.Equal(t, "10.244.2.0/24", routes[0].DestinationCIDR)

	require.NoError(t, r.DeleteRoute(ctx, "c", routes[0]))
	require.NoError(t, r.DeleteRoute(ctx, "c", routes[0]), "a route that is gone is deleted")
	routes, err = r.ListRoutes(ctx, "c")
	require.NoError(t, err)
	assert.Empty(t, routes)
}
