package loadbalancer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// The edges of sharing: orders of events, odd cloud answers and other controllers.

// deleteAsUpstream does what the upstream service controller does for a Service that
// wants no load balancer: it asks GetLoadBalancer, and calls EnsureLoadBalancerDeleted
// only when there is one.
func deleteAsUpstream(t *testing.T, e *env, svc *corev1.Service) {
	t.Helper()
	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
	require.NoError(t, err)
	if exists {
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	}
}

// A Service that leaves its share and stops being of type LoadBalancer in one update
// (one kubectl apply): GetLoadBalancer looks for the Service's own load balancer, finds
// none, and the service controller never calls EnsureLoadBalancerDeleted. Its listener
// stays on the share's load balancer for good, forwarding to a node port the Service no
// longer has, and the share's load balancer outlives its last Service.
func TestLeavingTheShareAndTheTypeAtOnceLeavesNoListener(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	web.Spec.Type = corev1.ServiceTypeClusterIP
	delete(web.Annotations, prefix+loadbalancer.AnnotationShare)
	deleteAsUpstream(t, e, web)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}}, listenerPorts(e.only(t)), "web's listener must go")

	deleteAsUpstream(t, e, ssh)
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "the last Service out deletes the load balancer")
}

// A Service moves from its share to a load balancer of its own; removing its listener
// from the share's load balancer fails once (a 503), which leaves the share's entry in
// the snapshot unknown. The Service is deleted before the retry: EnsureLoadBalancerDeleted
// deletes its own load balancer and finds no share in the snapshot (snapshot.elsewhere
// reads only known entries), so its listener stays on the share's load balancer for good.
func TestAFailedLeaveThenDeleteLeavesNoListener(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	delete(web.Annotations, prefix+loadbalancer.AnnotationShare)
	chaos.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
	require.Error(t, err, "leaving the share failed once")

	web.DeletionTimestamp = &metav1.Time{}
	deleteAsUpstream(t, e, web)
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		assert.NotContains(t, listenerPorts(lb), "uid-web", "nothing of web's is left in the cloud once its deletion succeeded (load balancer %s)", lb.ID)
	}
}

// A Service that was refused by its share (ShareConflict) stays among the share's members
// after it moves to another share: it never had a listener there, so leaveOthers never
// visits the old share. From then on the share cannot change what it shares: every
// Service of it is refused, naming a Service that is no longer in it, until a restart.
func TestAServiceThatLeftTheShareDoesNotBlockIt(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	pool := newService("pool", inShare("front"), withPorts(port("pool", corev1.ProtocolTCP, 8080, 30808, "")), withNodeSelector("pool=web"))
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", pool, e.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrShareConflict)
	pool.Annotations[prefix+loadbalancer.AnnotationShare] = "back"
	e.ensure(t, pool, e.nodes)

	// Both Services of front now ask for PROXY protocol.
	web.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "true"
	ssh.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "true"
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes) // refused: ssh had not asked yet
	for _, svc := range []*corev1.Service{ssh, web} {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.NoError(t, err, "every Service of share front asks for the same")
	}
}

// A Service of another load balancer class (not ccmkit's to serve) that names the share
// keeps the share's load balancer forever: othersInShare counts every Service of type
// LoadBalancer, whatever its spec.loadBalancerClass.
func TestAServiceOfAnotherClassDoesNotKeepTheSharedLoadBalancer(t *testing.T) {
	foreign := newService("foreign", inShare("front"), func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr("other.example/lb") })
	clientset := k8sfake.NewClientset(foreign)
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) {
		o.Services = clientset.CoreV1()
		o.Serves = func(s *corev1.Service) bool { return s.Spec.LoadBalancerClass == nil } // as the provider without a class
	})
	web := newService("web", inShare("front"))
	e.ensure(t, web, e.nodes)

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "a Service ccmkit does not serve is no member of the share")
}

// A listener whose name has no ':' (one an operator added, or one a cloud renamed) on a
// share's load balancer is nobody's: the last Service out never deletes the load
// balancer, and no Service of the share can ever change what it shares (disagreeing
// names "Service with UID " and an empty UID).
func TestAListenerOfNoServiceDoesNotPinTheShare(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	e.ensure(t, web, e.nodes)
	lb := e.only(t)
	api, _ := e.cloud.LoadBalancers()
	spec := lb.Spec.Clone()
	spec.Listeners = append(spec.Listeners, cloudapi.Listener{Name: "manual", Protocol: cloudapi.ProtocolTCP, Port: 9999, TargetPort: 31999})
	_, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
	require.NoError(t, err)
	e.expire()

	t.Run("a change of the only Service", func(t *testing.T) {
		web.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "true"
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
		require.NoError(t, err, "web is the only Service of its share")
	})
	t.Run("the last Service out", func(t *testing.T) {
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
		assert.Empty(t, e.cloud.Inventory().LoadBalancers, "the last Service out deletes the load balancer")
	})
}

// A node sync of a Service of a share with a malformed annotation skips join (updateWant
// runs it only when desired has no error) and writes the targets of the Service's own
// node selector onto the share's load balancer: a Service that disagrees with its share
// (here: its node selector) changes the others' targets, and the share's tag
// ccmkit.io/share-nodes no longer says which Nodes the targets are.
func TestANodeSyncOfAMalformedServiceOfAShareLeavesTheSharesTargets(t *testing.T) {
	e := newEnv(t, fake.Config{})
	nodes := e.labelled("web", "web", "", "", "")
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, nodes)
	e.ensure(t, ssh, nodes)
	want := e.only(t).Spec.Targets
	require.Len(t, want, 5)

	ssh.Annotations[prefix+loadbalancer.AnnotationNodeSelector] = "pool=web"
	ssh.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "maybe"
	_ = e.lb.UpdateLoadBalancer(t.Context(), "c", ssh, nodes) // an error about the annotation is right
	assert.Equal(t, want, e.only(t).Spec.Targets, "web's targets are the share's, not ssh's")
}

// Two load balancers with the share's tags (what an eventually consistent list after a
// lost create, or two leaders, leaves): web's sync keeps the one its status publishes and
// deletes the other whole (dropDuplicates), with the listener ssh serves from it; ssh's
// published address is gone and nothing of ssh's is on the kept one.
func TestADuplicateOfAShareIsNotDeletedWithAnotherServicesListeners(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	e.ensure(t, web, e.nodes)
	first := e.only(t)

	api, _ := e.cloud.LoadBalancers()
	spec := first.Spec.Clone()
	spec.Name += "-2" // the fake refuses a second name; many clouds do not
	spec.Listeners = []cloudapi.Listener{{Name: "uid-ssh:ssh", Protocol: cloudapi.ProtocolTCP, Port: 22, TargetPort: 30022}}
	_, err := api.CreateLoadBalancer(t.Context(), spec)
	require.NoError(t, err)
	e.expire()

	e.ensure(t, web, e.nodes)
	var ports []map[string][]int32
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		ports = append(ports, listenerPorts(lb))
	}
	assert.Contains(t, ports, map[string][]int32{"uid-ssh": {22}, "uid-web": {80}}, "ssh's listener is another Service's: never removed by web's sync")
}

// README: "To change a shared part, change it on every Service: the last one to ask makes
// the change." Not for internal (nor a setting only a replacement changes): ensure refuses
// to replace a load balancer other Services have listeners on, so a share of two Services
// can never switch, however many of them ask; and the refusal records no ShareConflict
// event.
func TestEveryServiceOfAShareAskingForInternalSwitchesIt(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	web.Annotations[prefix+loadbalancer.AnnotationInternal] = "true"
	ssh.Annotations[prefix+loadbalancer.AnnotationInternal] = "true"
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes) // refused: ssh had not asked yet
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes)
	require.NoError(t, err, "ssh is the last to ask: it makes the change")
}

// laggingList is a load balancer API whose next hide lists answer nothing, as an
// eventually consistent cloud's list does right after a create.
type laggingList struct {
	cloudapi.LoadBalancerAPI
	hide int
}

func (l *laggingList) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	if l.hide > 0 {
		l.hide--
		return &cloudapi.LoadBalancerPage{}, nil
	}
	return l.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
}

// The second Service of a share reads no load balancer (a list that lags), creates, is
// refused (the name is taken: the share's load balancer exists), looks again, finds the
// share's load balancer and "adopts the load balancer of an earlier create" with the spec
// it joined against none: only its own listeners. The first Service's listeners are
// removed by another Service's sync.
func TestAShareCreateThatFindsTheLoadBalancerAfterwardsKeepsTheOthersListeners(t *testing.T) {
	var lag *laggingList
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		api, _ := c.LoadBalancers()
		lag = &laggingList{LoadBalancerAPI: api}
		return lbWrap{c, lag}
	})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)

	lag.hide = 1
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes) // an error is fine: it is retried
	require.Len(t, e.cloud.Inventory().LoadBalancers, 1)
	assert.Contains(t, listenerPorts(e.only(t)), "uid-web", "web's listener is never removed by ssh's sync")
}
