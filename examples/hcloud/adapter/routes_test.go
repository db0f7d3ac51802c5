package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/providerid"
	"github.com/ccmkit/ccmkit/routes"
)

// routeShape is shape, with the private address 10.0.0.1 moved to 10.1.0.1: a network's
// first address is its own, never a server's, and no route's gateway.
func routeShape(inst cloudapi.Instance) cloudapi.Instance {
	inst = shape(inst)
	for i, a := range inst.Addresses {
		if a.Address == "10.0.0.1" {
			inst.Addresses[i].Address = "10.1.0.1"
		}
	}
	return inst
}

// routeServers are two servers in network (netID): 1 at 10.0.0.7, 2 at 10.0.0.8.
func routeServers(netID int64) []schema.Server {
	return []schema.Server{
		{ID: 1, Name: "node-1", PrivateNet: []schema.ServerPrivateNet{{Network: netID, IP: "10.0.0.7"}}},
		{ID: 2, Name: "node-2", PrivateNet: []schema.ServerPrivateNet{{Network: netID, IP: "10.0.0.8"}}},
	}
}

func TestListRoutesReadsTargetsBackInOneServerList(t *testing.T) {
	n := schema.Network{ID: 900001, Name: "k8s-seeded", IPRange: "10.0.0.0/8"}
	n.Routes = []schema.NetworkRoute{
		{Destination: "10.244.2.0/24", Gateway: "10.0.0.8"},
		{Destination: "10.244.1.0/24", Gateway: "10.0.0.7"},
		{Destination: "10.244.3.0/24", Gateway: "10.0.0.7"},
		{Destination: "192.168.0.0/16", Gateway: "10.0.0.99"}, // by hand, to an address no server holds
	}
	m, url := newMock(t, hcloudmock.Config{Servers: routeServers(n.ID), Networks: []schema.Network{n}}, nil)
	api, ok := adapter.New(adapter.Config{Endpoint: url, Network: "900001"}, "token", nil).Routes()
	require.True(t, ok)
	page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	route := func(dst, target, gw string) cloudapi.Route {
		return cloudapi.Route{ID: dst, Blackhole: target == "", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: dst, TargetInstanceID: target, TargetAddress: gw}}
	}
	assert.Equal(t, []cloudapi.Route{
		route("10.244.1.0/24", "1", "10.0.0.7"), route("10.244.2.0/24", "2", "10.0.0.8"),
		route("10.244.3.0/24", "1", "10.0.0.7"), route("192.168.0.0/16", "", "10.0.0.99"),
	}, page.Items, "by ID (the destination), the target read back from the gateway, a gateway no server holds a blackhole")
	assert.Empty(t, page.NextPageToken)
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 1}, m.Calls(), "one server list for the whole table, not one call per route")

	page, err = api.ListRoutes(t.Context(), cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	assert.Empty(t, page.Items, "no route carries a tag")
}

// seededNetwork is a network (900001) of routes and count servers (from 1001), server
// i at 10.0.(i/200).(2+i%200) in it.
func seededNetwork(count int, routes ...schema.NetworkRoute) (schema.Network, []schema.Server) {
	n := schema.Network{ID: 900001, Name: "k8s-seeded", IPRange: "10.0.0.0/8", Routes: routes}
	srvs := servers(count)
	for i := range srvs {
		srvs[i].PrivateNet = []schema.ServerPrivateNet{{Network: n.ID, IP: fmt.Sprintf("10.0.%d.%d", i/200, 2+i%200)}}
	}
	return n, srvs
}

// TestListRoutesKeepsTheHoldersAShiftedPageMissed deletes two servers of the first page of
// three while the route list reads the second: the first two servers of the second page
// shift onto the first and the server list misses them. Their routes must keep their
// targets (a blackhole would make the route controller delete a live Node's route): the
// network's members the list missed are read one by one.
func TestListRoutesKeepsTheHoldersAShiftedPageMissed(t *testing.T) {
	n, srvs := seededNetwork(120, schema.NetworkRoute{Destination: "10.244.51.0/24", Gateway: "10.0.0.52"}, schema.NetworkRoute{Destination: "10.244.52.0/24", Gateway: "10.0.0.53"})
	var once sync.Once
	var m *hcloudmock.Server
	m, url := newMock(t, hcloudmock.Config{Servers: srvs, Networks: []schema.Network{n}}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/servers" && r.URL.Query().Get("page") == "2" {
				once.Do(func() { m.DeleteServer(1010); m.DeleteServer(1011) })
			}
			h.ServeHTTP(w, r)
		})
	})
	api, ok := adapter.New(adapter.Config{Endpoint: url, Network: "900001"}, "token", nil).Routes()
	require.True(t, ok)
	page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	for i, want := range []string{"1051", "1052"} {
		assert.False(t, page.Items[i].Blackhole, "route %s", page.Items[i].ID)
		assert.Equal(t, want, page.Items[i].TargetInstanceID, "route %s", page.Items[i].ID)
	}
	assert.Equal(t, 2, m.Calls()["GET /servers/{id}"], "the two servers the shifted list missed, read one by one")
}

// listHeld lists api's routes and checks each one's target against want (destination to
// server ID, "" a blackhole), returning the requests the list made at m.
func listHeld(t *testing.T, api cloudapi.RouteAPI, m *hcloudmock.Server, want map[string]string) hcloudmock.Calls {
	t.Helper()
	before := m.Calls()
	page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range page.Items {
		got[r.ID] = r.TargetInstanceID
		assert.Equal(t, r.TargetInstanceID == "", r.Blackhole, "route %s", r.ID)
	}
	assert.Equal(t, want, got)
	return m.Calls().Sub(before)
}

// TestListRoutesFromTheServersAsLastRead: the first route list reads the network and every
// server (3 pages); the next ones the network alone, while the network's servers as last
// read hold every gateway. A server new to the network is read by ID; a route to an
// address no server is known to hold, or to a server the network no longer lists, is
// read as a blackhole only after a list of every server found no holder.
func TestListRoutesFromTheServersAsLastRead(t *testing.T) {
	n, srvs := seededNetwork(120, schema.NetworkRoute{Destination: "10.244.1.0/24", Gateway: "10.0.0.2"}, schema.NetworkRoute{Destination: "10.244.2.0/24", Gateway: "10.0.0.3"})
	m, url := newMock(t, hcloudmock.Config{Servers: srvs, Networks: []schema.Network{n}}, nil)
	sdk := hcloud.NewClient(hcloud.WithEndpoint(url), hcloud.WithToken("t"), hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}))
	api, _ := adapter.New(adapter.Config{Endpoint: url, Network: "900001"}, "token", nil).Routes()
	list := func(want map[string]string) hcloudmock.Calls { t.Helper(); return listHeld(t, api, m, want) }
	route := func(dst, gw string) {
		_, cidr, err := net.ParseCIDR(dst)
		require.NoError(t, err)
		_, _, err = sdk.Network.AddRoute(t.Context(), &hcloud.Network{ID: n.ID}, hcloud.NetworkAddRouteOpts{Route: hcloud.NetworkRoute{Destination: cidr, Gateway: net.ParseIP(gw)}})
		require.NoError(t, err)
	}

	held := map[string]string{"10.244.1.0/24": "1001", "10.244.2.0/24": "1002"}
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}, list(held), "the first: every server")
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1}, list(held), "the network alone")

	require.NoError(t, m.AddServer(schema.Server{ID: 2000, Name: "new", PrivateNet: []schema.ServerPrivateNet{{Network: n.ID, IP: "10.0.9.9"}}}))
	route("10.244.3.0/24", "10.0.9.9")
	held["10.244.3.0/24"] = "2000"
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers/{id}": 1}, list(held), "a new server read alone")
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1}, list(held))

	route("192.168.0.0/16", "10.9.9.9") // by hand, to an address no server holds
	held["192.168.0.0/16"] = ""
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}, list(held), "a blackhole after a list of every server")
	m.DeleteServer(1002)
	held["10.244.2.0/24"] = ""
	assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}, list(held), "a holder the network no longer lists")
}

// TestFirstRouteListFromTheServersListedWhole: a process's first route list takes the
// servers' private IPs from the list of every server that ListInstances answered from its
// first page to its last (ccmkit's status pass), not from a second list; a walk that did
// not read every page in order, with one page size and without a selector, is not used.
// What the walk cannot answer is read as from the cache: a member it did not see by ID, a
// gateway it gives no member, whole.
func TestFirstRouteListFromTheServersListedWhole(t *testing.T) {
	walk := func(in cloudapi.InstanceAPI, opts cloudapi.ListOptions, pages int) error {
		for range pages {
			p, err := in.ListInstances(t.Context(), opts)
			if err != nil {
				return err
			}
			if opts.PageToken = p.NextPageToken; opts.PageToken == "" {
				break
			}
		}
		return nil
	}
	all := func(in cloudapi.InstanceAPI, m *hcloudmock.Server) error { return walk(in, cloudapi.ListOptions{}, 10) }
	for _, tt := range []struct {
		name string
		list func(in cloudapi.InstanceAPI, m *hcloudmock.Server) error
		then func(m *hcloudmock.Server) // between the walk and the route list
		want hcloudmock.Calls           // of the route list
		held map[string]string
	}{
		{name: "every page in order", list: all, want: hcloudmock.Calls{"GET /networks/{id}": 1}},
		{name: "no walk", list: func(cloudapi.InstanceAPI, *hcloudmock.Server) error { return nil },
			want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}},
		{name: "the first two pages of three", list: func(in cloudapi.InstanceAPI, _ *hcloudmock.Server) error {
			return walk(in, cloudapi.ListOptions{}, 2)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}},
		{name: "a page read twice", list: func(in cloudapi.InstanceAPI, _ *hcloudmock.Server) error {
			if err := walk(in, cloudapi.ListOptions{}, 2); err != nil {
				return err
			}
			return walk(in, cloudapi.ListOptions{PageToken: "2"}, 2)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}},
		{name: "two page sizes", list: func(in cloudapi.InstanceAPI, _ *hcloudmock.Server) error {
			if _, err := in.ListInstances(t.Context(), cloudapi.ListOptions{PageSize: 48}); err != nil { // the next misses two
				return err
			}
			return walk(in, cloudapi.ListOptions{PageToken: "2"}, 2)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}},
		{name: "a selector", list: func(in cloudapi.InstanceAPI, _ *hcloudmock.Server) error {
			return walk(in, cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}}, 10)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}},
		{name: "a page failed and read again", list: func(in cloudapi.InstanceAPI, m *hcloudmock.Server) error {
			if err := walk(in, cloudapi.ListOptions{}, 1); err != nil {
				return err
			}
			m.Inject("GET /servers", 1, hcloudmock.Fault{Code: "service_error"})
			if _, err := in.ListInstances(t.Context(), cloudapi.ListOptions{PageToken: "2"}); err == nil {
				return errors.New("the injected fault did not fail the page")
			}
			return walk(in, cloudapi.ListOptions{PageToken: "2"}, 2)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1}},
		{name: "a selected list between the pages is another list", list: func(in cloudapi.InstanceAPI, _ *hcloudmock.Server) error {
			if err := walk(in, cloudapi.ListOptions{}, 1); err != nil {
				return err
			}
			if err := walk(in, cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}}, 1); err != nil {
				return err
			}
			return walk(in, cloudapi.ListOptions{PageToken: "2"}, 2)
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1}},
		{name: "a holder deleted and its address taken by a server new to the network", list: all, then: func(m *hcloudmock.Server) {
			m.DeleteServer(1001)
			require.NoError(t, m.AddServer(schema.Server{ID: 2000, Name: "new", PrivateNet: []schema.ServerPrivateNet{{Network: 900001, IP: "10.0.0.2"}}}))
		}, want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers/{id}": 1}, held: map[string]string{"10.244.1.0/24": "2000", "10.244.2.0/24": "1002"}},
		{name: "a holder deleted", list: all, then: func(m *hcloudmock.Server) { m.DeleteServer(1002) },
			want: hcloudmock.Calls{"GET /networks/{id}": 1, "GET /servers": 3}, held: map[string]string{"10.244.1.0/24": "1001", "10.244.2.0/24": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, srvs := seededNetwork(120, schema.NetworkRoute{Destination: "10.244.1.0/24", Gateway: "10.0.0.2"}, schema.NetworkRoute{Destination: "10.244.2.0/24", Gateway: "10.0.0.3"})
			m, url := newMock(t, hcloudmock.Config{Servers: srvs, Networks: []schema.Network{n}}, nil)
			c := adapter.New(adapter.Config{Endpoint: url, Network: "900001"}, "token", nil)
			require.NoError(t, tt.list(c.Instances(), m))
			if tt.then != nil {
				tt.then(m)
			}
			api, _ := c.Routes()
			want := tt.held
			if want == nil {
				want = map[string]string{"10.244.1.0/24": "1001", "10.244.2.0/24": "1002"}
			}
			list := func() hcloudmock.Calls { t.Helper(); return listHeld(t, api, m, want) }
			assert.Equal(t, tt.want, list(), "the first route list")
			if tt.held == nil || tt.held["10.244.2.0/24"] != "" {
				assert.Equal(t, hcloudmock.Calls{"GET /networks/{id}": 1}, list(), "the next: the network alone")
			}
		})
	}
}

func TestRouteWritesWaitForTheirAction(t *testing.T) {
	m, url := newMock(t, hcloudmock.Config{Servers: routeServers(network.ID), ActionPolls: 1}, nil)
	api, _ := adapter.New(adapter.Config{Endpoint: url, Network: network.Name}, "token", nil).Routes()
	ctx := t.Context()

	rt, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "2", Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	assert.Equal(t, &cloudapi.Route{ID: "10.244.1.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "2", TargetAddress: "10.0.0.8"}}, rt)
	assert.Equal(t, 1, m.Calls()["POST /networks/{id}/actions/add_route"])
	assert.Positive(t, m.Calls()["GET /actions"], "the action polled until it ended")

	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1"})
	require.ErrorIs(t, err, cloudapi.ErrConflict, "one route per destination")

	m.Inject("POST /networks/{id}/actions/add_route", 1, hcloudmock.Fault{Code: "service_error", InAction: true})
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "1"})
	require.ErrorIs(t, err, cloudapi.ErrTransient, "an action that failed")

	require.NoError(t, api.DeleteRoute(ctx, rt.ID))
	assert.Equal(t, 1, m.Calls()["POST /networks/{id}/actions/delete_route"])
	require.ErrorIs(t, api.DeleteRoute(ctx, rt.ID), cloudapi.ErrNotFound, "the network read has no such route")
	assert.Empty(t, m.Inventory().Networks[0].Routes)

	sdk := hcloud.NewClient(hcloud.WithEndpoint(url), hcloud.WithToken("t"), hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(0)}))
	for _, code := range []string{"invalid_input", "rate_limit_exceeded"} {
		m.Inject("GET /actions", 1, hcloudmock.Fault{Code: code})
		_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.3.0/24", TargetInstanceID: "1"})
		require.ErrorIs(t, err, cloudapi.ErrTransient, "a poll that failed (%s): the route may have been added", code)
		actions := m.Inventory().Actions
		require.NoError(t, sdk.Action.WaitFor(ctx, &hcloud.Action{ID: actions[len(actions)-1].ID, Status: hcloud.ActionStatusRunning}))
		require.NoError(t, api.DeleteRoute(ctx, "10.244.3.0/24"), "it was added")
	}
}

func TestRouteRequestsRefused(t *testing.T) {
	_, url := newMock(t, hcloudmock.Config{Servers: append(routeServers(network.ID), schema.Server{ID: 3, Name: "outside"})}, nil)
	api, _ := adapter.New(adapter.Config{Endpoint: url, Network: network.Name}, "token", nil).Routes()
	for _, tt := range []struct {
		name string
		spec cloudapi.RouteSpec
		want string
	}{
		{"IPv6", cloudapi.RouteSpec{DestinationCIDR: "fd00:10:244::/64", TargetInstanceID: "1"}, "the route table routes IPv4 only"},
		{"host bits", cloudapi.RouteSpec{DestinationCIDR: "10.244.1.1/24", TargetInstanceID: "1"}, "not a canonical IPv4 CIDR"},
		{"not a server ID", cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "bm-1"}, "not a Hetzner Cloud server ID"},
		{"no such server", cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "9"}, `instance "9" has no address in the route table's network`},
		{"a server outside the network", cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "3"}, `instance "3" has no address in the route table's network`},
		{"another next hop", cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.8"}, `target address "10.0.0.8" is not instance "1"'s address 10.0.0.7`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.CreateRoute(t.Context(), tt.spec)
			require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
			assert.ErrorContains(t, err, tt.want)
		})
	}

	missing, _ := adapter.New(adapter.Config{Endpoint: url, Network: "nope"}, "token", nil).Routes()
	_, err := missing.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "a network that does not exist is no answer, never not-found")
	assert.ErrorContains(t, err, `network "nope" does not exist`)
}

func TestRoutesFromTheCloudConfig(t *testing.T) {
	_, url := newMock(t, hcloudmock.Config{Servers: routeServers(network.ID)}, nil)
	base := "cluster: {id: c1}\ncredentials: {token: t}\nenable: {routes: true}\nhcloud: {endpoint: " + url
	_, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(base+", network: k8s}\n"))
	require.ErrorContains(t, err, `routes.clusterCIDRs: required because the "hcloud" backend's routes carry no tags`)

	cloud, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(base+", network: k8s}\nroutes: {clusterCIDRs: [10.244.0.0/16]}\n"))
	require.NoError(t, err)
	_, ok := cloud.Routes()
	assert.True(t, ok)

	_, err = cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(base+"}\n"))
	require.ErrorContains(t, err, `enable.routes: the "hcloud" backend has no routes`, "no network, no routes")
}

// TestCcmkitRoutesOverTheNetwork runs ccmkit's routes over the adapter: the cluster's
// route is listed with its Node, a route to a server that is no Node is not, and a route
// replaced by hand under the same ID (its destination) since the list is not deleted.
func TestCcmkitRoutesOverTheNetwork(t *testing.T) {
	servers := append(routeServers(network.ID), schema.Server{ID: 3, Name: "bastion", PrivateNet: []schema.ServerPrivateNet{{Network: network.ID, IP: "10.0.0.9"}}})
	_, url := newMock(t, hcloudmock.Config{Servers: servers}, nil)
	c := adapter.New(adapter.Config{Endpoint: url, Network: network.Name}, "token", nil)
	api, _ := c.Routes()
	lookup, err := instances.NewLookup(c.Instances(), instances.LookupOptions{})
	require.NoError(t, err)
	r, err := routes.New(api, lookup, routes.Options{ClusterID: "c1", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")},
		NodeNames: func(context.Context) ([]string, error) { return []string{"node-1", "node-2"}, nil }})
	require.NoError(t, err)
	ctx := t.Context()

	require.NoError(t, r.CreateRoute(ctx, "c1", "", &cloudprovider.Route{TargetNode: "node-1", DestinationCIDR: "10.244.1.0/24"}))
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.9.0/24", TargetInstanceID: "3"})
	require.NoError(t, err)
	got, err := r.ListRoutes(ctx, "c1")
	require.NoError(t, err)
	require.Len(t, got, 1, "the route to the bastion is not the cluster's")
	assert.Equal(t, cloudprovider.Route{Name: "10.244.1.0/24", TargetNode: "node-1", DestinationCIDR: "10.244.1.0/24"}, *got[0])

	require.NoError(t, api.DeleteRoute(ctx, "10.244.1.0/24"))
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "3"})
	require.NoError(t, err)
	require.Error(t, r.DeleteRoute(ctx, "c1", got[0]), "the ID now names a route to the bastion")
	page, err := api.ListRoutes(ctx, cloudapi.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Items, 2, "no route deleted")
}

// TestQuietProjectWithRoutesCalls measures what a quiet cluster of 1,000, 5,000 and 20,000
// Nodes with routes on costs against Hetzner's budget of 3,600 requests an hour (one a
// second), as make bench's P1 does: the cloud node controller's status pass every 5
// minutes (one paged list of the servers, N/50 pages); the route controller's list every
// 10 seconds, which ccmkit's route snapshot answers, reading the table at most once a
// minute (cache.maxAge); every Node with its route, nothing changing. 10 minutes are
// counted at the mock from a process's start, the status pass first as in the bench (and
// at 1,000 servers the route list first: its first list fills the instance snapshot
// before it reads the table, routes' owner.warm). A
// read of the table is one read of the network: the gateways' holders are the network's
// servers as last read (cloudapi.GatewayRoutes' Cache; the first time those of the first
// status pass's list, its Listed), never a list of every server. It runs at 1,000 servers; the larger sizes, which
// take minutes (the mock copies every server for each page), run with
// CCMKIT_HCLOUD_SCALE=1.
func TestQuietProjectWithRoutesCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 servers")
	}
	const minutes = 10
	sizes := []int{1000}
	if os.Getenv("CCMKIT_HCLOUD_SCALE") != "" {
		sizes = append(sizes, 5000, 20000)
	}
	for _, tc := range []struct {
		n           int
		routesFirst bool
	}{{sizes[0], true}, {sizes[0], false}, {5000, false}, {20000, false}} {
		n, routesFirst := tc.n, tc.routesFirst
		if !slices.Contains(sizes, n) {
			continue
		}
		t.Run(fmt.Sprintf("%d servers, the route list first %v", n, routesFirst), func(t *testing.T) {
			nw := schema.Network{ID: 900001, Name: "k8s-quiet", IPRange: "10.0.0.0/8"}
			cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20}, Networks: []schema.Network{nw}}
			var nodes []*corev1.Node
			var names []string
			pods := netip.MustParseAddr("100.64.0.0")
			for i := range n {
				name, ip := fmt.Sprintf("node-%05d", i), netip.AddrFrom4([4]byte{10, byte(1 + i>>16), byte(i >> 8), byte(i)})
				cfg.Servers = append(cfg.Servers, schema.Server{ID: int64(1000 + i), Name: name,
					PrivateNet: []schema.ServerPrivateNet{{Network: nw.ID, IP: ip.String()}}})
				cfg.Networks[0].Routes = append(cfg.Networks[0].Routes, schema.NetworkRoute{Destination: netip.PrefixFrom(pods, 26).String(), Gateway: ip.String()})
				for range 64 {
					pods = pods.Next()
				}
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("hcloud://%d", 1000+i)}})
				names = append(names, name)
			}
			m, url := newMock(t, cfg, nil)
			c := adapter.New(adapter.Config{Endpoint: url, Network: nw.Name}, "token", nil)
			clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
			lookup, err := instances.NewLookup(c.Instances(), instances.LookupOptions{Clock: clock})
			require.NoError(t, err)
			format, err := providerid.Default(adapter.ProviderName)
			require.NoError(t, err)
			v2, err := instances.New(lookup, instances.Options{ProviderID: format})
			require.NoError(t, err)
			api, _ := c.Routes()
			r, err := routes.New(api, lookup, routes.Options{ClusterID: "prod", Clock: clock, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")},
				NodeNames: func(context.Context) ([]string, error) { return names, nil }})
			require.NoError(t, err)
			ctx := t.Context()
			list := func() {
				t.Helper()
				got, err := r.ListRoutes(ctx, "prod")
				require.NoError(t, err)
				require.Len(t, got, n, "every Node's route, with its Node")
				for _, rt := range got {
					require.False(t, rt.Blackhole, "route %s", rt.Name)
				}
			}
			before := m.Calls()
			for second := 0; second < minutes*60; second += 10 {
				if second == 0 && routesFirst {
					list() // the route controller's reconcile, before the first status pass
				}
				if second%300 == 0 { // a status pass of the cloud node controller
					for _, node := range nodes {
						_, err := v2.InstanceMetadata(ctx, node)
						require.NoError(t, err)
					}
				}
				list()
				clock.Step(10 * time.Second)
			}
			calls := m.Calls().Sub(before)
			total := 0
			for _, c := range calls {
				total += c
			}
			statusPasses := minutes / 5 * n / 50
			t.Logf("a quiet project of %d servers with routes: %d requests in %d minutes, %.1f a minute (%.0f%% of Hetzner's 60); the routes' %.1f a minute: %v",
				n, total, minutes, float64(total)/minutes, float64(total)/minutes/60*100, float64(total-statusPasses)/minutes, calls)
			assert.Equal(t, statusPasses, calls["GET /servers"], "one paged list of the servers per status pass, none for the routes (the first list's from the first pass's)")
			assert.LessOrEqual(t, calls["GET /networks"], minutes, "a read of the network (by name) per read of the table")
			assert.Len(t, calls, 2, "nothing else: %v", calls)
		})
	}
}
