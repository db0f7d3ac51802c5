package loadbalancer

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// fuzzSeeds are good and bad values for every annotation.
var fuzzSeeds = map[string][]string{
	AnnotationInternal:                      {"true", "false", "TRUE", " false ", "", "yes", "1"},
	AnnotationProxyProtocol:                 {"true", "False", "", "on", "truee"},
	AnnotationIPAddresses:                   {"203.0.113.7", "203.0.113.7,2001:db8::7", " 10.0.0.1 , fd00::1", "1.2.3.4,5.6.7.8", "", "not-an-ip", "1.2.3.4,", "fe80::1%eth0", "::ffff:1.2.3.4,1.2.3.4"},
	AnnotationName:                          {"web", "a", strings.Repeat("a", 63), strings.Repeat("a", 64), "Web", "-web", "web-", "we_b", ""},
	AnnotationHealthCheckProtocol:           {"TCP", "http", "HTTPS", "UDP", "", "ｔｃｐ"},
	AnnotationHealthCheckPort:               {"1", "8080", "65535", "0", "65536", "-1", "80.5", "", "9999999999999999999999"},
	AnnotationHealthCheckPath:               {"/", "/healthz", "/a b", "healthz", "", "/\tx"},
	AnnotationHealthCheckInterval:           {"1s", "10s", "5m", "999ms", "5m1s", "-1s", "10", "", "1h"},
	AnnotationHealthCheckTimeout:            {"1s", "4s", "300s", "0s", "301s", "abc"},
	AnnotationHealthCheckHealthyThreshold:   {"1", "2", "10", "0", "11", "two", ""},
	AnnotationHealthCheckUnhealthyThreshold: {"1", "3", "10", "0", "11", " 5 ", "-3"},
	AnnotationPortHealthChecks:              {"443: protocol=HTTPS path=/ready", "https: port=9100; 80: interval=5s timeout=2s", "443 protocol=TCP", "443:", "443: protocol=UDP", "443: path=/a; 443: port=1", "0: port=1", "443: colour=red", "443: port=1 port=2", ""},
	AnnotationNodeSelector:                  {"pool=web", "pool in (a,b),!spot", "zone notin (z1)", "", "pool==a", "pool=", "=x", "pool in (", "a b", "pool=web,pool=db", strings.Repeat("k", 64) + "=v"},
	AnnotationProtocol:                      {"TCP", "tls", "Http", "HTTPS", "", "UDP", "http2", " https "},
	AnnotationPortProtocols:                 {"443: HTTPS", "https: tls, 80: TCP", "443:HTTP,443:TLS", "443", "443: UDP", "0: TCP", ": TCP", "443: HTTPS,", ""},
	AnnotationTLSPorts:                      {"443", "https", "443,8443,web-tls", "", "0", "65536", "443,", "-https", "very-long-port-name", "a b"},
	AnnotationTLSCertificates:               {"cert-1", "arn:aws:acm:eu-1:1:certificate/abc, cert-2", "", "a,a", "cert 1", "a,,b"},
	AnnotationHostname:                      {"web.example.org", "a", " lb.example.com ", "", "203.0.113.7", "::1", "Web.example.org", "a..b", strings.Repeat("a.", 127) + "a", strings.Repeat("a", 64) + ".com"},
	AnnotationLoadBalancerID:                {"lb-000001", " lb-1 ", "arn:aws:elasticloadbalancing:eu-1:1:loadbalancer/net/x/1", "lb 1", "", strings.Repeat("x", 255), strings.Repeat("x", 256), "lb-\u00001", "lb-\t1", "lb-ü"},
	AnnotationKeepOnDelete:                  {"true", "false", "TRUE", " true", "", "yes", "0"},
	AnnotationShare:                         {"web", "a", "Web", "-web", "web/x", "", "ns:web"},
	AnnotationStickySessions:                {"cookie", "NONE", " Cookie ", "cookies", ""},
	AnnotationStickySessionsCookieName:      {"SRV", "lb-sticky", "a b", "a;b", ""},
	AnnotationStickySessionsCookieLifetime:  {"1", "300", "86400", "0", "86401", ""},
}

// FuzzParseAnnotations feeds two annotations (known names, unknown ones and others) to
// parseAnnotations and checks that it never panics, that every error is an
// *AnnotationError that names the annotation and its value, and that what it accepts is
// within the documented bounds.
func FuzzParseAnnotations(f *testing.F) {
	const prefix = DefaultAnnotationPrefix
	for _, a := range Annotations() {
		require.Contains(f, fuzzSeeds, a.Name, "no seed values for annotation %s", a.Name)
	}
	for name, values := range fuzzSeeds {
		for _, v := range values {
			f.Add(name, v, AnnotationHealthCheckInterval, "10s")
			f.Add(name, v, AnnotationHealthCheckPort, "0")
		}
	}
	f.Add("health-check-intervall", "10s", "internal", "true")
	f.Add("", "", "", "")

	known := map[string]bool{}
	for _, a := range Annotations() {
		known[prefix+a.Name] = true
	}

	f.Fuzz(func(t *testing.T, name1, value1, name2, value2 string) {
		annotations := map[string]string{
			prefix + name1:         value1,
			prefix + name2:         value2,
			"example.com/" + name1: "unrelated",
		}
		s, unknown, annErrs := parseAnnotations(prefix, nil, Aliases{}, annotations)

		// Unknown keys: exactly those under the prefix that name no annotation, sorted.
		var wantUnknown []string
		for k := range annotations {
			if strings.HasPrefix(k, prefix) && !known[k] {
				wantUnknown = append(wantUnknown, k)
			}
		}
		slices.Sort(wantUnknown)
		assert.Equal(t, wantUnknown, unknown)

		// Errors: each an *AnnotationError naming a known annotation that is present and
		// its value, at most one per annotation.
		bad := map[string]bool{}
		if len(annErrs) > 0 {
			for _, ae := range annErrs {
				var e error = ae
				require.True(t, known[ae.Key], "error for %q, which is no annotation", ae.Key)
				v, present := annotations[ae.Key]
				require.True(t, present, "error for %q, which is not set", ae.Key)
				assert.Equal(t, v, ae.Value)
				assert.NotEmpty(t, ae.Allowed)
				require.Error(t, ae.Err)
				msg := e.Error()
				assert.Contains(t, msg, ae.Key)
				assert.Contains(t, msg, quote.Value(v), "the value, cut when long")
				assert.LessOrEqual(t, len(msg), 4096, "bounded, whatever the value")
				assert.False(t, bad[ae.Key], "two errors for %s", ae.Key)
				bad[ae.Key] = true
			}
			require.NotEmpty(t, bad)
		}

		// Accepted values are within bounds and in effect.
		ok := func(n string) (string, bool) {
			v, set := annotations[prefix+n]
			return strings.TrimSpace(v), set && !bad[prefix+n]
		}
		if v, set := ok(AnnotationInternal); set {
			assert.Equal(t, strings.EqualFold(v, "true"), s.internal)
		}
		if v, set := ok(AnnotationProxyProtocol); set {
			assert.Equal(t, strings.EqualFold(v, "true"), s.proxyProtocol)
		}
		if _, set := ok(AnnotationIPAddresses); set {
			require.NotEmpty(t, s.ips)
			assert.LessOrEqual(t, len(s.ips), 2)
			families := map[bool]bool{}
			for _, ip := range s.ips {
				a, err := netip.ParseAddr(ip)
				require.NoError(t, err)
				assert.False(t, families[a.Is4()], "two addresses of one family in %v", s.ips)
				families[a.Is4()] = true
			}
		}
		if _, set := ok(AnnotationName); set {
			assert.True(t, len(s.name) >= 1 && len(s.name) <= maxNameLength, "name %q", s.name)
			assert.Regexp(t, `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`, s.name)
		}
		if _, set := ok(AnnotationNodeSelector); set {
			require.False(t, s.nodeSelector == nil, "an accepted selector is set (an empty one selects every node)")
			again, err := labels.Parse(s.nodeSelector.String())
			require.NoError(t, err, "the canonical form %q of an accepted selector parses", s.nodeSelector.String())
			assert.Equal(t, s.nodeSelector.String(), again.String())
			assert.False(t, s.nodeSelectorBad)
		}
		if _, bad := bad[prefix+AnnotationNodeSelector]; bad {
			assert.True(t, s.nodeSelectorBad)
		}
		if _, set := ok(AnnotationProtocol); set {
			assert.True(t, s.appProtocol.Valid(), "protocol %q", s.appProtocol)
		}
		if _, set := ok(AnnotationPortProtocols); set {
			require.NotEmpty(t, s.portProtocols)
			for _, e := range s.portProtocols {
				assert.True(t, e.app.Valid(), "port %s protocol %q", e.port, e.app)
			}
		}
		if _, set := ok(AnnotationTLSPorts); set {
			require.NotEmpty(t, s.tlsPorts)
			for _, p := range s.tlsPorts {
				n, err := strconv.Atoi(p)
				assert.True(t, (err == nil && n >= 1 && n <= 65535) || (err != nil && len(p) <= 15 && p != ""), "tls port %q", p)
			}
		}
		if _, set := ok(AnnotationTLSCertificates); set {
			require.NotEmpty(t, s.certs)
			assert.Len(t, slices.Compact(slices.Sorted(slices.Values(s.certs))), len(s.certs), "no certificate twice")
			for _, c := range s.certs {
				assert.NotEmpty(t, c)
				assert.NotContains(t, c, " ")
			}
		}
		if v, set := ok(AnnotationHostname); set {
			assert.LessOrEqual(t, len(v), 253, "hostname %q", v)
			assert.Nil(t, net.ParseIP(v), "hostname %q is an IP address", v)
			for _, label := range strings.Split(v, ".") {
				assert.Regexp(t, `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`, label, "hostname %q", v)
			}
		}
		if v, set := ok(AnnotationLoadBalancerID); set {
			assert.Equal(t, v, s.loadBalancerID)
			assert.True(t, len(s.loadBalancerID) >= 1 && len(s.loadBalancerID) <= maxIDLength, "ID %q", s.loadBalancerID)
			assert.False(t, strings.ContainsFunc(s.loadBalancerID, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }), "ID %q", s.loadBalancerID)
		}
		if v, set := ok(AnnotationShare); set {
			assert.Equal(t, v, s.share)
			assert.Regexp(t, nameRE, s.share)
		}
		if v, set := ok(AnnotationKeepOnDelete); set {
			require.NotNil(t, s.keepOnDelete)
			assert.Equal(t, strings.EqualFold(v, "true"), *s.keepOnDelete)
		}
		if _, set := ok(AnnotationHealthCheckProtocol); set {
			assert.True(t, s.hcProtocol.Valid(), "protocol %q", s.hcProtocol)
		}
		if _, set := ok(AnnotationHealthCheckPort); set {
			assert.True(t, s.hcPort >= 1 && s.hcPort <= 65535, "port %d", s.hcPort)
		}
		if _, set := ok(AnnotationHealthCheckPath); set {
			assert.True(t, strings.HasPrefix(s.hcPath, "/"), "path %q", s.hcPath)
		}
		for _, d := range []struct {
			name string
			got  time.Duration
		}{{AnnotationHealthCheckInterval, s.hcInterval}, {AnnotationHealthCheckTimeout, s.hcTimeout}} {
			if _, set := ok(d.name); set {
				assert.True(t, d.got >= time.Second && d.got <= 5*time.Minute, "%s %s", d.name, d.got)
			}
		}
		for _, n := range []struct {
			name string
			got  int32
		}{{AnnotationHealthCheckHealthyThreshold, s.hcHealthy}, {AnnotationHealthCheckUnhealthyThreshold, s.hcUnhealthy}} {
			if _, set := ok(n.name); set {
				assert.True(t, n.got >= 1 && n.got <= 10, "%s %d", n.name, n.got)
			}
		}

		// Absent annotations leave their defaults.
		for name, zero := range map[string]bool{
			AnnotationInternal:                      !s.internal,
			AnnotationProxyProtocol:                 !s.proxyProtocol,
			AnnotationIPAddresses:                   s.ips == nil,
			AnnotationName:                          s.name == "",
			AnnotationHealthCheckProtocol:           s.hcProtocol == "",
			AnnotationHealthCheckPort:               s.hcPort == 0,
			AnnotationHealthCheckPath:               s.hcPath == "",
			AnnotationHealthCheckInterval:           s.hcInterval == 0,
			AnnotationHealthCheckTimeout:            s.hcTimeout == 0,
			AnnotationHealthCheckHealthyThreshold:   s.hcHealthy == 0,
			AnnotationHealthCheckUnhealthyThreshold: s.hcUnhealthy == 0,
			AnnotationPortHealthChecks:              s.portHCs == nil,
			AnnotationNodeSelector:                  s.nodeSelector == nil && !s.nodeSelectorBad,
			AnnotationProtocol:                      s.appProtocol == "",
			AnnotationPortProtocols:                 s.portProtocols == nil,
			AnnotationTLSPorts:                      s.tlsPorts == nil,
			AnnotationTLSCertificates:               s.certs == nil,
			AnnotationLoadBalancerID:                s.loadBalancerID == "",
			AnnotationKeepOnDelete:                  s.keepOnDelete == nil,
			AnnotationShare:                         s.share == "",
			AnnotationStickySessions:                !s.sticky.cookie,
			AnnotationStickySessionsCookieName:      s.sticky.name == "",
			AnnotationStickySessionsCookieLifetime:  s.sticky.lifetime == 0,
		} {
			if _, present := annotations[prefix+name]; !present {
				assert.True(t, zero, "annotation %s is absent but set", name)
			}
		}
	})
}
