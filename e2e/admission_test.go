package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmkit/ccmkit/e2e/harness"
	restcloud "github.com/ccmkit/ccmkit/examples/restcloud/adapter"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// warnings collects the warnings the API server sends (rest.Config.WarningHandler).
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestAdmissionPolicyRefusesMalformedAnnotations applies the admission policies of
// restcloud's configuration (ccmkit's annotations and restcloud's size setting,
// loadbalancer.AdmissionPolicy) to a real kube-apiserver and creates Services: malformed
// values and contradictions are refused with the key, the value and what is allowed;
// valid Services, Services without annotations, Services of another class and
// annotations only the sync can check are admitted; an unknown key is admitted with a
// warning.
func TestAdmissionPolicyRefusesMalformedAnnotations(t *testing.T) {
	cp, err := harness.StartControlPlane()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cp.Stop()) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A Service annotated wrongly before the policy exists, with the service controller's
	// finalizer: it must stay deletable.
	const p = loadbalancer.DefaultAnnotationPrefix
	before, err := cp.Client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: "default", Annotations: map[string]string{p + "internal": "maybe"},
			Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	policy, err := loadbalancer.AdmissionPolicy(loadbalancer.AdmissionPolicyOptions{Settings: restcloud.Settings})
	require.NoError(t, err)
	a := newApplier(t, cp.Config)
	objs := decodeObjects(t, policy)
	require.Len(t, objs, 4)
	for _, o := range objs {
		require.NoError(t, a.apply(ctx, o, false))
	}
	// The API server's type check, against the Service's schema from its OpenAPI, finds
	// nothing (kube-controller-manager's policy status controller would publish it).
	checker := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: cp.Client.Discovery()}, RestMapper: a.mapper}
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		var vap admissionregistrationv1.ValidatingAdmissionPolicy
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vap))
		assert.Empty(t, checker.Check(&vap), "type check of %s", vap.Name)
	}
	seen := &warnings{}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandler = seen
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	create := func(annotations map[string]string, tweaks ...func(*corev1.Service)) error {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default", Annotations: annotations},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
			}},
		}
		for _, tw := range tweaks {
			tw(svc)
		}
		_, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		return err
	}
	// A policy is active a moment after it is created: wait for both.
	require.NoError(t, harness.Eventually(ctx, time.Minute, "the policies refuse and warn", func(context.Context) (bool, error) {
		refused := apierrors.IsInvalid(create(map[string]string{p + "internal": "maybe"}))
		_ = seen.take()
		if err := create(map[string]string{p + "intenral": "true"}); err != nil {
			return false, err
		}
		return refused && len(seen.take()) > 0, nil
	}))

	t.Run("a Service annotated before the policy", func(t *testing.T) {
		services := cp.Client.CoreV1().Services("default")
		changed := before.DeepCopy()
		changed.Annotations[p+"internal"] = "perhaps"
		_, err := services.Update(ctx, changed, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "a changed annotation is checked: %v", err)

		require.NoError(t, services.Delete(ctx, before.Name, metav1.DeleteOptions{}))
		deleting, err := services.Get(ctx, before.Name, metav1.GetOptions{})
		require.NoError(t, err)
		deleting.Finalizers = nil
		_, err = services.Update(ctx, deleting, metav1.UpdateOptions{})
		require.NoError(t, err, "the service controller removes its finalizer")
		_, err = services.Get(ctx, before.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
	})

	clusterIP := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }
	otherClass := func(s *corev1.Service) { s.Spec.LoadBalancerClass = new("example.com/other") }
	lbIP := func(s *corev1.Service) { s.Spec.LoadBalancerIP = "10.0.0.1" } //nolint:staticcheck // the deprecated field is still honoured
	appProtocolHTTPS := func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = new("https") }
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		tweaks      []func(*corev1.Service)
		refused     string // in the answer's message; "" when admitted
		warning     string // in a warning; "" for none
	}{
		{name: "a malformed boolean", annotations: map[string]string{p + "internal": "maybe"},
			refused: `annotation loadbalancer.ccmkit.io/internal: "maybe" is not allowed (allowed: true, false)`},
		{name: "a port out of range", annotations: map[string]string{p + "health-check-port": "0"},
			refused: `annotation loadbalancer.ccmkit.io/health-check-port: "0" is not allowed (allowed: 1-65535)`},
		{name: "a duration without a unit", annotations: map[string]string{p + "health-check-interval": "10"},
			refused: `annotation loadbalancer.ccmkit.io/health-check-interval: "10" is not allowed`},
		{name: "an IP address as hostname", annotations: map[string]string{p + "hostname": "192.0.2.1"},
			refused: `annotation loadbalancer.ccmkit.io/hostname: "192.0.2.1" is not allowed`},
		{name: "two IPv4 addresses", annotations: map[string]string{p + "ip-addresses": "10.0.0.1,10.0.0.2"},
			refused: `annotation loadbalancer.ccmkit.io/ip-addresses: "10.0.0.1,10.0.0.2" is not allowed`},
		{name: "an unknown protocol", annotations: map[string]string{p + "protocol": "QUIC"},
			refused: `annotation loadbalancer.ccmkit.io/protocol: "QUIC" is not allowed (allowed: TCP, TLS, HTTP, HTTPS)`},
		{name: "restcloud's size", annotations: map[string]string{p + "size": "huge"},
			refused: `annotation loadbalancer.ccmkit.io/size: "huge" is not allowed (allowed: small, medium, large)`},
		{name: "TLS without a certificate", annotations: map[string]string{p + "tls-ports": "443"},
			refused: "annotation loadbalancer.ccmkit.io/tls-certificates names no certificate"},
		{name: "TLS on a UDP port", annotations: map[string]string{p + "tls-ports": "https,dns", p + "tls-certificates": "c"},
			refused: "names a port that is not TCP"},
		{name: "certificates without TLS", annotations: map[string]string{p + "tls-certificates": "c"},
			refused: "no port terminates TLS"},
		{name: "a timeout over the default interval", annotations: map[string]string{p + "health-check-timeout": "15s"},
			refused: "the health check timeout is longer than its interval"},
		{name: "spec.loadBalancerIP not among the addresses", annotations: map[string]string{p + "ip-addresses": "10.0.0.2"}, tweaks: []func(*corev1.Service){lbIP},
			refused: "spec.loadBalancerIP is not among the addresses"},
		{name: "keep-on-delete on a Service of another type", annotations: map[string]string{p + "keep-on-delete": "maybe"}, tweaks: []func(*corev1.Service){clusterIP},
			refused: `annotation loadbalancer.ccmkit.io/keep-on-delete: "maybe" is not allowed`},
		{name: "no annotation"},
		{name: "valid values", annotations: map[string]string{
			p + "internal": " TRUE ", p + "size": "Large", p + "tls-ports": "https", p + "tls-certificates": "c1, c2",
			p + "health-check-interval": "20s", p + "health-check-timeout": "15s", p + "hostname": "web.example.com",
			p + "ip-addresses": "10.0.0.1, 2001:db8::1", p + "health-check-path": "/ready", p + "name": "web-1",
		}, tweaks: []func(*corev1.Service){lbIP}},
		{name: "appProtocol https with a certificate", annotations: map[string]string{p + "tls-certificates": "c"}, tweaks: []func(*corev1.Service){appProtocolHTTPS}},
		{name: "a node selector, checked only at sync", annotations: map[string]string{p + "node-selector": "((("}},
		{name: "another class", annotations: map[string]string{p + "internal": "maybe"}, tweaks: []func(*corev1.Service){otherClass}},
		{name: "another type", annotations: map[string]string{p + "internal": "maybe"}, tweaks: []func(*corev1.Service){clusterIP}},
		{name: "an unknown key", annotations: map[string]string{p + "intenral": "true", p + "internal": "true"},
			warning: "annotations under loadbalancer.ccmkit.io/ that nothing reads (a typo, or a key of another version): loadbalancer.ccmkit.io/intenral; known: internal, "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = seen.take()
			err := create(tc.annotations, tc.tweaks...)
			warned := strings.Join(seen.take(), "\n")
			if tc.refused != "" {
				require.Error(t, err)
				assert.True(t, apierrors.IsInvalid(err), "422 Invalid: %v", err)
				assert.Contains(t, err.Error(), tc.refused)
				return
			}
			require.NoError(t, err)
			if tc.warning == "" {
				assert.Empty(t, warned)
				return
			}
			assert.Contains(t, warned, tc.warning)
		})
	}
}
