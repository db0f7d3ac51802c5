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

// gatewayTable is a route table of one network: routes by destination, and the address
// each instance holds. calls records every read and write.
type gatewayTable struct {
	routes    []cloudapi.GatewayRoute
	addresses map[string]string // instance ID to address
	calls     []string
}

func (g *gatewayTable) api() cloudapi.GatewayRoutes[*gatewayTable] {
	return cloudapi.GatewayRoutes[*gatewayTable]{
		IPv4Only: true,
		Table: func(context.Context, cloudapi.Operation, string) (*gatewayTable, []cloudapi.GatewayRoute, error) {
			g.calls = append(g.calls, "table")
			return g, slices.Clone(g.routes), nil
		},
		Holders: func(context.Context, *gatewayTable) (map[string]string, error) {
			g.calls = append(g.calls, "holders")
			holders := map[string]string{}
			for id, addr := range g.addresses {
				holders[addr] = id
			}
			return holders, nil
		},
		Gateway: func(_ context.Context, op cloudapi.Operation, _ *gatewayTable, id string) (string, error) {
			g.calls = append(g.calls, "gateway "+id)
			if addr, ok := g.addresses[id]; ok {
				return addr, nil
			}
			return "", cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, errors.New("no such instance"))
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
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "the adapter's gateway error, as it is")
	assert.Empty(t, g.routes)

	g.calls = nil
	rt, err := api.CreateRoute(ctx, cloudapi.RouteSpec{Name: "n", DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	assert.Equal(t, &cloudapi.Route{ID: "10.244.1.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.2"}}, rt,
		"as listed: no name, no tags")
	assert.Equal(t, []string{"table", "gateway 1", "add 10.244.1.0/24 10.0.0.2"}, g.calls)

	g.calls = nil
	require.NoError(t, api.DeleteRoute(ctx, rt.ID))
	assert.Equal(t, []string{"table", "delete 10.244.1.0/24 10.0.0.2"}, g.calls)
	require.ErrorIs(t, api.DeleteRoute(ctx, rt.ID), cloudapi.ErrNotFound, "the table read has no such route")
}
