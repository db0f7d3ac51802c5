package loadbalancer

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The parts of a Service's load balancer that come with defaults: its health check and
// the adapter's settings.

// healthCheck returns the health check the Service asks for, and an error when its
// timeout is longer than its interval.
func healthCheck(prefix string, svc *corev1.Service, a parsedAnnotations) (*cloudapi.HealthCheck, error) {
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
	if a.hcProtocol != "" {
		hc.Protocol = a.hcProtocol
	}
	if a.hcPort != 0 {
		hc.Port = a.hcPort
	}
	if a.hcPath != "" {
		hc.Path = a.hcPath
	}
	if a.hcInterval != 0 {
		hc.Interval = a.hcInterval
	}
	if a.hcTimeout != 0 {
		hc.Timeout = a.hcTimeout
	}
	if a.hcHealthy != 0 {
		hc.HealthyThreshold = a.hcHealthy
	}
	if a.hcUnhealthy != 0 {
		hc.UnhealthyThreshold = a.hcUnhealthy
	}
	if hc.Protocol == cloudapi.HealthCheckTCP {
		hc.Path = ""
	}
	if a.hcTimeout == 0 && hc.Timeout > hc.Interval {
		hc.Timeout = hc.Interval // a short interval alone shortens the default timeout
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
func adapterValues(decls Settings, defaults, annotated map[string]string, current *cloudapi.LoadBalancer) map[string]string {
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
			if !d.Replace || annotated[d.Name] != "" {
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
