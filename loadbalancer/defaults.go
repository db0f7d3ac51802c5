package loadbalancer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// The parts of a Service's load balancer that come with defaults: its health checks (the
// Service's and its ports' own) and the adapter's settings.

// healthCheckAnnotations are the annotations of the health check's parts.
var healthCheckAnnotations = []string{AnnotationHealthCheckProtocol, AnnotationHealthCheckPort, AnnotationHealthCheckPath,
	AnnotationHealthCheckInterval, AnnotationHealthCheckTimeout, AnnotationHealthCheckHealthyThreshold, AnnotationHealthCheckUnhealthyThreshold}

// defaultHealthCheck is the health check a Service starts from: ccmkit's defaults brought
// within the cloud's ranges and unit (shape.FitHealthCheck).
func defaultHealthCheck(shape cloudapi.LoadBalancerShape) cloudapi.HealthCheck {
	return shape.FitHealthCheck(cloudapi.HealthCheck{
		Protocol:           cloudapi.HealthCheckHTTP,
		Port:               KubeProxyHealthzPort,
		Path:               defaultHealthCheckPath,
		Interval:           defaultInterval,
		Timeout:            defaultTimeout,
		HealthyThreshold:   defaultHealthyThreshold,
		UnhealthyThreshold: defaultUnhealthyThreshold,
	})
}

// healthCheck returns the health check the Service asks for, of the port of port when it
// is not nil (an entry of the port-health-checks annotation, over the Service's), from
// the defaults of the cloud's shape, and an error when its timeout is longer than its
// interval. With keep (an adopted load balancer, see cloudapi.TagAdopted), kept is the
// load balancer's health check as read (nil: one per listener, on a cloud that keeps them
// so; translate passes no keep for none at all): a Service that sets none of the health
// check's annotations keeps it as it is, and one that sets some changes those parts of it
// (of the defaults when kept is nil).
func healthCheck(prefix string, svc *corev1.Service, a parsedAnnotations, keep bool, kept *cloudapi.HealthCheck, port *portHealthCheck, shape cloudapi.LoadBalancerShape) (*cloudapi.HealthCheck, error) {
	asked := func(name string) bool { _, ok := a.keys[name]; return ok }
	if keep && port == nil && !slices.ContainsFunc(healthCheckAnnotations, asked) {
		if kept == nil {
			return nil, nil
		}
		c := *kept
		return &c, nil
	}
	def := defaultHealthCheck(shape)
	hc := &def
	if path, port := servicehelpers.GetServiceHealthCheckPathPort(svc); port != 0 {
		hc.Path, hc.Port = path, port
	}
	// set reports whether the part name is read from the Service: always on ccmkit's
	// defaults (a part an alias default sets included), only where the Service sets it
	// on a kept health check.
	set := func(string) bool { return true }
	if keep && kept != nil {
		c := *kept
		hc, set = &c, asked
	}
	overlayHealthCheck(hc, a, set)
	timeoutSet, key, of := asked(AnnotationHealthCheckTimeout), a.key(prefix, AnnotationHealthCheckTimeout), ""
	if port != nil {
		overlayHealthCheck(hc, port.set, func(string) bool { return true })
		timeoutSet, key, of = timeoutSet || port.set.hcTimeout != 0, a.key(prefix, AnnotationPortHealthChecks), " of port "+port.port
	}
	switch {
	case hc.Protocol == cloudapi.HealthCheckTCP:
		hc.Path = ""
	case hc.Path == "":
		hc.Path = defaultHealthCheckPath // a kept TCP check the Service makes HTTP
	}
	if !timeoutSet && hc.Timeout > hc.Interval {
		hc.Timeout = hc.Interval // a short interval alone shortens the default (or kept) timeout
	}
	if hc.Timeout > hc.Interval {
		return hc, fmt.Errorf("annotation %s: the health check timeout%s %s is longer than its interval %s", key, of, hc.Timeout, hc.Interval)
	}
	return hc, nil
}

// healthCheckRanges returns the problems of hc, the Service's health check, whose values
// the cloud's shape does not take (HealthCheckRanges), each keyed by the annotation of
// its part; with askedOnly, only the parts the Service sets (the rest of a kept health
// check is the cloud's).
func healthCheckRanges(prefix string, svc *corev1.Service, a parsedAnnotations, hc *cloudapi.HealthCheck, shape cloudapi.LoadBalancerShape, askedOnly bool) problems {
	var ps problems
	for _, part := range outOfRange(hc, shape.HealthCheckRanges) {
		if _, asked := a.keys[part.name]; askedOnly && !asked {
			continue
		}
		key := a.key(prefix, part.name)
		ps = append(ps, problem{key: key, err: &AnnotationError{Key: key, Value: svc.Annotations[key],
			Allowed: part.rng + ", the range of this cloud's health checks", Err: part.err}})
	}
	return ps
}

// rangeProblem is a part of a health check out of the cloud's range: the annotation of the
// part, the range and what is wrong.
type rangeProblem struct {
	name, rng string
	err       error
}

// outOfRange returns the parts of hc that r does not take, in the order of the annotations.
func outOfRange(hc *cloudapi.HealthCheck, r cloudapi.HealthCheckRanges) []rangeProblem {
	var out []rangeProblem
	for _, p := range []struct {
		name, value, rng string
		ok               bool
	}{
		{AnnotationHealthCheckInterval, "interval " + hc.Interval.String(), r.Interval.String(), r.Interval.Contains(hc.Interval)},
		{AnnotationHealthCheckTimeout, "timeout " + hc.Timeout.String(), r.Timeout.String(), r.Timeout.Contains(hc.Timeout)},
		{AnnotationHealthCheckHealthyThreshold, fmt.Sprint("healthy threshold ", hc.HealthyThreshold), r.HealthyThreshold.String(), r.HealthyThreshold.Contains(hc.HealthyThreshold)},
		{AnnotationHealthCheckUnhealthyThreshold, fmt.Sprint("unhealthy threshold ", hc.UnhealthyThreshold), r.UnhealthyThreshold.String(), r.UnhealthyThreshold.Contains(hc.UnhealthyThreshold)},
	} {
		if !p.ok {
			out = append(out, rangeProblem{name: p.name, rng: p.rng, err: fmt.Errorf("the health check's %s is out of this cloud's range (%s)", p.value, p.rng)})
		}
	}
	return out
}

// overlayHealthCheck sets the parts of hc that a's health check annotations set, of those
// that set reports.
func overlayHealthCheck(hc *cloudapi.HealthCheck, a parsedAnnotations, set func(name string) bool) {
	if a.hcProtocol != "" && set(AnnotationHealthCheckProtocol) {
		hc.Protocol = a.hcProtocol
	}
	if a.hcPort != 0 && set(AnnotationHealthCheckPort) {
		hc.Port = a.hcPort
	}
	if a.hcPath != "" && set(AnnotationHealthCheckPath) {
		hc.Path = a.hcPath
	}
	if a.hcInterval != 0 && set(AnnotationHealthCheckInterval) {
		hc.Interval = a.hcInterval
	}
	if a.hcTimeout != 0 && set(AnnotationHealthCheckTimeout) {
		hc.Timeout = a.hcTimeout
	}
	if a.hcHealthy != 0 && set(AnnotationHealthCheckHealthyThreshold) {
		hc.HealthyThreshold = a.hcHealthy
	}
	if a.hcUnhealthy != 0 && set(AnnotationHealthCheckUnhealthyThreshold) {
		hc.UnhealthyThreshold = a.hcUnhealthy
	}
}

// portHealthChecksValues are the values the port-health-checks annotation allows.
const portHealthChecksValues = "entries separated by ';', each the number or name of a Service port, ':', and parts separated by spaces: " +
	"protocol=, port=, path=, interval=, timeout=, healthy-threshold=, unhealthy-threshold=, each with a value its health-check-* annotation allows; " +
	"for example `443: protocol=HTTPS path=/ready; metrics: protocol=TCP port=9100`"

// portHealthCheck is one entry of the port-health-checks annotation: the Service port it
// names (a number, canonical, or a name) and the parts of the health check it sets, in the
// health check fields of set.
type portHealthCheck struct {
	port string
	set  parsedAnnotations
}

// parsePortHealthChecks parses the value of the port-health-checks annotation: each part
// by the health-check-* annotation of its name.
func parsePortHealthChecks(v string) ([]portHealthCheck, error) {
	parts := map[string]Annotation{}
	var names []string
	for _, an := range annotationTable() {
		if part, ok := strings.CutPrefix(an.Name, "health-check-"); ok {
			parts[part] = an
			names = append(names, part+"=")
		}
	}
	var out []portHealthCheck
	seen := map[string]bool{}
	for _, entry := range strings.Split(v, ";") {
		ref, rest, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("%s is not a port, ':' and the parts of its health check", quote.Value(strings.TrimSpace(entry)))
		}
		port, err := parsePortRef(ref)
		if err != nil {
			return nil, err
		}
		if seen[port] {
			return nil, fmt.Errorf("port %s is named twice", port)
		}
		seen[port] = true
		e, set := portHealthCheck{port: port}, map[string]bool{}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("port %s: no part of a health check set (%s)", port, strings.Join(names, ", "))
		}
		for _, f := range fields {
			name, value, _ := strings.Cut(f, "=")
			an, known := parts[name]
			switch {
			case !known:
				return nil, fmt.Errorf("port %s: %s is not one of %s followed by a value", port, quote.Value(f), strings.Join(names, ", "))
			case set[name]:
				return nil, fmt.Errorf("port %s: %s is set twice", port, name)
			}
			set[name] = true
			if err := an.apply(value, &e.set); err != nil {
				return nil, fmt.Errorf("port %s: %s=%s: %w (allowed: %s)", port, name, quote.Value(value), err, an.Values)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// keptPortHealthChecks gives each of ls the health check of its own that the listener of
// the same key on current has: an adopted load balancer whose ports' health checks differ
// (none common), on a cloud that builds a port's own, keeps each as it is, with the parts
// the Service's health check annotations set; a listener current lacks gets none of its
// own. It returns what is wrong with those parts (healthCheck's error).
func keptPortHealthChecks(prefix string, svc *corev1.Service, a parsedAnnotations, current *cloudapi.LoadBalancer, ls []cloudapi.Listener, shape cloudapi.LoadBalancerShape) problems {
	own := map[cloudapi.ListenerKey]*cloudapi.HealthCheck{}
	for _, l := range current.Spec.Listeners {
		if l.HealthCheck != nil {
			own[l.Key()] = l.HealthCheck
		}
	}
	var ps problems
	for i, l := range ls {
		kept, ok := own[l.Key()]
		if !ok {
			continue
		}
		hc, err := healthCheck(prefix, svc, a, true, kept, nil, shape)
		if err != nil {
			key := a.key(prefix, AnnotationHealthCheckTimeout)
			ps = append(ps, problem{key: key, err: err})
			continue
		}
		ls[i].HealthCheck = hc
	}
	return ps
}

// portHealthChecks gives the listeners ls, of the Service's ports, the health checks of
// their own that the port-health-checks annotation asks for (each over the Service's,
// kept as healthCheck keeps it), over svcHC, the Service's
// (a listener whose health check would be svcHC gets none of its own), and returns the
// problems: an entry that names no port of the Service, a timeout longer than the
// interval, a time that is not a whole number of the cloud's unit, a value out of its
// ranges (shape).
func portHealthChecks(prefix string, svc *corev1.Service, a parsedAnnotations, keep bool, kept, svcHC *cloudapi.HealthCheck, ls []cloudapi.Listener, shape cloudapi.LoadBalancerShape) problems {
	unit := shape.HealthCheckUnit
	var ps problems
	key := a.key(prefix, AnnotationPortHealthChecks)
	fail := func(err error) {
		ps = append(ps, problem{key: key, err: &AnnotationError{Key: key, Value: svc.Annotations[key], Allowed: portHealthChecksValues, Err: err}})
	}
	for _, e := range a.portHCs {
		var ports []corev1.ServicePort
		for _, p := range svc.Spec.Ports {
			if strconv.Itoa(int(p.Port)) == e.port || (p.Name != "" && p.Name == e.port) {
				ports = append(ports, p)
			}
		}
		if len(ports) == 0 {
			fail(fmt.Errorf("the Service has no port %s", e.port))
			continue
		}
		hc, err := healthCheck(prefix, svc, a, keep, kept, &e, shape)
		if err != nil {
			fail(err)
			continue
		}
		if out := outOfRange(hc, shape.HealthCheckRanges); len(out) > 0 {
			fail(fmt.Errorf("port %s: %w", e.port, out[0].err))
			continue
		}
		if unit > 0 && ((e.set.hcInterval != 0 && hc.Interval%unit != 0) || (e.set.hcTimeout != 0 && hc.Timeout%unit != 0)) {
			fail(fmt.Errorf("port %s: interval %s and timeout %s: this cloud keeps a health check's times in whole numbers of %s", e.port, hc.Interval, hc.Timeout, unit))
			continue
		}
		if svcHC != nil && *hc == *svcHC {
			continue
		}
		for _, p := range ports {
			proto := cloudapi.Protocol(cmp.Or(p.Protocol, corev1.ProtocolTCP))
			for i, l := range ls {
				if l.Key() == (cloudapi.ListenerKey{Protocol: proto, Port: p.Port}) {
					ls[i].HealthCheck = hc
				}
			}
		}
	}
	return ps
}

// adapterValues returns the adapter's settings of the spec: the defaults, overridden by
// the Service's annotations (annotated); nil for none. The settings of current (the load
// balancer found, or nil) whose names decls does not declare are kept as they are, as
// foreign tags are: they are not ccmkit's to change (an adapter that stopped declaring
// one, a setting made outside ccmkit). A setting declared Replace that current lacks and
// the Service does not annotate stays absent: a load balancer made before the setting was
// declared, or before it had a default, is not replaced for a value nobody asked for.
//
// With keep (an adopted load balancer, see cloudapi.TagAdopted), every declared setting the Service does
// not annotate stays as current has it (absent when it has none), whatever its default.
func adapterValues(decls Settings, defaults, annotated map[string]string, current *cloudapi.LoadBalancer, keep bool) map[string]string {
	out := maps.Clone(defaults)
	if out == nil {
		out = make(map[string]string, len(annotated))
	}
	maps.Copy(out, annotated)
	if current != nil {
		for name, v := range current.Spec.SettingValues {
			if !decls.declared(name) {
				out[name] = v
			}
		}
		for _, d := range decls {
			if (!d.Replace && !keep) || annotated[d.Name] != "" {
				continue
			}
			// A default is no reason to replace a load balancer: one made before the
			// setting was declared or had a default, or before the default changed (in
			// the cloud config or in the adapter), keeps the value it has.
			if v, ok := d.canonical(current.Spec.SettingValues); ok {
				out[d.Name] = v
			} else {
				delete(out, d.Name)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
