package loadbalancer

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
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
// lists, never an older base. SyncNodeLabels, whose Node objects are WatchNodeLabels' own,
// reads by owner tags and moves no arrival.
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
