package sweeper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/sweeper"
)

// taglessRoutes gives the world's fake routes that carry no tags, as Hetzner's.
func taglessRoutes(st *setup) { st.config.Capabilities.TaglessRoutes = true }

// TestRoutesWithoutTagsAreNeverSwept checks that the sweeper keeps every route of a cloud
// whose routes carry no tags, also one into the pod CIDRs whose Node is gone: without
// tags, a route is the cluster's only while its target is one of the cluster's Nodes.
// It does not even list them.
func TestRoutesWithoutTagsAreNeverSwept(t *testing.T) {
	w := newWorld(t, nil, nil, taglessRoutes)
	ctx := t.Context()
	id := w.route("10.244.1.0/24", "i-1", nil) // n1's instance; no Node n1
	w.cloud.ResetCalls()
	for range 3 {
		res, err := w.s.Sweep(ctx)
		require.NoError(t, err)
		assert.Empty(t, res.Deleted)
		w.clock.Step(grace)
	}
	assert.Equal(t, []string{id}, w.routeIDs())
	assert.Zero(t, w.cloud.Calls()[cloudapi.OpListRoutes], "routes without tags are not listed")
}

func TestTeardownListsNoRoutesWithoutTags(t *testing.T) {
	cloud, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TaglessRoutes: true}, Instances: []fake.Instance{{ID: "i-1", Name: "n1"}}})
	require.NoError(t, err)
	api, _ := cloud.Routes()
	_, err = api.CreateRoute(context.Background(), cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-1"})
	require.NoError(t, err)
	found, err := sweeper.Teardown(t.Context(), cloud, cluster, sweeper.TeardownOptions{Delete: true})
	require.ErrorContains(t, err, "teardown: routes not listed: the cloud's routes carry no tags")
	assert.Empty(t, found)
	assert.Len(t, cloud.Inventory().Routes, 1)
	assert.Zero(t, cloud.Calls()[cloudapi.OpListRoutes])
}
