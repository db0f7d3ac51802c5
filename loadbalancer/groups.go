package loadbalancer

import (
	"context"

	"github.com/ccmkit/ccmkit/internal/targetgroups"
)

// With Options.TargetGroups, every load balancer without a node selector sends traffic to
// the cluster's group of every Node, and those with the same node selector (in its
// canonical form) to that selector's group (targetgroups.Key, cloudapi.TagTargetGroup): a
// load balancer names its group (cloudapi.LoadBalancerSpec.TargetGroup) and has no
// targets of its own. A load balancer moves between its own targets and a group with one
// update, addresses kept: into the group when target groups are turned on (the group is
// written first, so it never names an empty one), out of it when they are off, from one
// group to another when its node selector changes. The group it leaves (moved, deleted,
// released) is dropped at once when nothing else may want it (targetgroups' Store.Drop);
// what is left that way, and what a failed call leaves, a later collection finds: the
// store is told (Store.Due) after such an event, the snapshot tells it of a load balancer
// that named a group and is gone, and every call runs a due collection at its end, outside
// its Service's lock (reconcile), as CollectGroups does. A cloud error about a group fails
// the call without a load balancer write.

// CollectGroups runs the collection of unused target groups when one is due and its wait
// allows it (internal/targetgroups' Store.Collect), as the LoadBalancer's calls do at
// their end; without target groups it does nothing. It is for a caller that runs it
// periodically, so that a collection that no call runs still happens:
// the controller controllers.TargetGroupCollector runs it every cache.maxAge.
func (l *LoadBalancer) CollectGroups(ctx context.Context) { l.w.groups.Collect(ctx) }

// groupUsers is the snapshot as the target-group store asks about the cluster's load
// balancers (targetgroups.LoadBalancers): its order of events, the groups its load
// balancers name, and its refresh. It reads nothing the snapshot would not.
type groupUsers struct{ s *snapshot }

var _ targetgroups.LoadBalancers = groupUsers{}

// Tick is the snapshot's tick.
func (u groupUsers) Tick() uint64 { return u.s.tick() }

// Names is the snapshot's names.
func (u groupUsers) Names(group, except string) bool { return u.s.names(group, except) }

// Refresh is the snapshot's refresh.
func (u groupUsers) Refresh(ctx context.Context) error { return u.s.refresh(ctx) }
