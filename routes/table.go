package routes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// DefaultMaxAge is how old the snapshot of the cluster's routes may get when
// Options.MaxAge is zero.
const DefaultMaxAge = sharedlist.DefaultMaxAge

// table is the snapshot of the cluster's routes: what the last list saw of the cluster's
// (owner.claim), changed since by ccmkit's own writes as the cloud confirmed them. It is trusted
// while the list behind it is no older than maxAge and no write has failed since that
// list began: a failed write may have been applied, so after one only a new list knows.
// It is safe for concurrent use.
type table struct {
	api      cloudapi.RouteAPI
	owner    *owner // which listed routes are the cluster's
	pageSize int
	maxAge   time.Duration
	clock    clock.PassiveClock

	mu sync.Mutex
	// routes are the cluster's routes by ID; nil before the first list.
	routes   map[string]entry
	listedAt time.Time // when the list behind routes began
	// seq counts the changes (a write recorded, the snapshot distrusted); listedSeq is seq
	// when the list behind routes began, staleSeq seq when a failed write last distrusted
	// the snapshot. The snapshot is trusted only when listedSeq >= staleSeq.
	seq, listedSeq, staleSeq uint64
	// changes are the writes recorded since the last list was installed, the latest per
	// route ID: a list under way may have begun before them, so its install replays them.
	changes map[string]change
	// warmed is true once a list began: only the process's first warms the instance
	// lookup (owner.warm), whatever its outcome, so that a table that fails to list does
	// not list the instances at each retry.
	warmed bool
	// lists runs the lists, one at a time, shared by the callers that need one, and holds
	// them back after a failure (internal/sharedlist).
	lists *sharedlist.Lister
}

// entry is what the snapshot keeps of a route: what ListRoutes reports.
type entry struct {
	id, destination, node string
	instance              string // the target instance
	blackhole             bool
}

// change is a write recorded in the snapshot: the route as the cloud confirmed it, or its
// deletion (deleted true).
type change struct {
	seq     uint64
	entry   entry
	deleted bool
}

func newTable(api cloudapi.RouteAPI, o *owner, pageSize int, maxAge time.Duration, clk clock.PassiveClock) *table {
	t := &table{api: api, owner: o, pageSize: pageSize, maxAge: maxAge, clock: clk, changes: map[string]change{}}
	t.lists = sharedlist.New(&t.mu, clk, "the list of the cluster's routes")
	return t
}

// snapshot returns the cluster's routes sorted by ID, from a trusted snapshot no older
// than maxAge, which it lists first if needed. A failed list is an error, never an empty
// table. Concurrent callers share one list; every caller stops waiting at its own
// deadline (internal/sharedlist).
func (t *table) snapshot(ctx context.Context) ([]entry, error) {
	oldest := t.clock.Now().Add(-t.maxAge)
	var out []entry
	err := t.lists.Until(ctx, func() bool {
		if t.routes == nil || t.listedSeq < t.staleSeq || t.listedAt.Before(oldest) {
			return false
		}
		out = slices.SortedFunc(maps.Values(t.routes), func(a, b entry) int { return strings.Compare(a.id, b.id) })
		return true
	}, t.beginList)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// held returns the route with the given ID if the snapshot holds it as the cluster's: a
// list saw it as the cluster's, or ccmkit created it, and ccmkit has not deleted it since.
// It makes no call, whatever the snapshot's age.
func (t *table) held(id string) (entry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.routes[id]
	return e, ok
}

// created records a route for the Node that the cloud answered to a create, or that a
// fresh read found after a create's failure, as a list would see it: one a list would not
// see as the cluster's (owner.created) is not recorded, and the snapshot is distrusted
// instead.
func (t *table) created(rt *cloudapi.Route, node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	e, ok := t.owner.created(rt, node)
	if !ok {
		t.staleSeq = t.seq
		return
	}
	t.changes[e.id] = change{seq: t.seq, entry: e}
	if t.routes != nil {
		t.routes[e.id] = e
	}
}

// deleted records that the route with the given ID is gone: deleted, or found gone by a
// fresh read.
func (t *table) deleted(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.changes[id] = change{seq: t.seq, deleted: true}
	delete(t.routes, id)
}

// distrust marks the snapshot as possibly wrong after a write failed (it may have been
// applied): the next snapshot lists, with a list that begins after now.
func (t *table) distrust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.staleSeq = t.seq
}

// beginList returns the list to make now. t.mu is held.
func (t *table) beginList() sharedlist.List {
	began, beganSeq := t.clock.Now(), t.seq
	known := maps.Clone(t.routes) // what the cluster owns as far as the snapshot knows
	if known == nil {
		known = map[string]entry{}
	}
	for id, c := range t.changes {
		if !c.deleted {
			known[id] = c.entry
		}
	}
	first := !t.warmed
	t.warmed = true
	return func(ctx context.Context) (func(), error) {
		if first {
			t.owner.warm(ctx)
		}
		routes, err := t.list(ctx, known)
		if err != nil {
			return nil, err
		}
		return func() { t.install(routes, began, beganSeq) }, nil // t.mu is held
	}
}

// install makes a completed list the snapshot, with the writes recorded after the list
// began (seq above beganSeq) replayed on it: the list may not have seen them. t.mu is
// held; no other list is under way (sharedlist runs one at a time), so no recorded write
// is needed any more.
func (t *table) install(routes map[string]entry, began time.Time, beganSeq uint64) {
	for id, c := range t.changes {
		switch {
		case c.seq <= beganSeq:
		case c.deleted:
			delete(routes, id)
		default:
			routes[id] = c.entry
		}
	}
	clear(t.changes)
	t.routes, t.listedAt, t.listedSeq = routes, began, beganSeq
}

// list lists the routes by the owner's filter, all pages, and returns the cluster's
// (owner.claim, which is told the routes known as the cluster's before). Routes without
// the cluster tag are left out, also when a backend ignored the filter.
func (t *table) list(ctx context.Context, known map[string]entry) (map[string]entry, error) {
	var listed []*cloudapi.Route
	pages, err := paging.Routes(ctx, t.api, t.owner.filter(), t.pageSize, func(rt *cloudapi.Route) bool {
		listed = append(listed, rt)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's routes: %w", err)
	}
	routes, err := t.owner.claim(ctx, listed, known)
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's routes: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Listed the cluster's routes", "routes", len(routes), "pages", pages)
	return routes, nil
}
