package loadbalancer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// A Service's node-selector annotation makes its targets depend on the Nodes' labels. The
// service controller calls UpdateLoadBalancer when the node set changes (a Node added or
// deleted, a provider ID or the node.kubernetes.io/exclude-from-external-load-balancers
// label changed), but not when other labels change: the targets would stay until the
// Service or the node set next changes. SyncNodeLabels, which the Node label watch
// (package controllers/labelwatch) calls on every label change, closes that gap for the
// Services that select their Nodes.

// tracked holds the Services last seen with a node-selector annotation, by UID: those
// whose targets SyncNodeLabels keeps in line with their Nodes' labels. It has its own
// lock.
type tracked struct {
	// selects reports whether a Service has a node-selector annotation (as the
	// LoadBalancer reads it: its prefix and aliases).
	selects func(svc *corev1.Service) bool

	mu        sync.Mutex
	selecting map[string]*corev1.Service
}

// track remembers svc when it has a node-selector annotation, else forgets its UID. The
// caller holds the Service's lock.
func (t *tracked) track(svc *corev1.Service) {
	selects := t.selects(svc)
	t.mu.Lock()
	defer t.mu.Unlock()
	if selects {
		t.selecting[string(svc.UID)] = svc
	} else {
		delete(t.selecting, string(svc.UID))
	}
}

// untrack forgets the Service with UID uid.
func (t *tracked) untrack(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.selecting, uid)
}

// get returns the Service with UID uid as last tracked; nil when it is not.
func (t *tracked) get(uid string) *corev1.Service {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.selecting[uid]
}

// uids returns the UIDs of the tracked Services, sorted: each sync in turn, by UID.
func (t *tracked) uids() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.selecting))
}

// size returns how many Services are tracked, for tests of what is remembered.
func (t *tracked) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.selecting)
}

// forget forgets everything the LoadBalancer remembers of the Service with UID uid (it
// wants no load balancer, and has none left or is being deleted): whether it selects its
// Nodes, what was last reported about it, and its membership of every share; the
// reporter forgets what it told the Service itself (reporter.tell). Called once its
// cleanup succeeded (and as its deletion begins), so that what is kept per Service does
// not grow with churn.
func (l *LoadBalancer) forget(uid string) {
	l.tracked.untrack(uid)
	l.report.untrack(uid)
	l.shares.leaveAllBut(uid, "")
}

// SyncNodeLabels brings the targets of the Services that select their Nodes by label in
// line with nodes, which must be the Nodes the service controller would pass (the Node
// label watch, package controllers/labelwatch, calls it with those). For each Service
// that EnsureLoadBalancer or UpdateLoadBalancer last saw with a node-selector annotation
// it does what UpdateLoadBalancer does, which costs no cloud call while the targets stay.
// A Service without a load balancer (yet) is skipped, and what is wrong with a Service (a
// malformed annotation) is left to the service controller's sync, which reports it; the
// other failures are returned, joined.
func (l *LoadBalancer) SyncNodeLabels(ctx context.Context, nodes []*corev1.Node) error {
	var errs []error
	for _, uid := range l.tracked.uids() {
		// The Service as last tracked (its sync is not the service controller's node sync:
		// its Node objects are the Node label watch's own, and counting them as a node set
		// that arrived would make the service controller's next node set arrive again, a
		// new list, for nothing); nothing when it is tracked no more.
		svc := l.tracked.get(uid)
		if svc == nil {
			continue
		}
		_, _, err := l.updateNodes(ctx, svc, nodes, false)       // what is wrong with the Service is the service controller's to report
		if err != nil && !errors.Is(err, cloudapi.ErrNotFound) { // none yet: the service controller creates it
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
