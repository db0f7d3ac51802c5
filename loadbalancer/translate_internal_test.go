package loadbalancer

import (
	"strings"
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

// TestTranslatePortHealthChecks checks the port-health-checks annotation: a port's own
// health check over the Service's, on a cloud that builds one (its shape declares
// FeatureListenerHealthCheck), and the problems of the annotation and of a cloud that
// keeps one health check for all ports.
func TestTranslatePortHealthChecks(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	key := prefix + AnnotationPortHealthChecks
	perPort := cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck}, HealthCheckUnit: time.Second}
	ports := []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30054},
	}
	svcHC := cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: KubeProxyHealthzPort, Path: "/healthz", Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3}
	with := func(change func(*cloudapi.HealthCheck)) *cloudapi.HealthCheck {
		hc := svcHC
		change(&hc)
		return &hc
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		shape       cloudapi.LoadBalancerShape
		want        map[string]*cloudapi.HealthCheck // by listener name; absent: none of its own
		errText     string                           // in the Service's error; "" for none
	}{
		{name: "none", annotations: nil, shape: perPort},
		{
			name:        "by number and by name, each part not set is the Service's",
			annotations: map[string]string{key: "443: protocol=HTTPS path=/ready interval=5s; dns: protocol=TCP port=9153", prefix + AnnotationHealthCheckUnhealthyThreshold: "5"},
			shape:       perPort,
			want: map[string]*cloudapi.HealthCheck{
				"https": with(func(hc *cloudapi.HealthCheck) {
					hc.Protocol, hc.Path, hc.Interval, hc.UnhealthyThreshold = cloudapi.HealthCheckHTTPS, "/ready", 5*time.Second, 5
				}),
				"dns": with(func(hc *cloudapi.HealthCheck) {
					hc.Protocol, hc.Port, hc.Path, hc.UnhealthyThreshold = cloudapi.HealthCheckTCP, 9153, "", 5
				}),
			},
		},
		{
			name:        "a number names the port of each protocol",
			annotations: map[string]string{key: "53: port=9153"},
			shape:       perPort,
			want: map[string]*cloudapi.HealthCheck{
				"dns":     with(func(hc *cloudapi.HealthCheck) { hc.Port = 9153 }),
				"dns-tcp": with(func(hc *cloudapi.HealthCheck) { hc.Port = 9153 }),
			},
		},
		{name: "a port's own that is the Service's is none", annotations: map[string]string{key: "80: path=/healthz"}, shape: perPort},
		{name: "a short interval alone shortens the default timeout", annotations: map[string]string{key: "80: interval=2s"}, shape: perPort,
			want: map[string]*cloudapi.HealthCheck{"http": with(func(hc *cloudapi.HealthCheck) { hc.Interval, hc.Timeout = 2*time.Second, 2*time.Second })}},
		{name: "a port the Service does not have", annotations: map[string]string{key: "8080: port=1"}, shape: perPort, errText: "the Service has no port 8080"},
		{name: "a timeout longer than the interval", annotations: map[string]string{key: "80: interval=2s timeout=3s"}, shape: perPort, errText: "timeout of port 80 3s is longer than its interval 2s"},
		{name: "a time the cloud would round", annotations: map[string]string{key: "80: interval=2500ms"}, shape: perPort, errText: "whole numbers of 1s"},
		{name: "a malformed part", annotations: map[string]string{key: "80: protocol=UDP"}, shape: perPort, errText: "port 80: protocol="},
		{name: "an unknown part", annotations: map[string]string{key: "80: colour=red"}, shape: perPort, errText: "is not one of protocol=, port="},
		{name: "a port named twice", annotations: map[string]string{key: "80: port=1; 80: port=2"}, shape: perPort, errText: "port 80 is named twice"},
		{
			name:        "a cloud with one health check for all ports refuses it",
			annotations: map[string]string{key: "443: protocol=HTTPS path=/ready"},
			shape:       cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck}},
			want:        map[string]*cloudapi.HealthCheck{"https": with(func(hc *cloudapi.HealthCheck) { hc.Protocol, hc.Path = cloudapi.HealthCheckHTTPS, "/ready" })},
			errText:     "do not support a health check of a port's own, they keep one per load balancer (ports 443/TCP; annotation " + key + ")",
		},
		{name: "the zero shape refuses it", annotations: map[string]string{key: "80: port=1"},
			want:    map[string]*cloudapi.HealthCheck{"http": with(func(hc *cloudapi.HealthCheck) { hc.Port = 1 })},
			errText: "do not support a health check of a port's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1", Annotations: tc.annotations},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
			}
			spec, _, ps := translate(translation{svc: svc, targets: func(labels.Selector) []string { return nil }, clusterID: "c1", prefix: prefix, shape: tc.shape})
			wantHC := svcHC
			if tc.annotations[prefix+AnnotationHealthCheckUnhealthyThreshold] != "" {
				wantHC.UnhealthyThreshold = 5
			}
			assert.Equal(t, &wantHC, spec.HealthCheck, "the Service's")
			got := map[string]*cloudapi.HealthCheck{}
			for _, l := range spec.Listeners {
				if l.HealthCheck != nil {
					got[l.Name] = l.HealthCheck
				}
			}
			if len(tc.want) == 0 {
				assert.Empty(t, got)
			} else {
				assert.Equal(t, tc.want, got)
			}
			err := ps.err(svc)
			if tc.errText == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errText)
			for _, p := range ps {
				assert.Equal(t, key, p.key, "the problem names the annotation")
			}
		})
	}
}

// TestTranslateKeptPortHealthChecksInRange: an adopted load balancer whose ports keep
// health checks of their own takes the parts the Service's annotations set on each, and
// a part out of the cloud's ranges is the Service's problem at sync, as on a load balancer
// with one health check.
func TestTranslateKeptPortHealthChecksInRange(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	shape := cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck},
		HealthCheckUnit: time.Second, HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 3 * time.Second, Max: time.Minute}}}
	ports := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}, {Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}
	own := func(port int32) *cloudapi.HealthCheck {
		return &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: port, Interval: 15 * time.Second, Timeout: 10 * time.Second, HealthyThreshold: 3, UnhealthyThreshold: 3}
	}
	current := &cloudapi.LoadBalancer{ID: "lb-1", Spec: cloudapi.LoadBalancerSpec{
		Tags: map[string]string{cloudapi.TagAdopted: "health-check"},
		Listeners: []cloudapi.Listener{
			{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080, HealthCheck: own(30080)},
			{Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443, HealthCheck: own(30443)},
		}}}
	for _, tc := range []struct {
		name, interval string
		errText        string
	}{
		{name: "in range", interval: "30s"},
		{name: "out of range", interval: "2m", errText: "the range of this cloud's health checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1",
					Annotations: map[string]string{prefix + AnnotationHealthCheckInterval: tc.interval}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
			}
			spec, _, ps := translate(translation{svc: svc, current: current, targets: func(labels.Selector) []string { return nil },
				clusterID: "c1", prefix: prefix, shape: shape})
			err := ps.err(svc)
			if tc.errText == "" {
				require.NoError(t, err)
				require.Len(t, spec.Listeners, 2)
				for _, l := range spec.Listeners {
					require.NotNil(t, l.HealthCheck, "port %d keeps its own", l.Port)
					assert.Equal(t, l.TargetPort, l.HealthCheck.Port, "port %d's own, on its node port", l.Port)
					assert.Equal(t, 30*time.Second, l.HealthCheck.Interval, "the part the Service sets")
				}
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errText)
			assert.Equal(t, 1, strings.Count(err.Error(), prefix+AnnotationHealthCheckInterval), "said once, not once a port: %v", err)
		})
	}
}
