package cloudapi

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"
)

// Validate reports every way in which s is malformed for any cloud, at once: a name that is
// empty; a listener whose protocol or application protocol is not one of the defined ones,
// whose ports are outside 1-65535, that repeats a (Protocol, Port), that speaks an
// application protocol over another transport than TCP, or whose certificates do not match
// whether it terminates TLS (empty, blank or repeated ones too); a target listed twice;
// a health check (the load balancer's or a listener's own) with an undefined protocol, a
// port outside 0-65535, an HTTP(S) path not starting with '/', or negative durations or
// thresholds; a source range that is not a
// CIDR; an IP family undefined or listed twice; a requested address that is not an IP;
// a session affinity undefined, a timeout without one or none with one, a cookie name
// without Cookie, or Cookie without a cookie name that is an RFC 6265 token or without a
// listener of AppProtocol HTTP or HTTPS; an empty
// tag key or setting name. What a cloud lacks on top of that (LoadBalancerShape, name
// lengths, known targets) its backend checks itself. A backend answers a spec Validate
// refuses with ErrInvalidRequest.
func (s LoadBalancerSpec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Name == "" {
		bad("name: required")
	}
	keys := map[ListenerKey]bool{}
	for i, l := range s.Listeners {
		if !l.Protocol.Valid() {
			bad("listeners[%d]: protocol %q is not TCP, UDP or SCTP", i, l.Protocol)
		}
		if l.Port < 1 || l.Port > 65535 {
			bad("listeners[%d]: port %d is outside 1-65535", i, l.Port)
		}
		if l.TargetPort < 1 || l.TargetPort > 65535 {
			bad("listeners[%d]: target port %d is outside 1-65535", i, l.TargetPort)
		}
		if keys[l.Key()] {
			bad("listeners[%d]: a second listener for %s/%d", i, l.Protocol, l.Port)
		}
		keys[l.Key()] = true
		errs = append(errs, l.validateApp(i)...)
		errs = append(errs, l.HealthCheck.validate(fmt.Sprintf("listeners[%d].healthCheck", i))...)
	}
	seen := make(map[string]bool, len(s.Targets))
	for _, t := range s.Targets {
		if seen[t] {
			bad("targets: %q is listed twice", t)
		}
		seen[t] = true
	}
	errs = append(errs, s.HealthCheck.validate("healthCheck")...)
	for _, r := range s.SourceRanges {
		if _, err := netip.ParsePrefix(r); err != nil {
			bad("sourceRanges: %q is not a CIDR", r)
		}
	}
	fams := map[IPFamily]bool{}
	for _, f := range s.IPFamilies {
		if !f.Valid() {
			bad("ipFamilies: %q is not IPv4 or IPv6", f)
		} else if fams[f] {
			bad("ipFamilies: %s is listed twice", f)
		}
		fams[f] = true
	}
	for _, ip := range s.RequestedIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			bad("requestedIPs: %q is not an IP address", ip)
		}
	}
	errs = append(errs, s.validateAffinity()...)
	for k := range s.Tags {
		if k == "" {
			bad("tags: empty key")
		}
	}
	for k := range s.SettingValues {
		if k == "" {
			bad("settings: empty name")
		}
	}
	return errors.Join(errs...)
}

// validateApp checks the listener's application protocol and certificates; i is its
// index, for the messages.
func (l Listener) validateApp(i int) []error {
	var errs []error
	p := l.AppProtocol
	switch {
	case !p.Valid():
		errs = append(errs, fmt.Errorf("listeners[%d]: application protocol %q is not TLS, HTTP, HTTPS or empty", i, p))
	case p != AppProtocolNone && l.Protocol != ProtocolTCP:
		errs = append(errs, fmt.Errorf("listeners[%d]: application protocol %s on a %s listener: it needs TCP", i, p, l.Protocol))
	}
	switch {
	case p.TerminatesTLS() && len(l.Certificates) == 0:
		errs = append(errs, fmt.Errorf("listeners[%d]: %s terminates TLS and needs a certificate", i, p))
	case !p.TerminatesTLS() && len(l.Certificates) > 0:
		errs = append(errs, fmt.Errorf("listeners[%d]: certificates on a listener that terminates no TLS (application protocol %q)", i, p))
	}
	seen := map[string]bool{}
	for _, cert := range l.Certificates {
		switch {
		case cert == "" || strings.ContainsFunc(cert, unicode.IsSpace):
			errs = append(errs, fmt.Errorf("listeners[%d]: certificate %q is not a certificate ID", i, cert))
		case seen[cert]:
			errs = append(errs, fmt.Errorf("listeners[%d]: certificate %q is listed twice", i, cert))
		}
		seen[cert] = true
	}
	return errs
}

// validate checks the health check hc, nil for none; field names it in the messages.
func (hc *HealthCheck) validate(field string) []error {
	if hc == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(field+": "+format, args...)) }
	if !hc.Protocol.Valid() {
		bad("protocol %q is not TCP, HTTP or HTTPS", hc.Protocol)
	}
	if hc.Port < 0 || hc.Port > 65535 {
		bad("port %d is outside 0-65535", hc.Port)
	}
	if (hc.Protocol == HealthCheckHTTP || hc.Protocol == HealthCheckHTTPS) && (hc.Path == "" || hc.Path[0] != '/') {
		bad("an %s check needs a path starting with /, got %q", hc.Protocol, hc.Path)
	}
	if hc.Interval < 0 || hc.Timeout < 0 || hc.HealthyThreshold < 0 || hc.UnhealthyThreshold < 0 {
		bad("intervals and thresholds must not be negative")
	}
	return errs
}

// validateAffinity checks the session affinity, its timeout and its cookie's name.
func (s LoadBalancerSpec) validateAffinity() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	t, cookie := s.SessionAffinityTimeout, s.SessionAffinityCookieName
	switch a := s.SessionAffinity; a {
	case SessionAffinityNone:
		if t != 0 {
			bad("sessionAffinityTimeout: %s without a session affinity", t)
		}
	case SessionAffinityClientIP, SessionAffinityCookie:
		if t <= 0 {
			bad("sessionAffinityTimeout: %s: session affinity %s needs a timeout", t, a)
		}
	default:
		bad("sessionAffinity: %q is not %s, %s or empty", a, SessionAffinityClientIP, SessionAffinityCookie)
	}
	switch {
	case s.SessionAffinity != SessionAffinityCookie && cookie != "":
		bad("sessionAffinityCookieName: %q without session affinity %s", cookie, SessionAffinityCookie)
	case s.SessionAffinity != SessionAffinityCookie:
	case !isToken(cookie):
		bad("sessionAffinityCookieName: %q is not a cookie name (an RFC 6265 token: visible ASCII characters but separators)", cookie)
	case !slices.ContainsFunc(s.Listeners, func(l Listener) bool {
		return l.AppProtocol == AppProtocolHTTP || l.AppProtocol == AppProtocolHTTPS
	}):
		bad("sessionAffinity: %s needs a listener of AppProtocol HTTP or HTTPS, where the load balancer sets the cookie", SessionAffinityCookie)
	}
	return errs
}

// isToken reports whether v is an RFC 7230 token (RFC 6265's cookie-name): one or more
// visible ASCII characters, none a separator.
func isToken(v string) bool {
	return v != "" && !strings.ContainsFunc(v, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r)
	})
}
