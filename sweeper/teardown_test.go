package sweeper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/paging"
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
		// Shared by several Services: the cluster's whoever they are.
		{Name: "shared", Tags: shared("ns/front"), Listeners: []cloudapi.Listener{{Name: "uid-a:http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}},
		{Name: "other", Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagService: "uid-o"}},
		{Name: "other-shared", Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagShare: "ns/front"}},
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
		assert.Equal(t, sweeper.KindLoadBalancer, found[2].Kind)
		assert.Equal(t, "share ns/front", found[2].Owner)
		assert.Equal(t, sweeper.KindRoute, found[3].Kind)
		assert.Equal(t, "n1", found[3].Owner)
		assert.Zero(t, cloud.Calls().Writes())
		assert.Equal(t, before, cloud.Inventory())
	})
	t.Run("delete removes the cluster's resources and only them", func(t *testing.T) {
		cloud, ours := teardownCloud(t)
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Equal(t, ours, ids(found))
		inv := cloud.Inventory()
		assert.Len(t, inv.LoadBalancers, 3, "another cluster's, shared or not, and the foreign one")
		assert.Len(t, inv.Routes, 2)
		assert.Empty(t, inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: cluster}))
		for _, rt := range inv.Routes {
			assert.NotEqual(t, cluster, rt.Tags[cloudapi.TagCluster])
		}
		assert.Equal(t, int64(4), cloud.Calls().Writes())
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
		assert.Equal(t, ours[:3], ids(found), "the routes' list failed")
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

// groupCloud is a cloud with target groups: cluster c1's load balancer "a" sends traffic
// to its group "all", and its group "sel" is named by no load balancer; another cluster's
// group, named by that cluster's load balancer, and an untagged group. The fields are the
// IDs of "a" and of the groups.
type groupCloud struct {
	*fake.Cloud
	lb, all, sel, other, untagged string
}

func newGroupCloud(t *testing.T) *groupCloud {
	t.Helper()
	on := true
	cloud, err := fake.New(fake.Config{
		Instances:    []fake.Instance{{ID: "i-1", Name: "n1"}, {ID: "i-2", Name: "n2"}},
		Capabilities: fake.Capabilities{TargetGroups: &on},
	})
	require.NoError(t, err)
	lbs, _ := cloud.LoadBalancers()
	groups, ok := cloud.TargetGroups()
	require.True(t, ok)
	ctx := context.Background()
	group := func(name string, tags map[string]string) string {
		g, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: name, Targets: []string{"i-1", "i-2"}, Tags: tags})
		require.NoError(t, err)
		return g.ID
	}
	lb := func(name, group string, tags map[string]string) string {
		lb, err := lbs.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: name, TargetGroup: group, Tags: tags})
		require.NoError(t, err)
		return lb.ID
	}
	c := &groupCloud{Cloud: cloud}
	c.all = group("all", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: "all-nodes"})
	c.sel = group("sel", map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: "selector-x"})
	c.other = group("other", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: "all-nodes"})
	c.untagged = group("untagged", nil)
	c.lb = lb("a", c.all, owned("uid-a", "ns/a"))
	lb("other", c.other, map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagService: "uid-o"})
	cloud.ResetCalls()
	return c
}

// groupIDs returns the IDs of the target groups left in the cloud.
func (c *groupCloud) groupIDs() []string {
	var out []string
	for _, g := range c.Inventory().TargetGroups {
		out = append(out, g.ID)
	}
	return out
}

func TestTeardownTargetGroups(t *testing.T) {
	ctx := context.Background()
	t.Run("dry run lists the cluster's groups and changes nothing", func(t *testing.T) {
		cloud := newGroupCloud(t)
		before := cloud.Inventory()
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		assert.Equal(t, sweeper.Resource{Kind: sweeper.KindTargetGroup, ID: cloud.all, Name: "all", Owner: "all-nodes"}, found[1])
		assert.Equal(t, sweeper.Resource{Kind: sweeper.KindTargetGroup, ID: cloud.sel, Name: "sel", Owner: "selector-x"}, found[2])
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpListRoutes: 1, cloudapi.OpListTargetGroups: 1}, nonZero(cloud.Calls()))
		assert.Equal(t, before, cloud.Inventory())
	})
	t.Run("delete removes the cluster's load balancers, then its groups, and only them", func(t *testing.T) {
		cloud := newGroupCloud(t)
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		for _, r := range found {
			assert.NoError(t, r.Err, r.ID)
		}
		// The group "all" is deleted although load balancer "a" named it: it went first.
		assert.Equal(t, []string{cloud.other, cloud.untagged}, cloud.groupIDs())
		assert.Empty(t, cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagCluster: cluster}))
		assert.Len(t, cloud.Inventory().LoadBalancers, 1)
		assert.Equal(t, fake.Calls{
			cloudapi.OpListLoadBalancers: 1, cloudapi.OpListRoutes: 1, cloudapi.OpListTargetGroups: 1,
			cloudapi.OpDeleteLoadBalancer: 1, cloudapi.OpDeleteTargetGroup: 2,
		}, nonZero(cloud.Calls()))

		again, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Empty(t, again)
	})
	t.Run("the groups' list is paged", func(t *testing.T) {
		cloud := newGroupCloud(t)
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{PageSize: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		assert.EqualValues(t, 2, cloud.Calls()[cloudapi.OpListTargetGroups], "one page per group of c1")
	})
	t.Run("a group a foreign load balancer names is kept with an error", func(t *testing.T) {
		cloud := newGroupCloud(t)
		lbs, _ := cloud.LoadBalancers()
		foreign, err := lbs.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "foreign", TargetGroup: cloud.sel})
		require.NoError(t, err)
		cloud.ResetCalls()

		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrConflict)
		require.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		assert.NoError(t, found[0].Err)
		assert.NoError(t, found[1].Err)
		require.ErrorIs(t, found[2].Err, cloudapi.ErrConflict)
		assert.Contains(t, found[2].Err.Error(), "target group "+cloud.sel+" kept: still in use by a load balancer that is not the cluster's")
		assert.Equal(t, []string{cloud.sel, cloud.other, cloud.untagged}, cloud.groupIDs())
		lb, err := lbs.GetLoadBalancer(ctx, foreign.ID)
		require.NoError(t, err, "the foreign load balancer is untouched")
		assert.Equal(t, cloud.sel, lb.Spec.TargetGroup)
		assert.EqualValues(t, 2, cloud.Calls()[cloudapi.OpDeleteTargetGroup], "one try each, nothing forced")
		assert.EqualValues(t, 1, cloud.Calls()[cloudapi.OpDeleteLoadBalancer])
	})
	t.Run("a group of a load balancer that failed to delete is kept and names it", func(t *testing.T) {
		cloud := newGroupCloud(t)
		faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
		faults.Script(cloudapi.OpDeleteLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
		found, err := sweeper.Teardown(ctx, faults, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.ErrorIs(t, err, cloudapi.ErrConflict)
		require.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		require.Error(t, found[0].Err)
		require.ErrorIs(t, found[1].Err, cloudapi.ErrConflict)
		assert.Contains(t, found[1].Err.Error(), "still in use by the cluster's load balancer(s) "+cloud.lb+", whose delete failed")
		assert.NoError(t, found[2].Err)
		assert.Equal(t, []string{cloud.all, cloud.other, cloud.untagged}, cloud.groupIDs())

		found, err = sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err, "a second run finishes the job")
		assert.Equal(t, []string{cloud.lb, cloud.all}, ids(found))
		assert.Equal(t, []string{cloud.other, cloud.untagged}, cloud.groupIDs())
	})
	t.Run("a failed list of the load balancers leaves their groups in use", func(t *testing.T) {
		cloud := newGroupCloud(t)
		faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
		faults.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Throttle})
		found, err := sweeper.Teardown(ctx, faults, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrThrottled)
		require.Equal(t, []string{cloud.all, cloud.sel}, ids(found))
		require.ErrorIs(t, found[0].Err, cloudapi.ErrConflict)
		assert.Contains(t, found[0].Err.Error(), "the cluster's load balancers could not be listed")
		assert.Equal(t, []string{cloud.all, cloud.other, cloud.untagged}, cloud.groupIDs())
	})
	t.Run("a failed delete of a group is reported and the rest goes on", func(t *testing.T) {
		cloud := newGroupCloud(t)
		faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
		faults.Script(cloudapi.OpDeleteTargetGroup, faultinject.Fault{Kind: faultinject.Transient})
		found, err := sweeper.Teardown(ctx, faults, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.NotErrorIs(t, err, cloudapi.ErrConflict)
		require.Len(t, found, 3)
		require.ErrorIs(t, found[1].Err, cloudapi.ErrTransient)
		assert.Contains(t, found[1].Err.Error(), "deleting target group "+cloud.all)
		assert.NoError(t, found[2].Err)
		assert.Equal(t, []string{cloud.all, cloud.other, cloud.untagged}, cloud.groupIDs())
	})
	t.Run("a failed list of the groups is reported and the rest goes on", func(t *testing.T) {
		cloud := newGroupCloud(t)
		faults := faultinject.Wrap(cloud, faultinject.Config{Seed: 1})
		faults.Script(cloudapi.OpListTargetGroups, faultinject.Fault{Kind: faultinject.Throttle})
		found, err := sweeper.Teardown(ctx, faults, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, cloudapi.ErrThrottled)
		assert.Equal(t, []string{cloud.lb}, ids(found), "the groups' list failed")
		assert.Zero(t, cloud.Calls()[cloudapi.OpDeleteTargetGroup])
		assert.Len(t, cloud.groupIDs(), 4)
	})
	t.Run("a backend that ignores the tag filter makes no other group ours", func(t *testing.T) {
		cloud := newGroupCloud(t)
		found, err := sweeper.Teardown(ctx, groupsWrapper{cloud.Cloud, unfiltered}, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Equal(t, []string{cloud.lb, cloud.all, cloud.sel}, ids(found))
		assert.Equal(t, []string{cloud.other, cloud.untagged}, cloud.groupIDs())
		assert.EqualValues(t, 2, cloud.Calls()[cloudapi.OpDeleteTargetGroup])
	})
	t.Run("page tokens that do not end delete no group", func(t *testing.T) {
		cloud := newGroupCloud(t)
		found, err := sweeper.Teardown(ctx, groupsWrapper{cloud.Cloud, endless}, cluster, sweeper.TeardownOptions{Delete: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, paging.ErrBadPaging)
		assert.Equal(t, []string{cloud.lb}, ids(found))
		assert.EqualValues(t, 2, cloud.Calls()[cloudapi.OpListTargetGroups], "the token answered twice ends the list")
		assert.Zero(t, cloud.Calls()[cloudapi.OpDeleteTargetGroup])
		assert.Len(t, cloud.groupIDs(), 4)
	})
	t.Run("a cloud without target groups is asked for none", func(t *testing.T) {
		cloud, ours := teardownCloud(t)
		found, err := sweeper.Teardown(ctx, cloud, cluster, sweeper.TeardownOptions{Delete: true})
		require.NoError(t, err)
		assert.Equal(t, ours, ids(found))
		assert.Zero(t, cloud.Calls()[cloudapi.OpListTargetGroups])
		assert.Zero(t, cloud.Calls()[cloudapi.OpDeleteTargetGroup])
	})
}

// nonZero returns calls without the operations that were not called.
func nonZero(calls fake.Calls) fake.Calls {
	out := fake.Calls{}
	for op, n := range calls {
		if n != 0 {
			out[op] = n
		}
	}
	return out
}

// groupsWrapper is a cloud whose target group lists change what the fake answers.
type groupsWrapper struct {
	*fake.Cloud
	list func(ctx context.Context, api cloudapi.TargetGroupAPI, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error)
}

func (w groupsWrapper) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	api, ok := w.Cloud.TargetGroups()
	return wrappedGroups{TargetGroupAPI: api, list: w.list}, ok
}

type wrappedGroups struct {
	cloudapi.TargetGroupAPI
	list func(ctx context.Context, api cloudapi.TargetGroupAPI, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error)
}

func (g wrappedGroups) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return g.list(ctx, g.TargetGroupAPI, opts)
}

// unfiltered lists every group, whatever tags the caller asked for.
func unfiltered(ctx context.Context, api cloudapi.TargetGroupAPI, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	opts.Tags = nil
	return api.ListTargetGroups(ctx, opts)
}

// endless answers the first page again and again, with the same next page token.
func endless(ctx context.Context, api cloudapi.TargetGroupAPI, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	opts.PageToken = ""
	p, err := api.ListTargetGroups(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.NextPageToken = "again"
	return p, nil
}
