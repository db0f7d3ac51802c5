package loadbalancer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The contradictions of the deny policy that the adapter's shape declares
// (AdmissionPolicyOptions.Shape): the rules of the sync (translate, shapeProblems) as far
// as CEL sees the Service's annotations and spec.

// shapeContradictions adds to the deny policy, with r, the checks of what opts.Shape
// refuses: a health check time that is not a whole number of its unit, a health check
// value out of its ranges, a port's own health check it cannot build, IPv6 first and both
// families where it supports neither, a pair of exclusive features CEL sees (internal,
// the PROXY protocol, session affinity, the families), and more certificates than a
// listener takes.
func shapeContradictions(opts AdmissionPolicyOptions, r celRules) {
	shape := opts.Shape
	interval, timeout := AnnotationHealthCheckInterval, AnnotationHealthCheckTimeout
	validDuration := func(name string) string { return r.valid(celDuration, r.value(name)) }
	if unit := cmp.Or(opts.HealthCheckUnit, shape.HealthCheckUnit); unit > 0 && unit%time.Millisecond == 0 {
		for _, name := range []string{interval, timeout} {
			r.contradiction(r.unread(fmt.Sprintf("!(%s) || !(%s) || duration(%s).getMilliseconds() %% %d == 0", r.has(name), validDuration(name), r.value(name), unit.Milliseconds()), name),
				"annotation %s: not a whole number of "+unit.String()+", the unit this cloud keeps a health check's times in", name)
		}
	}
	ranges := shape.HealthCheckRanges
	for _, d := range []struct {
		name string
		rng  cloudapi.DurationRange
	}{{interval, ranges.Interval}, {timeout, ranges.Timeout}} {
		if d.rng == (cloudapi.DurationRange{}) {
			continue
		}
		in := fmt.Sprintf("duration(%s) >= duration(%s)", r.value(d.name), celString(d.rng.Min.String()))
		if d.rng.Max > 0 {
			in += fmt.Sprintf(" && duration(%s) <= duration(%s)", r.value(d.name), celString(d.rng.Max.String()))
		}
		r.contradiction(r.unread(fmt.Sprintf("!(%s) || !(%s) || %s", r.has(d.name), validDuration(d.name), in), d.name),
			"annotation %s: out of this cloud's range of a health check's "+d.name[len("health-check-"):]+" ("+d.rng.String()+")", d.name)
	}
	for _, c := range []struct {
		name string
		rng  cloudapi.CountRange
	}{{AnnotationHealthCheckHealthyThreshold, ranges.HealthyThreshold}, {AnnotationHealthCheckUnhealthyThreshold, ranges.UnhealthyThreshold}} {
		i := slices.IndexFunc(annotationTable(), func(a Annotation) bool { return a.Name == c.name })
		if c.rng == (cloudapi.CountRange{}) || i < 0 || annotationTable()[i].check == nil {
			continue
		}
		in := fmt.Sprintf("int(%s) >= %d", r.value(c.name), c.rng.Min)
		if c.rng.Max > 0 {
			in += fmt.Sprintf(" && int(%s) <= %d", r.value(c.name), c.rng.Max)
		}
		r.contradiction(r.unread(fmt.Sprintf("!(%s) || !(%s) || %s", r.has(c.name), r.valid(annotationTable()[i].check, r.value(c.name)), in), c.name),
			"annotation %s: out of this cloud's range of a health check's threshold ("+c.rng.String()+")", c.name)
	}
	// A port's own health check, where the cloud cannot build it: the rule of the sync (Uses).
	if portHC := AnnotationPortHealthChecks; shape.Uses(cloudapi.LoadBalancerSpec{Listeners: []cloudapi.Listener{{HealthCheck: &cloudapi.HealthCheck{}}}}) != nil {
		r.contradiction(r.unread("!("+r.has(portHC)+")", portHC),
			"annotation %s: this cloud's load balancers keep one health check for all ports, not one of a port's own; remove the annotation", portHC)
	}
	// What the Service asks for of the features CEL sees, as the sync reads it.
	boolean := func(name string) string {
		return fmt.Sprintf("(%s) && %s && %s.lowerAscii() == 'true'", r.has(name), r.valid(celBool, r.value(name)), r.value(name))
	}
	fams := "has(object.spec.ipFamilies) && size(object.spec.ipFamilies)"
	sees := map[cloudapi.Feature]struct{ expr, what string }{
		cloudapi.FeatureIPv6First:       {fams + " > 0 && object.spec.ipFamilies[0] == 'IPv6'", "IPv6 first in spec.ipFamilies"},
		cloudapi.FeatureDualStack:       {fams + " > 1", "both IP families (spec.ipFamilies)"},
		cloudapi.FeatureSessionAffinity: {"has(object.spec.sessionAffinity) && object.spec.sessionAffinity == 'ClientIP'", "session affinity ClientIP (spec.sessionAffinity)"},
		cloudapi.FeatureCookieAffinity:  {stickyCookieCEL(r), "cookie stickiness (annotation %s)"},
		cloudapi.FeatureInternal:        {boolean(AnnotationInternal), "an internal load balancer (annotation %s)"},
		cloudapi.FeatureProxyProtocol:   {boolean(AnnotationProxyProtocol), "the PROXY protocol (annotation %s)"},
	}
	annotation := map[cloudapi.Feature]string{cloudapi.FeatureInternal: AnnotationInternal, cloudapi.FeatureProxyProtocol: AnnotationProxyProtocol,
		cloudapi.FeatureCookieAffinity: AnnotationStickySessions}
	if !shape.Supports(cloudapi.FeatureIPv6First) {
		r.contradiction("!("+sees[cloudapi.FeatureIPv6First].expr+")", "spec.ipFamilies: this cloud's load balancers serve IPv6 only second, beside IPv4; put IPv4 first")
	}
	if !shape.Supports(cloudapi.FeatureDualStack) {
		r.contradiction("!("+sees[cloudapi.FeatureDualStack].expr+")", "spec.ipFamilies: this cloud's load balancers serve one IP family; ask for one (spec.ipFamilyPolicy SingleStack)")
	}
	for _, pair := range shape.Exclusive {
		a, okA := sees[pair[0]]
		b, okB := sees[pair[1]]
		if !okA || !okB {
			continue // left to the sync
		}
		var names []string
		for _, f := range pair {
			if n, ok := annotation[f]; ok {
				names = append(names, n)
			}
		}
		r.contradiction(r.unread(fmt.Sprintf("!((%s) && (%s))", a.expr, b.expr), names...),
			"this cloud's load balancers cannot combine "+a.what+" with "+b.what+"; remove one of them", names...)
	}
	if n := shape.MaxCertificates; n > 0 {
		certs := AnnotationTLSCertificates
		r.contradiction(r.unread(fmt.Sprintf("!variables.portsChecked || variables.terminating.size() == 0 || !(%s) || size(%s) > %d || %s.split(',').size() <= %d",
			r.has(certs), r.value(certs), celMaxValue, r.value(certs), n), certs, AnnotationTLSPorts, AnnotationProtocol),
			"annotation %s names more than "+strconv.Itoa(n)+" certificates, the most a listener of this cloud takes", certs)
	}
}
