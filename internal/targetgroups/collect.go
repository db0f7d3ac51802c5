package targetgroups

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Drop deletes the groups with the given IDs (empty ones skipped), which the load
// balancer with ID except no longer names, when nothing may want them: only a group
// known to be the cluster's (an unknown one is left to the collection), never while an
// Acquire of it is not released, nor while a load balancer other than except names it;
// the cloud refuses to delete a group in use (ErrConflict), which leaves it to the
// collection, as a failed delete does. A failed delete is logged, never returned: the
// caller's load balancer is already written.
func (s *Store) Drop(ctx context.Context, logger klog.Logger, except string, ids ...string) {
	if s == nil {
		return
	}
	for _, id := range ids {
		if id != "" {
			s.drop(ctx, logger, except, id)
		}
	}
}

// drop is Drop of one group; left is true when the group may still be there unused.
func (s *Store) drop(ctx context.Context, logger klog.Logger, except, id string) (left bool) {
	s.mu.Lock()
	tags, ours := s.known[id]
	k := tags[cloudapi.TagTargetGroup]
	s.mu.Unlock()
	if !ours {
		// Not known to be the cluster's (a restart forgot it, or it is another's): the
		// collection lists the cluster's groups by their tags.
		logger.V(2).Info("Leaving a target group not known as the cluster's to the collection", "targetGroup", id)
		s.Due()
		return true
	}
	defer s.locks.Lock(k)()
	s.mu.Lock()
	chosen := s.users[id] > 0
	s.mu.Unlock()
	if chosen || s.cfg.LoadBalancers.Names(id, except) {
		return chosen
	}
	err := s.mayWrite(id, tags)
	if err == nil {
		err = s.cfg.API.DeleteTargetGroup(ctx, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil, errors.Is(err, cloudapi.ErrNotFound):
		delete(s.known, id)
		if e := s.entries[k]; e != nil && e.group != nil && e.group.ID == id {
			e.group, e.read, e.at, e.unsure = nil, 0, s.cfg.Clock.Now(), false
		}
		logger.Info("Deleted target group: no load balancer of the cluster names it", "targetGroup", id, "key", k)
		return false
	case errors.Is(err, cloudapi.ErrConflict):
		s.due = true
		logger.V(2).Info("Keeping target group: the cloud says a load balancer names it", "targetGroup", id, "err", err)
	default:
		s.due = true
		logger.Error(err, "Deleting a target group no load balancer names; it is tried again by the next collection", "targetGroup", id)
	}
	return true
}

// Collect is the collection of unused groups: when a collection is due (see Due) and the
// wait after the last one allows it, it lists the cluster's groups by
// cloudapi.TagCluster (tags checked), after Refresh, and deletes (as Drop does) each
// group of Nodes that no load balancer names and that Deletable allows: a group the Store
// made less than KeepNew times MaxAge ago is kept, and the collection comes back for it
// then. A collection that cannot delete a group that looks unused, or whose lists fail,
// is followed by the next one MaxAge later, the wait doubling with each such collection
// in a row up to KeepNew times MaxAge; after a clean one, the next due one runs at once.
// One runs at a time; it starts no timer: the caller decides when to call.
func (s *Store) Collect(ctx context.Context) {
	if s == nil {
		return
	}
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	if !s.due || s.collecting || now.Before(s.next) {
		s.mu.Unlock()
		return
	}
	s.due, s.collecting = false, true
	s.mu.Unlock()
	logger := klog.FromContext(ctx)
	failed := true       // the lists failed, or a group that looked unused could not be deleted
	var newest time.Time // the latest time a group made lately was made; zero for none
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.collecting = false
		s.next = time.Time{}
		if failed {
			s.backoff = min(max(2*s.backoff, s.cfg.MaxAge), KeepNew*s.cfg.MaxAge)
			s.next = now.Add(s.backoff)
		} else {
			s.backoff = 0
		}
		if !newest.IsZero() {
			if until := newest.Add(KeepNew * s.cfg.MaxAge); s.next.IsZero() || until.Before(s.next) {
				s.next = until
			}
		}
		if failed || !newest.IsZero() {
			s.due = true // events during the collection set it as well, without a wait
		}
	}()
	if err := s.cfg.LoadBalancers.Refresh(ctx); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the snapshot of the cluster's load balancers could not be refreshed", "err", err)
		return
	}
	var all []cloudapi.TargetGroup // the cluster's groups of Nodes (Owned)
	if err := s.listTagged(ctx, map[string]string{cloudapi.TagCluster: s.cfg.ClusterID}, func(tg *cloudapi.TargetGroup) {
		if Owned(s.cfg.ClusterID, tg.Spec.Tags) {
			all = append(all, tg.Clone())
		}
	}); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the cluster's target groups could not be listed", "err", err)
		return
	}
	s.mu.Lock()
	for _, tg := range all {
		s.known[tg.ID] = tg.Spec.Tags
	}
	s.mu.Unlock()
	failed = false
	for _, tg := range all {
		if s.cfg.LoadBalancers.Names(tg.ID, "") {
			continue // in use
		}
		k := tg.Spec.Tags[cloudapi.TagTargetGroup]
		s.mu.Lock()
		e := s.entries[k]
		var created time.Time
		if e != nil && e.group != nil && e.group.ID == tg.ID {
			created = e.created
		}
		s.mu.Unlock()
		if !Deletable(false, created, now, s.cfg.MaxAge) {
			if created.After(newest) { // made lately for a call that may succeed next time: later
				newest = created
			}
			continue
		}
		if s.drop(ctx, logger, "", tg.ID) {
			failed = true
		}
	}
}
