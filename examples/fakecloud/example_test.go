package fakecloud_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// The cloud, in YAML as in a cloud config file (or in Go with providertest.WithFake).
const cloud = `
fake:
  instances:
    - {id: i-1, name: node-1, zone: eu-1a, addresses: [{type: InternalIP, address: 10.0.0.1}]}
    - {id: i-2, name: node-2, zone: eu-1b, addresses: [{type: InternalIP, address: 10.0.0.2}]}
`

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		// A fake clientset gives no UID; ccmkit needs one to own the load balancer.
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
}

// Two Services, two load balancers, each with its own address; a second Ensure of a
// converged load balancer costs no cloud call.
func TestLoadBalancers(t *testing.T) {
	c := providertest.New(t, providertest.WithYAML(cloud))
	lb, _ := c.Provider.LoadBalancer() // every sub-interface is on
	nodes := []*corev1.Node{node("node-1", "ccmkit://i-1"), node("node-2", "ccmkit://i-2")}

	web, err := lb.EnsureLoadBalancer(t.Context(), "test", service("web"), nodes)
	require.NoError(t, err)
	api, err := lb.EnsureLoadBalancer(t.Context(), "test", service("api"), nodes)
	require.NoError(t, err)
	assert.NotEqual(t, web.Ingress[0].IP, api.Ingress[0].IP)

	inv := c.Fake.Inventory()
	require.Len(t, inv.LoadBalancers, 2, c.Describe()) // c.Describe(): the whole cloud, if it fails
	assert.Equal(t, []string{"i-1", "i-2"}, inv.LoadBalancers[0].Spec.Targets)

	before := c.Fake.Calls()
	_, err = lb.EnsureLoadBalancer(t.Context(), "test", service("web"), nodes)
	require.NoError(t, err)
	assert.Empty(t, c.Fake.Calls().Sub(before), "nothing to change, nothing asked")
}

// An instance deleted behind the provider's back is gone once ccmkit's snapshot is
// refreshed; a failing cloud is an error, never "gone".
func TestInstanceGone(t *testing.T) {
	c := providertest.New(t, providertest.WithYAML(cloud), providertest.WithFaults(faultinject.Config{}))
	instances, _ := c.Provider.InstancesV2()
	n := node("node-2", "ccmkit://i-2")

	require.NoError(t, c.Fake.DeleteInstance("i-2"))
	c.Faults.Script(cloudapi.OpListInstances, faultinject.Fault{Kind: faultinject.Transient})
	c.Faults.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Transient})
	_, err := instances.InstanceExists(t.Context(), n)
	require.ErrorIs(t, err, cloudapi.ErrTransient)

	c.ExpireSnapshots() // time stands still for ccmkit until the test moves it
	exists, err := instances.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 1, cloudapi.OpGetInstance: 1}, c.Fake.Calls())
}
