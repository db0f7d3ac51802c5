package cloudapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func baseSpec() cloudapi.LoadBalancerSpec {
	return cloudapi.LoadBalancerSpec{
		Name: "a1b2",
		Listeners: []cloudapi.Listener{
			{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
			{Name: "dns", Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053},
		},
		Targets:       []string{"i-2", "i-1", "i-3"},
		HealthCheck:   &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz", Interval: 5 * time.Second},
		SourceRanges:  []string{"10.0.0.0/8", "192.168.0.0/16"},
		SettingValues: map[string]string{"size": "small", "algorithm": "round-robin"},
		Tags:          map[string]string{cloudapi.TagCluster: "c1"},
	}
}

func TestDiffLoadBalancer(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*cloudapi.LoadBalancerSpec)
		want  cloudapi.LoadBalancerChanges
	}{
		{name: "identical", tweak: func(*cloudapi.LoadBalancerSpec) {}},
		{name: "same sets in another order", tweak: func(s *cloudapi.LoadBalancerSpec) {
			s.Targets = []string{"i-3", "i-1", "i-2", "i-1"}
			s.SourceRanges = []string{"192.168.0.0/16", "10.0.0.0/8"}
			s.Listeners = []cloudapi.Listener{s.Listeners[1], s.Listeners[0]}
			hc := *s.HealthCheck
			s.HealthCheck = &hc
		}},
		{name: "empty families mean IPv4", tweak: func(s *cloudapi.LoadBalancerSpec) {
			s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4}
		}},
		{
			name:  "one target added, one removed",
			tweak: func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-1", "i-2", "i-4"} },
			want:  cloudapi.LoadBalancerChanges{AddTargets: []string{"i-4"}, RemoveTargets: []string{"i-3"}},
		},
		{
			name: "listener changed, added and removed",
			tweak: func(s *cloudapi.LoadBalancerSpec) {
				s.Listeners = []cloudapi.Listener{
					{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 31000},
					{Name: "dns", Protocol: cloudapi.ProtocolTCP, Port: 53, TargetPort: 30053},
				}
			},
			want: cloudapi.LoadBalancerChanges{
				AddListeners:    []cloudapi.Listener{{Name: "dns", Protocol: cloudapi.ProtocolTCP, Port: 53, TargetPort: 30053}},
				UpdateListeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 31000}},
				RemoveListeners: []cloudapi.ListenerKey{{Protocol: cloudapi.ProtocolUDP, Port: 53}},
			},
		},
		{
			name: "settings",
			tweak: func(s *cloudapi.LoadBalancerSpec) {
				s.Name = "renamed"
				s.Internal = true
				s.HealthCheck = nil
				s.SourceRanges = nil
				s.ProxyProtocol = true
				s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4}
				s.RequestedIPs = []string{"203.0.113.7"}
				s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, time.Hour
				s.Tags = map[string]string{cloudapi.TagCluster: "c1", "team": "web"}
			},
			want: cloudapi.LoadBalancerChanges{
				Name: true, Internal: true, HealthCheck: true, SourceRanges: true, ProxyProtocol: true,
				IPFamilies: true, RequestedIPs: true, SessionAffinity: true, Tags: true,
			},
		},
		{
			name: "adapter settings changed, added and removed",
			tweak: func(s *cloudapi.LoadBalancerSpec) {
				s.SettingValues = map[string]string{"size": "large", "type": "lb11"}
			},
			want: cloudapi.LoadBalancerChanges{SettingValues: []string{"algorithm", "size", "type"}},
		},
		{
			name: "the same adapter settings in a new map",
			tweak: func(s *cloudapi.LoadBalancerSpec) {
				s.SettingValues = map[string]string{"algorithm": "round-robin", "size": "small"}
			},
		},
		{
			name:  "no adapter settings",
			tweak: func(s *cloudapi.LoadBalancerSpec) { s.SettingValues = nil },
			want:  cloudapi.LoadBalancerChanges{SettingValues: []string{"algorithm", "size"}},
		},
		{
			name:  "only the session affinity timeout",
			tweak: func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityTimeout = time.Minute },
			want:  cloudapi.LoadBalancerChanges{SessionAffinity: true},
		},
		{
			name:  "only the session affinity's cookie name",
			tweak: func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityCookieName = "other" },
			want:  cloudapi.LoadBalancerChanges{SessionAffinity: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := baseSpec()
			tt.tweak(&desired)
			got := cloudapi.DiffLoadBalancer(baseSpec(), desired)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want.Empty(), got.Empty())
		})
	}
}

func TestDiffLoadBalancerFromNothing(t *testing.T) {
	got := cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{}, baseSpec())
	require.False(t, got.Empty())
	assert.Equal(t, []string{"i-1", "i-2", "i-3"}, got.AddTargets, "sorted for stable output")
	assert.Equal(t, cloudapi.ProtocolTCP, got.AddListeners[0].Protocol, "listeners sorted by protocol, then port")
	assert.Empty(t, got.RemoveTargets)
}

func TestLoadBalancerCloneIsDeep(t *testing.T) {
	lb := cloudapi.LoadBalancer{ID: "lb-1", Spec: baseSpec(), Addresses: []string{"203.0.113.1"}}
	c := lb.Clone()
	c.Spec.Listeners[0].Port = 1
	c.Spec.Targets[0] = "x"
	c.Spec.HealthCheck.Port = 1
	c.Spec.SourceRanges[0] = "x"
	c.Spec.Tags["x"] = "y"
	c.Spec.SettingValues["size"] = "large"
	c.Addresses[0] = "x"
	assert.Equal(t, cloudapi.LoadBalancer{ID: "lb-1", Spec: baseSpec(), Addresses: []string{"203.0.113.1"}}, lb)
}

func TestInstanceAndRouteCloneAreDeep(t *testing.T) {
	in := cloudapi.Instance{ID: "i-1", Addresses: []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}}, Tags: map[string]string{"a": "b"}}
	c := in.Clone()
	c.Addresses[0].Address = "x"
	c.Tags["a"] = "x"
	assert.Equal(t, "10.0.0.1", in.Addresses[0].Address)
	assert.Equal(t, "b", in.Tags["a"])

	r := cloudapi.Route{ID: "rt-1", RouteSpec: cloudapi.RouteSpec{Tags: map[string]string{"a": "b"}}}
	rc := r.Clone()
	rc.Tags["a"] = "x"
	assert.Equal(t, "b", r.Tags["a"])
}

func TestValidEnums(t *testing.T) {
	assert.True(t, cloudapi.ProtocolSCTP.Valid())
	assert.False(t, cloudapi.Protocol("tcp").Valid(), "protocols are upper case, as in Kubernetes")
	assert.True(t, cloudapi.IPv6.Valid())
	assert.False(t, cloudapi.IPFamily("IPv5").Valid())
	assert.True(t, cloudapi.HealthCheckHTTPS.Valid())
	assert.True(t, cloudapi.SessionAffinityNone.Valid())
	assert.False(t, cloudapi.SessionAffinity("None").Valid(), "no affinity is the empty value")
	assert.True(t, cloudapi.SessionAffinityCookie.Valid())
	assert.False(t, cloudapi.HealthCheckProtocol("UDP").Valid())
	assert.True(t, cloudapi.InstanceStopped.Valid())
	assert.False(t, cloudapi.InstanceState("hibernated").Valid())
	assert.True(t, cloudapi.AddressInternalDNS.Valid())
	assert.False(t, cloudapi.AddressType("Internal").Valid())
}

func TestDiffLoadBalancerNilAndEmptySettings(t *testing.T) {
	a, b := baseSpec(), baseSpec()
	a.SettingValues, b.SettingValues = nil, map[string]string{}
	assert.True(t, cloudapi.DiffLoadBalancer(a, b).Empty(), "no settings, nil or empty, is one state: a converged load balancer costs no write")
}
