package loadbalancer

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// nodeSetClock marks when the node set that UpdateLoadBalancer is given changed: the
// arrival of the first call that carried it, as a tick of the snapshot's sequence (see
// snapshot.tick). Every Service of one node sync is given the same node set; a list of the
// cluster's load balancers that began at or after that tick is a read begun after the
// change, and may serve as the base of each of their writes (see the package
// documentation). It is safe for concurrent use.
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
