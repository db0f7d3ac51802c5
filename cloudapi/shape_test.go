package cloudapi_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestLoadBalancerShapeValidate(t *testing.T) {
	require.NoError(t, cloudapi.LoadBalancerShape{}.Validate())
	require.NoError(t, cloudapi.LoadBalancerShape{
		NotKept:     []cloudapi.Feature{cloudapi.FeatureListenerNames, cloudapi.FeatureIPFamilies},
		Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureSourceRanges},
	}.Validate())
	err := cloudapi.LoadBalancerShape{
		NotKept:     []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureName, cloudapi.FeatureName},
		Unsupported: []cloudapi.Feature{cloudapi.FeatureListenerNames, "quic"},
	}.Validate()
	require.Error(t, err)
	for _, want := range []string{`NotKept: "udp" is not one of`, `NotKept: "name" is listed twice`, `Unsupported: "listener-names" is not one of`, `Unsupported: "quic" is not one of`} {
		assert.ErrorContains(t, err, want)
	}
	require.NoError(t, cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureProxyProtocol}}.Validate())
	err = cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureHealthCheck, cloudapi.FeatureHealthCheck}}.Validate()
	assert.ErrorContains(t, err, `PerListener: "udp" is not one of`)
	assert.ErrorContains(t, err, `PerListener: "health-check" is listed twice`)
	err = cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureProxyProtocol}, PerListener: []cloudapi.Feature{cloudapi.FeatureProxyProtocol}}.Validate()
	assert.ErrorContains(t, err, `"proxy-protocol" is both unsupported and kept per listener`)
	assert.ErrorContains(t, cloudapi.LoadBalancerShape{HealthCheckUnit: -time.Second}.Validate(), "HealthCheckUnit -1s is negative")
}

func TestLoadBalancerShapeComparable(t *testing.T) {
	desired := cloudapi.LoadBalancerSpec{
		Name:        "web",
		Listeners:   []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
		HealthCheck: &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1, HealthyThreshold: 2, UnhealthyThreshold: 3},
		IPFamilies:  []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6},
	}
	reported := desired.Clone()
	reported.Name, reported.Listeners[0].Name, reported.HealthCheck.HealthyThreshold, reported.IPFamilies = "", "", 0, nil
	before := reported.Clone()

	everything := cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureName, cloudapi.FeatureListenerNames, cloudapi.FeatureHealthyThreshold, cloudapi.FeatureIPFamilies}}
	assert.True(t, cloudapi.DiffLoadBalancer(everything.Comparable(reported, desired), desired).Empty())
	assert.Equal(t, before, reported, "current is not changed")

	c := cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerShape{}.Comparable(reported, desired), desired)
	assert.True(t, c.Name && c.HealthCheck && c.IPFamilies && len(c.UpdateListeners) == 1, "a shape that keeps everything compares everything: %+v", c)

	// What is kept is still compared: a changed target port or unhealthy threshold shows.
	changed := reported.Clone()
	changed.Listeners[0].TargetPort, changed.HealthCheck.UnhealthyThreshold = 30081, 5
	c = cloudapi.DiffLoadBalancer(everything.Comparable(changed, desired), desired)
	assert.True(t, c.HealthCheck && len(c.UpdateListeners) == 1, "%+v", c)
}

func TestLoadBalancerShapeUsesAndCheck(t *testing.T) {
	all := cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{
		cloudapi.FeatureIPv6, cloudapi.FeatureUDP, cloudapi.FeatureSCTP, cloudapi.FeatureTLS, cloudapi.FeatureHTTP, cloudapi.FeatureHTTPS,
		cloudapi.FeatureSourceRanges, cloudapi.FeatureProxyProtocol, cloudapi.FeatureInternal, cloudapi.FeatureRequestedIPs, cloudapi.FeatureSessionAffinity,
		cloudapi.FeatureCookieAffinity,
	}}
	plain := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}}
	assert.Empty(t, all.Uses(plain))
	require.NoError(t, all.Check(cloudapi.OpCreateLoadBalancer, "", plain))
	listener := func(p cloudapi.Protocol, app cloudapi.AppProtocol, certs ...string) func(*cloudapi.LoadBalancerSpec) {
		return func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners = append(s.Listeners, cloudapi.Listener{Protocol: p, Port: 443, TargetPort: 30443, AppProtocol: app, Certificates: certs})
		}
	}
	for f, tweak := range map[cloudapi.Feature]func(*cloudapi.LoadBalancerSpec){
		cloudapi.FeatureIPv6:          func(s *cloudapi.LoadBalancerSpec) { s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6} },
		cloudapi.FeatureUDP:           listener(cloudapi.ProtocolUDP, ""),
		cloudapi.FeatureSCTP:          listener(cloudapi.ProtocolSCTP, ""),
		cloudapi.FeatureTLS:           listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolTLS, "cert-a"),
		cloudapi.FeatureHTTP:          listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolHTTP),
		cloudapi.FeatureHTTPS:         listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolHTTPS, "cert-a"),
		cloudapi.FeatureSourceRanges:  func(s *cloudapi.LoadBalancerSpec) { s.SourceRanges = []string{"10.0.0.0/8"} },
		cloudapi.FeatureProxyProtocol: func(s *cloudapi.LoadBalancerSpec) { s.ProxyProtocol = true },
		cloudapi.FeatureInternal:      func(s *cloudapi.LoadBalancerSpec) { s.Internal = true },
		cloudapi.FeatureRequestedIPs:  func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"192.0.2.1"} },
		cloudapi.FeatureSessionAffinity: func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, time.Hour
		},
		cloudapi.FeatureCookieAffinity: func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTP // what a cookie needs, on a cloud without HTTP too
			s.SessionAffinity, s.SessionAffinityTimeout, s.SessionAffinityCookieName = cloudapi.SessionAffinityCookie, 5*time.Minute, "lb-sticky"
		},
	} {
		spec := plain.Clone()
		tweak(&spec)
		if f == cloudapi.FeatureCookieAffinity {
			require.NoError(t, spec.Validate())
			assert.Equal(t, []cloudapi.Feature{cloudapi.FeatureHTTP, f}, all.Uses(spec))
			only := cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureCookieAffinity}}
			assert.Equal(t, []cloudapi.Feature{f}, only.Uses(spec), "cookie stickiness alone")
			assert.Empty(t, cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureSessionAffinity}}.Uses(spec),
				"a cloud without client-IP stickiness may have cookie stickiness")
			require.ErrorIs(t, only.Check(cloudapi.OpCreateLoadBalancer, "", spec), cloudapi.ErrInvalidRequest)
			assert.Empty(t, cloudapi.LoadBalancerShape{}.Uses(spec), "a shape that supports everything")
			continue
		}
		assert.Equal(t, []cloudapi.Feature{f}, all.Uses(spec), "feature %s", f)
		err := all.Check(cloudapi.OpUpdateLoadBalancer, "lb-1", spec)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "feature %s", f)
		assert.ErrorContains(t, err, string(f))
		assert.Empty(t, cloudapi.LoadBalancerShape{}.Uses(spec), "a shape that supports everything")
	}
}

func TestLoadBalancerSpecValidate(t *testing.T) {
	ok := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443,
		AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: []string{"c1"}}}, Targets: []string{"i-1"}}
	require.NoError(t, ok.Validate())
	bad := ok.Clone()
	bad.Name = ""
	bad.Listeners = append(bad.Listeners, cloudapi.Listener{Protocol: cloudapi.ProtocolUDP, Port: 443, TargetPort: 0, AppProtocol: cloudapi.AppProtocolHTTP},
		cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 1})
	bad.Targets = append(bad.Targets, "i-1")
	bad.HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Path: "healthz"}
	bad.SourceRanges, bad.IPFamilies, bad.RequestedIPs = []string{"10.0.0.0/33"}, []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv4}, []string{"x"}
	bad.SessionAffinity = cloudapi.SessionAffinityClientIP
	err := bad.Validate()
	for _, want := range []string{"name: required", "target port 0", "application protocol HTTP on a UDP listener", "a second listener for TCP/443",
		`"i-1" is listed twice`, "needs a path starting with /", `"10.0.0.0/33" is not a CIDR`, "IPv4 is listed twice", `"x" is not an IP`, "needs a timeout"} {
		assert.ErrorContains(t, err, want)
	}
	err = cloudapi.LoadBalancerShape{}.Check(cloudapi.OpCreateLoadBalancer, "", bad)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "Check refuses what Validate refuses")
}

func TestLoadBalancerSpecValidateCookieAffinity(t *testing.T) {
	ok := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{
		{Protocol: cloudapi.ProtocolTCP, Port: 22, TargetPort: 30022},
		{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080, AppProtocol: cloudapi.AppProtocolHTTP}},
		SessionAffinity: cloudapi.SessionAffinityCookie, SessionAffinityTimeout: 5 * time.Minute, SessionAffinityCookieName: "lb-sticky"}
	require.NoError(t, ok.Validate())
	for _, tt := range []struct {
		name  string
		tweak func(*cloudapi.LoadBalancerSpec)
		want  string
	}{
		{"no lifetime", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityTimeout = 0 }, "session affinity Cookie needs a timeout"},
		{"no cookie name", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityCookieName = "" }, `"" is not a cookie name`},
		{"a separator in the name", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityCookieName = "lb;sticky" }, `"lb;sticky" is not a cookie name`},
		{"a space in the name", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityCookieName = "lb sticky" }, "is not a cookie name"},
		{"no HTTP listener", func(s *cloudapi.LoadBalancerSpec) { s.Listeners = s.Listeners[:1] }, "Cookie needs a listener of AppProtocol HTTP or HTTPS"},
		{"a cookie name with ClientIP", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity = cloudapi.SessionAffinityClientIP }, `"lb-sticky" without session affinity Cookie`},
		{"a cookie name without affinity", func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityNone, 0
		}, `"lb-sticky" without session affinity Cookie`},
		{"an undefined kind", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity = "cookie" }, `"cookie" is not ClientIP, Cookie or empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := ok.Clone()
			tt.tweak(&spec)
			assert.ErrorContains(t, spec.Validate(), tt.want)
			require.ErrorIs(t, cloudapi.LoadBalancerShape{}.Check(cloudapi.OpCreateLoadBalancer, "", spec), cloudapi.ErrInvalidRequest)
		})
	}
}

func TestPageNumbers(t *testing.T) {
	for token, want := range map[string]int{"": 1, "2": 2, "17": 17} {
		n, err := cloudapi.PageNumber(cloudapi.OpListInstances, token)
		require.NoError(t, err)
		assert.Equal(t, want, n)
	}
	for _, token := range []string{"1", "0", "-3", "02", "x", "2x"} {
		_, err := cloudapi.PageNumber(cloudapi.OpListInstances, token)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "token %q", token)
	}
	assert.Equal(t, "3", cloudapi.PageToken(2, 3))
	assert.Empty(t, cloudapi.PageToken(3, 0), "the last page")
	assert.Empty(t, cloudapi.PageToken(3, 3), "no page after")
	n, err := cloudapi.PageNumber(cloudapi.OpListInstances, cloudapi.PageToken(1, 2))
	require.NoError(t, err)
	assert.Equal(t, 2, n, "round trip")
}

func TestPageNumberRequest(t *testing.T) {
	tags := map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagServiceName: "default/web"}
	selector, err := cloudapi.LabelSelector(tags, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts cloudapi.ListOptions
		want cloudapi.PageRequest
	}{
		{"first page, the most a page holds", cloudapi.ListOptions{}, cloudapi.PageRequest{Page: 1, PerPage: 50}},
		{"a smaller page asked for", cloudapi.ListOptions{PageSize: 7, PageToken: "3"}, cloudapi.PageRequest{Page: 3, PerPage: 7}},
		{"a larger page is capped", cloudapi.ListOptions{PageSize: 500}, cloudapi.PageRequest{Page: 1, PerPage: 50}},
		{"a negative size is the most", cloudapi.ListOptions{PageSize: -1}, cloudapi.PageRequest{Page: 1, PerPage: 50}},
		{"tags as the rules' label selector", cloudapi.ListOptions{Tags: tags}, cloudapi.PageRequest{Page: 1, PerPage: 50, Selector: selector}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cloudapi.PageNumberRequest(cloudapi.OpListInstances, tc.opts, cloudapi.HetznerLabelRules, 50)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err = cloudapi.PageNumberRequest(cloudapi.OpListInstances, cloudapi.ListOptions{PageToken: "x"}, cloudapi.HetznerLabelRules, 50)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	_, err = cloudapi.PageNumberRequest(cloudapi.OpListInstances, cloudapi.ListOptions{Tags: map[string]string{"k": strings.Repeat("v", 1000)}}, cloudapi.HetznerLabelRules, 50)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "a tag the labels cannot carry")
}

func TestNumericID(t *testing.T) {
	for id, want := range map[string]int64{"1": 1, "42": 42, "9223372036854775807": 1<<63 - 1} {
		n, ok := cloudapi.NumericID(id)
		assert.True(t, ok, id)
		assert.Equal(t, want, n, id)
	}
	for _, id := range []string{"", "0", "-1", "+1", "01", " 1", "1 ", "bm-1", "9223372036854775808", "i-0abc"} {
		_, ok := cloudapi.NumericID(id)
		assert.False(t, ok, "%q", id)
	}
	ids := []string{"lb-a", "10", "9", "100", "abc", "2"}
	slices.SortFunc(ids, cloudapi.CompareNumericIDs)
	assert.Equal(t, []string{"2", "9", "10", "100", "abc", "lb-a"}, ids, "numbers as numbers, then the rest byte-wise")
	assert.Zero(t, cloudapi.CompareNumericIDs("42", "42"))
}

func TestSettingsAsTags(t *testing.T) {
	spec := cloudapi.LoadBalancerSpec{Tags: map[string]string{cloudapi.TagCluster: "prod"}, SettingValues: map[string]string{"type": "lb21", "location": "fsn1"}}
	tags := cloudapi.TagsWithSettingValues(spec)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagSettingPrefix + "type": "lb21", cloudapi.TagSettingPrefix + "location": "fsn1"}, tags)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "prod"}, spec.Tags, "spec is not changed")
	assert.Equal(t, map[string]string{cloudapi.TagSettingPrefix + "type": "lb11"}, cloudapi.TagsWithSettingValues(cloudapi.LoadBalancerSpec{SettingValues: map[string]string{"type": "lb11"}}))

	tags[cloudapi.TagSettingPrefix+"gone"] = "x"
	rest, settings := cloudapi.SettingValuesFromTags(tags, map[string]string{"type": "lb31", "location": "fsn1", "algorithm": "round_robin"})
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "prod"}, rest)
	assert.Equal(t, map[string]string{"type": "lb31", "location": "fsn1"}, settings,
		"the settings asked for, as the cloud has them; one the cloud reports no value of is dropped")
	assert.Contains(t, tags, cloudapi.TagSettingPrefix+"type", "tags is not changed")
	rest, settings = cloudapi.SettingValuesFromTags(map[string]string{"a": "b"}, map[string]string{"type": "lb11"})
	assert.Equal(t, map[string]string{"a": "b"}, rest)
	assert.Nil(t, settings, "none asked for")
}

func TestLoadBalancerShapeHealthCheckUnit(t *testing.T) {
	shape := cloudapi.LoadBalancerShape{HealthCheckUnit: time.Second}
	spec := cloudapi.LoadBalancerSpec{Name: "web", HealthCheck: &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1, Interval: 5 * time.Second, Timeout: 2 * time.Second}}
	require.NoError(t, shape.Check(cloudapi.OpCreateLoadBalancer, "", spec))
	for _, tweak := range []func(*cloudapi.HealthCheck){
		func(hc *cloudapi.HealthCheck) { hc.Interval = 2500 * time.Millisecond },
		func(hc *cloudapi.HealthCheck) { hc.Timeout = time.Second + time.Nanosecond },
	} {
		odd := spec.Clone()
		tweak(odd.HealthCheck)
		err := shape.Check(cloudapi.OpCreateLoadBalancer, "", odd)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
		assert.ErrorContains(t, err, "the cloud keeps whole multiples of 1s")
		require.NoError(t, cloudapi.LoadBalancerShape{}.Check(cloudapi.OpCreateLoadBalancer, "", odd), "no unit: any duration")
	}
}

// TestLoadBalancerShapeLimits: health check ranges, exclusive features, IPv6 only second
// and one certificate per listener are declared, validated, and refused by Check; a health
// check is fitted within the ranges and the unit.
func TestLoadBalancerShapeLimits(t *testing.T) {
	shape := cloudapi.LoadBalancerShape{
		Unsupported:     []cloudapi.Feature{cloudapi.FeatureIPv6First},
		HealthCheckUnit: time.Second,
		HealthCheckRanges: cloudapi.HealthCheckRanges{
			Interval: cloudapi.DurationRange{Min: 3 * time.Second, Max: time.Minute}, Timeout: cloudapi.DurationRange{Min: 3 * time.Second, Max: 30 * time.Second},
			HealthyThreshold: cloudapi.CountRange{Min: 2, Max: 10}, UnhealthyThreshold: cloudapi.CountRange{Min: 2, Max: 10},
		},
		Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}},
		MaxCertificates: 1,
	}
	require.NoError(t, shape.Validate())
	hc := cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1, Interval: 5 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3}
	assert.Equal(t, cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1, Interval: 5 * time.Second, Timeout: 3 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3},
		shape.FitHealthCheck(hc), "each value within its range")
	assert.Equal(t, 4*time.Second, cloudapi.LoadBalancerShape{HealthCheckUnit: 2 * time.Second, HealthCheckRanges: cloudapi.HealthCheckRanges{Timeout: cloudapi.DurationRange{Min: 4 * time.Second}}}.
		FitHealthCheck(cloudapi.HealthCheck{Interval: 3 * time.Second, Timeout: time.Second}).Interval, "rounded up to the unit, and not shorter than the timeout")
	assert.Equal(t, hc, cloudapi.LoadBalancerShape{}.FitHealthCheck(hc), "no ranges: as it is")

	base := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443,
		AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: []string{"c1"}}}}
	fitted := shape.FitHealthCheck(hc)
	base.HealthCheck = &fitted
	require.NoError(t, shape.Check(cloudapi.OpCreateLoadBalancer, "", base))
	dual := base.Clone()
	dual.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
	require.NoError(t, shape.Check(cloudapi.OpCreateLoadBalancer, "", dual), "IPv6 second is supported")
	assert.Empty(t, shape.Excluded(dual))
	for name, tc := range map[string]struct {
		tweak func(*cloudapi.LoadBalancerSpec)
		want  string
	}{
		"IPv6 first": {func(s *cloudapi.LoadBalancerSpec) { s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4} }, "do not support [ipv6-first]"},
		"IPv6 only":  {func(s *cloudapi.LoadBalancerSpec) { s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6} }, "do not support [ipv6-first]"},
		"internal and dual-stack": {func(s *cloudapi.LoadBalancerSpec) {
			s.Internal, s.IPFamilies = true, []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
		}, "cannot combine internal with dual-stack"},
		"a timeout below the range":   {func(s *cloudapi.LoadBalancerSpec) { s.HealthCheck.Timeout = 2 * time.Second }, "timeout 2s is out of the cloud's range (from 3s to 30s)"},
		"an interval above the range": {func(s *cloudapi.LoadBalancerSpec) { s.HealthCheck.Interval = 2 * time.Minute }, "interval 2m0s is out of the cloud's range (from 3s to 1m0s)"},
		"a threshold above the range": {func(s *cloudapi.LoadBalancerSpec) { s.HealthCheck.UnhealthyThreshold = 11 }, "unhealthy threshold 11 is out of the cloud's range (from 2 to 10)"},
		"a listener's own health check out of range": {func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1, Interval: 5 * time.Second, Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2}
		}, "health check of listener TCP/443: timeout 1s is out of the cloud's range"},
		"two certificates": {func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Certificates = []string{"c1", "c2"} }, "2 certificates, the cloud's listeners take at most 1"},
	} {
		spec := base.Clone()
		tc.tweak(&spec)
		err := shape.Check(cloudapi.OpUpdateLoadBalancer, "lb-1", spec)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	assert.Equal(t, [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}},
		shape.Excluded(cloudapi.LoadBalancerSpec{Internal: true, IPFamilies: []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4}}))

	err := cloudapi.LoadBalancerShape{
		Unsupported:     []cloudapi.Feature{cloudapi.FeatureInternal},
		HealthCheckUnit: time.Second,
		HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 5 * time.Second, Max: 4 * time.Second},
			Timeout: cloudapi.DurationRange{Min: 1500 * time.Millisecond}, HealthyThreshold: cloudapi.CountRange{Min: 5, Max: 2}},
		Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}, {cloudapi.FeatureUDP, cloudapi.FeatureUDP}, {"quic", cloudapi.FeatureUDP}, {cloudapi.FeatureTLS, cloudapi.FeatureUDP}, {cloudapi.FeatureUDP, cloudapi.FeatureTLS}},
		MaxCertificates: -1,
	}.Validate()
	for _, want := range []string{"HealthCheckRanges.Interval: Min 5s is more than Max 4s", "HealthCheckRanges.Timeout at least 1.5s: a bound is not a whole multiple of HealthCheckUnit 1s",
		"HealthCheckRanges.HealthyThreshold: Min 5 and Max 2", `Exclusive: [internal dual-stack] names a feature the shape declares unsupported`, `Exclusive: "udp" excludes itself`,
		`Exclusive: "quic" is not one of`, "Exclusive: [udp tls] is listed twice", "MaxCertificates -1 is negative"} {
		assert.ErrorContains(t, err, want)
	}
	assert.ErrorContains(t, cloudapi.LoadBalancerShape{HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Max: 2 * time.Second}, Timeout: cloudapi.DurationRange{Min: 3 * time.Second}}}.Validate(),
		"the shortest timeout 3s is longer than the longest interval 2s: no health check fits")
}
