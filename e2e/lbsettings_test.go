package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/fake"
)

// lbAnnotation is the whole key of a load balancer annotation under the default prefix.
func lbAnnotation(name string) string { return "loadbalancer.ccmkit.io/" + name }

func withAnnotations(kv ...string) svcTweak {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// externalIP returns the EXTERNAL-IP column of `kubectl get service name`: the API server
// prints the table (server-side printing, as kubectl asks for it), so this is exactly
// what kubectl shows.
func (e *env) externalIP(ctx context.Context, name string) (string, error) {
	raw, err := e.client.CoreV1().RESTClient().Get().Namespace(metav1.NamespaceDefault).Resource("services").Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return "", err
	}
	col := slices.IndexFunc(table.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "External-IP" })
	if col < 0 || len(table.Rows) != 1 || len(table.Rows[0].Cells) <= col {
		return "", fmt.Errorf("no External-IP in the table of service %s: %s", name, bytes.TrimSpace(raw))
	}
	return fmt.Sprint(table.Rows[0].Cells[col]), nil
}

// waitExternalIP waits until `kubectl get service name` shows want as EXTERNAL-IP.
func (e *env) waitExternalIP(name, want string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("kubectl get service %s shows EXTERNAL-IP %s", name, want), func(ctx context.Context) (bool, error) {
		got, err := e.externalIP(ctx, name)
		return got == want, err
	})
}

// TestLoadBalancerHostname: on a cloud whose load balancers are DNS names (no address), a
// Service's status and `kubectl get service` show the load balancer's hostname; the
// hostname annotation publishes another name instead.
func TestLoadBalancerHostname(t *testing.T) { forEachMode(t, loadBalancerHostname) }

func loadBalancerHostname(t *testing.T, m mode) {
	e := newEnvWithCloud(t, m, withFake("hostnames: {domain: lb.e2e.example.com, withoutAddresses: true}"))
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.waitNodesInitialized("node-a")
	web := e.createService(newLBService("web"))

	lb := e.waitLB(web, "active", func(lb cloudapi.LoadBalancer) bool { return lb.Status == cloudapi.LoadBalancerActive })
	require.NotEmpty(t, lb.Hostname, "the cloud gives hostnames")
	assert.Empty(t, lb.Addresses, "and no addresses")
	ing := e.waitIngress("web")
	assert.Equal(t, corev1.LoadBalancerIngress{Hostname: lb.Hostname}, ing, "the status holds the hostname alone")
	e.waitExternalIP("web", lb.Hostname)

	t.Run("the hostname annotation publishes its name instead", func(t *testing.T) {
		const name = "web.e2e.example.org"
		e.updateService("web", withAnnotations(lbAnnotation("hostname"), name))
		e.eventually("web's status holds "+name, func(ctx context.Context) (bool, error) {
			svc, err := e.service("web")
			if err != nil {
				return false, err
			}
			ing := svc.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].Hostname == name && ing[0].IP == "", nil
		})
		e.waitExternalIP("web", name)
		assert.Len(t, e.serviceLBs(string(web.UID)), 1, "the same load balancer")
	})
}

// TestLoadBalancerNodeSelector: the node-selector annotation chooses the targets, and a
// change of a Node's labels alone (which the service controller does not sync) moves them.
func TestLoadBalancerNodeSelector(t *testing.T) { forEachMode(t, loadBalancerNodeSelector) }

func loadBalancerNodeSelector(t *testing.T, m mode) {
	e := newEnv(t, m)
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		e.registerNode(harness.NodeSpec{Name: name})
	}
	e.waitNodesInitialized("node-a", "node-b", "node-c")
	e.labelNode("node-a", "pool", "web")
	e.labelNode("node-c", "pool", "db")

	web := e.createService(newLBService("web", withAnnotations(lbAnnotation("node-selector"), "pool=web")))
	e.waitIngress("web")
	e.waitLB(web, "targets a", targetsAre("i-0001"))

	t.Run("a Node labelled into the selection becomes a target", func(t *testing.T) {
		e.labelNode("node-b", "pool", "web")
		e.waitLB(web, "targets a, b", targetsAre("i-0001", "i-0002"))
	})
	t.Run("a Node labelled out of it is no target", func(t *testing.T) {
		e.labelNode("node-a", "pool", "")
		e.waitLB(web, "targets b", targetsAre("i-0002"))
	})
	t.Run("a selector that matches no Node: no targets", func(t *testing.T) {
		e.updateService("web", withAnnotations(lbAnnotation("node-selector"), "pool=cache"))
		e.waitLB(web, "no targets", targetsAre())
	})
	t.Run("a malformed selector is a Warning event and leaves the targets", func(t *testing.T) {
		e.updateService("web", withAnnotations(lbAnnotation("node-selector"), "pool=db"))
		e.waitLB(web, "targets c", targetsAre("i-0003"))
		e.updateService("web", withAnnotations(lbAnnotation("node-selector"), "pool in (db"))
		e.waitWarning("web", lbAnnotation("node-selector"), "pool in (db")

		// Label changes while the selector is malformed. The watch syncs every Service with
		// a selector in one pass, one pass after another: once db's targets show the last
		// change, the passes of the changes before, which met web too, are over.
		db := e.createService(newLBService("db", withAnnotations(lbAnnotation("node-selector"), "pool=db")))
		e.waitLB(db, "targets c", targetsAre("i-0003"))
		e.labelNode("node-a", "pool", "db")
		e.waitLB(db, "targets a, c", targetsAre("i-0001", "i-0003"))
		e.labelNode("node-b", "pool", "db")
		e.waitLB(db, "targets a, b, c", targetsAre("i-0001", "i-0002", "i-0003"))
		e.labelNode("node-b", "pool", "")
		e.waitLB(db, "targets a, c", targetsAre("i-0001", "i-0003"))
		assert.True(t, targetsAre("i-0003")(e.serviceLBs(string(web.UID))[0]), "web's targets stay")
	})
}

// waitWarning waits for a Warning event of any reason on Service name whose message holds
// every part.
func (e *env) waitWarning(name string, parts ...string) {
	e.t.Helper()
	e.waitEvent(name, corev1.EventTypeWarning, "", parts...)
}

// TestLoadBalancerSettings: session affinity and a TLS listener with certificate
// references reach the cloud's load balancer, and a certificate change is one update.
func TestLoadBalancerSettings(t *testing.T) { forEachMode(t, loadBalancerSettings) }

func loadBalancerSettings(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.waitNodesInitialized("node-a")
	https, http := "https", "http"
	timeout := int32(600)
	web := e.createService(newLBService("web",
		withAnnotations(lbAnnotation("tls-certificates"), "cert-e2e-main,cert-e2e-alt"),
		func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: &http},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8080), AppProtocol: &https},
			}
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}))
	e.waitIngress("web")
	lb := e.waitLB(web, "active", func(lb cloudapi.LoadBalancer) bool { return lb.Status == cloudapi.LoadBalancerActive })
	svc, err := e.service("web")
	require.NoError(t, err)

	t.Run("session affinity", func(t *testing.T) {
		assert.Equal(t, cloudapi.SessionAffinityClientIP, lb.Spec.SessionAffinity)
		assert.Equal(t, 10*time.Minute, lb.Spec.SessionAffinityTimeout)
	})
	t.Run("an HTTP listener and a TLS listener with the certificate references", func(t *testing.T) {
		assert.ElementsMatch(t, []cloudapi.Listener{
			{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: svc.Spec.Ports[0].NodePort, AppProtocol: cloudapi.AppProtocolHTTP},
			{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: svc.Spec.Ports[1].NodePort,
				AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: []string{"cert-e2e-main", "cert-e2e-alt"}},
		}, lb.Spec.Listeners)
	})
	t.Run("a certificate change updates the listener in place", func(t *testing.T) {
		e.updateService("web", withAnnotations(lbAnnotation("tls-certificates"), "cert-e2e-next"))
		updated := e.waitLB(web, "the new certificate", func(lb cloudapi.LoadBalancer) bool {
			i := slices.IndexFunc(lb.Spec.Listeners, func(l cloudapi.Listener) bool { return l.Port == 443 })
			return i >= 0 && slices.Equal(lb.Spec.Listeners[i].Certificates, []string{"cert-e2e-next"})
		})
		assert.Equal(t, lb.ID, updated.ID, "in place")
		assert.Equal(t, lb.Addresses, updated.Addresses)
	})
	t.Run("session affinity off", func(t *testing.T) {
		e.updateService("web", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityNone
			s.Spec.SessionAffinityConfig = nil
		})
		e.waitLB(web, "no session affinity", func(lb cloudapi.LoadBalancer) bool {
			return lb.Spec.SessionAffinity == cloudapi.SessionAffinityNone && lb.Spec.SessionAffinityTimeout == 0
		})
	})
}

// TestLoadBalancerAdapterSetting: a setting the provider declares (harness.
// LoadBalancerSettings' size) reaches the cloud's load balancer from its annotation, and a
// change is one update of the same load balancer (same ID and address); a malformed value
// and a misspelt key are each a Warning event naming them, and change nothing.
func TestLoadBalancerAdapterSetting(t *testing.T) { forEachMode(t, loadBalancerAdapterSetting) }

func loadBalancerAdapterSetting(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.waitNodesInitialized("node-a")
	web := e.createService(newLBService("web", withAnnotations(lbAnnotation("size"), "Medium")))
	e.waitIngress("web")
	lb := e.waitLB(web, "size medium", func(lb cloudapi.LoadBalancer) bool {
		return lb.Status == cloudapi.LoadBalancerActive && lb.Spec.SettingValues["size"] == "medium"
	})
	assert.Equal(t, map[string]string{"size": "medium"}, lb.Spec.SettingValues, "the canonical value, nothing else")

	t.Run("a change is one update in place", func(t *testing.T) {
		before := len(e.cloud.Fake.LoadBalancerHistory())
		e.updateService("web", withAnnotations(lbAnnotation("size"), "large"))
		updated := e.waitLB(web, "size large", func(lb cloudapi.LoadBalancer) bool { return lb.Spec.SettingValues["size"] == "large" })
		assert.Equal(t, lb.ID, updated.ID, "in place")
		assert.Equal(t, lb.Addresses, updated.Addresses)
		if m.faults {
			return // a write whose answer a fault lost is made again
		}
		var writes []fake.Event
		for _, ev := range e.cloud.Fake.LoadBalancerHistory()[before:] {
			if ev.ID == lb.ID {
				writes = append(writes, ev)
			}
		}
		require.Len(t, writes, 1, "one write: %+v", writes)
		assert.Equal(t, cloudapi.OpUpdateLoadBalancer, writes[0].Op)
		assert.Equal(t, []string{"size"}, writes[0].Changes.SettingValues)
	})
	t.Run("a malformed value is a Warning event naming it", func(t *testing.T) {
		e.updateService("web", withAnnotations(lbAnnotation("size"), "huge"))
		e.waitWarning("web", lbAnnotation("size"), `"huge"`, "small, medium, large")
	})
	t.Run("a misspelt key is a Warning event naming it", func(t *testing.T) {
		e.updateService("web", withAnnotations(lbAnnotation("size"), "large", lbAnnotation("sise"), "small"))
		e.waitEvent("web", corev1.EventTypeWarning, "UnknownAnnotation", lbAnnotation("sise"))
		assert.Equal(t, "large", e.serviceLBs(string(web.UID))[0].Spec.SettingValues["size"], "the misspelt key changes nothing")
	})
}
