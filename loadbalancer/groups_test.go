package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// groupsOn is a fake cloud with target groups.
func groupsOn() fake.Config {
	on := true
	return fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}}
}

// reaches returns, by load balancer name, the instances each load balancer sends traffic
// to, and checks that every load balancer of the cluster names a group and has no targets
// of its own.
func (e *env) reaches(t *testing.T) map[string][]string {
	t.Helper()
	inv := e.cloud.Inventory()
	out := map[string][]string{}
	for _, lb := range inv.LoadBalancers {
		assert.NotEmpty(t, lb.Spec.TargetGroup, "load balancer %s names a target group", lb.ID)
		assert.Empty(t, lb.Spec.Targets, "load balancer %s has no targets of its own", lb.ID)
		targets := slices.Clone(inv.Targets(lb))
		slices.Sort(targets)
		out[lb.Spec.Tags[cloudapi.TagServiceName]] = targets
	}
	return out
}

func TestLoadBalancersWantingTheSameNodesShareOneTargetGroup(t *testing.T) {
	e := newEnv(t, groupsOn())
	nodes := e.labelled("web", "web", "db", "", "web")
	var svcs []*corev1.Service
	for i := range 6 {
		svcs = append(svcs, newService(fmt.Sprintf("all-%d", i)))
	}
	for i := range 3 {
		svcs = append(svcs, newService(fmt.Sprintf("web-%d", i), withNodeSelector("pool=web")))
	}
	for _, svc := range svcs {
		st := e.ensure(t, svc, nodes)
		require.Len(t, st.Ingress, 1)
	}
	inv := e.cloud.Inventory()
	require.Len(t, inv.TargetGroups, 2, "one group per node selector")
	calls := e.cloud.Calls()
	assert.EqualValues(t, 2, calls[cloudapi.OpCreateTargetGroup])
	assert.EqualValues(t, 0, calls[cloudapi.OpUpdateTargetGroup])
	for name, targets := range e.reaches(t) {
		if name[len("default/"):len("default/")+3] == "web" {
			assert.Equal(t, []string{"i-0", "i-1", "i-4"}, targets, name)
		} else {
			assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, targets, name)
		}
	}
	for _, g := range inv.TargetGroups {
		assert.Equal(t, "c1", g.Spec.Tags[cloudapi.TagCluster])
		assert.NotEmpty(t, g.Spec.Tags[cloudapi.TagTargetGroup])
	}

	// Converged: ensuring again costs no call.
	before := e.cloud.Calls()
	for _, svc := range svcs {
		e.ensure(t, svc, nodes)
	}
	assert.Zero(t, e.cloud.Calls().Sub(before).Total())
}

func TestANodeAddedIsOneWritePerTargetGroup(t *testing.T) {
	e := newEnv(t, groupsOn())
	all := e.labelled("web", "web", "db", "", "web")
	before := all[:4]
	var svcs []*corev1.Service
	for i := range 40 {
		tweak := func(*corev1.Service) {}
		if i%4 == 0 {
			tweak = withNodeSelector("pool=web")
		}
		svcs = append(svcs, newService(fmt.Sprintf("svc-%02d", i), tweak))
	}
	for _, svc := range svcs {
		e.ensure(t, svc, before)
	}
	require.Len(t, e.cloud.Inventory().TargetGroups, 2)
	// A later sync reads the groups again (older than the snapshot's age): a read begun
	// before the node set arrives, which no write of the node sync may be based on.
	e.expire()
	start := e.cloud.Calls()
	for _, svc := range svcs {
		e.ensure(t, svc, before)
	}
	reread := e.cloud.Calls().Sub(start)
	assert.EqualValues(t, 2, reread[cloudapi.OpListTargetGroups], reread)
	assert.Zero(t, reread.Writes(), reread)

	// The node sync: every Service with the new node set, from several workers at once.
	update := func(nodes []*corev1.Node) fake.Calls {
		start := e.cloud.Calls()
		var mu sync.Mutex
		var errs []error
		parallel(5, len(svcs), func(i int) {
			if err := e.lb.UpdateLoadBalancer(t.Context(), "c", svcs[i], nodes); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		require.Empty(t, errs)
		return e.cloud.Calls().Sub(start)
	}
	added := update(all)
	assert.EqualValues(t, 2, added[cloudapi.OpUpdateTargetGroup], "one write per group whose Nodes changed: %v", added)
	assert.EqualValues(t, 2, added[cloudapi.OpListTargetGroups], "each write based on a read of its group begun after the node set arrived: %v", added)
	assert.EqualValues(t, 4, added.Total(), "nothing per load balancer: %v", added)
	for name, targets := range e.reaches(t) {
		assert.Contains(t, targets, "i-4", name)
	}

	// The same node set again (the controller's retry, or a Service sync) costs nothing.
	assert.Zero(t, update(all).Total())

	// A Node removed that only the group of every Node has.
	removed := update(slices.Delete(slices.Clone(all), 3, 4))
	assert.EqualValues(t, 1, removed[cloudapi.OpUpdateTargetGroup], "only the group of every Node changes: %v", removed)
	for name, targets := range e.reaches(t) {
		assert.NotContains(t, targets, "i-3", name)
	}
}

func TestLoadBalancersMoveIntoTheirGroupAndOutKeepingTheirAddresses(t *testing.T) {
	e := newEnv(t, groupsOn())
	groups, ok := e.cloud.TargetGroups()
	require.True(t, ok)
	api, _ := e.cloud.LoadBalancers()
	format := mustFormat(t)
	own, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, Clock: e.clock})
	require.NoError(t, err)
	shared, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, Clock: e.clock, TargetGroups: groups})
	require.NoError(t, err)

	svcs := []*corev1.Service{newService("a"), newService("b"), newService("c", withNodeSelector("pool=web"))}
	nodes := e.labelled("web", "", "web", "", "")
	addresses := map[string]string{}
	for _, svc := range svcs {
		st, err := own.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err)
		addresses[svc.Name] = st.Ingress[0].IP
	}
	require.Empty(t, e.cloud.Inventory().TargetGroups)

	before := e.cloud.Calls()
	for _, svc := range svcs {
		st, err := shared.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err)
		assert.Equal(t, addresses[svc.Name], st.Ingress[0].IP, "moved in place")
	}
	moved := e.cloud.Calls().Sub(before)
	assert.EqualValues(t, 3, moved[cloudapi.OpUpdateLoadBalancer], "one update per load balancer: %v", moved)
	assert.EqualValues(t, 2, moved[cloudapi.OpCreateTargetGroup], moved)
	assert.Zero(t, moved[cloudapi.OpCreateLoadBalancer]+moved[cloudapi.OpDeleteLoadBalancer], moved)
	reach := e.reaches(t)
	assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, reach["default/a"])
	assert.Equal(t, []string{"i-0", "i-2"}, reach["default/c"])

	// And back: without target groups, each load balancer has its own targets again.
	e.expire()
	for _, svc := range svcs {
		st, err := own.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err)
		assert.Equal(t, addresses[svc.Name], st.Ingress[0].IP)
	}
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		assert.Empty(t, lb.Spec.TargetGroup)
		assert.NotEmpty(t, lb.Spec.Targets)
	}
}

func TestAnUnusedTargetGroupIsDeletedAndAUsedOneKept(t *testing.T) {
	e := newEnv(t, groupsOn())
	nodes := e.labelled("web", "web", "db", "", "web")
	a := newService("a", withNodeSelector("pool=web"))
	b := newService("b", withNodeSelector("pool=web"))
	c := newService("c")
	for _, svc := range []*corev1.Service{a, b, c} {
		e.ensure(t, svc, nodes)
	}
	require.Len(t, e.cloud.Inventory().TargetGroups, 2)

	// a leaves the web group, which b still uses: kept, without even a delete attempt.
	before := e.cloud.Calls()
	delete(a.Annotations, prefix+loadbalancer.AnnotationNodeSelector)
	e.ensure(t, a, nodes)
	calls := e.cloud.Calls().Sub(before)
	assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup], calls)
	assert.Len(t, e.cloud.Inventory().TargetGroups, 2)

	// b is deleted: the web group has no user left and goes with it.
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", b))
	inv := e.cloud.Inventory()
	require.Len(t, inv.TargetGroups, 1)
	assert.Equal(t, "all-nodes", inv.TargetGroups[0].Spec.Tags[cloudapi.TagTargetGroup])

	// The last ones: nothing of the cluster is left in the cloud.
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", a))
	assert.Len(t, e.cloud.Inventory().TargetGroups, 1, "c still uses the group")
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", c))
	inv = e.cloud.Inventory()
	assert.Empty(t, inv.TargetGroups)
	assert.Empty(t, inv.LoadBalancers)

	// A new Service gets a new group.
	e.ensure(t, newService("d"), nodes)
	assert.Len(t, e.cloud.Inventory().TargetGroups, 1)
}

func TestAKeptLoadBalancerLeavesItsTargetGroup(t *testing.T) {
	e := newEnv(t, groupsOn())
	svc := newService("web", withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"))
	e.ensure(t, svc, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	inv := e.cloud.Inventory()
	require.Len(t, inv.LoadBalancers, 1)
	assert.Empty(t, inv.LoadBalancers[0].Spec.TargetGroup, "no traffic into the cluster from a kept load balancer")
	assert.Empty(t, inv.LoadBalancers[0].Spec.Targets)
	assert.Empty(t, inv.TargetGroups, "the group no load balancer names is deleted")
}

func TestTargetGroupFaults(t *testing.T) {
	newChaos := func(t *testing.T) (*env, *faultinject.Client) {
		var chaos *faultinject.Client
		e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
			chaos = faultinject.Wrap(c, faultinject.Config{})
			return chaos
		})
		return e, chaos
	}
	t.Run("a create whose answer is lost is found and adopted, not repeated", func(t *testing.T) {
		e, chaos := newChaos(t)
		chaos.Script(cloudapi.OpCreateTargetGroup, faultinject.Fault{Kind: faultinject.Ambiguous})
		e.ensure(t, newService("web"), e.nodes)
		assert.Len(t, e.cloud.Inventory().TargetGroups, 1)
		assert.EqualValues(t, 1, e.cloud.Calls()[cloudapi.OpCreateTargetGroup])
		assert.Len(t, e.reaches(t)["default/web"], 5)
	})
	t.Run("a failed list is an error: nothing is created", func(t *testing.T) {
		e, chaos := newChaos(t)
		chaos.Script(cloudapi.OpListTargetGroups, faultinject.Fault{Kind: faultinject.Transient})
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web"), e.nodes)
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		inv := e.cloud.Inventory()
		assert.Empty(t, inv.TargetGroups)
		assert.Empty(t, inv.LoadBalancers)
		// Within the backoff, the next call gets the failure again without a call.
		before := chaos.Injected().Ops[cloudapi.OpListTargetGroups].Calls
		_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web"), e.nodes)
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.Contains(t, err.Error(), "next attempt in")
		assert.Equal(t, before, chaos.Injected().Ops[cloudapi.OpListTargetGroups].Calls, "no group list within the backoff")
		e.clock.Step(time.Second)
		e.ensure(t, newService("web"), e.nodes)
		assert.Len(t, e.cloud.Inventory().TargetGroups, 1)
	})
	t.Run("an update whose answer is lost is read again, not written twice", func(t *testing.T) {
		e, chaos := newChaos(t)
		svc := newService("web")
		e.ensure(t, svc, e.nodes[:4])
		chaos.Script(cloudapi.OpUpdateTargetGroup, faultinject.Fault{Kind: faultinject.Ambiguous})
		require.ErrorIs(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes), cloudapi.ErrTransient)
		before := e.cloud.Calls()
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
		calls := e.cloud.Calls().Sub(before)
		assert.EqualValues(t, 1, calls[cloudapi.OpListTargetGroups], calls)
		assert.Zero(t, calls.Writes(), "the lost write was applied: %v", calls)
		assert.Len(t, e.reaches(t)["default/web"], 5)
	})
	t.Run("a group changed behind ccmkit's back is repaired once the snapshot expires", func(t *testing.T) {
		e, _ := newChaos(t)
		svc := newService("web")
		e.ensure(t, svc, e.nodes)
		groups, _ := e.cloud.TargetGroups()
		g := e.cloud.Inventory().TargetGroups[0]
		spec := g.Spec.Clone()
		spec.Targets = spec.Targets[:1]
		_, err := groups.UpdateTargetGroup(t.Context(), g.ID, cloudapi.DiffTargetGroup(g.Spec, spec))
		require.NoError(t, err)
		e.ensure(t, svc, e.nodes)
		assert.Len(t, e.reaches(t)["default/web"], 1, "within the snapshot's age, trusted")
		e.expire()
		e.ensure(t, svc, e.nodes)
		assert.Len(t, e.reaches(t)["default/web"], 5)
	})
}

func TestARestartFindsTheGroupsAndWritesNothing(t *testing.T) {
	e := newEnv(t, groupsOn())
	nodes := e.labelled("web", "web", "db", "", "web")
	svcs := []*corev1.Service{newService("a"), newService("b"), newService("c", withNodeSelector("pool=web"))}
	for _, svc := range svcs {
		e.ensure(t, svc, nodes)
	}
	api, _ := e.cloud.LoadBalancers()
	groups, _ := e.cloud.TargetGroups()
	restarted, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock, TargetGroups: groups})
	require.NoError(t, err)
	before := e.cloud.Calls()
	for _, svc := range svcs {
		_, err := restarted.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err)
	}
	calls := e.cloud.Calls().Sub(before)
	assert.Zero(t, calls.Writes(), calls)
	assert.EqualValues(t, 3, calls[cloudapi.OpListTargetGroups], "one list per group, and one of the cluster's groups to collect what a predecessor left: %v", calls)
	assert.EqualValues(t, 1, calls[cloudapi.OpListLoadBalancers], calls)
}

func TestANodeLabelChangeWritesTheSelectorsGroupOnce(t *testing.T) {
	e := newEnv(t, groupsOn())
	nodes := e.labelled("web", "web", "db", "", "")
	var svcs []*corev1.Service
	for i := range 5 {
		svcs = append(svcs, newService(fmt.Sprintf("web-%d", i), withNodeSelector("pool=web")))
	}
	svcs = append(svcs, newService("all"))
	for _, svc := range svcs {
		e.ensure(t, svc, nodes)
	}
	relabelled := e.labelled("web", "web", "db", "", "web")
	before := e.cloud.Calls()
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), relabelled))
	calls := e.cloud.Calls().Sub(before)
	assert.EqualValues(t, 1, calls[cloudapi.OpUpdateTargetGroup], calls)
	assert.Zero(t, calls[cloudapi.OpUpdateLoadBalancer], calls)
	for name, targets := range e.reaches(t) {
		if name == "default/all" {
			assert.Len(t, targets, 5)
		} else {
			assert.Equal(t, []string{"i-0", "i-1", "i-4"}, targets, name)
		}
	}
}

func TestALoadBalancerRefusedForAGroupGoneBehindCcmkitsBackGetsANewOne(t *testing.T) {
	e := newEnv(t, groupsOn())
	web := newService("web")
	e.ensure(t, web, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	// Deleted behind ccmkit's back while it is unused, then a Service wants it again: the
	// group's entry, as ccmkit last learnt it, is stale.
	e.ensure(t, newService("a"), e.nodes)
	groups, _ := e.cloud.TargetGroups()
	g := e.cloud.Inventory().TargetGroups[0]
	lbs, _ := e.cloud.LoadBalancers()
	require.NoError(t, lbs.DeleteLoadBalancer(t.Context(), e.cloud.Inventory().LoadBalancers[0].ID))
	require.NoError(t, groups.DeleteTargetGroup(t.Context(), g.ID))

	b := newService("b")
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", b, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "the cloud refuses a load balancer naming a group it lacks")
	e.ensure(t, b, e.nodes)
	require.Len(t, e.cloud.Inventory().TargetGroups, 1)
	assert.Len(t, e.reaches(t)["default/b"], 5)
}

// groupIDs returns the IDs of the cloud's target groups.
func (e *env) groupIDs() []string {
	var ids []string
	for _, g := range e.cloud.Inventory().TargetGroups {
		ids = append(ids, g.ID)
	}
	return ids
}

func TestAGroupThatIsNotTheClustersIsNeverDeleted(t *testing.T) {
	t.Run("adopting a load balancer that names another's group", func(t *testing.T) {
		e := newEnv(t, groupsOn())
		groups, _ := e.cloud.TargetGroups()
		foreign, err := groups.CreateTargetGroup(t.Context(), cloudapi.TargetGroupSpec{Name: "operators-own", Targets: []string{"i-0"}, Tags: map[string]string{"team": "a"}})
		require.NoError(t, err)
		lb := e.unowned(t, "kept", func(s *cloudapi.LoadBalancerSpec) { s.TargetGroup = foreign.ID })
		svc := newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, lb.ID))
		e.ensure(t, svc, e.nodes)
		assert.NotEqual(t, foreign.ID, e.byID(t, lb.ID).Spec.TargetGroup, "adopted into the cluster's group")
		e.expire()
		e.ensure(t, svc, e.nodes) // a collection
		assert.Contains(t, e.groupIDs(), foreign.ID)
		assert.Zero(t, e.cloud.Calls()[cloudapi.OpDeleteTargetGroup])
	})
	t.Run("a backend that ignores the tag filter", func(t *testing.T) {
		e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
			g, _ := cloudapi.TargetGroups(c)
			return groupWrap{c, unfiltered{g}}
		})
		groups, _ := e.cloud.TargetGroups()
		other, err := groups.CreateTargetGroup(t.Context(), cloudapi.TargetGroupSpec{Name: "other-cluster", Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: "all-nodes"}})
		require.NoError(t, err)
		svc := newService("web")
		e.ensure(t, svc, e.nodes)
		assert.NotEqual(t, other.ID, e.only(t).Spec.TargetGroup, "another cluster's group is never used")
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		e.expire()
		e.ensure(t, newService("again"), e.nodes)
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", newService("again")))
		assert.Equal(t, []string{other.ID}, e.groupIDs(), "only the cluster's groups are deleted")
	})
}

// unfiltered is a target group API that ignores the tag filter of its lists.
type unfiltered struct{ cloudapi.TargetGroupAPI }

func (u unfiltered) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	opts.Tags = nil
	return u.TargetGroupAPI.ListTargetGroups(ctx, opts)
}

// groupWrap is a client whose target group API is g.
type groupWrap struct {
	cloudapi.Client
	g cloudapi.TargetGroupAPI
}

func (w groupWrap) TargetGroups() (cloudapi.TargetGroupAPI, bool) { return w.g, true }

// conflictOnce refuses the first delete of a group as in use, as a cloud whose load
// balancers are deleted asynchronously would.
type conflictOnce struct {
	cloudapi.TargetGroupAPI
	once sync.Once
}

func (c *conflictOnce) DeleteTargetGroup(ctx context.Context, id string) error {
	var err error
	c.once.Do(func() {
		err = cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpDeleteTargetGroup, id, errors.New("a load balancer that is being deleted names it"))
	})
	if err != nil {
		return err
	}
	return c.TargetGroupAPI.DeleteTargetGroup(ctx, id)
}

func TestAGroupLeftUnusedIsCollected(t *testing.T) {
	nodes := func(e *env) []*corev1.Node { return e.labelled("web", "web", "", "", "") }
	for _, tc := range []struct {
		name  string
		wrap  func(*faultinject.Client) cloudapi.Client
		leave func(t *testing.T, e *env, chaos *faultinject.Client)
		// before: leave runs before the LoadBalancer's first call (a predecessor's).
		before bool
	}{
		{"a load balancer create failed after its group was made, and the Service went", nil, func(t *testing.T, e *env, chaos *faultinject.Client) {
			svc := newService("web", withNodeSelector("pool=web"))
			chaos.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes(e))
			require.Error(t, err)
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		}, false},
		{"two load balancers of one Service named it, both deleted", nil, func(t *testing.T, e *env, _ *faultinject.Client) {
			svc := newService("web", withNodeSelector("pool=web"))
			e.ensure(t, svc, nodes(e))
			api, _ := e.cloud.LoadBalancers()
			spec := e.cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-web"})[0].Spec.Clone()
			spec.Name = "duplicate"
			_, err := api.CreateLoadBalancer(t.Context(), spec)
			require.NoError(t, err)
			e.expire()
			e.ensure(t, newService("other"), nodes(e)) // the snapshot lists both
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", newService("other")))
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		}, false},
		{"the cloud refused its delete as in use", func(c *faultinject.Client) cloudapi.Client {
			g, _ := cloudapi.TargetGroups(c)
			return groupWrap{c, &conflictOnce{TargetGroupAPI: g}}
		}, func(t *testing.T, e *env, _ *faultinject.Client) {
			svc := newService("web", withNodeSelector("pool=web"))
			e.ensure(t, svc, nodes(e))
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		}, false},
		{"a predecessor moved a load balancer and stopped before deleting the group", nil, func(t *testing.T, e *env, _ *faultinject.Client) {
			groups, _ := e.cloud.TargetGroups()
			_, err := groups.CreateTargetGroup(t.Context(), cloudapi.TargetGroupSpec{Name: "left", Tags: map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagTargetGroup: "selector-0123456789abcdef"}})
			require.NoError(t, err)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chaos *faultinject.Client
			e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
				chaos = faultinject.Wrap(c, faultinject.Config{})
				if tc.wrap != nil {
					return tc.wrap(chaos)
				}
				return chaos
			})
			if tc.before {
				tc.leave(t, e, chaos)
			}
			// The first call's collection (a predecessor's groups) is over.
			e.ensure(t, newService("keep"), nodes(e))
			if !tc.before {
				tc.leave(t, e, chaos)
			}

			// Any later call, once the collection's wait is over and the group is older
			// than 32 times the snapshot's age (a group made for a create that keeps
			// failing is not made again at every retry), deletes it; the group in use is
			// kept.
			keep := newService("keep")
			e.clock.Step(33 * loadbalancer.DefaultMaxAge)
			e.ensure(t, keep, nodes(e))
			e.expire()
			e.ensure(t, keep, nodes(e))
			assert.Equal(t, []string{e.cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-keep"})[0].Spec.TargetGroup}, e.groupIDs(), "only the group in use is left")
		})
	}
}

// holdCreate holds a load balancer create, once it has begun, until release is closed.
type holdCreate struct {
	cloudapi.LoadBalancerAPI
	creating, release chan struct{}
}

func (h holdCreate) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	close(h.creating)
	<-h.release
	return h.LoadBalancerAPI.CreateLoadBalancer(ctx, spec)
}

func TestAGroupIsNotDeletedUnderACallThatChoseIt(t *testing.T) {
	e := newEnv(t, groupsOn())
	nodes := e.labelled("web", "web", "db", "db", "")
	a := newService("a", withNodeSelector("pool=web"))
	e.ensure(t, a, nodes)
	web := e.only(t).Spec.TargetGroup

	// After a restart, b has chosen the web group and is creating its load balancer when
	// a leaves the group: the cloud does not know of b's load balancer yet.
	api, _ := e.cloud.LoadBalancers()
	hold := holdCreate{LoadBalancerAPI: api, creating: make(chan struct{}), release: make(chan struct{})}
	b := newService("b", withNodeSelector("pool=web"))
	berr := make(chan error, 1)
	groups, _ := e.cloud.TargetGroups()
	other, err := loadbalancer.New(hold, loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock, TargetGroups: groups})
	require.NoError(t, err)
	go func() {
		_, err := other.EnsureLoadBalancer(t.Context(), "c", b, nodes)
		berr <- err
	}()
	<-hold.creating
	a.Annotations[prefix+loadbalancer.AnnotationNodeSelector] = "pool=db"
	_, err = other.EnsureLoadBalancer(t.Context(), "c", a, nodes)
	close(hold.release)
	require.NoError(t, err)
	require.NoError(t, <-berr, "b's load balancer names the group it chose")
	assert.Contains(t, e.groupIDs(), web)
}

func TestAnInternalSwitchKeepsTheGroup(t *testing.T) {
	e := newEnv(t, groupsOn())
	svc := newService("web", withNodeSelector("pool=web"))
	nodes := e.labelled("web", "web", "", "", "")
	e.ensure(t, svc, nodes)
	group := e.only(t).Spec.TargetGroup
	svc.Annotations[prefix+loadbalancer.AnnotationInternal] = "true"
	e.ensure(t, svc, nodes)
	lb := e.only(t)
	assert.True(t, lb.Spec.Internal)
	assert.Equal(t, group, lb.Spec.TargetGroup, "the new load balancer names the same group")
	assert.Equal(t, []string{group}, e.groupIDs())
	assert.Zero(t, e.cloud.Calls()[cloudapi.OpDeleteTargetGroup])
}

func TestARefusedChangeCostsNoGroupRead(t *testing.T) {
	off := false
	cfg := groupsOn()
	cfg.Capabilities.TLS = &off
	e := newEnv(t, cfg)
	var svcs []*corev1.Service
	for i := range 10 {
		svcs = append(svcs, newService(fmt.Sprintf("s%d", i), webPorts))
	}
	for _, svc := range svcs {
		e.ensure(t, svc, e.nodes[:4])
	}
	for i := range 5 { // they now ask for TLS, which the cloud refuses
		svcs[i] = newService(fmt.Sprintf("s%d", i), webPorts, withAnnotation(loadbalancer.AnnotationTLSPorts, "443"), withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a"))
	}
	before := e.cloud.Calls()
	for _, svc := range svcs {
		_ = e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes)
	}
	calls := e.cloud.Calls().Sub(before)
	assert.EqualValues(t, 1, calls[cloudapi.OpListTargetGroups], "a refusal that did not touch the group keeps what is known of it: %v", calls)
	assert.EqualValues(t, 1, calls[cloudapi.OpUpdateTargetGroup], calls)
	assert.Len(t, e.reaches(t)["default/s9"], 5)
}

func TestAGroupLeftByALostDeleteIsCollectedWhenTheServiceControllerAsksAgain(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	svc := newService("web")
	e.ensure(t, svc, e.nodes) // its collection (a predecessor's groups) is over
	// The delete is applied but its answer lost, and the collection that follows cannot
	// list the groups.
	chaos.Script(cloudapi.OpDeleteLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	chaos.Script(cloudapi.OpListTargetGroups, faultinject.Fault{Kind: faultinject.Transient})
	require.ErrorIs(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc), cloudapi.ErrTransient)
	require.Len(t, e.cloud.Inventory().TargetGroups, 1)
	// The service controller's retry asks whether there is a load balancer left: none,
	// so it calls nothing else. (The group was made by this LoadBalancer a moment ago:
	// a collection leaves such a group for 32 times the snapshot's age.)
	e.clock.Step(33 * loadbalancer.DefaultMaxAge)
	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
	require.NoError(t, err)
	require.False(t, exists)
	assert.Empty(t, e.cloud.Inventory().TargetGroups, "the group the deleted load balancer named is collected")
}

func TestCollectGroupsRunsACollectionNoCallRuns(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	// The group's delete fails; the collection that follows leaves the group, made a
	// moment ago; no call comes after.
	chaos.Script(cloudapi.OpDeleteTargetGroup, faultinject.Fault{Kind: faultinject.Transient})
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	require.Len(t, e.cloud.Inventory().TargetGroups, 1)

	e.lb.CollectGroups(t.Context())
	assert.Len(t, e.cloud.Inventory().TargetGroups, 1, "within the wait after a collection that left a group")
	e.clock.Step(33 * loadbalancer.DefaultMaxAge) // and older than a group made lately
	e.lb.CollectGroups(t.Context())
	assert.Empty(t, e.cloud.Inventory().TargetGroups, "the periodic collection deletes it without a call")
}

// asyncDelete is a load balancer API whose deletes finish later (finish): until then the
// load balancer is listed in status deleting, as some clouds do.
type asyncDelete struct {
	cloudapi.LoadBalancerAPI
	mu      sync.Mutex
	pending map[string]bool
}

func (a *asyncDelete) DeleteLoadBalancer(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[id] = true
	return nil
}

func (a *asyncDelete) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	p, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
	if p != nil {
		a.mu.Lock()
		for i := range p.Items {
			if a.pending[p.Items[i].ID] {
				p.Items[i].Status = cloudapi.LoadBalancerDeleting
			}
		}
		a.mu.Unlock()
	}
	return p, err
}

func (a *asyncDelete) finish(t *testing.T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.pending {
		require.NoError(t, a.LoadBalancerAPI.DeleteLoadBalancer(t.Context(), id))
	}
	a.pending = map[string]bool{}
}

// lbWrap is a client whose load balancer API is lbs.
type lbWrap struct {
	cloudapi.Client
	lbs cloudapi.LoadBalancerAPI
}

func (w lbWrap) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return w.lbs, true }
func (w lbWrap) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	return cloudapi.TargetGroups(w.Client)
}

func TestAGroupOfALoadBalancerTheCloudDeletesLaterIsCollected(t *testing.T) {
	var async *asyncDelete
	e := newEnv(t, groupsOn(), func(c cloudapi.Client) cloudapi.Client {
		api, _ := c.LoadBalancers()
		async = &asyncDelete{LoadBalancerAPI: api, pending: map[string]bool{}}
		return lbWrap{c, async}
	})
	nodes := e.labelled("web", "web", "", "", "")
	keep := newService("keep")
	e.ensure(t, keep, nodes)
	web := newService("web", withNodeSelector("pool=web"))
	e.ensure(t, web, nodes)
	require.Len(t, e.groupIDs(), 2)

	e.clock.Step(33 * loadbalancer.DefaultMaxAge) // the web group is not new
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	require.Len(t, e.groupIDs(), 2, "refused while the load balancer is being deleted")
	async.finish(t)
	for range 3 {
		e.clock.Step(4 * loadbalancer.DefaultMaxAge)
		e.ensure(t, keep, nodes)
	}
	assert.Len(t, e.groupIDs(), 1, "the web group, named by no load balancer once the cloud is done, is collected")
}

func TestAServiceWhoseCreateKeepsFailingMakesItsGroupOnce(t *testing.T) {
	off := false
	cfg := groupsOn()
	cfg.Capabilities.TLS = &off
	e := newEnv(t, cfg)
	nodes := e.labelled("web", "web", "", "", "")
	e.ensure(t, newService("keep"), nodes)
	svc := newService("tls", webPorts, withNodeSelector("pool=web"), withAnnotation(loadbalancer.AnnotationTLSPorts, "443"), withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a"))
	before := e.cloud.Calls()
	for range 5 {
		e.clock.Step(5 * time.Minute) // the service controller's retry at its longest backoff
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	}
	calls := e.cloud.Calls().Sub(before)
	assert.EqualValues(t, 1, calls[cloudapi.OpCreateTargetGroup], "a group made once, not at every retry: %v", calls)
	assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup], calls)
}
