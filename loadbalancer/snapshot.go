package loadbalancer

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// DefaultMaxAge is how old the snapshot of the cluster's load balancers may get when
// Options.MaxAge is zero.
const DefaultMaxAge = sharedlist.DefaultMaxAge

// snapshot is the cluster's load balancers as the last list by the cluster tag saw them,
// each Service's entry replaced since by what the cloud answered to a fresh read or a
// write about that Service (and marked unknown after a failed call about it). It only
// lets the methods skip work that would change nothing: what it says is never the base of
// a write, and "absent" from it is never believed without a fresh read. It is safe for
// concurrent use.
//
// EnsureLoadBalancer and UpdateLoadBalancer answer from it alone when it knows exactly one
// load balancer of the Service, active, reachable and with nothing to change (trusted);
// the first of them that finds it older than Options.MaxAge lists again, concurrent
// callers sharing the list (internal/sharedlist, which also holds lists back after a
// failure by its backoff; calls meanwhile read afresh). GetLoadBalancer and
// EnsureLoadBalancerDeleted always read afresh: a stale "absent" must neither skip a
// delete nor a create. So a restart on a converged cluster costs one list of the
// cluster's load balancers and no write, and a load balancer changed behind ccmkit's back
// while it still matches its Service here is repaired by the first call after MaxAge.
//
// The load balancers it holds are shared with the callers of lookup and never modified.
// Identical target sets are stored once (targetSets): a thousand load balancers that
// target the same five thousand instances hold one list of instance IDs between them.
type snapshot struct {
	api      cloudapi.LoadBalancerAPI
	filter   map[string]string // the cluster tag: the list's filter
	maxAge   time.Duration
	pageSize int
	clock    clock.PassiveClock

	mu       sync.Mutex
	services map[string]*serviceEntry // by owner: Service UID (cloudapi.TagService) or share (see ownerKey)
	sets     *targetSets              // the target sets of services
	listedAt time.Time                // when the list behind services began; zero before the first
	// seq counts the changes of single entries (record, forget) and the node sets that
	// arrived (tick): the snapshot's order of events.
	seq uint64
	// listedSeq is seq when the list behind services began: entries with seq 0 are that
	// list's, which began after every event up to listedSeq.
	listedSeq uint64
	// lists runs the lists, one at a time. After a failed list, no new list starts until
	// its backoff allows it: lookups answer "do not know" and the caller reads its
	// Service's load balancer fresh, so an outage costs each call one fresh read, not a
	// list and a read.
	lists *sharedlist.Lister
	// lost, when not nil, is called (with mu held) when a read finds that a load balancer
	// the snapshot knew to name a target group is gone (see namedGroup): a fresh read that
	// found none (gone), or a list without it. The LoadBalancer then makes a collection of
	// unused groups due.
	lost func()
}

// serviceEntry is what the snapshot knows about the load balancers of one Service.
type serviceEntry struct {
	// lbs are the Service's load balancers, by ID; empty when it has none.
	lbs []*cloudapi.LoadBalancer
	// unsure is true when a call about the Service failed after the snapshot learnt lbs:
	// a failed write may have been applied, so only the cloud knows.
	unsure bool
	// seq orders the entry among the changes of single entries; 0 for an entry from a
	// list. An entry changed after a list began is newer than what that list saw.
	seq uint64
	// grouped is true when an unsure entry replaced one whose load balancers named a
	// target group (see namedGroup).
	grouped bool
}

func newSnapshot(api cloudapi.LoadBalancerAPI, clusterID string, maxAge time.Duration, pageSize int, clk clock.PassiveClock) *snapshot {
	s := &snapshot{
		api:      api,
		filter:   map[string]string{cloudapi.TagCluster: clusterID},
		maxAge:   maxAge,
		pageSize: pageSize,
		clock:    clk,
		services: map[string]*serviceEntry{},
		sets:     newTargetSets(),
	}
	s.lists = sharedlist.New(&s.mu, clk, "the list of the cluster's load balancers")
	return s
}

// lookup returns the load balancers of the Service with UID uid, from a snapshot no older
// than maxAge, which it refreshes first if needed. ok is false when the snapshot does not
// know: it could not be refreshed, or a call about the Service failed since. An empty
// answer with ok true means "absent when the snapshot was taken", which a caller must
// confirm with the cloud before it creates. The load balancers must not be modified.
func (s *snapshot) lookup(ctx context.Context, uid string) (lbs []*cloudapi.LoadBalancer, ok bool) {
	if err := s.refresh(ctx); err != nil {
		// Not fatal: the caller asks the cloud about this Service instead.
		klog.FromContext(ctx).V(2).Info("Reading the load balancer from the cloud: the snapshot of the cluster's load balancers could not be refreshed", "err", err)
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.services[uid]
	switch {
	case e == nil:
		return nil, true
	case e.unsure:
		return nil, false
	}
	return e.lbs, true
}

// addresses returns the addresses and hostnames of the cluster's load balancers that the
// snapshot knows (refreshed first when older than maxAge), or the refresh's error.
func (s *snapshot) addresses(ctx context.Context) (map[string]bool, error) {
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, e := range s.services {
		for _, lb := range e.lbs {
			for _, a := range plan.Endpoints(*lb) {
				out[a] = true
			}
		}
	}
	return out, nil
}

// tick marks an event that a list must begin after to be a fresh read of it (a node set
// that arrived, see nodeSetClock) and returns its place in the snapshot's order of events.
func (s *snapshot) tick() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// listedSince returns the Service's load balancer as a list of the cluster's load
// balancers saw it, where that list began after the event since (see tick), and after the
// last record or forget of the Service's entry: a fresh read of it, which a write may be
// based on. It lists first unless the snapshot's list began after since and is no older
// than maxAge; concurrent callers share one list. ok is false when no such read can be
// had: the list failed (or its backoff holds), the Service's entry changed after the list
// began (a write, a read or a failed call), or the list found none or several load
// balancers of the Service; the caller then reads the Service's load balancer itself.
func (s *snapshot) listedSince(ctx context.Context, uid string, since uint64) (lb *cloudapi.LoadBalancer, ok bool) {
	oldest := s.clock.Now().Add(-s.maxAge)
	err := s.lists.Until(ctx, func() bool {
		return !s.listedAt.IsZero() && s.listedSeq >= since && !s.listedAt.Before(oldest)
	}, s.beginList)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading the load balancer from the cloud: no list of the cluster's load balancers begun after the node set changed", "err", err)
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.services[uid]
	if e == nil || e.unsure || e.seq != 0 || len(e.lbs) != 1 || s.listedSeq < since {
		return nil, false
	}
	return e.lbs[0], true
}

// record replaces the Service's entry with lbs, which the cloud has just answered to a
// fresh read or a write: the Service has exactly these load balancers (none when lbs is
// empty).
func (s *snapshot) record(uid string, lbs ...*cloudapi.LoadBalancer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e := &serviceEntry{seq: s.seq}
	for _, lb := range lbs {
		e.lbs = append(e.lbs, s.sets.compact(lb))
	}
	s.services[uid] = e
}

// gone records that a fresh read found no load balancer of the Service (record with
// none), and reports a load balancer the snapshot knew to name a target group as lost.
func (s *snapshot) gone(uid string) {
	s.mu.Lock()
	if s.namedGroup(s.services[uid]) {
		s.lost()
	}
	s.mu.Unlock()
	s.record(uid)
}

// namedGroup reports whether e, an entry of the snapshot (nil: none), is of load
// balancers of which one named a target group, before a failed call made it unsure too.
// It is false when nobody listens (lost is nil). s.mu is held.
func (s *snapshot) namedGroup(e *serviceEntry) bool {
	if s.lost == nil || e == nil {
		return false
	}
	return e.grouped || slices.ContainsFunc(e.lbs, func(lb *cloudapi.LoadBalancer) bool { return lb.Spec.TargetGroup != "" })
}

// names reports whether the snapshot knows a load balancer other than the one with ID
// except that sends traffic to the target group with ID group, and that the cloud is not
// deleting (one that is makes the cloud refuse the group's delete, which leaves the group
// to a later collection, rather than keep it for good).
func (s *snapshot) names(group, except string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.services {
		for _, lb := range e.lbs {
			if lb.Spec.TargetGroup == group && lb.ID != except && lb.Status != cloudapi.LoadBalancerDeleting {
				return true
			}
		}
	}
	return false
}

// forget marks the Service's entry as unknown, after a call about it failed: the next
// lookup answers ok false until a fresh read or a write records the entry again, or a
// list that begins later replaces it.
func (s *snapshot) forget(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.services[uid] = &serviceEntry{unsure: true, seq: s.seq, grouped: s.namedGroup(s.services[uid])}
}

// refresh lists the cluster's load balancers unless a list began no earlier than maxAge
// before the call. Concurrent callers share one list; the list runs on its own goroutine
// and context, so that one caller giving up does not fail the others, and every caller
// whose context ends stops waiting, the one that started the list included (see
// internal/sharedlist).
func (s *snapshot) refresh(ctx context.Context) error {
	oldest := s.clock.Now().Add(-s.maxAge)
	return s.lists.Until(ctx, func() bool {
		return !s.listedAt.IsZero() && !s.listedAt.Before(oldest)
	}, s.beginList)
}

// beginList returns the list to make now. s.mu is held.
func (s *snapshot) beginList() sharedlist.List {
	began, beganSeq := s.clock.Now(), s.seq
	return func(ctx context.Context) (func(), error) {
		services, sets, err := s.list(ctx)
		if err != nil {
			return nil, err
		}
		return func() { s.install(services, sets, began, beganSeq) }, nil // s.mu is held
	}
}

// install makes a completed list the snapshot, except for the entries changed after the
// list began (seq above beganSeq): those are newer than what the list saw. The caller
// holds s.mu.
func (s *snapshot) install(services map[string]*serviceEntry, sets *targetSets, began time.Time, beganSeq uint64) {
	for uid, e := range s.services {
		if e.seq <= beganSeq {
			if services[uid] == nil && s.namedGroup(e) {
				s.lost()
			}
			continue
		}
		kept := &serviceEntry{unsure: e.unsure, seq: e.seq, grouped: e.grouped}
		for _, lb := range e.lbs {
			kept.lbs = append(kept.lbs, sets.compact(lb)) // share its targets with the new sets
		}
		services[uid] = kept
	}
	s.services, s.sets, s.listedAt, s.listedSeq = services, sets, began, beganSeq
}

// list pages through the load balancers that carry the cluster tag and groups them by
// their owner (ownerKey: the Service UID, or the share, in their tags). Load balancers
// without an owner tag are left out, also when a backend ignored the filter.
func (s *snapshot) list(ctx context.Context) (map[string]*serviceEntry, *targetSets, error) {
	services := map[string]*serviceEntry{}
	sets := newTargetSets()
	listed := 0
	pages, err := paging.LoadBalancers(ctx, s.api, s.filter, s.pageSize, func(lb *cloudapi.LoadBalancer) bool {
		uid := ownerKey(lb.Spec.Tags) // the Service's UID, or its share
		if uid == "" {
			return true
		}
		listed++
		e := services[uid]
		if e == nil {
			e = &serviceEntry{}
			services[uid] = e
		}
		// compact copies the load balancer, so the page and its target lists are
		// garbage once the list is done.
		e.lbs = append(e.lbs, sets.compact(lb))
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the cluster's load balancers: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Listed the cluster's load balancers", "loadBalancers", listed, "services", len(services), "pages", pages)
	return services, sets, nil
}

// targetSets stores each distinct set of target instance IDs once, sorted and without
// duplicates, found by a hash of its members.
type targetSets struct {
	seed   maphash.Seed
	byHash map[uint64][][]string
	// last is the set interned last: the load balancers of one list, and the writes of
	// one node sync, mostly have the same targets, which one comparison then finds.
	last []string
}

func newTargetSets() *targetSets {
	return &targetSets{seed: maphash.MakeSeed(), byHash: map[uint64][][]string{}}
}

// compact returns a copy of lb whose targets are the stored copy of its target set. The
// order of targets carries no meaning (cloudapi.LoadBalancerSpec), so the set is as good
// as the list.
func (t *targetSets) compact(lb *cloudapi.LoadBalancer) *cloudapi.LoadBalancer {
	c := *lb
	c.Spec.Targets = t.intern(lb.Spec.Targets)
	return &c
}

// intern returns the stored copy of the set of ids, storing it first if it is new. The
// caller keeps ids.
func (t *targetSets) intern(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	if slices.Equal(t.last, ids) {
		return t.last
	}
	set := ids
	if !strictlySorted(ids) {
		set = slices.Clone(ids)
		slices.Sort(set)
		set = slices.Compact(set)
	}
	var h maphash.Hash
	h.SetSeed(t.seed)
	for _, id := range set {
		h.WriteString(id)
		h.WriteByte(0)
	}
	sum := h.Sum64()
	for _, stored := range t.byHash[sum] {
		if slices.Equal(stored, set) {
			t.last = stored
			return stored
		}
	}
	stored := slices.Clone(set) // exactly as long as needed, and not the caller's
	t.byHash[sum] = append(t.byHash[sum], stored)
	t.last = stored
	return stored
}

// strictlySorted reports whether ids is sorted and without duplicates.
func strictlySorted(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

// elsewhere returns the owners other than owner whose load balancers the Service with UID
// uid has a part in, as far as the snapshot knows after a refresh (a list, when it is
// older than maxAge): its own load balancer (owner uid), and the shares' load balancers
// with a listener of its, and those owners (uid, and shares) whose entry a failed call
// made unknown. When the refresh fails, it answers from the snapshot as it is (which
// knows every load balancer this process wrote since), and returns the refresh's error
// only when there is none: no list has completed since the start.
func (s *snapshot) elsewhere(ctx context.Context, uid, owner string) ([]string, error) {
	err := s.refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.listedAt.IsZero() {
		return nil, err
	}
	var out []string
	for key, e := range s.services {
		if key == owner {
			continue
		}
		if e.unsure && (key == uid || strings.HasPrefix(key, shareOwnerPrefix)) {
			out = append(out, key)
			continue
		}
		if len(e.lbs) == 0 {
			continue
		}
		if key == uid {
			out = append(out, key)
			continue
		}
		if !strings.HasPrefix(key, shareOwnerPrefix) {
			continue
		}
		if slices.ContainsFunc(e.lbs, func(lb *cloudapi.LoadBalancer) bool {
			return slices.ContainsFunc(lb.Spec.Listeners, func(ls cloudapi.Listener) bool { return plan.ListenerOwner(ls.Name) == uid })
		}) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out, nil
}
