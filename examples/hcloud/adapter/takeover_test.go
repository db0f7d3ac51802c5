package adapter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

// hetznerMade is a load balancer as Hetzner's own CCM made one for the Service with UID
// uid, to seed the mock with: named "a" and the UID without dashes, labelled
// hcloud-ccm/service-uid, lb11 in fsn1, the server as target, a TCP service from port to
// nodePort whose health check is TCP on the node port with the API's defaults.
func hetznerMade(uid string, server int64, port, nodePort int) hcloudmock.LoadBalancerSeed {
	return hcloudmock.LoadBalancerSeed{LoadBalancerCreateRequest: schema.LoadBalancerCreateRequest{
		Name: "a" + strings.ReplaceAll(uid, "-", ""), LoadBalancerType: schema.IDOrName{Name: "lb11"}, Location: hcloud.Ptr("fsn1"),
		Labels:  &map[string]string{adapter.LabelServiceUID: uid},
		Targets: []schema.LoadBalancerCreateRequestTarget{{Type: "server", Server: &schema.LoadBalancerCreateRequestTargetServer{ID: server}}},
		Services: []schema.LoadBalancerCreateRequestService{{Protocol: "tcp", ListenPort: hcloud.Ptr(port), DestinationPort: hcloud.Ptr(nodePort),
			Proxyprotocol: hcloud.Ptr(false), HealthCheck: &schema.LoadBalancerCreateRequestServiceHealthCheck{Protocol: "tcp", Port: hcloud.Ptr(nodePort)}}},
	}}
}

// TestTakeoverFromHetznersCCM: a load balancer made the way Hetzner's own CCM makes one
// (named "a" and the Service's UID without dashes, labelled hcloud-ccm/service-uid, a TCP
// service whose health check is TCP on the node port with the API's defaults) is taken
// over by its Service, which has no annotation: no second load balancer, the addresses
// and the health check kept; the next sync writes nothing.
func TestTakeoverFromHetznersCCM(t *testing.T) {
	const uid = "5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers:       []schema.Server{{ID: 100, Name: "node-0"}},
		LoadBalancers: []hcloudmock.LoadBalancerSeed{hetznerMade(uid, 100, 80, 30080)}}
	m, url := newMock(t, cfg, nil)
	before := m.Inventory().LoadBalancers[0]

	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), clock)
	lbs, _ := p.LoadBalancer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	st, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)

	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 1, "taken over, none made")
	lb := inv.LoadBalancers[0]
	assert.Equal(t, before.ID, lb.ID)
	var ips []string
	for _, in := range st.Ingress {
		ips = append(ips, in.IP)
	}
	assert.ElementsMatch(t, []string{before.PublicNet.IPv4.IP, before.PublicNet.IPv6.IP}, ips, "the addresses kept")
	assert.Equal(t, uid, lb.Labels[adapter.LabelServiceUID], "the earlier CCM's label stays")
	assert.Equal(t, uid, lb.Labels["ccmkit.io/service-uid"])
	require.Len(t, lb.Services, 1)
	assert.Equal(t, before.Services[0].HealthCheck, lb.Services[0].HealthCheck, "the health check kept: TCP on the node port, the API's defaults")
	assert.Equal(t, "tcp", lb.Services[0].HealthCheck.Protocol)
	assert.Equal(t, 30080, lb.Services[0].HealthCheck.Port)

	clock.Step(time.Hour)
	calls := m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	assert.Zero(t, m.Calls().Sub(calls).Writes(), "converged: %v", m.Calls().Sub(calls))
}

// TestHetznerDefaultsForLegacyKeys: a Service valid under Hetzner's own CCM is valid here:
// a legacy health-check-timeout of 15s alone is within that CCM's (the API's) default
// interval of 15s, which it reads in place of ccmkit's 10s.
func TestHetznerDefaultsForLegacyKeys(t *testing.T) {
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}}
	m, url := newMock(t, cfg, nil)
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), nil)
	lbs, _ := p.LoadBalancer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web",
		Annotations: map[string]string{adapter.LegacyPrefix + "health-check-timeout": "15s"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	lb := m.Inventory().LoadBalancers[0]
	require.Len(t, lb.Services, 1)
	assert.Equal(t, 15, lb.Services[0].HealthCheck.Interval, "seconds")
	assert.Equal(t, 15, lb.Services[0].HealthCheck.Timeout)
	assert.Equal(t, 3, lb.Services[0].HealthCheck.Retries)
}

// TestTakeoverKeepsEachPortsHealthCheck: a load balancer Hetzner's CCM made for a Service
// of two ports has a health check per port, each on its own node port (and one HTTP here),
// so none is common: the takeover keeps each as it is, and neither a sync nor a node sync
// writes anything afterwards.
func TestTakeoverKeepsEachPortsHealthCheck(t *testing.T) {
	const uid = "6a1d8c7f-2e3b-4d4c-8f9a-1b2c3d4e5f60"
	seed := hetznerMade(uid, 100, 80, 30080)
	seed.Services = append(seed.Services, schema.LoadBalancerCreateRequestService{Protocol: "tcp", ListenPort: hcloud.Ptr(443), DestinationPort: hcloud.Ptr(30443),
		Proxyprotocol: hcloud.Ptr(false), HealthCheck: &schema.LoadBalancerCreateRequestServiceHealthCheck{Protocol: "http", Port: hcloud.Ptr(30443),
			HTTP: &schema.LoadBalancerCreateRequestServiceHealthCheckHTTP{Path: hcloud.Ptr("/ready")}}})
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}, LoadBalancers: []hcloudmock.LoadBalancerSeed{seed}}
	m, url := newMock(t, cfg, nil)
	before := m.Inventory().LoadBalancers[0]
	checks := func(lb schema.LoadBalancer) map[int]schema.LoadBalancerServiceHealthCheck {
		out := map[int]schema.LoadBalancerServiceHealthCheck{}
		for _, s := range lb.Services {
			out[s.ListenPort] = *s.HealthCheck
		}
		return out
	}
	require.Len(t, checks(before), 2)
	require.NotEqual(t, checks(before)[80], checks(before)[443])

	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), clock)
	lbs, _ := p.LoadBalancer()
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}, {Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}}}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, nodes)
	require.NoError(t, err)
	lbsNow := m.Inventory().LoadBalancers
	require.Len(t, lbsNow, 1, "taken over, none made")
	assert.Equal(t, checks(before), checks(lbsNow[0]), "each port's health check as Hetzner's CCM left it")

	for i := range 2 {
		clock.Step(time.Hour)
		calls := m.Calls()
		_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, nodes)
		require.NoError(t, err)
		require.NoError(t, lbs.UpdateLoadBalancer(t.Context(), "k8s", svc, nodes))
		assert.Zero(t, m.Calls().Sub(calls).Writes(), "sync %d: converged: %v", i, m.Calls().Sub(calls))
	}
	assert.Equal(t, checks(before), checks(m.Inventory().LoadBalancers[0]))
}
