package loadbalancer

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// reconcile is the one path of every call about a Service's load balancer
// (GetLoadBalancer, EnsureLoadBalancer, UpdateLoadBalancer, EnsureLoadBalancerDeleted,
// SyncNodeLabels), as the upstream service controller's syncLoadBalancerIfNeeded is its
// one path: each entry says in a step what it wants of the load balancer, and reconcile
// does the rest once, in this order.
//
//  1. The lock of owner, whom the Service's load balancer belongs to (see
//     intents.owner: the Service, or its share), then s.enter.
//  2. The snapshot: when it may stand in for a fresh read (see trusted), s.fromSnapshot may
//     find nothing to write, and the call ends without a cloud call.
//  3. A fresh read: the node sync's list begun after the node set arrived (s.listedSince,
//     see nodeSetClock), else a list by owner tags. A failed
//     read leaves the Service's entry in the snapshot unknown; a read that found no load
//     balancer records none (and a group the entry's load balancer named may be unused).
//  4. s.write, the diff and the writes, always based on that read.
//  5. The snapshot again: what the cloud answered replaces the Service's entry, then
//     s.recorded runs; a failed write leaves the entry unknown, since it may have been
//     applied; what is wrong with the Service (keptEntry) leaves it as the read left it.
//  6. Last, outside the Service's lock, the collection of unused target groups when one
//     is due (internal/targetgroups' Store.Collect).
func (l *LoadBalancer) reconcile(ctx context.Context, svc *corev1.Service, owner string, s step) error {
	if _, err := serviceUID(svc); err != nil {
		return err
	}
	defer l.w.groups.Collect(ctx)
	defer l.services.Lock(owner)()
	if s.enter != nil && !s.enter() {
		return nil
	}
	var decided *cloudapi.LoadBalancer // the snapshot's entry fromSnapshot decided on
	if s.fromSnapshot != nil {
		if current, ok := l.snap.trusted(ctx, owner); ok {
			if done, err := s.fromSnapshot(current); err != nil || done {
				return err
			}
			decided = current
		}
	}
	found, from, err := l.snap.read(ctx, svc, owner, s.listedSince)
	if err != nil {
		l.snap.forget(owner)
		return err
	}
	if len(found) == 0 {
		l.snap.gone(owner)
	}
	lbs, err := s.write(found, decided != nil && from == decided)
	var kept keptEntry
	switch {
	case errors.As(err, &kept):
		return kept.error
	case err != nil:
		l.snap.forget(owner)
		return err
	case len(found) > 0 || len(lbs) > 0: // none read and none made: gone recorded it
		l.snap.record(owner, lbs...)
	}
	if s.recorded != nil {
		s.recorded()
	}
	return nil
}

// step is what one entry of reconcile wants of the Service's load balancer. Only write is
// required.
type step struct {
	// enter runs first under the Service's lock; false ends the call without a cloud call.
	enter func() bool
	// fromSnapshot decides from the snapshot's load balancer of the Service: done when
	// there is nothing to write. Its error ends the call and leaves the snapshot as it is.
	fromSnapshot func(current *cloudapi.LoadBalancer) (done bool, err error)
	// listedSince, when it answers ok, lets a list of the cluster's load balancers begun
	// after the tick since be the fresh read.
	listedSince func() (since uint64, ok bool)
	// write gets the fresh read, the Service's load balancers oldest first (none: it has
	// none), writes what differs and returns the Service's load balancers as the cloud
	// last answered. asDecided is true when the fresh read is the very load balancer
	// fromSnapshot decided on (the snapshot's entry: a list's entries are replaced, never
	// changed), so that what fromSnapshot planned for it stands.
	write func(found []cloudapi.LoadBalancer, asDecided bool) ([]*cloudapi.LoadBalancer, error)
	// recorded runs once write's answer is in the snapshot.
	recorded func()
}

// keptEntry is an error of a step's write that says nothing new about the cloud: what is
// wrong with the Service, or no load balancer to update. The Service's entry in the
// snapshot stays as the read left it; the caller gets the error inside.
type keptEntry struct{ error }

// read is reconcile's fresh read of the Service's load balancers: the one a list of the
// cluster's load balancers begun after since saw, when listedSince answers ok and the
// snapshot has such a read (see snapshot.listedSince), and from is then that list's entry;
// else a list by owner tags (find), and from is nil.
func (s *snapshot) read(ctx context.Context, svc *corev1.Service, owner string, listedSince func() (uint64, bool)) (found []cloudapi.LoadBalancer, from *cloudapi.LoadBalancer, err error) {
	if listedSince != nil {
		if since, ok := listedSince(); ok {
			if lb, ok := s.listedSince(ctx, owner, since); ok {
				return []cloudapi.LoadBalancer{*lb}, lb, nil
			}
		}
	}
	found, err = s.find(ctx, svc, owner)
	return found, nil, err
}

// trusted returns the Service's load balancer from the snapshot when the snapshot may
// stand in for a fresh read to find that there is nothing to do: it knows exactly one
// load balancer of the Service, active and with addresses or a hostname. Anything else
// (none, duplicates, provisioning, status error, a failed call since) is read afresh.
func (s *snapshot) trusted(ctx context.Context, owner string) (*cloudapi.LoadBalancer, bool) {
	lbs, ok := s.lookup(ctx, owner)
	if !ok || len(lbs) != 1 || lbs[0].Status != cloudapi.LoadBalancerActive || !reachable(lbs[0]) {
		return nil, false
	}
	return lbs[0], true
}

// reachable reports whether clients can reach the load balancer: it has addresses or a
// hostname.
func reachable(lb *cloudapi.LoadBalancer) bool { return len(lb.Addresses) > 0 || lb.Hostname != "" }

// serviceUID returns the Service's UID, which its load balancer's owner tag holds.
func serviceUID(svc *corev1.Service) (string, error) {
	if svc.UID == "" {
		return "", fmt.Errorf("service %s/%s has no UID: it cannot own a load balancer", svc.Namespace, svc.Name)
	}
	return string(svc.UID), nil
}

// pointers returns pointers to the elements of lbs.
func pointers(lbs []cloudapi.LoadBalancer) []*cloudapi.LoadBalancer {
	out := make([]*cloudapi.LoadBalancer, len(lbs))
	for i := range lbs {
		out[i] = &lbs[i]
	}
	return out
}

// find lists the load balancers with owner's tags (the Service's or its share's), oldest
// (lowest ID) first.
func (s *snapshot) find(ctx context.Context, svc *corev1.Service, owner string) ([]cloudapi.LoadBalancer, error) {
	if _, err := serviceUID(svc); err != nil {
		return nil, err
	}
	var out []cloudapi.LoadBalancer
	_, err := paging.LoadBalancers(ctx, s.api, ownerTags(s.filter[cloudapi.TagCluster], owner), 0, func(lb *cloudapi.LoadBalancer) bool {
		out = append(out, *lb)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("looking up the load balancer of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return out, nil
}
