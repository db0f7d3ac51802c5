package cloudapi_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// gatewayTable is a route table of one network: routes by destination, the address each
// instance holds, and the network's members (nil: the api has no Members). calls records
// every read and write; a holders list misses the instances in missed.
type gatewayTable struct {
	routes    []cloudapi.GatewayRoute
	addresses map[string]string // instance ID to address
	members   []string
	missed    map[string]bool
	failing   map[string]bool // calls that fail, transient
	calls     []string
}

// call records c and fails it when it is failing.
func (g *gatewayTable) call(c string) error {
	g.calls = append(g.calls, c)
	if g.failing[c] {
		return cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListRoutes, "", errors.New(c+" failed"))
	}
	return nil
}

func (g *gatewayTable) api() cloudapi.GatewayRoutes[*gatewayTable] {
	var members func(*gatewayTable) []string
	if g.members != nil {
		members = func(*gatewayTable) []string { return slices.Clone(g.members) }
	}
	return cloudapi.GatewayRoutes[*gatewayTable]{
		IPv4Only: true,
		Members:  members,
		Table: func(context.Context, cloudapi.Operation, string) (*gatewayTable, []cloudapi.GatewayRoute, error) {
			g.calls = append(g.calls, "table")
			return g, slices.Clone(g.routes), nil
		},
		Holders: func(context.Context, *gatewayTable) (map[string]string, error) {
			g.calls = append(g.calls, "holders")
			holders := map[string]string{}
			for id, addr := range g.addresses {
				if !g.missed[id] {
					holders[addr] = id
				}
			}
			return holders, nil
		},
		Address: func(_ context.Context, op cloudapi.Operation, _ *gatewayTable, id string) (string, error) {
			if err := g.call("address " + id); err != nil {
				return "", err
			}
			if id == "bad" {
				return "", cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, errors.New("not an instance ID"))
			}
			return g.addresses[id], nil
		},
		Add: func(_ context.Context, _ *gatewayTable, r cloudapi.GatewayRoute) error {
			g.calls = append(g.calls, "add "+r.Destination+" "+r.Gateway)
			g.routes = append(g.routes, cloudapi.GatewayRoute{Destination: r.Destination, Gateway: r.Gateway})
			return nil
		},
		Delete: func(_ context.Context, _ *gatewayTable, r cloudapi.GatewayRoute) error {
			g.calls = append(g.calls, "delete "+r.Destination+" "+r.Gateway)
			g.routes = slices.DeleteFunc(g.routes, func(o cloudapi.GatewayRoute) bool { return o.Destination == r.Destination })
			return nil
		},
	}
}

// TestGatewayRoutesList: a route's ID is its destination, its target the holder of its
// gateway (a blackhole without one), read with one read of the table and one of the
// holders; pages follow the last ID; tags select none without a read.
func TestGatewayRoutesList(t *testing.T) {
	g := &gatewayTable{routes: []cloudapi.GatewayRoute{
		{Destination: "10.244.2.0/24", Gateway: "10.0.0.3"},
		{Destination: "10.244.1.0/24", Gateway: "10.0.0.2"},
		{Destination: "10.244.3.0/24", Gateway: "10.0.0.9"},
	}, addresses: map[string]string{"1": "10.0.0.2", "2": "10.0.0.3"}}
	api := g.api()
	ctx := t.Context()
	page, err := api.ListRoutes(ctx, cloudapi.ListOptions{PageSize: 2})
	require.NoError(t, err)
	assert.Equal(t, []cloudapi.Route{
		{ID: "10.244.1.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.2"}},
		{ID: "10.244.2.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "2", TargetAddress: "10.0.0.3"}},
	}, page.Items)
	assert.Equal(t, "10.244.2.0/24", page.NextPageToken)
	assert.Equal(t, []string{"table", "holders"}, g.calls)
	page, err = api.ListRoutes(ctx, cloudapi.ListOptions{PageSize: 2, PageToken: page.NextPageToken})
	require.NoError(t, err)
	assert.Equal(t, []cloudapi.Route{{ID: "10.244.3.0/24", Blackhole: true,
		RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.3.0/24", TargetAddress: "10.0.0.9"}}}, page.Items, "no holder: a blackhole")
	assert.Empty(t, page.NextPageToken)
	page, err = api.ListRoutes(ctx, cloudapi.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Items, 3, "every route without a page size")

	g.calls = nil
	page, err = api.ListRoutes(ctx, cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	assert.Empty(t, page.Items, "no route carries a tag")
	assert.Empty(t, g.calls, "nothing read for tags")
	assert.True(t, cloudapi.RoutesCarryNoTags(api))
}

// TestGatewayRoutesWrites: a create's destination is checked before any call, its
// target address must be the instance's; a delete of a destination the table has no
// route to is ErrNotFound after the read.
func TestGatewayRoutesWrites(t *testing.T) {
	g := &gatewayTable{addresses: map[string]string{"1": "10.0.0.2"}}
	api := g.api()
	ctx := t.Context()
	for _, cidr := range []string{"fd00:10:244::/64", "10.244.1.1/24", "10.244.1.0", "010.244.1.0/24", ""} {
		_, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: cidr, TargetInstanceID: "1"})
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "%q", cidr)
	}
	assert.Empty(t, g.calls, "nothing called for a destination refused")
	_, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.9"})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.ErrorContains(t, err, `target address "10.0.0.9" is not instance "1"'s address 10.0.0.2`)
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "7"})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "an instance without an address")
	assert.ErrorContains(t, err, `instance "7" has no address in the route table's network`)
	_, err = api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "bad"})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "the adapter's error, as it is")
	assert.ErrorContains(t, err, "not an instance ID")
	assert.Empty(t, g.routes)

	g.calls = nil
	rt, err := api.CreateRoute(ctx, cloudapi.RouteSpec{Name: "n", DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	assert.Equal(t, &cloudapi.Route{ID: "10.244.1.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.2"}}, rt,
		"as listed: no name, no tags")
	assert.Equal(t, []string{"table", "address 1", "add 10.244.1.0/24 10.0.0.2"}, g.calls)

	g.calls = nil
	require.NoError(t, api.DeleteRoute(ctx, rt.ID))
	assert.Equal(t, []string{"table", "delete 10.244.1.0/24 10.0.0.2"}, g.calls)
	require.ErrorIs(t, api.DeleteRoute(ctx, rt.ID), cloudapi.ErrNotFound, "the table read has no such route")
}

// TestGatewayRoutesHoldersFromMembers: with Members, a holders list that missed a member
// (a shifted page) is completed with a read of that member, so its route is no
// blackhole; a table without routes reads no holder.
func TestGatewayRoutesHoldersFromMembers(t *testing.T) {
	g := &gatewayTable{routes: []cloudapi.GatewayRoute{{Destination: "10.244.1.0/24", Gateway: "10.0.0.2"}},
		addresses: map[string]string{"1": "10.0.0.2", "2": "10.0.0.3"}, members: []string{"1", "2"}, missed: map[string]bool{"1": true}}
	api := g.api()
	page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "1", page.Items[0].TargetInstanceID, "the member the list missed holds the gateway")
	assert.Equal(t, []string{"table", "holders", "address 1"}, g.calls)

	g.routes, g.calls = nil, nil
	_, err = api.ListRoutes(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"table"}, g.calls, "no route, no holder to read")
}

// TestGatewayRoutesHoldersCache: with Members and Cache, the first list reads the holders
// whole, and later ones none while the cached members answer every gateway: a member new
// to the network is read alone (many, more than a whole read takes, are read whole); a
// gateway no known member holds, a holder that left the network and two members claiming
// one address each make a whole read, and a route is a blackhole only after it.
func TestGatewayRoutesHoldersCache(t *testing.T) {
	route := func(dst, gw string) cloudapi.GatewayRoute {
		return cloudapi.GatewayRoute{Destination: dst, Gateway: gw}
	}
	type list struct {
		change    func(g *gatewayTable)
		wantCalls []string
		wantHeld  map[string]string // destination to holder, "" a blackhole
	}
	for _, tc := range []struct {
		name  string
		lists []list
	}{
		{"quiet: the second list reads the table alone", []list{
			{nil, []string{"table", "holders"}, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2"}},
			{nil, []string{"table"}, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2"}},
		}},
		{"a server joins with its route: read alone", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) {
				g.addresses["3"], g.members = "10.0.0.4", append(g.members, "3")
				g.routes = append(g.routes, route("10.244.3.0/24", "10.0.0.4"))
			}, []string{"table", "address 3"}, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2", "10.244.3.0/24": "3"}},
			{nil, []string{"table"}, nil},
		}},
		{"more servers join than a whole read takes requests: read whole", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) {
				g.addresses["3"], g.addresses["4"], g.addresses["6"] = "10.0.0.4", "10.0.0.5", "10.0.0.6"
				g.members = append(g.members, "3", "4", "6") // 3 unknown of 5: more than 5/2
			}, []string{"table", "holders"}, nil},
		}},
		{"a route to an address no member is known to hold: read whole, then a blackhole", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) { g.routes = append(g.routes, route("10.244.9.0/24", "10.0.0.9")) },
				[]string{"table", "holders"}, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2", "10.244.9.0/24": ""}},
		}},
		{"a holder leaves the network, a new member takes its address: read alone", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) {
				delete(g.addresses, "1")
				g.addresses["5"], g.members = "10.0.0.2", []string{"2", "5"}
			}, []string{"table", "address 5"}, map[string]string{"10.244.1.0/24": "5", "10.244.2.0/24": "2"}},
		}},
		{"a holder leaves the network: read whole, a blackhole", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) { delete(g.addresses, "1"); g.members = []string{"2"} },
				[]string{"table", "holders"}, map[string]string{"10.244.1.0/24": "", "10.244.2.0/24": "2"}},
		}},
		{"two members claim one address: read whole", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) {
				g.addresses["1"], g.addresses["3"], g.members = "10.0.0.7", "10.0.0.2", append(g.members, "3") // 1 moved, unseen
			}, []string{"table", "address 3", "holders"}, map[string]string{"10.244.1.0/24": "3", "10.244.2.0/24": "2"}},
		}},
		{"a read of a new member fails: the list fails, no blackhole; the next reads it", []list{
			{nil, []string{"table", "holders"}, nil},
			{func(g *gatewayTable) {
				g.addresses["3"], g.members = "10.0.0.4", append(g.members, "3")
				g.routes = append(g.routes, route("10.244.3.0/24", "10.0.0.4"))
				g.failing = map[string]bool{"address 3": true}
			}, []string{"table", "address 3"}, nil},
			{func(g *gatewayTable) { g.failing = nil }, []string{"table", "address 3"}, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2", "10.244.3.0/24": "3"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatewayTable{routes: []cloudapi.GatewayRoute{route("10.244.1.0/24", "10.0.0.2"), route("10.244.2.0/24", "10.0.0.3")},
				addresses: map[string]string{"1": "10.0.0.2", "2": "10.0.0.3"}, members: []string{"1", "2"}}
			api := g.api()
			api.Cache, api.HoldersPage = &cloudapi.GatewayHolders{}, 2
			for i, l := range tc.lists {
				if l.change != nil {
					l.change(g)
				}
				g.calls = nil
				page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
				assert.Equal(t, l.wantCalls, g.calls, "list %d", i)
				if g.failing != nil {
					require.ErrorIs(t, err, cloudapi.ErrTransient, "list %d", i)
					continue
				}
				require.NoError(t, err)
				if l.wantHeld != nil {
					held := map[string]string{}
					for _, r := range page.Items {
						held[r.ID] = r.TargetInstanceID
						assert.Equal(t, r.TargetInstanceID == "", r.Blackhole, "list %d: route %s", i, r.ID)
					}
					assert.Equal(t, l.wantHeld, held, "list %d", i)
				}
			}
		})
	}
}

// TestGatewayRoutesHoldersListed: with Listed, the first list fills the empty cache from
// the adapter's own whole list of the instances (its members only), and resolves as from
// the cache: what it cannot answer is read, alone or whole, never taken as a blackhole from
// the listing; Listed is asked while the cache is empty only.
func TestGatewayRoutesHoldersListed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		listed    map[string]string // nil: Listed has none
		wantCalls []string          // of the first list
	}{
		{"the listing answers every gateway", map[string]string{"1": "10.0.0.2", "2": "10.0.0.3", "9": "10.0.0.9"},
			[]string{"table"}},
		{"no listing: read whole", nil, []string{"table", "holders"}},
		{"a member the listing lacks: read alone", map[string]string{"1": "10.0.0.2"}, []string{"table", "address 2"}},
		{"a member the listing gives no address: read alone", map[string]string{"1": "10.0.0.2", "2": ""}, []string{"table", "address 2"}},
		{"the address of a holder gone since, taken by a member the listing lacks: read alone", map[string]string{"7": "10.0.0.2", "2": "10.0.0.3"},
			[]string{"table", "address 1"}},
		{"a holder moved since: read whole", map[string]string{"1": "10.0.0.8", "2": "10.0.0.3"}, []string{"table", "holders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatewayTable{routes: []cloudapi.GatewayRoute{{Destination: "10.244.1.0/24", Gateway: "10.0.0.2"}, {Destination: "10.244.2.0/24", Gateway: "10.0.0.3"}},
				addresses: map[string]string{"1": "10.0.0.2", "2": "10.0.0.3", "7": "10.0.0.4"}, members: []string{"1", "2"}}
			api := g.api()
			asked := 0
			api.Cache, api.HoldersPage = &cloudapi.GatewayHolders{}, 2
			api.Listed = func(*gatewayTable) (map[string]string, bool) {
				asked++
				return tc.listed, tc.listed != nil
			}
			for i, want := range [][]string{tc.wantCalls, {"table"}} {
				g.calls = nil
				page, err := api.ListRoutes(t.Context(), cloudapi.ListOptions{})
				require.NoError(t, err)
				assert.Equal(t, want, g.calls, "list %d", i)
				held := map[string]string{}
				for _, r := range page.Items {
					held[r.ID] = r.TargetInstanceID
				}
				assert.Equal(t, map[string]string{"10.244.1.0/24": "1", "10.244.2.0/24": "2"}, held, "list %d", i)
			}
			assert.Equal(t, 1, asked, "asked while the cache is empty only")
		})
	}
}
