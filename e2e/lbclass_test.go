package e2e

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/provider"
)

// e2eClass is the load balancer class the scenarios' ccmkit serves; otherClass is another
// implementation's, which nothing in the cluster serves.
const (
	e2eClass   = "ccmkit.io/e2e"
	otherClass = "example.com/other"
)

func withLBClass(class string) svcTweak {
	return func(s *corev1.Service) { s.Spec.LoadBalancerClass = &class }
}

// classEvent reports whether the class controller recorded an event of reason on the
// Service.
func (e *env) classEvent(name, reason string) (bool, error) {
	events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(e.ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + name + ",reason=" + reason,
	})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool { return ev.Source.Component == lbclass.ControllerName }), nil
}

// untouched checks that nothing wrote the Service since created (its status, finalizers
// and resource version) and that the cloud has no load balancer for it.
func (e *env) untouched(created *corev1.Service) {
	e.t.Helper()
	svc, err := e.service(created.Name)
	require.NoError(e.t, err)
	assert.Equal(e.t, created.ResourceVersion, svc.ResourceVersion, "%s is never written", created.Name)
	assert.Empty(e.t, svc.Status.LoadBalancer.Ingress, "%s has no address", created.Name)
	assert.Empty(e.t, svc.Finalizers, "%s has no finalizer", created.Name)
	assert.Empty(e.t, e.serviceLBs(string(created.UID)), "%s has no load balancer", created.Name)
}

// TestLoadBalancerClass: ccmkit serves only its class (serveUnclassed: false). A Service of
// the class gets what an unclassed one gets from the upstream service controller, from
// the class controller; a Service of another class and one without a class are never
// written and get no load balancer.
func TestLoadBalancerClass(t *testing.T) { forEachMode(t, loadBalancerClass) }

func loadBalancerClass(t *testing.T, m mode) {
	e := newEnvWithCloud(t, m, func(cfg []byte) []byte {
		return append(withFake(provisioning)(cfg), "loadBalancer: {class: "+e2eClass+", serveUnclassed: false}\n"...)
	})
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")

	other := e.createService(newLBService("other", withLBClass(otherClass)))
	plain := e.createService(newLBService("plain"))
	if m.faults {
		// Besides the random faults: the create's answer is lost (the class controller
		// must adopt, not create twice; checkCloud replays the history).
		e.cloud.Faults.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	}
	web := e.createService(newLBService("web", withLBClass(e2eClass)))

	t.Run("the class's Service gets its load balancer", func(t *testing.T) {
		ing := e.waitIngress("web")
		lb := e.waitLB(web, "active", func(lb cloudapi.LoadBalancer) bool { return lb.Status == cloudapi.LoadBalancerActive })
		require.NotEmpty(t, lb.Addresses)
		assert.Equal(t, lb.Addresses[0], ing.IP, "the Service publishes the load balancer's address")
		require.NotNil(t, ing.IPMode)
		assert.Equal(t, corev1.LoadBalancerIPModeVIP, *ing.IPMode)
		assert.True(t, targetsAre("i-0001", "i-0002")(lb), "targets: %v", lb.Spec.Targets)
		svc, err := e.service("web")
		require.NoError(t, err)
		assert.Contains(t, svc.Finalizers, lbFinalizer)
		e.eventually("the class controller's EnsuredLoadBalancer event on web", func(context.Context) (bool, error) {
			return e.classEvent("web", "EnsuredLoadBalancer")
		})
		if !m.faults {
			e.waitedForProvisioning()
		}
	})

	t.Run("a Node added reaches the class's load balancer", func(t *testing.T) {
		if m.faults {
			// Every try of the node sync's update fails: an event, then the Service's
			// full sync with backoff brings the Node in.
			cfg, err := provider.ReadConfig(bytes.NewReader(e.cloud.Config), harness.ProviderName)
			require.NoError(t, err)
			faults := make([]faultinject.Fault, cfg.CloudAPI.Retry.MaxAttempts)
			for i := range faults {
				faults[i] = faultinject.Fault{Kind: faultinject.Transient}
			}
			e.cloud.Faults.Script(cloudapi.OpUpdateLoadBalancer, faults...)
		}
		e.registerNode(harness.NodeSpec{Name: "node-c"})
		e.waitNodesInitialized("node-c")
		e.waitLB(web, "targets a, b, c", targetsAre("i-0001", "i-0002", "i-0003"))
		if m.faults {
			e.eventually("the class controller's UpdateLoadBalancerFailed event on web", func(context.Context) (bool, error) {
				return e.classEvent("web", "UpdateLoadBalancerFailed")
			})
		}
		e.labelNode("node-c", corev1.LabelNodeExcludeBalancers, "true")
		e.waitLB(web, "targets a, b", targetsAre("i-0001", "i-0002"))
	})

	t.Run("other classes and no class are untouched", func(t *testing.T) {
		e.untouched(other)
		e.untouched(plain)
	})

	t.Run("leaving the class through type ClusterIP deletes it", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ExternalTrafficPolicy = ""
			for i := range s.Spec.Ports {
				s.Spec.Ports[i].NodePort = 0
			}
		})
		svc, err := e.service("web")
		require.NoError(t, err)
		assert.Nil(t, svc.Spec.LoadBalancerClass, "the API server drops the class with type LoadBalancer")
		e.eventually("web's load balancer, finalizer and address gone", func(context.Context) (bool, error) {
			svc, err := e.service("web")
			if err != nil {
				return false, err
			}
			return len(e.serviceLBs(string(web.UID))) == 0 && !slices.Contains(svc.Finalizers, lbFinalizer) &&
				len(svc.Status.LoadBalancer.Ingress) == 0, nil
		})
	})

	t.Run("the class's Service deleted: load balancer and finalizer gone", func(t *testing.T) {
		api := e.createService(newLBService("api", withLBClass(e2eClass)))
		e.waitIngress("api")
		e.waitLB(api, "created", func(cloudapi.LoadBalancer) bool { return true })
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "api", metav1.DeleteOptions{}))
		e.eventually("Service api gone with its load balancer", func(context.Context) (bool, error) {
			_, err := e.service("api")
			return apierrors.IsNotFound(err) && len(e.serviceLBs(string(api.UID))) == 0, nil
		})
	})

	t.Run("still untouched at the end", func(t *testing.T) {
		e.untouched(other)
		e.untouched(plain)
	})
}

// TestLoadBalancerClassBesideUnclassed: ccmkit serves its class and, through the upstream
// service controller, Services without a class (serveUnclassed: true, the default). Each
// controller serves its own; a Service of another class stays untouched.
func TestLoadBalancerClassBesideUnclassed(t *testing.T) {
	forEachMode(t, loadBalancerClassBesideUnclassed)
}

func loadBalancerClassBesideUnclassed(t *testing.T, m mode) {
	e := newEnvWithConfig(t, m, "loadBalancer: {class: "+e2eClass+"}\n")
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.waitNodesInitialized("node-a")

	other := e.createService(newLBService("other", withLBClass(otherClass)))
	plain := e.createService(newLBService("plain"))
	web := e.createService(newLBService("web", withLBClass(e2eClass)))
	e.waitIngress("web")
	e.waitIngress("plain")
	e.waitLB(web, "targets a", targetsAre("i-0001"))
	e.waitLB(plain, "targets a", targetsAre("i-0001"))
	e.eventually("the class controller's event on web", func(context.Context) (bool, error) {
		return e.classEvent("web", "EnsuredLoadBalancer")
	})
	classOnPlain, err := e.classEvent("plain", "EnsuredLoadBalancer")
	require.NoError(t, err)
	assert.False(t, classOnPlain, "plain is the service controller's")

	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-b")
	e.waitLB(web, "targets a, b", targetsAre("i-0001", "i-0002"))
	e.waitLB(plain, "targets a, b", targetsAre("i-0001", "i-0002"))
	e.untouched(other)

	for _, name := range []string{"web", "plain"} {
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, name, metav1.DeleteOptions{}))
	}
	e.eventually("web and plain gone with their load balancers", func(context.Context) (bool, error) {
		_, errWeb := e.service("web")
		_, errPlain := e.service("plain")
		return apierrors.IsNotFound(errWeb) && apierrors.IsNotFound(errPlain) &&
			len(e.serviceLBs(string(web.UID))) == 0 && len(e.serviceLBs(string(plain.UID))) == 0, nil
	})
	e.untouched(other)
}
