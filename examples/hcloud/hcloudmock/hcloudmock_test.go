package hcloudmock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

// start serves a mock of cfg and returns it with an SDK client that neither retries nor
// waits between polls, so every call the client makes is one the test sees.
func start(t *testing.T, cfg hcloudmock.Config) (*hcloudmock.Server, *hcloud.Client) {
	t.Helper()
	m, err := hcloudmock.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, hcloud.NewClient(hcloud.WithEndpoint(srv.URL), hcloud.WithToken("t"),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(0)}))
}

// seed is a project with servers, a network with servers 1 and 2 in it, and certificates.
func seed(servers int) hcloudmock.Config {
	cfg := hcloudmock.Config{
		Networks: []schema.Network{{ID: 1000, Name: "k8s", IPRange: "10.0.0.0/16"}},
		Certificates: []schema.Certificate{
			{ID: 2000, Name: "web", Labels: map[string]string{"team": "a"}},
			{ID: 2001, Name: "api", Labels: map[string]string{"team": "b"}},
		},
	}
	for i := 1; i <= servers; i++ {
		s := schema.Server{ID: int64(i), Name: fmt.Sprintf("node-%03d", i), Labels: map[string]string{"role": "worker"}}
		if i%3 == 0 {
			s.Labels = map[string]string{"role": "control-plane", "zone": "a"}
		}
		if i%10 == 0 {
			s.Labels["gpu"] = "yes"
		}
		if i <= 2 {
			s.PrivateNet = []schema.ServerPrivateNet{{Network: 1000, IP: fmt.Sprintf("10.0.0.%d", i+1)}}
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	return cfg
}

func TestServersPagingAndSelectors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		opts     hcloud.ServerListOpts
		want     int
		wantGets int
	}{
		{"all, 50 a page", hcloud.ServerListOpts{}, 120, 3},
		{"equality", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role=worker"}}, 80, 2},
		{"double equals", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role==control-plane"}}, 40, 1},
		{"inequality", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role!=worker"}}, 40, 1},
		{"presence", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "gpu"}}, 12, 1},
		{"absence", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "!gpu"}}, 108, 3},
		{"and", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role=control-plane,gpu,zone in (a,b)"}}, 4, 1},
		{"notin", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role notin (worker)"}}, 40, 1},
		{"default page size", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{PerPage: -1}}, 120, 5},
		{"page size capped", hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{PerPage: 500}}, 120, 3},
		{"name", hcloud.ServerListOpts{Name: "node-007"}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := start(t, seed(120))
			got, err := c.Server.AllWithOpts(ctx, tt.opts)
			require.NoError(t, err)
			assert.Len(t, got, tt.want)
			assert.Equal(t, tt.wantGets, m.Calls()["GET /servers"])
			for i := 1; i < len(got); i++ {
				assert.Less(t, got[i-1].ID, got[i].ID, "sorted by ID")
			}
		})
	}

	t.Run("pagination meta and sort", func(t *testing.T) {
		_, c := start(t, seed(120))
		got, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{Page: 2, PerPage: 50}, Sort: []string{"id:desc"}})
		require.NoError(t, err)
		assert.Equal(t, &hcloud.Pagination{Page: 2, PerPage: 50, PreviousPage: 1, NextPage: 3, LastPage: 3, TotalEntries: 120}, resp.Meta.Pagination)
		assert.Equal(t, int64(70), got[0].ID)
	})

	t.Run("bad selector", func(t *testing.T) {
		_, c := start(t, seed(1))
		_, err := c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "a=b,,!"}})
		assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "%v", err)
	})
}

func TestLoadBalancerLifecycle(t *testing.T) {
	ctx := context.Background()
	m, c := start(t, hcloudmock.Config{Servers: seed(3).Servers, Networks: seed(3).Networks, Certificates: seed(0).Certificates, ActionPolls: 2})
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{
		Name:             "svc-a",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"},
		Location:         &hcloud.Location{Name: "nbg1"},
		Labels:           map[string]string{"cluster": "c1"},
		Network:          &hcloud.Network{ID: 1000},
		Services: []hcloud.LoadBalancerCreateOptsService{
			{Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: hcloud.Ptr(443), DestinationPort: hcloud.Ptr(30443)},
			{Protocol: hcloud.LoadBalancerServiceProtocolHTTPS, HTTP: &hcloud.LoadBalancerCreateOptsServiceHTTP{Certificates: []*hcloud.Certificate{{ID: 2000}}}, ListenPort: hcloud.Ptr(8443)},
		},
		Targets: []hcloud.LoadBalancerCreateOptsTarget{
			{Type: hcloud.LoadBalancerTargetTypeServer, Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: 1}}, UsePrivateIP: hcloud.Ptr(true)},
			{Type: hcloud.LoadBalancerTargetTypeServer, Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: 3}}},
		},
	})
	require.NoError(t, err)
	assert.Equal(t, hcloud.ActionStatusRunning, res.Action.Status)
	require.NoError(t, c.Action.WaitFor(ctx, res.Action))
	assert.Equal(t, 3, m.Calls()["GET /actions"], "two reads answer running, the third success")

	lb, _, err := c.LoadBalancer.GetByID(ctx, res.LoadBalancer.ID)
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.1", lb.PublicNet.IPv4.IP.String())
	assert.Equal(t, "2001:db8::1", lb.PublicNet.IPv6.IP.String())
	assert.Equal(t, "10.0.0.4", lb.PrivateNet[0].IP.String(), "the first free address after the gateway and the servers'")
	assert.Equal(t, "nbg1", lb.Location.Name)
	require.Len(t, lb.Services, 2)
	assert.Equal(t, 30443, lb.Services[0].DestinationPort)
	assert.Equal(t, 80, lb.Services[1].DestinationPort, "the API's default")
	assert.Equal(t, 30443, lb.Services[0].HealthCheck.Port)
	require.Len(t, lb.Targets, 2)

	steps := []struct {
		name string
		do   func() (*hcloud.Action, *hcloud.Response, error)
	}{
		{"add service", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.AddService(ctx, lb, hcloud.LoadBalancerAddServiceOpts{Protocol: "tcp", ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080)})
		}},
		{"update service", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.UpdateService(ctx, lb, 80, hcloud.LoadBalancerUpdateServiceOpts{DestinationPort: hcloud.Ptr(30081)})
		}},
		{"remove target", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.RemoveServerTarget(ctx, lb, &hcloud.Server{ID: 3})
		}},
		{"add target", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: 2}})
		}},
		{"change algorithm", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.ChangeAlgorithm(ctx, lb, hcloud.LoadBalancerChangeAlgorithmOpts{Type: hcloud.LoadBalancerAlgorithmTypeLeastConnections})
		}},
		{"change type", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.ChangeType(ctx, lb, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb21"}})
		}},
		{"disable public interface", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.DisablePublicInterface(ctx, lb)
		}},
		{"enable public interface", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.EnablePublicInterface(ctx, lb)
		}},
		{"delete service", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.DeleteService(ctx, lb, 443)
		}},
		{"detach", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.DetachFromNetwork(ctx, lb, hcloud.LoadBalancerDetachFromNetworkOpts{Network: &hcloud.Network{ID: 1000}})
		}},
		{"attach", func() (*hcloud.Action, *hcloud.Response, error) {
			return c.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: &hcloud.Network{ID: 1000}, IP: net.ParseIP("10.0.0.9")})
		}},
	}
	for _, step := range steps { // in order: each waits for the last one's action
		t.Run(step.name, func(t *testing.T) {
			a, _, err := step.do()
			require.NoError(t, err)
			require.NoError(t, c.Action.WaitFor(ctx, a))
		})
	}

	lb, _, err = c.LoadBalancer.GetByID(ctx, lb.ID)
	require.NoError(t, err)
	assert.Equal(t, []int{8443, 80}, []int{lb.Services[0].ListenPort, lb.Services[1].ListenPort})
	assert.Equal(t, 30081, lb.Services[1].DestinationPort)
	assert.Equal(t, []int64{1, 2}, []int64{lb.Targets[0].Server.Server.ID, lb.Targets[1].Server.Server.ID})
	assert.Equal(t, hcloud.LoadBalancerAlgorithmTypeLeastConnections, lb.Algorithm.Type)
	assert.Equal(t, "lb21", lb.LoadBalancerType.Name)
	assert.True(t, lb.PublicNet.Enabled)
	assert.Equal(t, "10.0.0.9", lb.PrivateNet[0].IP.String())

	updated, _, err := c.LoadBalancer.Update(ctx, lb, hcloud.LoadBalancerUpdateOpts{Name: "svc-b", Labels: map[string]string{"cluster": "c2"}})
	require.NoError(t, err)
	assert.Equal(t, "svc-b", updated.Name)
	got, err := c.LoadBalancer.AllWithOpts(ctx, hcloud.LoadBalancerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "cluster=c2"}})
	require.NoError(t, err)
	require.Len(t, got, 1)

	del, _, err := c.LoadBalancer.DeleteWithResult(ctx, lb)
	require.NoError(t, err)
	require.NoError(t, c.Action.WaitFor(ctx, del.Action))
	assert.Empty(t, m.Inventory().LoadBalancers)
}

func TestLockedWhileActionRuns(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	m, c := start(t, hcloudmock.Config{Servers: seed(3).Servers[2:], ActionDuration: 10 * time.Second, Clock: clk})
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{
		Name: "lb", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, NetworkZone: hcloud.NetworkZoneEUCentral,
	})
	require.NoError(t, err)

	writes := []struct {
		name string
		do   func() error
	}{
		{"action", func() error {
			_, _, err := c.LoadBalancer.AddServerTarget(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: 3}})
			return err
		}},
		{"update", func() error {
			_, _, err := c.LoadBalancer.Update(ctx, res.LoadBalancer, hcloud.LoadBalancerUpdateOpts{Name: "x"})
			return err
		}},
		{"delete", func() error {
			_, _, err := c.LoadBalancer.DeleteWithResult(ctx, res.LoadBalancer)
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			err := w.do()
			assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeLocked), "%v", err)
		})
	}
	a, _, err := c.Action.GetByID(ctx, res.Action.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ActionStatusRunning, a.Status)

	clk.Step(10 * time.Second)
	require.NoError(t, c.Action.WaitFor(ctx, res.Action))
	require.NoError(t, writes[0].do(), "not locked once the action is done")
	assert.Len(t, m.Inventory().LoadBalancers[0].Targets, 1)
	assert.Equal(t, []int64{res.LoadBalancer.ID}, m.LoadBalancersTargeting(3), "the target just added")
	assert.Empty(t, m.LoadBalancersTargeting(4), "a server no load balancer targets")
}

func TestTypedErrors(t *testing.T) {
	ctx := context.Background()
	create := func(c *hcloud.Client, name string) error {
		_, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{
			Name: name, LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"},
		})
		return err
	}
	tests := []struct {
		name   string
		fault  *hcloudmock.Fault
		do     func(c *hcloud.Client) error
		code   hcloud.ErrorCode
		status int
	}{
		{"not found", nil, func(c *hcloud.Client) error {
			_, _, err := c.LoadBalancer.Update(ctx, &hcloud.LoadBalancer{ID: 99}, hcloud.LoadBalancerUpdateOpts{Name: "x"})
			return err
		}, hcloud.ErrorCodeNotFound, http.StatusNotFound},
		{"uniqueness", nil, func(c *hcloud.Client) error {
			require.NoError(t, create(c, "dup"))
			return create(c, "dup")
		}, hcloud.ErrorCodeUniquenessError, http.StatusConflict},
		{"invalid input", nil, func(c *hcloud.Client) error {
			_, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "x", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb99"}, Location: &hcloud.Location{Name: "fsn1"}})
			return err
		}, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest},
		{"scripted conflict", &hcloudmock.Fault{Code: string(hcloud.ErrorCodeConflict)}, func(c *hcloud.Client) error {
			return create(c, "x")
		}, hcloud.ErrorCodeConflict, http.StatusConflict},
		{"a target twice in a create", nil, func(c *hcloud.Client) error {
			sel := hcloud.LoadBalancerCreateOptsTarget{Type: hcloud.LoadBalancerTargetTypeLabelSelector,
				LabelSelector: hcloud.LoadBalancerCreateOptsTargetLabelSelector{Selector: "role=web"}}
			_, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "x", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"},
				Location: &hcloud.Location{Name: "fsn1"}, Targets: []hcloud.LoadBalancerCreateOptsTarget{sel, sel}})
			return err
		}, hcloud.ErrorCodeTargetAlreadyDefined, http.StatusUnprocessableEntity},
		{"a target added twice", nil, func(c *hcloud.Client) error {
			res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "x", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"},
				Location: &hcloud.Location{Name: "fsn1"}})
			require.NoError(t, err)
			opts := hcloud.LoadBalancerAddLabelSelectorTargetOpts{Selector: "role=web"}
			_, _, err = c.LoadBalancer.AddLabelSelectorTarget(ctx, res.LoadBalancer, opts)
			require.NoError(t, err)
			_, _, err = c.LoadBalancer.AddLabelSelectorTarget(ctx, res.LoadBalancer, opts)
			return err
		}, hcloud.ErrorCodeTargetAlreadyDefined, http.StatusUnprocessableEntity},
		{"unauthorized", nil, func(*hcloud.Client) error {
			_, _, err := hcloud.NewClient(hcloud.WithEndpoint(c0URL(t)), hcloud.WithToken("")).Server.GetByID(ctx, 1)
			return err
		}, hcloud.ErrorCodeUnauthorized, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := start(t, hcloudmock.Config{})
			if tt.fault != nil {
				m.Inject("POST /load_balancers", 1, *tt.fault)
			}
			err := tt.do(c)
			var herr hcloud.Error
			require.ErrorAs(t, err, &herr)
			assert.True(t, hcloud.IsError(err, tt.code), "%v", err)
			assert.Equal(t, tt.status, herr.Response().StatusCode)
		})
	}

	t.Run("invalid input details", func(t *testing.T) {
		_, c := start(t, hcloudmock.Config{})
		err := create(c, "")
		var herr hcloud.Error
		require.ErrorAs(t, err, &herr)
		details, ok := herr.Details.(hcloud.ErrorDetailsInvalidInput)
		require.True(t, ok, "%#v", herr.Details)
		assert.Equal(t, "name", details.Fields[0].Name)
	})

	t.Run("failed action changes nothing", func(t *testing.T) {
		m, c := start(t, hcloudmock.Config{ActionPolls: 1})
		m.Inject("POST /load_balancers", 1, hcloudmock.Fault{Code: "server_error", Message: "boom", InAction: true})
		res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{
			Name: "x", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"},
		})
		require.NoError(t, err)
		err = c.Action.WaitFor(ctx, res.Action)
		var aerr hcloud.ActionError
		require.ErrorAs(t, err, &aerr)
		assert.Equal(t, "server_error", aerr.Code)
		assert.Empty(t, m.Inventory().LoadBalancers)
		require.NoError(t, create(c, "x"), "the fault was used once")
	})
}

// c0URL serves an empty mock and returns its URL.
func c0URL(t *testing.T) string {
	m, err := hcloudmock.New(hcloudmock.Config{})
	require.NoError(t, err)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	m, c := start(t, hcloudmock.Config{Servers: seed(3).Servers[2:], RateLimit: hcloudmock.RateLimit{Limit: 3, PerSecond: 1}, Clock: clk})
	for i, remaining := range []int{2, 1, 0} {
		_, resp, err := c.Server.GetByID(ctx, 3)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, 3, resp.Meta.Ratelimit.Limit)
		assert.Equal(t, remaining, resp.Meta.Ratelimit.Remaining)
	}
	_, resp, err := c.Server.GetByID(ctx, 3)
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		assert.NotEmpty(t, resp.Header.Get(h), h)
	}
	assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
	assert.Equal(t, clk.Now().Add(3*time.Second), resp.Meta.Ratelimit.Reset, "full again after three seconds")

	clk.Step(time.Second)
	_, resp, err = c.Server.GetByID(ctx, 3)
	require.NoError(t, err, "one request back after a second")
	assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
	assert.Equal(t, 5, m.Calls()["GET /servers/{id}"], "throttled calls count")
}

func TestRoutes(t *testing.T) {
	ctx := context.Background()
	m, c := start(t, seed(2))
	nw := &hcloud.Network{ID: 1000}
	route := func(dst, gw string) hcloud.NetworkRoute {
		_, ipnet, err := net.ParseCIDR(dst)
		require.NoError(t, err)
		return hcloud.NetworkRoute{Destination: ipnet, Gateway: net.ParseIP(gw)}
	}
	steps := []struct {
		name  string
		add   bool
		route hcloud.NetworkRoute
		code  hcloud.ErrorCode
	}{
		{"add", true, route("10.244.1.0/24", "10.0.0.2"), ""},
		{"same destination again", true, route("10.244.1.0/24", "10.0.0.3"), hcloud.ErrorCodeUniquenessError},
		{"gateway outside the network", true, route("10.244.2.0/24", "192.168.0.1"), hcloud.ErrorCodeInvalidInput},
		{"add another", true, route("10.244.2.0/24", "10.0.0.3"), ""},
		{"delete with another gateway", false, route("10.244.1.0/24", "10.0.0.3"), hcloud.ErrorCodeInvalidInput},
		{"delete", false, route("10.244.1.0/24", "10.0.0.2"), ""},
		{"delete again", false, route("10.244.1.0/24", "10.0.0.2"), hcloud.ErrorCodeInvalidInput},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var a *hcloud.Action
			var err error
			if st.add {
				a, _, err = c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: st.route})
			} else {
				a, _, err = c.Network.DeleteRoute(ctx, nw, hcloud.NetworkDeleteRouteOpts{Route: st.route})
			}
			if st.code != "" {
				assert.True(t, hcloud.IsError(err, st.code), "%v", err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, c.Action.WaitFor(ctx, a))
		})
	}
	got, _, err := c.Network.GetByID(ctx, 1000)
	require.NoError(t, err)
	require.Len(t, got.Routes, 1)
	assert.Equal(t, "10.244.2.0/24", got.Routes[0].Destination.String())
	assert.Equal(t, 4, m.Calls()["POST /networks/{id}/actions/add_route"])
}

func TestCertificates(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		get  func(c *hcloud.Client) ([]*hcloud.Certificate, error)
		want []int64
	}{
		{"by name", func(c *hcloud.Client) ([]*hcloud.Certificate, error) {
			cert, _, err := c.Certificate.GetByName(ctx, "api")
			return []*hcloud.Certificate{cert}, err
		}, []int64{2001}},
		{"by ID or name", func(c *hcloud.Client) ([]*hcloud.Certificate, error) {
			cert, _, err := c.Certificate.Get(ctx, "2000")
			return []*hcloud.Certificate{cert}, err
		}, []int64{2000}},
		{"by label", func(c *hcloud.Client) ([]*hcloud.Certificate, error) {
			return c.Certificate.AllWithOpts(ctx, hcloud.CertificateListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "team=b"}})
		}, []int64{2001}},
		{"unknown name", func(c *hcloud.Client) ([]*hcloud.Certificate, error) {
			cert, _, err := c.Certificate.GetByName(ctx, "nope")
			if cert == nil {
				return nil, err
			}
			return []*hcloud.Certificate{cert}, err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := start(t, seed(0))
			got, err := tt.get(c)
			require.NoError(t, err)
			var ids []int64
			for _, cert := range got {
				ids = append(ids, cert.ID)
			}
			assert.Equal(t, tt.want, ids)
		})
	}
}

// hetznerCCMSeed is a load balancer as Hetzner's own CCM made one for the Service with
// the UID uid: its name, its label, lb11 in fsn1, server 1 as target, a TCP service whose
// health check is TCP on the node port, the rest left to the API's defaults.
func hetznerCCMSeed(id int64, uid string) hcloudmock.LoadBalancerSeed {
	return hcloudmock.LoadBalancerSeed{ID: id, LoadBalancerCreateRequest: schema.LoadBalancerCreateRequest{
		Name: "a" + strings.ReplaceAll(uid, "-", ""), LoadBalancerType: schema.IDOrName{Name: "lb11"}, Location: hcloud.Ptr("fsn1"),
		Labels:  &map[string]string{"hcloud-ccm/service-uid": uid},
		Targets: []schema.LoadBalancerCreateRequestTarget{{Type: "server", Server: &schema.LoadBalancerCreateRequestTargetServer{ID: 1}}},
		Services: []schema.LoadBalancerCreateRequestService{{Protocol: "tcp", ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080),
			Proxyprotocol: hcloud.Ptr(false), HealthCheck: &schema.LoadBalancerCreateRequestServiceHealthCheck{Protocol: "tcp", Port: hcloud.Ptr(30080)}}},
	}}
}

// TestSeededLoadBalancers: a seeded load balancer is the one POST /load_balancers makes
// from the same request: a GET answers the same body, byte for byte (its ID the next
// free one, its addresses the pools' next ones, the API's health check defaults); a list
// by label finds it; one with an ID keeps it, and the next create takes the addresses
// after the seeds'.
func TestSeededLoadBalancers(t *testing.T) {
	const uid = "5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	get := func(t *testing.T, url string, method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer t")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	serve := func(cfg hcloudmock.Config) string {
		cfg.Clock = clk
		m, err := hcloudmock.New(cfg)
		require.NoError(t, err)
		srv := httptest.NewServer(m)
		t.Cleanup(srv.Close)
		return srv.URL
	}

	seeded := seed(2)
	seeded.LoadBalancers = []hcloudmock.LoadBalancerSeed{hetznerCCMSeed(0, uid)}
	seededURL := serve(seeded)
	createdURL := serve(seed(2))
	request, err := json.Marshal(seeded.LoadBalancers[0].LoadBalancerCreateRequest)
	require.NoError(t, err)
	status, created := get(t, createdURL, http.MethodPost, "/load_balancers", request)
	require.Equal(t, http.StatusCreated, status, string(created))
	var answer schema.LoadBalancerCreateResponse
	require.NoError(t, json.Unmarshal(created, &answer))
	id := strconv.FormatInt(answer.LoadBalancer.ID, 10)
	assert.Equal(t, "2002", id, "the next free ID")
	_, want := get(t, createdURL, http.MethodGet, "/load_balancers/"+id, nil)
	status, got := get(t, seededURL, http.MethodGet, "/load_balancers/"+id, nil)
	require.Equal(t, http.StatusOK, status, string(got))
	assert.JSONEq(t, string(want), string(got), "read as the created one")

	var lb schema.LoadBalancerGetResponse
	require.NoError(t, json.Unmarshal(got, &lb))
	assert.Equal(t, "203.0.113.1", lb.LoadBalancer.PublicNet.IPv4.IP)
	assert.Equal(t, "2001:db8::1", lb.LoadBalancer.PublicNet.IPv6.IP)
	require.Len(t, lb.LoadBalancer.Services, 1)
	assert.Equal(t, schema.LoadBalancerServiceHealthCheck{Protocol: "tcp", Port: 30080, Interval: 15, Timeout: 10, Retries: 3},
		*lb.LoadBalancer.Services[0].HealthCheck, "the API's defaults")
	_, listed := get(t, seededURL, http.MethodGet, "/load_balancers?label_selector=hcloud-ccm/service-uid%3D"+uid, nil)
	var list schema.LoadBalancerListResponse
	require.NoError(t, json.Unmarshal(listed, &list))
	require.Len(t, list.LoadBalancers, 1)
	assert.Equal(t, lb.LoadBalancer, list.LoadBalancers[0])

	withIDs := seed(2)
	withIDs.LoadBalancers = []hcloudmock.LoadBalancerSeed{hetznerCCMSeed(0, "uid-a"), hetznerCCMSeed(5000, "uid-b")}
	m, client := start(t, withIDs)
	inv := m.Inventory()
	require.Len(t, inv.LoadBalancers, 2)
	assert.Equal(t, []int64{5000, 5001}, []int64{inv.LoadBalancers[0].ID, inv.LoadBalancers[1].ID}, "an ID kept, the other the next free one")
	assert.Equal(t, "auidb", inv.LoadBalancers[0].Name)
	assert.Equal(t, "203.0.113.2", inv.LoadBalancers[0].PublicNet.IPv4.IP, "the pools' addresses in the seed's order")
	assert.Empty(t, inv.Actions, "a seed is no action")
	assert.Zero(t, m.Calls().Writes())
	made, _, err := client.LoadBalancer.Create(t.Context(), hcloud.LoadBalancerCreateOpts{Name: "new",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"}})
	require.NoError(t, err)
	assert.Equal(t, int64(5002), made.LoadBalancer.ID)
	assert.Equal(t, "203.0.113.3", made.LoadBalancer.PublicNet.IPv4.IP.String(), "after the seeds'")
	_, _, err = client.LoadBalancer.Create(t.Context(), hcloud.LoadBalancerCreateOpts{Name: "auida",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"}})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeUniquenessError), "a seed's name is taken: %v", err)
}

func TestNewRefusesBadSeeds(t *testing.T) {
	tests := []struct {
		name string
		cfg  hcloudmock.Config
	}{
		{"duplicate ID", hcloudmock.Config{Servers: []schema.Server{{ID: 1, Name: "a"}}, Certificates: []schema.Certificate{{ID: 1, Name: "c"}}}},
		{"duplicate name", hcloudmock.Config{Servers: []schema.Server{{ID: 1, Name: "a"}, {ID: 2, Name: "a"}}}},
		{"unknown network", hcloudmock.Config{Servers: []schema.Server{{ID: 1, Name: "a", PrivateNet: []schema.ServerPrivateNet{{Network: 9}}}}}},
		{"bad pool", hcloudmock.Config{IPv4Pool: "2001:db8::/64"}},
		{"bad rate", hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 10}}},
		{"rate past one a nanosecond", hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 10, PerSecond: 2e9}}},
		{"load balancer ID of a server", hcloudmock.Config{Servers: []schema.Server{{ID: 1, Name: "a"}},
			LoadBalancers: []hcloudmock.LoadBalancerSeed{hetznerCCMSeed(1, "u")}}},
		{"load balancer name twice", hcloudmock.Config{Servers: []schema.Server{{ID: 1, Name: "a"}},
			LoadBalancers: []hcloudmock.LoadBalancerSeed{hetznerCCMSeed(0, "u"), hetznerCCMSeed(0, "u")}}},
		{"load balancer targeting no server", hcloudmock.Config{LoadBalancers: []hcloudmock.LoadBalancerSeed{hetznerCCMSeed(0, "u")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hcloudmock.New(tt.cfg)
			assert.Error(t, err)
		})
	}
}

// TestCallsSubAndWrites counts what a client asked between two readings of Calls: every
// request but a GET is a write, a path the mock does not serve ("/") too.
func TestCallsSubAndWrites(t *testing.T) {
	m, client := start(t, seed(2))
	ctx := context.Background()
	_, _, err := client.Server.GetByID(ctx, 1)
	require.NoError(t, err)
	before := m.Calls()
	_, _, err = client.Server.GetByID(ctx, 2)
	require.NoError(t, err)
	_, dst, err := net.ParseCIDR("10.1.0.0/24")
	require.NoError(t, err)
	_, _, err = client.Network.AddRoute(ctx, &hcloud.Network{ID: 1000}, hcloud.NetworkAddRouteOpts{
		Route: hcloud.NetworkRoute{Destination: dst, Gateway: net.ParseIP("10.0.0.2")}})
	require.NoError(t, err)
	since := m.Calls().Sub(before)
	for _, tt := range []struct {
		name   string
		calls  hcloudmock.Calls
		writes int
	}{
		{"since before", since, 1},
		{"all", m.Calls(), 1},
		{"none", hcloudmock.Calls{}, 0},
		{"unknown path", hcloudmock.Calls{"/": 2, "GET /servers": 3}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.writes, tt.calls.Writes())
		})
	}
	assert.Equal(t, hcloudmock.Calls{"GET /servers/{id}": 1, "POST /networks/{id}/actions/add_route": 1}, since,
		"the patterns whose count did not change are left out")
}
