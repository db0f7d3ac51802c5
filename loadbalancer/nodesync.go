package loadbalancer

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
)

// nodeSetClock marks when the node set that UpdateLoadBalancer is given changed: the
// arrival of the first call that carried it, as a tick of the snapshot's sequence (see
// snapshot.tick). Every Service of one node sync is given the same node set; a list of the
// cluster's load balancers that began at or after that tick is a read begun after the
// change, and may serve as the base of each of their writes. It is safe for concurrent
// use.
//
// Fresh is defined precisely. The node set arrives with the first UpdateLoadBalancer call
// that carries it: the first call whose Node objects (compared by object, as the service
// controller's informer replaces a Node that changes, each once, in any order) or their
// provider IDs differ from the previous call's; a later call with the same node set does
// not move its arrival, and a return to an earlier node set is a new arrival. A write of
// UpdateLoadBalancer is based on a read of the Service's load balancer that began after
// both the arrival of the call's node set and the last write (or failed call, or fresh
// read) about that Service ended: the list of the cluster's load balancers, when one began
// after both (snapshot.listedSince), or else the Service's own list by owner tags, made
// then. A list that began before the node set arrived, even one that ended after it, is
// never the base of a write; it only answers that a load balancer needs no write. The
// list's entry of a Service is not the base either when the entry changed since the list
// began, when the list found no load balancer of the Service or several, or when the list
// failed: then each call reads by owner tags, and the list is tried again after its
// backoff. A node set that holds a Node twice has no arrival, and is read by owner tags.
// Node sets of different sources that alternate make an arrival at every alternation: more
// lists, never an older base. SyncNodeLabels, whose Node objects are the Node label
// watch's own, reads by owner tags and moves no arrival.
type nodeSetClock struct {
	mu    sync.Mutex
	set   nodeSet
	since uint64 // the tick at which set arrived; 0 when none is remembered
}

// observe returns the tick at which the node set nodes arrived: the remembered one when
// nodes is the last node set observed, else a new tick (tick()), and nodes is remembered.
// ok is false when nodes cannot be remembered (it holds a Node twice): the caller then
// cannot tell when it arrived.
func (c *nodeSetClock) observe(nodes []*corev1.Node, tick func() uint64) (since uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since != 0 && c.set.holds(nodes) {
		return c.since, true
	}
	if !c.set.reset(nodes) {
		c.since = 0
		c.set = nodeSet{}
		return 0, false
	}
	c.since = tick()
	return c.since, true
}

// UpdateLoadBalancer brings the targets (and anything else that drifted) in line with the
// nodes. When the snapshot knows exactly one load balancer of the Service, active and
// without anything to change, it makes no cloud call; otherwise it writes only what
// differs from a fresh read: the list of the cluster's load balancers that began after the
// node set arrived, which the calls of one node sync share, else a list by owner tags (see
// nodeSetClock). It never creates a load balancer: when the
// Service has none, it returns an error matching cloudapi.ErrNotFound, and the service
// controller's next sync of the Service creates it.
func (l *LoadBalancer) UpdateLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (err error) {
	ctx, note := throttlenote.With(ctx)
	said, serr, err := l.updateNodes(ctx, svc, nodes, true)
	defer func() { said.err = err; l.report.tell(ctx, svc, note, said) }()
	if err != nil {
		return err
	}
	return serr
}

// updateNodes is UpdateLoadBalancer (nodeSync: the service controller's, which hands
// every Service the same Node objects, so that its writes may be based on the node sync's
// shared list) and a sync of node labels (not nodeSync: for the Service as last tracked,
// nothing when it is tracked no more; read by owner tags). A malformed annotation does
// not keep the node set from the targets: it is returned after the write, as serr (what
// is wrong with the Service), apart from err (what kept the write from happening). said
// is what the call found out about the load balancer, its error aside.
func (l *LoadBalancer) updateNodes(ctx context.Context, svc *corev1.Service, nodes []*corev1.Node, nodeSync bool) (said outcome, serr, err error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	uid := string(svc.UID)
	var since uint64 // the arrival of the node set, for the reads the writes are based on
	tracked := false
	owner, err := l.intents.owner(svc)
	if err != nil {
		return said, nil, err
	}
	// updateWant plans the write onto current and gets its group (fresh after since).
	updateWant := func(current *cloudapi.LoadBalancer) (wanted, func(), error) {
		want := l.p.updateWant(logger, svc, owner, nodes, current)
		release, err := l.w.group(ctx, logger, &want, since)
		return want, release, err
	}
	err = l.reconcile(ctx, svc, owner, step{
		enter: func() bool {
			if !nodeSync {
				if svc = l.tracked.get(uid); svc == nil {
					return false // deleted, or no longer selecting, since SyncNodeLabels began
				}
				// The Service may have moved to another share since owner was read: its
				// sync there (under that share's lock) does what this one would.
				now, err := l.intents.owner(svc)
				return err == nil && now == owner
			}
			if svc.DeletionTimestamp == nil { // a Service being deleted is tracked no more
				l.tracked.track(svc)
			}
			since, tracked = l.nodeSets.observe(nodes, l.snap.tick) // first, as the call arrives
			if !tracked {
				since = 0 // a group write then reads the group after this call began
			}
			return true
		},
		fromSnapshot: func(current *cloudapi.LoadBalancer) (done bool, err error) {
			want, release, err := updateWant(current)
			if err != nil {
				return false, err
			}
			release()
			serr = want.serr
			said = outcome{id: current.ID, known: true, notReady: l.p.unserved(svc, owner, current, want.asked)} // trusted: active
			return l.w.cmp.same(current.Spec, want.spec), nil
		},
		listedSince: func() (uint64, bool) { return since, tracked },
		write: func(found []cloudapi.LoadBalancer) ([]*cloudapi.LoadBalancer, error) {
			if len(found) == 0 {
				said = outcome{known: true} // none
				return nil, keptEntry{fmt.Errorf("service %s/%s has no load balancer with tags %s to update: %w", svc.Namespace, svc.Name,
					tagsText(ownerTags(l.opts.ClusterID, owner)), cloudapi.ErrNotFound)}
			}
			want, release, err := updateWant(&found[0])
			if err != nil {
				return nil, keptEntry{err}
			}
			defer release()
			serr = want.serr
			lb, err := l.w.update(ctx, logger, owner, false, &found[0], want.spec)
			if err != nil {
				return nil, err
			}
			said = outcome{id: lb.ID, known: true, notReady: l.p.readiness(svc, owner, lb, want.asked)}
			found[0] = *lb
			return pointers(found), nil
		},
	})
	return said, serr, err
}
