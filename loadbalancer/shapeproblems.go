package loadbalancer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The problems of a Service whose load balancer the cloud's shape (Options.Shape) refuses:
// the rules of cloudapi.LoadBalancerShape.Check, each named by what in the Service asks for
// it.

// shapeProblems returns the problems of spec, the Service's (a, parsed under prefix), that
// shape refuses: the features it does not support (Uses), the pairs it cannot combine
// (Excluded) and the certificates a listener takes beyond MaxCertificates.
func shapeProblems(prefix string, a parsedAnnotations, spec cloudapi.LoadBalancerSpec, shape cloudapi.LoadBalancerShape) problems {
	var ps problems
	const unchanged = "the Service's load balancer is neither created nor changed while the Service asks for it"
	for _, f := range shape.Uses(spec) {
		field, what := asks(prefix, a, f, spec)
		ps = append(ps, problem{key: field, err: fmt.Errorf("%w %s; %s: remove it from the Service, or give the Service a load balancer class of a cloud that supports it", errUnsupported, what, unchanged)})
	}
	for _, pair := range shape.Excluded(spec) {
		field, first := asks(prefix, a, pair[0], spec)
		_, second := asks(prefix, a, pair[1], spec)
		ps = append(ps, problem{key: field, err: fmt.Errorf("%w %s together with %s; %s: remove one of them from the Service", errUnsupported, first, second, unchanged)})
	}
	if n := shape.MaxCertificates; n > 0 && slices.ContainsFunc(spec.Listeners, func(l cloudapi.Listener) bool { return len(l.Certificates) > n }) {
		key := a.key(prefix, AnnotationTLSCertificates)
		ps = append(ps, problem{key: key, err: fmt.Errorf("%w more than %d certificates on a listener (annotation %s names %d); %s: name at most %d",
			errUnsupported, n, key, len(a.certs), unchanged, n)})
	}
	return ps
}

// asks returns what in the Service asks for f, a feature its spec uses: the field or
// annotation (by the key the Service spells it with: a, parsed under prefix), and what it
// asks for, for a message.
func asks(prefix string, a parsedAnnotations, f cloudapi.Feature, spec cloudapi.LoadBalancerSpec) (field, what string) {
	key := func(name string) string { return a.key(prefix, name) }
	ports := func(match func(cloudapi.Listener) bool) string {
		var out []string
		for _, l := range spec.Listeners {
			if match(l) {
				out = append(out, fmt.Sprintf("%d/%s", l.Port, l.Protocol))
			}
		}
		return strings.Join(out, ", ")
	}
	app := func(p cloudapi.AppProtocol) string {
		return ports(func(l cloudapi.Listener) bool { return l.AppProtocol == p })
	}
	field = "spec.ports"
	switch f {
	case cloudapi.FeatureUDP, cloudapi.FeatureSCTP:
		proto := cloudapi.Protocol(strings.ToUpper(string(f)))
		what = fmt.Sprintf("%s listeners (ports %s)", proto, ports(func(l cloudapi.Listener) bool { return l.Protocol == proto }))
	case cloudapi.FeatureTLS:
		what = fmt.Sprintf("TLS termination with TCP to the targets (ports %s; see appProtocol and annotations %s, %s, %s)", app(cloudapi.AppProtocolTLS), key(AnnotationTLSPorts), key(AnnotationProtocol), key(AnnotationPortProtocols))
	case cloudapi.FeatureHTTP:
		what = fmt.Sprintf("HTTP listeners (ports %s; see appProtocol and annotations %s, %s)", app(cloudapi.AppProtocolHTTP), key(AnnotationProtocol), key(AnnotationPortProtocols))
	case cloudapi.FeatureHTTPS:
		what = fmt.Sprintf("HTTPS listeners (ports %s; see appProtocol and annotations %s, %s, %s)", app(cloudapi.AppProtocolHTTPS), key(AnnotationTLSPorts), key(AnnotationProtocol), key(AnnotationPortProtocols))
	case cloudapi.FeatureIPv6:
		field, what = "spec.ipFamilies", "IPv6"
	case cloudapi.FeatureIPv6First:
		field, what = "spec.ipFamilies", "IPv6 as the first (or only) family; IPv6 only second, beside IPv4 (spec.ipFamilies)"
	case cloudapi.FeatureDualStack:
		field, what = "spec.ipFamilies", "both IP families (spec.ipFamilies, spec.ipFamilyPolicy)"
	case cloudapi.FeatureSourceRanges:
		field, what = "spec.loadBalancerSourceRanges", "source ranges (spec.loadBalancerSourceRanges or annotation service.beta.kubernetes.io/load-balancer-source-ranges)"
	case cloudapi.FeatureProxyProtocol:
		field, what = key(AnnotationProxyProtocol), "the PROXY protocol (annotation "+key(AnnotationProxyProtocol)+")"
	case cloudapi.FeatureInternal:
		field, what = key(AnnotationInternal), "internal load balancers (annotation "+key(AnnotationInternal)+")"
	case cloudapi.FeatureRequestedIPs:
		field, what = key(AnnotationIPAddresses), "requested addresses (annotation "+key(AnnotationIPAddresses)+" or spec.loadBalancerIP)"
	case cloudapi.FeatureSessionAffinity:
		field, what = "spec.sessionAffinity", "session affinity ClientIP (spec.sessionAffinity)"
	case cloudapi.FeatureCookieAffinity:
		field, what = key(AnnotationStickySessions), "cookie stickiness (annotation "+key(AnnotationStickySessions)+")"
	case cloudapi.FeatureListenerHealthCheck:
		field = key(AnnotationPortHealthChecks)
		what = fmt.Sprintf("a health check of a port's own, they keep one per load balancer (ports %s; annotation %s)", ports(func(l cloudapi.Listener) bool { return l.HealthCheck != nil }), field)
	default:
		what = string(f)
	}
	return field, what
}

// errUnsupported is the problem of a Service that asks for what the cloud's load
// balancers do not support (Options.Shape).
var errUnsupported = errors.New("the cloud's load balancers do not support")
