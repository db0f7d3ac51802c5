package loadbalancer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// Who is a member of a share, counted the same way whoever syncs: the share's own scope,
// the Services that name it, and a Service that moves counted in its new share only.

// inNamespace puts the Service in namespace ns.
func inNamespace(ns string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Namespace = ns }
}

// A Service of another namespace revisits a share's load balancer whose entry a failed
// call left unsure (snapshot.elsewhere hands every unsure share to every sync). The
// share's only member has no listener on it yet (a restart forgot that it waits for a
// port). Counting the share's members in the caller's namespace finds none, and the
// share's load balancer, with the address its member publishes, is deleted.
func TestASyncFromAnotherNamespaceCountsTheSharesOwnMembers(t *testing.T) {
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
	api := newService("api", inNamespace("other"), withPorts(port("http", corev1.ProtocolTCP, 8080, 30880, "")))
	clientset := k8sfake.NewClientset(web, ssh, api)
	var chaos *faultinject.Client
	wrap := func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	}
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Services = clientset.CoreV1() }, wrap)
	e.ensure(t, web, e.nodes)
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes) // port 80 is web's: ssh waits for it

	// A restart: the new process has not seen ssh wait. web is deleted; ssh stays.
	e.restart(t, func(o *loadbalancer.Options) { o.Services = clientset.CoreV1() }, chaos)
	require.NoError(t, clientset.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("services"), "default", "web"))
	deleteAsUpstream(t, e, web)
	require.Len(t, e.cloud.Inventory().LoadBalancers, 1, "ssh is still a member of share front")

	chaos.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes) // fails once: the share's entry is unsure

	e.ensure(t, api, e.nodes)
	var shares int
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		if lb.Spec.Tags[cloudapi.TagShare] == "default/front" {
			shares++
		}
	}
	assert.Equal(t, 1, shares, "a sync of Service other/api must count share default/front's members in namespace default")
}

// A Service moves from share back to share front, where its port is another Service's.
// Leaving back must forget it in back only: forgotten in front too, it is no member of
// front for the count of the last Service out (without a Services client, the members
// this process synced), and front's load balancer goes when web, the holder, is deleted.
func TestAServiceThatMovesSharesIsAMemberOfTheNewOne(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("back"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	ssh.Annotations[prefix+loadbalancer.AnnotationShare] = "front"
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrPortsTaken, "port 80 is web's: ssh waits for it")
	require.Len(t, e.cloud.Inventory().LoadBalancers, 2, "ssh keeps back's load balancer, which serves it, until front does")

	deleteAsUpstream(t, e, web)
	var front []cloudapi.LoadBalancer
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		if lb.Spec.Tags[cloudapi.TagShare] == "default/front" {
			front = append(front, lb)
		}
	}
	require.Len(t, front, 1, "ssh is a member of front: front's load balancer stays")
	assert.Equal(t, map[string][]int32{"uid-ssh": {80}}, listenerPorts(front[0]), "the port web freed is ssh's in the same write")

	e.ensure(t, ssh, e.nodes) // served by front: it leaves back, the last Service out
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	assert.Equal(t, front[0].ID, lbs[0].ID)
}

// gatedUpdates is a load balancer API whose updates of load balancer holdID wait until
// release is closed; entered gets a value as each begins to wait.
type gatedUpdates struct {
	cloudapi.LoadBalancerAPI
	holdID  string
	entered chan struct{}
	release chan struct{}
}

func (g *gatedUpdates) UpdateLoadBalancer(ctx context.Context, id string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if g.holdID != "" && id == g.holdID {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, u)
}

// A sync of node labels starts for ssh, a Service of share front (as it last tracked it),
// and waits for front's lock while web's sync of front writes; ssh moves to share back
// meanwhile (it had no listener on front: web has its port). The label sync must not act
// for ssh in front: joined there with ssh as it is now, it makes ssh a member of front
// again, forgotten in back, and front's load balancer then outlives web, its last
// Service, with ssh's listener.
func TestANodeLabelSyncDoesNotActOnAShareTheServiceLeft(t *testing.T) {
	gate := &gatedUpdates{entered: make(chan struct{}, 4), release: make(chan struct{})}
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		api, _ := c.LoadBalancers()
		gate.LoadBalancerAPI = api
		return lbWrap{c, gate}
	})
	nodes := e.labelled("web", "web", "", "", "")
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")), withNodeSelector("pool=web"))
	ssh := newService("ssh", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30081, "")), withNodeSelector("pool=web"))
	e.ensure(t, web, nodes)
	_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, nodes) // waits for port 80
	front := e.only(t)

	// web's next sync (a port more) holds front's lock in an update.
	web.Spec.Ports = append(web.Spec.Ports, port("alt", corev1.ProtocolTCP, 81, 30082, ""))
	gate.holdID = front.ID
	done := make(chan error, 2)
	go func() { _, err := e.lb.EnsureLoadBalancer(context.Background(), "c", web, nodes); done <- err }()
	select {
	case <-gate.entered:
	case err := <-done:
		require.FailNow(t, "web's sync wrote nothing", "err: %v", err)
	}
	// The label sync for ssh, tracked in front, waits for front's lock.
	relabelled := e.labelled("web", "web", "web", "", "")
	go func() { done <- e.lb.SyncNodeLabels(context.Background(), relabelled) }()
	require.Eventually(t, func() bool { return e.lb.LockUsers("share:default/front") == 2 }, 10*time.Second, time.Millisecond,
		"the label sync waits for front's lock")

	// ssh moves to back, a share of its own (another lock: not held).
	moved := ssh.DeepCopy()
	moved.Annotations[prefix+loadbalancer.AnnotationShare] = "back"
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", moved, relabelled)
	require.NoError(t, err)
	close(gate.release)
	for range 2 {
		assert.NoError(t, <-done)
	}

	deleteAsUpstream(t, e, web)
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		assert.NotEqual(t, "default/front", lb.Spec.Tags[cloudapi.TagShare], "web was front's last Service")
	}
}

// restart replaces e.lb by a new LoadBalancer over client (the cloud as the old one
// reached it), as a restarted process makes: nothing of the old one's memory is left.
func (e *env) restart(t *testing.T, tweak func(*loadbalancer.Options), client cloudapi.Client) {
	t.Helper()
	api, ok := client.LoadBalancers()
	require.True(t, ok)
	opts := loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock}
	if tweak != nil {
		tweak(&opts)
	}
	var err error
	e.lb, err = loadbalancer.New(api, opts)
	require.NoError(t, err)
}
