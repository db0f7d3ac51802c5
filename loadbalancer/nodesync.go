package loadbalancer

import (
	"context"
	"fmt"
	"slices"
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
//
// A Node the cloud node controller has not initialized yet has no provider ID: the
// service controller's node sync hands it to every Service at once, and again once the
// Node has its provider ID. With known (Options.NodeProviderID), the clock finds its
// provider ID by name in the instance snapshot (which lists once for the new names it
// lacks: the list the node controller's own lookup of a new Node would make, shared with
// it) and hands the calls a stand-in for it: a copy of the Node with that provider ID,
// the same copy for as long as the node set holds the Node (see observe).
// The Node is then a target from the first node sync on, not one node sync later. The
// node set in which the Node has that very provider ID (the node controller's update) is
// the same arrival, not a new one: the node set it completes arrived already, and the
// list begun after it remains the base of the writes.
type nodeSetClock struct {
	known func(ctx context.Context, name string) (providerID string, ok bool) // nil: none

	mu    sync.Mutex
	set   nodeSet
	since uint64 // the tick at which set arrived; 0 when none is remembered
	// id names the Nodes of set with the stand-ins in nameless in their place: it changes
	// with every change of them, and never names others again. sets counts the changes
	// of set (one remembered, or forgotten), so that observe tells whether set is still
	// the one it checked.
	id   nodeSetID
	sets uint64
	// nameless are the Nodes of set without a provider ID, and for each the stand-in
	// that carries the provider ID known found (nil until it found one).
	nameless map[*corev1.Node]*corev1.Node
}

// observe returns the tick at which the node set nodes arrived: the remembered one when
// nodes is the last node set observed, or that node set with its nameless Nodes
// initialized to the provider IDs of their stand-ins; else a new tick (tick()), and nodes
// is remembered. ok is false when nodes cannot be remembered (it holds a Node twice): the
// caller then cannot tell when it arrived. It returns the nodes for the call too: nodes,
// with the stand-ins of its Nodes without a provider ID in their place (see
// nodeSetClock), and nodes itself when there are none; and the name of those Nodes (id,
// see nodeSetID): 0 when ok is false, and when another call's node set replaced nodes
// while this one looked for stand-ins (the target memo then checks the Nodes).
func (c *nodeSetClock) observe(ctx context.Context, nodes []*corev1.Node, tick func() uint64) (since uint64, ok bool, out []*corev1.Node, id nodeSetID) {
	c.mu.Lock()
	switch {
	case c.since != 0 && c.set.holds(nodes):
	case c.since != 0 && c.initialized(nodes) && c.set.reset(nodes): // the same arrival
		c.remember(nodes)
	default:
		if !c.set.reset(nodes) {
			c.since, c.set, c.nameless = 0, nodeSet{}, nil
			c.sets++
			c.id++
			c.mu.Unlock()
			return 0, false, nodes, 0
		}
		c.remember(nodes)
		c.since = tick()
	}
	since, sets := c.since, c.sets
	var missing []*corev1.Node // nameless Nodes without a stand-in yet
	for n, s := range c.nameless {
		if s == nil {
			missing = append(missing, n)
		}
	}
	c.mu.Unlock()
	if c.known != nil {
		for _, n := range missing {
			id, ok := c.known(ctx, n.Name) // may wait for the instance list under way
			if !ok || id == "" {
				continue
			}
			standIn := *n // the Node's fields, shared: both are read only
			standIn.Spec.ProviderID = id
			c.mu.Lock()
			if s, held := c.nameless[n]; held && s == nil { // the first to find it wins: one stand-in
				c.nameless[n] = &standIn
				c.id++
			}
			c.mu.Unlock()
		}
	}
	out, id = c.standIns(nodes, sets)
	return since, true, out, id
}

// remember notes the Nodes of nodes, the set just remembered, that have no provider ID.
// c.mu is held.
func (c *nodeSetClock) remember(nodes []*corev1.Node) {
	c.sets++
	c.id++
	c.nameless = nil
	if c.known == nil {
		return
	}
	for _, n := range nodes {
		if n.Spec.ProviderID == "" {
			if c.nameless == nil {
				c.nameless = map[*corev1.Node]*corev1.Node{}
			}
			c.nameless[n] = nil
		}
	}
}

// initialized reports whether nodes is the remembered node set but for Nodes that had no
// provider ID and now have the one their stand-in has (each the same name): the cloud node
// controller's update of them. c.mu is held.
func (c *nodeSetClock) initialized(nodes []*corev1.Node) bool {
	if len(c.nameless) == 0 {
		return false
	}
	byName := make(map[string]*corev1.Node, len(c.nameless)) // a stand-in's Node, by name
	for n, s := range c.nameless {
		if s != nil {
			byName[n.Name] = n
		}
	}
	return c.set.holdsAs(nodes, func(n *corev1.Node) (*corev1.Node, bool) {
		if was := byName[n.Name]; was != nil && n.Spec.ProviderID == c.nameless[was].Spec.ProviderID {
			return was, true
		}
		return n, false
	})
}

// standIns returns nodes with the stand-ins in place of their Nodes, or nodes itself
// when none has one, and their name: c.id when the remembered node set is still the
// sets-th, nodes (observe checked it), else 0 (another call's node set replaced it).
func (c *nodeSetClock) standIns(nodes []*corev1.Node, sets uint64) (_ []*corev1.Node, id nodeSetID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == sets {
		id = c.id
	}
	if len(c.nameless) == 0 {
		return nodes, id
	}
	var out []*corev1.Node
	for i, n := range nodes {
		if s := c.nameless[n]; s != nil {
			if out == nil {
				out = slices.Clone(nodes)
			}
			out[i] = s
		}
	}
	if out == nil {
		return nodes, id
	}
	return out, id
}

// holdsAs is holds, with each Node of nodes first mapped by as: to the remembered Node
// it stands for (initialized true: whatever its provider ID is now), or to itself.
func (s *nodeSet) holdsAs(nodes []*corev1.Node, as func(*corev1.Node) (*corev1.Node, bool)) bool {
	if s.index == nil || len(nodes) != len(s.index) {
		return false
	}
	clear(s.met)
	for _, n := range nodes {
		m, initialized := as(n)
		r, ok := s.index[m]
		if !ok || !s.meet(r.pos) || (!initialized && r.providerID != n.Spec.ProviderID) {
			return false
		}
	}
	return true
}

// UpdateLoadBalancer brings the targets (and anything else that drifted) in line with the
// nodes. When the snapshot knows exactly one load balancer of the Service, active and
// without anything to change, it makes no load balancer call (a Node without a provider
// ID may cost an instance list: Options.NodeProviderID); otherwise it writes only what
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
	var set nodeSetID // the node set's name, for the target memo
	owner, err := l.intents.owner(svc)
	if err != nil {
		return said, nil, err
	}
	// grouped is want with its targets in their group (fresh after since).
	grouped := func(want wanted) (wanted, func(), error) {
		release, err := l.w.group(ctx, logger, &want, since)
		return want, release, err
	}
	var planned *wanted // what fromSnapshot planned, when it found something to write
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
			since, tracked, nodes, set = l.nodeSets.observe(ctx, nodes, l.snap.tick) // first, as the call arrives
			if !tracked {
				since = 0 // a group write then reads the group after this call began
			}
			return true
		},
		fromSnapshot: func(current *cloudapi.LoadBalancer) (done bool, err error) {
			plan := l.p.updateWant(logger, svc, owner, nodes, set, current)
			want, release, err := grouped(plan)
			if err != nil {
				return false, err
			}
			release()
			serr = want.serr
			said = outcome{id: current.ID, known: true, notReady: l.p.unserved(svc, owner, current, want.asked)} // trusted: active
			if l.w.cmp.same(current.Spec, want.spec) {
				return true, nil
			}
			planned = &plan
			return false, nil
		},
		listedSince: func() (uint64, bool) { return since, tracked },
		write: func(found []cloudapi.LoadBalancer, asDecided bool) ([]*cloudapi.LoadBalancer, error) {
			if len(found) == 0 {
				said = outcome{known: true} // none
				return nil, keptEntry{fmt.Errorf("service %s/%s has no load balancer with tags %s to update: %w", svc.Namespace, svc.Name,
					tagsText(ownerTags(l.opts.ClusterID, owner)), cloudapi.ErrNotFound)}
			}
			// The plan of this very load balancer, when the read is it; a share's is made
			// again: its members may have changed while the read waited for the list.
			plan := planned
			if !asDecided || plan == nil || isShare(owner) {
				p := l.p.updateWant(logger, svc, owner, nodes, set, &found[0])
				plan = &p
			}
			want, release, err := grouped(*plan)
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
