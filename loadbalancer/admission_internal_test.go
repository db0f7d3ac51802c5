package loadbalancer

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// oldestAdmissionVersion is the oldest Kubernetes whose CEL the policies may use:
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is GA in 1.30.
var oldestAdmissionVersion = version.MajorMinor(1, 30)

// policyEval evaluates the policies AdmissionPolicy writes as the API server's
// ValidatingAdmissionPolicy plugin does, through k8s.io/apiserver's own compiler and
// evaluator (k8s.io/apiserver/pkg/admission/plugin/cel): each policy compiled as a new
// policy is, in the CEL environment of oldestAdmissionVersion, its variables evaluated
// lazily, within the API server's cost limits. It names no type of the CEL library,
// whose module path k8s.io/apiserver changes (github.com/google/cel-go up to v0.37,
// cel.dev/cel-go from v0.38), so that it builds against every minor compat tests.
type policyEval struct {
	policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	compiled []compiledPolicy
}

// compiledPolicy is one policy compiled as the API server compiles it (compilePolicy in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating), with its binding's action.
type compiledPolicy struct {
	policy                                 *admissionregistrationv1.ValidatingAdmissionPolicy
	action                                 admissionregistrationv1.ValidationAction
	matchConditions, validations, messages plugincel.ConditionEvaluator
}

func newPolicyEval(t *testing.T, opts AdmissionPolicyOptions) *policyEval {
	t.Helper()
	out, err := AdmissionPolicy(opts)
	require.NoError(t, err)
	e := &policyEval{}
	actions := map[string]admissionregistrationv1.ValidationAction{} // by policy name
	for _, doc := range bytes.Split(out, []byte("\n---\n"))[1:] {
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			require.NoError(t, yaml.UnmarshalStrict(doc, &p))
			e.policies = append(e.policies, &p)
		case "ValidatingAdmissionPolicyBinding":
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			require.NoError(t, yaml.UnmarshalStrict(doc, &b))
			require.Len(t, b.Spec.ValidationActions, 1)
			actions[b.Spec.PolicyName] = b.Spec.ValidationActions[0]
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
	}
	require.Len(t, e.policies, 2)
	require.Len(t, actions, 2)
	for _, p := range e.policies {
		action, ok := actions[p.Name]
		require.True(t, ok, "policy %s has a binding", p.Name)
		e.compiled = append(e.compiled, compilePolicy(t, p, action))
	}
	return e
}

// compilePolicy compiles p as the API server compiles a new policy: the authorizer
// declared for all but the message expressions, the variables in the order declared
// (each may read those before it), every expression checked against the CEL of
// oldestAdmissionVersion.
func compilePolicy(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, action admissionregistrationv1.ValidationAction) compiledPolicy {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(oldestAdmissionVersion))
	require.NoError(t, err)
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range p.Spec.Variables {
		r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars, environment.NewExpressions)
		require.Nil(t, r.Error, "%s: variable %s: %s", p.Name, v.Name, v.Expression)
	}
	compile := func(kind string, exprs []plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations) plugincel.ConditionEvaluator {
		c := compiler.CompileCondition(exprs, decls, environment.NewExpressions)
		require.Empty(t, c.CompilationErrors(), "%s: %s", p.Name, kind)
		return c
	}
	conditions := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
	for i := range p.Spec.MatchConditions {
		conditions[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
	}
	// A message expression at the index of its validation, nil where it has none.
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return compiledPolicy{
		policy:          p,
		action:          action,
		matchConditions: compile("match conditions", conditions, vars),
		validations:     compile("validations", validations, vars),
		messages:        compile("message expressions", messages, plugincel.OptionalVariableDeclarations{}),
	}
}

// attributes are the admission attributes of the creation of svc, or of its update from
// old when old is not nil, with the objects at the version the policies match (v1), as
// the API server hands them to a policy.
func attributes(t *testing.T, svc, old *corev1.Service) *admission.VersionedAttributes {
	t.Helper()
	gvk := corev1.SchemeGroupVersion.WithKind("Service")
	// At gvk already, the objects need no conversion (admission.ConvertToGVK), so no
	// scheme is passed to convert them.
	versioned := func(s *corev1.Service) *corev1.Service {
		s = s.DeepCopy()
		s.SetGroupVersionKind(gvk)
		return s
	}
	op, obj, oldObj := admission.Create, versioned(svc), runtime.Object(nil)
	if old != nil {
		op, oldObj = admission.Update, versioned(old)
	}
	attrs := admission.NewAttributesRecord(obj, oldObj, gvk, svc.Namespace, svc.Name, corev1.SchemeGroupVersion.WithResource("services"), "", op, nil, false, nil)
	out, err := admission.NewVersionedAttributes(attrs, gvk, nil)
	require.NoError(t, err)
	return out
}

// admit returns the messages of the failed validations of svc's creation, by action, and
// the messages of the failed validations whose message starts with only (all for "").
func (e *policyEval) admit(t *testing.T, svc *corev1.Service, only string) map[admissionregistrationv1.ValidationAction][]string {
	t.Helper()
	return e.admitUpdate(t, nil, svc, only)
}

// admitUpdate is admit of the update of old to svc; of a creation when old is nil. It
// decides as the API server's validator does (validator.Validate in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating): a policy whose match
// conditions all hold evaluates its validations within the budget of a policy, then its
// message expressions within what is left; a failed validation's message is its message
// expression's value when that is a string of one line, not empty, and not too long,
// else its message. A match condition that fails to evaluate, or a request over the
// budget, fails the test: the policy must never fail that way.
func (e *policyEval) admitUpdate(t *testing.T, old, svc *corev1.Service, only string) map[admissionregistrationv1.ValidationAction][]string {
	t.Helper()
	ctx := context.Background()
	attrs := attributes(t, svc, old)
	request := plugincel.CreateAdmissionRequest(attrs.Attributes, metav1.GroupVersionResource(attrs.GetResource()), metav1.GroupVersionKind(attrs.VersionedKind))
	none := plugincel.OptionalVariableBindings{}
	out := map[admissionregistrationv1.ValidationAction][]string{}
	for _, c := range e.compiled {
		matches, _, err := c.matchConditions.ForInput(ctx, attrs, request, none, nil, celconfig.RuntimeCELCostBudgetMatchConditions)
		require.NoError(t, err, "%s: match conditions", c.policy.Name)
		matched := true
		for _, m := range matches {
			require.NoError(t, m.Error, "%s: %s", c.policy.Name, m.ExpressionAccessor.GetExpression())
			matched = matched && m.EvalResult.Value() == true
		}
		if !matched {
			continue
		}
		results, remaining, err := c.validations.ForInput(ctx, attrs, request, none, nil, celconfig.RuntimeCELCostBudget)
		require.NoError(t, err, "%s: validations, within the budget of a policy", c.policy.Name)
		messages, _, err := c.messages.ForInput(ctx, attrs, request, none, nil, remaining)
		require.NoError(t, err, "%s: message expressions, within the budget of a policy", c.policy.Name)
		for i, r := range results {
			v := c.policy.Spec.Validations[i]
			if only != "" && !strings.HasPrefix(v.Message, only) {
				continue
			}
			switch {
			case r.Error != nil:
				out[c.action] = append(out[c.action], fmt.Sprintf("%s: evaluation error: %v", v.Message, r.Error))
			case r.EvalResult.Value() != true:
				msg := strings.TrimSpace(v.Message)
				if m := messages[i]; v.MessageExpression != "" && m.Error == nil && m.EvalResult != nil {
					s, _ := m.EvalResult.Value().(string)
					if s = strings.TrimSpace(s); s != "" && len(s) <= celconfig.MaxEvaluatedMessageExpressionSizeBytes && !strings.Contains(s, "\n") {
						msg = s
					}
				}
				out[c.action] = append(out[c.action], msg)
			}
		}
	}
	return out
}

func lbService(annotations map[string]string, tweaks ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1", Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
		}},
	}
	for _, tw := range tweaks {
		tw(svc)
	}
	return svc
}

// foldRunes returns the runes other than ASCII that Go's case mappings (strings.ToUpper,
// strings.ToLower, strings.EqualFold) take to or from an ASCII letter, with that letter.
func foldRunes() map[rune]rune {
	out := map[rune]rune{}
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		for _, m := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.SimpleFold(r)} {
			if m < 0x80 && unicode.IsLetter(m) {
				out[r] = unicode.ToLower(m)
			}
		}
	}
	return out
}

// withFoldRunes returns values and each value with one ASCII letter replaced by each rune
// that a case mapping takes to or from it.
func withFoldRunes(values ...string) []string {
	out := values
	folds := foldRunes()
	for _, v := range values {
		for r, ascii := range folds {
			for i, c := range v {
				if unicode.ToLower(c) == ascii {
					out = append(out, v[:i]+string(r)+v[i+1:])
				}
			}
		}
	}
	return out
}

// TestAdmissionPolicyValues runs each annotation's check of the policy with the API
// server's CEL against parseAnnotations on the same values: the policy refuses exactly
// what the sync refuses, but for the superset cases listed, which it accepts.
func TestAdmissionPolicyValues(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	settings := Settings{
		{Name: "size", Values: []string{"small", "medium", "large"}},
		{Name: "odd", Values: []string{"a.b", "K'1", "größe"}},
		{Name: "version", Parse: func(v string) (string, error) { return v, nil }, Allowed: "anything"},
	}
	e := newPolicyEval(t, AdmissionPolicyOptions{Settings: settings})
	bools := withFoldRunes("true", "false", "TRUE", " False ", "yes", "1", "", "tru", "t rue")
	ints := []string{"1", "10", "0", "11", "+5", "-1", "-0", "05", "0000000000000000000000010", "99999999999999999999", "1.0", " 7 ", "", "+", "٣", "1_0", "0x5"}
	durations := []string{"1s", "5m", "300s", "301s", "0.5s", "999ms", "1000ms", "1.s", ".5m", "1m1s", "5m0s", "5m1ns", "10", "", "-1s", "+10s",
		"1µs", "1000000µs", "1000000μs", "1h", "0", "+0", "1e3s", "1S", "10 s", " 10s ", "300000000000ns", "300000000001ns", ".s", "1.5.5s", "s", "2m60s", "1m1", "9999999999999999999s", "0000000000000000000000000000000300s", "0000000000001000000000ns", "000000000001000000us", "4m59.999999999999999999999999s", "299999999999ns", "299999999us", "1m240000ms", ".08333h", "0.1h", "10m", "1000s"}
	cases := map[string][]string{
		AnnotationInternal:      bools,
		AnnotationProxyProtocol: bools,
		AnnotationKeepOnDelete:  bools,
		AnnotationIPAddresses: {"10.0.0.1", "10.0.0.1,2001:db8::1", " 10.0.0.1 , 2001:DB8::1 ", "10.0.0.1,10.0.0.2", "2001:db8::1,2001:db8::2", "::ffff:10.0.0.1",
			"::ffff:10.0.0.1,2001:db8::1", "0:0:0:0:0:ffff:a00:1", "fe80::1%eth0", "010.0.0.1", "10.0.0.256", "a", "", "10.0.0.1,", ",", "1.2.3"},
		AnnotationName:                {"a", "web-1", "-a", "a-", "A", "a_b", strings.Repeat("a", 63), strings.Repeat("a", 64), "ä", "", "a.b"},
		AnnotationShare:               {"a", "web-1", "-a", "a-", "A", "a/b", strings.Repeat("a", 63), strings.Repeat("a", 64), "", "a:b"},
		AnnotationHealthCheckProtocol: withFoldRunes("tcp", "HTTP", "https", "udp", "", "HTTP2", "h ttp"),
		AnnotationHealthCheckPort:     append(ints, "65535", "65536", "10256", "100000"),
		AnnotationHealthCheckPath: {"/", "/healthz", "healthz", "", "/a b", "/a\tb", "/a\vb", "/a\u00a0b", "/a\u2028b", "/a\u3000b", "/a\x7fb", "/a\u0085b", "/ä",
			"/a\u200bb", "/a\x00b", " /ok "},
		AnnotationHealthCheckInterval:           durations,
		AnnotationHealthCheckTimeout:            durations,
		AnnotationHealthCheckHealthyThreshold:   ints,
		AnnotationHealthCheckUnhealthyThreshold: ints,
		AnnotationHostname: {"example.com", "a.b.c", "1.2.3.4", "01.2.3.4", "256.1.1.1", "1.2.3", "Example.com", "-a.com", "a-.com", "a..b", "a_b.com", "", ".a", "a.",
			strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "ab", "::1"},
		AnnotationProtocol: withFoldRunes("tcp", "TLS", "http", "HTTPS", "udp", "", "SCTP"),
		AnnotationTLSPorts: {"443", "https", "0", "65535", "65536", "+443", "0443", "-0", "https,80", " https , 443 ", "a--b", "-a", "a-", "1a", "A",
			"abcdefghijklmnop", "abcdefghijklmno", "", ",", "443,", "99999999999999999999", "1-2"},
		AnnotationTLSCertificates: {"a", "a,b", "a,a", "a, b", " a , a ", "a,,b", "a b", "a\u00a0b", "a\tb", "a,", " a ", "", "arn:aws:acm:eu-1:1:certificate/x", "é"},
		AnnotationLoadBalancerID: {"lb-1", "", "a b", strings.Repeat("x", 255), strings.Repeat("x", 256), strings.Repeat("é", 127), strings.Repeat("é", 128),
			"a\x00b", "a\u200bb", "日本", "a\u00a0b", "~!@#$%^&*()"},
		AnnotationStickySessions:               withFoldRunes("cookie", "NONE", " Cookie ", "cookies", "", "client-ip"),
		AnnotationStickySessionsCookieName:     {"lb", "ccmkit-sticky", "A_b.c-1", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b", "a;b", "a=b", "", "ä", " lb "},
		AnnotationStickySessionsCookieLifetime: append(append([]string{}, ints...), "86400", "86401", "300", "100000"),
		"size":                                 withFoldRunes("small", "LARGE", " Medium ", "huge", "", "smal", "small,large"),
		"odd":                                  {"a.b", "A.B", "axb", "k'1", "\u212a'1", "GRÖSSE", "größe", "GRÖẞE"},
	}
	// superset are values the sync refuses and the policy accepts: CEL cannot tell an
	// IPv4-mapped IPv6 address's family.
	superset := map[string]bool{AnnotationIPAddresses + "=::ffff:10.0.0.1,10.0.0.2": true}
	cases[AnnotationIPAddresses] = append(cases[AnnotationIPAddresses], "::ffff:10.0.0.1,10.0.0.2")
	for _, a := range Annotations() {
		if a.check == nil {
			continue
		}
		assert.NotEmpty(t, cases[a.Name], "no values tested for annotation %s", a.Name)
	}
	for name, values := range cases {
		for _, v := range values {
			t.Run(fmt.Sprintf("%s=%q", name, v), func(t *testing.T) {
				key := prefix + name
				_, _, errs := parseAnnotations(prefix, settings, Aliases{}, map[string]string{key: v})
				refused := e.admit(t, lbService(map[string]string{key: v}), "annotation "+key+": malformed")[admissionregistrationv1.Deny]
				if superset[name+"="+v] {
					require.NotEmpty(t, errs, "the sync refuses it")
					assert.Empty(t, refused, "the policy accepts it")
					return
				}
				if len(errs) > 0 {
					require.Len(t, refused, 1, "the sync refuses it: %v", errs[0])
					shown := []rune(strings.TrimSpace(v))
					if len(shown) > 64 {
						shown = append(shown[:64], []rune("...")...)
					}
					assert.Contains(t, refused[0], fmt.Sprintf(`annotation %s: "%s" is not allowed (allowed: `, key, string(shown)))
					return
				}
				assert.Empty(t, refused, "the sync accepts it")
			})
		}
	}
	t.Run("sync only", func(t *testing.T) {
		for _, name := range []string{AnnotationNodeSelector, "version"} {
			refused := e.admit(t, lbService(map[string]string{prefix + name: "((("}), "")
			assert.Empty(t, refused, name)
		}
		out, err := AdmissionPolicy(AdmissionPolicyOptions{Settings: settings})
		require.NoError(t, err)
		assert.Contains(t, string(out), AdmissionPolicySyncOnlyAnnotation+": port-health-checks, node-selector, port-protocols, version")
	})
}

// TestAdmissionPolicyServices runs whole Services through the policies and through
// translate: the policy refuses a Service exactly when the sync finds an error in it, for
// the contradictions it checks, and warns of unknown keys.
func TestAdmissionPolicyServices(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	e := newPolicyEval(t, AdmissionPolicyOptions{})
	an := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[prefix+kv[i]] = kv[i+1]
		}
		return m
	}
	appProtocol := func(p string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = &p }
	}
	lbIP := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerIP = ip } //nolint:staticcheck // the deprecated field is still honoured
	}
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		refused string // in the Deny message; "" for none
	}{
		{"no annotation", lbService(nil), ""},
		{"valid values", lbService(an(AnnotationInternal, "true", AnnotationHealthCheckInterval, "20s", AnnotationHealthCheckTimeout, "15s", AnnotationTLSPorts, "https", AnnotationTLSCertificates, "c1,c2")), ""},
		{"tls-ports without certificates", lbService(an(AnnotationTLSPorts, "443")), "names no certificate"},
		{"tls-ports by number with a leading zero", lbService(an(AnnotationTLSPorts, "0443", AnnotationTLSCertificates, "c")), ""},
		{"tls-ports naming no port", lbService(an(AnnotationTLSPorts, "443,8443", AnnotationTLSCertificates, "c")), "names a port the Service does not have"},
		{"tls-ports naming a UDP port", lbService(an(AnnotationTLSPorts, "dns", AnnotationTLSCertificates, "c")), "names a port that is not TCP"},
		{"certificates without TLS", lbService(an(AnnotationTLSCertificates, "c")), "no port terminates TLS"},
		{"protocol HTTPS without certificates", lbService(an(AnnotationProtocol, "HTTPS")), "names no certificate"},
		{"protocol httpſ without certificates", lbService(an(AnnotationProtocol, "httpſ")), "names no certificate"},
		{"protocol HTTPS with certificates", lbService(an(AnnotationProtocol, "https", AnnotationTLSCertificates, "c")), ""},
		{"protocol TLS on a port whose appProtocol is http", lbService(an(AnnotationProtocol, "TLS"), appProtocol("http")), ""},
		{"protocol TLS on a port whose appProtocol is TCP, with certificates", lbService(an(AnnotationProtocol, "TLS", AnnotationTLSCertificates, "c"), appProtocol("TCP")), "no port terminates TLS"},
		{"appProtocol https without certificates", lbService(an(AnnotationInternal, "false"), appProtocol("https")), "names no certificate"},
		{"appProtocol https with certificates", lbService(an(AnnotationTLSCertificates, "c"), appProtocol("https")), ""},
		{"appProtocol http made https by tls-ports", lbService(an(AnnotationTLSPorts, "https", AnnotationTLSCertificates, "c"), appProtocol("http")), ""},
		{"timeout over the default interval", lbService(an(AnnotationHealthCheckTimeout, "15s")), "timeout is longer than its interval"},
		{"timeout over the interval", lbService(an(AnnotationHealthCheckTimeout, "5s", AnnotationHealthCheckInterval, "2s")), "timeout is longer than its interval"},
		{"a short interval alone", lbService(an(AnnotationHealthCheckInterval, "2s")), ""},
		{"timeout equal to the interval", lbService(an(AnnotationHealthCheckTimeout, "1m", AnnotationHealthCheckInterval, "60s")), ""},
		{"loadBalancerIP among the addresses", lbService(an(AnnotationIPAddresses, "10.0.0.1,2001:db8::1"), lbIP("10.0.0.1")), ""},
		{"loadBalancerIP among the addresses, mapped", lbService(an(AnnotationIPAddresses, "::ffff:10.0.0.1"), lbIP("10.0.0.1")), ""},
		{"loadBalancerIP among the addresses, spelled otherwise", lbService(an(AnnotationIPAddresses, "2001:DB8:0::1"), lbIP("2001:db8::1")), ""},
		{"loadBalancerIP not among the addresses", lbService(an(AnnotationIPAddresses, "10.0.0.2"), lbIP("10.0.0.1")), "spec.loadBalancerIP is not among"},
		{"a share", lbService(an(AnnotationShare, "front")), ""},
		{"a share with load-balancer-id", lbService(an(AnnotationShare, "front", AnnotationLoadBalancerID, "lb-1")), "cannot be combined"},
		{"an unknown key", lbService(an("intenral", "true")), ""},
		{"a malformed value", lbService(an(AnnotationInternal, "maybe")), `annotation loadbalancer.ccmkit.io/internal: "maybe" is not allowed (allowed: true, false)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ps := translate(translation{svc: tc.svc, prefix: prefix, clusterID: "c1", targets: func(labels.Selector) []string { return nil }})
			syncErr := ps.err(tc.svc)
			refused := e.admit(t, tc.svc, "")[admissionregistrationv1.Deny]
			if tc.refused == "" {
				require.NoError(t, syncErr)
				assert.Empty(t, refused)
				return
			}
			require.Error(t, syncErr, "the sync refuses it too")
			require.NotEmpty(t, refused)
			assert.Contains(t, strings.Join(refused, "\n"), tc.refused)
		})
	}
}

// TestAdmissionPolicyScope checks which Services the policies look at, and that an
// unknown key is a warning.
func TestAdmissionPolicyScope(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	bad := map[string]string{prefix + AnnotationInternal: "maybe", prefix + AnnotationKeepOnDelete: "maybe", prefix + "intenral": "x", "other.io/x": "y"}
	clusterIP := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }
	class := func(c string) func(*corev1.Service) { return func(s *corev1.Service) { s.Spec.LoadBalancerClass = &c } }
	for _, tc := range []struct {
		name  string
		opts  AdmissionPolicyOptions
		svc   *corev1.Service
		deny  int
		warns int
	}{
		{"a Service of type LoadBalancer", AdmissionPolicyOptions{}, lbService(bad), 2, 1},
		{"another type: keep-on-delete only", AdmissionPolicyOptions{}, lbService(bad, clusterIP), 1, 0},
		{"another prefix", AdmissionPolicyOptions{AnnotationPrefix: "lb.example.com/"}, lbService(bad), 0, 0},
		{"a class ccmkit does not serve", AdmissionPolicyOptions{}, lbService(bad, class("other.io/lb")), 0, 0},
		{"the class ccmkit serves", AdmissionPolicyOptions{Class: "example.com/lb"}, lbService(bad, class("example.com/lb")), 2, 1},
		{"without a class, beside the class", AdmissionPolicyOptions{Class: "example.com/lb"}, lbService(bad), 2, 1},
		{"without a class, the class only", AdmissionPolicyOptions{Class: "example.com/lb", ClassOnly: true}, lbService(bad), 0, 0},
		{"other annotations only", AdmissionPolicyOptions{}, lbService(map[string]string{"other.io/internal": "maybe"}), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := newPolicyEval(t, tc.opts).admit(t, tc.svc, "")
			assert.Len(t, got[admissionregistrationv1.Deny], tc.deny, "%q", got[admissionregistrationv1.Deny])
			require.Len(t, got[admissionregistrationv1.Warn], tc.warns)
			if tc.warns > 0 {
				assert.Contains(t, got[admissionregistrationv1.Warn][0], "that nothing reads (a typo, or a key of another version): "+prefix+"intenral; known: internal, ")
			}
		})
	}
}

// TestAdmissionPolicyUpdates checks that an update is checked when it changes the
// annotations or the spec, and not when it changes neither (a finalizer, a label), so
// that a Service annotated wrongly before the policy stays deletable.
func TestAdmissionPolicyUpdates(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	e := newPolicyEval(t, AdmissionPolicyOptions{})
	old := lbService(map[string]string{prefix + AnnotationInternal: "maybe", prefix + "intenral": "x"})
	finalizer := old.DeepCopy()
	finalizer.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	finalizer.Labels = map[string]string{"app": "web"}
	assert.Empty(t, e.admitUpdate(t, old, finalizer, ""), "neither annotations nor spec changed")

	annotated := old.DeepCopy()
	annotated.Annotations[prefix+AnnotationInternal] = "perhaps"
	assert.Len(t, e.admitUpdate(t, old, annotated, "")[admissionregistrationv1.Deny], 1, "the annotations changed")
	respec := old.DeepCopy()
	respec.Spec.Ports[0].Port = 8443
	assert.Len(t, e.admitUpdate(t, old, respec, "")[admissionregistrationv1.Deny], 1, "the spec changed")
	unannotated := old.DeepCopy()
	unannotated.Annotations = nil
	assert.Len(t, e.admitUpdate(t, unannotated, old, "")[admissionregistrationv1.Deny], 1, "annotations added")
}

func TestAdmissionPolicyBadSettings(t *testing.T) {
	_, err := AdmissionPolicy(AdmissionPolicyOptions{Settings: Settings{{Name: "internal", Values: []string{"a"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "one of ccmkit's own annotations")
}

// The annotation aliases of the alias tests: plain keys of ccmkit's annotations and of a
// setting under a legacy prefix, a declared key outside it, and keys with Convert.
const legacyPrefix = "legacy.example.com/"

var (
	aliasSettings = Settings{
		{Name: "size", Values: []string{"small", "medium", "large"}},
		{Name: "version", Parse: func(v string) (string, error) { return v, nil }, Allowed: "anything"},
	}
	aliasTable = Aliases{
		Prefixes: []string{legacyPrefix},
		Keys: []Alias{
			{Key: legacyPrefix + "private", Name: AnnotationInternal},
			{Key: "other.example.org/lb-internal", Name: AnnotationInternal},
			{Key: legacyPrefix + "public", Name: AnnotationInternal, Allowed: "true, false", Convert: func(v string) (string, error) {
				b, err := parseBool(v)
				return strconv.FormatBool(!b), err
			}},
			{Key: legacyPrefix + "proto", Name: AnnotationProtocol},
			{Key: legacyPrefix + "hc-port", Name: AnnotationHealthCheckPort},
			{Key: legacyPrefix + "hc-interval", Name: AnnotationHealthCheckInterval},
			{Key: legacyPrefix + "hostname", Name: AnnotationHostname},
			{Key: legacyPrefix + "certificates", Name: AnnotationTLSCertificates},
			{Key: legacyPrefix + "certificate-ids", Name: AnnotationTLSCertificates, Allowed: "IDs separated by ;", Convert: func(v string) (string, error) {
				return strings.ReplaceAll(v, ";", ","), nil
			}},
			{Key: legacyPrefix + "size", Name: "size"},
			{Key: legacyPrefix + "selector", Name: AnnotationNodeSelector},
			{Key: legacyPrefix + "version", Name: "version"},
		},
	}
)

// TestAdmissionPolicyAliasValues runs the checks of the legacy keys with the API server's
// CEL against parseAnnotations with the aliases: a legacy key without Convert is refused
// exactly as the annotation it stands for, naming the legacy key; one with Convert, or
// standing for an annotation CEL cannot check, is never refused and listed as checked at
// sync time only.
func TestAdmissionPolicyAliasValues(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	e := newPolicyEval(t, AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable})
	bools := withFoldRunes("true", "FALSE", " True ", "yes", "", "tru")
	cases := map[string][]string{
		legacyPrefix + "private":        bools,
		"other.example.org/lb-internal": bools,
		legacyPrefix + "proto":          withFoldRunes("tcp", "HTTPS", "udp", ""),
		legacyPrefix + "hc-port":        {"1", "65535", "0", "65536", "+5", "080", "", "0x5"},
		legacyPrefix + "hc-interval":    {"1s", "5m", "301s", "0.5s", "10", "", " 10s "},
		legacyPrefix + "hostname":       {"example.com", "1.2.3.4", "Example.com", ""},
		legacyPrefix + "size":           withFoldRunes("small", "LARGE", "huge", ""),
		legacyPrefix + "certificates":   {"a,b", "a,a", "a b", ""},
		// With Convert, or for node-selector or a setting with Parse: the sync only.
		legacyPrefix + "public":          {"maybe", "true"},
		legacyPrefix + "certificate-ids": {"a;a", "a b"},
		legacyPrefix + "selector":        {"((("},
		legacyPrefix + "version":         {"((("},
	}
	for _, a := range aliasTable.Keys {
		assert.NotEmpty(t, cases[a.Key], "no values tested for legacy key %s", a.Key)
	}
	syncOnly := map[string]bool{legacyPrefix + "public": true, legacyPrefix + "certificate-ids": true, legacyPrefix + "selector": true, legacyPrefix + "version": true}
	for key, values := range cases {
		for _, v := range values {
			t.Run(fmt.Sprintf("%s=%q", key, v), func(t *testing.T) {
				svc := lbService(map[string]string{key: v, prefix + AnnotationTLSPorts: "https", prefix + AnnotationTLSCertificates: "c"})
				if strings.HasPrefix(key, legacyPrefix+"certificate") {
					delete(svc.Annotations, prefix+AnnotationTLSCertificates)
				}
				_, _, errs := parseAnnotations(prefix, aliasSettings, aliasTable, svc.Annotations)
				refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
				switch {
				case syncOnly[key]:
					assert.Empty(t, refused, "only the sync checks it")
				case len(errs) > 0:
					require.Len(t, refused, 1, "the sync refuses it: %v", errs[0])
					assert.Contains(t, refused[0], fmt.Sprintf(`annotation %s: "%s" is not allowed (allowed: `, key, strings.TrimSpace(v)))
				default:
					assert.Empty(t, refused, "the sync accepts it")
				}
			})
		}
	}
	t.Run("sync only", func(t *testing.T) {
		out, err := AdmissionPolicy(AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable})
		require.NoError(t, err)
		want := "port-health-checks, node-selector, port-protocols, version, " + legacyPrefix + "public, " + legacyPrefix + "certificate-ids, " + legacyPrefix + "selector, " + legacyPrefix + "version"
		assert.Contains(t, string(out), AdmissionPolicySyncOnlyAnnotation+": "+want)
		assert.Contains(t, string(out), "# Checked only when ccmkit syncs the Service: "+want+".\n")
	})
}

// TestAdmissionPolicyAliasServices runs whole Services that spell annotations by legacy
// keys through the policies and through translate: the policy refuses two spellings that
// disagree where CEL compares them as the sync does, reads the contradictions through the
// legacy keys, and never refuses what the sync accepts.
func TestAdmissionPolicyAliasServices(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	e := newPolicyEval(t, AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable})
	own := func(name string) string { return prefix + name }
	legacy := func(name string) string { return legacyPrefix + name }
	lbIP := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerIP = ip } //nolint:staticcheck // the deprecated field is still honoured
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		tweaks      []func(*corev1.Service)
		refused     string // in the Deny message; "" for none
		syncOnly    bool   // the sync refuses it, the policy leaves it to the sync
	}{
		{name: "a legacy key alone", annotations: map[string]string{legacy("private"): "true"}},
		{name: "a malformed legacy key alone", annotations: map[string]string{legacy("private"): "maybe"}, refused: `annotation legacy.example.com/private: "maybe" is not allowed`},
		{name: "a malformed declared key outside the legacy prefixes", annotations: map[string]string{"other.example.org/lb-internal": "maybe"}, refused: `annotation other.example.org/lb-internal: "maybe" is not allowed`},
		{name: "boolean spellings agree", annotations: map[string]string{own(AnnotationInternal): "true", legacy("private"): " TRUE "}},
		{name: "boolean spellings disagree", annotations: map[string]string{own(AnnotationInternal): "true", legacy("private"): "false"},
			refused: `annotation legacy.example.com/private: "false" conflicts with annotation loadbalancer.ccmkit.io/internal "true", and both set loadbalancer.ccmkit.io/internal`},
		{name: "two aliases disagree", annotations: map[string]string{legacy("private"): "false", "other.example.org/lb-internal": "True"},
			refused: `annotation other.example.org/lb-internal: "True" conflicts with annotation legacy.example.com/private "false"`},
		{name: "a malformed spelling beside a valid one", annotations: map[string]string{own(AnnotationInternal): "true", legacy("private"): "maybe"},
			refused: `annotation legacy.example.com/private: "maybe" is not allowed`},
		{name: "enum spellings agree", annotations: map[string]string{own(AnnotationProtocol): "https", legacy("proto"): "HTTPſ", own(AnnotationTLSCertificates): "c"}},
		{name: "enum spellings disagree", annotations: map[string]string{own(AnnotationProtocol): "tcp", legacy("proto"): "TLS"}, refused: "conflicts with annotation loadbalancer.ccmkit.io/protocol"},
		{name: "number spellings agree", annotations: map[string]string{own(AnnotationHealthCheckPort): "80", legacy("hc-port"): "080"}},
		{name: "number spellings disagree", annotations: map[string]string{own(AnnotationHealthCheckPort): "80", legacy("hc-port"): "81"}, refused: "conflicts with annotation"},
		{name: "setting spellings agree", annotations: map[string]string{own("size"): "Small", legacy("size"): "SMALL"}},
		{name: "setting spellings disagree", annotations: map[string]string{own("size"): "small", legacy("size"): "large"}, refused: "conflicts with annotation"},
		{name: "duration spellings agree", annotations: map[string]string{own(AnnotationHealthCheckInterval): "10s", legacy("hc-interval"): "10000ms"}},
		{name: "duration spellings disagree", annotations: map[string]string{own(AnnotationHealthCheckInterval): "10s", legacy("hc-interval"): "20s"}, syncOnly: true},
		{name: "hostname spellings disagree", annotations: map[string]string{own(AnnotationHostname): "a.example.com", legacy("hostname"): "b.example.com"}, syncOnly: true},
		{name: "a converted spelling agrees", annotations: map[string]string{own(AnnotationInternal): "true", legacy("public"): "false"}},
		{name: "a converted spelling disagrees", annotations: map[string]string{own(AnnotationInternal): "true", legacy("public"): "true"}, syncOnly: true},
		{name: "tls-ports with certificates by a legacy key", annotations: map[string]string{own(AnnotationTLSPorts): "443", legacy("certificates"): "c"}},
		{name: "tls-ports with converted certificates", annotations: map[string]string{own(AnnotationTLSPorts): "443", legacy("certificate-ids"): "a;b"}},
		{name: "legacy protocol HTTPS without certificates", annotations: map[string]string{legacy("proto"): "https"}, refused: "names no certificate"},
		{name: "legacy certificates without TLS", annotations: map[string]string{legacy("certificates"): "c"}, refused: "no port terminates TLS"},
		{name: "converted certificates without TLS", annotations: map[string]string{legacy("certificate-ids"): "c"}, syncOnly: true},
		{name: "timeout over a legacy interval", annotations: map[string]string{own(AnnotationHealthCheckTimeout): "5s", legacy("hc-interval"): "2s"}, refused: "timeout is longer than its interval"},
		{name: "timeout within a legacy interval", annotations: map[string]string{own(AnnotationHealthCheckTimeout): "15s", legacy("hc-interval"): "20s"}},
		{name: "loadBalancerIP with a legacy key", annotations: map[string]string{legacy("private"): "true"}, tweaks: []func(*corev1.Service){lbIP("10.0.0.1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.annotations, tc.tweaks...)
			_, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", declarations: aliasSettings, aliases: aliasTable,
				targets: func(labels.Selector) []string { return nil }})
			syncErr := ps.err(svc)
			refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
			switch {
			case tc.syncOnly:
				require.Error(t, syncErr, "the sync refuses it")
				assert.Empty(t, refused, "the policy leaves it to the sync")
			case tc.refused == "":
				require.NoError(t, syncErr)
				assert.Empty(t, refused)
			default:
				require.Error(t, syncErr, "the sync refuses it too")
				require.NotEmpty(t, refused)
				assert.Contains(t, strings.Join(refused, "\n"), tc.refused)
			}
		})
	}
}

// TestAdmissionPolicyAliasContradictions refuses Services whose annotations contradict
// each other, one of them spelled by each of its keys in turn (ccmkit's, then each alias
// whose value CEL reads) and by all alike: the refusals name every key the sync's errors
// name, and an annotation the Service sets by the key the sync names it by (the first it
// sets), never by another spelling.
func TestAdmissionPolicyAliasContradictions(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	e := newPolicyEval(t, AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable})
	keyRE := regexp.MustCompile(`[\w-]+(\.[\w-]+)+/[\w.-]+`) // an annotation key with a domain
	for _, tc := range []struct {
		name        string
		spelled     string            // the annotation spelled by each of its keys
		annotations map[string]string // by name
		refused     string
	}{
		{"the timeout over the interval", AnnotationHealthCheckInterval, map[string]string{AnnotationHealthCheckTimeout: "5s", AnnotationHealthCheckInterval: "2s"}, "timeout is longer than its interval"},
		{"certificates without TLS", AnnotationTLSCertificates, map[string]string{AnnotationTLSCertificates: "c"}, "no port terminates TLS"},
		{"protocol HTTPS without certificates", AnnotationProtocol, map[string]string{AnnotationProtocol: "https"}, "names no certificate"},
		{"tls-ports naming no port, with certificates", AnnotationTLSCertificates, map[string]string{AnnotationTLSPorts: "8443", AnnotationTLSCertificates: "c"}, "a port the Service does not have"},
	} {
		plain, _ := aliasTable.policyKeys(prefix, tc.spelled)
		require.Greater(t, len(plain), 1, "%s has an alias", tc.spelled)
		// Each spelling alone, then all of them alike, which the sync names by the first.
		variants := [][]spelling{plain}
		for _, s := range plain {
			variants = append(variants, []spelling{s})
		}
		for _, spellings := range variants {
			s := spellings[0]
			t.Run(fmt.Sprintf("%s by %d keys from %s", tc.name, len(spellings), s.key), func(t *testing.T) {
				annotations := map[string]string{}
				set := map[string]string{} // the key the sync names each annotation by
				for name, v := range tc.annotations {
					set[name] = prefix + name
					if name == tc.spelled {
						set[name] = s.key
						for _, other := range spellings {
							annotations[other.key] = v
						}
					}
					annotations[set[name]] = v
				}
				svc := lbService(annotations)
				_, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", declarations: aliasSettings, aliases: aliasTable,
					targets: func(labels.Selector) []string { return nil }})
				syncErr := ps.err(svc)
				require.Error(t, syncErr, "the sync refuses it")
				refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
				require.NotEmpty(t, refused)
				assert.Contains(t, strings.Join(refused, "\n"), tc.refused)
				named := keyRE.FindAllString(strings.Join(refused, "\n"), -1)
				assert.Contains(t, named, s.key, "the key the Service spells %s with", tc.spelled)
				for _, k := range keyRE.FindAllString(syncErr.Error(), -1) {
					assert.Contains(t, named, k, "a key the sync names")
				}
				for _, k := range named {
					name := strings.TrimPrefix(k, prefix)
					for _, a := range aliasTable.Keys {
						if a.Key == k {
							name = a.Name
						}
					}
					if key, ok := set[name]; ok {
						assert.Equal(t, key, k, "annotation %s by the key the Service sets", name)
					}
				}
			})
		}
	}
}

// TestAdmissionPolicyAliasScope checks that a Service with only legacy keys is checked,
// and that an unknown key under a legacy prefix is a warning.
func TestAdmissionPolicyAliasScope(t *testing.T) {
	e := newPolicyEval(t, AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable})
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		deny        int
		warn        string // "" for none
	}{
		{"an unknown key under a legacy prefix", map[string]string{legacyPrefix + "privat": "true"}, 0,
			"that nothing reads (a typo, or a key of another version): legacy.example.com/privat; known: internal, "},
		{"a malformed declared key alone", map[string]string{"other.example.org/lb-internal": "maybe"}, 1, ""},
		{"a malformed key of another domain", map[string]string{"other.example.org/internal": "maybe"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.admit(t, lbService(tc.annotations), "")
			assert.Len(t, got[admissionregistrationv1.Deny], tc.deny, "%q", got[admissionregistrationv1.Deny])
			if tc.warn == "" {
				assert.Empty(t, got[admissionregistrationv1.Warn])
				return
			}
			require.Len(t, got[admissionregistrationv1.Warn], 1)
			assert.Contains(t, got[admissionregistrationv1.Warn][0], tc.warn)
			assert.Contains(t, got[admissionregistrationv1.Warn][0], legacyPrefix+"private, other.example.org/lb-internal")
		})
	}
}

func TestAdmissionPolicyBadAliases(t *testing.T) {
	_, err := AdmissionPolicy(AdmissionPolicyOptions{Aliases: Aliases{Keys: []Alias{{Key: legacyPrefix + "x", Name: "nothing"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "neither one of ccmkit's annotations nor a declared setting")
}

// TestAdmissionPolicyHealthCheckUnit: on a cloud that keeps a health check's times in
// whole seconds, an interval or timeout that is not a whole number of them is refused at
// apply time, naming the unit, as the sync refuses it; whole seconds are admitted.
func TestAdmissionPolicyHealthCheckUnit(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	shape := cloudapi.LoadBalancerShape{HealthCheckUnit: time.Second}
	e := newPolicyEval(t, AdmissionPolicyOptions{HealthCheckUnit: shape.HealthCheckUnit})
	for _, tc := range []struct {
		annotation, value string
		refused           bool
	}{
		{AnnotationHealthCheckInterval, "1500ms", true},
		{AnnotationHealthCheckTimeout, "2500ms", true},
		{AnnotationHealthCheckInterval, "15s", false},
		{AnnotationHealthCheckTimeout, "2s", false},
		{AnnotationHealthCheckInterval, "1m", false},
	} {
		t.Run(tc.annotation+"="+tc.value, func(t *testing.T) {
			svc := lbService(map[string]string{prefix + tc.annotation: tc.value})
			_, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", shape: shape, targets: func(labels.Selector) []string { return nil }})
			refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
			if !tc.refused {
				require.NoError(t, ps.err(svc))
				assert.Empty(t, refused)
				return
			}
			require.Error(t, ps.err(svc), "the sync refuses it too")
			require.NotEmpty(t, refused)
			assert.Contains(t, strings.Join(refused, "\n"), "not a whole number of 1s")
			assert.Contains(t, strings.Join(refused, "\n"), prefix+tc.annotation)
		})
	}
}

// TestAdmissionPolicyPortHealthChecks: the policy refuses the port-health-checks
// annotation where the shape says the cloud keeps one health check for all ports, as the
// sync does, and admits it where the shape declares a port's own.
func TestAdmissionPolicyPortHealthChecks(t *testing.T) {
	key := DefaultAnnotationPrefix + AnnotationPortHealthChecks
	svc := lbService(map[string]string{key: "443: protocol=HTTPS path=/ready"})
	for _, tc := range []struct {
		name    string
		shape   cloudapi.LoadBalancerShape
		refused bool
	}{
		{"one health check per load balancer", cloudapi.LoadBalancerShape{}, true},
		{"kept per listener, but not a port's own", cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck}}, true},
		{"a port's own", cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := newPolicyEval(t, AdmissionPolicyOptions{Shape: tc.shape}).admit(t, svc, "")[admissionregistrationv1.Deny]
			if !tc.refused {
				assert.Empty(t, refused)
				return
			}
			require.Len(t, refused, 1)
			assert.Contains(t, refused[0], "annotation "+key+": this cloud's load balancers keep one health check for all ports")
		})
	}
}

// TestAdmissionPolicyAliasDefaults: the policy reads the aliases' default interval for a
// Service that spells a legacy key, as the sync does: a legacy timeout alone within the
// earlier default is admitted, the same under ccmkit's key is refused, as by the sync.
func TestAdmissionPolicyAliasDefaults(t *testing.T) {
	const legacy = "lb.legacy.example/"
	aliases := Aliases{Prefixes: []string{legacy}, Keys: []Alias{{Key: legacy + "hc-timeout", Name: AnnotationHealthCheckTimeout}},
		Defaults: map[string]string{AnnotationHealthCheckInterval: "15s"}}
	e := newPolicyEval(t, AdmissionPolicyOptions{Aliases: aliases})
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		refused     bool
	}{
		{"a legacy timeout within the earlier default", map[string]string{legacy + "hc-timeout": "15s"}, false},
		{"a legacy timeout over the earlier default", map[string]string{legacy + "hc-timeout": "20s"}, true},
		{"ccmkit's timeout over ccmkit's default", map[string]string{DefaultAnnotationPrefix + AnnotationHealthCheckTimeout: "15s"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.annotations)
			_, _, ps := translate(translation{svc: svc, prefix: DefaultAnnotationPrefix, clusterID: "c1", aliases: aliases,
				targets: func(labels.Selector) []string { return nil }})
			refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
			assert.Equal(t, tc.refused, ps.err(svc) != nil, "the sync")
			assert.Equal(t, tc.refused, len(refused) > 0, "the policy: %v", refused)
		})
	}
}

// TestAdmissionPolicyShapeLimits: the policy refuses what the shape's limits refuse at
// sync (a health check value out of range, IPv6 first, internal with dual-stack, more
// certificates than a listener takes) and admits what the sync admits, reading the same
// declaration.
func TestAdmissionPolicyShapeLimits(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	shape := cloudapi.LoadBalancerShape{
		Unsupported:     []cloudapi.Feature{cloudapi.FeatureIPv6First},
		HealthCheckUnit: time.Second,
		HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 6 * time.Second, Max: 8 * time.Second},
			Timeout: cloudapi.DurationRange{Min: 6 * time.Second}, UnhealthyThreshold: cloudapi.CountRange{Min: 3, Max: 5}},
		Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}},
		MaxCertificates: 1,
	}
	e := newPolicyEval(t, AdmissionPolicyOptions{Shape: shape})
	tcpOnly := func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }
	families := func(f ...corev1.IPFamily) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.IPFamilies = f }
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		tweak       func(*corev1.Service)
		want        string // in the refusal; empty: admitted
	}{
		{"an interval in range", map[string]string{prefix + AnnotationHealthCheckInterval: "7s"}, tcpOnly, ""},
		{"an interval above the range", map[string]string{prefix + AnnotationHealthCheckInterval: "9s"}, tcpOnly, "out of this cloud's range of a health check's interval (from 6s to 8s)"},
		{"a timeout below the range", map[string]string{prefix + AnnotationHealthCheckTimeout: "5s"}, tcpOnly, "out of this cloud's range of a health check's timeout (at least 6s)"},
		{"a threshold above the range", map[string]string{prefix + AnnotationHealthCheckUnhealthyThreshold: "6"}, tcpOnly, "out of this cloud's range of a health check's threshold (from 3 to 5)"},
		{"IPv4 first", map[string]string{prefix + AnnotationName: "web"}, func(s *corev1.Service) { tcpOnly(s); families(corev1.IPv4Protocol, corev1.IPv6Protocol)(s) }, ""},
		{"IPv6 first", map[string]string{prefix + AnnotationName: "web"}, func(s *corev1.Service) { tcpOnly(s); families(corev1.IPv6Protocol, corev1.IPv4Protocol)(s) }, "serve IPv6 only second"},
		{"internal, one family", map[string]string{prefix + AnnotationInternal: "true"}, func(s *corev1.Service) { tcpOnly(s); families(corev1.IPv4Protocol)(s) }, ""},
		{"internal and dual-stack", map[string]string{prefix + AnnotationInternal: "true"}, func(s *corev1.Service) { tcpOnly(s); families(corev1.IPv4Protocol, corev1.IPv6Protocol)(s) },
			"cannot combine an internal load balancer (annotation " + prefix + AnnotationInternal + ") with both IP families"},
		{"one certificate", map[string]string{prefix + AnnotationTLSPorts: "443", prefix + AnnotationTLSCertificates: "c1"}, tcpOnly, ""},
		{"two certificates", map[string]string{prefix + AnnotationTLSPorts: "443", prefix + AnnotationTLSCertificates: "c1,c2"}, tcpOnly,
			"annotation " + prefix + AnnotationTLSCertificates + " names more than 1 certificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.annotations, tc.tweak)
			_, _, ps := translate(translation{svc: svc, prefix: prefix, clusterID: "c1", shape: shape, targets: func(labels.Selector) []string { return nil }})
			refused := e.admit(t, svc, "")[admissionregistrationv1.Deny]
			if tc.want == "" {
				require.NoError(t, ps.err(svc))
				assert.Empty(t, refused)
				return
			}
			require.Error(t, ps.err(svc), "the sync refuses it too")
			assert.Contains(t, strings.Join(refused, "\n"), tc.want)
		})
	}
}
