package loadbalancer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// A port of a share is one Service's at a time: when its holder frees it, however it
// does, the Service waiting for it gets it in the same write; a Service that waits for
// every port it asks for is not ready, and says for whom.

// TestAFreedPortIsHandedOverInTheSameWrite: web holds port 80 of share front and ssh
// waits for it; web frees it by leaving the share, by changing its port, or by changing
// type. The write that frees it gives it to ssh, without a sync of ssh.
func TestAFreedPortIsHandedOverInTheSameWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		free func(t *testing.T, e *env, web *corev1.Service)
	}{
		{"the holder leaves the share", func(t *testing.T, e *env, web *corev1.Service) {
			delete(web.Annotations, prefix+loadbalancer.AnnotationShare)
			e.ensure(t, web, e.nodes)
		}},
		{"the holder changes its port", func(t *testing.T, e *env, web *corev1.Service) {
			web.Spec.Ports[0].Port = 8080
			e.ensure(t, web, e.nodes)
		}},
		{"the holder changes type", func(t *testing.T, e *env, web *corev1.Service) {
			web.Spec.Type = corev1.ServiceTypeClusterIP
			deleteAsUpstream(t, e, web)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{})
			web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
			ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
			e.ensure(t, web, e.nodes)
			_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes) // waits for port 80
			for _, lb := range e.cloud.Inventory().LoadBalancers {
				assert.NotContains(t, listenerPorts(lb), "uid-ssh", "port 80 is web's")
			}

			tc.free(t, e, web)
			var ports []int32
			for _, lb := range e.cloud.Inventory().LoadBalancers {
				ports = append(ports, listenerPorts(lb)["uid-ssh"]...)
			}
			assert.Equal(t, []int32{80}, ports, "ssh has port 80 once web freed it")
		})
	}
}

// TestAMemberWaitingForEveryPortIsNotReady: ssh asks only for port 80, which web holds.
// Its sync fails with ErrPortsTaken naming web, its condition is False with reason
// PortsTaken (not True: nothing of the load balancer serves it), and so it stays on the
// node syncs; once web frees the port, ssh is ready.
func TestAMemberWaitingForEveryPortIsNotReady(t *testing.T) {
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
	k := newKubeEnv(t, fake.Config{}, web, ssh)
	_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", web, k.nodes)
	require.NoError(t, err)

	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "ssh"), k.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrPortsTaken)
	assert.Contains(t, err.Error(), "default/web", "the error names the holder")
	c := readiness(t, k.get(t, "ssh"))
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, loadbalancer.ReasonPortsTaken, c.Reason)
	assert.Contains(t, c.Message, "default/web")

	require.NoError(t, k.lb.UpdateLoadBalancer(t.Context(), "c", k.get(t, "ssh"), k.nodes), "a node sync is no failure of its own")
	assert.Equal(t, loadbalancer.ReasonPortsTaken, readiness(t, k.get(t, "ssh")).Reason, "a node sync does not call ssh ready")

	w := k.get(t, "web")
	w.Spec.Ports[0].Port = 8080
	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", w, k.nodes)
	require.NoError(t, err)
	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "ssh"), k.nodes)
	require.NoError(t, err)
	assert.Equal(t, metav1.ConditionTrue, readiness(t, k.get(t, "ssh")).Status)
}

// TestAWaitingMemberIsNotReadyAfterARestart: after a restart, the first call about ssh,
// which waits for web's port, is a node sync; it must not call ssh ready (it has no
// record of ssh as a member of the share: it judges by what ssh asks for).
func TestAWaitingMemberIsNotReadyAfterARestart(t *testing.T) {
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
	k := newKubeEnv(t, fake.Config{}, web, ssh)
	_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", web, k.nodes)
	require.NoError(t, err)
	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "ssh"), k.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrPortsTaken)

	k.restart(t, func(o *loadbalancer.Options) { o.Services = k.kube.CoreV1(); o.Recorder = k.recorder }, k.cloud)
	require.NoError(t, k.lb.UpdateLoadBalancer(t.Context(), "c", k.get(t, "ssh"), append(k.nodes[:4:4], k.nodes[4])))
	assert.Equal(t, loadbalancer.ReasonPortsTaken, readiness(t, k.get(t, "ssh")).Reason)
}
