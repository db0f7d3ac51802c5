package loadbalancer

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Session affinity: the Service's spec.sessionAffinity ClientIP, or the cookie stickiness
// its annotations ask for, in the spec (cloudapi.LoadBalancerSpec.SessionAffinity) and in
// the admission policy.

// The annotations of cookie stickiness, after the prefix.
const (
	AnnotationStickySessions               = "sticky-sessions"
	AnnotationStickySessionsCookieName     = "sticky-sessions-cookie-name"
	AnnotationStickySessionsCookieLifetime = "sticky-sessions-cookie-lifetime"
)

// The defaults of cookie stickiness, and the longest lifetime of its cookie (a day, as
// Kubernetes' longest ClientIP timeout).
const (
	defaultStickyCookieName = "ccmkit-sticky"
	defaultStickyLifetime   = 300 // seconds
	maxStickyLifetime       = 86400
)

// stickyCookieRE is the syntax of a cookie name the annotation takes: a short RFC 6265
// token of letters, digits, '-', '_' and '.'.
const stickyCookieRE = `^[A-Za-z0-9_.-]{1,64}$`

var stickyCookieName = regexp.MustCompile(stickyCookieRE)

// stickiness is what the cookie stickiness annotations ask for: a zero name or lifetime
// is the annotation's absence.
type stickiness struct {
	cookie   bool
	name     string
	lifetime int32 // seconds
}

// stickinessAnnotations returns the annotations of cookie stickiness, in the order of the
// reference.
func stickinessAnnotations() []Annotation {
	return []Annotation{
		{
			Name: AnnotationStickySessions, check: celEnum("NONE", "COOKIE"), same: celSameEnum, Values: "none, cookie", Default: "none: spec.sessionAffinity decides (ClientIP pins by the client's address)",
			Doc: "cookie pins each client's HTTP requests to one target by a cookie the load balancer sets, on the ports that speak HTTP or HTTPS at the load balancer (a Service needs one). Cannot be combined with spec.sessionAffinity ClientIP. Only a cloud whose load balancers offer it builds it (the adapter's shape does not declare session-affinity-cookie unsupported); elsewhere the admission policy refuses the Service, and the sync neither creates nor changes its load balancer (a Warning event).",
			apply: func(v string, a *parsedAnnotations) error {
				switch strings.ToUpper(v) {
				case "NONE":
					a.sticky.cookie = false
				case "COOKIE":
					a.sticky.cookie = true
				default:
					return errors.New("not one of none, cookie")
				}
				return nil
			},
		},
		{
			Name: AnnotationStickySessionsCookieName, check: celStickyCookieName, Values: "1 to 64 letters, digits, '-', '_' and '.'", Default: defaultStickyCookieName,
			Doc: "The name of the cookie of sticky-sessions cookie; refused without it.",
			apply: func(v string, a *parsedAnnotations) error {
				if !stickyCookieName.MatchString(v) {
					return errors.New("not a cookie name of 1 to 64 letters, digits, '-', '_' and '.'")
				}
				a.sticky.name = v
				return nil
			},
		},
		{
			Name: AnnotationStickySessionsCookieLifetime, check: celInt(1, maxStickyLifetime), same: celSameInt, Values: fmt.Sprintf("whole seconds from 1 to %d", maxStickyLifetime), Default: fmt.Sprint(defaultStickyLifetime),
			Doc: "How long the cookie of sticky-sessions cookie pins a client; refused without it.",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.sticky.lifetime, err = parseInt(v, 1, maxStickyLifetime)
				return err
			},
		},
	}
}

// celStickyCookieName: the sticky-sessions-cookie-name annotation.
func celStickyCookieName(v string) string {
	return fmt.Sprintf("%s.matches(%s)", v, celString(stickyCookieRE))
}

// sessionAffinity sets spec's session affinity to what the Service (its annotations a,
// parsed under prefix) asks for, and returns its problems: cookie stickiness together
// with spec.sessionAffinity ClientIP, or without a listener that speaks HTTP or HTTPS,
// and a cookie's name or lifetime without cookie stickiness.
func sessionAffinity(prefix string, svc *corev1.Service, a parsedAnnotations, spec *cloudapi.LoadBalancerSpec) problems {
	key := a.key(prefix, AnnotationStickySessions)
	fail := func(err error) problems { return problems{{key: key, err: err}} }
	clientIP := svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
	switch {
	case !a.sticky.cookie && (a.sticky.name != "" || a.sticky.lifetime != 0):
		name := AnnotationStickySessionsCookieName
		if a.sticky.name == "" {
			name = AnnotationStickySessionsCookieLifetime
		}
		return problems{{key: a.key(prefix, name), err: fmt.Errorf("annotation %s is set, but annotation %s does not ask for cookie stickiness: set %s, or remove %s",
			a.key(prefix, name), key, a.setTo(prefix, AnnotationStickySessions, "cookie"), a.key(prefix, name))}}
	case a.sticky.cookie && clientIP:
		return fail(fmt.Errorf("annotation %s asks for cookie stickiness and spec.sessionAffinity for ClientIP: a load balancer pins clients one way; remove one of them", key))
	case a.sticky.cookie && !slices.ContainsFunc(spec.Listeners, func(l cloudapi.Listener) bool {
		return l.AppProtocol == cloudapi.AppProtocolHTTP || l.AppProtocol == cloudapi.AppProtocolHTTPS
	}):
		return fail(fmt.Errorf("annotation %s asks for cookie stickiness, but no port speaks HTTP or HTTPS at the load balancer, where it sets the cookie: set a port's appProtocol (http, https) or annotation %s or %s",
			key, a.key(prefix, AnnotationProtocol), a.key(prefix, AnnotationPortProtocols)))
	case a.sticky.cookie:
		spec.SessionAffinity = cloudapi.SessionAffinityCookie
		spec.SessionAffinityCookieName = cmp.Or(a.sticky.name, defaultStickyCookieName)
		spec.SessionAffinityTimeout = time.Duration(cmp.Or(a.sticky.lifetime, defaultStickyLifetime)) * time.Second
	case clientIP:
		secs := corev1.DefaultClientIPServiceAffinitySeconds // the API server's default, for Services it did not default
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			secs = *c.ClientIP.TimeoutSeconds
		}
		spec.SessionAffinity = cloudapi.SessionAffinityClientIP
		spec.SessionAffinityTimeout = time.Duration(secs) * time.Second
	}
	return nil
}

// stickinessContradictions adds to the deny policy, with r, the checks of the sync
// (sessionAffinity, shapeProblems) that CEL sees: cookie stickiness with spec.sessionAffinity
// ClientIP, or where the cloud's shape (opts.Shape) does not offer it, and a cookie's name
// or lifetime without cookie stickiness. Whether a port speaks HTTP is left to the sync.
func stickinessContradictions(opts AdmissionPolicyOptions, r celRules) {
	sticky, name, lifetime := AnnotationStickySessions, AnnotationStickySessionsCookieName, AnnotationStickySessionsCookieLifetime
	cookie := stickyCookieCEL(r)
	r.contradiction(r.unread(fmt.Sprintf("!(%s) || !has(object.spec.sessionAffinity) || object.spec.sessionAffinity != 'ClientIP'", cookie), sticky),
		"annotation %s asks for cookie stickiness and spec.sessionAffinity for ClientIP: a load balancer pins clients one way; remove one of them", sticky)
	for _, n := range []string{name, lifetime} {
		r.contradiction(r.unread(fmt.Sprintf("!(%s) || (%s)", r.has(n), cookie), n, sticky),
			"annotation %s is set, but annotation %s does not ask for cookie stickiness: set it to cookie, or remove %s", n, sticky, n)
	}
	if !opts.Shape.Supports(cloudapi.FeatureCookieAffinity) {
		r.contradiction(r.unread("!("+cookie+")", sticky),
			"annotation %s: this cloud's load balancers do not offer cookie stickiness; remove the annotation, or give the Service a load balancer class of a cloud that offers it", sticky)
	}
}

// stickyCookieCEL is the CEL of whether the Service asks for cookie stickiness, as the
// sync reads it.
func stickyCookieCEL(r celRules) string {
	s := AnnotationStickySessions
	return fmt.Sprintf("(%s) && %s && %s == 'COOKIE'", r.has(s), r.valid(celEnum("NONE", "COOKIE"), r.value(s)), celUpper(r.value(s)))
}
