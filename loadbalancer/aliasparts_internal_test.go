package loadbalancer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestAdmissionPolicyAliasParts: the policy neither refuses nor misreads a Service whose
// ports' protocols only the sync reads (port-protocols, or a legacy key whose Parts set
// it): a legacy tls-ports that means HTTPS is not read as ccmkit's tls-ports, the
// certificates of a port port-protocols makes HTTPS are not "unused", and the legacy key
// is listed as checked at sync time only. Without port-protocols, the policy still
// refuses certificates no port uses.
func TestAdmissionPolicyAliasParts(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	legacyTLS := "service.beta.kubernetes.io/do-loadbalancer-tls-ports"
	aliases := Aliases{Keys: []Alias{{Key: legacyTLS, Parts: []string{AnnotationPortProtocols}, Allowed: "port numbers",
		ConvertParts: func(v string) (map[string]string, error) {
			return map[string]string{AnnotationPortProtocols: v + ": HTTPS"}, nil
		}}}}
	opts := AdmissionPolicyOptions{Aliases: aliases}
	e := newPolicyEval(t, opts)
	certs := prefix + AnnotationTLSCertificates
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		refused     string // "": admitted
		syncRefuses bool
	}{
		{"certificates no port uses", map[string]string{certs: "c"}, "no port terminates TLS", true},
		{"certificates of a port port-protocols makes HTTPS", map[string]string{certs: "c", prefix + AnnotationPortProtocols: "443: HTTPS"}, "", false},
		{"certificates of a port the legacy key makes HTTPS", map[string]string{certs: "c", legacyTLS: "443"}, "", false},
		{"a legacy value only the sync reads", map[string]string{legacyTLS: "not a port"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.annotations)
			refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
			_, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", aliases: aliases, targets: func(labels.Selector) []string { return nil }})
			assert.Equal(t, tc.syncRefuses, len(ps) > 0, "the sync: %v", ps)
			if tc.refused == "" {
				assert.Empty(t, refused)
				return
			}
			require.Len(t, refused, 1)
			assert.Contains(t, refused[0], tc.refused)
		})
	}
	out, err := AdmissionPolicy(opts)
	require.NoError(t, err)
	assert.Contains(t, string(out), AdmissionPolicySyncOnlyAnnotation+": port-health-checks, node-selector, port-protocols, "+legacyTLS)
	assert.False(t, strings.Contains(string(out), `"`+legacyTLS+`" in variables.a) ||`), "its value is not read as another annotation's")
}
