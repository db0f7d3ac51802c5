package loadbalancer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// A wrong project whose first list of the cluster's load balancers failed once (a 503 at
// start-up): the snapshot's backoff then answers "do not know" for every other Service,
// recreations counts each unknown owner as having its load balancer, and the count is
// kept for MaxAge. The brake promises that with a Services client a wrong project is held
// from its first create; instead half the Services (Share) get new addresses.
func TestTheCreationBrakeHoldsAWrongProjectAfterAFailedList(t *testing.T) {
	svcs := numbered("web", 20, func(i int, s *corev1.Service) { addressed(fmt.Sprintf("203.0.113.%d", i+1))(s) })
	var chaos *faultinject.Client
	e, _, _, _ := brakeEnv(t, fake.Config{}, svcs, true, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	chaos.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
	for _, svc := range svcs {
		_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	}
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "twenty Services of a wrong project: none gets a new address")
}

// Three Services leave their share at once (each wants its own load balancer again): each
// asked for a new load balancer, as a Service that asks for a replacement does, which the
// brake never holds (docs/operating.md). The brake counts them as three re-creations of
// three, more than half, and holds the first, with a message that blames the project.
func TestServicesLeavingTheirShareAreNotHeldByTheCreationBrake(t *testing.T) {
	svcs := numbered("web", 3, func(i int, s *corev1.Service) {
		inShare("front")(s)
		s.Spec.Ports = []corev1.ServicePort{port("http", corev1.ProtocolTCP, int32(80+i), int32(30080+i), "")}
	})
	e, _, held, clientset := brakeEnv(t, fake.Config{}, svcs, true)
	for _, svc := range svcs {
		e.ensure(t, svc, e.nodes)
	}
	addr := e.only(t).Addresses[0]
	for _, svc := range svcs {
		addressed(addr)(svc)
		delete(svc.Annotations, prefix+loadbalancer.AnnotationShare)
		require.NoError(t, clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), svc, svc.Namespace))
	}
	for _, svc := range svcs {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		assert.NoError(t, err, "Service %s left its share", svc.Name)
	}
	assert.Zero(t, *held)
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 3)
}

// Four Services switch to internal at once (or an operator changes the default of a
// setting the adapter declares Replace): each replacement deletes the Service's load
// balancer, then creates the new one, which the cloud throttles this time. The retries
// find no load balancer and a published address: the brake counts four "re-creations"
// of four and holds them, so the Services, their old load balancers already gone, stay
// without any until someone acknowledges each, told that the project may be wrong. A
// replacement the Service asked for is never to be held (docs/operating.md).
func TestAReplacementWhoseCreateFailedIsNotHeld(t *testing.T) {
	svcs := numbered("web", 4)
	var chaos *faultinject.Client
	e, _, _, clientset := brakeEnv(t, fake.Config{}, svcs, true, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	for _, svc := range svcs {
		st := e.ensure(t, svc, e.nodes)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: st.Ingress[0].IP}}
		require.NoError(t, clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), svc, svc.Namespace))
	}
	for _, svc := range svcs {
		svc.Annotations[prefix+loadbalancer.AnnotationInternal] = "true"
		require.NoError(t, clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), svc, svc.Namespace))
		chaos.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Kind: faultinject.Throttle})
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.Error(t, err, "the create after the delete is throttled")
	}
	for _, svc := range svcs {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		assert.NoError(t, err, "the retry of %s's replacement", svc.Name)
	}
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 4)
}
