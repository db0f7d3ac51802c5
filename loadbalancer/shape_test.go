package loadbalancer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// narrowCloud is a cloud that stores no listener names, no healthy threshold and no IP
// families (it reports them empty), as a real API narrower than the spec does.
type narrowCloud struct{ cloudapi.Client }

func (c narrowCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return narrowLBs{api}, ok
}

type narrowLBs struct{ cloudapi.LoadBalancerAPI }

func narrow(lb *cloudapi.LoadBalancer) *cloudapi.LoadBalancer {
	if lb == nil {
		return nil
	}
	for i := range lb.Spec.Listeners {
		lb.Spec.Listeners[i].Name = ""
	}
	if lb.Spec.HealthCheck != nil {
		lb.Spec.HealthCheck.HealthyThreshold = 0
	}
	lb.Spec.IPFamilies = nil
	return lb
}

func (a narrowLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	lb, err := a.LoadBalancerAPI.GetLoadBalancer(ctx, id)
	return narrow(lb), err
}

func (a narrowLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	page, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
	if page != nil {
		for i := range page.Items {
			narrow(&page.Items[i])
		}
	}
	return page, err
}

func (a narrowLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	lb, err := a.LoadBalancerAPI.CreateLoadBalancer(ctx, spec)
	return narrow(lb), err
}

func (a narrowLBs) UpdateLoadBalancer(ctx context.Context, id string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	lb, err := a.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, u)
	return narrow(lb), err
}

func withShape(shape cloudapi.LoadBalancerShape) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) { o.Shape = shape }
}

// TestShapeNotKeptCostsNoWrite: on a cloud that does not keep listener names, the healthy
// threshold or the IP families, a converged load balancer costs no write once the adapter
// declares them not kept; without the declaration every sync would rewrite them.
func TestShapeNotKeptCostsNoWrite(t *testing.T) {
	wrap := func(c cloudapi.Client) cloudapi.Client { return narrowCloud{c} }
	svc := newService("web", func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol} })
	for _, tc := range []struct {
		name   string
		shape  cloudapi.LoadBalancerShape
		writes int64
	}{
		{"declared", cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames, cloudapi.FeatureHealthyThreshold, cloudapi.FeatureIPFamilies}}, 0},
		{"undeclared", cloudapi.LoadBalancerShape{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withShape(tc.shape), wrap)
			e.ensure(t, svc, e.nodes)
			for range 3 {
				e.expire() // every sync reads the cloud afresh
				before := e.cloud.Calls()
				e.ensure(t, svc, e.nodes)
				require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
				assert.Equal(t, 2*tc.writes, e.cloud.Calls().Sub(before).Writes(), "writes of one EnsureLoadBalancer and one UpdateLoadBalancer of a converged load balancer")
			}
		})
	}
}

// TestShapeUnsupportedIsRefusedBeforeAnyWrite: a Service that asks for what the cloud does
// not support gets an error naming it, and nothing is created; a Service whose load
// balancer exists and that starts asking for it changes nothing of it.
func TestShapeUnsupportedIsRefusedBeforeAnyWrite(t *testing.T) {
	shape := cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureSourceRanges, cloudapi.FeatureProxyProtocol, cloudapi.FeatureSessionAffinity,
		cloudapi.FeatureCookieAffinity}}
	udp := corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053}
	tcp := corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}
	for _, tc := range []struct {
		name  string
		tweak func(*corev1.Service)
		want  []string // in the error
	}{
		{"a UDP port", withPorts(tcp, udp), []string{"UDP listeners (ports 53/UDP)", "do not support"}},
		{"source ranges", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }, []string{"source ranges"}},
		{"the PROXY protocol", withAnnotation(loadbalancer.AnnotationProxyProtocol, "true"), []string{prefix + loadbalancer.AnnotationProxyProtocol}},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, []string{"session affinity ClientIP"}},
		{"cookie stickiness", stickyHTTP, []string{"do not support cookie stickiness (annotation " + prefix + loadbalancer.AnnotationStickySessions + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withShape(shape))
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", tc.tweak), e.nodes)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.Zero(t, e.cloud.Calls().Writes(), "nothing created")
			assert.Empty(t, e.cloud.Inventory().LoadBalancers)

			e.ensure(t, newService("web"), e.nodes)
			before := e.only(t)
			calls := e.cloud.Calls()
			_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", tc.tweak), e.nodes)
			require.Error(t, err)
			assert.Zero(t, e.cloud.Calls().Sub(calls).Writes(), "the existing load balancer is not changed")
			assert.Equal(t, before, e.only(t))
		})
	}
}

// TestNewRefusesABadShape: a shape that lists a feature where it cannot be is refused.
func TestNewRefusesABadShape(t *testing.T) {
	e := newEnv(t, fake.Config{})
	api, _ := e.cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	_, err = loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format,
		Shape: cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureUDP}}})
	require.ErrorContains(t, err, `"udp" is not one of`)
}

// TestHealthCheckTimesTheCloudCannotKeepAreRefused: on a cloud that keeps a health
// check's times in whole seconds, an interval or timeout of 1500ms fails the sync with an
// error naming the annotation and the unit, before any write (the cloud would round it,
// and every sync would write it again); whole seconds pass.
func TestHealthCheckTimesTheCloudCannotKeepAreRefused(t *testing.T) {
	shape := cloudapi.LoadBalancerShape{HealthCheckUnit: time.Second}
	for _, tc := range []struct {
		annotation, value string
		refused           bool
	}{
		{loadbalancer.AnnotationHealthCheckInterval, "1500ms", true},
		{loadbalancer.AnnotationHealthCheckTimeout, "2500ms", true},
		{loadbalancer.AnnotationHealthCheckInterval, "15s", false},
		{loadbalancer.AnnotationHealthCheckTimeout, "2s", false},
	} {
		t.Run(tc.annotation+"="+tc.value, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withShape(shape))
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(tc.annotation, tc.value)), e.nodes)
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, prefix+tc.annotation, aerr.Key)
			assert.ErrorContains(t, err, "whole number of 1s")
			assert.Zero(t, e.cloud.Calls().Writes(), "nothing created")
		})
	}
}

// TestPortHealthChecks: on a cloud that builds a port's own health check (its shape
// declares cloudapi.FeatureListenerHealthCheck), the port-health-checks annotation gives
// the port's listener its own, which a converged sync does not write again, a change
// rewrites and a removal takes away; a cloud that keeps one health check for all ports
// refuses the Service before any write.
func TestPortHealthChecks(t *testing.T) {
	ports := withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443})
	own := func(t *testing.T, e *env) map[int32]*cloudapi.HealthCheck {
		out := map[int32]*cloudapi.HealthCheck{}
		for _, l := range e.only(t).Spec.Listeners {
			out[l.Port] = l.HealthCheck
		}
		return out
	}
	t.Run("built where declared", func(t *testing.T) {
		shape := cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck}}
		e := newEnvWith(t, fake.Config{}, withShape(shape))
		e.ensure(t, newService("web", ports, withAnnotation(loadbalancer.AnnotationPortHealthChecks, "https: protocol=HTTPS path=/ready")), e.nodes)
		got := own(t, e)
		require.NotNil(t, got[443])
		assert.Equal(t, cloudapi.HealthCheckHTTPS, got[443].Protocol)
		assert.Equal(t, "/ready", got[443].Path)
		assert.Nil(t, got[80], "the Service's health check")
		assert.Equal(t, cloudapi.HealthCheckHTTP, e.only(t).Spec.HealthCheck.Protocol)

		e.expire()
		before := e.cloud.Calls()
		e.ensure(t, newService("web", ports, withAnnotation(loadbalancer.AnnotationPortHealthChecks, "443: protocol=HTTPS path=/ready")), e.nodes)
		assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "converged: the port by number is the port by name")

		e.ensure(t, newService("web", ports, withAnnotation(loadbalancer.AnnotationPortHealthChecks, "443: protocol=HTTPS path=/live")), e.nodes)
		assert.Equal(t, "/live", own(t, e)[443].Path)

		e.ensure(t, newService("web", ports), e.nodes)
		assert.Nil(t, own(t, e)[443], "removed with the annotation")
	})
	t.Run("refused where the cloud keeps one for all ports", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withShape(cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck}}))
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", ports, withAnnotation(loadbalancer.AnnotationPortHealthChecks, "443: port=9000")), e.nodes)
		require.ErrorContains(t, err, "do not support a health check of a port's own")
		assert.ErrorContains(t, err, prefix+loadbalancer.AnnotationPortHealthChecks)
		assert.Zero(t, e.cloud.Calls().Writes(), "nothing created")
	})
}

// limitedShape is a cloud whose health checks take an interval of at most 8s, a timeout
// of at least 6s and a healthy threshold of at least 3 (ccmkit's defaults are 10s, 5s and
// 2), whose load balancers serve IPv6 only second and are not both internal and
// dual-stack, and whose listeners take one certificate.
var limitedShape = cloudapi.LoadBalancerShape{
	Unsupported:     []cloudapi.Feature{cloudapi.FeatureIPv6First},
	HealthCheckUnit: time.Second,
	HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 6 * time.Second, Max: 8 * time.Second},
		Timeout: cloudapi.DurationRange{Min: 6 * time.Second}, HealthyThreshold: cloudapi.CountRange{Min: 3, Max: 10}},
	Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}},
	MaxCertificates: 1,
}

// TestShapeLimits: the defaults of a Service's health check are brought within the
// cloud's ranges; a value out of them, IPv6 first, internal with dual-stack and two
// certificates are refused before any write, each naming what in the Service asks for it.
func TestShapeLimits(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withShape(limitedShape))
	e.ensure(t, newService("web"), e.nodes)
	hc := e.only(t).Spec.HealthCheck
	require.NotNil(t, hc)
	assert.Equal(t, []any{8 * time.Second, 6 * time.Second, int32(3), int32(3)}, []any{hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold},
		"defaults within the ranges: interval 8s (not 10s), timeout 6s (not 5s), healthy threshold 3 (not 2)")

	https := corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}
	families := func(f ...corev1.IPFamily) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.IPFamilies = f }
	}
	for _, tc := range []struct {
		name   string
		tweaks []func(*corev1.Service)
		want   []string
	}{
		{"a timeout below the range", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckTimeout, "5s")},
			[]string{prefix + loadbalancer.AnnotationHealthCheckTimeout, "timeout 5s is out of this cloud's range (at least 6s)"}},
		{"a threshold above the range", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckHealthyThreshold, "2")},
			[]string{prefix + loadbalancer.AnnotationHealthCheckHealthyThreshold, "healthy threshold 2 is out of this cloud's range (from 3 to 10)"}},
		{"a port's own interval above the range", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationPortHealthChecks, "80: interval=9s")},
			[]string{"port 80: the health check's interval 9s is out of this cloud's range (from 6s to 8s)"}},
		{"IPv6 first", []func(*corev1.Service){families(corev1.IPv6Protocol, corev1.IPv4Protocol)}, []string{"do not support IPv6 as the first (or only) family"}},
		{"internal and dual-stack", []func(*corev1.Service){families(corev1.IPv4Protocol, corev1.IPv6Protocol), withAnnotation(loadbalancer.AnnotationInternal, "true")},
			[]string{"internal load balancers (annotation " + prefix + loadbalancer.AnnotationInternal + ") together with both IP families"}},
		{"two certificates", []func(*corev1.Service){withPorts(https), withAnnotation(loadbalancer.AnnotationTLSPorts, "443"), withAnnotation(loadbalancer.AnnotationTLSCertificates, "c1,c2")},
			[]string{"more than 1 certificates on a listener (annotation " + prefix + loadbalancer.AnnotationTLSCertificates + " names 2)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withShape(limitedShape))
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", tc.tweaks...), e.nodes)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.Zero(t, e.cloud.Calls().Writes(), "nothing created")
		})
	}
}

// stickyHTTP makes a Service ask for cookie stickiness on its ports, which speak HTTP.
func stickyHTTP(s *corev1.Service) {
	withAnnotation(loadbalancer.AnnotationProtocol, "HTTP")(s)
	withAnnotation(loadbalancer.AnnotationStickySessions, "cookie")(s)
}

// TestCookieStickinessIsBuiltAndKept: on a cloud that offers it, a Service's cookie
// stickiness is built with its cookie's name and lifetime and kept (a converged load
// balancer costs no write), a changed name is written, and dropping it removes it.
func TestCookieStickinessIsBuiltAndKept(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withShape(cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureSessionAffinity}}))
	svc := newService("web", stickyHTTP, withAnnotation(loadbalancer.AnnotationStickySessionsCookieLifetime, "600"))
	e.ensure(t, svc, e.nodes)
	spec := e.only(t).Spec
	assert.Equal(t, cloudapi.SessionAffinityCookie, spec.SessionAffinity)
	assert.Equal(t, "ccmkit-sticky", spec.SessionAffinityCookieName)
	assert.Equal(t, 10*time.Minute, spec.SessionAffinityTimeout)

	e.expire()
	before := e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "converged: no write")

	withAnnotation(loadbalancer.AnnotationStickySessionsCookieName, "SRV")(svc)
	e.ensure(t, svc, e.nodes)
	assert.Equal(t, "SRV", e.only(t).Spec.SessionAffinityCookieName)

	svc = newService("web", withAnnotation(loadbalancer.AnnotationProtocol, "HTTP"), withAnnotation(loadbalancer.AnnotationStickySessions, "none"))
	e.ensure(t, svc, e.nodes)
	spec = e.only(t).Spec
	assert.Equal(t, cloudapi.SessionAffinityNone, spec.SessionAffinity)
	assert.Empty(t, spec.SessionAffinityCookieName)
	assert.Zero(t, spec.SessionAffinityTimeout)
}
