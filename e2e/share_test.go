package e2e

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// withPorts gives the Service ports instead of its own.
func withPorts(ports ...corev1.ServicePort) svcTweak {
	return func(s *corev1.Service) { s.Spec.Ports = ports }
}

// tcpPort is a TCP port of a Service, to target port 8080.
func tcpPort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(8080)}
}

// listenerPorts returns the ports of lb's listeners by listener name (on a shared load
// balancer, the owner's UID, ':' and the Service's port name).
func listenerPorts(lb cloudapi.LoadBalancer) map[string]int32 {
	out := map[string]int32{}
	for _, l := range lb.Spec.Listeners {
		out[l.Name] = l.Port
	}
	return out
}

// inFront puts the Service in the share "front" (loadbalancer.AnnotationShare).
var inFront = withAnnotations(lbAnnotation(loadbalancer.AnnotationShare), "front")

// frontTags are the owner tags of the load balancer of share "front" in the default
// namespace.
var frontTags = map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagShare: "default/front"}

// deleteService deletes the Service and waits until it is gone: its load balancer's part
// released (the service controller's finalizer removed after EnsureLoadBalancerDeleted).
func (e *env) deleteService(name string) {
	e.t.Helper()
	require.NoError(e.t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, name, metav1.DeleteOptions{}))
	e.eventually("Service "+name+" gone", func(context.Context) (bool, error) {
		_, err := e.service(name)
		return apierrors.IsNotFound(err), nil
	})
}

// TestServicesShareALoadBalancer: Services that name one share get one load balancer,
// owned by the share, and one address, under the service controller of a real
// kube-apiserver. A port another Service of the share has is left out with a Warning event
// ShareConflict naming that Service while the other ports are added; a Service that asks
// for other settings gets ShareConflict and writes nothing; a restarted CCM writes
// nothing; deleting a Service removes only its listeners (in one write, on a healthy
// cloud; a port it held goes to the Service that asked for it in that write) and the last
// one deletes the load balancer.
func TestServicesShareALoadBalancer(t *testing.T) { forEachMode(t, servicesShareALoadBalancer) }

func servicesShareALoadBalancer(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")

	waitShared := func(what string, cond func(cloudapi.LoadBalancer) bool) cloudapi.LoadBalancer {
		t.Helper()
		return e.waitLBTagged(frontTags, "the share's load balancer: "+what, cond)
	}
	hasListeners := func(want map[string]int32) func(cloudapi.LoadBalancer) bool {
		return func(lb cloudapi.LoadBalancer) bool { return maps.Equal(listenerPorts(lb), want) }
	}

	web := e.createService(newLBService("web", inFront, withPorts(tcpPort("http", 80), tcpPort("https", 443))))
	ssh := e.createService(newLBService("ssh", inFront, withPorts(tcpPort("ssh", 22))))
	listeners := map[string]int32{string(web.UID) + ":http": 80, string(web.UID) + ":https": 443, string(ssh.UID) + ":ssh": 22}
	var lb cloudapi.LoadBalancer
	var ip string
	t.Run("two Services of a share: one load balancer, one address", func(t *testing.T) {
		lb = waitShared("web's and ssh's listeners, targets a and b", func(lb cloudapi.LoadBalancer) bool {
			return lb.Status == cloudapi.LoadBalancerActive && hasListeners(listeners)(lb) && targetsAre("i-0001", "i-0002")(lb)
		})
		require.NotEmpty(t, lb.Addresses)
		ip = lb.Addresses[0]
		assert.Equal(t, ip, e.waitIngress("web").IP, "web publishes the share's address")
		assert.Equal(t, ip, e.waitIngress("ssh").IP, "ssh publishes the same address")
		assert.Len(t, e.cloud.Fake.Inventory().LoadBalancers, 1, "one load balancer in the cloud")
		assert.NotContains(t, lb.Spec.Tags, cloudapi.TagService, "owned by the share, by no Service")
		assert.NotContains(t, lb.Spec.Tags, cloudapi.TagServiceName)
	})

	alt := e.createService(newLBService("alt", inFront, withPorts(tcpPort("http", 80), tcpPort("alt", 8080))))
	listeners[string(alt.UID)+":alt"] = 8080
	t.Run("a port another Service has: ShareConflict naming it, the other port added", func(t *testing.T) {
		e.waitEvent("alt", corev1.EventTypeWarning, "ShareConflict", "80/TCP", "Service default/web")
		lb = waitShared("alt's port 8080 added, not its port 80", hasListeners(listeners))
		assert.Equal(t, ip, e.waitIngress("alt").IP, "alt publishes the share's address")
	})

	t.Run("a Service that disagrees: ShareConflict, nothing changed", func(t *testing.T) {
		before := e.cloud.Fake.Calls()
		e.createService(newLBService("proxy", inFront, withAnnotations(lbAnnotation(loadbalancer.AnnotationProxyProtocol), "true"), withPorts(tcpPort("proxy", 9000))))
		msg := e.waitEvent("proxy", corev1.EventTypeWarning, "ShareConflict", "cannot join the load balancer of its share default/front")
		assert.Regexp(t, `than Service default/(web|ssh|alt);`, msg, "the event names the Service it disagrees with")
		svc, err := e.service("proxy")
		require.NoError(t, err)
		assert.Empty(t, svc.Status.LoadBalancer.Ingress, "no address for a refused Service")
		e.deleteService("proxy")
		calls := e.cloud.Fake.Calls().Sub(before)
		assert.Zero(t, calls.Writes(), "neither the refused Service nor its deletion writes: %v", calls)
		assert.Equal(t, lb.Spec, waitShared("unchanged", hasListeners(listeners)).Spec)
	})

	t.Run("a restarted CCM writes nothing", func(t *testing.T) {
		seen := e.ensuredEvents()
		before := e.cloud.Fake.Calls()
		e.restartCCM()
		e.waitEnsuredAfter(seen, "web", "ssh", "alt")
		calls := e.cloud.Fake.Calls().Sub(before)
		t.Logf("cloud calls of the restarted CCM until it ensured the share's Services: %v", calls)
		assert.Zero(t, calls.Writes(), "a restart on a converged share writes nothing: %v", calls)
		assert.Equal(t, lb.Spec, waitShared("unchanged", hasListeners(listeners)).Spec)
	})

	// leave deletes the Service and checks that the share's load balancer, the same one
	// with the same address, lost the Service's listeners alone, in one write.
	leave := func(svc *corev1.Service, names ...string) {
		t.Helper()
		before := e.cloud.Fake.Calls()
		e.deleteService(svc.Name)
		for _, name := range names {
			delete(listeners, string(svc.UID)+":"+name)
		}
		left := waitShared(svc.Name+"'s listeners removed, the others kept", hasListeners(listeners))
		assert.Equal(t, lb.ID, left.ID, "the same load balancer")
		assert.Equal(t, lb.Addresses, left.Addresses, "with the same address")
		if m.faults {
			return // a write whose answer a fault lost is made again
		}
		calls := e.cloud.Fake.Calls().Sub(before)
		assert.Equal(t, int64(1), calls.Writes(), "one write: %v", calls)
		assert.Equal(t, int64(1), calls[cloudapi.OpUpdateLoadBalancer], calls)
	}
	t.Run("deleting a Service removes only its listeners", func(t *testing.T) {
		leave(ssh, "ssh")
		assert.Equal(t, ip, e.waitIngress("web").IP, "web keeps the address")
		listeners[string(alt.UID)+":http"] = 80 // web's leaving hands port 80 to alt, which asked for it, in the same write
		leave(web, "http", "https")
		assert.Equal(t, ip, e.waitIngress("alt").IP, "alt keeps the address")
	})

	t.Run("the last Service out deletes the load balancer", func(t *testing.T) {
		e.deleteService("alt")
		assert.Empty(t, e.cloud.Fake.Inventory().LoadBalancers)
	})
}
