package sweeper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/sweeper"
)

// teardownCloud is a cloud with two load balancers and a route of cluster c1, and
// resources of another cluster and without tags.
func teardownCloud(t *testing.T) (*fake.Cloud, []string) {
	t.Helper()
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "n1"}}})
	require.NoError(t, err)
	lbs, _ := cloud.LoadBalancers()
	rts, _ := cloud.Routes()
	ctx := context.Background()
	var ours []string
	for _, spec := range []cloudapi.LoadBalancerSpec{
		{Name: "a", Tags: owned("uid-a", "ns/a")},
		{Name: "b", Tags: map[string]string{cloudapi.TagCluster: cluster}},
		{Name: "other", Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagService: "uid-o"}},
		{Name: "foreign"},
	} {
		lb, err := lbs.CreateLoadBalancer(ctx, spec)
		require.NoError(t, err)
		if spec.Tags[cloudapi.TagCluster] == cluster {
			ours = append(ours, lb.ID)
		}
	}
	for _, spec := range []cloudapi.RouteSpec{
		{DestinationCIDR: "10.0.1.0/24", TargetInstanceID: "i-1", Tags: map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagNode: "n1"}},
		{DestinationCIDR: "10.0.2.0/24", TargetInstanceID: "i-1", Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagNode: "n1"}},
		{DestinationCIDR: "10.0.3.0/24", TargetInstanceID: "i-1"},
	} {
		rt, err := rts.CreateRoute(ctx, spec)
		require.NoError(t, err)
		if spec.Tags[cloudapi.TagCluster] == cluster {
			ours = append(ours, rt.ID)
		}
	}
	cloud.ResetCalls()
	return cloud, ours
}

func ids(rs []sweeper.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestTeardown(t *testing.T) {
	ctx := context.Background()
	t.Run("dry run lists the cluster's resources and changes nothing", func(t *testing.T) {
		cloud, ours := teardownCloud(t)
		before := cloud.Inventory()
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{})
		require.NoError(t, err)
		assert.Equal(t, ours, ids(found))
		assert.Equal(t, sweeper.KindLoadBalancer, found[0].Kind)
		assert.Equal(t, "ns/a", found[0].Owner)
		assert.Equal(t, sweeper.KindRoute, found[2].Kind)
		assert.Equal(t, "n1", found[2].Owner)
		assert.Zero(t, cloud.Calls().Writes())
		assert.Equal(t, before, cloud.Inventory())
	})
	t.Run("delete removes the cluster's resources and only them", func(t *testing.T) {
		cloud, ours := teardownCloud(t)
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Equal(t, ours, ids(found))
		inv := cloud.Inventory()
		assert.Len(t, inv.LoadBalancers, 2)
		assert.Len(t, inv.Routes, 2)
		assert.Empty(t, inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: cluster}))
		for _, rt := range inv.Routes {
			assert.NotEqual(t, cluster, rt.Tags[cloudapi.TagCluster])
		}
		assert.Equal(t, int64(3), cloud.Calls().Writes())
		again, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Empty(t, again)
	})
	t.Run("failures are reported and the rest goes on", func(t *testing.T) {
		cloud, ours := teardownCloud(t)
		faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
		faults.Script(cloudapi.OpDeleteLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
		faults.Script(cloudapi.OpListRoutes, faultinject.Fault{Kind: faultinject.Throttle})
		found, err := sweeper.Teardown(ctx, faults, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.ErrorIs(t, err, cloudapi.ErrThrottled)
		assert.Equal(t, ours[:2], ids(found), "the routes' list failed")
		require.Error(t, found[0].Err)
		assert.NoError(t, found[1].Err)
		assert.Len(t, cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagCluster: cluster}), 1)
	})
	t.Run("an empty cluster ID is refused", func(t *testing.T) {
		cloud, _ := teardownCloud(t)
		_, err := sweeper.Teardown(ctx, cloud, "", sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.Zero(t, cloud.Calls().Total())
	})
}
