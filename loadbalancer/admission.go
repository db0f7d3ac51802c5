package loadbalancer

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// AdmissionPolicyOptions are the configuration AdmissionPolicy writes the policies for:
// the provider's cloud config and the adapter's declarations.
type AdmissionPolicyOptions struct {
	// AnnotationPrefix is the prefix of the annotations ccmkit reads, ending in "/".
	// Default DefaultAnnotationPrefix.
	AnnotationPrefix string
	// Settings are the adapter's declared load balancer settings.
	Settings Settings
	// Aliases are the adapter's annotation aliases: the legacy keys are checked as the
	// annotations they stand for, and the keys under the legacy prefixes that no alias
	// declares are warned of.
	Aliases Aliases
	// Class is the load balancer class ccmkit serves (the cloud config's
	// loadBalancer.class), or "" for none. Services of another class are not checked.
	Class string
	// ClassOnly is true when ccmkit serves only Services of Class, not those without a
	// class (loadBalancer.serveUnclassed: false).
	ClassOnly bool
	// HealthCheckUnit is the unit the cloud keeps a health check's interval and timeout
	// in (the adapter's cloudapi.LoadBalancerShape.HealthCheckUnit): an interval or
	// timeout that is not a whole number of it is refused, as the sync refuses it. Zero
	// means Shape's; zero there too, or a unit that is not a whole number of
	// milliseconds, checks none.
	HealthCheckUnit time.Duration
	// Shape is what the cloud's load balancers do not support or keep per listener (the
	// adapter's cloudapi.LoadBalancerShape): an annotation that asks for what it cannot
	// build is refused, as the sync refuses it (port-health-checks without
	// cloudapi.FeatureListenerHealthCheck in its PerListener).
	Shape cloudapi.LoadBalancerShape
}

// The names of the objects AdmissionPolicy writes: each policy and its binding share one.
const (
	// AdmissionPolicyName is the policy that refuses malformed and contradicting
	// annotations (validationActions Deny).
	AdmissionPolicyName = "ccmkit-loadbalancer-annotations"
	// AdmissionPolicyUnknownName is the policy that warns of annotation keys under the
	// prefix that nothing reads (validationActions Warn).
	AdmissionPolicyUnknownName = "ccmkit-loadbalancer-annotations-unknown"
	// AdmissionPolicySyncOnlyAnnotation is the annotation of the Deny policy that lists the
	// annotations whose values it cannot check, which only the sync checks: names after
	// the prefix, then whole legacy keys of aliases.
	AdmissionPolicySyncOnlyAnnotation = "ccmkit.io/checked-at-sync-only"
)

// AdmissionPolicy returns two ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1)
// and their bindings as YAML, for `kubectl apply -f`: the API server then checks the load
// balancer annotations of a Service when it is created or updated, with the same rules as
// ccmkit's sync, instead of ccmkit reporting them later in a Warning event.
//
// AdmissionPolicyName refuses a Service whose annotation under the prefix has a malformed
// value, naming the annotation, the value and what is allowed, and one whose annotations
// contradict each other or the Service as the sync refuses them (ports that terminate TLS
// without tls-certificates, tls-certificates without such a port, tls-ports naming a port
// the Service does not have or one that is not TCP, a health check timeout longer than its
// interval, a spec.loadBalancerIP not among the ip-addresses, a port's own health check
// on a cloud that keeps one for all ports, and what the limits of opts.Shape refuse: a
// health check value out of its ranges, IPv6 first or dual-stack where unsupported, a
// pair of exclusive features that CEL sees (internal, the PROXY protocol, session
// affinity, the IP families), more certificates than a listener takes). Where CEL cannot check a
// value as ccmkit does, the policy checks less, never more: it refuses no value the sync
// accepts. The node-selector and an adapter's setting declared with Parse are left to the
// sync and listed in the policy's annotation AdmissionPolicySyncOnlyAnnotation; an
// IPv4-mapped IPv6 address in ip-addresses is not counted in its family. A contradiction
// with the cloud's state (an internal switch of an adopted or kept load balancer) is only
// the sync's to find.
//
// No CEL expression of the policies costs the API server more than a fraction of its
// limit on one (PerCallLimit of k8s.io/apiserver, beyond which it refuses the Service),
// whatever the Service: AdmissionPolicyName checks a value of at most 4096 characters
// (trimmed), looks for a certificate listed twice among at most 64 tls-certificates, and
// checks the ports that terminate TLS of a Service of at most 256 ports whose tls-ports
// has at most 64 entries; it leaves a longer value, or more of them, to the sync.
//
// A legacy key of opts.Aliases without Convert is checked as the annotation it stands for,
// the messages naming the legacy key (the one the Service spells the annotation with);
// one with Convert or Parts is listed in
// AdmissionPolicySyncOnlyAnnotation and never refused, and a contradiction that involves
// an annotation it may set is left to the sync, as is TLS termination (the certificates,
// the ports tls-ports names) where the Service sets port-protocols. Two spellings of one annotation whose values
// disagree are refused where CEL compares them as the sync does (neither with Convert,
// and the annotation a boolean, an enumeration, a number or a setting declared with
// Values); otherwise only the sync refuses them.
//
// AdmissionPolicyUnknownName warns (kubectl prints it) of keys under the prefix or a
// legacy prefix that nothing reads, a typo or a key of another version, in a Service of at
// most 1024 annotations; it refuses nothing.
//
// AdmissionPolicyName evaluates only Services that carry a key ccmkit reads (one of its
// annotations, a setting or a legacy key), AdmissionPolicyUnknownName only those with a
// key under the prefix or a legacy prefix (matchConditions); both
// when they are created or an update changes their annotations or spec (a finalizer or a
// label is never refused), and only those ccmkit serves: of type LoadBalancer and of its
// class (opts.Class and opts.ClassOnly), but for keep-on-delete, which ccmkit reads when a
// Service stops being of type LoadBalancer. It fails when opts.Settings or opts.Aliases
// are declared wrongly (Settings.Validate, Aliases.Validate).
func AdmissionPolicy(opts AdmissionPolicyOptions) ([]byte, error) {
	if opts.AnnotationPrefix == "" {
		opts.AnnotationPrefix = DefaultAnnotationPrefix
	}
	if err := opts.Settings.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Aliases.Validate(opts.AnnotationPrefix, opts.Settings); err != nil {
		return nil, err
	}
	deny, syncOnly := denyPolicy(opts)
	warn := unknownPolicy(opts)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# ccmkit's load balancer annotations under %q, checked when a Service is created or updated.\n", opts.AnnotationPrefix)
	if len(opts.Aliases.Prefixes) > 0 {
		fmt.Fprintf(&b, "# With the legacy keys the adapter's aliases declare, and the unknown keys under %s.\n", strings.Join(opts.Aliases.Prefixes, ", "))
	} else if len(opts.Aliases.Keys) > 0 {
		fmt.Fprintf(&b, "# With the legacy keys the adapter's aliases declare.\n")
	}
	fmt.Fprintf(&b, "# Generated for this configuration (loadbalancer.AdmissionPolicy); do not edit.\n")
	fmt.Fprintf(&b, "# Checked only when ccmkit syncs the Service: %s.\n", strings.Join(syncOnly, ", "))
	for _, obj := range []runtime.Object{deny, binding(AdmissionPolicyName, admissionregistrationv1.Deny), warn, binding(AdmissionPolicyUnknownName, admissionregistrationv1.Warn)} {
		out, err := manifest(obj)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	return b.Bytes(), nil
}

// The bounds of what the policies check. The API server stops a CEL expression that
// costs more than its limit (1,000,000, PerCallLimit of k8s.io/apiserver/pkg/apis/cel),
// and a policy whose expressions cost more than 10,000,000 together, and then refuses the
// Service: a value whose syntax has no bound (leading zeros, lists) would cost more than
// that, and comparing each of two lists' entries with each costs their product. Beyond
// these bounds the policies leave the checks to the sync and refuse nothing, so that no
// expression costs more than a fraction of the limit for any Service the API server
// stores (annotations of at most 256 KiB; TestAdmissionPolicyCost measures it).
const (
	// celMaxValue is the longest value of an annotation (trimmed, in characters) the
	// policy checks.
	celMaxValue = 4096
	// celMaxEntries is the most entries of tls-ports that the policy compares with the
	// Service's ports, and of tls-certificates that it compares with each other.
	celMaxEntries = 64
	// celMaxPorts is the most ports of a Service whose TLS termination the policy checks.
	celMaxPorts = 256
	// celMaxAnnotations is the most annotations of a Service whose unknown keys the Warn
	// policy looks for.
	celMaxAnnotations = 1024
)

// denyPolicy returns the policy that refuses malformed and contradicting annotations, and
// the annotations it cannot check (after the prefix).
func denyPolicy(opts AdmissionPolicyOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, []string) {
	p := opts.AnnotationPrefix
	present := func(key string) string { return celString(key) + " in variables.a" }
	valueOf := func(key string) string { return "variables.a[" + celString(key) + "].trim()" }
	// The annotation name as the Service sets it, by any key whose value CEL reads:
	// has(name) is whether one is set, and value(name) the value of the first set (the
	// sync refuses the Service when two disagree).
	has := func(name string) string {
		plain, _ := opts.Aliases.policyKeys(p, name)
		terms := make([]string, len(plain))
		for i, s := range plain {
			terms[i] = present(s.key)
		}
		return strings.Join(terms, " || ")
	}
	value := func(name string) string {
		plain, _ := opts.Aliases.policyKeys(p, name)
		if len(plain) == 1 {
			return valueOf(plain[0].key)
		}
		v := "variables.a[" + celString(plain[len(plain)-1].key) + "]"
		for i := len(plain) - 2; i >= 0; i-- {
			v = fmt.Sprintf("%s ? variables.a[%s] : %s", present(plain[i].key), celString(plain[i].key), v)
		}
		return "(" + v + ").trim()"
	}
	// spelled(name) is the key the Service spells name with, for messages: the first set
	// of those whose value CEL reads, else its key under the prefix (as the sync names it,
	// parsedAnnotations.key).
	spelled := func(name string) string {
		plain, _ := opts.Aliases.policyKeys(p, name)
		k := celString(p + name)
		for i := len(plain) - 1; i >= 0; i-- {
			k = fmt.Sprintf("(%s ? %s : %s)", present(plain[i].key), celString(plain[i].key), k)
		}
		return k
	}
	// valid is check of the value v for the contradictions: true when the policy checks v
	// (at most celMaxValue) and check accepts it.
	valid := func(check func(string) string, v string) string {
		return fmt.Sprintf("size(%s) <= %d && %s", v, celMaxValue, check(v))
	}
	// unread returns expr, true too when the Service sets one of names by an alias with
	// Convert: only the sync knows what it means.
	unread := func(expr string, names ...string) string {
		var terms []string
		for _, name := range names {
			_, converted := opts.Aliases.policyKeys(p, name)
			for _, k := range converted {
				terms = append(terms, present(k))
			}
		}
		return strings.Join(append(terms, expr), " || ")
	}

	cs, syncOnly := checks(opts.Settings)
	checked := map[string]bool{}
	var vs []admissionregistrationv1.Validation
	for _, c := range cs {
		checked[c.name] = true
		gate := "!variables.lb || "
		if c.name == AnnotationKeepOnDelete {
			gate = "" // read when the Service stops being of type LoadBalancer too
		}
		plain, _ := opts.Aliases.policyKeys(p, c.name)
		for _, s := range plain {
			allowed := oneLine(s.allowed(c.allowed))
			vs = append(vs, admissionregistrationv1.Validation{
				Expression:        fmt.Sprintf("%s!(%s) || [%s].all(v, size(v) > %d || %s)", gate, present(s.key), valueOf(s.key), celMaxValue, c.check("v")),
				Message:           fmt.Sprintf("annotation %s: malformed value (allowed: %s)", s.key, allowed),
				MessageExpression: fmt.Sprintf("%s + %s + %s", celString("annotation "+s.key+`: "`), celCut(valueOf(s.key)), celString(`" is not allowed (allowed: `+allowed+")")),
				Reason:            ptr.To(metav1.StatusReasonInvalid),
			})
		}
		if c.same == nil {
			continue
		}
		// Two spellings that both hold a valid value disagree, as the sync compares them.
		for i, first := range plain {
			for _, s := range plain[i+1:] {
				vs = append(vs, admissionregistrationv1.Validation{
					Expression: fmt.Sprintf("%s!(%s && %s) || [%s].all(x, [%s].all(y, !(%s) || !(%s) || %s))", gate, present(first.key), present(s.key),
						valueOf(first.key), valueOf(s.key), valid(c.check, "x"), valid(c.check, "y"), c.same("x", "y")),
					Message: fmt.Sprintf("annotation %s: conflicts with annotation %s, and both set %s%s; remove one, or set them alike", s.key, first.key, p, c.name),
					MessageExpression: fmt.Sprintf("%s + %s + %s + %s + %s", celString("annotation "+s.key+`: "`), celCut(valueOf(s.key)),
						celString(`" conflicts with annotation `+first.key+` "`), celCut(valueOf(first.key)), celString(`", and both set `+p+c.name+"; remove one, or set them alike")),
					Reason: ptr.To(metav1.StatusReasonInvalid),
				})
			}
		}
	}
	for _, a := range opts.Aliases.Keys {
		if a.converts() || !checked[a.Name] {
			syncOnly = append(syncOnly, a.Key)
		}
	}
	// contradiction adds the validation that refuses a Service of type LoadBalancer that
	// expr is false for, with a message whose %s are the keys of names: their keys under
	// the prefix in Message, the keys the Service spells them with in MessageExpression
	// (when one has an alias).
	contradiction := func(expr, format string, names ...string) {
		parts := strings.Split(format, "%s")
		msg, literal, terms := parts[0], parts[0], []string(nil)
		for i, name := range names {
			msg += p + name + parts[i+1]
			if plain, _ := opts.Aliases.policyKeys(p, name); len(plain) == 1 {
				literal += p + name + parts[i+1]
				continue
			}
			terms = append(terms, celString(literal), spelled(name))
			literal = parts[i+1]
		}
		v := admissionregistrationv1.Validation{Expression: "!variables.lb || " + expr, Message: msg, Reason: ptr.To(metav1.StatusReasonInvalid)}
		if len(terms) > 0 {
			v.MessageExpression = strings.Join(append(terms, celString(literal)), " + ")
		}
		vs = append(vs, v)
	}
	timeout, interval := AnnotationHealthCheckTimeout, AnnotationHealthCheckInterval
	validDuration := func(name string) string { return valid(celDuration, value(name)) }
	defInterval := defaultHealthCheck(opts.Shape).Interval.String()
	defaultIv, defaultText := celString(defInterval), defInterval
	if d, ok := opts.Aliases.Defaults[interval]; ok { // the earlier default, for a Service that spells a legacy key
		defaultIv = fmt.Sprintf("(variables.a.exists(k, %s) ? %s : %s)", opts.Aliases.celLegacy("k"), celString(d), defaultIv)
		defaultText += ", " + d + " with a legacy key"
	}
	contradiction(unread(fmt.Sprintf("!(%s) || !(%s) || duration(%s) <= ((%s) && (%s) ? duration(%s) : duration(%s))",
		has(timeout), validDuration(timeout), value(timeout), has(interval), validDuration(interval), value(interval), defaultIv), timeout, interval),
		"annotation %s: the health check timeout is longer than its interval (annotation %s, default "+defaultText+")", timeout, interval)
	rules := celRules{has: has, value: value, valid: valid, unread: unread, contradiction: contradiction}
	shapeContradictions(opts, rules)
	stickinessContradictions(opts, rules)
	// The checks of the ports that terminate TLS read variables.terminating and
	// variables.tlsPorts, which only variables.portsChecked Services have.
	certs, ports := AnnotationTLSCertificates, AnnotationTLSPorts
	contradiction(unread(fmt.Sprintf("!variables.portsChecked || %s || variables.terminating.size() == 0", has(certs)), certs, ports, AnnotationProtocol),
		"a port terminates TLS (annotation %s or %s, or its appProtocol tls or https), but annotation %s names no certificate", ports, AnnotationProtocol, certs)
	contradiction(unread(fmt.Sprintf("!variables.portsChecked || !(%s) || variables.terminating.size() > 0", has(certs)), certs, ports, AnnotationProtocol),
		"annotation %s is set, but no port terminates TLS: name the ports in %s, or set their appProtocol (tls, https) or annotation %s", certs, ports, AnnotationProtocol)
	contradiction(unread("!variables.portsChecked || variables.tlsPorts.all(t, object.spec.ports.exists(q, string(q.port) == t || (has(q.name) && q.name == t)))", ports),
		"annotation %s names a port the Service does not have", ports)
	contradiction(unread("!variables.portsChecked || object.spec.ports.all(q, !has(q.protocol) || q.protocol == 'TCP' || !variables.tlsPorts.exists(t, string(q.port) == t || (has(q.name) && q.name == t)))", ports),
		"annotation %s names a port that is not TCP: only TCP ports terminate TLS", ports)
	share, id := AnnotationShare, AnnotationLoadBalancerID
	contradiction(unread(fmt.Sprintf("!(%s) || !(%s)", has(share), has(id)), share, id),
		"annotations %s and %s cannot be combined: a shared load balancer is one ccmkit makes; remove one of them", share, id)
	ips := AnnotationIPAddresses
	contradiction(unread(fmt.Sprintf("!(%s) || !has(object.spec.loadBalancerIP) || !isIP(object.spec.loadBalancerIP) || size(%s) > %d || "+
		"!%s.split(',').all(f, isIP(f.trim())) || %s.split(',').exists(f, ip(f.trim()) == ip(object.spec.loadBalancerIP))", has(ips), value(ips), celMaxValue, value(ips), value(ips)), ips),
		"spec.loadBalancerIP is not among the addresses of annotation %s: set one of them", ips)

	tlsEntry := "f.trim().matches('^[-+]?0*[0-9]{1,5}$') ? string(int(f.trim())) : f.trim()" // "080" is port 80, as the sync reads it
	// A TCP port terminates TLS when tls-ports names it, or its appProtocol is tls or
	// https, or it names none of tcp, udp, sctp, http and the protocol annotation is TLS
	// or HTTPS (appProtocol).
	terminating := fmt.Sprintf("!variables.portsChecked ? [] : object.spec.ports.filter(q, (!has(q.protocol) || q.protocol == 'TCP') && (" +
		"variables.tlsPorts.exists(t, string(q.port) == t || (has(q.name) && q.name == t)) || " +
		"(has(q.appProtocol) && q.appProtocol.lowerAscii() in ['tls', 'https']) || " +
		"(!(has(q.appProtocol) && q.appProtocol.lowerAscii() in ['tcp', 'udp', 'sctp', 'http']) && variables.protocol in ['TLS', 'HTTPS'])))")
	// The Services that carry a key the LoadBalancer reads, looked up one by one: the
	// cost does not grow with the Service's other annotations.
	var known []string
	for _, a := range annotationTable() {
		known = append(known, p+a.Name)
	}
	for _, s := range opts.Settings {
		known = append(known, p+s.Name)
	}
	for _, a := range opts.Aliases.Keys {
		known = append(known, a.Key)
	}
	annotated := fmt.Sprintf("has(object.metadata.annotations) && [%s].exists(k, k in object.metadata.annotations)", celList(known))
	policy := newPolicy(AdmissionPolicyName, opts, annotated, []admissionregistrationv1.Variable{
		{Name: "a", Expression: "object.metadata.annotations"},
		{Name: "lb", Expression: "object.spec.type == 'LoadBalancer'"},
		{Name: "tlsPorts", Expression: fmt.Sprintf("(%s) && size(%s) <= %d ? %s.split(',').map(f, %s) : []", has(ports), value(ports), celMaxValue, value(ports), tlsEntry)},
		// The Service's ports and tls-ports are few enough to compare each with each, and
		// no port-protocols (which only the sync reads) says what a port speaks.
		{Name: "portsChecked", Expression: fmt.Sprintf("size(object.spec.ports) <= %d && (!(%s) || size(%s) <= %d && size(variables.tlsPorts) <= %d) && !(%s)",
			celMaxPorts, has(ports), value(ports), celMaxValue, celMaxEntries, unread(has(AnnotationPortProtocols), AnnotationPortProtocols))},
		{Name: "protocol", Expression: fmt.Sprintf("%s ? %s : 'TCP'", has(AnnotationProtocol), celUpper(value(AnnotationProtocol)))},
		{Name: "terminating", Expression: terminating},
	}, vs)
	policy.Annotations = map[string]string{AdmissionPolicySyncOnlyAnnotation: strings.Join(syncOnly, ", ")}
	return policy, syncOnly
}

// unknownPolicy returns the policy that warns of keys under the prefix that nothing reads.
func unknownPolicy(opts AdmissionPolicyOptions) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := opts.AnnotationPrefix
	var known []string
	for _, a := range annotationTable() {
		known = append(known, a.Name)
	}
	for _, s := range opts.Settings {
		known = append(known, s.Name)
	}
	unknown := fmt.Sprintf("k.startsWith(%s) && !(k.substring(%d) in [%s])", celString(p), len([]rune(p)), celList(known))
	var legacyKeys []string
	for _, a := range opts.Aliases.Keys {
		legacyKeys = append(legacyKeys, a.Key)
	}
	for _, lp := range opts.Aliases.Prefixes {
		unknown += fmt.Sprintf(" || k.startsWith(%s) && !(k in [%s])", celString(lp), celList(legacyKeys))
	}
	unknown = "variables.a.filter(k, " + unknown + ")"
	if len(opts.Aliases.Prefixes) > 0 {
		p = strings.Join(append([]string{p}, opts.Aliases.Prefixes...), ", ")
		known = append(known, legacyKeys...)
	}
	// A Service with more than celMaxAnnotations annotations is not looked at: iterating
	// them costs the API server more than their number (quadratic in cel-go's cost
	// tracking), and the sync warns of its unknown keys too.
	annotated := fmt.Sprintf("has(object.metadata.annotations) && size(object.metadata.annotations) <= %d && object.metadata.annotations.exists(k, %s)",
		celMaxAnnotations, opts.Aliases.celRead("k", opts.AnnotationPrefix))
	policy := newPolicy(AdmissionPolicyUnknownName, opts, annotated, []admissionregistrationv1.Variable{
		{Name: "a", Expression: "object.metadata.annotations"},
		{Name: "unknown", Expression: unknown},
	}, []admissionregistrationv1.Validation{{
		Expression: "object.spec.type != 'LoadBalancer' || variables.unknown.size() == 0",
		Message:    fmt.Sprintf("an annotation under %s that nothing reads (a typo, or a key of another version)", p),
		MessageExpression: fmt.Sprintf("'annotations under %s that nothing reads (a typo, or a key of another version): ' + variables.unknown.join(', ') + %s",
			p, celString("; known: "+strings.Join(known, ", "))),
	}})
	return policy
}

// newPolicy returns a policy over the creation and update of the Services ccmkit serves
// whose annotations the CEL annotated holds for, but for updates that change neither the
// annotations nor the spec.
func newPolicy(name string, opts AdmissionPolicyOptions, annotated string, variables []admissionregistrationv1.Variable, validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	class := "!has(object.spec.loadBalancerClass)"
	switch {
	case opts.Class != "" && opts.ClassOnly:
		class = fmt.Sprintf("has(object.spec.loadBalancerClass) && object.spec.loadBalancerClass == %s", celString(opts.Class))
	case opts.Class != "":
		class = fmt.Sprintf("!has(object.spec.loadBalancerClass) || object.spec.loadBalancerClass == %s", celString(opts.Class))
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "annotated", Expression: annotated},
				{Name: "served", Expression: class},
				// An update that changes neither the annotations nor the spec (a controller's
				// finalizer, a label) is not checked: a Service annotated before the policy
				// must still be deletable.
				{Name: "changed", Expression: "request.operation != 'UPDATE' || !has(oldObject.metadata.annotations) || oldObject.metadata.annotations != object.metadata.annotations || oldObject.spec != object.spec"},
			},
			Variables:   variables,
			Validations: validations,
		},
	}
}

// celRules are the CEL builders of denyPolicy's contradictions, for the checks it
// leaves to other functions (shapeContradictions): has(name) whether the Service sets the
// annotation name, value(name) its value, valid(check, v) whether the policy checks v and
// check accepts it, unread(expr, names...) expr, true too when one of names is set by an
// alias with Convert, and contradiction the validation that refuses a Service of type
// LoadBalancer that expr is false for, its message's %s the keys of names.
type celRules struct {
	has, value    func(name string) string
	valid         func(check func(string) string, v string) string
	unread        func(expr string, names ...string) string
	contradiction func(expr, format string, names ...string)
}

// oneLine returns text without line breaks, which a validation's message must not have.
func oneLine(text string) string { return strings.Join(strings.Fields(text), " ") }
