package loadbalancer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestStickinessSyncAndPolicy: a Service's cookie stickiness, as the sync translates it and
// as the admission policy checks it, reading the same shape: the policy refuses exactly
// what the sync refuses (but a Service without a port that speaks HTTP, which only the
// sync sees), with the message naming the annotation.
func TestStickinessSyncAndPolicy(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	sticky, name, lifetime := prefix+AnnotationStickySessions, prefix+AnnotationStickySessionsCookieName, prefix+AnnotationStickySessionsCookieLifetime
	http := prefix + AnnotationProtocol
	noCookie := cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureCookieAffinity}}
	noClientIP := cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureSessionAffinity}}
	notInternal := cloudapi.LoadBalancerShape{Exclusive: [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureCookieAffinity}}}
	clientIP := func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }
	for _, tc := range []struct {
		name        string
		shape       cloudapi.LoadBalancerShape
		annotations map[string]string
		tweak       func(*corev1.Service)
		want        cloudapi.LoadBalancerSpec // the affinity of the spec, when admitted
		sync        string                    // in the sync's error; empty: admitted
		policy      string                    // in the policy's refusal; empty: admitted
	}{
		{name: "cookie with the defaults", annotations: map[string]string{sticky: "Cookie", http: "HTTP"},
			want: cloudapi.LoadBalancerSpec{SessionAffinity: cloudapi.SessionAffinityCookie, SessionAffinityCookieName: "ccmkit-sticky", SessionAffinityTimeout: 5 * time.Minute}},
		{name: "cookie with a name and a lifetime", annotations: map[string]string{sticky: "cookie", http: "HTTPS", prefix + AnnotationTLSCertificates: "c1", name: "SRV", lifetime: "3600"},
			want: cloudapi.LoadBalancerSpec{SessionAffinity: cloudapi.SessionAffinityCookie, SessionAffinityCookieName: "SRV", SessionAffinityTimeout: time.Hour}},
		{name: "cookie where only client-IP stickiness is unsupported", shape: noClientIP, annotations: map[string]string{sticky: "cookie", http: "HTTP"},
			want: cloudapi.LoadBalancerSpec{SessionAffinity: cloudapi.SessionAffinityCookie, SessionAffinityCookieName: "ccmkit-sticky", SessionAffinityTimeout: 5 * time.Minute}},
		{name: "none with ClientIP", annotations: map[string]string{sticky: "none"}, tweak: clientIP,
			want: cloudapi.LoadBalancerSpec{SessionAffinity: cloudapi.SessionAffinityClientIP, SessionAffinityTimeout: 3 * time.Hour}},
		{name: "cookie where the cloud does not offer it", shape: noCookie, annotations: map[string]string{sticky: "cookie", http: "HTTP"},
			sync: "do not support cookie stickiness (annotation " + sticky + ")", policy: "annotation " + sticky + ": this cloud's load balancers do not offer cookie stickiness"},
		{name: "none where the cloud does not offer cookies", shape: noCookie, annotations: map[string]string{sticky: "none"}},
		{name: "cookie with ClientIP", annotations: map[string]string{sticky: "cookie", http: "HTTP"}, tweak: clientIP,
			sync: "annotation " + sticky + " asks for cookie stickiness and spec.sessionAffinity for ClientIP", policy: "annotation " + sticky + " asks for cookie stickiness and spec.sessionAffinity for ClientIP"},
		{name: "a cookie name without cookie stickiness", annotations: map[string]string{name: "SRV"},
			sync: "annotation " + name + " is set, but annotation " + sticky + " does not ask for cookie stickiness", policy: "annotation " + name + " is set, but annotation " + sticky + " does not ask"},
		{name: "a lifetime with none", annotations: map[string]string{sticky: "none", lifetime: "60"},
			sync: "annotation " + lifetime + " is set", policy: "annotation " + lifetime + " is set"},
		{name: "cookie and internal, which the cloud cannot combine", shape: notInternal, annotations: map[string]string{sticky: "cookie", http: "HTTP", prefix + AnnotationInternal: "true"},
			sync: "cookie stickiness (annotation " + sticky + ")", policy: "cannot combine an internal load balancer (annotation " + prefix + AnnotationInternal + ") with cookie stickiness (annotation " + sticky + ")"},
		{name: "cookie without an HTTP port", annotations: map[string]string{sticky: "cookie"},
			sync: "no port speaks HTTP or HTTPS at the load balancer"}, // the policy leaves it to the sync
	} {
		t.Run(tc.name, func(t *testing.T) {
			tweaks := []func(*corev1.Service){func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }}
			if tc.tweak != nil {
				tweaks = append(tweaks, tc.tweak)
			}
			svc := lbService(tc.annotations, tweaks...)
			spec, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", shape: tc.shape, targets: func(labels.Selector) []string { return nil }})
			refused := newPolicyEval(t, AdmissionPolicyOptions{Shape: tc.shape}).admit(t, svc, "")[admissionregistrationv1.Deny]
			if tc.policy == "" {
				assert.Empty(t, refused, "the policy")
			} else {
				assert.Contains(t, strings.Join(refused, "\n"), tc.policy, "the policy")
			}
			if tc.sync != "" {
				require.ErrorContains(t, ps.err(svc), tc.sync, "the sync")
				return
			}
			require.NoError(t, ps.err(svc), "the sync")
			require.NoError(t, spec.Validate())
			assert.Equal(t, tc.want.SessionAffinity, spec.SessionAffinity)
			assert.Equal(t, tc.want.SessionAffinityCookieName, spec.SessionAffinityCookieName)
			assert.Equal(t, tc.want.SessionAffinityTimeout, spec.SessionAffinityTimeout)
		})
	}
}
