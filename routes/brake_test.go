package routes_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/routes"
)

// The ownership checks of routes that carry no tags look up each unknown route's target
// instance. After a project switch the route table is the other project's, and so are
// its targets, which run: such a check never releases the instance snapshot's deletion
// brake (no Node's instance is live), neither while the brake is engaged nor by an
// instance it found before the other project's first instance list, which must still
// engage it.
func TestTaglessOwnershipChecksNeverReleaseTheBrake(t *testing.T) {
	const nodes = 10
	for _, tc := range []struct {
		name string
		// check looks at the other project's route into the pod CIDRs, to x-0.
		check func(t *testing.T, r *routes.Routes, foreign cloudapi.Route)
	}{
		{name: "ListRoutes", check: func(t *testing.T, r *routes.Routes, _ cloudapi.Route) {
			got, err := r.ListRoutes(t.Context(), "c")
			require.NoError(t, err)
			require.Empty(t, got, "no route of the other project is the cluster's")
		}},
		{name: "DeleteRoute", check: func(t *testing.T, r *routes.Routes, foreign cloudapi.Route) {
			err := r.DeleteRoute(t.Context(), "c", &cloudprovider.Route{Name: foreign.ID, DestinationCIDR: foreign.DestinationCIDR})
			require.ErrorContains(t, err, "routes carry no tags, and this one", "refused: not the cluster's")
		}},
	} {
		for _, when := range []string{"while engaged", "before the other project's first list"} {
			t.Run(tc.name+" "+when, func(t *testing.T) {
				ctx := t.Context()
				e := newEnvWithBrake(t, nodes, taglessCloud, instancecache.Brake{
					Window: instancecache.DefaultBrakeWindow, Share: instancecache.DefaultBrakeShare, Minimum: instancecache.DefaultBrakeMinimum})
				engaged := func(msg string) {
					t.Helper()
					_, err := e.lookup.ByIDForNode(ctx, "i-00000") // node-00000's lifecycle check
					var braked *instancecache.BrakeError
					require.ErrorAs(t, err, &braked, msg)
					require.True(t, braked.Engaged, msg)
				}
				_, err := e.lookup.ByIDForNode(ctx, "i-00000") // the cluster's instance list
				require.NoError(t, err)

				// The project switch: the other project's instance x-0, and a route of its
				// own into the cluster's pod CIDRs.
				for i := range nodes {
					require.NoError(t, e.cloud.DeleteInstance(fmt.Sprintf("i-%05d", i)))
				}
				require.NoError(t, e.cloud.AddInstance(cloudapi.Instance{ID: "x-0", Name: "other-0", State: cloudapi.InstanceRunning}))
				foreign := e.seed(t, "10.244.50.0/24", "x-0")
				if when == "while engaged" {
					e.expire()
					engaged("the other project's list engages the brake")
				}
				tc.check(t, e.routes, foreign)
				e.expire() // an instance list that has x-0 live
				engaged("engaged after the ownership check")
			})
		}
	}
}
