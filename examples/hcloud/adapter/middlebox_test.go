package adapter_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

// Behind a middlebox that passes reads to the API and answers every write itself, with a
// redirect (to a URL that answers GET with 200 and "{}") or a 200 longer than any answer
// of the API, no write of a load balancer or a route succeeds, a redirect is
// ErrInvalidRequest naming its Location, and the API holds what it held.
func TestNoWriteSucceedsBehindAMiddlebox(t *testing.T) {
	type mode struct {
		name     string
		redirect int
	}
	var modes []mode
	for _, code := range cloudapitest.RedirectStatuses {
		modes = append(modes, mode{fmt.Sprintf("redirect %d", code), code})
	}
	modes = append(modes, mode{name: "a 200 of 17 MiB"})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, base := newMock(t, hcloudmock.Config{Servers: routeServers(network.ID), RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20}}, nil)
			cfg := adapter.Config{Endpoint: base, Location: "fsn1", Network: network.Name}
			direct := adapter.New(cfg, "token", nil)
			lbs, _ := direct.LoadBalancers()
			routes, _ := direct.Routes()
			spec := cloudapi.LoadBalancerSpec{Name: "kept", Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
				Settings: map[string]string{adapter.SettingType: "lb11", adapter.SettingAlgorithm: "round_robin"}}
			lb, err := lbs.CreateLoadBalancer(t.Context(), spec)
			require.NoError(t, err)
			rt, err := routes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "2"})
			require.NoError(t, err)
			before := holdings(t, direct)

			api, err := url.Parse(base)
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: api.Scheme, Host: api.Host})
			var box *httptest.Server
			box = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasPrefix(r.URL.Path, "/redirected"), r.Method != http.MethodGet && m.redirect == 0:
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, "{}")
					if m.redirect == 0 {
						_, _ = io.WriteString(w, strings.Repeat(" ", 17<<20))
					}
				case r.Method == http.MethodGet:
					proxy.ServeHTTP(w, r)
				default:
					http.Redirect(w, r, box.URL+"/redirected"+r.URL.Path, m.redirect)
				}
			}))
			t.Cleanup(box.Close)
			cfg.Endpoint = box.URL + api.Path
			through := adapter.New(cfg, "token", nil)
			tlbs, _ := through.LoadBalancers()
			troutes, _ := through.Routes()
			changed := spec.Clone()
			changed.Listeners = append(changed.Listeners, cloudapi.Listener{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443})
			for op, write := range map[cloudapi.Operation]func() error{
				cloudapi.OpCreateLoadBalancer: func() error {
					s := spec.Clone()
					s.Name = "new"
					_, err := tlbs.CreateLoadBalancer(t.Context(), s)
					return err
				},
				cloudapi.OpUpdateLoadBalancer: func() error {
					_, err := tlbs.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: changed, Changes: cloudapi.DiffLoadBalancer(lb.Spec, changed)})
					return err
				},
				cloudapi.OpDeleteLoadBalancer: func() error { return tlbs.DeleteLoadBalancer(t.Context(), lb.ID) },
				cloudapi.OpCreateRoute: func() error {
					_, err := troutes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "2"})
					return err
				},
				cloudapi.OpDeleteRoute: func() error { return troutes.DeleteRoute(t.Context(), rt.ID) },
			} {
				err := write()
				require.Error(t, err, "%s succeeded behind the middlebox", op)
				if m.redirect != 0 {
					assert.ErrorIs(t, err, cloudapi.ErrInvalidRequest, op)
					assert.Contains(t, err.Error(), box.URL+"/redirected", "%s: the error names the Location", op)
				}
			}
			assert.Equal(t, before, holdings(t, direct), "the API holds what it held")
		})
	}
}

// holdings are the load balancers and routes c lists, without the load balancers' status.
func holdings(t *testing.T, c *adapter.Client) (out struct {
	LoadBalancers []cloudapi.LoadBalancer
	Routes        []cloudapi.Route
}) {
	t.Helper()
	lbs, _ := c.LoadBalancers()
	page, err := lbs.ListLoadBalancers(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	for _, lb := range page.Items {
		lb.Status = ""
		out.LoadBalancers = append(out.LoadBalancers, lb)
	}
	routes, _ := c.Routes()
	rp, err := routes.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	out.Routes = rp.Items
	return out
}
