package loadbalancer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// brakeOn is the creation brake at the deletion brake's defaults.
var brakeOn = loadbalancer.CreationBrake{Window: 10 * time.Minute, Share: 0.5, Minimum: 2}

// addressed gives the Service address ip in its status, as a load balancer made before
// left it.
func addressed(ip string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
}

// numbered returns n Services named name-i, each with its own UID, tweaked.
func numbered(name string, n int, tweaks ...func(i int, s *corev1.Service)) []*corev1.Service {
	out := make([]*corev1.Service, n)
	for i := range out {
		out[i] = newService(fmt.Sprintf("%s-%d", name, i), func(s *corev1.Service) { s.UID = types.UID(fmt.Sprintf("uid-%s-%d", name, i)) })
		for _, tw := range tweaks {
			tw(i, out[i])
		}
	}
	return out
}

// brakeEnv is an env with the creation brake on, over a cloud seeded by cfg and wrapped by
// wrap, and, when withClient, a Services client holding services.
func brakeEnv(t *testing.T, cfg fake.Config, services []*corev1.Service, withClient bool, wrap ...func(cloudapi.Client) cloudapi.Client) (*env, *record.FakeRecorder, *int, *k8sfake.Clientset) {
	t.Helper()
	objs := make([]runtime.Object, len(services))
	for i, s := range services {
		objs[i] = s
	}
	rec := record.NewFakeRecorder(1000)
	held := new(int)
	clientset := k8sfake.NewClientset(objs...)
	e := newEnvWith(t, cfg, func(o *loadbalancer.Options) {
		o.CreationBrake = brakeOn
		o.OnCreationHeld = func() { *held++ }
		o.Recorder = rec
		if withClient {
			o.Services = clientset.CoreV1()
		}
	}, wrap...)
	return e, rec, held, clientset
}

// TestTheCreationBrakeHoldsAWrongProject: twenty Services publish addresses, but the cloud
// (another project) has none of their load balancers. With a Services client the brake
// sees twenty re-creations at once, more than half of twenty, and holds the first; without
// one it lets Minimum (2) through and holds the rest. Nothing is created past the brake,
// each hold is a Warning event, a counted hold and an error matching ErrCreationHeld that
// says how to go on.
func TestTheCreationBrakeHoldsAWrongProject(t *testing.T) {
	for _, tc := range []struct {
		withClient bool
		created    int
	}{{withClient: true, created: 0}, {withClient: false, created: 2}} {
		t.Run(fmt.Sprintf("services client %v", tc.withClient), func(t *testing.T) {
			svcs := numbered("web", 20, func(i int, s *corev1.Service) { addressed(fmt.Sprintf("203.0.113.%d", i+1))(s) })
			e, rec, held, _ := brakeEnv(t, fake.Config{}, svcs, tc.withClient)
			var errs []error
			for _, svc := range svcs {
				_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
				errs = append(errs, err)
			}
			assert.Len(t, e.cloud.Inventory().LoadBalancers, tc.created)
			for _, err := range errs[tc.created:] {
				require.ErrorIs(t, err, loadbalancer.ErrCreationHeld)
				assert.Contains(t, err.Error(), loadbalancer.AnnotationAcknowledgeNewLoadBalancer, "the error says how to let it pass")
			}
			assert.Equal(t, 20-tc.created, *held)
			assert.Len(t, eventsWith(rec, loadbalancer.ReasonCreationHeld), 20-tc.created)
		})
	}
}

// TestTheCreationBrakeLetsFreshServicesAndOneLostLoadBalancerThrough: Services without an
// address are never held, however many; a Service whose load balancer alone is gone (one
// of twenty) gets a new one.
func TestTheCreationBrakeLetsFreshServicesAndOneLostLoadBalancerThrough(t *testing.T) {
	fresh := numbered("new", 20)
	e, _, held, clientset := brakeEnv(t, fake.Config{}, fresh, true)
	for _, svc := range fresh {
		e.ensure(t, svc, e.nodes)
	}
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 20)
	assert.Zero(t, *held)

	// Their addresses are published; one load balancer is deleted behind ccmkit's back.
	for i, svc := range fresh {
		addressed(fmt.Sprintf("203.0.113.%d", i+1))(svc)
		require.NoError(t, clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), svc, svc.Namespace))
	}
	api, _ := e.cloud.LoadBalancers()
	require.NoError(t, api.DeleteLoadBalancer(t.Context(), e.cloud.Inventory().LoadBalancers[0].ID))
	e.expire()
	for _, svc := range fresh {
		e.ensure(t, svc, e.nodes)
	}
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 20, "the lost load balancer is made again")
	assert.Zero(t, *held)
}

// TestAnAcknowledgedServicePassesTheCreationBrake: of the held Services of a wrong
// project, the one annotated with the address it gives up gets a new load balancer; the
// annotation acknowledges nothing once the status holds another address.
func TestAnAcknowledgedServicePassesTheCreationBrake(t *testing.T) {
	svcs := numbered("web", 10, func(i int, s *corev1.Service) { addressed(fmt.Sprintf("203.0.113.%d", i+1))(s) })
	svcs[3].Annotations[loadbalancer.AnnotationAcknowledgeNewLoadBalancer] = "203.0.113.4"
	svcs[4].Annotations[loadbalancer.AnnotationAcknowledgeNewLoadBalancer] = "198.51.100.1" // not its address
	e, _, _, _ := brakeEnv(t, fake.Config{}, svcs, true)
	for i, svc := range svcs {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		if i == 3 {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, loadbalancer.ErrCreationHeld, "Service %s", svc.Name)
	}
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1)
}

// eventsWith returns the events the recorder holds whose text has s.
func eventsWith(rec *record.FakeRecorder, s string) []string {
	var out []string
	for _, e := range events(rec) {
		if strings.Contains(e, s) {
			out = append(out, e)
		}
	}
	return out
}
