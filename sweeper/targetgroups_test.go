package sweeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/sweeper"
)

// withGroups gives the fake cloud target groups, which the sweeper then sweeps.
func withGroups(st *setup) {
	on := true
	st.config.Capabilities.TargetGroups = &on
}

// groupOps are the target group operations.
var groupOps = []cloudapi.Operation{cloudapi.OpListTargetGroups, cloudapi.OpCreateTargetGroup, cloudapi.OpUpdateTargetGroup, cloudapi.OpDeleteTargetGroup}

// groupTags are the tags loadbalancer gives the cluster's group of key.
func groupTags(key string) map[string]string {
	return map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: key}
}

// group creates a target group with tags and returns its ID.
func (w *world) group(name string, tags map[string]string) string {
	w.t.Helper()
	api, ok := w.cloud.TargetGroups()
	require.True(w.t, ok, "the world has no target groups: newWorld(..., withGroups)")
	g, err := api.CreateTargetGroup(context.Background(), cloudapi.TargetGroupSpec{Name: name, Targets: []string{"i-1"}, Tags: tags})
	require.NoError(w.t, err)
	return g.ID
}

// lbIn creates a load balancer with tags that sends traffic to the target group and
// returns its ID.
func (w *world) lbIn(name, group string, tags map[string]string) string {
	w.t.Helper()
	api, _ := w.cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(context.Background(), cloudapi.LoadBalancerSpec{Name: name, TargetGroup: group, Tags: tags})
	require.NoError(w.t, err)
	return lb.ID
}

func (w *world) groupIDs() []string {
	var ids []string
	for _, g := range w.cloud.Inventory().TargetGroups {
		ids = append(ids, g.ID)
	}
	return ids
}

// groupCalls are the calls of each target group operation, and of ListLoadBalancers,
// since before.
func (w *world) groupCalls(before fake.Calls) map[cloudapi.Operation]int64 {
	calls := w.cloud.Calls().Sub(before)
	out := map[cloudapi.Operation]int64{}
	for _, op := range append([]cloudapi.Operation{cloudapi.OpListLoadBalancers}, groupOps...) {
		if calls[op] != 0 {
			out[op] = calls[op]
		}
	}
	return out
}

// sweepOnce runs one sweep that must succeed and returns it with the calls it made.
func (w *world) sweepOnce() (sweeper.Result, map[cloudapi.Operation]int64) {
	w.t.Helper()
	before := w.cloud.Calls()
	res, err := w.s.Sweep(context.Background())
	require.NoError(w.t, err)
	return res, w.groupCalls(before)
}

func TestSweepDeletesOrphanedTargetGroupsAfterTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name string
		// keepLBs: the load balancers are listed, never swept (kept on delete).
		keepLBs bool
		// lying: the cloud ignores the tag filter of the list of groups.
		lying bool
	}{
		{name: "load balancers swept"},
		{name: "load balancers only listed", keepLBs: true},
		{name: "a cloud that ignores the tag filter", lying: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{newService("ns", "live", "uid-live")}, nil, withGroups, func(st *setup) {
				st.keepLBs = tc.keepLBs
				if tc.lying {
					st.wrapGroups = func(api cloudapi.TargetGroupAPI) cloudapi.TargetGroupAPI {
						return wrappedGroups{TargetGroupAPI: api, list: unfiltered}
					}
				}
			})
			orphan := w.group("orphan", groupTags("all-nodes"))
			used := w.group("used", groupTags("selector-a"))
			usedByOwnerless := w.group("used-by-ownerless", groupTags("selector-b"))
			other := w.group("other", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: "all-nodes"})
			untagged := w.group("untagged", nil)
			notOurs := w.group("not-ours", map[string]string{cloudapi.TagCluster: cluster}) // no TagTargetGroup: not ccmkit's
			w.lbIn("live", used, owned("uid-live", "ns/live"))
			w.lbIn("ownerless", usedByOwnerless, map[string]string{cloudapi.TagCluster: cluster})
			goneLB := w.lb("gone", owned("uid-gone", "ns/gone")) // an orphaned load balancer
			w.cloud.ResetCalls()
			var wantDeleted []sweeper.Resource
			wantSwept := map[string]int{"target_group/deleted": 1}
			if !tc.keepLBs {
				wantDeleted = append(wantDeleted, sweeper.Resource{Kind: sweeper.KindLoadBalancer, ID: goneLB, Name: "gone", Owner: "ns/gone"})
				wantSwept["load_balancer/deleted"] = 1
			}

			res, calls := w.sweepOnce()
			assert.Empty(t, res.Deleted, "nothing before the grace period")
			assert.Equal(t, 1+len(wantDeleted), res.Suspects, "the orphaned group (and load balancer)")
			assert.Equal(t, map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 1}, calls)

			w.clock.Step(grace - time.Second)
			res, calls = w.sweepOnce()
			assert.Empty(t, res.Deleted, "still in the grace period")
			assert.Equal(t, map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 1}, calls)

			w.clock.Step(time.Second)
			res, calls = w.sweepOnce()
			wantDeleted = append(wantDeleted, sweeper.Resource{Kind: sweeper.KindTargetGroup, ID: orphan, Name: "orphan", Owner: "all-nodes"})
			assert.Equal(t, wantDeleted, res.Deleted)
			assert.Equal(t, map[cloudapi.Operation]int64{
				cloudapi.OpListTargetGroups:  1,
				cloudapi.OpListLoadBalancers: 2, // the sweep's, and the fresh one right before the delete
				cloudapi.OpDeleteTargetGroup: 1,
			}, calls)
			assert.ElementsMatch(t, []string{used, usedByOwnerless, other, untagged, notOurs}, w.groupIDs())
			assert.Equal(t, wantSwept, w.swept)
			assert.Len(t, w.events(), len(wantDeleted)-1, "an event for the load balancer; a group has no owner to record one on")
			assert.Zero(t, res.Suspects)

			res, calls = w.sweepOnce()
			assert.Empty(t, res.Deleted)
			assert.Equal(t, map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 1}, calls)
			if tc.keepLBs {
				assert.Contains(t, w.lbIDs(), goneLB, "load balancers only listed are never deleted")
				assert.Zero(t, w.cloud.Calls()[cloudapi.OpDeleteLoadBalancer]+w.cloud.Calls()[cloudapi.OpGetLoadBalancer])
			}
		})
	}
}

// The group of an orphaned load balancer that the sweeper deletes is a candidate from that
// sweep on, and is deleted a grace period later.
func TestSweepDeletesTheGroupOfASweptLoadBalancer(t *testing.T) {
	w := newWorld(t, []runtime.Object{}, nil, withGroups)
	g := w.group("g", groupTags("all-nodes"))
	lb := w.lbIn("gone", g, owned("uid-gone", "ns/gone"))

	res, _ := w.sweepOnce()
	assert.Equal(t, 1, res.Suspects, "the load balancer; its group is in use")

	w.clock.Step(grace)
	res, calls := w.sweepOnce()
	assert.Equal(t, []string{lb}, ids(res.Deleted))
	assert.Equal(t, 1, res.Suspects, "the group, from this sweep on")
	assert.Equal(t, []string{g}, w.groupIDs())
	assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup])

	w.clock.Step(grace - time.Second)
	res, calls = w.sweepOnce()
	assert.Empty(t, res.Deleted)
	assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup])

	w.clock.Step(time.Second)
	res, calls = w.sweepOnce()
	assert.Equal(t, []string{g}, ids(res.Deleted))
	assert.Equal(t, int64(1), calls[cloudapi.OpDeleteTargetGroup])
	assert.Empty(t, w.groupIDs())
	assert.Equal(t, map[string]int{"load_balancer/deleted": 1, "target_group/deleted": 1}, w.swept)
}

// hookedLBs calls before ahead of every ListLoadBalancers.
type hookedLBs struct {
	cloudapi.LoadBalancerAPI
	before func()
}

func (h hookedLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	h.before()
	return h.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
}

// hookedGroups calls before ahead of every DeleteTargetGroup.
type hookedGroups struct {
	cloudapi.TargetGroupAPI
	before func()
}

func (h hookedGroups) DeleteTargetGroup(ctx context.Context, id string) error {
	h.before()
	return h.TargetGroupAPI.DeleteTargetGroup(ctx, id)
}

// A group that a load balancer names by the time of the delete is kept: a load balancer
// of the cluster created between the sweep's list and the fresh one is seen by the fresh
// one (no delete call); one created after the fresh list, or one of another cluster, is
// the cloud's to refuse (ErrConflict: kept). Either way its grace period starts again.
func TestSweepKeepsATargetGroupNamedSince(t *testing.T) {
	const lbLists = 1 // of an idle sweep
	for _, tc := range []struct {
		name string
		// when is when the load balancer that names the group is created: at the n-th
		// ListLoadBalancers (1 the sweep's, 2 the fresh one), before the delete, or before
		// the sweep (foreign).
		listN    int
		atDelete bool
		foreign  bool
		// want are the calls of the sweep at the end of the grace period.
		want  map[cloudapi.Operation]int64
		swept map[string]int
	}{
		{name: "created between the sweep's list and the fresh list", listN: 2,
			want:  map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 2},
			swept: map[string]int{}},
		{name: "created between the fresh list and the delete", atDelete: true,
			want:  map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 2, cloudapi.OpDeleteTargetGroup: 1},
			swept: map[string]int{"target_group/kept": 1}},
		{name: "named by a load balancer of another cluster", foreign: true,
			want:  map[cloudapi.Operation]int64{cloudapi.OpListTargetGroups: 1, cloudapi.OpListLoadBalancers: 2, cloudapi.OpDeleteTargetGroup: 1},
			swept: map[string]int{"target_group/kept": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g string
			var w *world
			armed, lists := false, 0
			create := func() {
				if armed {
					armed = false
					w.lbIn("new", g, owned("uid-new", "ns/new"))
				}
			}
			w = newWorld(t, []runtime.Object{newService("ns", "new", "uid-new")}, nil, withGroups, func(st *setup) {
				st.wrapLBs = func(api cloudapi.LoadBalancerAPI) cloudapi.LoadBalancerAPI {
					return hookedLBs{LoadBalancerAPI: api, before: func() {
						lists++
						if lists == tc.listN {
							create()
						}
					}}
				}
				st.wrapGroups = func(api cloudapi.TargetGroupAPI) cloudapi.TargetGroupAPI {
					return hookedGroups{TargetGroupAPI: api, before: func() {
						if tc.atDelete {
							create()
						}
					}}
				}
			})
			g = w.group("g", groupTags("all-nodes"))
			if tc.foreign {
				w.lbIn("foreign", g, map[string]string{cloudapi.TagCluster: "c2"})
			}
			res, _ := w.sweepOnce()
			require.Equal(t, 1, res.Suspects)

			w.clock.Step(grace)
			armed, lists = true, 0
			res, calls := w.sweepOnce()
			assert.Empty(t, res.Deleted)
			assert.Equal(t, tc.want, calls)
			assert.Equal(t, []string{g}, w.groupIDs())
			assert.Equal(t, tc.swept, w.swept)
			assert.Zero(t, res.Suspects, "a group named since is no candidate until a sweep finds it unnamed")

			// The next sweeps do not delete it: named, or (another cluster's load balancer)
			// a candidate with a new grace period.
			res, calls = w.sweepOnce()
			assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup])
			assert.Equal(t, int64(lbLists), calls[cloudapi.OpListLoadBalancers])
			if tc.foreign {
				assert.Equal(t, 1, res.Suspects)
				w.clock.Step(grace)
				_, calls = w.sweepOnce()
				assert.Equal(t, int64(1), calls[cloudapi.OpDeleteTargetGroup], "tried again once a new grace period is over")
				assert.Equal(t, map[string]int{"target_group/kept": 2}, w.swept)
			} else {
				assert.Zero(t, res.Suspects)
			}
			assert.Equal(t, []string{g}, w.groupIDs())
		})
	}
}

func TestSweepTargetGroupErrorsNeverDelete(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pageSize int
		faults   func(f *faultinject.Client)
		swept    map[string]int
	}{
		{name: "the list of groups fails", faults: func(f *faultinject.Client) {
			f.Script(cloudapi.OpListTargetGroups, faultinject.Fault{Kind: faultinject.Transient})
		}},
		{name: "the list of groups fails on its second page", pageSize: 1, faults: func(f *faultinject.Client) {
			f.Script(cloudapi.OpListTargetGroups, faultinject.Fault{}, faultinject.Fault{Kind: faultinject.Throttle})
		}},
		{name: "the list of load balancers fails", faults: func(f *faultinject.Client) {
			f.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
		}},
		{name: "the fresh list of load balancers fails", faults: func(f *faultinject.Client) {
			f.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{}, faultinject.Fault{Kind: faultinject.Timeout})
		}},
		{name: "the delete fails", faults: func(f *faultinject.Client) {
			f.Script(cloudapi.OpDeleteTargetGroup, faultinject.Fault{Kind: faultinject.Transient}, faultinject.Fault{Kind: faultinject.Throttle})
		}, swept: map[string]int{"target_group/failed": 2}},
		{name: "the delete answers invalid", faults: func(f *faultinject.Client) {
			invalid := faultinject.Fault{Err: cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpDeleteTargetGroup, "", nil)}
			f.Script(cloudapi.OpDeleteTargetGroup, invalid, invalid)
		}, swept: map[string]int{"target_group/failed": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{}, nil, withGroups, func(st *setup) { st.config.PageSize = tc.pageSize })
			w.group("g", groupTags("all-nodes"))
			w.group("g2", groupTags("selector-a"))
			used := w.group("used", groupTags("selector-b"))
			w.lbIn("lb", used, map[string]string{cloudapi.TagCluster: cluster})
			res, _ := w.sweepOnce()
			require.Equal(t, 2, res.Suspects)

			w.clock.Step(grace)
			tc.faults(w.faults)
			before := w.cloud.Calls()
			res, err := w.s.Sweep(context.Background())
			require.Error(t, err)
			assert.Empty(t, res.Deleted)
			assert.Equal(t, 2, res.Suspects, "a failure neither starts nor ends a grace period")
			assert.Len(t, w.groupIDs(), 3)
			assert.Zero(t, w.cloud.Calls().Sub(before)[cloudapi.OpDeleteTargetGroup], "no delete reached the cloud")
			if tc.swept == nil {
				tc.swept = map[string]int{}
			}
			assert.Equal(t, tc.swept, w.swept)

			// Once the faults are over, the next sweep deletes both: the grace period went on.
			res, err = w.s.Sweep(context.Background())
			require.NoError(t, err)
			assert.Len(t, res.Deleted, 2)
			assert.Equal(t, []string{used}, w.groupIDs())
		})
	}
}

// A delete that the cloud answers with not found is a group gone already: counted as
// deleted, no error.
func TestSweepTakesNotFoundAsATargetGroupGone(t *testing.T) {
	w := newWorld(t, []runtime.Object{}, nil, withGroups)
	g := w.group("g", groupTags("all-nodes"))
	w.sweepOnce()
	w.clock.Step(grace)
	w.faults.Script(cloudapi.OpDeleteTargetGroup, faultinject.Fault{Err: cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteTargetGroup, g, nil)})
	res, _ := w.sweepOnce()
	assert.Equal(t, []string{g}, ids(res.Deleted))
	assert.Equal(t, map[string]int{"target_group/deleted": 1}, w.swept)
	assert.Zero(t, res.Suspects)
}

// Without the capability the sweeper makes no target group call; with it, one list per
// sweep.
func TestSweepListsTargetGroupsOnlyWithTheCapability(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tweaks []func(*setup)
		lists  int64
	}{
		{name: "without"},
		{name: "with", tweaks: []func(*setup){withGroups}, lists: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{}, nil, tc.tweaks...)
			w.lb("gone", owned("uid-gone", "ns/gone"))
			w.cloud.ResetCalls()
			_, err := w.s.Sweep(context.Background())
			require.NoError(t, err)
			w.clock.Step(grace)
			res, err := w.s.Sweep(context.Background())
			require.NoError(t, err)
			assert.Len(t, res.Deleted, 1, "the load balancer")
			calls := w.cloud.Calls()
			assert.Equal(t, tc.lists, calls[cloudapi.OpListTargetGroups])
			for _, op := range groupOps[1:] {
				assert.Zero(t, calls[op], op)
			}
			assert.Equal(t, int64(2), calls[cloudapi.OpListLoadBalancers], "one list per sweep, shared with the groups")
		})
	}
}

func TestNewRefusesTargetGroupsWithoutLoadBalancers(t *testing.T) {
	on := true
	cloud, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}})
	require.NoError(t, err)
	groups, ok := cloud.TargetGroups()
	require.True(t, ok)
	lbs, _ := cloud.LoadBalancers()
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, err = sweeper.New(nil, nil, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		sweeper.Options{ClusterID: cluster, TargetGroups: groups})
	require.ErrorContains(t, err, "target groups need a load balancer API")
	_, err = sweeper.New(nil, nil, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		sweeper.Options{ClusterID: cluster, TargetGroups: groups, ListedLoadBalancers: lbs})
	require.NoError(t, err)
	assert.Zero(t, cloud.Calls().Total(), "New does no I/O")
}

// A group that no load balancer named yet may be one that package loadbalancer made for a
// Service whose load balancer create keeps failing: the sweeper keeps it as the
// loadbalancer's collection does (targetgroups.Deletable, 32 times the load balancers'
// MaxAge since it first found it unused), past its grace period, so that the Service's
// next retry does not make it again. A group its load balancer let go goes a grace period
// after, as before.
func TestSweepKeepsAGroupNothingNamedAsTheCollectionDoes(t *testing.T) {
	const maxAge = time.Minute // 32 of them are longer than the grace period
	w := newWorld(t, []runtime.Object{}, nil, withGroups, func(st *setup) { st.groupMaxAge = maxAge })
	fresh := w.group("fresh", groupTags("selector-new"))
	left := w.group("left", groupTags("all-nodes"))
	lb := w.lbIn("gone", left, owned("uid-gone", "ns/gone"))

	res, _ := w.sweepOnce()
	assert.Equal(t, 2, res.Suspects, "the fresh group and the load balancer")
	w.clock.Step(grace)
	res, _ = w.sweepOnce()
	assert.Equal(t, []string{lb}, ids(res.Deleted), "the load balancer; the fresh group is kept past its grace period")
	w.clock.Step(grace)
	res, _ = w.sweepOnce()
	assert.Equal(t, []string{left}, ids(res.Deleted), "the group its load balancer let go")
	assert.Equal(t, []string{fresh}, w.groupIDs())

	w.clock.Step(targetgroups.KeepNew*maxAge - 2*grace - time.Second)
	res, _ = w.sweepOnce()
	assert.Empty(t, res.Deleted, "within 32 MaxAge of the first sweep that found it unused")
	w.clock.Step(time.Second)
	res, calls := w.sweepOnce()
	assert.Equal(t, []string{fresh}, ids(res.Deleted))
	assert.Equal(t, int64(1), calls[cloudapi.OpDeleteTargetGroup])
	assert.Empty(t, w.groupIDs())
}
