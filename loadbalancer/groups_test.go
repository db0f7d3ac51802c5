package loadbalancer_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

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
	assert.EqualValues(t, 2, calls[cloudapi.OpListTargetGroups], "one list per group: %v", calls)
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
