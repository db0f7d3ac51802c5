package loadbalancer

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The parts of a Service's load balancer that come with defaults: its health check and
// the adapter's settings.

// healthCheckAnnotations are the annotations of the health check's parts.
var healthCheckAnnotations = []string{AnnotationHealthCheckProtocol, AnnotationHealthCheckPort, AnnotationHealthCheckPath,
	AnnotationHealthCheckInterval, AnnotationHealthCheckTimeout, AnnotationHealthCheckHealthyThreshold, AnnotationHealthCheckUnhealthyThreshold}

// healthCheck returns the health check the Service asks for, and an error when its
// timeout is longer than its interval. With keep (an adopted load balancer, see
// cloudapi.TagAdopted), kept is the load balancer's health check as read (nil: one per
// listener, on a cloud that keeps them so; translate passes no keep for none at all): a
// Service that sets none of the health check's annotations keeps it as it is, and one
// that sets some changes those parts of it (of ccmkit's default when kept is nil).
func healthCheck(prefix string, svc *corev1.Service, a parsedAnnotations, keep bool, kept *cloudapi.HealthCheck) (*cloudapi.HealthCheck, error) {
	asked := func(name string) bool { _, ok := a.keys[name]; return ok }
	if keep && !slices.ContainsFunc(healthCheckAnnotations, asked) {
		if kept == nil {
			return nil, nil
		}
		c := *kept
		return &c, nil
	}
	hc := &cloudapi.HealthCheck{
		Protocol:           cloudapi.HealthCheckHTTP,
		Port:               KubeProxyHealthzPort,
		Path:               defaultHealthCheckPath,
		Interval:           defaultInterval,
		Timeout:            defaultTimeout,
		HealthyThreshold:   defaultHealthyThreshold,
		UnhealthyThreshold: defaultUnhealthyThreshold,
	}
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
	switch {
	case hc.Protocol == cloudapi.HealthCheckTCP:
		hc.Path = ""
	case hc.Path == "":
		hc.Path = defaultHealthCheckPath // a kept TCP check the Service makes HTTP
	}
	if !asked(AnnotationHealthCheckTimeout) && hc.Timeout > hc.Interval {
		hc.Timeout = hc.Interval // a short interval alone shortens the default (or kept) timeout
	}
	if hc.Timeout > hc.Interval {
		return hc, fmt.Errorf("annotation %s: the health check timeout %s is longer than its interval %s", a.key(prefix, AnnotationHealthCheckTimeout), hc.Timeout, hc.Interval)
	}
	return hc, nil
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
		for name, v := range current.Spec.Settings {
			if !decls.declared(name) {
				out[name] = v
			}
		}
		for _, d := range decls {
			if !(d.Replace || keep) || annotated[d.Name] != "" {
				continue
			}
			// A default is no reason to replace a load balancer: one made before the
			// setting was declared or had a default, or before the default changed (in
			// the cloud config or in the adapter), keeps the value it has.
			if v, ok := d.canonical(current.Spec.Settings); ok {
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
