package fake_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

func newCloud(t *testing.T, cfg fake.Config, opts ...fake.Option) *fake.Cloud {
	t.Helper()
	c, err := fake.New(cfg, opts...)
	require.NoError(t, err)
	return c
}

func instances(n int) []fake.Instance {
	out := make([]fake.Instance, n)
	for i := range out {
		out[i] = fake.Instance{ID: fmt.Sprintf("i-%05d", i), Name: fmt.Sprintf("node-%05d", i), Tags: map[string]string{"parity": fmt.Sprint(i % 2)}}
	}
	return out
}

func lbAPI(t *testing.T, c *fake.Cloud) cloudapi.LoadBalancerAPI {
	t.Helper()
	api, ok := c.LoadBalancers()
	require.True(t, ok)
	return api
}

func routeAPI(t *testing.T, c *fake.Cloud) cloudapi.RouteAPI {
	t.Helper()
	api, ok := c.Routes()
	require.True(t, ok)
	return api
}

func spec(name string, tweaks ...func(*cloudapi.LoadBalancerSpec)) cloudapi.LoadBalancerSpec {
	s := cloudapi.LoadBalancerSpec{
		Name:      name,
		Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
		Tags:      map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-" + name},
	}
	for _, tw := range tweaks {
		tw(&s)
	}
	return s
}

func TestListPagesAreCappedOrderedAndComplete(t *testing.T) {
	cloud := newCloud(t, fake.Config{PageSize: 10, Instances: instances(25)})
	api := cloud.Instances()
	ctx := t.Context()

	page, err := api.ListInstances(ctx, cloudapi.ListOptions{PageSize: 1000})
	require.NoError(t, err)
	assert.Len(t, page.Items, 10, "the cloud caps a page at its page size")

	var ids []string
	token := ""
	pages := 0
	for {
		page, err := api.ListInstances(ctx, cloudapi.ListOptions{PageSize: 4, PageToken: token, Tags: map[string]string{"parity": "1"}})
		require.NoError(t, err)
		pages++
		for _, i := range page.Items {
			ids = append(ids, i.ID)
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	require.Len(t, ids, 12)
	for i, id := range ids {
		assert.Equal(t, fmt.Sprintf("i-%05d", 2*i+1), id)
	}
	assert.Equal(t, 3, pages)

	_, err = api.ListInstances(ctx, cloudapi.ListOptions{PageToken: "garbage"})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
}

func TestPagingThroughAChangingSetNeverRepeats(t *testing.T) {
	cloud := newCloud(t, fake.Config{PageSize: 5, Instances: instances(10)})
	api := cloud.Instances()
	first, err := api.ListInstances(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	require.Len(t, first.Items, 5)
	// An instance before the cursor disappears and one after it appears.
	require.NoError(t, cloud.DeleteInstance("i-00001"))
	require.NoError(t, cloud.AddInstance(cloudapi.Instance{ID: "i-00007a"}))
	second, err := api.ListInstances(t.Context(), cloudapi.ListOptions{PageToken: first.NextPageToken, PageSize: 100})
	require.NoError(t, err)
	var got []string
	for _, i := range second.Items {
		got = append(got, i.ID)
	}
	assert.Equal(t, []string{"i-00005", "i-00006", "i-00007", "i-00007a", "i-00008"}, got)
	assert.NotEmpty(t, second.NextPageToken, "i-00009 is still to come")
}

func TestReturnedValuesAreCopies(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: []fake.Instance{{ID: "i-1", Addresses: []fake.Address{{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}}, Tags: map[string]string{"a": "b"}}}})
	inst, err := cloud.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
	inst.Addresses[0].Address = "10.9.9.9"
	inst.Tags["a"] = "changed"
	again, err := cloud.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", again.Addresses[0].Address)
	assert.Equal(t, "b", again.Tags["a"])
}

func TestInstanceChangesBehindTheClientsBack(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(2)})
	api := cloud.Instances()
	ctx := t.Context()

	require.NoError(t, cloud.SetInstanceState("i-00000", cloudapi.InstanceStopped))
	inst, err := api.GetInstance(ctx, "i-00000")
	require.NoError(t, err)
	assert.Equal(t, cloudapi.InstanceStopped, inst.State)

	require.NoError(t, cloud.SetInstanceAddresses("i-00000", []cloudapi.Address{{Type: cloudapi.AddressExternalIP, Address: "198.51.100.7"}}))
	inst, err = api.GetInstance(ctx, "i-00000")
	require.NoError(t, err)
	assert.Equal(t, []cloudapi.Address{{Type: cloudapi.AddressExternalIP, Address: "198.51.100.7"}}, inst.Addresses)

	require.NoError(t, cloud.DeleteInstance("i-00000"))
	_, err = api.GetInstance(ctx, "i-00000")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)

	require.ErrorIs(t, cloud.DeleteInstance("i-00000"), cloudapi.ErrNotFound)
	require.ErrorIs(t, cloud.SetInstanceState("i-404", cloudapi.InstanceRunning), cloudapi.ErrNotFound)
	require.ErrorIs(t, cloud.SetInstanceState("i-00001", "asleep"), cloudapi.ErrInvalidRequest)
	require.ErrorIs(t, cloud.AddInstance(cloudapi.Instance{ID: "i-00001"}), cloudapi.ErrConflict)
	require.ErrorIs(t, cloud.SetInstanceAddresses("i-00001", []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: "x"}}), cloudapi.ErrInvalidRequest)
}

func TestCanceledContextIsTransientAndChangesNothing(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(1)})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := cloud.Instances().GetInstance(ctx, "i-00000")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.NotErrorIs(t, err, cloudapi.ErrNotFound)
	require.ErrorIs(t, err, context.Canceled)

	_, err = lbAPI(t, cloud).CreateLoadBalancer(ctx, spec("web"))
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Empty(t, cloud.Inventory().LoadBalancers)
	assert.Equal(t, fake.Calls{cloudapi.OpGetInstance: 1, cloudapi.OpCreateLoadBalancer: 1}, cloud.Calls(), "failed calls are counted")
}

func TestCallCounters(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(3)})
	ctx := t.Context()
	for range 3 {
		_, _ = cloud.Instances().GetInstance(ctx, "i-00000")
	}
	_, _ = cloud.Instances().GetInstance(ctx, "missing")
	_, err := cloud.Instances().ListInstances(ctx, cloudapi.ListOptions{})
	require.NoError(t, err)
	lb, err := lbAPI(t, cloud).CreateLoadBalancer(ctx, spec("web"))
	require.NoError(t, err)
	require.NoError(t, lbAPI(t, cloud).DeleteLoadBalancer(ctx, lb.ID))

	calls := cloud.Calls()
	assert.Equal(t, fake.Calls{
		cloudapi.OpGetInstance: 4, cloudapi.OpListInstances: 1,
		cloudapi.OpCreateLoadBalancer: 1, cloudapi.OpDeleteLoadBalancer: 1,
	}, calls)
	assert.EqualValues(t, 5, calls.Reads())
	assert.EqualValues(t, 2, calls.Writes())
	assert.EqualValues(t, 7, calls.Total())

	_, _ = cloud.Instances().GetInstance(ctx, "i-00001")
	assert.Equal(t, fake.Calls{cloudapi.OpGetInstance: 1}, cloud.Calls().Sub(calls))

	cloud.ResetCalls()
	assert.Empty(t, cloud.Calls())
}

func TestProvisioningByReads(t *testing.T) {
	cloud := newCloud(t, fake.Config{Provisioning: fake.Provisioning{Reads: 2}})
	api := lbAPI(t, cloud)
	ctx := t.Context()
	lb, err := api.CreateLoadBalancer(ctx, spec("web"))
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, lb.Status)

	got, err := api.GetLoadBalancer(ctx, lb.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, got.Status, "read 1")
	page, err := api.ListLoadBalancers(ctx, cloudapi.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, page.Items[0].Status, "read 2, by list")
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, cloud.Inventory().LoadBalancers[0].Status, "inventory is not a read")
	got, err = api.GetLoadBalancer(ctx, lb.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, got.Status, "read 3")
}

func TestProvisioningByDuration(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := newCloud(t, fake.Config{Provisioning: fake.Provisioning{Duration: time.Minute}}, fake.WithClock(clock))
	api := lbAPI(t, cloud)
	ctx := t.Context()
	lb, err := api.CreateLoadBalancer(ctx, spec("web"))
	require.NoError(t, err)
	for range 5 {
		got, err := api.GetLoadBalancer(ctx, lb.ID)
		require.NoError(t, err)
		assert.Equal(t, cloudapi.LoadBalancerProvisioning, got.Status)
	}
	clock.Step(time.Minute)
	got, err := api.GetLoadBalancer(ctx, lb.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, got.Status)
}

func TestAddressesAreNeverHandedOutTwice(t *testing.T) {
	// 203.0.113.0/29 has 6 usable addresses: .1 to .6.
	cloud := newCloud(t, fake.Config{AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"203.0.113.0/29"}}}})
	api := lbAPI(t, cloud)
	ctx := t.Context()

	var order []string
	ids := map[string]string{}
	for i := range 3 {
		lb, err := api.CreateLoadBalancer(ctx, spec(fmt.Sprint("lb", i)))
		require.NoError(t, err)
		require.Len(t, lb.Addresses, 1)
		order = append(order, lb.Addresses[0])
		ids[lb.Addresses[0]] = lb.ID
	}
	assert.Equal(t, []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"}, order)

	// .2 is released; the cursor goes on to .4, .5, .6 before it comes back for .2.
	require.NoError(t, api.DeleteLoadBalancer(ctx, ids["203.0.113.2"]))
	for i := 3; i < 7; i++ {
		lb, err := api.CreateLoadBalancer(ctx, spec(fmt.Sprint("lb", i)))
		require.NoError(t, err)
		order = append(order, lb.Addresses[0])
	}
	assert.Equal(t, []string{"203.0.113.4", "203.0.113.5", "203.0.113.6", "203.0.113.2"}, order[3:])

	_, err := api.CreateLoadBalancer(ctx, spec("one-too-many"))
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), "address pool exhausted")
	assert.Len(t, cloud.Inventory().LoadBalancers, 6)
}

func TestConcurrentCreatesGetDistinctAddresses(t *testing.T) {
	cloud := newCloud(t, fake.Config{})
	api := lbAPI(t, cloud)
	const n = 64
	addrs := make(chan string, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			lb, err := api.CreateLoadBalancer(t.Context(), spec(fmt.Sprint("lb", i), func(s *cloudapi.LoadBalancerSpec) {
				s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4}
			}))
			if assert.NoError(t, err) {
				for _, a := range lb.Addresses {
					addrs <- a
				}
			}
		})
	}
	wg.Wait()
	close(addrs)
	seen := map[string]bool{}
	for a := range addrs {
		assert.False(t, seen[a], "address %s handed out twice", a)
		seen[a] = true
	}
	assert.Len(t, seen, 2*n)
}

func TestDualStackAddressOrderFollowsFamilies(t *testing.T) {
	cloud := newCloud(t, fake.Config{})
	lb, err := lbAPI(t, cloud).CreateLoadBalancer(t.Context(), spec("web", func(s *cloudapi.LoadBalancerSpec) {
		s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4}
		s.Internal = true
	}))
	require.NoError(t, err)
	require.Len(t, lb.Addresses, 2)
	v6, v4 := netip.MustParseAddr(lb.Addresses[0]), netip.MustParseAddr(lb.Addresses[1])
	assert.True(t, v6.Is6())
	assert.True(t, v4.Is4())
	assert.True(t, netip.MustParsePrefix(fake.DefaultInternalIPv4[0]).Contains(v4), "internal load balancers use the internal pool")
}

func TestRequestedAddresses(t *testing.T) {
	cloud := newCloud(t, fake.Config{})
	api := lbAPI(t, cloud)
	ctx := t.Context()
	withIP := func(ip string) func(*cloudapi.LoadBalancerSpec) {
		return func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{ip} }
	}
	lb, err := api.CreateLoadBalancer(ctx, spec("a", withIP("203.0.113.77")))
	require.NoError(t, err)
	assert.Equal(t, []string{"203.0.113.77"}, lb.Addresses)

	_, err = api.CreateLoadBalancer(ctx, spec("b", withIP("203.0.113.77")))
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), "in use by load balancer "+lb.ID)

	_, err = api.CreateLoadBalancer(ctx, spec("c", withIP("192.0.2.1")))
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "outside the public IPv4 address pools")

	_, err = api.CreateLoadBalancer(ctx, spec("d", withIP("2001:db8:1::5")))
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "an IPv6 address for an IPv4-only load balancer")

	// An update that moves to another requested address releases the old one.
	upd := spec("a", withIP("203.0.113.78"))
	got, err := api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: upd, Changes: cloudapi.DiffLoadBalancer(lb.Spec, upd)})
	require.NoError(t, err)
	assert.Equal(t, []string{"203.0.113.78"}, got.Addresses)
	_, err = api.CreateLoadBalancer(ctx, spec("b", withIP("203.0.113.77")))
	require.NoError(t, err)
}

func TestHostnames(t *testing.T) {
	t.Run("besides addresses", func(t *testing.T) {
		api := lbAPI(t, newCloud(t, fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com"}}))
		lb, err := api.CreateLoadBalancer(t.Context(), spec("web"))
		require.NoError(t, err)
		assert.Equal(t, lb.ID+".lb.example.com", lb.Hostname)
		assert.Len(t, lb.Addresses, 1)
		got, err := api.GetLoadBalancer(t.Context(), lb.ID)
		require.NoError(t, err)
		assert.Equal(t, lb.Hostname, got.Hostname)
	})
	t.Run("instead of addresses", func(t *testing.T) {
		cloud := newCloud(t, fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com", WithoutAddresses: true}})
		api := lbAPI(t, cloud)
		lb, err := api.CreateLoadBalancer(t.Context(), spec("web", func(s *cloudapi.LoadBalancerSpec) {
			s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
		}))
		require.NoError(t, err)
		assert.Equal(t, lb.ID+".lb.example.com", lb.Hostname)
		assert.Empty(t, lb.Addresses)
		next := lb.Spec.Clone()
		next.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6}
		updated, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: next, Changes: cloudapi.DiffLoadBalancer(lb.Spec, next)})
		require.NoError(t, err)
		assert.Empty(t, updated.Addresses)
		assert.Equal(t, lb.Hostname, updated.Hostname, "a hostname does not change")

		_, err = api.CreateLoadBalancer(t.Context(), spec("api", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"203.0.113.9"} }))
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
		assert.ErrorContains(t, err, "requestedIPs: this cloud's load balancers have no addresses")
		assert.Len(t, cloud.Inventory().LoadBalancers, 1)
	})
}

func TestCapabilitiesTLSAndHTTP(t *testing.T) {
	off := false
	tls := func(s *cloudapi.LoadBalancerSpec) {
		s.Listeners[0].AppProtocol, s.Listeners[0].Certificates = cloudapi.AppProtocolTLS, []string{"cert-1"}
	}
	http := func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTP }
	https := func(s *cloudapi.LoadBalancerSpec) {
		s.Listeners[0].AppProtocol, s.Listeners[0].Certificates = cloudapi.AppProtocolHTTPS, []string{"cert-1"}
	}
	for _, tc := range []struct {
		name    string
		caps    fake.Capabilities
		tweak   func(*cloudapi.LoadBalancerSpec)
		refused string
	}{
		{"TLS by default", fake.Capabilities{}, tls, ""},
		{"HTTPS by default", fake.Capabilities{}, https, ""},
		{"no TLS: TLS refused", fake.Capabilities{TLS: &off}, tls, "do not terminate TLS (capabilities.tls is false)"},
		{"no TLS: HTTPS refused", fake.Capabilities{TLS: &off}, https, "do not terminate TLS"},
		{"no TLS: HTTP fine", fake.Capabilities{TLS: &off}, http, ""},
		{"no HTTP: HTTP refused", fake.Capabilities{HTTP: &off}, http, "do not speak HTTP (capabilities.http is false)"},
		{"no HTTP: TLS fine", fake.Capabilities{HTTP: &off}, tls, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := lbAPI(t, newCloud(t, fake.Config{Capabilities: tc.caps}))
			lb, err := api.CreateLoadBalancer(t.Context(), spec("web", tc.tweak))
			if tc.refused == "" {
				require.NoError(t, err)
				assert.Equal(t, spec("web", tc.tweak).Listeners, lb.Spec.Listeners)
				return
			}
			require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
			assert.ErrorContains(t, err, tc.refused)
		})
	}
}

func TestNoPoolForAFamily(t *testing.T) {
	cloud := newCloud(t, fake.Config{AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"203.0.113.0/24"}}}})
	_, err := lbAPI(t, cloud).CreateLoadBalancer(t.Context(), spec("web", func(s *cloudapi.LoadBalancerSpec) {
		s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6}
	}))
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "no public IPv6 address pool")
}

func TestLoadBalancerSpecValidation(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(1)})
	api := lbAPI(t, cloud)
	tests := []struct {
		name  string
		tweak func(*cloudapi.LoadBalancerSpec)
		want  string
	}{
		{"no name", func(s *cloudapi.LoadBalancerSpec) { s.Name = "" }, "name: required"},
		{"long name", func(s *cloudapi.LoadBalancerSpec) { s.Name = fmt.Sprintf("%064d", 0) }, "longer than 63"},
		{"protocol", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Protocol = "HTTP2" }, `protocol "HTTP2"`},
		{"port", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Port = 0 }, "port 0 is outside 1-65535"},
		{"target port", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].TargetPort = 70000 }, "target port 70000"},
		{"duplicate listener", func(s *cloudapi.LoadBalancerSpec) { s.Listeners = append(s.Listeners, s.Listeners[0]) }, "a second listener for TCP/80"},
		{"unknown target", func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-00000", "i-404"} }, `no instance "i-404"`},
		{"duplicate target", func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-00000", "i-00000"} }, "listed twice"},
		{"health check path", func(s *cloudapi.LoadBalancerSpec) {
			s.HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "healthz"}
		}, "path starting with /"},
		{"source range", func(s *cloudapi.LoadBalancerSpec) { s.SourceRanges = []string{"10.0.0.1"} }, `"10.0.0.1" is not a CIDR`},
		{"family", func(s *cloudapi.LoadBalancerSpec) { s.IPFamilies = []cloudapi.IPFamily{"IPv5"} }, `"IPv5" is not IPv4 or IPv6`},
		{"requested IP", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"300.1.1.1"} }, "not an IP address"},
		{"session affinity", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity = "Sticky" }, `sessionAffinity: "Sticky" is not ClientIP, Cookie or empty`},
		{"affinity timeout without affinity", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinityTimeout = time.Hour }, "sessionAffinityTimeout: 1h0m0s without a session affinity"},
		{"cookie lifetime too long", func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTP
			s.SessionAffinity, s.SessionAffinityTimeout, s.SessionAffinityCookieName = cloudapi.SessionAffinityCookie, 25*time.Hour, "lb"
		}, "sessionAffinityTimeout: 25h0m0s is outside 1s-24h0m0s"},
		{"cookie without an HTTP listener", func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout, s.SessionAffinityCookieName = cloudapi.SessionAffinityCookie, time.Hour, "lb"
		}, "Cookie needs a listener of AppProtocol HTTP or HTTPS"},
		{"affinity timeout too long", func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, 25*time.Hour
		}, "sessionAffinityTimeout: 25h0m0s is outside 1s-24h0m0s"},
		{"application protocol", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = "QUIC" }, `application protocol "QUIC" is not TLS, HTTP, HTTPS or empty`},
		{"TLS without certificate", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTPS }, "HTTPS terminates TLS and needs a certificate"},
		{"certificate without TLS", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Certificates = []string{"cert-1"} }, `certificates on a listener that terminates no TLS`},
		{"HTTP over UDP", func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].Protocol, s.Listeners[0].AppProtocol = cloudapi.ProtocolUDP, cloudapi.AppProtocolHTTP
		}, "application protocol HTTP on a UDP listener: it needs TCP"},
		{"blank certificate", func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].AppProtocol, s.Listeners[0].Certificates = cloudapi.AppProtocolTLS, []string{"cert 1", "c", "c"}
		}, `certificate "cert 1" is not a certificate ID`},
		{"affinity without timeout", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity = cloudapi.SessionAffinityClientIP }, "sessionAffinityTimeout: 0s is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.CreateLoadBalancer(t.Context(), spec("web", tt.tweak))
			require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.Empty(t, cloud.Inventory().LoadBalancers)
}

func TestLoadBalancerLifecycleAndHistory(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(3)})
	api := lbAPI(t, cloud)
	ctx := t.Context()
	s := spec("web", func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-00000", "i-00001"} })
	lb, err := api.CreateLoadBalancer(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, lb.Status)

	_, err = api.CreateLoadBalancer(ctx, spec("web"))
	require.ErrorIs(t, err, cloudapi.ErrConflict, "names are unique")

	// A correct update, and one whose Changes were computed against a stale read.
	next := s.Clone()
	next.Targets = []string{"i-00001", "i-00002"}
	_, err = api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: next, Changes: cloudapi.DiffLoadBalancer(s, next)})
	require.NoError(t, err)
	stale := next.Clone()
	stale.ProxyProtocol = true
	stale.SessionAffinity, stale.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, time.Hour
	_, err = api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: stale, Changes: cloudapi.DiffLoadBalancer(s, stale)})
	require.NoError(t, err)

	internal := stale.Clone()
	internal.Internal = true
	_, err = api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: internal})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)

	other, err := api.CreateLoadBalancer(ctx, spec("api"))
	require.NoError(t, err)
	renamed := stale.Clone()
	renamed.Name = "api"
	_, err = api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: renamed})
	require.ErrorIs(t, err, cloudapi.ErrConflict)

	require.NoError(t, api.DeleteLoadBalancer(ctx, other.ID))
	require.NoError(t, api.DeleteLoadBalancer(ctx, lb.ID))
	require.ErrorIs(t, api.DeleteLoadBalancer(ctx, lb.ID), cloudapi.ErrNotFound)
	_, err = api.GetLoadBalancer(ctx, lb.ID)
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	_, err = api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: s})
	require.ErrorIs(t, err, cloudapi.ErrNotFound)

	hist := cloud.LoadBalancerHistory()
	var ops []cloudapi.Operation
	for _, e := range hist {
		ops = append(ops, e.Op)
	}
	assert.Equal(t, []cloudapi.Operation{
		cloudapi.OpCreateLoadBalancer, cloudapi.OpUpdateLoadBalancer, cloudapi.OpUpdateLoadBalancer,
		cloudapi.OpCreateLoadBalancer, cloudapi.OpDeleteLoadBalancer, cloudapi.OpDeleteLoadBalancer,
	}, ops)
	assert.True(t, hist[1].ChangesMatch())
	assert.Equal(t, []string{"i-00002"}, hist[1].Actual.AddTargets)
	assert.False(t, hist[2].ChangesMatch(), "the second update's Changes repeat the target change that was already applied")
	assert.True(t, hist[2].Actual.ProxyProtocol)
	assert.Equal(t, cloudapi.SessionAffinityClientIP, hist[2].Spec.SessionAffinity, "the history holds every field of the spec")
	assert.True(t, hist[2].Actual.SessionAffinity)
	// The name of a deleted load balancer is free again.
	_, err = api.CreateLoadBalancer(ctx, spec("web"))
	require.NoError(t, err)
}

func TestRoutes(t *testing.T) {
	cloud := newCloud(t, fake.Config{Instances: instances(2)})
	api := routeAPI(t, cloud)
	ctx := t.Context()
	owner := map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagNode: "node-00000"}
	r, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.0.0/24", TargetInstanceID: "i-00000", Tags: owner})
	require.NoError(t, err)
	assert.False(t, r.Blackhole)
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "fd00:10:244::/64", TargetInstanceID: "i-00001"})
	require.NoError(t, err)

	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.0.0/24", TargetInstanceID: "i-00001"})
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	for _, bad := range []cloudapi.RouteSpec{
		{DestinationCIDR: "10.244.1.1/24", TargetInstanceID: "i-00000"},
		{DestinationCIDR: "10.244.1.0", TargetInstanceID: "i-00000"},
		{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-404"},
		{DestinationCIDR: "10.244.1.0/24"},
		{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-00000", TargetAddress: "nope"},
	} {
		_, err = api.CreateRoute(ctx, bad)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "%+v", bad)
	}

	require.NoError(t, cloud.SetInstanceState("i-00001", cloudapi.InstanceTerminated))
	require.NoError(t, cloud.DeleteInstance("i-00000"))
	page, err := api.ListRoutes(ctx, cloudapi.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	assert.True(t, page.Items[0].Blackhole, "target deleted")
	assert.True(t, page.Items[1].Blackhole, "target terminated")

	inv := cloud.Inventory()
	orphans := inv.RoutesTagged(map[string]string{cloudapi.TagCluster: "c1"})
	require.Len(t, orphans, 1)
	assert.True(t, orphans[0].Blackhole)

	require.NoError(t, api.DeleteRoute(ctx, r.ID))
	require.ErrorIs(t, api.DeleteRoute(ctx, r.ID), cloudapi.ErrNotFound)
	require.NoError(t, cloud.AddInstance(cloudapi.Instance{ID: "i-00000"}))
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.0.0/24", TargetInstanceID: "i-00000"})
	require.NoError(t, err, "the destination of a deleted route is free again")
}

func TestInventoryFindsLeftovers(t *testing.T) {
	cloud := newCloud(t, fake.Config{})
	api := lbAPI(t, cloud)
	for _, name := range []string{"a", "b", "c"} {
		_, err := api.CreateLoadBalancer(t.Context(), spec(name))
		require.NoError(t, err)
	}
	inv := cloud.Inventory()
	got := inv.LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-b"})
	require.Len(t, got, 1)
	assert.Equal(t, "b", got[0].Spec.Name)
	assert.Len(t, inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: "c1"}), 3)
	assert.Empty(t, cloud.Calls().Reads(), "inventory does not count as calls")
}

// TestTargetGroupsCapability: without capabilities.targetGroups the cloud has no target
// groups and refuses a load balancer that names one; with it, a load balancer names an
// existing group instead of having targets.
func TestTargetGroupsCapability(t *testing.T) {
	cfg := fake.Config{Instances: []fake.Instance{{ID: "i-1"}, {ID: "i-2"}}}
	spec := cloudapi.LoadBalancerSpec{Name: "lb", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}, TargetGroup: "tg-000001"}

	off, err := fake.New(cfg)
	require.NoError(t, err)
	groups, ok := off.TargetGroups()
	assert.False(t, ok)
	assert.Nil(t, groups)
	_, ok = cloudapi.TargetGroups(off)
	assert.False(t, ok)
	lbs, _ := off.LoadBalancers()
	_, err = lbs.CreateLoadBalancer(t.Context(), spec)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "capabilities.targetGroups")

	yes := true
	cfg.Capabilities.TargetGroups = &yes
	on, err := fake.New(cfg)
	require.NoError(t, err)
	groups, ok = cloudapi.TargetGroups(on)
	require.True(t, ok)
	lbs, _ = on.LoadBalancers()
	_, err = lbs.CreateLoadBalancer(t.Context(), spec)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "no such group yet")
	g, err := groups.CreateTargetGroup(t.Context(), cloudapi.TargetGroupSpec{Name: "g", Targets: []string{"i-2", "i-1"}})
	require.NoError(t, err)
	require.Equal(t, "tg-000001", g.ID)
	assert.Equal(t, []string{"i-1", "i-2"}, g.Spec.Targets, "stored sorted")
	lb, err := lbs.CreateLoadBalancer(t.Context(), spec)
	require.NoError(t, err)
	inv := on.Inventory()
	assert.Equal(t, []string{"i-1", "i-2"}, inv.Targets(*lb), "the group's members receive the traffic")
	require.Len(t, inv.TargetGroups, 1)

	calls := on.Calls()
	_, err = groups.UpdateTargetGroup(t.Context(), g.ID, cloudapi.DiffTargetGroup(g.Spec, cloudapi.TargetGroupSpec{Name: "g", Targets: []string{"i-1"}}))
	require.NoError(t, err)
	assert.Equal(t, []string{"i-1"}, on.Inventory().Targets(*lb), "one write moves every load balancer that names the group")
	assert.Equal(t, fake.Calls{cloudapi.OpUpdateTargetGroup: 1}, on.Calls().Sub(calls))
}
