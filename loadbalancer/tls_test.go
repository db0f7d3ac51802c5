package loadbalancer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

func port(name string, proto corev1.Protocol, p, nodePort int32, appProtocol string) corev1.ServicePort {
	sp := corev1.ServicePort{Name: name, Protocol: proto, Port: p, NodePort: nodePort}
	if appProtocol != "" {
		sp.AppProtocol = &appProtocol
	}
	return sp
}

// webPorts are an HTTP, an HTTPS and a DNS port, without appProtocol.
var webPorts = withPorts(
	port("http", corev1.ProtocolTCP, 80, 30080, ""),
	port("https", corev1.ProtocolTCP, 443, 30443, ""),
	port("dns", corev1.ProtocolUDP, 53, 30053, ""),
)

func TestApplicationProtocolsAndTLS(t *testing.T) {
	certs := withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-main, arn:aws:acm:eu-1:1:certificate/alt")
	listener := func(name string, proto cloudapi.Protocol, p, target int32, app cloudapi.AppProtocol, certs ...string) cloudapi.Listener {
		return cloudapi.Listener{Name: name, Protocol: proto, Port: p, TargetPort: target, AppProtocol: app, Certificates: certs}
	}
	both := []string{"cert-main", "arn:aws:acm:eu-1:1:certificate/alt"}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want []cloudapi.Listener
	}{
		{"the ports' appProtocol", newService("web", certs, withPorts(
			port("http", corev1.ProtocolTCP, 80, 30080, "HTTP"),
			port("https", corev1.ProtocolTCP, 443, 30443, "https"),
			port("grpc", corev1.ProtocolTCP, 9000, 30900, "kubernetes.io/h2c"), // a hint for others: ignored
			port("dns", corev1.ProtocolUDP, 53, 30053, "udp"),
		)), []cloudapi.Listener{
			listener("http", cloudapi.ProtocolTCP, 80, 30080, cloudapi.AppProtocolHTTP),
			listener("https", cloudapi.ProtocolTCP, 443, 30443, cloudapi.AppProtocolHTTPS, both...),
			listener("grpc", cloudapi.ProtocolTCP, 9000, 30900, cloudapi.AppProtocolNone),
			listener("dns", cloudapi.ProtocolUDP, 53, 30053, cloudapi.AppProtocolNone),
		}},
		{"the protocol annotation and tls-ports by number", newService("web", certs, webPorts,
			withAnnotation(loadbalancer.AnnotationProtocol, "http"), withAnnotation(loadbalancer.AnnotationTLSPorts, "443")),
			[]cloudapi.Listener{
				listener("http", cloudapi.ProtocolTCP, 80, 30080, cloudapi.AppProtocolHTTP),
				listener("https", cloudapi.ProtocolTCP, 443, 30443, cloudapi.AppProtocolHTTPS, both...),
				listener("dns", cloudapi.ProtocolUDP, 53, 30053, cloudapi.AppProtocolNone),
			}},
		{"tls-ports by number, spelled with leading zeros or a plus: compared as numbers", newService("web", certs, webPorts,
			withAnnotation(loadbalancer.AnnotationTLSPorts, "0443, +80")),
			[]cloudapi.Listener{
				listener("http", cloudapi.ProtocolTCP, 80, 30080, cloudapi.AppProtocolTLS, both...),
				listener("https", cloudapi.ProtocolTCP, 443, 30443, cloudapi.AppProtocolTLS, both...),
				listener("dns", cloudapi.ProtocolUDP, 53, 30053, cloudapi.AppProtocolNone),
			}},
		{"tls-ports by name: TLS passthrough becomes TLS termination", newService("web", certs, webPorts,
			withAnnotation(loadbalancer.AnnotationTLSPorts, "https")),
			[]cloudapi.Listener{
				listener("http", cloudapi.ProtocolTCP, 80, 30080, cloudapi.AppProtocolNone),
				listener("https", cloudapi.ProtocolTCP, 443, 30443, cloudapi.AppProtocolTLS, both...),
				listener("dns", cloudapi.ProtocolUDP, 53, 30053, cloudapi.AppProtocolNone),
			}},
		{"a port's appProtocol over the annotation", newService("web", webPorts, withAnnotation(loadbalancer.AnnotationProtocol, "HTTP"),
			withPorts(port("http", corev1.ProtocolTCP, 80, 30080, ""), port("raw", corev1.ProtocolTCP, 5432, 30432, "tcp"))),
			[]cloudapi.Listener{
				listener("http", cloudapi.ProtocolTCP, 80, 30080, cloudapi.AppProtocolHTTP),
				listener("raw", cloudapi.ProtocolTCP, 5432, 30432, cloudapi.AppProtocolNone),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{})
			e.ensure(t, tc.svc, e.nodes)
			got := e.only(t).Spec.Listeners
			assert.ElementsMatch(t, tc.want, got)

			before := e.cloud.Calls()
			e.ensure(t, tc.svc, e.nodes)
			assert.Empty(t, e.cloud.Calls().Sub(before), "converged with TLS and application protocols: no call")
		})
	}
}

func TestCertificateChangeIsOneUpdate(t *testing.T) {
	e := newEnv(t, fake.Config{})
	tls := func(certs string) *corev1.Service {
		return newService("web", webPorts, withAnnotation(loadbalancer.AnnotationTLSPorts, "443"),
			withAnnotation(loadbalancer.AnnotationTLSCertificates, certs))
	}
	e.ensure(t, tls("cert-a"), e.nodes)
	for _, certs := range []string{"cert-b,cert-a", "cert-a,cert-b"} { // the order matters: the first is the default
		before := e.cloud.Calls()
		e.ensure(t, tls(certs), e.nodes)
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
		hist := e.cloud.LoadBalancerHistory()
		last := hist[len(hist)-1]
		require.Len(t, last.Changes.UpdateListeners, 1)
		assert.Equal(t, int32(443), last.Changes.UpdateListeners[0].Port)
		assert.True(t, last.ChangesMatch())
	}
	assert.Equal(t, []string{"cert-a", "cert-b"}, e.only(t).Spec.Listeners[1].Certificates)
}

func TestTLSErrors(t *testing.T) {
	e := newEnv(t, fake.Config{})
	tlsPorts := func(v string) func(*corev1.Service) { return withAnnotation(loadbalancer.AnnotationTLSPorts, v) }
	certs := withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a")
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"TLS without a certificate", newService("web", webPorts, tlsPorts("443")),
			"port 443/TCP terminates TLS (TLS): annotation loadbalancer.ccmkit.io/tls-certificates names no certificate"},
		{"appProtocol https without a certificate", newService("web", withPorts(port("https", corev1.ProtocolTCP, 443, 30443, "https"))),
			"port 443/TCP terminates TLS (HTTPS): annotation loadbalancer.ccmkit.io/tls-certificates names no certificate"},
		{"a certificate and no TLS", newService("web", webPorts, certs),
			"annotation loadbalancer.ccmkit.io/tls-certificates is set, but no port terminates TLS"},
		{"an unknown TLS port", newService("web", webPorts, certs, tlsPorts("443,8443")),
			"annotation loadbalancer.ccmkit.io/tls-ports: the Service has no port 8443"},
		{"an unknown TLS port with a leading zero: named as a number", newService("web", webPorts, certs, tlsPorts("0443,08443")),
			"annotation loadbalancer.ccmkit.io/tls-ports: the Service has no port 8443"},
		{"port zero however spelled", newService("web", webPorts, certs, tlsPorts("+000")),
			`annotation loadbalancer.ccmkit.io/tls-ports: "+000": port 0 is outside 1-65535`},
		{"a UDP TLS port", newService("web", webPorts, certs, tlsPorts("53")),
			"annotation loadbalancer.ccmkit.io/tls-ports: port 53/UDP cannot terminate TLS: it is not TCP"},
		{"appProtocol http over UDP", newService("web", withPorts(port("dns", corev1.ProtocolUDP, 53, 30053, "http"))),
			"port 53/UDP: appProtocol http needs TCP"},
		{"protocol", newService("web", withAnnotation(loadbalancer.AnnotationProtocol, "HTTP2")),
			`annotation loadbalancer.ccmkit.io/protocol: "HTTP2": not one of TCP, TLS, HTTP, HTTPS`},
		{"tls-ports", newService("web", tlsPorts("443,-https")),
			`annotation loadbalancer.ccmkit.io/tls-ports: "443,-https": "-https" is neither a port number nor a port name`},
		{"tls-certificates", newService("web", withAnnotation(loadbalancer.AnnotationTLSCertificates, "a,,b")),
			`annotation loadbalancer.ccmkit.io/tls-certificates: "a,,b": "" is not a certificate reference`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", tc.svc, e.nodes)
			require.ErrorContains(t, err, tc.want)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "a Service that cannot be built changes nothing")
		})
	}
	assert.Empty(t, e.cloud.Inventory().LoadBalancers)
}

// TestCloudWithoutTLS: a cloud whose load balancers cannot terminate TLS refuses the
// Service with a message that says so; and the node sync still moves the targets of the
// load balancer the Service had, with one more write of the targets alone.
func TestCloudWithoutTLS(t *testing.T) {
	off := false
	e := newEnv(t, fake.Config{Capabilities: fake.Capabilities{TLS: &off}})
	tls := newService("web", webPorts, withAnnotation(loadbalancer.AnnotationTLSPorts, "443"), withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a"))

	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", tls, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.ErrorContains(t, err, "application protocol TLS: this cloud's load balancers do not terminate TLS")
	assert.Empty(t, e.cloud.Inventory().LoadBalancers)

	e.ensure(t, newService("web", webPorts), e.nodes[:3])
	before := e.cloud.Calls()
	err = e.lb.UpdateLoadBalancer(t.Context(), "c", tls, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "the refusal is reported")
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 2}, e.cloud.Calls().Sub(before),
		"the refused update, then the targets alone")
	lb := e.only(t)
	assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, lb.Spec.Targets)
	assert.Equal(t, cloudapi.AppProtocolNone, lb.Spec.Listeners[1].AppProtocol)

	before = e.cloud.Calls()
	err = e.lb.UpdateLoadBalancer(t.Context(), "c", tls, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before),
		"targets in line: only the refused update")
}

// TestConvergedWithEverySettingCostsNoCall: the budget of a converged Service (no call
// while the snapshot is fresh, one list and no write when it expired) holds with every
// setting at once.
func TestConvergedWithEverySettingCostsNoCall(t *testing.T) {
	e := newEnvWith(t, fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com"}}, withSettings(map[string]string{"idle-timeout": "30"}, nil))
	timeout := int32(600)
	svc := newService("web",
		withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "http"), port("https", corev1.ProtocolTCP, 443, 30443, "https"),
			port("dns", corev1.ProtocolUDP, 53, 30053, "")),
		withNodeSelector("pool in (web, db)"),
		withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a,cert-b"),
		withAnnotation(loadbalancer.AnnotationHostname, "web.example.org"),
		withAnnotation(loadbalancer.AnnotationProxyProtocol, "true"),
		withAnnotation("size", "medium"), withAnnotation("network-tier", "premium"),
		func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		})
	nodes := e.labelled("web", "db", "cache", "web", "")
	st := e.ensure(t, svc, nodes)
	assert.Equal(t, []corev1.LoadBalancerIngress{{Hostname: "web.example.org"}}, st.Ingress)
	lb := e.only(t)
	assert.Equal(t, []string{"i-0", "i-1", "i-3"}, lb.Spec.Targets)
	assert.Equal(t, cloudapi.SessionAffinityClientIP, lb.Spec.SessionAffinity)
	assert.Equal(t, map[string]string{"size": "medium", "network-tier": "premium", "idle-timeout": "30"}, lb.Spec.SettingValues)

	before := e.cloud.Calls()
	e.ensure(t, svc, nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes))
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "converged: no call")

	e.expire()
	before = e.cloud.Calls()
	e.ensure(t, svc, nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before), "an expired snapshot: one list, no write")
}
