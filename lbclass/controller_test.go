package lbclass_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

func addPort(s *corev1.Service) {
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443})
}

func targetsAre(c *cluster, ids ...string) bool {
	if ids == nil {
		ids = []string{}
	}
	return slices.Equal(c.targets("web"), ids) && slices.Equal(c.targets("api"), ids)
}

// TestClassServicesGetWhatUnclassedOnesGet runs one scenario twice over a fresh cloud:
// Services without a class under the upstream service controller, and Services of the
// class under the class controller. Step by step, the cloud calls (fake.Calls) must be the
// same, and in the end the Services' status and finalizers and the events recorded on
// them.
func TestClassServicesGetWhatUnclassedOnesGet(t *testing.T) {
	t.Parallel()
	steps := []struct {
		name string
		do   func(c *cluster, tweak svcTweak)
		done func(c *cluster) bool
	}{
		{
			name: "two Services get their load balancers",
			do:   func(c *cluster, tweak svcTweak) { c.create(newService("web", tweak), newService("api", tweak)) },
			done: func(c *cluster) bool { return c.hasIngress("web") && c.hasIngress("api") },
		},
		{
			name: "a Node joins",
			do:   func(c *cluster, _ svcTweak) { c.addNode(newNode("node-1", "ccmkit://i-1")) },
			done: func(c *cluster) bool { return targetsAre(c, "i-1") },
		},
		{
			name: "a port is added",
			do:   func(c *cluster, _ svcTweak) { c.update("web", addPort) },
			done: func(c *cluster) bool { return len(c.lbs("web")) == 1 && len(c.lbs("web")[0].Spec.Listeners) == 2 },
		},
		{
			name: "a second Node joins",
			do:   func(c *cluster, _ svcTweak) { c.addNode(newNode("node-2", "ccmkit://i-2")) },
			done: func(c *cluster) bool { return targetsAre(c, "i-1", "i-2") },
		},
		{
			name: "a Node is excluded by label",
			do: func(c *cluster, _ svcTweak) {
				c.updateNode("node-1", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" })
			},
			done: func(c *cluster) bool { return targetsAre(c, "i-2") },
		},
		{
			name: "the last Node is deleted",
			do:   func(c *cluster, _ svcTweak) { c.deleteNode("node-2") },
			done: func(c *cluster) bool { return targetsAre(c) },
		},
		{
			name: "a Service is deleted",
			do:   func(c *cluster, _ svcTweak) { c.markDeleted("web") },
			done: func(c *cluster) bool {
				web := c.get("web")
				return len(web.Finalizers) == 0 && len(web.Status.LoadBalancer.Ingress) == 0 && len(c.lbs("web")) == 0
			},
		},
	}
	type outcome struct {
		calls   []fake.Calls
		api     *corev1.Service
		reasons map[string][]string
	}
	run := func(t *testing.T, c *cluster, tweak svcTweak) outcome {
		var o outcome
		for _, s := range steps {
			c.cloud.Fake.ResetCalls()
			s.do(c, tweak)
			eventually(t, func() bool { return s.done(c) }, s.name)
			o.calls = append(o.calls, c.cloud.Fake.Calls())
		}
		// The events of a Service are recorded in order; web's last is DeletedLoadBalancer.
		eventually(t, func() bool { return slices.Contains(c.reasons("web"), "DeletedLoadBalancer") }, "web's events are recorded")
		o.api = c.get("api")
		o.reasons = map[string][]string{"web": c.reasons("web"), "api": c.reasons("api")}
		return o
	}

	upstreamCloud := classCloud(t, true)
	upstream := run(t, runServiceController(t, upstreamCloud), func(*corev1.Service) {})
	classedCloud := classCloud(t, false)
	classed := run(t, runClassController(t, classedCloud, classOptions{}), withClass(class))

	for i, s := range steps {
		assert.Equal(t, upstream.calls[i], classed.calls[i], "cloud calls of step %q", s.name)
		assert.NotEmpty(t, classed.calls[i], "step %q calls the cloud", s.name)
	}
	assert.Equal(t, upstream.api.Finalizers, classed.api.Finalizers)
	assert.Equal(t, []string{"service.kubernetes.io/load-balancer-cleanup"}, classed.api.Finalizers)
	require.Len(t, classed.api.Status.LoadBalancer.Ingress, 1)
	require.NotNil(t, classed.api.Status.LoadBalancer.Ingress[0].IPMode, "the status has an ipMode")
	assert.Equal(t, corev1.LoadBalancerIPModeVIP, *classed.api.Status.LoadBalancer.Ingress[0].IPMode)
	assert.Equal(t, classedCloud.Fake.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-api"})[0].Addresses[0],
		classed.api.Status.LoadBalancer.Ingress[0].IP, "the status publishes the load balancer's address")
	// The addresses differ between the two clouds only by which Service came first.
	upstreamIngress := upstream.api.Status.LoadBalancer.Ingress
	require.Len(t, upstreamIngress, 1)
	assert.Equal(t, upstreamIngress[0].IPMode, classed.api.Status.LoadBalancer.Ingress[0].IPMode)
	assert.Equal(t, upstream.reasons, classed.reasons, "the events recorded on the Services")
	assert.Subset(t, classed.reasons["web"], []string{"EnsuringLoadBalancer", "EnsuredLoadBalancer", "UpdatedLoadBalancer", "UnAvailableLoadBalancer", "DeletingLoadBalancer", "DeletedLoadBalancer"})
}

// TestOnlyTheClassIsTouched: Services of another class are never written nor looked up
// in the cloud, whatever their state; Services without a class likewise while the
// upstream service controller serves them, or while they need no cleanup.
func TestOnlyTheClassIsTouched(t *testing.T) {
	t.Parallel()
	for _, unclassedServed := range []bool{true, false} {
		t.Run(map[bool]string{true: "unclassed served elsewhere", false: "unclassed not served"}[unclassedServed], func(t *testing.T) {
			t.Parallel()
			cloud := classCloud(t, unclassedServed)
			c := runClassController(t, cloud, classOptions{unclassedServed: unclassedServed})
			c.addNode(newNode("node-1", "ccmkit://i-1"))
			c.create(newService("web", withClass(class)))
			eventually(t, func() bool { return c.hasIngress("web") && slices.Equal(c.targets("web"), []string{"i-1"}) }, "web gets its load balancer")
			cloud.Fake.ResetCalls()

			// Services of another class: wanting a load balancer; holding the finalizer
			// of their own controller and being deleted. A Service without a class, with
			// another implementation's address.
			others := []*corev1.Service{
				newService("other", withClass(otherClass)),
				newService("other-deleted", withClass(otherClass), withFinalizer, func(s *corev1.Service) {
					s.DeletionTimestamp = &metav1.Time{Time: time.Now()}
					s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
				}),
				newService("plain", func(s *corev1.Service) {
					s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.2"}}
				}),
			}
			if unclassedServed {
				// Cleanup of these is the upstream controller's.
				others = append(others, newService("plain-deleted", withFinalizer, func(s *corev1.Service) {
					s.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				}))
			}
			c.create(others...)
			for _, o := range others {
				c.update(o.Name, addPort)
			}
			c.addNode(newNode("node-2", "ccmkit://i-2"))
			eventually(t, func() bool { return slices.Equal(c.targets("web"), []string{"i-1", "i-2"}) }, "web targets node-2")
			// One worker takes keys in order: once web's port change is done, anything the
			// changes above enqueued has been synced.
			c.update("web", addPort)
			eventually(t, func() bool { return len(c.lbs("web")[0].Spec.Listeners) == 2 }, "web's port change")
			eventually(t, func() bool { return slices.Contains(c.reasons("web"), "UpdatedLoadBalancer") }, "web's events are recorded")

			for _, o := range others {
				svc := c.get(o.Name)
				assert.Zero(t, c.patches(o.Name), "%s is never patched", o.Name)
				assert.Equal(t, o.Finalizers, svc.Finalizers, "%s's finalizers", o.Name)
				assert.Equal(t, o.Status, svc.Status, "%s's status", o.Name)
				assert.Empty(t, c.reasons(o.Name), "no event on %s", o.Name)
				assert.Empty(t, c.lbs(o.Name), "no load balancer for %s", o.Name)
			}
			assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpUpdateLoadBalancer: 2}, cloud.Fake.Calls(),
				"web's read and write for node-2 and for its port; nothing for the others")
		})
	}
}

// TestUnclassedCleanupOnlyWhenProvablyOwn: while no controller serves Services without a
// class, the class controller cleans up after one only when the cloud holds its load
// balancer by this cluster's and the Service's owner tags.
func TestUnclassedCleanupOnlyWhenProvablyOwn(t *testing.T) {
	t.Parallel()
	cloud := classCloud(t, false)
	// "old" was served while ccmkit served Services without a class: it has a load
	// balancer in the cloud, the finalizer and an address.
	old := newService("old", withFinalizer)
	_, impl, _ := cloud.Provider.LoadBalancerClass()
	status, err := impl.EnsureLoadBalancer(context.Background(), providertest.DefaultClusterID, old, nil)
	require.NoError(t, err)
	old.Status.LoadBalancer = *status
	// "foreign" holds the same finalizer for another implementation: no load balancer here.
	foreign := newService("foreign", withFinalizer, func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.9"}}
	})
	c := runClassController(t, cloud, classOptions{}, old, foreign)
	cloud.Fake.ResetCalls()

	c.markDeleted("foreign")
	c.markDeleted("old")
	eventually(t, func() bool {
		svc := c.get("old")
		return len(svc.Finalizers) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0 && len(c.lbs("old")) == 0
	}, "old's load balancer, finalizer and status are gone")
	eventually(t, func() bool { return cloud.Fake.Calls()[cloudapi.OpListLoadBalancers] == 3 }, "foreign was looked up")
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 3, cloudapi.OpDeleteLoadBalancer: 1}, cloud.Fake.Calls(),
		"one lookup by owner tags for foreign; for old, GetLoadBalancer's and the delete's lookups and the delete")
	assert.Zero(t, c.patches("foreign"), "foreign is not the class controller's to write")
	assert.Equal(t, []string{finalizer}, c.get("foreign").Finalizers)
	assert.Equal(t, foreign.Status, c.get("foreign").Status)
	assert.Empty(t, c.reasons("foreign"))
}

// TestNoEventOnAForeignService: when the lookup that would prove a Service without a
// class to be the class controller's fails, the Service gets no event and no write, only
// a retry with backoff.
func TestNoEventOnAForeignService(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewHolding(time.Now())
	cloud := classCloud(t, false, providertest.WithFaults(faultinject.Config{}))
	foreign := newService("foreign", withFinalizer)
	c := runClassController(t, cloud, classOptions{clock: clk}, foreign)
	cloud.Faults.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
	c.markDeleted("foreign")
	require.NoError(t, clk.AwaitWaits(t.Context(), 1))
	assert.Equal(t, []time.Duration{lbclass.MinRetryDelay}, clk.Waits(), "the failed lookup is retried with backoff")
	clk.Step(lbclass.MinRetryDelay)
	eventually(t, func() bool { return cloud.Faults.Injected().Ops[cloudapi.OpListLoadBalancers].Calls >= 2 }, "the retry looks again (and, finding none, the shares it may have listeners on)")

	// Events go out in order: once web's are recorded, foreign's would have been.
	c.create(newService("web", withClass(class)))
	eventually(t, func() bool { return slices.Contains(c.reasons("web"), "EnsuredLoadBalancer") }, "web's events are recorded")
	assert.Empty(t, c.reasons("foreign"), "no event on foreign")
	assert.Zero(t, c.patches("foreign"), "foreign is not written")
	assert.Equal(t, []string{finalizer}, c.get("foreign").Finalizers)
}

// TestLeavingTheClass: type ClusterIP drops spec.loadBalancerClass (the API server does
// that), so a Service that leaves the class through it has no class and still the
// finalizer. The upstream service controller cleans that up when it serves Services
// without a class; else the class controller does, since the load balancer is its own.
func TestLeavingTheClass(t *testing.T) {
	t.Parallel()
	toClusterIP := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.LoadBalancerClass = nil
		s.Spec.Ports[0].NodePort = 0
	}
	t.Run("unclassed not served elsewhere: the class controller cleans up", func(t *testing.T) {
		t.Parallel()
		cloud := classCloud(t, false)
		c := runClassController(t, cloud, classOptions{})
		c.create(newService("web", withClass(class)))
		eventually(t, func() bool { return c.hasIngress("web") }, "web gets its load balancer")
		c.update("web", toClusterIP)
		eventually(t, func() bool {
			svc := c.get("web")
			return len(svc.Finalizers) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0 && len(c.lbs("web")) == 0
		}, "web's load balancer, finalizer and status are gone")
	})
	t.Run("unclassed served elsewhere: left to the service controller", func(t *testing.T) {
		t.Parallel()
		cloud := classCloud(t, true)
		c := runClassController(t, cloud, classOptions{unclassedServed: true})
		c.create(newService("web", withClass(class)))
		eventually(t, func() bool { return c.hasIngress("web") }, "web gets its load balancer")
		patches := c.patches("web")
		cloud.Fake.ResetCalls()
		c.update("web", toClusterIP)
		// Proof that the class controller has seen the change: a Node change reaches
		// every Service it serves, and web no longer is one.
		c.create(newService("api", withClass(class)))
		eventually(t, func() bool { return c.hasIngress("api") }, "api gets its load balancer")
		c.addNode(newNode("node-1", "ccmkit://i-1"))
		eventually(t, func() bool { return slices.Equal(c.targets("api"), []string{"i-1"}) }, "api targets the Node")
		assert.Empty(t, c.targets("web"), "web's load balancer is not updated")
		assert.Equal(t, patches, c.patches("web"), "web is not written")
		assert.Len(t, c.lbs("web"), 1, "web's load balancer is the service controller's to delete")
	})
}

// TestMovedToAnotherClass: a Service that went from the class to another class faster
// than the controller looked keeps the other class's business (no write), but the class
// controller's load balancer in the cloud is deleted.
func TestMovedToAnotherClass(t *testing.T) {
	t.Parallel()
	cloud := classCloud(t, false)
	c := runClassController(t, cloud, classOptions{})
	c.create(newService("web", withClass(class)))
	eventually(t, func() bool { return c.hasIngress("web") }, "web gets its load balancer")
	before := c.get("web")
	patches := c.patches("web")
	c.update("web", withClass(otherClass))
	eventually(t, func() bool { return len(c.lbs("web")) == 0 }, "the class controller's load balancer is deleted")
	after := c.get("web")
	assert.Equal(t, patches, c.patches("web"), "web is not written")
	assert.Equal(t, before.Finalizers, after.Finalizers)
	assert.Equal(t, before.Status, after.Status)
}

// TestNodeChanges: each kind of Node change that matters reaches the class's load
// balancers, and the ones that do not call the cloud not at all.
func TestNodeChanges(t *testing.T) {
	t.Parallel()
	cloud := classCloud(t, false)
	c := runClassController(t, cloud, classOptions{})
	c.addNode(newNode("node-1", "ccmkit://i-1"))
	c.create(newService("web", withClass(class)), newService("api", withClass(class)))
	eventually(t, func() bool { return targetsAre(c, "i-1") }, "both target node-1")

	steps := []struct {
		name    string
		change  func()
		targets []string
	}{
		{"added", func() { c.addNode(newNode("node-2", "ccmkit://i-2")) }, []string{"i-1", "i-2"}},
		{"excluded by label", func() {
			c.updateNode("node-1", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" })
		}, []string{"i-2"}},
		{"label value not a boolean", func() {
			c.updateNode("node-1", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "maybe" })
		}, []string{"i-2"}},
		{"included again", func() {
			c.updateNode("node-1", func(n *corev1.Node) { delete(n.Labels, corev1.LabelNodeExcludeBalancers) })
		}, []string{"i-1", "i-2"}},
		{"provider ID changed", func() {
			c.updateNode("node-2", func(n *corev1.Node) { n.Spec.ProviderID = "ccmkit://i-3" })
		}, []string{"i-1", "i-3"}},
		{"deleted", func() { c.deleteNode("node-1") }, []string{"i-3"}},
	}
	for _, s := range steps {
		s.change()
		eventually(t, func() bool { return targetsAre(c, s.targets...) }, "node "+s.name)
	}

	// A change that does not matter to a load balancer calls nothing: the readiness.
	cloud.Fake.ResetCalls()
	c.updateNode("node-2", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
	c.addNode(newNode("node-4", "ccmkit://i-2"))
	eventually(t, func() bool { return targetsAre(c, "i-2", "i-3") }, "node-4 is added")
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 2}, cloud.Fake.Calls(),
		"one list of the cluster's load balancers and one write per load balancer, for node-4 only")
}

// TestFailureIsAnEventAndBacksOff: a failed sync is a Warning event naming the error and
// is retried after 5 s, then 10 s; a load balancer still provisioning is asked about
// again after its RetryError's delay, without backoff. The queues' clock holds every
// wait until the test steps it, and records how long each is.
func TestFailureIsAnEventAndBacksOff(t *testing.T) {
	t.Parallel()
	t.Run("error", func(t *testing.T) {
		t.Parallel()
		clk := clocktest.NewHolding(time.Now())
		cloud := classCloud(t, false, providertest.WithFaults(faultinject.Config{}))
		refused := cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpCreateLoadBalancer, "", errors.New("quota exceeded"))
		cloud.Faults.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Err: refused}, faultinject.Fault{Err: refused})
		c := runClassController(t, cloud, classOptions{clock: clk})
		c.create(newService("web", withClass(class)))

		creates := func() int { return cloud.Faults.Injected().Ops[cloudapi.OpCreateLoadBalancer].Calls }
		backoff := []time.Duration{lbclass.MinRetryDelay, 2 * lbclass.MinRetryDelay}
		for i, wait := range backoff {
			require.NoError(t, clk.AwaitWaits(t.Context(), i+1))
			assert.Equal(t, backoff[:i+1], clk.Waits(), "the retry waits")
			assert.Equal(t, i+1, creates(), "no retry before the wait ends")
			clk.Step(wait)
		}
		eventually(t, func() bool { return c.hasIngress("web") }, "the third try succeeds")
		assert.Equal(t, 3, creates())
		assert.Equal(t, backoff, clk.Waits(), "no other wait")
		eventually(t, func() bool { return c.eventMessageContains("web", "SyncLoadBalancerFailed", "quota exceeded") }, "a Warning event naming the error")
	})
	t.Run("provisioning", func(t *testing.T) {
		t.Parallel()
		clk := clocktest.NewHolding(time.Now())
		cloud := classCloud(t, false, providertest.WithYAML(`
loadBalancer: {class: example.com/ccmkit, serveUnclassed: false}
fake:
  provisioning: {reads: 2}
  instances: [{id: i-1, name: node-1}]
`))
		c := runClassController(t, cloud, classOptions{clock: clk})
		c.create(newService("web", withClass(class)))
		var retries int
		for !c.hasIngress("web") {
			require.NoError(t, clk.AwaitWaits(t.Context(), retries+1))
			require.Less(t, retries, 5, "the load balancer never became active")
			assert.Equal(t, loadbalancer.ProvisioningRetryDelay, clk.Waits()[retries], "asked again after the RetryError's delay, not a growing backoff")
			clk.Step(loadbalancer.ProvisioningRetryDelay)
			retries++
			eventually(t, func() bool { return c.hasIngress("web") || clk.Started() > retries }, "the next answer")
		}
		assert.GreaterOrEqual(t, retries, 2, "provisioning for two reads is two retries at least")
		eventually(t, func() bool { return c.eventMessageContains("web", "SyncLoadBalancerFailed", "is provisioning") }, "the event says why")
	})
}

// TestServiceGoneWithoutFinalizer: a Service whose finalizer someone removed is still
// cleaned up when it goes.
func TestServiceGoneWithoutFinalizer(t *testing.T) {
	t.Parallel()
	cloud := classCloud(t, false)
	c := runClassController(t, cloud, classOptions{})
	c.create(newService("web", withClass(class)))
	eventually(t, func() bool { return c.hasIngress("web") }, "web gets its load balancer")
	c.update("web", func(s *corev1.Service) { s.Finalizers = nil })
	require.NoError(t, c.kube.CoreV1().Services(metav1.NamespaceDefault).Delete(context.Background(), "web", metav1.DeleteOptions{}))
	eventually(t, func() bool { return len(c.lbs("web")) == 0 }, "web's load balancer is deleted")
}

func TestNewRefusesBadInput(t *testing.T) {
	t.Parallel()
	cloud := classCloud(t, false)
	_, lb, _ := cloud.Provider.LoadBalancerClass()
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	services, nodes := factory.Core().V1().Services(), factory.Core().V1().Nodes()
	tests := []struct {
		name string
		opts lbclass.Options
		lb   bool
		want []string
	}{
		{"no class", lbclass.Options{}, true, []string{"lbclass: no load balancer class to serve"}},
		{"bad class", lbclass.Options{Class: "a/b/c"}, true, []string{`lbclass: class "a/b/c": a valid label key must consist of alphanumeric characters`}},
		{"no load balancer", lbclass.Options{Class: class}, false, []string{"lbclass: no LoadBalancer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := lb
			if !tt.lb {
				l = nil
			}
			_, err := lbclass.New(l, kube, services, nodes, tt.opts)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := lbclass.New(lb, kube, services, nodes, lbclass.Options{Class: class})
	assert.NoError(t, err)
}

// eventMessageContains reports whether an event of the reason on the Service says text.
func (c *cluster) eventMessageContains(name, reason, text string) bool {
	c.t.Helper()
	events, err := c.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	require.NoError(c.t, err)
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
