package loadbalancer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestTranslate checks the pure translation from a Service to its spec: what it returns
// and the problems it hands the caller, who reports them.
func TestTranslate(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	size := Setting{Name: "size", Values: []string{"small", "large"}, Default: "small"}
	service := func(annotations map[string]string, ports ...corev1.ServicePort) *corev1.Service {
		if len(ports) == 0 {
			ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}
		}
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1", Annotations: annotations},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
		}
	}
	for _, tc := range []struct {
		name     string
		svc      *corev1.Service
		check    func(t *testing.T, spec cloudapi.LoadBalancerSpec)
		problems []problem // compared by severity and key; err checked apart
		errText  string    // in the Service's error; "" for none
	}{
		{
			name: "defaults",
			svc:  service(nil),
			check: func(t *testing.T, spec cloudapi.LoadBalancerSpec) {
				assert.Equal(t, "c1-au1", spec.Name)
				assert.Equal(t, []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}, spec.Listeners)
				assert.Equal(t, []string{"i-1", "i-2"}, spec.Targets)
				assert.Equal(t, &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: KubeProxyHealthzPort, Path: "/healthz", Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3}, spec.HealthCheck)
				assert.Equal(t, map[string]string{"size": "small"}, spec.SettingValues)
				assert.Equal(t, map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "u-1", cloudapi.TagServiceName: "default/web"}, spec.Tags)
			},
		},
		{
			name: "an unknown key is a warning, not an error",
			svc:  service(map[string]string{prefix + "intenral": "true", prefix + "size": "LARGE"}),
			check: func(t *testing.T, spec cloudapi.LoadBalancerSpec) {
				assert.False(t, spec.Internal)
				assert.Equal(t, map[string]string{"size": "large"}, spec.SettingValues, "canonical")
			},
			problems: []problem{{severity: severityWarning, key: prefix + "intenral"}},
		},
		{
			name: "a malformed value is an error naming the annotation, the value and what is allowed",
			svc:  service(map[string]string{prefix + AnnotationHealthCheckPort: "0", prefix + "size": "huge"}),
			check: func(t *testing.T, spec cloudapi.LoadBalancerSpec) {
				assert.Equal(t, int32(KubeProxyHealthzPort), spec.HealthCheck.Port, "the default stays")
			},
			problems: []problem{{key: prefix + AnnotationHealthCheckPort}, {key: prefix + "size"}},
			errText:  `annotation loadbalancer.ccmkit.io/health-check-port: "0": not a whole number from 1 to 65535 (allowed: 1-65535)`,
		},
		{
			name: "TLS without a certificate, and a node selector",
			svc:  service(map[string]string{prefix + AnnotationTLSPorts: "80", prefix + AnnotationNodeSelector: "pool=a"}),
			check: func(t *testing.T, spec cloudapi.LoadBalancerSpec) {
				assert.Empty(t, spec.Listeners)
				assert.Equal(t, []string{"i-1"}, spec.Targets)
			},
			problems: []problem{{key: prefix + AnnotationTLSCertificates}},
			errText:  "port 80/TCP terminates TLS (TLS): annotation loadbalancer.ccmkit.io/tls-certificates names no certificate",
		},
		{
			name:     "a port without a node port",
			svc:      service(nil, corev1.ServicePort{Protocol: corev1.ProtocolUDP, Port: 53}),
			problems: []problem{{key: "spec.ports"}},
			errText:  "port 53/UDP has no node port",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _, ps := translate(translation{
				svc: tc.svc,
				targets: func(sel labels.Selector) []string {
					if sel != nil && !sel.Matches(labels.Set{"pool": "b"}) {
						return []string{"i-1"}
					}
					return []string{"i-1", "i-2"}
				},
				clusterID: "c1", prefix: prefix,
				declarations: Settings{size}, settingDefaults: map[string]string{"size": "small"},
			})
			if tc.check != nil {
				tc.check(t, spec)
			}
			require.Len(t, ps, len(tc.problems), "%v", ps)
			for i, p := range ps {
				assert.Equal(t, tc.problems[i].severity, p.severity, p)
				assert.Equal(t, tc.problems[i].key, p.key, p)
				require.Error(t, p.err)
				if p.severity == severityError && p.key != "spec.ports" && p.key != prefix+AnnotationTLSCertificates {
					var ae *AnnotationError
					require.ErrorAs(t, p.err, &ae)
					assert.Equal(t, tc.svc.Annotations[ae.Key], ae.Value)
					assert.NotEmpty(t, ae.Allowed)
				}
			}
			err := ps.err(tc.svc)
			if tc.errText == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "service default/web: ")
			assert.Contains(t, err.Error(), tc.errText)
		})
	}
}
