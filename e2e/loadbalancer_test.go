package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

const lbFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// svcTweak changes a Service before it is created or updated.
type svcTweak func(*corev1.Service)

func newLBService(name string, tweaks ...svcTweak) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, tweak := range tweaks {
		tweak(svc)
	}
	return svc
}

func (e *env) createService(svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	created, err := e.client.CoreV1().Services(svc.Namespace).Create(e.ctx, svc, metav1.CreateOptions{})
	require.NoError(e.t, err)
	return created
}

// updateService applies tweak to the current Service, retrying on conflicts with the
// service controller's own writes.
func (e *env) updateService(name string, tweak svcTweak) {
	e.t.Helper()
	for {
		svc, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, name, metav1.GetOptions{})
		require.NoError(e.t, err)
		tweak(svc)
		_, err = e.client.CoreV1().Services(metav1.NamespaceDefault).Update(e.ctx, svc, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			require.NoError(e.t, err)
			return
		}
	}
}

func (e *env) service(name string) (*corev1.Service, error) {
	return e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, name, metav1.GetOptions{})
}

// serviceLBs returns the cloud's load balancers owned by the Service with this UID.
func (e *env) serviceLBs(uid string) []cloudapi.LoadBalancer {
	return e.cloud.Fake.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: uid})
}

// waitLB waits until the Service's one load balancer satisfies cond, and returns it.
func (e *env) waitLB(svc *corev1.Service, what string, cond func(cloudapi.LoadBalancer) bool) cloudapi.LoadBalancer {
	e.t.Helper()
	return e.waitLBTagged(map[string]string{cloudapi.TagService: string(svc.UID)}, fmt.Sprintf("%s's load balancer: %s", svc.Name, what), cond)
}

// waitLBTagged waits until the one load balancer with tags (its owner's) satisfies cond,
// and returns it.
func (e *env) waitLBTagged(tags map[string]string, what string, cond func(cloudapi.LoadBalancer) bool) cloudapi.LoadBalancer {
	e.t.Helper()
	var lb cloudapi.LoadBalancer
	e.eventually(what, func(context.Context) (bool, error) {
		lbs := e.cloud.Fake.Inventory().LoadBalancersTagged(tags)
		if len(lbs) > 1 {
			return false, fmt.Errorf("%d load balancers for one owner", len(lbs))
		}
		if len(lbs) == 0 {
			return false, nil
		}
		lb = lbs[0]
		return cond(lb), nil
	})
	require.Len(e.t, e.cloud.Fake.Inventory().LoadBalancersTagged(tags), 1, "never two load balancers for one owner")
	return lb
}

// waitIngress waits until the Service's status has an ingress and returns it.
func (e *env) waitIngress(name string) corev1.LoadBalancerIngress {
	e.t.Helper()
	var ing corev1.LoadBalancerIngress
	e.eventually(name+"'s EXTERNAL-IP", func(context.Context) (bool, error) {
		svc, err := e.service(name)
		if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ing = svc.Status.LoadBalancer.Ingress[0]
		return true, nil
	})
	return ing
}

// waitSays waits until the Service shows its load balancer lbID the way ccmkit writes it
// (the ID annotation, the LoadBalancerReady condition True for its generation) beside the
// address the service controller publishes, and returns it: ccmkit's writes come before
// the service controller's status patch, which must leave them in place.
func (e *env) waitSays(name, lbID string) *corev1.Service {
	e.t.Helper()
	var svc *corev1.Service
	e.eventually(name+" says its load balancer is ready", func(context.Context) (bool, error) {
		var err error
		svc, err = e.service(name)
		if err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady)
		return svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID] == lbID && len(svc.Status.LoadBalancer.Ingress) > 0 &&
			ready != nil && ready.Status == metav1.ConditionTrue && ready.Reason == loadbalancer.ReasonProvisioned &&
			ready.ObservedGeneration == svc.Generation, nil
	})
	return svc
}

func (e *env) waitNodesInitialized(names ...string) {
	e.t.Helper()
	e.eventually(strings.Join(names, ", ")+" initialized", func(context.Context) (bool, error) {
		for _, name := range names {
			n, err := e.node(name)
			if err != nil || !initialized(n) {
				return false, err
			}
		}
		return true, nil
	})
}

func targetsAre(ids ...string) func(cloudapi.LoadBalancer) bool {
	return func(lb cloudapi.LoadBalancer) bool {
		got := slices.Clone(lb.Spec.Targets)
		slices.Sort(got)
		want := slices.Clone(ids)
		slices.Sort(want)
		return slices.Equal(got, want)
	}
}

func TestLoadBalancerLifecycle(t *testing.T) { forEachMode(t, loadBalancerLifecycle) }

func loadBalancerLifecycle(t *testing.T, m mode) {
	e := newEnvWithCloud(t, m, withFake(provisioning))
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")

	web := e.createService(newLBService("web"))
	var lb cloudapi.LoadBalancer
	t.Run("create", func(t *testing.T) {
		ing := e.waitIngress("web")
		lb = e.waitLB(web, "active", func(lb cloudapi.LoadBalancer) bool { return lb.Status == cloudapi.LoadBalancerActive })
		require.NotEmpty(t, lb.Addresses)
		assert.Equal(t, lb.Addresses[0], ing.IP, "the Service publishes the load balancer's address")
		require.NotNil(t, ing.IPMode)
		assert.Equal(t, corev1.LoadBalancerIPModeVIP, *ing.IPMode)
		assert.True(t, targetsAre("i-0001", "i-0002")(lb), "targets: %v", lb.Spec.Targets)
		svc, err := e.service("web")
		require.NoError(t, err)
		require.Len(t, lb.Spec.Listeners, 1)
		assert.Equal(t, cloudapi.Listener{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: svc.Spec.Ports[0].NodePort}, lb.Spec.Listeners[0])
		assert.Contains(t, svc.Finalizers, lbFinalizer)
		assert.Equal(t, clusterID, lb.Spec.Tags[cloudapi.TagCluster])
		e.waitSays("web", lb.ID)
		if !m.faults {
			e.waitedForProvisioning()
		}
	})

	t.Run("port added in place, address kept", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)})
		})
		updated := e.waitLB(web, "two listeners", func(lb cloudapi.LoadBalancer) bool { return len(lb.Spec.Listeners) == 2 })
		assert.Equal(t, lb.ID, updated.ID, "updated in place, not replaced")
		assert.Equal(t, lb.Addresses, updated.Addresses, "the address is kept")
	})

	t.Run("externalTrafficPolicy Local health check", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
		svc, err := e.service("web")
		require.NoError(t, err)
		require.NotZero(t, svc.Spec.HealthCheckNodePort, "the API allocates a health check node port")
		hc := e.waitLB(web, "health check on the healthCheckNodePort", func(lb cloudapi.LoadBalancer) bool {
			return lb.Spec.HealthCheck != nil && lb.Spec.HealthCheck.Port == svc.Spec.HealthCheckNodePort
		}).Spec.HealthCheck
		assert.Equal(t, "/healthz", hc.Path)
	})

	t.Run("source ranges", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} })
		e.waitLB(web, "source ranges", func(lb cloudapi.LoadBalancer) bool {
			return slices.Equal(lb.Spec.SourceRanges, []string{"192.0.2.0/24"})
		})
	})

	t.Run("node added and removed", func(t *testing.T) {
		e.registerNode(harness.NodeSpec{Name: "node-c"})
		e.waitNodesInitialized("node-c")
		e.waitLB(web, "targets a, b, c", targetsAre("i-0001", "i-0002", "i-0003"))
		require.NoError(t, e.client.CoreV1().Nodes().Delete(e.ctx, "node-c", metav1.DeleteOptions{}))
		e.waitLB(web, "targets a, b", targetsAre("i-0001", "i-0002"))
	})

	t.Run("empty node set", func(t *testing.T) {
		for _, name := range []string{"node-a", "node-b"} {
			e.labelNode(name, corev1.LabelNodeExcludeBalancers, "true")
		}
		e.waitLB(web, "no targets", targetsAre())
		for _, name := range []string{"node-a", "node-b"} {
			e.labelNode(name, corev1.LabelNodeExcludeBalancers, "")
		}
		e.waitLB(web, "targets a, b again", targetsAre("i-0001", "i-0002"))
	})

	t.Run("bad annotation is a Warning event naming it", func(t *testing.T) {
		key := "loadbalancer.ccmkit.io/proxy-protocol"
		bad := e.createService(newLBService("bad", func(s *corev1.Service) {
			s.Annotations = map[string]string{key: "maybe"}
		}))
		e.waitWarning("bad", key, "maybe")
		assert.Empty(t, e.serviceLBs(string(bad.UID)), "no load balancer from a malformed Service")
	})

	t.Run("type change away from LoadBalancer deletes it", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ExternalTrafficPolicy = ""
			s.Spec.LoadBalancerSourceRanges = nil
			for i := range s.Spec.Ports {
				s.Spec.Ports[i].NodePort = 0
			}
		})
		e.eventually("web's load balancer gone and finalizer removed", func(context.Context) (bool, error) {
			svc, err := e.service("web")
			if err != nil {
				return false, err
			}
			return len(e.serviceLBs(string(web.UID))) == 0 && !slices.Contains(svc.Finalizers, lbFinalizer), nil
		})
	})

	t.Run("Service deleted: load balancer and finalizer gone", func(t *testing.T) {
		api := e.createService(newLBService("api"))
		e.waitIngress("api")
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "api", metav1.DeleteOptions{}))
		e.eventually("Service api gone with its load balancer", func(context.Context) (bool, error) {
			_, err := e.service("api")
			return apierrors.IsNotFound(err) && len(e.serviceLBs(string(api.UID))) == 0, nil
		})
	})
}

// labelNode sets (value != "") or removes a label on a Node.
func (e *env) labelNode(name, key, value string) {
	e.t.Helper()
	for {
		n, err := e.node(name)
		require.NoError(e.t, err)
		if value == "" {
			delete(n.Labels, key)
		} else {
			n.Labels[key] = value
		}
		_, err = e.client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			require.NoError(e.t, err)
			return
		}
	}
}

// waitEvent waits for an event of the type and reason (any reason when empty) on the
// Service named name whose message contains every one of parts, and returns its message.
func (e *env) waitEvent(name, eventType, reason string, parts ...string) string {
	e.t.Helper()
	var msg string
	selector := "involvedObject.kind=Service,involvedObject.name=" + name + ",type=" + eventType
	if reason != "" {
		selector += ",reason=" + reason
	}
	e.eventually(fmt.Sprintf("a %s %s event on Service %s naming %q", eventType, reason, name, parts), func(ctx context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(ev.Message, p) }) {
				msg = ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	return msg
}

func TestLoadBalancerKeepAndAdopt(t *testing.T) { forEachMode(t, loadBalancerKeepAndAdopt) }

// loadBalancerKeepAndAdopt: a Service with keep-on-delete is deleted and its load
// balancer stays in the cloud, untagged, with its address; a new Service that names it by
// ID gets the same address; a third Service that names it while it is owned gets a
// Warning event and changes nothing.
func loadBalancerKeepAndAdopt(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")
	annotated := func(kv ...string) svcTweak {
		return func(s *corev1.Service) {
			s.Annotations = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				s.Annotations["loadbalancer.ccmkit.io/"+kv[i]] = kv[i+1]
			}
		}
	}

	kept := e.createService(newLBService("kept", annotated("keep-on-delete", "true")))
	ing := e.waitIngress("kept")
	lb := e.waitLB(kept, "active", func(lb cloudapi.LoadBalancer) bool { return lb.Status == cloudapi.LoadBalancerActive })
	require.Equal(t, []string{ing.IP}, lb.Addresses)

	t.Run("deleted with keep-on-delete: kept in the cloud, untagged, with its address", func(t *testing.T) {
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "kept", metav1.DeleteOptions{}))
		e.eventually("Service kept gone", func(context.Context) (bool, error) {
			_, err := e.service("kept")
			return apierrors.IsNotFound(err), nil
		})
		var released cloudapi.LoadBalancer
		for _, l := range e.cloud.Fake.Inventory().LoadBalancers {
			if l.ID == lb.ID {
				released = l
			}
		}
		require.Equal(t, lb.ID, released.ID, "the load balancer is still in the cloud")
		assert.Equal(t, lb.Addresses, released.Addresses, "with its address")
		assert.NotContains(t, released.Spec.Tags, cloudapi.TagCluster)
		assert.NotContains(t, released.Spec.Tags, cloudapi.TagService)
		assert.NotContains(t, released.Spec.Tags, cloudapi.TagServiceName)
		assert.Empty(t, released.Spec.Targets, "no traffic into the cluster's node ports")
		assert.Equal(t, lb.Spec.Listeners, released.Spec.Listeners)
		e.waitEvent("kept", corev1.EventTypeNormal, "KeptLoadBalancer", lb.ID, ing.IP, "loadbalancer.ccmkit.io/load-balancer-id: "+lb.ID)
	})

	again := e.createService(newLBService("again", annotated("load-balancer-id", lb.ID)))
	var adopted cloudapi.LoadBalancer
	t.Run("a new Service names it by ID: the same address", func(t *testing.T) {
		assert.Equal(t, ing.IP, e.waitIngress("again").IP)
		adopted = e.waitLB(again, "targets a, b", targetsAre("i-0001", "i-0002"))
		assert.Equal(t, lb.ID, adopted.ID)
		assert.Equal(t, lb.Addresses, adopted.Addresses)
		assert.Equal(t, clusterID, adopted.Spec.Tags[cloudapi.TagCluster])
		assert.Equal(t, "default/again", adopted.Spec.Tags[cloudapi.TagServiceName])
		e.waitEvent("again", corev1.EventTypeNormal, "AdoptedLoadBalancer", lb.ID, ing.IP)
	})

	t.Run("a Service naming an owned load balancer: a Warning event, nothing changed", func(t *testing.T) {
		thief := e.createService(newLBService("thief", annotated("load-balancer-id", lb.ID)))
		msg := e.waitEvent("thief", corev1.EventTypeWarning, "SyncLoadBalancerFailed", lb.ID, "which belongs to another Service")
		assert.NotContains(t, msg, "again", "the event names no other Service")
		assert.NotContains(t, msg, string(again.UID))
		svc, err := e.service("thief")
		require.NoError(t, err)
		assert.Empty(t, svc.Status.LoadBalancer.Ingress)
		assert.Empty(t, e.serviceLBs(string(thief.UID)))
		now := e.waitLB(again, "still the same", func(cloudapi.LoadBalancer) bool { return true })
		assert.Equal(t, adopted.Spec, now.Spec, "the owner's load balancer is untouched")
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "thief", metav1.DeleteOptions{}))
	})

	t.Run("the adopted load balancer goes with its Service without keep-on-delete", func(t *testing.T) {
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "again", metav1.DeleteOptions{}))
		e.eventually("Service again gone with its load balancer", func(context.Context) (bool, error) {
			_, err := e.service("again")
			return apierrors.IsNotFound(err) && len(e.cloud.Fake.Inventory().LoadBalancers) == 0, nil
		})
	})
}
