//go:build admissioncost

// The cost test reaches into k8s.io/apiserver's admission plugin, whose internal API
// changes between Kubernetes minors: it builds only with the tag admissioncost, which
// make unit sets at the floor minor, so that compat's other minors build the package.

package loadbalancer

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	celgo "github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// apiServerPolicy is a policy AdmissionPolicy writes, compiled as the API server's
// ValidatingAdmissionPolicy plugin compiles it (compilePolicy in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating): its CEL environment, its
// runtime cost estimator and limits. validator decides as the API server does; exprs
// are each expression compiled alone, to measure its cost.
type apiServerPolicy struct {
	policy    *admissionregistrationv1.ValidatingAdmissionPolicy
	compiler  *plugincel.CompositedCompiler
	validator validating.Validator
	exprs     []policyExpr
}

// policyExpr is one CEL expression of a policy: a match condition, a variable (program
// reads it, its expression evaluated lazily as the API server does), a validation or a
// message expression.
type policyExpr struct {
	id, kind, expression string
	program              celgo.Program
}

func compileAPIServerPolicy(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) *apiServerPolicy {
	t.Helper()
	env, err := plugincel.NewCompositionEnv(plugincel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	require.NoError(t, err)
	compiler := plugincel.NewCompositedCompilerFromTemplate(env)
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	out := &apiServerPolicy{policy: p, compiler: compiler}
	add := func(kind, id string, accessor plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations) {
		r := compiler.CompileCELExpression(accessor, decls, environment.StoredExpressions)
		require.Nil(t, r.Error, "%s: %s", id, accessor.GetExpression())
		out.exprs = append(out.exprs, policyExpr{id: p.Name + " " + kind + " " + id, kind: kind, expression: accessor.GetExpression(), program: r.Program})
	}
	conditions := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
	for i := range p.Spec.MatchConditions {
		conditions[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		add("matchCondition", p.Spec.MatchConditions[i].Name, conditions[i], vars)
	}
	for _, v := range p.Spec.Variables {
		r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars, environment.StoredExpressions)
		require.Nil(t, r.Error, v.Expression)
		add("variable", v.Name, &validating.Variable{Name: v.Name, Expression: "variables." + v.Name}, vars)
		out.exprs[len(out.exprs)-1].expression = v.Expression
	}
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		add("validation", fmt.Sprintf("%d (%.60s)", i, v.Message), validations[i], vars)
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
			add("messageExpression", fmt.Sprintf("%d (%.60s)", i, v.Message), messages[i], plugincel.OptionalVariableDeclarations{})
		}
	}
	out.validator = validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.StoredExpressions),
		matchconditions.NewMatcher(compiler.CompileCondition(conditions, vars, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name),
		compiler.CompileCondition(nil, vars, environment.StoredExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		p.Spec.FailurePolicy)
	return out
}

// validate returns the API server's decisions on the request, with its budget for a
// policy (RuntimeCELCostBudget).
func (p *apiServerPolicy) validate(attrs *admission.VersionedAttributes) validating.ValidateResult {
	return p.validator.Validate(context.Background(), attrs.GetResource(), attrs, nil, nil, celconfig.RuntimeCELCostBudget, nil)
}

// exprCost is the runtime cost of one expression on one request, as the API server
// counts it, and the error of its evaluation.
type exprCost struct {
	cost uint64
	err  error
}

// costs evaluates each expression alone on the request, with the activation the API
// server builds (the objects as unstructured, the variables evaluated lazily, each
// counted on its own), and returns their costs by id: the match conditions', and the
// others' when they all hold (else the API server evaluates no more).
func (p *apiServerPolicy) costs(t *testing.T, attrs *admission.VersionedAttributes) map[string]exprCost {
	t.Helper()
	unstructured := func(obj any) any {
		if obj == nil {
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		return u
	}
	request := plugincel.CreateAdmissionRequest(attrs.Attributes, metav1.GroupVersionResource(attrs.GetResource()), metav1.GroupVersionKind(attrs.VersionedKind))
	ctx := p.compiler.CompositionEnv.CreateContext(context.Background())
	activation := map[string]any{"object": unstructured(attrs.VersionedObject), "oldObject": unstructured(attrs.VersionedOldObject), "request": unstructured(request)}
	activation["variables"] = ctx.Variables(activation)
	out := map[string]exprCost{}
	matched := true
	for _, e := range p.exprs {
		if e.kind != "matchCondition" && !matched {
			break
		}
		v, details, err := e.program.ContextEval(ctx, activation)
		require.NotNil(t, details, e.id)
		// A variable is evaluated once, when first read (in the order declared, so that
		// those it reads are already), and counted on its own.
		cost, variables := *details.ActualCost(), uint64(ctx.GetAndResetCost())
		if e.kind == "variable" {
			cost = variables
		}
		out[e.id] = exprCost{cost: cost, err: err}
		matched = matched && (e.kind != "matchCondition" || err == nil && v == celtypes.True)
	}
	return out
}

// worstValues returns values of the annotation or setting name that the sync accepts,
// each n characters long, in every shape whose cost in the policy's CEL grows with its
// length: white space around a value, leading zeros, repeated components, a list of
// celMaxEntries entries (the most the policy compares) and one of as many as fit. None
// for a name the policy does not read.
func worstValues(settings Settings, name string, n int) []string {
	pad := func(v string) string {
		left := (n - len(v)) / 2
		return strings.Repeat(" ", left) + v + strings.Repeat(" ", n-len(v)-left)
	}
	zeros := func(v string) string { return strings.Repeat("0", n-len(v)) + v }
	// list returns entries joined by commas, white space around each, the most of them
	// that fit in n (all when count is 0).
	list := func(count int, entry func(i int) string) string {
		var es []string
		size := -1
		for i := 0; count == 0 || i < count; i++ {
			e := entry(i)
			if size+1+len(e) > n {
				break
			}
			es, size = append(es, e), size+1+len(e)
		}
		per := (n - size) / len(es)
		for i := range es {
			es[i] = strings.Repeat(" ", per/2) + es[i] + strings.Repeat(" ", per-per/2)
		}
		es[len(es)-1] += strings.Repeat(" ", n-size-per*len(es))
		return strings.Join(es, ",")
	}
	durations := func(v string) []string {
		return []string{pad(v), zeros(v), v[:len(v)-1] + "." + zeros("s")[len(v):], v + strings.Repeat("0s", (n-len(v))/2) + strings.Repeat(" ", (n-len(v))%2)}
	}
	switch name {
	case AnnotationInternal, AnnotationProxyProtocol, AnnotationKeepOnDelete:
		return []string{pad("true")}
	case AnnotationIPAddresses:
		return []string{pad("10.0.0.1"), list(2, func(i int) string { return []string{"10.0.0.1", "2001:db8::1"}[i] })}
	case AnnotationName, AnnotationShare:
		return []string{pad(strings.Repeat("a", maxNameLength))}
	case AnnotationHealthCheckProtocol:
		return []string{pad("https")}
	case AnnotationHealthCheckPort:
		return []string{pad("80"), zeros("80")}
	case AnnotationHealthCheckPath:
		return []string{pad("/healthz"), "/" + strings.Repeat("a", n-1)}
	case AnnotationHealthCheckInterval:
		return durations("10s")
	case AnnotationHealthCheckTimeout:
		return durations("5s")
	case AnnotationHealthCheckHealthyThreshold, AnnotationHealthCheckUnhealthyThreshold:
		return []string{pad("3"), zeros("3")}
	case AnnotationHostname:
		return []string{pad(strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("a", 61))}
	case AnnotationProtocol:
		return []string{pad("http")} // what cookie stickiness needs, as TCP costs
	case AnnotationTLSPorts:
		return []string{pad("https"), zeros("443"), list(celMaxEntries, func(int) string { return "443" }), list(0, func(int) string { return "443" })}
	case AnnotationTLSCertificates:
		long := strings.Repeat("x", n/celMaxEntries-8)
		return []string{pad("c"), list(celMaxEntries, func(i int) string { return long + strconv.Itoa(i) }), list(0, func(i int) string { return strconv.FormatInt(int64(i), 36) })}
	case AnnotationLoadBalancerID:
		return []string{pad(strings.Repeat("x", maxIDLength))}
	case AnnotationStickySessions:
		return []string{pad("cookie")}
	case AnnotationStickySessionsCookieName:
		return []string{pad(strings.Repeat("a", 64))}
	case AnnotationStickySessionsCookieLifetime:
		return []string{pad("300"), zeros("300")}
	}
	for _, s := range settings {
		if s.Name == name && s.Parse == nil {
			return []string{pad(s.Values[0])}
		}
	}
	return nil
}

// worstCase is a Service the sync accepts, created or updated (old), whose cost in the
// policy's CEL is the most of its kind.
type worstCase struct {
	name     string
	svc, old *corev1.Service
}

// worstCases returns, for each expression of the policies, Services that set every
// annotation key the expression reads (through the variables it reads too) to the worst
// values of its annotation (worstValues), all as long as the annotations the API server
// stores allow (TotalAnnotationSizeLimitB together) and each celMaxValue long (the
// longest the policy checks); and the Services whose lists the policies iterate are
// longest: the most annotations, the most ports with tls-ports' most entries naming the
// last.
func worstCases(t *testing.T, opts AdmissionPolicyOptions, policies []*apiServerPolicy) []worstCase {
	t.Helper()
	const prefix = DefaultAnnotationPrefix
	// names are the annotations whose values the policy reads, by key: ccmkit's, the
	// settings' and the aliases' without Convert (CEL only sees whether one with Convert is
	// set, which leaves a contradiction to the sync).
	names := map[string]string{}
	for _, a := range Annotations() {
		names[prefix+a.Name] = a.Name
	}
	for _, s := range opts.Settings {
		names[prefix+s.Name] = s.Name
	}
	for _, a := range opts.Aliases.Keys {
		if a.Convert == nil {
			names[a.Key] = a.Name
		}
	}
	var out []worstCase
	seen := map[string]bool{}
	variableRE := regexp.MustCompile(`variables\.(\w+)`)
	for _, p := range policies {
		vars := map[string]string{}
		for _, v := range p.policy.Spec.Variables {
			vars[v.Name] = v.Expression
		}
		for _, e := range p.exprs {
			var keys []string
			expr := e.expression
			for _, m := range variableRE.FindAllStringSubmatch(expr, -1) {
				expr += " " + vars[m[1]] // no variable reads a later one
			}
			for key, name := range names {
				if strings.Contains(expr, celString(key)) && worstValues(opts.Settings, name, 1024) != nil && !slices.Contains(keys, key) {
					keys = append(keys, key)
				}
			}
			slices.Sort(keys)
			if len(keys) == 0 || seen[strings.Join(keys, " ")] {
				continue
			}
			seen[strings.Join(keys, " ")] = true
			// A share and an adopted load balancer are never set together.
			groups := [][]string{keys}
			if i, j := slices.Index(keys, prefix+AnnotationShare), slices.Index(keys, prefix+AnnotationLoadBalancerID); i >= 0 && j >= 0 {
				groups = [][]string{slices.Delete(slices.Clone(keys), i, i+1), slices.Delete(slices.Clone(keys), j, j+1)}
			}
			for _, keys := range groups {
				companions := worstCompanions(keys, names)
				room := apimachineryvalidation.TotalAnnotationSizeLimitB
				for k, v := range companions {
					room -= len(k) + len(v)
				}
				for _, k := range keys {
					room -= len(k)
				}
				for _, n := range []int{celMaxValue, room / len(keys)} {
					for shape := 0; ; shape++ {
						annotations := maps.Clone(companions)
						more := false
						for _, k := range keys {
							values := worstValues(opts.Settings, names[k], n)
							annotations[k] = values[shape%len(values)]
							more = more || shape+1 < len(values)
						}
						svc := lbService(annotations)
						if _, ok := annotations[prefix+AnnotationIPAddresses]; ok {
							svc.Spec.LoadBalancerIP = "10.0.0.1" //nolint:staticcheck // the deprecated field is still honoured
						}
						out = append(out, worstCase{name: fmt.Sprintf("%s, %d characters, shape %d", strings.Join(keys, " "), n, shape), svc: svc})
						if !more {
							break
						}
					}
				}
			}
		}
	}
	// The most annotations the Warn policy looks at (under no prefix, ccmkit's and the
	// legacy ones), and the most the API server stores (keys of at most four characters),
	// each also in an update that changes one of them.
	many := func(count int, under string) *corev1.Service {
		annotations := map[string]string{prefix + AnnotationInternal: "true"}
		room := apimachineryvalidation.TotalAnnotationSizeLimitB - len(prefix+AnnotationInternal+"true")
		for i := 0; len(annotations) < count && room >= len(under)+4; i++ {
			k := under + strconv.FormatInt(int64(i), 36)
			if !slices.ContainsFunc(opts.Aliases.Keys, func(a Alias) bool { return a.Key == k }) && names[k] == "" {
				annotations[k] = ""
				room -= len(k)
			}
		}
		return lbService(annotations)
	}
	for _, svc := range append([]*corev1.Service{many(math.MaxInt, "")}, many(celMaxAnnotations, ""), many(celMaxAnnotations, prefix)) {
		old := svc.DeepCopy()
		old.Annotations[prefix+AnnotationInternal] = "false"
		out = append(out, worstCase{name: fmt.Sprintf("%d annotations", len(svc.Annotations)), svc: svc},
			worstCase{name: fmt.Sprintf("an update of %d annotations", len(svc.Annotations)), svc: svc, old: old})
	}
	for _, lp := range opts.Aliases.Prefixes {
		out = append(out, worstCase{name: fmt.Sprintf("%d annotations under %s", celMaxAnnotations, lp), svc: many(celMaxAnnotations, lp)})
	}
	// The most ports the policy checks, and more, all TCP or all but the last UDP, and
	// tls-ports with celMaxEntries entries naming the last.
	for _, count := range []int{celMaxPorts, 4 * celMaxPorts} {
		for _, udp := range []bool{false, true} {
			svc := lbService(map[string]string{prefix + AnnotationTLSPorts: strings.Repeat("last,", celMaxEntries-1) + "last", prefix + AnnotationTLSCertificates: "c"})
			svc.Spec.Ports = nil
			for i := range count {
				port := corev1.ServicePort{Name: "p" + strconv.Itoa(i), Protocol: corev1.ProtocolTCP, Port: int32(1 + i), NodePort: int32(30000 + i)}
				if udp {
					port.Protocol = corev1.ProtocolUDP
				}
				svc.Spec.Ports = append(svc.Spec.Ports, port)
			}
			last := &svc.Spec.Ports[count-1]
			last.Name, last.Protocol = "last", corev1.ProtocolTCP
			out = append(out, worstCase{name: fmt.Sprintf("%d ports, UDP %t", count, udp), svc: svc})
		}
	}
	return out
}

// worstCompanions are the annotations a Service that sets keys (of the annotations names)
// needs beside them for the sync to accept it: the other half of TLS termination, and
// cookie stickiness with a port that speaks HTTP.
func worstCompanions(keys []string, names map[string]string) map[string]string {
	const prefix = DefaultAnnotationPrefix
	out := map[string]string{}
	set := func(name string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return names[k] == name })
	}
	if set(AnnotationTLSCertificates) && !set(AnnotationTLSPorts) {
		out[prefix+AnnotationTLSPorts] = "https"
	}
	if set(AnnotationTLSPorts) && !set(AnnotationTLSCertificates) {
		out[prefix+AnnotationTLSCertificates] = "c"
	}
	// Cookie stickiness, which its cookie's name and lifetime need, needs a port that
	// speaks HTTP.
	if (set(AnnotationStickySessionsCookieName) || set(AnnotationStickySessionsCookieLifetime)) && !set(AnnotationStickySessions) {
		out[prefix+AnnotationStickySessions] = "cookie"
	}
	if (set(AnnotationStickySessions) || out[prefix+AnnotationStickySessions] != "") && !set(AnnotationProtocol) {
		out[prefix+AnnotationProtocol] = "http"
	}
	return out
}

// TestAdmissionPolicyCost runs the policies as the API server runs them on the Services
// the sync accepts whose CEL costs the most (worstCases): each expression of each policy
// costs at most the API server's limit on one expression (PerCallLimit), evaluates
// without error, and the API server admits every one of them (within the budget of a
// policy, RuntimeCELCostBudget, the messages included). Every annotation and setting the
// policy checks has worst values. The ten most expensive expressions are logged.
func TestAdmissionPolicyCost(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	for _, tc := range []struct {
		name string
		opts AdmissionPolicyOptions
	}{
		{"ccmkit's annotations", AdmissionPolicyOptions{}},
		{"with settings and aliases", AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable, HealthCheckUnit: time.Second}},
		{"with a shape's limits", AdmissionPolicyOptions{Settings: aliasSettings, Aliases: aliasTable, Shape: cloudapi.LoadBalancerShape{
			Unsupported: []cloudapi.Feature{cloudapi.FeatureIPv6First, cloudapi.FeatureDualStack}, HealthCheckUnit: time.Second,
			HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 3 * time.Second, Max: time.Minute}, Timeout: cloudapi.DurationRange{Min: 3 * time.Second},
				HealthyThreshold: cloudapi.CountRange{Min: 2, Max: 10}, UnhealthyThreshold: cloudapi.CountRange{Min: 2, Max: 10}},
			Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureProxyProtocol}, {cloudapi.FeatureSessionAffinity, cloudapi.FeatureInternal}},
			MaxCertificates: 1,
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shaped := !reflect.DeepEqual(tc.opts.Shape, cloudapi.LoadBalancerShape{})
			for _, a := range Annotations() {
				if a.check != nil {
					require.NotEmpty(t, worstValues(tc.opts.Settings, a.Name, celMaxValue), "no worst values of annotation %s", a.Name)
				}
			}
			for _, s := range tc.opts.Settings {
				if s.Parse == nil {
					require.NotEmpty(t, worstValues(tc.opts.Settings, s.Name, celMaxValue), "no worst values of setting %s", s.Name)
				}
			}
			var policies []*apiServerPolicy
			for _, p := range newPolicyEval(t, tc.opts).policies {
				policies = append(policies, compileAPIServerPolicy(t, p))
			}
			type most struct {
				cost uint64
				at   string
			}
			worst := map[string]most{}
			for _, c := range worstCases(t, tc.opts, policies) {
				require.Empty(t, apimachineryvalidation.ValidateAnnotations(c.svc.Annotations, field.NewPath("metadata", "annotations")), "the API server stores it: %s", c.name)
				_, _, ps := translate(translation{svc: c.svc, prefix: prefix, clusterID: "c1", declarations: tc.opts.Settings, aliases: tc.opts.Aliases,
					shape: tc.opts.Shape, targets: func(labels.Selector) []string { return nil }})
				accepted := ps.err(c.svc) == nil // the worst cases are the sync's without a shape; a shape's limits refuse some
				if !shaped {
					require.NoError(t, ps.err(c.svc), "the sync accepts it: %s", c.name)
				}
				attrs := attributes(t, c.svc, c.old)
				for _, p := range policies {
					for id, ec := range p.costs(t, attrs) {
						// A message of an annotation the Service does not set is never shown.
						unshown := strings.Contains(id, "messageExpression") && ec.err != nil && strings.HasPrefix(ec.err.Error(), "no such key")
						if !unshown {
							assert.NoError(t, ec.err, "%s, %s", id, c.name)
						}
						if w, ok := worst[id]; !ok || ec.cost > w.cost {
							worst[id] = most{ec.cost, c.name}
						}
					}
					for _, d := range p.validate(attrs).Decisions {
						assert.NotEqual(t, validating.EvalError, d.Evaluation, "%s: %s: %s", p.policy.Name, c.name, d.Message)
						if p.policy.Name == AdmissionPolicyName && accepted {
							assert.Equal(t, validating.ActionAdmit, d.Action, "%s: %s", c.name, d.Message)
						}
					}
				}
			}
			var ids []string
			for _, p := range policies {
				for _, e := range p.exprs {
					w, ok := worst[e.id]
					require.True(t, ok, "%s is evaluated", e.id)
					assert.LessOrEqual(t, w.cost, uint64(celconfig.PerCallLimit), "%s costs more than the API server allows, at %s: %s", e.id, w.at, e.expression)
					ids = append(ids, e.id)
				}
			}
			slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(worst[b].cost, worst[a].cost) })
			for _, id := range ids[:10] {
				t.Logf("%7d %s, at %.100s", worst[id].cost, id, worst[id].at)
			}
		})
	}
}

// TestParseLongestCertificates parses the tls-certificates with the most entries the API
// server stores (about 50,000): the sync reads it in well under a second, where comparing
// each entry with each took seconds on every sync, and still finds one listed twice.
func TestParseLongestCertificates(t *testing.T) {
	const prefix = DefaultAnnotationPrefix
	key := prefix + AnnotationTLSCertificates
	var entries []string
	for size := len(key) - 1; ; {
		e := strconv.FormatInt(int64(len(entries)), 36)
		if size += 1 + len(e); size > apimachineryvalidation.TotalAnnotationSizeLimitB {
			break
		}
		entries = append(entries, e)
	}
	v := strings.Join(entries, ",")
	start := time.Now()
	a, _, errs := parseAnnotations(prefix, nil, Aliases{}, map[string]string{key: v})
	assert.Less(t, time.Since(start), time.Second)
	require.Empty(t, errs)
	assert.Len(t, a.certs, len(entries))

	_, _, errs = parseAnnotations(prefix, nil, Aliases{}, map[string]string{key: v + "," + entries[0]})
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], `certificate "0" is listed twice`)
}
