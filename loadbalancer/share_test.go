package loadbalancer_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// inShare puts the Service in the share name.
func inShare(name string) func(*corev1.Service) {
	return withAnnotation(loadbalancer.AnnotationShare, name)
}

// listenerPorts returns the ports of lb's listeners by the UID that owns them.
func listenerPorts(lb cloudapi.LoadBalancer) map[string][]int32 {
	out := map[string][]int32{}
	for _, l := range lb.Spec.Listeners {
		uid, _, _ := strings.Cut(l.Name, ":")
		out[uid] = append(out[uid], l.Port)
	}
	return out
}

// shareEvents returns the ShareConflict events the recorder holds.
func shareEvents(rec *record.FakeRecorder) []string {
	return slices.DeleteFunc(events(rec), func(e string) bool { return !strings.Contains(e, "ShareConflict") })
}

func TestServicesOfAShareGetOneLoadBalancerAndOneAddress(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, ""), port("https", corev1.ProtocolTCP, 443, 30443, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))

	before := e.cloud.Calls()
	stWeb := e.ensure(t, web, e.nodes)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpCreateLoadBalancer: 1}, e.cloud.Calls().Sub(before),
		"the snapshot's list and the share's lookup, then one create")
	before = e.cloud.Calls()
	stSSH := e.ensure(t, ssh, e.nodes)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before),
		"the second Service adds its listener to the share's load balancer: a fresh read and one update")

	lb := e.only(t)
	assert.Equal(t, stWeb, stSSH, "one address for both")
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagShare: "default/front", cloudapi.TagShareNodes: "all-nodes"}, lb.Spec.Tags,
		"owned by the share, by no Service")
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}, "uid-web": {80, 443}}, listenerPorts(lb))
	assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, lb.Spec.Targets)
	assert.Equal(t, lb.Spec.Name, e.lb.GetLoadBalancerName(t.Context(), "c", web))
	assert.Equal(t, lb.Spec.Name, e.lb.GetLoadBalancerName(t.Context(), "c", ssh))

	before = e.cloud.Calls()
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)
	assert.Empty(t, e.cloud.Calls().Sub(before), "converged: no call")

	before = e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", web, e.nodes[:3]))
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", ssh, e.nodes[:3]))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before),
		"a node sync writes a shared load balancer once")
	assert.Equal(t, []string{"i-0", "i-1", "i-2"}, e.only(t).Spec.Targets)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}, "uid-web": {80, 443}}, listenerPorts(e.only(t)))
}

func TestAPortAnotherServiceOfTheShareHasIsNotAdded(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	e := newEnvWith(t, fake.Config{}, withRecorder(rec))
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	other := newService("other", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 31080, ""), port("alt", corev1.ProtocolTCP, 8080, 31081, "")))
	e.ensure(t, web, e.nodes)
	events(rec)

	e.ensure(t, other, e.nodes)
	lb := e.only(t)
	assert.Equal(t, map[string][]int32{"uid-web": {80}, "uid-other": {8080}}, listenerPorts(lb))
	assert.Equal(t, int32(30080), lb.Spec.Listeners[0].TargetPort, "the first Service's port 80 goes to its own node port")
	events := shareEvents(rec)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "80/TCP (Service default/web)")

	e.ensure(t, other, e.nodes)
	assert.Empty(t, shareEvents(rec), "told once per change, not on every sync")

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	lb = e.only(t)
	assert.Equal(t, map[string][]int32{"uid-other": {80, 8080}}, listenerPorts(lb), "web's leaving hands its port to the Service that asked for it, in the same write")
	assert.Equal(t, int32(31080), lb.Spec.Listeners[0].TargetPort, "to other's node port")
	before := e.cloud.Calls()
	e.ensure(t, other, e.nodes)
	assert.Zero(t, e.cloud.Calls().Sub(before)[cloudapi.OpUpdateLoadBalancer], "nothing left to write")
}

func TestAServiceThatDisagreesWithItsShareChangesNothing(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	e := newEnvWith(t, fake.Config{}, withRecorder(rec))
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)
	events(rec)
	want := e.only(t)

	// ssh alone asks for PROXY protocol: refused, nothing written.
	ssh.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "true"
	before := e.cloud.Calls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", ssh, e.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrShareConflict)
	assert.Contains(t, err.Error(), "Service default/web")
	assert.Zero(t, e.cloud.Calls().Sub(before)[cloudapi.OpUpdateLoadBalancer], "nothing written")
	assert.Equal(t, want.Spec, e.only(t).Spec)
	require.Len(t, shareEvents(rec), 1)

	// Other Nodes are something else too.
	pool := newService("pool", inShare("front"), withPorts(port("pool", corev1.ProtocolTCP, 8080, 30808, "")), withNodeSelector("pool=web"))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", pool, e.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrShareConflict)
	assert.Equal(t, want.Spec, e.only(t).Spec)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", pool))
	events(rec)

	// A node sync of the Service that disagrees writes nothing; the other's does.
	before = e.cloud.Calls()
	require.ErrorIs(t, e.lb.UpdateLoadBalancer(t.Context(), "c", ssh, e.nodes[:2]), loadbalancer.ErrShareConflict)
	assert.Zero(t, e.cloud.Calls().Sub(before)[cloudapi.OpUpdateLoadBalancer])
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", web, e.nodes[:2]))
	assert.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}, "uid-web": {80}}, listenerPorts(e.only(t)), "ssh's listener is kept as it was")

	// Once web asks for it too, the share changes, and ssh's next sync has nothing to do.
	web.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "true"
	e.ensure(t, web, e.nodes)
	assert.True(t, e.only(t).Spec.ProxyProtocol)
	before = e.cloud.Calls()
	e.ensure(t, ssh, e.nodes)
	assert.Zero(t, e.cloud.Calls().Sub(before)[cloudapi.OpUpdateLoadBalancer])
}

func TestTheLastServiceOutDeletesTheSharedLoadBalancer(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)
	id := e.only(t).ID

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	lb := e.only(t)
	assert.Equal(t, id, lb.ID)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}}, listenerPorts(lb), "only web's listeners go")
	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", ssh)
	require.NoError(t, err)
	assert.True(t, exists)

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web), "again: nothing of web's is left")
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}}, listenerPorts(e.only(t)))

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", ssh))
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "the last Service out deletes it")
}

// TestASharedLoadBalancerStaysWhileAServiceOfTheShareExists: a Service of the share that
// has no listener on the load balancer yet (not synced, or refused) keeps it: the API
// server says it exists.
func TestASharedLoadBalancerStaysWhileAServiceOfTheShareExists(t *testing.T) {
	pending := newService("pending", inShare("front"))
	gone := newService("gone", inShare("front"))
	gone.DeletionTimestamp = &metav1.Time{}
	elsewhere := newService("elsewhere", inShare("front"), func(s *corev1.Service) { s.Namespace = "other" })
	clientset := k8sfake.NewClientset(pending, gone, elsewhere)
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Services = clientset.CoreV1() })
	web := newService("web", inShare("front"))
	e.ensure(t, web, e.nodes)

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	lb := e.only(t)
	assert.Empty(t, lb.Spec.Listeners, "web's listeners are gone")
	assert.Equal(t, "default/front", lb.Spec.Tags[cloudapi.TagShare], "kept for the Service of the share that exists")

	require.NoError(t, clientset.CoreV1().Services("default").Delete(t.Context(), "pending", metav1.DeleteOptions{}))
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	assert.Empty(t, e.cloud.Inventory().LoadBalancers, "one being deleted and one of another namespace do not keep it")
}

func TestServicesMoveInAndOutOfAShare(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)
	require.Len(t, e.cloud.Inventory().LoadBalancers, 2)

	web.Annotations[prefix+loadbalancer.AnnotationShare] = "front"
	e.ensure(t, web, e.nodes)
	lb := e.only(t)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}, "uid-web": {80}}, listenerPorts(lb), "web joined, and its own load balancer is gone")

	delete(web.Annotations, prefix+loadbalancer.AnnotationShare)
	e.ensure(t, web, e.nodes)
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 2)
	for _, lb := range lbs {
		if lb.Spec.Tags[cloudapi.TagShare] != "" {
			assert.Equal(t, map[string][]int32{"uid-ssh": {22}}, listenerPorts(lb), "web left the share")
		} else {
			assert.Equal(t, "uid-web", lb.Spec.Tags[cloudapi.TagService])
		}
	}

	ssh.Annotations[prefix+loadbalancer.AnnotationShare] = "back"
	e.ensure(t, ssh, e.nodes)
	lbs = e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 2, "ssh moved to share back; front had no one left and is deleted")
	assert.ElementsMatch(t, []string{"", "default/back"}, []string{lbs[0].Spec.Tags[cloudapi.TagShare], lbs[1].Spec.Tags[cloudapi.TagShare]})
}

func TestTheLastServiceOutWithKeepOnDeleteReleasesTheSharedLoadBalancer(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.KeepOnDelete = true })
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	assert.Equal(t, "default/front", e.only(t).Spec.Tags[cloudapi.TagShare], "not the last: only web's listeners go")
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", ssh))
	lb := e.only(t)
	assert.NotContains(t, lb.Spec.Tags, cloudapi.TagShare, "released: no ownership tag left")
	assert.NotContains(t, lb.Spec.Tags, cloudapi.TagCluster)
	assert.Empty(t, lb.Spec.Targets)
	assert.NotEmpty(t, lb.Addresses, "kept with its address")
}

func TestSharesAreScopedToTheirNamespaceUnlessTheOperatorSaysOtherwise(t *testing.T) {
	for _, across := range []bool{false, true} {
		e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.ShareAcrossNamespaces = across })
		a := newService("a", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
		b := newService("b", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")), func(s *corev1.Service) { s.Namespace = "team-b" })
		e.ensure(t, a, e.nodes)
		e.ensure(t, b, e.nodes)
		if across {
			assert.Equal(t, "*/front", e.only(t).Spec.Tags[cloudapi.TagShare])
		} else {
			assert.Len(t, e.cloud.Inventory().LoadBalancers, 2)
		}
	}
}

func TestSharingIsRefusedWhereItCannotBeExact(t *testing.T) {
	t.Run("a cloud that does not keep listener names", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withShape(cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames}}))
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", inShare("front")), e.nodes)
		require.Error(t, err)
		assert.Contains(t, err.Error(), prefix+loadbalancer.AnnotationShare)
		assert.Contains(t, err.Error(), "listener names")
		assert.Empty(t, e.cloud.Inventory().LoadBalancers)
	})
	t.Run("with load-balancer-id", func(t *testing.T) {
		e := newEnv(t, fake.Config{})
		svc := newService("web", inShare("front"), withAnnotation(loadbalancer.AnnotationLoadBalancerID, "lb-000009"))
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot be combined")
		assert.Empty(t, e.cloud.Inventory().LoadBalancers)
	})
	t.Run("a malformed share annotation: no sync, but a deletion removes everything of the Service's", func(t *testing.T) {
		e := newEnv(t, fake.Config{})
		web := newService("web", inShare("front"))
		e.ensure(t, web, e.nodes)
		web.Annotations[prefix+loadbalancer.AnnotationShare] = "Front!"
		before := e.cloud.Calls()
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
		require.Error(t, err)
		assert.Contains(t, err.Error(), prefix+loadbalancer.AnnotationShare)
		assert.Empty(t, e.cloud.Calls().Sub(before), "which load balancer is the Service's is unclear: nothing read or written")
		web.DeletionTimestamp = &metav1.Time{}
		_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", web)
		require.NoError(t, err)
		assert.True(t, exists, "its listeners on the share's load balancer are there to delete")
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web), "a malformed value never holds a deletion")
		assert.Empty(t, e.cloud.Inventory().LoadBalancers)
	})
}

func TestASharedLoadBalancerAfterARestartCostsNoWrite(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	e.ensure(t, web, e.nodes)
	e.ensure(t, ssh, e.nodes)

	api, _ := e.cloud.LoadBalancers()
	restarted, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock})
	require.NoError(t, err)
	before := e.cloud.Calls()
	for _, svc := range []*corev1.Service{ssh, web} {
		_, err := restarted.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.NoError(t, err)
	}
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before), "one list, no write")
}

// TestALostCreateOfAShareMakesNoSecondLoadBalancer: the create's answer is lost; the
// retry finds the share's load balancer by its tags and adds to it.
func TestALostCreateOfAShareMakesNoSecondLoadBalancer(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	chaos.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
	ssh := newService("ssh", inShare("front"), withPorts(port("ssh", corev1.ProtocolTCP, 22, 30022, "")))
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
	if err != nil {
		e.ensure(t, web, e.nodes)
	}
	e.ensure(t, ssh, e.nodes)
	assert.Equal(t, map[string][]int32{"uid-ssh": {22}, "uid-web": {80}}, listenerPorts(e.only(t)))
}
