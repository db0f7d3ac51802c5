package adapter_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// hetznerProvider is ccmkit's provider over the adapter configured as cfg, as the adapter
// registers it (settings, shape, aliases), with its metrics in reg and clk its clock (nil:
// the real one).
func hetznerProvider(t *testing.T, cfg adapter.Config, reg metrics.KubeRegistry, clk clock.PassiveClock) *provider.Cloud {
	t.Helper()
	opts := adapter.Options()
	opts.Metrics, opts.Clock = reg, clk
	p, err := provider.New(provider.Config{Cluster: provider.ClusterConfig{ID: "prod"}}, adapter.New(cfg, "token", nil), opts)
	require.NoError(t, err)
	return p
}

// TestServiceOverHetzner runs ccmkit's load balancers over the adapter and the mock: a
// Service asking for a type, HTTP and HTTPS gets one load balancer with both addresses; a
// converged Service costs no write, on the sync and the node sync; what Hetzner lacks is
// refused before any write; deleting the Service deletes the load balancer.
func TestServiceOverHetzner(t *testing.T) {
	var cfg hcloudmock.Config
	var nodes []*corev1.Node
	for i := range 3 {
		id := int64(100 + i)
		cfg.Servers = append(cfg.Servers, schema.Server{ID: id, Name: fmt.Sprintf("node-%d", i)})
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("hcloud://%d", id)}})
	}
	cfg.Certificates = []schema.Certificate{{ID: 7, Name: "web"}}
	cfg.RateLimit = hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20}
	m, url := newMock(t, cfg, nil)
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), clock)
	lbs, ok := p.LoadBalancer()
	require.True(t, ok)

	https := "https"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Annotations: map[string]string{
			loadbalancer.DefaultAnnotationPrefix + adapter.SettingType:                    "LB21",
			loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationTLSCertificates: "7",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
			{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443, AppProtocol: &https},
		}},
	}
	st, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, nodes)
	require.NoError(t, err)
	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 1)
	lb := inv.LoadBalancers[0]
	assert.Equal(t, "lb21", lb.LoadBalancerType.Name)
	assert.Equal(t, "fsn1", lb.Location.Name)
	assert.Len(t, lb.Targets, 3)
	require.Len(t, lb.Services, 2)
	require.Len(t, st.Ingress, 2, "IPv4 and IPv6: every Hetzner load balancer has both")
	assert.Equal(t, lb.PublicNet.IPv4.IP, st.Ingress[0].IP)

	for range 3 {
		clock.Step(time.Hour) // every sync reads afresh
		before := m.Calls()
		_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, nodes)
		require.NoError(t, err)
		require.NoError(t, lbs.UpdateLoadBalancer(t.Context(), "k8s", svc, nodes))
		assert.Zero(t, m.Calls().Sub(before).Writes(), "a converged load balancer costs no write: %v", m.Calls().Sub(before))
	}

	before := m.Calls()
	require.NoError(t, lbs.UpdateLoadBalancer(t.Context(), "k8s", svc, nodes[:2]))
	assert.Equal(t, hcloudmock.Calls{"GET /load_balancers": 1, "POST /load_balancers/{id}/actions/remove_target": 1},
		m.Calls().Sub(before), "a node removed: the list, one remove_target")

	udp := svc.DeepCopy()
	udp.Spec.Ports = append(udp.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
	before = m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", udp, nodes)
	require.ErrorContains(t, err, "do not support UDP listeners (ports 53/UDP)")
	assert.Zero(t, m.Calls().Sub(before).Writes(), "nothing written for a Service asking for what Hetzner lacks")

	require.NoError(t, lbs.EnsureLoadBalancerDeleted(t.Context(), "k8s", svc))
	assert.Empty(t, m.Inventory().LoadBalancers)
}

// TestNodeSyncCostsItsWrites: a node sync over N load balancers is one list of them and
// one add_target (or remove_target) each, no read by ID: each update is based on the
// list's copy (the base the caller read fresh, as the adapter last read it) and answered
// from it with the target changed. The one add_target whose answer is lost (applied, then
// a service_error) is re-based on a read of its own, which finds the target there: it is
// not added twice.
func TestNodeSyncCostsItsWrites(t *testing.T) {
	const n = 20
	var lost atomic.Bool
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}, {ID: 101, Name: "node-1"}}}
	m, url := newMock(t, cfg, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/actions/add_target") || !lost.CompareAndSwap(true, false) {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(httptest.NewRecorder(), r) // applied, its answer lost
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error": {"code": "service_error", "message": "answer lost"}}`))
			go func() { // the retry's backoff
				for !clock.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
				clock.Step(time.Minute)
			}()
		})
	})
	opts := adapter.Options()
	opts.Metrics, opts.Clock = metrics.NewKubeRegistry(), clock
	p, err := provider.New(provider.Config{Cluster: provider.ClusterConfig{ID: "prod"}, CloudAPI: provider.CloudAPIConfig{Unlimited: true}},
		adapter.New(adapter.Config{Endpoint: url, Location: "fsn1"}, "token", nil), opts)
	require.NoError(t, err)
	lbs, _ := p.LoadBalancer()
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://101"}},
	}
	var svcs []*corev1.Service
	for i := range n {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%02d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%02d", i))},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, nodes[:1])
		require.NoError(t, err)
		svcs = append(svcs, svc)
	}
	sync := func(nodes []*corev1.Node) hcloudmock.Calls {
		clock.Step(time.Hour)
		before := m.Calls()
		for _, svc := range svcs {
			require.NoError(t, lbs.UpdateLoadBalancer(t.Context(), "k8s", svc, nodes))
		}
		return m.Calls().Sub(before)
	}

	lost.Store(true)
	assert.Equal(t, hcloudmock.Calls{"GET /load_balancers": 1, "POST /load_balancers/{id}/actions/add_target": n, "GET /load_balancers/{id}": 1},
		sync(nodes), "a node added: one list, one add_target per load balancer; one read, for the one whose answer was lost")
	assert.Equal(t, hcloudmock.Calls{"GET /load_balancers": 1, "POST /load_balancers/{id}/actions/remove_target": n},
		sync(nodes[:1]), "a node removed: one list, one remove_target per load balancer, no read")
	for _, lb := range m.Inventory().LoadBalancers {
		assert.Len(t, lb.Targets, 1, "load balancer %d", lb.ID)
	}
	assert.Equal(t, hcloudmock.Calls{"GET /load_balancers": 1}, sync(nodes[:1]), "converged: the list alone")
}

// TestActionPollsAreCounted: the polls of a write's actions go through ccmkit's client
// like the write itself (cloudapi.Transport): each waits for the rate limiter and is
// counted in extra_requests_total, so the calls ccmkit reports are the calls the project
// pays for.
func TestActionPollsAreCounted(t *testing.T) {
	cfg := hcloudmock.Config{ActionPolls: 1, RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}}
	m, url := newMock(t, cfg, nil)
	reg := metrics.NewKubeRegistry()
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, reg, nil)
	lbs, _ := p.LoadBalancer()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)

	polls := m.Calls()["GET /actions"]
	require.Positive(t, polls, "the create's and the add_service's actions were polled")
	families, err := reg.Gather()
	require.NoError(t, err)
	var counted float64
	for _, f := range families {
		if f.GetName() == "cloudprovider_hcloud_api_extra_requests_total" {
			for _, m := range f.GetMetric() {
				counted += m.GetCounter().GetValue()
			}
		}
	}
	// Each extra request of a call is an action poll, the read back after the writes, or
	// the add_service calls of the create: all sent through the gate.
	creates := m.Calls()["POST /load_balancers/{id}/actions/add_service"] + m.Calls()["GET /load_balancers/{id}"]
	assert.Equal(t, float64(polls+creates), counted, "every request beyond a call's first is counted: %v", m.Calls())
}

// TestLegacyAnnotations: a Service annotated as Hetzner's own CCM's users annotate them
// gets the same load balancer as with ccmkit's annotations, converged at 0 writes; the
// declarations are valid; a certificate name is refused with what to write instead.
func TestLegacyAnnotations(t *testing.T) {
	require.NoError(t, adapter.Aliases.Validate(loadbalancer.DefaultAnnotationPrefix, adapter.Settings))
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}, Certificates: []schema.Certificate{{ID: 7, Name: "web"}}}
	m, url := newMock(t, cfg, nil)
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url}, metrics.NewKubeRegistry(), clock)
	lbs, _ := p.LoadBalancer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Annotations: map[string]string{
		adapter.LegacyPrefix + "location":              "nbg1",
		adapter.LegacyPrefix + "type":                  "lb21",
		adapter.LegacyPrefix + "algorithm-type":        "least_connections",
		adapter.LegacyPrefix + "protocol":              "https",
		adapter.LegacyPrefix + "http-certificates":     "7",
		adapter.LegacyPrefix + "uses-proxyprotocol":    "true",
		adapter.LegacyPrefix + "health-check-protocol": "tcp",
		adapter.LegacyPrefix + "health-check-interval": "15s",
		adapter.LegacyPrefix + "health-check-retries":  "5",
	}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}}}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 1)
	lb := inv.LoadBalancers[0]
	assert.Equal(t, "lb21", lb.LoadBalancerType.Name)
	assert.Equal(t, "nbg1", lb.Location.Name)
	assert.Equal(t, "least_connections", lb.Algorithm.Type)
	require.Len(t, lb.Services, 1)
	s := lb.Services[0]
	assert.Equal(t, "https", s.Protocol)
	assert.True(t, s.Proxyprotocol)
	assert.Equal(t, []int64{7}, s.HTTP.Certificates)
	assert.Equal(t, "tcp", s.HealthCheck.Protocol)
	assert.Equal(t, 15, s.HealthCheck.Interval)
	assert.Equal(t, 5, s.HealthCheck.Retries)

	clock.Step(time.Hour)
	before := m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	assert.Zero(t, m.Calls().Sub(before).Writes(), "converged: %v", m.Calls().Sub(before))

	tls := svc.DeepCopy()
	tls.Annotations[adapter.LegacyPrefix+"protocol"] = "tls"
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", tls, []*corev1.Node{node})
	require.ErrorContains(t, err, "do not support TLS termination", "refused by the shape")
	assert.ErrorContains(t, err, adapter.LegacyPrefix+"protocol", "naming the key the Service has")

	byName := svc.DeepCopy()
	byName.Annotations[adapter.LegacyPrefix+"http-certificates"] = "web"
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", byName, []*corev1.Node{node})
	require.ErrorContains(t, err, `"web" is not a certificate ID`)
}

// TestQuietProjectCalls measures what a quiet cluster of 1,000 and of 5,000 Nodes costs
// against Hetzner's budget of 3,600 requests an hour (one a second): the cloud node
// controller asks every Node's metadata once per status pass (every 5 minutes); the node
// lifecycle controller asks nothing of Ready Nodes; with load balancers converged and no
// Node changing, the service controller asks nothing (no route controller: the cluster's
// network routes are its CNI's). ccmkit answers a status pass from one instance snapshot:
// one paged list of N/50 pages of 50 servers. The requests are counted at the mock.
func TestQuietProjectCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 and 5,000 servers")
	}
	const minutes = 10 // the window of make bench's P1: two status passes
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprintf("%d servers", n), func(t *testing.T) {
			var cfg hcloudmock.Config
			var nodes []*corev1.Node
			for i := range n {
				cfg.Servers = append(cfg.Servers, schema.Server{ID: int64(1000 + i), Name: fmt.Sprintf("node-%04d", i)})
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)},
					Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("hcloud://%d", 1000+i)}})
			}
			cfg.RateLimit = hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20}
			m, url := newMock(t, cfg, nil)
			clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
			p := hetznerProvider(t, adapter.Config{Endpoint: url}, metrics.NewKubeRegistry(), clock)
			v2, ok := p.InstancesV2()
			require.True(t, ok)
			for minute := 0; minute < minutes; minute++ {
				if minute%5 == 0 { // a status pass of the cloud node controller
					for _, node := range nodes {
						_, err := v2.InstanceMetadata(t.Context(), node)
						require.NoError(t, err)
					}
				}
				clock.Step(time.Minute)
			}
			total := 0
			for _, c := range m.Calls() {
				total += c
			}
			perMinute := float64(total) / minutes
			t.Logf("a quiet project of %d servers: %d requests in %d minutes, %.1f a minute (Hetzner's budget: 60 a minute)", n, total, minutes, perMinute)
			assert.Equal(t, hcloudmock.Calls{"GET /servers": minutes / 5 * n / 50}, m.Calls(), "one paged list per status pass")
			assert.LessOrEqual(t, perMinute, 60.0, "within Hetzner's budget of a request a second")
		})
	}
}

// TestReviewedEdges: what a Hetzner user hits beyond the first sync. An IPv4-only Service
// adopts a load balancer made by another CCM (which has an IPv6 address, as every Hetzner
// load balancer does) and keeps its labels; a Service that drops its type annotation keeps
// the type it has (no change back to lb11); a health check interval that is not whole
// seconds is refused before any write (Hetzner would round it and every sync would write
// again); a default location or network zone in loadBalancer.settings is refused at
// startup.
func TestReviewedEdges(t *testing.T) {
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}}
	m, url := newMock(t, cfg, nil)
	sdk := hcloud.NewClient(hcloud.WithEndpoint(url), hcloud.WithToken("t"), hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}))
	made, _, err := sdk.LoadBalancer.Create(t.Context(), hcloud.LoadBalancerCreateOpts{Name: "a1234", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb31"},
		Location: &hcloud.Location{Name: "fsn1"}, Labels: map[string]string{"hcloud-ccm/service-uid": "1234"}})
	require.NoError(t, err)
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), clock)
	lbs, _ := p.LoadBalancer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Annotations: map[string]string{
		loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationLoadBalancerID: strconv.FormatInt(made.LoadBalancer.ID, 10),
	}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	st, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err, "adopting a load balancer with an IPv6 address for an IPv4-only Service")
	require.Len(t, st.Ingress, 2)
	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 1, "adopted, none made")
	lb := inv.LoadBalancers[0]
	assert.Equal(t, "1234", lb.Labels["hcloud-ccm/service-uid"], "the other CCM's label is kept")
	assert.Equal(t, "lb31", lb.LoadBalancerType.Name, "no type asked: the adopted one's is kept")
	assert.Len(t, lb.Services, 1)

	clock.Step(time.Hour)
	before := m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	assert.Zero(t, m.Calls().Sub(before).Writes(), "converged: %v", m.Calls().Sub(before))

	odd := svc.DeepCopy()
	odd.Annotations[loadbalancer.DefaultAnnotationPrefix+loadbalancer.AnnotationHealthCheckInterval] = "2500ms"
	before = m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", odd, []*corev1.Node{node})
	require.ErrorContains(t, err, "is not a whole number of 1s") // refused at sync, before the adapter sees it
	assert.Zero(t, m.Calls().Sub(before).Writes())

	for _, setting := range []string{"location: nbg1", "network-zone: eu-central"} {
		_, err = cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(
			"cluster: {id: c1}\nhcloud: {endpoint: "+url+"}\ncredentials: {token: t}\nloadBalancer: {settings: {"+setting+"}}\n"))
		name, _, _ := strings.Cut(setting, ":")
		require.ErrorContains(t, err, "loadBalancer.settings."+name+": only a Service's annotation may set it: a default location or network zone would be merged")
		require.ErrorContains(t, err, "set the default location in the hcloud section's location instead")
	}
}

// TestPortHealthChecks: on Hetzner, whose services each have a health check, a port's own
// (annotation port-health-checks) is built on its service, the others keep the Service's,
// and the next sync writes nothing.
func TestPortHealthChecks(t *testing.T) {
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0"}}}
	m, url := newMock(t, cfg, nil)
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), clock)
	lbs, _ := p.LoadBalancer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-web",
		Annotations: map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationPortHealthChecks: "metrics: protocol=HTTP port=9100 path=/ready"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "web", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9100, NodePort: 30100}}}}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)

	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 1)
	checks := map[int]*schema.LoadBalancerServiceHealthCheck{}
	for _, s := range inv.LoadBalancers[0].Services {
		checks[s.ListenPort] = s.HealthCheck
	}
	require.Len(t, checks, 2)
	assert.Equal(t, "http", checks[9100].Protocol)
	assert.Equal(t, 9100, checks[9100].Port)
	require.NotNil(t, checks[9100].HTTP)
	assert.Equal(t, "/ready", checks[9100].HTTP.Path)
	assert.Equal(t, int(loadbalancer.KubeProxyHealthzPort), checks[80].Port, "the Service's health check")
	assert.NotEqual(t, checks[80].Port, checks[9100].Port)

	clock.Step(time.Hour)
	calls := m.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "k8s", svc, []*corev1.Node{node})
	require.NoError(t, err)
	assert.Zero(t, m.Calls().Sub(calls).Writes(), "converged: %v", m.Calls().Sub(calls))
}
