package loadbalancer_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// doPrefix is the prefix of a DigitalOcean-style earlier cloud-controller-manager.
const doPrefix = "service.beta.kubernetes.io/do-loadbalancer-"

// doAliases are a DigitalOcean-style adapter's aliases: its legacy tls-ports, whose ports
// speak HTTPS at the load balancer and HTTP to the targets (unlike ccmkit's tls-ports,
// which makes a TCP port TLS), and a legacy health check in one key, "http:8080/ready",
// that sets three of ccmkit's annotations.
func doAliases() loadbalancer.Aliases {
	return loadbalancer.Aliases{
		Prefixes: []string{doPrefix},
		Keys: []loadbalancer.Alias{
			{Key: doPrefix + "tls-ports", Parts: []string{loadbalancer.AnnotationPortProtocols},
				Allowed: "comma-separated port numbers: HTTPS at the load balancer, HTTP to the targets", ConvertParts: doTLSPorts},
			{Key: doPrefix + "healthcheck", Parts: []string{loadbalancer.AnnotationHealthCheckProtocol, loadbalancer.AnnotationHealthCheckPort, loadbalancer.AnnotationHealthCheckPath},
				Allowed: "a protocol (tcp, http), ':', a port and, for http, a path", ConvertParts: doHealthCheck},
		},
	}
}

func doTLSPorts(v string) (map[string]string, error) {
	var entries []string
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if _, err := strconv.Atoi(f); err != nil {
			return nil, fmt.Errorf("%q is not a port number", f)
		}
		entries = append(entries, f+": HTTPS")
	}
	return map[string]string{loadbalancer.AnnotationPortProtocols: strings.Join(entries, ", ")}, nil
}

func doHealthCheck(v string) (map[string]string, error) {
	proto, rest, ok := strings.Cut(v, ":")
	if !ok {
		return nil, errors.New("not a protocol, ':' and a port")
	}
	port, path, _ := strings.Cut(rest, "/")
	out := map[string]string{loadbalancer.AnnotationHealthCheckProtocol: proto, loadbalancer.AnnotationHealthCheckPort: port}
	if path != "" {
		out[loadbalancer.AnnotationHealthCheckPath] = "/" + path
	}
	return out, nil
}

func withDOAliases(rec *record.FakeRecorder) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) {
		o.Aliases = doAliases()
		if rec != nil {
			o.Recorder = rec
		}
	}
}

// TestLegacyTLSPortsMeansHTTPS: a legacy tls-ports that meant HTTPS to HTTP gives the
// load balancer port-protocols gives, exactly (HTTPS on 443, TCP on the other port), not
// the one ccmkit's tls-ports gives (TLS on 443).
func TestLegacyTLSPortsMeansHTTPS(t *testing.T) {
	ports := withPorts(port("raw", corev1.ProtocolTCP, 5432, 30432, ""), port("https", corev1.ProtocolTCP, 443, 30443, ""))
	certs := withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a")
	rec := record.NewFakeRecorder(10)
	old := newEnvWith(t, fake.Config{}, withDOAliases(rec))
	svc := newService("web", ports, certs, withKey(doPrefix+"tls-ports", " 443 "))
	old.ensure(t, svc, old.nodes)
	got := old.only(t).Spec
	apps := map[int32]cloudapi.AppProtocol{}
	for _, l := range got.Listeners {
		apps[l.Port] = l.AppProtocol
	}
	assert.Equal(t, map[int32]cloudapi.AppProtocol{443: cloudapi.AppProtocolHTTPS, 5432: cloudapi.AppProtocolNone}, apps)
	assert.Empty(t, events(rec), "no warning")

	own := newEnvWith(t, fake.Config{}, withDOAliases(nil))
	own.ensure(t, newService("web", ports, certs, withAnnotation(loadbalancer.AnnotationPortProtocols, "443: HTTPS")), own.nodes)
	assert.Equal(t, own.only(t).Spec, got, "exactly as with port-protocols 443: HTTPS")

	tls := newEnvWith(t, fake.Config{}, withDOAliases(nil))
	tls.ensure(t, newService("web", ports, certs, withAnnotation(loadbalancer.AnnotationTLSPorts, "443")), tls.nodes)
	assert.NotEqual(t, tls.only(t).Spec.Listeners, got.Listeners, "not what ccmkit's tls-ports means")

	before := old.cloud.Calls()
	old.ensure(t, svc, old.nodes)
	assert.Empty(t, old.cloud.Calls().Sub(before), "converged: no call")
}

// TestAliasWithSeveralParts: one legacy key sets several of ccmkit's annotations, each
// read as if the Service had written it; ccmkit's own key of one of them agrees or
// conflicts as a second spelling does; a malformed legacy value is one error.
func TestAliasWithSeveralParts(t *testing.T) {
	t.Run("three parts", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withDOAliases(nil))
		e.ensure(t, newService("web", withKey(doPrefix+"healthcheck", "HTTP:8080/ready")), e.nodes)
		hc := e.only(t).Spec.HealthCheck
		require.NotNil(t, hc)
		assert.Equal(t, cloudapi.HealthCheckHTTP, hc.Protocol)
		assert.Equal(t, int32(8080), hc.Port)
		assert.Equal(t, "/ready", hc.Path)
	})
	t.Run("ccmkit's key of a part that agrees", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withDOAliases(nil))
		e.ensure(t, newService("web", withKey(doPrefix+"healthcheck", "tcp:8080"), withAnnotation(loadbalancer.AnnotationHealthCheckPort, "08080")), e.nodes)
		assert.Equal(t, cloudapi.HealthCheckTCP, e.only(t).Spec.HealthCheck.Protocol)
	})
	for _, tc := range []struct {
		name     string
		svc      []func(*corev1.Service)
		mentions []string
	}{
		{"a part set otherwise by ccmkit's key", []func(*corev1.Service){withKey(doPrefix+"healthcheck", "http:8080/ready"), withAnnotation(loadbalancer.AnnotationHealthCheckPort, "9090")},
			[]string{`annotation service.beta.kubernetes.io/do-loadbalancer-healthcheck: "http:8080/ready": conflicting annotations: annotation loadbalancer.ccmkit.io/health-check-port is "9090", and both set loadbalancer.ccmkit.io/health-check-port`}},
		{"a port protocol set otherwise by ccmkit's key", []func(*corev1.Service){webPorts, withKey(doPrefix+"tls-ports", "443"), withAnnotation(loadbalancer.AnnotationPortProtocols, "443: TLS"),
			withAnnotation(loadbalancer.AnnotationTLSCertificates, "c")},
			[]string{`annotation service.beta.kubernetes.io/do-loadbalancer-tls-ports: "443": conflicting annotations: annotation loadbalancer.ccmkit.io/port-protocols is "443: TLS"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			e := newEnvWith(t, fake.Config{}, withDOAliases(rec))
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", tc.svc...), e.nodes)
			require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
			got := events(rec)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], "Warning ConflictingAnnotations")
			for _, m := range tc.mentions {
				assert.Contains(t, err.Error(), m)
			}
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	}
	for _, tc := range []struct{ name, key, value, msg string }{
		{"a value that cannot be converted", doPrefix + "healthcheck", "http", "not a protocol, ':' and a port"},
		{"a part's value that is malformed", doPrefix + "healthcheck", "http:99999", `read as health-check-port "99999": not a whole number from 1 to 65535`},
		{"a legacy port that is not a number", doPrefix + "tls-ports", "443,https", `"https" is not a port number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withDOAliases(nil))
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", webPorts, withKey(tc.key, tc.value)), e.nodes)
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, tc.key, aerr.Key)
			assert.Equal(t, tc.value, aerr.Value)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Equal(t, 1, strings.Count(err.Error(), tc.key+":"), "one error, not one per part: %v", err)
		})
	}
	t.Run("a conversion into a part it does not declare", func(t *testing.T) {
		as := loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: doPrefix + "x", Parts: []string{loadbalancer.AnnotationInternal}, Allowed: "x",
			ConvertParts: func(string) (map[string]string, error) {
				return map[string]string{loadbalancer.AnnotationInternal: "true", loadbalancer.AnnotationName: "x"}, nil
			}}}}
		e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Aliases = as })
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withKey(doPrefix+"x", "y")), e.nodes)
		require.ErrorContains(t, err, `converts into "name", which is not one of its parts (internal)`)
	})
}

func TestAliasPartsValidateAndReference(t *testing.T) {
	conv := func(string) (map[string]string, error) { return nil, nil }
	for _, tc := range []struct {
		name  string
		alias loadbalancer.Alias
		want  []string
	}{
		{"parts without ConvertParts", loadbalancer.Alias{Key: doPrefix + "x", Parts: []string{loadbalancer.AnnotationInternal}, Allowed: "x"}, []string{"Parts need ConvertParts"}},
		{"ConvertParts without parts", loadbalancer.Alias{Key: doPrefix + "x", ConvertParts: conv, Allowed: "x"}, []string{"ConvertParts needs Parts"}},
		{"with Name and Convert", loadbalancer.Alias{Key: doPrefix + "x", Name: loadbalancer.AnnotationInternal, Convert: negate, Parts: []string{loadbalancer.AnnotationInternal}, ConvertParts: conv, Allowed: "x"},
			[]string{"with Parts, leave them empty"}},
		{"without Allowed", loadbalancer.Alias{Key: doPrefix + "x", Parts: []string{loadbalancer.AnnotationInternal}, ConvertParts: conv}, []string{"ConvertParts needs Allowed"}},
		{"unknown and repeated parts", loadbalancer.Alias{Key: doPrefix + "x", Parts: []string{"sise", loadbalancer.AnnotationName, loadbalancer.AnnotationName}, ConvertParts: conv, Allowed: "x"},
			[]string{`part "sise" is neither`, `part "name" is named twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := loadbalancer.Aliases{Keys: []loadbalancer.Alias{tc.alias}}.Validate(prefix, nil)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	require.NoError(t, doAliases().Validate(prefix, nil))
	ref := doAliases().Reference(prefix, nil)
	assert.Contains(t, ref, "| `service.beta.kubernetes.io/do-loadbalancer-tls-ports` | comma-separated port numbers: HTTPS at the load balancer, HTTP to the targets | those of loadbalancer.ccmkit.io/port-protocols | Read as what its value converts into, of loadbalancer.ccmkit.io/port-protocols; set both only alike. |")
}

// TestPortProtocols: the port-protocols annotation says what each TCP port speaks, over
// the protocol annotation; tls-ports still terminates TLS on a port it names; its errors.
func TestPortProtocols(t *testing.T) {
	pp := func(v string) func(*corev1.Service) { return withAnnotation(loadbalancer.AnnotationPortProtocols, v) }
	certs := withAnnotation(loadbalancer.AnnotationTLSCertificates, "c")
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want map[int32]cloudapi.AppProtocol
	}{
		{"HTTPS on one port, TCP on another, whatever the protocol annotation", newService("web", webPorts, certs, pp("443: https, http: tcp"), withAnnotation(loadbalancer.AnnotationProtocol, "HTTP")),
			map[int32]cloudapi.AppProtocol{80: cloudapi.AppProtocolNone, 443: cloudapi.AppProtocolHTTPS, 53: cloudapi.AppProtocolNone}},
		{"tls-ports over an HTTP port", newService("web", webPorts, certs, pp("80: HTTP"), withAnnotation(loadbalancer.AnnotationTLSPorts, "80")),
			map[int32]cloudapi.AppProtocol{80: cloudapi.AppProtocolHTTPS, 443: cloudapi.AppProtocolNone, 53: cloudapi.AppProtocolNone}},
		{"an appProtocol that agrees", newService("web", certs, pp("0443: TLS"), withPorts(port("https", corev1.ProtocolTCP, 443, 30443, "tls"))),
			map[int32]cloudapi.AppProtocol{443: cloudapi.AppProtocolTLS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{})
			e.ensure(t, tc.svc, e.nodes)
			got := map[int32]cloudapi.AppProtocol{}
			for _, l := range e.only(t).Spec.Listeners {
				got[l.Port] = l.AppProtocol
			}
			assert.Equal(t, tc.want, got)
		})
	}
	e := newEnv(t, fake.Config{})
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"not an entry", newService("web", webPorts, pp("443")), `annotation loadbalancer.ccmkit.io/port-protocols: "443": "443" is not a port, ':' and a protocol`},
		{"not a protocol", newService("web", webPorts, pp("443: HTTP2")), `port 443: "HTTP2": not one of TCP, TLS, HTTP, HTTPS`},
		{"a port twice", newService("web", webPorts, pp("443: TLS, 0443: TCP")), "port 443 is named twice"},
		{"a port by number and name", newService("web", webPorts, certs, pp("443: TLS, https: TLS")), "annotation loadbalancer.ccmkit.io/port-protocols names port 443/TCP twice, as 443 and https: name it once"},
		{"no such port", newService("web", webPorts, certs, pp("443: TLS, 8443: TLS")), "annotation loadbalancer.ccmkit.io/port-protocols: the Service has no TCP port 8443"},
		{"a UDP port", newService("web", webPorts, pp("53: TCP")), "annotation loadbalancer.ccmkit.io/port-protocols: the Service has no TCP port 53"},
		{"an appProtocol that disagrees", newService("web", certs, pp("443: HTTPS"), withPorts(port("https", corev1.ProtocolTCP, 443, 30443, "tcp"))),
			"port 443/TCP: appProtocol tcp disagrees with annotation loadbalancer.ccmkit.io/port-protocols, which says HTTPS: remove one, or set them alike"},
		{"HTTPS without a certificate", newService("web", webPorts, pp("443: HTTPS")), "port 443/TCP terminates TLS (HTTPS): annotation loadbalancer.ccmkit.io/tls-certificates names no certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", tc.svc, e.nodes)
			require.ErrorContains(t, err, tc.want)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	}
}
