package loadbalancer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/fake"
)

// The service controller's node sync calls UpdateLoadBalancer for every Service in its
// cache that is of type LoadBalancer, a Service being deleted included (nodeSyncService
// checks wantsLoadBalancer only), and it does not lock against the Service's own sync: a
// node sync that listed its cache before web's cleanup calls UpdateLoadBalancer for web
// after EnsureLoadBalancerDeleted succeeded. That call joins web to its share again and
// writes web's listener back on the share's load balancer: a deleted Service's listener,
// forwarding to a node port the API server may give another Service, that nothing removes
// (web gets no more calls), and that keeps the share's load balancer after its last
// Service (api) leaves.
func TestANodeSyncOfADeletedServiceWritesNothingOnItsShare(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	api := newService("api", inShare("front"), withPorts(port("https", corev1.ProtocolTCP, 443, 30443, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, api, e.nodes)

	now := metav1.Now()
	web.DeletionTimestamp = &now
	deleteAsUpstream(t, e, web)
	require.Equal(t, map[string][]int32{"uid-api": {443}}, listenerPorts(e.only(t)), "web's listener went with its cleanup")

	// The node sync, with the cached (deleting) web, after the cleanup; a Node went.
	_ = e.lb.UpdateLoadBalancer(t.Context(), "c", web, e.nodes[:4])
	assert.Equal(t, map[string][]int32{"uid-api": {443}}, listenerPorts(e.only(t)), "a Service being deleted gets no listener back")

	deleteAsUpstream(t, e, api)
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "api was the share's last Service")
}
