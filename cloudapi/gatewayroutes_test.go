package cloudapi_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestListGatewayRoutes: a route's ID is its destination, its target the holder of its
// gateway (a blackhole without one); pages follow the last ID; tags select none without a
// read.
func TestListGatewayRoutes(t *testing.T) {
	table := []cloudapi.GatewayRoute{
		{Destination: "10.244.2.0/24", Gateway: "10.0.0.3", Holder: "2"},
		{Destination: "10.244.1.0/24", Gateway: "10.0.0.2", Holder: "1"},
		{Destination: "10.244.3.0/24", Gateway: "10.0.0.9"},
	}
	reads := 0
	read := func() ([]cloudapi.GatewayRoute, error) { reads++; return table, nil }
	page, err := cloudapi.ListGatewayRoutes(cloudapi.ListOptions{PageSize: 2}, read)
	require.NoError(t, err)
	assert.Equal(t, []cloudapi.Route{
		{ID: "10.244.1.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "1", TargetAddress: "10.0.0.2"}},
		{ID: "10.244.2.0/24", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "2", TargetAddress: "10.0.0.3"}},
	}, page.Items)
	assert.Equal(t, "10.244.2.0/24", page.NextPageToken)
	page, err = cloudapi.ListGatewayRoutes(cloudapi.ListOptions{PageSize: 2, PageToken: page.NextPageToken}, read)
	require.NoError(t, err)
	assert.Equal(t, []cloudapi.Route{{ID: "10.244.3.0/24", Blackhole: true,
		RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.244.3.0/24", TargetAddress: "10.0.0.9"}}}, page.Items, "no holder: a blackhole")
	assert.Empty(t, page.NextPageToken)
	page, err = cloudapi.ListGatewayRoutes(cloudapi.ListOptions{}, read)
	require.NoError(t, err)
	assert.Len(t, page.Items, 3, "every route without a page size")
	assert.Equal(t, 3, reads)

	page, err = cloudapi.ListGatewayRoutes(cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}}, read)
	require.NoError(t, err)
	assert.Empty(t, page.Items, "no route carries a tag")
	assert.Equal(t, 3, reads, "nothing read for tags")

	failed := errors.New("the cloud failed")
	_, err = cloudapi.ListGatewayRoutes(cloudapi.ListOptions{}, func() ([]cloudapi.GatewayRoute, error) { return nil, failed })
	require.ErrorIs(t, err, failed)
}

func TestGatewayRouteDestination(t *testing.T) {
	for _, tc := range []struct {
		cidr     string
		ipv4Only bool
		ok       bool
	}{
		{"10.244.1.0/24", true, true},
		{"fd00:10:244::/64", false, true},
		{"fd00:10:244::/64", true, false},
		{"10.244.1.1/24", false, false},
		{"10.244.1.0", false, false},
		{"010.244.1.0/24", false, false},
		{"", false, false},
	} {
		t.Run(tc.cidr, func(t *testing.T) {
			dst, err := cloudapi.GatewayRouteDestination(cloudapi.OpCreateRoute, cloudapi.RouteSpec{DestinationCIDR: tc.cidr}, tc.ipv4Only)
			if !tc.ok {
				require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.cidr, dst.String())
		})
	}
}
