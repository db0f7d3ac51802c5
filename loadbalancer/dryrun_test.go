package loadbalancer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// plan runs Plan and checks that it wrote nothing: no cloud write, no event.
func (e *env) plan(t *testing.T, rec *record.FakeRecorder, svc *corev1.Service) loadbalancer.ServicePlan {
	t.Helper()
	before := e.cloud.Calls()
	p, err := e.lb.Plan(t.Context(), svc, e.nodes)
	require.NoError(t, err)
	calls := e.cloud.Calls().Sub(before)
	assert.Zero(t, calls.Writes(), "Plan writes nothing to the cloud: %v", calls)
	if rec != nil {
		assert.Empty(t, events(rec), "Plan records no event")
	}
	return p
}

// TestPlanOwnLoadBalancer: the Service's own load balancer is unchanged when it matches,
// and a port added is one listener to add, addresses kept; the sync then does what the
// plan said.
func TestPlanOwnLoadBalancer(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withTakeover(rec))
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	own := e.only(t)
	events(rec)

	p := e.plan(t, rec, svc)
	assert.Equal(t, loadbalancer.PlanUnchanged, p.Action)
	assert.Equal(t, own.ID, p.LoadBalancerID)
	assert.Empty(t, p.Parts())

	changed := newService("web", withPorts(
		corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}))
	p = e.plan(t, rec, changed)
	assert.Equal(t, loadbalancer.PlanUpdate, p.Action)
	assert.Equal(t, own.Addresses, p.Addresses)
	assert.False(t, p.NewAddress())
	assert.Equal(t, []string{"listener 443/TCP: add (to node port 30443)"}, p.Parts())

	e.ensure(t, changed, e.nodes)
	assert.Equal(t, p.Want.Listeners, e.only(t).Spec.Listeners, "the sync writes what the plan said")
}

// TestPlanTakeoverByMark: a Service without annotations would take over the load
// balancer the earlier cloud-controller-manager marked, keeping its addresses and its
// health check; the sync then writes exactly the plan's spec.
func TestPlanTakeoverByMark(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withTakeover(rec))
	old := e.marked(t, "uid-web", nil)
	svc := newService("web")

	p := e.plan(t, rec, svc)
	assert.Equal(t, loadbalancer.PlanTakeover, p.Action)
	assert.Equal(t, old.ID, p.LoadBalancerID)
	assert.Equal(t, old.Addresses, p.Addresses)
	assert.Equal(t, "marked "+earlierTag+"=uid-web by the earlier cloud-controller-manager", p.By)
	assert.False(t, p.Changes.HealthCheck, "the earlier health check is kept")
	assert.Equal(t, earlierHealthCheck, p.Want.HealthCheck)
	assert.Contains(t, p.Parts(), "listener 80/TCP: add (to node port 30080)")
	assert.Contains(t, p.Parts(), "listener 443/TCP: remove")
	assert.Contains(t, p.Parts(), "targets: add i-0, i-1, i-2, i-3, i-4")
	require.NotEmpty(t, p.Parts())
	assert.Contains(t, p.Parts()[len(p.Parts())-1], "+"+cloudapi.TagService+"=uid-web")
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1, "nothing created")

	e.ensure(t, svc, e.nodes)
	lb := e.only(t)
	assert.Equal(t, old.ID, lb.ID)
	assert.Equal(t, p.Want.Listeners, lb.Spec.Listeners)
	assert.Equal(t, p.Want.Tags, lb.Spec.Tags)
	assert.Equal(t, p.Want.HealthCheck, lb.Spec.HealthCheck)
}

// TestPlanAdoptByID: a Service whose load-balancer-id annotation names a load balancer
// would adopt it, addresses kept; one that names none that exists is refused.
func TestPlanAdoptByID(t *testing.T) {
	e := newEnv(t, fake.Config{})
	target := e.unowned(t, "kept", nil)
	p := e.plan(t, nil, newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, target.ID)))
	assert.Equal(t, loadbalancer.PlanAdopt, p.Action)
	assert.Equal(t, target.ID, p.LoadBalancerID)
	assert.Equal(t, target.Addresses, p.Addresses)
	assert.Equal(t, "named by annotation "+prefix+loadbalancer.AnnotationLoadBalancerID, p.By)
	assert.True(t, p.Changes.Tags)

	p = e.plan(t, nil, newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, "lb-nope")))
	assert.Equal(t, loadbalancer.PlanRefused, p.Action)
	assert.ErrorIs(t, p.Err, cloudapi.ErrNotFound)
}

// TestPlanNewAddress: a Service with an address in its status (the earlier
// cloud-controller-manager's) and no load balancer to adopt would get a new one, with a
// new address.
func TestPlanNewAddress(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withTakeover(nil))
	e.marked(t, "uid-other", nil)
	svc := newService("web", func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.9"}}
	})
	p := e.plan(t, nil, svc)
	assert.Equal(t, loadbalancer.PlanCreate, p.Action)
	assert.True(t, p.NewAddress())
	assert.Empty(t, p.LoadBalancerID)
	assert.Equal(t, "uid-web", p.Want.Tags[cloudapi.TagService])
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1, "nothing created")
}

// TestPlanRefusedTakeover: a marked load balancer of another cluster's is a refusal,
// with ErrTakeoverRefused and ErrOwnedElsewhere, as the sync would say; a malformed
// annotation is a sync that fails.
func TestPlanRefusedTakeover(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withTakeover(rec))
	old := e.marked(t, "uid-web", func(s *cloudapi.LoadBalancerSpec) { s.Tags[cloudapi.TagCluster] = "other" })
	p := e.plan(t, rec, newService("web"))
	assert.Equal(t, loadbalancer.PlanRefused, p.Action)
	assert.Equal(t, old.ID, p.LoadBalancerID)
	assert.ErrorIs(t, p.Err, loadbalancer.ErrTakeoverRefused)
	assert.ErrorIs(t, p.Err, loadbalancer.ErrOwnedElsewhere)

	p = e.plan(t, rec, newService("bad", withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "soon"), withAnnotation("typo", "x")))
	assert.Equal(t, loadbalancer.PlanFails, p.Action)
	var aerr *loadbalancer.AnnotationError
	assert.ErrorAs(t, p.Err, &aerr)
}

// TestPlanAddressesAreEndpoints: a load balancer reached by a hostname too is planned with
// it among its addresses, so that a Service whose status publishes the hostname is not
// read as losing it.
func TestPlanAddressesAreEndpoints(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com"}}, withTakeover(rec))
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	own := e.only(t)
	require.NotEmpty(t, own.Hostname)
	events(rec)

	p := e.plan(t, rec, svc)
	assert.Contains(t, p.Addresses, own.Hostname)
	for _, a := range own.Addresses {
		assert.Contains(t, p.Addresses, a)
	}
}
