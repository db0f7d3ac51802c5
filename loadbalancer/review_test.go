package loadbalancer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
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

// refusesPort is a load balancer API whose cloud refuses (ErrInvalidRequest) any update
// that adds a listener on port: a port this cloud reserves, say.
type refusesPort struct {
	cloudapi.LoadBalancerAPI
	port int32
}

func (r refusesPort) UpdateLoadBalancer(ctx context.Context, id string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	for _, ls := range u.Changes.AddListeners {
		if ls.Port == r.port {
			return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpUpdateLoadBalancer, id, errors.New("port reserved"))
		}
	}
	return r.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, u)
}

// bad joins share front asking for a port the cloud refuses: its sync fails, as it
// should. But it is recorded as a member that agreed, and plan.Join hands every such
// member's missing listeners to whoever writes the share next (HandOver runs on every
// join, not only when a port was freed). So web's node sync, and web's own deletion,
// write bad's refused listener too and fail: one Service's bad port fails every other
// member's node syncs (only the targets are written, alone) and changes, and holds their
// deletions, until bad is fixed or deleted.
func TestAMemberWhosePortTheCloudRefusesDoesNotBlockItsShare(t *testing.T) {
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		api, _ := c.LoadBalancers()
		return lbWrap{c, refusesPort{api, 7000}}
	})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	bad := newService("bad", inShare("front"), withPorts(port("x", corev1.ProtocolTCP, 7000, 30700, "")))
	e.ensure(t, web, e.nodes)
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", bad, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "the cloud refuses bad's port")

	assert.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", web, e.nodes[:4]), "web's node sync")
	web.Spec.Ports = append(web.Spec.Ports, port("https", corev1.ProtocolTCP, 443, 30443, ""))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes[:4])
	assert.NoError(t, err, "web adds a port")

	now := metav1.Now()
	web.DeletionTimestamp = &now
	_, _, err = e.lb.GetLoadBalancer(t.Context(), "c", web)
	require.NoError(t, err)
	assert.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web), "web's deletion")
}

// web moves from share front to share back just after a restart whose first list of the
// cluster's load balancers failed (one 503; the snapshot's backoff holds the next list).
// leaveOthers cannot find front (no list has completed), logs at V(2) and reports
// success; the move's sync is web's last (a converged Service is not synced again, and a
// node sync never leaves shares). web's listener stays on front for good: it holds port
// 80 against ssh, a member of front, which waits for it (ErrPortsTaken, naming web) as
// long as web lives.
func TestAMoveRightAfterAFailedListLeavesTheOldShare(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
	web.Status.LoadBalancer = *e.ensure(t, web, e.nodes) // as the service controller publishes it

	e.restart(t, nil, chaos)
	chaos.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
	web.Annotations[prefix+loadbalancer.AnnotationShare] = "back"
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
	require.Error(t, err, "web cannot tell yet which load balancers it left: its sync is retried")
	e.clock.Step(5 * time.Second) // the service controller's first retry, after the list's backoff
	web.Status.LoadBalancer = *e.ensure(t, web, e.nodes)

	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes)
	assert.NoError(t, err, "web left front: port 80 is free for ssh")
}

// ssh and web share front and both allow 10.0.0.0/8 only; web holds port 80, ssh waits
// for it. web then moves to port 8080 and opens its source ranges to everyone, in one
// update. Alone on the load balancer, web may change what the share shares; but the same
// write hands port 80 to ssh (plan.Join's HandOver), so ssh's port is now open to the
// world under web's source ranges, which ssh never asked for. A port handed over must be
// served as its Service asked, or not at all.
func TestAHandedOverPortGetsTheSharedPartItsServiceAskedFor(t *testing.T) {
	e := newEnv(t, fake.Config{})
	ranges := func(r ...string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = r }
	}
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")), ranges("10.0.0.0/8"))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")), ranges("10.0.0.0/8"))
	e.ensure(t, web, e.nodes)
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrPortsTaken)

	web.Spec.Ports[0].Port = 8080
	web.Spec.LoadBalancerSourceRanges = []string{"0.0.0.0/0"}
	e.ensure(t, web, e.nodes)
	lb := e.only(t)
	if _, ok := listenerPorts(lb)["uid-ssh"]; ok {
		assert.Equal(t, []string{"10.0.0.0/8"}, lb.Spec.SourceRanges, "ssh's port is served only to the ranges ssh asked for")
	}
}

// The service controller's node sync calls UpdateLoadBalancer with the Services of its
// cache as they were when the node sync began. web moves from share front to share back
// meanwhile (its own sync, finished first); the node sync then updates web as it was, in
// front: join writes web's listener back on front and makes web a member of front again
// (forgotten in back). Nothing removes that listener (web's converged; a node sync never
// leaves shares): front keeps serving port 80 to web's node port, and outlives api, its
// last Service.
func TestANodeSyncWithAServiceFromBeforeItsMoveDoesNotRejoinTheOldShare(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	api := newService("api", inShare("front"), withPorts(port("https", corev1.ProtocolTCP, 443, 30443, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, api, e.nodes)
	before := web.DeepCopy() // the node sync's copy

	web.Annotations[prefix+loadbalancer.AnnotationShare] = "back"
	e.ensure(t, web, e.nodes)

	_ = e.lb.UpdateLoadBalancer(t.Context(), "c", before, e.nodes[:4])
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		if lb.Spec.Tags[cloudapi.TagShare] == "default/front" {
			assert.Equal(t, map[string][]int32{"uid-api": {443}}, listenerPorts(lb), "web left front")
		}
	}
}
