package cloudapi

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// LoadBalancerShape declares what a cloud's load balancers do not keep and do not support
// of a LoadBalancerSpec, for a real cloud API that is narrower than the spec: one that
// stores no listener names, has a single health check threshold, serves every address
// family on every load balancer, or has no UDP listeners and no source ranges. The zero
// value declares a cloud that keeps and supports everything.
//
// ccmkit reads it in two places. A part in NotKept is neither compared nor rewritten:
// the load balancer as the cloud reports it is compared with the desired spec after
// Comparable took that part from the desired spec, so a converged load balancer costs no
// write. A part in Unsupported is refused before anything is written: a Service that asks
// for one gets a Warning event naming it, and its load balancer is neither created nor
// changed. The backend itself still refuses a spec that uses an unsupported part with
// ErrInvalidRequest (Check says which), and the contract suite
// (cloudapitest.WithLoadBalancerShape) holds it to both lists.
type LoadBalancerShape struct {
	// NotKept are the parts the cloud accepts without storing them; the backend reports
	// them as their zero value (see each Feature). Only the features whose doc says "may
	// be not kept" are allowed here.
	NotKept []Feature
	// Unsupported are the parts the cloud cannot build. Only the features whose doc says
	// "may be unsupported" are allowed here.
	Unsupported []Feature
	// PerListener are the parts the cloud keeps on each listener instead of once per load
	// balancer (Hetzner's services each have their health check and PROXY protocol): a
	// change of one then rewrites every listener (Plan, Update). The backend reports the
	// part every listener has, and a health check that they do not all share as nil, so
	// that the next update rewrites them all (JoinListenerParts). Only the features whose
	// doc says "may be per listener" are allowed here.
	PerListener []Feature
	// HealthCheckUnit is the unit the cloud keeps a health check's interval and timeout in
	// (a second on most clouds); zero keeps any duration. Check refuses an interval or a
	// timeout that is not a whole multiple of it: the cloud would round it, and every sync
	// would find it changed and write it again.
	HealthCheckUnit time.Duration
	// HealthCheckRanges are the values the cloud's health checks take (an interval of 3s
	// to 5m, thresholds of 2 to 10): Check refuses a value out of its range, ccmkit's
	// defaults and the contract suite's health check are brought within them
	// (FitHealthCheck), and a Service that asks for a value out of range is refused.
	HealthCheckRanges HealthCheckRanges
	// Exclusive are the pairs of features (each one Unsupported may hold, or
	// FeatureListenerHealthCheck) the cloud's load balancers cannot combine, though each
	// alone is supported (an internal load balancer that is not dual-stack:
	// {FeatureInternal, FeatureDualStack}): Check refuses a spec that uses both
	// (Excluded).
	Exclusive [][2]Feature
	// MaxCertificates is the most certificates a listener that terminates TLS takes (1 on
	// a cloud with one certificate per HTTPS listener); zero takes any number.
	MaxCertificates int
}

// Feature names a part of a LoadBalancerSpec that a cloud may not keep (a
// LoadBalancerShape's NotKept) or not support (its Unsupported).
type Feature string

// The features.
const (
	// FeatureName is the load balancer's Name; may be not kept (reported empty).
	FeatureName Feature = "name"
	// FeatureListenerNames are the Listeners' Names; may be not kept (reported empty).
	FeatureListenerNames Feature = "listener-names"
	// FeatureHealthyThreshold is the HealthCheck's HealthyThreshold; may be not kept
	// (reported 0), for a cloud with one threshold, UnhealthyThreshold.
	FeatureHealthyThreshold Feature = "health-check-healthy-threshold"
	// FeatureIPFamilies are the IPFamilies; may be not kept (reported empty), for a cloud
	// whose every load balancer serves the families it serves: the backend then reports
	// every address the load balancer has.
	FeatureIPFamilies Feature = "ip-families"
	// FeatureIPv6 is IPv6 among the IPFamilies; may be unsupported.
	FeatureIPv6 Feature = "ipv6"
	// FeatureIPv6First is IPv6 first among the IPFamilies (an IPv6 or IPv6-first
	// load balancer); may be unsupported, for a cloud whose load balancers serve IPv6 only
	// beside IPv4, as the second family of a dual-stack one.
	FeatureIPv6First Feature = "ipv6-first"
	// FeatureDualStack are both families among the IPFamilies; may be unsupported.
	FeatureDualStack Feature = "dual-stack"
	// FeatureUDP are listeners of Protocol UDP; may be unsupported.
	FeatureUDP Feature = "udp"
	// FeatureSCTP are listeners of Protocol SCTP; may be unsupported.
	FeatureSCTP Feature = "sctp"
	// FeatureTLS are listeners of AppProtocol TLS (TLS terminated, TCP forwarded); may be
	// unsupported.
	FeatureTLS Feature = "tls"
	// FeatureHTTP are listeners of AppProtocol HTTP; may be unsupported.
	FeatureHTTP Feature = "http"
	// FeatureHTTPS are listeners of AppProtocol HTTPS; may be unsupported.
	FeatureHTTPS Feature = "https"
	// FeatureSourceRanges are SourceRanges; may be unsupported.
	FeatureSourceRanges Feature = "source-ranges"
	// FeatureHealthCheck is the HealthCheck; may be per listener.
	FeatureHealthCheck Feature = "health-check"
	// FeatureListenerHealthCheck is a Listener's own HealthCheck; may be per listener, and
	// only there supported: a cloud that keeps the health check per listener
	// (FeatureHealthCheck in PerListener) and builds each listener's own (its adapter
	// writes Listener.HealthCheck) declares it in PerListener too. Without it, a spec with
	// one is refused (Uses, Check) as an unsupported part.
	FeatureListenerHealthCheck Feature = "listener-health-check"
	// FeatureProxyProtocol is ProxyProtocol true; may be unsupported. As ProxyProtocol, it
	// may be per listener.
	FeatureProxyProtocol Feature = "proxy-protocol"
	// FeatureInternal is Internal true; may be unsupported.
	FeatureInternal Feature = "internal"
	// FeatureRequestedIPs are RequestedIPs; may be unsupported.
	FeatureRequestedIPs Feature = "requested-ips"
	// FeatureSessionAffinity is SessionAffinity ClientIP; may be unsupported.
	FeatureSessionAffinity Feature = "session-affinity"
	// FeatureCookieAffinity is SessionAffinity Cookie (a pin by a cookie of the load
	// balancer's, with its name and lifetime); may be unsupported.
	FeatureCookieAffinity Feature = "session-affinity-cookie"
)

// notKeepable, unsupportable and perListenable are the features each list of a
// LoadBalancerShape allows.
var (
	perListenable = []Feature{FeatureHealthCheck, FeatureListenerHealthCheck, FeatureProxyProtocol}
	notKeepable   = []Feature{FeatureName, FeatureListenerNames, FeatureHealthyThreshold, FeatureIPFamilies}
	unsupportable = []Feature{FeatureIPv6, FeatureIPv6First, FeatureDualStack, FeatureUDP, FeatureSCTP, FeatureTLS, FeatureHTTP, FeatureHTTPS,
		FeatureSourceRanges, FeatureProxyProtocol, FeatureInternal, FeatureRequestedIPs, FeatureSessionAffinity, FeatureCookieAffinity}
)

// Validate reports every problem of the declaration at once: a feature that its list does
// not allow, listed twice, or both unsupported and kept per listener; a listener's own
// health check without the health check per listener; a negative HealthCheckUnit; a
// health check range that is none, or whose bounds are not whole multiples of the unit;
// an exclusive pair of unknown, unsupported or the same features; a negative
// MaxCertificates.
func (s LoadBalancerShape) Validate() error {
	var errs []error
	check := func(list string, fs, allowed []Feature) {
		seen := map[Feature]bool{}
		for _, f := range fs {
			switch {
			case !slices.Contains(allowed, f):
				errs = append(errs, fmt.Errorf("load balancer shape: %s: %q is not one of %v", list, f, allowed))
			case seen[f]:
				errs = append(errs, fmt.Errorf("load balancer shape: %s: %q is listed twice", list, f))
			}
			seen[f] = true
		}
	}
	check("NotKept", s.NotKept, notKeepable)
	check("Unsupported", s.Unsupported, unsupportable)
	check("PerListener", s.PerListener, perListenable)
	for _, f := range s.PerListener {
		if !s.Supports(f) {
			errs = append(errs, fmt.Errorf("load balancer shape: %q is both unsupported and kept per listener", f))
		}
	}
	if s.keepsPerListener(FeatureListenerHealthCheck) && !s.keepsPerListener(FeatureHealthCheck) {
		errs = append(errs, fmt.Errorf("load balancer shape: PerListener: %q without %q: a cloud that builds a listener's own health check keeps the health check per listener", FeatureListenerHealthCheck, FeatureHealthCheck))
	}
	if s.HealthCheckUnit < 0 {
		errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckUnit %s is negative", s.HealthCheckUnit))
	}
	errs = append(errs, s.validateLimits()...)
	return errors.Join(errs...)
}

// Keeps reports whether the cloud keeps f.
func (s LoadBalancerShape) Keeps(f Feature) bool { return !slices.Contains(s.NotKept, f) }

// Supports reports whether the cloud supports f.
func (s LoadBalancerShape) Supports(f Feature) bool { return !slices.Contains(s.Unsupported, f) }

// Comparable returns current, a spec as the cloud reports it, with the parts the cloud
// does not keep taken from desired, so that DiffLoadBalancer(s.Comparable(current,
// desired), desired) finds no difference in them. A listener's name is taken from the
// desired listener with the same (Protocol, Port). On a cloud that keeps the health check
// per listener, the health checks are compared listener by listener (comparableHealthChecks).
// current is not changed.
func (s LoadBalancerShape) Comparable(current, desired LoadBalancerSpec) LoadBalancerSpec {
	perListener := s.keepsPerListener(FeatureHealthCheck)
	if len(s.NotKept) == 0 && !perListener {
		return current
	}
	current = current.Clone()
	if !s.Keeps(FeatureName) {
		current.Name = desired.Name
	}
	if !s.Keeps(FeatureListenerNames) {
		names := make(map[ListenerKey]string, len(desired.Listeners))
		for _, l := range desired.Listeners {
			names[l.Key()] = l.Name
		}
		for i, l := range current.Listeners {
			current.Listeners[i].Name = names[l.Key()]
		}
	}
	if !s.Keeps(FeatureHealthyThreshold) {
		if current.HealthCheck != nil && desired.HealthCheck != nil {
			current.HealthCheck.HealthyThreshold = desired.HealthCheck.HealthyThreshold
		}
		want := make(map[ListenerKey]Listener, len(desired.Listeners))
		for _, l := range desired.Listeners {
			want[l.Key()] = l
		}
		for _, l := range current.Listeners {
			if d, ok := want[l.Key()]; ok && l.HealthCheck != nil && desired.ListenerHealthCheck(d) != nil {
				l.HealthCheck.HealthyThreshold = desired.ListenerHealthCheck(d).HealthyThreshold
			}
		}
	}
	if !s.Keeps(FeatureIPFamilies) {
		current.IPFamilies = slices.Clone(desired.IPFamilies)
	}
	if perListener { // after the parts not kept, which it compares
		comparableHealthChecks(&current, desired)
	}
	return current
}

// comparableHealthChecks makes the health checks of current, a spec as a cloud that keeps
// the health check per listener reports it (JoinListenerParts), comparable with desired's,
// listener by listener: a listener whose health check (LoadBalancerSpec.ListenerHealthCheck)
// is desired's gets desired's own (none, or its own), one whose health check differs keeps
// its own, as reported, so that it differs from the desired listener. The load balancer's
// health check is desired's when every listener that differs shows it so; otherwise (a
// listener reported without a health check) it stays as reported, so that the difference
// rewrites every listener (Plan).
func comparableHealthChecks(current *LoadBalancerSpec, desired LoadBalancerSpec) {
	want := make(map[ListenerKey]Listener, len(desired.Listeners))
	for _, l := range desired.Listeners {
		want[l.Key()] = l
	}
	shown := true // every listener whose health check differs differs as a listener
	for i, l := range current.Listeners {
		d, ok := want[l.Key()]
		if !ok {
			continue
		}
		have := current.ListenerHealthCheck(l)
		if equalHealthChecks(have, desired.ListenerHealthCheck(d)) {
			current.Listeners[i].HealthCheck = d.HealthCheck.clone()
			continue
		}
		current.Listeners[i].HealthCheck = have.clone()
		shown = shown && have != nil
	}
	if shown {
		current.HealthCheck = desired.HealthCheck.clone()
	}
}

// Uses returns the features of the s.Unsupported list that spec uses, in the order of
// that list, then FeatureListenerHealthCheck when a listener of spec has a health check of
// its own and the cloud does not declare it (PerListener): nil when the cloud can build
// spec as far as its shape goes.
func (s LoadBalancerShape) Uses(spec LoadBalancerSpec) []Feature {
	var out []Feature
	for _, f := range s.Unsupported {
		if uses(spec, f) {
			out = append(out, f)
		}
	}
	if !s.keepsPerListener(FeatureListenerHealthCheck) && uses(spec, FeatureListenerHealthCheck) {
		out = append(out, FeatureListenerHealthCheck)
	}
	return out
}

// Check returns an error matching ErrInvalidRequest, for op on the load balancer id
// (empty for a create), naming every problem: what spec.Validate refuses, the parts of
// spec the cloud does not support (Uses), the features it combines that the cloud cannot
// (Excluded), a health check interval or timeout (the load balancer's or a listener's)
// that is not a multiple of HealthCheckUnit or a value out of HealthCheckRanges, and a
// listener with more than MaxCertificates certificates. Nil when none. An adapter calls
// it first in CreateLoadBalancer and UpdateLoadBalancer, and adds its cloud's own checks.
func (s LoadBalancerShape) Check(op Operation, id string, spec LoadBalancerSpec) error {
	err := spec.Validate()
	if used := s.Uses(spec); len(used) > 0 {
		err = errors.Join(err, fmt.Errorf("the cloud's load balancers do not support %v", used))
	}
	hcs := []*HealthCheck{spec.HealthCheck}
	for _, l := range spec.Listeners {
		hcs = append(hcs, l.HealthCheck)
	}
	for _, hc := range hcs {
		if unit := s.HealthCheckUnit; hc != nil && unit > 0 && (hc.Interval%unit != 0 || hc.Timeout%unit != 0) {
			err = errors.Join(err, fmt.Errorf("health check interval %s and timeout %s: the cloud keeps whole multiples of %s", hc.Interval, hc.Timeout, unit))
		}
	}
	err = errors.Join(err, s.checkLimits(spec))
	if err != nil {
		return NewError(ErrInvalidRequest, op, id, err)
	}
	return nil
}

// uses reports whether spec uses f.
func uses(spec LoadBalancerSpec, f Feature) bool {
	listener := func(match func(Listener) bool) bool { return slices.ContainsFunc(spec.Listeners, match) }
	switch f {
	case FeatureIPv6:
		return slices.Contains(spec.IPFamilies, IPv6)
	case FeatureIPv6First:
		return len(spec.IPFamilies) > 0 && spec.IPFamilies[0] == IPv6
	case FeatureDualStack:
		return slices.Contains(spec.IPFamilies, IPv4) && slices.Contains(spec.IPFamilies, IPv6)
	case FeatureUDP:
		return listener(func(l Listener) bool { return l.Protocol == ProtocolUDP })
	case FeatureSCTP:
		return listener(func(l Listener) bool { return l.Protocol == ProtocolSCTP })
	case FeatureTLS:
		return listener(func(l Listener) bool { return l.AppProtocol == AppProtocolTLS })
	case FeatureHTTP:
		return listener(func(l Listener) bool { return l.AppProtocol == AppProtocolHTTP })
	case FeatureHTTPS:
		return listener(func(l Listener) bool { return l.AppProtocol == AppProtocolHTTPS })
	case FeatureSourceRanges:
		return len(spec.SourceRanges) > 0
	case FeatureProxyProtocol:
		return spec.ProxyProtocol
	case FeatureInternal:
		return spec.Internal
	case FeatureRequestedIPs:
		return len(spec.RequestedIPs) > 0
	case FeatureSessionAffinity:
		return spec.SessionAffinity == SessionAffinityClientIP
	case FeatureCookieAffinity:
		return spec.SessionAffinity == SessionAffinityCookie
	case FeatureListenerHealthCheck:
		return listener(func(l Listener) bool { return l.HealthCheck != nil })
	}
	return false
}
