package provider

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// TestANewNodeIsATargetBeforeTheNodeControllerLooksItUp: a node sync that reaches
// UpdateLoadBalancer with a new Node before the cloud node controller's lookup of it
// (the Node has no provider ID, and the instance snapshot predates its instance) targets
// it at once, on the one instance list the node controller's lookup then finds it in:
// no call more than when that lookup comes first, none of them a GetInstance.
func TestANewNodeIsATargetBeforeTheNodeControllerLooksItUp(t *testing.T) {
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{
		{ID: "i-1", Name: "node-1", Zone: "z"}, {ID: "i-2", Name: "node-2", Zone: "z"},
	}})
	require.NoError(t, err)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := Config{Cluster: ClusterConfig{ID: "c"}, Cache: CacheConfig{MaxAge: time.Minute}}
	p, err := New(cfg, cloud, Options{Metrics: metrics.NewKubeRegistry(), Clock: clock})
	require.NoError(t, err)
	iv2, ok := p.InstancesV2()
	require.True(t, ok)
	lb, ok := p.LoadBalancer()
	require.True(t, ok)
	node := func(name, providerID string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	nodes := []*corev1.Node{node("node-1", "ccmkit://i-1"), node("node-2", "ccmkit://i-2")}
	for _, n := range nodes {
		_, err := iv2.InstanceMetadata(t.Context(), n)
		require.NoError(t, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		}},
	}
	_, err = lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
	require.NoError(t, err)

	require.NoError(t, cloud.AddInstance(cloudapi.Instance{ID: "i-3", Name: "node-3", Zone: "z", State: cloudapi.InstanceRunning}))
	clock.Step(time.Second) // the kubelet registers the Node after the last instance list
	registered := node("node-3", "")
	before := cloud.Calls()
	require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "c", svc, append(nodes, registered)))
	calls := cloud.Calls().Sub(before)
	assert.EqualValues(t, 1, calls[cloudapi.OpListInstances], "one instance list, for the new Node")
	assert.Zero(t, calls[cloudapi.OpGetInstance])
	inv := cloud.Inventory()
	require.Len(t, inv.LoadBalancers, 1)
	assert.Contains(t, inv.LoadBalancers[0].Spec.Targets, "i-3", "a target from the first node sync's call")

	before = cloud.Calls()
	md, err := iv2.InstanceMetadata(t.Context(), registered)
	require.NoError(t, err)
	assert.Equal(t, "ccmkit://i-3", md.ProviderID)
	assert.Empty(t, cloud.Calls().Sub(before), "the node controller's lookup finds the instance in that list")

	before = cloud.Calls()
	require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "c", svc, append(nodes, registered)))
	assert.Empty(t, cloud.Calls().Sub(before), "the same node set again: nothing to write, no list")
	// Nodes that no instance is named after (a Node whose name is not its instance's,
	// without spec.providerID: it never gets a provider ID) cost one instance list for
	// the names asked about at once, and none again within cache.maxAge, however many
	// node syncs hand them over.
	clock.Step(2 * time.Second)
	before = cloud.Calls()
	stray := []*corev1.Node{node("stray-1", ""), node("stray-2", ""), node("stray-3", "")}
	require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "c", svc, append(append(nodes, registered), stray...)))
	for range 3 {
		clock.Step(2 * time.Second)
		stray = append(stray[1:], stray[0]) // another node set each time: a new arrival
		require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "c", svc, append(append(nodes, registered), stray...)))
	}
	assert.EqualValues(t, 1, cloud.Calls().Sub(before)[cloudapi.OpListInstances])
	clock.Step(time.Minute)
	before = cloud.Calls()
	require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "c", svc, append(append(nodes, registered), stray...)))
	assert.EqualValues(t, 1, cloud.Calls().Sub(before)[cloudapi.OpListInstances], "cache.maxAge later: one list again")
}
