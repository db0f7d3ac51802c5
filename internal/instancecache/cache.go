package instancecache

import (
	"context"
	"errors"
	"fmt"
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

// Cache is the shared snapshot of the cloud's instances that instances, zones and routes
// look Nodes up in. It answers "this instance does not exist" only when the cloud is
// certain (see the package documentation) and is safe for concurrent use. The instances
// it returns are shared: callers must not modify them.
type Cache struct {
	api  cloudapi.InstanceAPI
	opts Options

	mu        sync.RWMutex
	byID      map[string]*cloudapi.Instance
	byName    map[string][]*cloudapi.Instance // by NameKey
	listedAt  time.Time                       // when the last completed list started; zero before the first
	gen       int                             // completed lists
	misses    int                             // by-ID fetches since that list
	pages     int                             // pages the last list took
	fetchByID map[string]*flight
	// lists runs the lists, one at a time; after a failed list, no new list starts
	// until its backoff allows it, and lookups get the list's error (ByID asks for its
	// one instance instead).
	lists *sharedlist.Lister
	// vanished holds the instances that a list lost in a shrink (see SuspectShare): live
	// in the list before, missing or terminated in it. Until one GetInstance confirms it,
	// such an instance is never answered as gone. Entries leave when confirmed or when a
	// list has the instance live again.
	vanished map[string]*cloudapi.Instance
	// fetched holds the IDs that a GetInstance put into the snapshot since the last list:
	// the cloud vouched for them, so a list that does not have them live again loses them,
	// whatever share of the whole that is.
	fetched map[string]bool
	// nodeFetched holds the IDs of fetched that a Node's read by ID (ByIDForNode) found
	// live: of the instances a GetInstance added, only these count for the deletion brake
	// (see brakeLive).
	nodeFetched map[string]bool
	// afterNameRead, when set (by tests only), is called by lookupName once it has read
	// the snapshot, with no lock held: a test runs another lookup there, at the one
	// moment that lookup could move an instance between what lookupName reads.
	afterNameRead func()
	// brake is the deletion brake's memory (see Options.Brake).
	brake brakeState
	// asks is what Known remembers of its asks (see knownListSince).
	asks knownAsks
}

// knownAsks is what Known remembers of its asks, under Cache.mu.
type knownAsks struct {
	// at holds, by NameKey, the names Known was asked about, each with the moment from
	// which a list served its first ask; an entry is kept MaxAge at least, and then until
	// the map is full (at most maxKnownLists names).
	at map[string]time.Time
	// pruneAfter is when the first entry of at turns MaxAge old: no entry is forgotten
	// before it.
	pruneAfter time.Time
	// began is the moment from which the list of Known's last burst serves (the first
	// ask about a name not in at, when no burst was under way or had just ended); ended
	// is when that ask's wait for its list ended, zero while it waits.
	began, ended time.Time
}

// maxKnownLists bounds the names Known remembers. Once that many are remembered, none
// of them asked about MaxAge ago or longer, a name not among them is answered from a
// snapshot no older than MaxAge, without a list for it.
const maxKnownLists = 1024

// knownListGap is how long after a burst's list Known takes a name it was not asked about
// before to be served by that list (a burst: the names a node sync hands over at once,
// asked one after the other). A new instance takes far longer than the list and this gap
// to boot and register its Node, so a list that ended that little before its Node was
// asked about has its instance.
const knownListGap = time.Second

// Options tune a Cache.
type Options struct {
	// MaxAge is how old the snapshot may get before a lookup refreshes it. Zero means
	// every lookup refreshes (no caching).
	MaxAge time.Duration
	// PageSize is the page size asked for when listing; zero means the backend's default.
	PageSize int
	// Clock is the clock the snapshot ages by and the backoff after a failed list is
	// timed by. Nil means the real clock, clock.RealClock{}.
	Clock clock.PassiveClock
	// OnCheck, when set, is told of every answer "gone" that the Cache checked instead of
	// trusting (see the package documentation); the provider counts them in a metric.
	OnCheck func(reason CheckReason, result CheckResult)
	// Brake bounds how many instances may read as gone (see the package documentation);
	// the zero Brake is off.
	Brake Brake
}

// CheckReason says why the Cache did not take an answer "gone" on the cloud's word.
type CheckReason string

// The reasons for a check.
const (
	// CheckListFailing: GetInstance answered not found while the instance list fails.
	// Such an answer is never read as gone.
	CheckListFailing CheckReason = "list_failing"
	// CheckListShrank: a list lost the instance in a shrink; one GetInstance decides.
	CheckListShrank CheckReason = "list_shrank"
	// CheckBrake: the cloud answered gone, but the deletion brake holds the answer back
	// (result CheckRefused).
	CheckBrake CheckReason = "brake"
)

// CheckResult is what a check found.
type CheckResult string

// The results of a check.
const (
	// CheckGone: GetInstance confirmed the instance is gone.
	CheckGone CheckResult = "gone"
	// CheckExists: GetInstance found the instance alive; the list was wrong.
	CheckExists CheckResult = "exists"
	// CheckRefused: the answer was not trusted and the lookup failed with
	// ErrUnconfirmed (reason CheckListFailing) or a *BrakeError (reason CheckBrake).
	CheckRefused CheckResult = "refused"
	// CheckError: the GetInstance of the check failed.
	CheckError CheckResult = "error"
)

// ErrUnconfirmed is matched (errors.Is) by the error of a lookup whose only evidence that
// the instance is gone came from a cloud that is visibly unhealthy: a GetInstance not
// found while the instance list is failing. It never matches cloudapi.ErrNotFound.
var ErrUnconfirmed = errors.New("the cloud's not-found is not confirmed while its instance list fails")

// SuspectShare is the share of the live instances of one list that the next list may
// lose (miss, or answer as terminated) before the Cache suspects it: when a list loses at
// least this share, each lost instance is confirmed by one GetInstance before any lookup
// answers it as gone. A cloud answering an empty or truncated list in an incident so
// costs one call per Node asked about, never a deleted Node; an ordinary scale-down of
// less than this share between two lists costs nothing.
const SuspectShare = 0.10

// flight is one GetInstance that several lookups of an ID wait for.
type flight struct {
	done chan struct{}
	inst *cloudapi.Instance
	err  error
}

// New returns a Cache over api. It makes no call until the first lookup.
func New(api cloudapi.InstanceAPI, opts Options) *Cache {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Cache{api: api, opts: opts, fetchByID: map[string]*flight{}}
	// After a failed list, the next waits for the backoff: without it, every lookup while
	// the cloud fails would start the whole paginated list again.
	c.lists = sharedlist.New(&c.mu, opts.Clock, "the instance list")
	return c
}

// NameKey is the form of an instance or Node name that lookups by name compare: the
// kubelet registers its hostname trimmed and in lower case, so instance "Worker-1" is
// Node "worker-1". Package routes finds the Node of a route's instance by it.
func NameKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// ByID returns the instance with the given cloud ID. It returns an error matching
// cloudapi.ErrNotFound only when the cloud said so for this ID while its instance list
// works; any other failure is returned as it is. When the snapshot is due for a refresh
// and the list fails (or failed moments ago), it asks the cloud for this one instance
// instead, and a not-found answer then fails with ErrUnconfirmed. An answer "gone" past
// the deletion brake (Options.Brake) is a *BrakeError instead.
//
// ByID is the read for any purpose but a Node's own (a route's ownership check, a zone):
// it never counts for the brake (the package documentation's "Which reads count"). A
// Node's read is ByIDForNode.
func (c *Cache) ByID(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return c.idRead(ctx, id, false)
}

// ByIDForNode is ByID for one of the cluster's Nodes, by the instance ID of its provider
// ID: the read package instances makes for the node controllers. It is the one read that
// counts for the deletion brake: an instance it finds live is one of the cluster's, and a
// list that has it live releases the engaged brake (the package documentation's "Which
// reads count"). A refusal's BrakeError.Report is for it alone.
func (c *Cache) ByIDForNode(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return c.idRead(ctx, id, true)
}

// idRead is ByID, or ByIDForNode when forNode.
func (c *Cache) idRead(ctx context.Context, id string, forNode bool) (*cloudapi.Instance, error) {
	if forNode {
		c.askedByID(id)
	}
	inst, err := c.byIDUnbraked(ctx, id)
	if forNode && err == nil {
		c.nodeFound(inst)
	}
	return c.braked(ctx, id, id, inst, err, forNode)
}

// byIDUnbraked is ByID before the deletion brake.
func (c *Cache) byIDUnbraked(ctx context.Context, id string) (*cloudapi.Instance, error) {
	start := c.opts.Clock.Now()
	if err := c.ensureFresh(ctx, start); err != nil {
		return c.getWhileListFails(ctx, id, err)
	}
	c.mu.RLock()
	inst, ok := c.byID[id]
	_, lost := c.vanished[id]
	c.mu.RUnlock()
	switch {
	case lost:
		return c.confirm(ctx, id)
	case ok:
		return inst, nil
	}
	if c.relistCheaper() {
		if err := c.relist(ctx); err != nil {
			return c.getWhileListFails(ctx, id, err)
		}
		c.mu.RLock()
		inst, ok = c.byID[id]
		_, lost = c.vanished[id]
		c.mu.RUnlock()
		switch {
		case lost:
			return c.confirm(ctx, id)
		case ok:
			return inst, nil
		}
	}
	return c.get(ctx, id)
}

// getWhileListFails answers a lookup by ID with one GetInstance after the list failed
// with listErr; a not-found answer is not trusted then.
func (c *Cache) getWhileListFails(ctx context.Context, id string, listErr error) (*cloudapi.Instance, error) {
	if ctx.Err() != nil {
		return nil, listErr
	}
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Instance list failed; getting the one instance", "id", id, "err", listErr)
	inst, err := c.get(ctx, id)
	if !cloudapi.IsNotFound(err) {
		return inst, err
	}
	c.observe(CheckListFailing, CheckRefused)
	logger.V(2).Info("Not trusting the cloud's not-found for an instance while its instance list fails", "id", id, "err", err, "listErr", listErr)
	// The not-found is quoted, not wrapped: this error must never read as "gone".
	return nil, fmt.Errorf("instance %q: %w: GetInstance answered %q, but listing instances fails: %w", id, ErrUnconfirmed, err.Error(), listErr)
}

// confirm asks the cloud for one instance that a shrunken list lost, and drops it from
// the instances to confirm once the cloud answered for certain.
func (c *Cache) confirm(ctx context.Context, id string) (*cloudapi.Instance, error) {
	inst, err := c.get(ctx, id)
	result := CheckError
	switch {
	case err == nil && inst.State != cloudapi.InstanceTerminated:
		result = CheckExists
	case err == nil || cloudapi.IsNotFound(err):
		result = CheckGone
	}
	c.observe(CheckListShrank, result)
	if result == CheckError {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Checked an instance that the instance list lost", "id", id, "result", result)
	c.mu.Lock()
	delete(c.vanished, id)
	if err == nil {
		c.store(inst)
	}
	c.mu.Unlock()
	return inst, err
}

func (c *Cache) observe(reason CheckReason, result CheckResult) {
	if c.opts.OnCheck != nil {
		c.opts.OnCheck(reason, result)
	}
}

// store puts inst into the snapshot in place of any record with its ID. c.mu is held.
func (c *Cache) store(inst *cloudapi.Instance) {
	if c.byID == nil {
		return // no list yet: the first list builds the snapshot
	}
	if old, ok := c.byID[inst.ID]; ok {
		key := NameKey(old.Name)
		c.byName[key] = slices.DeleteFunc(slices.Clone(c.byName[key]), func(i *cloudapi.Instance) bool { return i.ID == inst.ID })
	}
	c.byID[inst.ID] = inst
	if c.fetched == nil {
		c.fetched = map[string]bool{}
	}
	c.fetched[inst.ID] = true
	key := NameKey(inst.Name)
	c.byName[key] = append(c.byName[key], inst)
}

// ByName returns the instance of the Node named name; names compare as the kubelet
// derives Node names (trimmed, lower case). When several instances share the name, the
// one that is not terminated wins; two live instances with one name are an error, since
// the Node could be either. It answers a terminated instance, or an error matching
// cloudapi.ErrNotFound, only when a list that started after this lookup began has no
// live instance of that name (and, after a shrunken list, GetInstance agreed); past the
// deletion brake (Options.Brake), it is a *BrakeError instead.
//
// ByName is the read for any purpose but a Node's own (a route's target Node, a zone): it
// never counts for the brake. A Node's read is ByNameForNode.
func (c *Cache) ByName(ctx context.Context, name string) (*cloudapi.Instance, error) {
	return c.nameRead(ctx, name, false)
}

// ByNameForNode is ByName for one of the cluster's Nodes that has no provider ID yet: the
// read package instances makes for the node controllers. A refusal's BrakeError.Report is
// for it alone; like ByName, it never releases the brake (a name is no proof that the
// instance is the cluster's: another project may have one of that name).
func (c *Cache) ByNameForNode(ctx context.Context, name string) (*cloudapi.Instance, error) {
	return c.nameRead(ctx, name, true)
}

// nameRead is ByName, or ByNameForNode when forNode.
func (c *Cache) nameRead(ctx context.Context, name string, forNode bool) (*cloudapi.Instance, error) {
	inst, err := c.byNameUnbraked(ctx, name)
	key := "name:" + NameKey(name)
	if err == nil && inst != nil {
		key = inst.ID
	}
	return c.braked(ctx, key, name, inst, err, forNode)
}

// byNameUnbraked is ByName before the deletion brake.
func (c *Cache) byNameUnbraked(ctx context.Context, name string) (*cloudapi.Instance, error) {
	start := c.opts.Clock.Now()
	if err := c.ensureFresh(ctx, start); err != nil {
		return nil, err
	}
	key := NameKey(name)
	live, dead, lost, err := c.lookupName(key)
	if live != nil || err != nil {
		return live, err
	}
	c.mu.RLock()
	listedAfterStart := !c.listedAt.Before(start)
	c.mu.RUnlock()
	if !listedAfterStart {
		// The snapshot predates this lookup: the instance may be new, or a new instance
		// may have taken a terminated one's name. A list under way (another lookup's, or
		// Known's for a Node being initialized, which began before this lookup) may
		// have it live: that answer needs no list of this lookup's own. That none is
		// live needs a list begun after this lookup: relist once.
		if c.lists.Wait(ctx) == nil {
			if live, _, _, err := c.lookupName(key); live != nil || err != nil {
				return live, err
			}
		}
		if err := c.listUntil(ctx, c.listedSince(start)); err != nil {
			return nil, err
		}
		if live, dead, lost, err = c.lookupName(key); live != nil || err != nil {
			return live, err
		}
	}
	// A list that began after this lookup has no live instance of that name. If a shrunken
	// list lost one, the cloud decides, instance by instance.
	for _, id := range lost {
		inst, err := c.confirm(ctx, id)
		if err == nil && inst.State != cloudapi.InstanceTerminated && NameKey(inst.Name) == key {
			return inst, nil
		}
		if err != nil && !cloudapi.IsNotFound(err) {
			return nil, fmt.Errorf("checking instance %q, named %q before the instance list shrank: %w", id, name, err)
		}
	}
	if dead != nil {
		return dead, nil
	}
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpListInstances, "",
		fmt.Errorf("no instance is named %q", name))
}

// Known returns the one live instance named name (compared as NameKey) that a snapshot
// no older than MaxAge holds, after waiting for a list under way (another lookup's) to
// end. When the snapshot is older, or has no live instance of that name, it makes sure a
// list serves the name (see knownListSince): the first ask about a name waits for a list
// begun at that ask (its own, or another's it joins), or for the list of the burst it is
// part of; a later ask needs no more than a snapshot no older than MaxAge, and the one
// list from its first ask on while that is younger (a failed one is followed by the next
// once the list backoff allows, internal/sharedlist). So the names of a node sync cost
// one list, and the names of Nodes that never get a provider ID, asked about again and
// again, one list per MaxAge for all of them. With MaxAge zero it lists for none, and
// while it remembers maxKnownLists names, for no new one. It makes no GetInstance and
// answers nothing about an instance being gone: ok is false when the snapshot has no
// live instance of that name, or two, or a list failed.
//
// It is for a reader that can do without the answer, such as the load balancer targets
// of a Node that the cloud node controller is initializing. That controller's lookup of
// the Node (ByNameForNode) lists for the new instance too: whichever of the two begins
// the list, the other finds the instance in it, so a new Node costs one list either way,
// and its targets do not wait for the order in which the two controllers see the Node.
func (c *Cache) Known(ctx context.Context, name string) (inst *cloudapi.Instance, ok bool) {
	if err := c.lists.Wait(ctx); err != nil {
		return nil, false
	}
	key, now := NameKey(name), c.opts.Clock.Now()
	if inst, ok := c.known(key, now); ok {
		return inst, true
	}
	since, burst, ok := c.knownListSince(key, now)
	if !ok {
		return nil, false
	}
	err := c.listUntil(ctx, c.listedSince(since))
	if burst {
		c.knownBurstEnded(since)
	}
	if err != nil {
		return nil, false
	}
	return c.liveNamed(key) // from a list begun since then
}

// known returns the one live instance named key in the snapshot, when the snapshot is
// no older than MaxAge at now.
func (c *Cache) known(key string, now time.Time) (*cloudapi.Instance, bool) {
	c.mu.RLock()
	fresh := c.listedSince(now.Add(-c.opts.MaxAge))()
	c.mu.RUnlock()
	if !fresh {
		return nil, false
	}
	return c.liveNamed(key)
}

// liveNamed returns the one live instance named key in the snapshot.
func (c *Cache) liveNamed(key string) (*cloudapi.Instance, bool) {
	live, _, _, err := c.lookupName(key)
	return live, err == nil && live != nil
}

// knownListSince returns the moment from which a list serves Known's ask about the name
// key at now, and remembers the ask; burst is true when the ask begins a burst (see
// knownAsks), and ok false when Known waits for no list (MaxAge zero, or maxKnownLists
// other names remembered). A name asked about before is served from the moment of its
// first ask, or MaxAge before now if later; another, from the moment of the burst under
// way or ended less than knownListGap before now (MaxAge before now if later), else from
// now, which begins a burst.
func (c *Cache) knownListSince(key string, now time.Time) (since time.Time, burst, ok bool) {
	if c.opts.MaxAge <= 0 {
		return time.Time{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := &c.asks
	floor := now.Add(-c.opts.MaxAge)
	if at, seen := k.at[key]; seen {
		return latest(at, floor), false, true
	}
	if len(k.at) >= maxKnownLists && !now.Before(k.pruneAfter) {
		k.pruneAfter = time.Time{}
		for name, at := range k.at {
			if expires := at.Add(c.opts.MaxAge); !now.Before(expires) {
				delete(k.at, name)
			} else if k.pruneAfter.IsZero() || expires.Before(k.pruneAfter) {
				k.pruneAfter = expires
			}
		}
	}
	if len(k.at) >= maxKnownLists {
		return time.Time{}, false, false
	}
	if !k.began.IsZero() && (k.ended.IsZero() || now.Before(k.ended.Add(knownListGap))) {
		since = latest(k.began, floor)
	} else {
		since, burst = now, true
		k.began, k.ended = now, time.Time{}
	}
	if k.at == nil {
		k.at = map[string]time.Time{}
	}
	k.at[key] = since
	if expires := since.Add(c.opts.MaxAge); k.pruneAfter.IsZero() || expires.Before(k.pruneAfter) {
		k.pruneAfter = expires
	}
	return since, burst, true
}

// knownBurstEnded notes that the ask that began the burst of the moment began has
// stopped waiting for its list.
func (c *Cache) knownBurstEnded(began time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asks.began.Equal(began) && c.asks.ended.IsZero() {
		c.asks.ended = c.opts.Clock.Now()
	}
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// lookupName returns the live instance named key, or else a terminated one and the IDs
// of the lost instances (to check) of that name, in ID order. It reads the snapshot and
// the instances to check under one lock: a check that another lookup finishes meanwhile
// moves an instance from one to the other, never out of both.
func (c *Cache) lookupName(key string) (live, dead *cloudapi.Instance, lost []string, err error) {
	c.mu.RLock()
	candidates := c.byName[key]
	for id, inst := range c.vanished {
		if NameKey(inst.Name) == key {
			lost = append(lost, id)
		}
	}
	c.mu.RUnlock()
	if c.afterNameRead != nil {
		c.afterNameRead()
	}
	slices.Sort(lost)
	var alive []*cloudapi.Instance
	for _, inst := range candidates {
		if inst.State != cloudapi.InstanceTerminated {
			alive = append(alive, inst)
		} else if dead == nil {
			dead = inst
		}
	}
	switch {
	case len(alive) == 1:
		return alive[0], nil, nil, nil
	case len(alive) > 1:
		return nil, nil, nil, fmt.Errorf("%d running instances are named %q (%s and %s): set the Node's spec.providerID to choose one",
			len(alive), key, alive[0].ID, alive[1].ID)
	}
	return nil, dead, lost, nil
}

// Invalidate makes the next lookup refresh the snapshot.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.listedAt = time.Time{}
	c.mu.Unlock()
}

// Stats describe the snapshot, for logs and tests.
type Stats struct {
	// Instances is how many instances the snapshot holds.
	Instances int
	// ListedAt is when the list behind the snapshot began; zero before the first list.
	ListedAt time.Time
	// Pages is how many pages that list took.
	Pages int
}

// Stats returns the snapshot's current figures.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Instances: len(c.byID), ListedAt: c.listedAt, Pages: c.pages}
}

// Warm makes sure the snapshot is no older than MaxAge, joining a list under way or
// listing (one list, shared as every list is). It is for a reader about to ask for many
// instances at once: routes over a table without tags, whose first list reads each
// route's target and whose adapter may answer the table's holders from that very list
// (cloudapi.GatewayRoutes' Listed) instead of a second one.
func (c *Cache) Warm(ctx context.Context) error {
	return c.ensureFresh(ctx, c.opts.Clock.Now())
}

// ensureFresh lists unless a list began no earlier than MaxAge before start.
func (c *Cache) ensureFresh(ctx context.Context, start time.Time) error {
	return c.listUntil(ctx, c.listedSince(start.Add(-c.opts.MaxAge)))
}

// listedSince returns a condition (evaluated under c.mu) that holds once a list that
// began no earlier than t has completed.
func (c *Cache) listedSince(t time.Time) func() bool {
	return func() bool { return !c.listedAt.IsZero() && !c.listedAt.Before(t) }
}

// relist lists again, unless a list newer than the snapshot the caller saw completes
// meanwhile.
func (c *Cache) relist(ctx context.Context) error {
	c.mu.RLock()
	gen := c.gen
	c.mu.RUnlock()
	return c.listUntil(ctx, func() bool { return c.gen > gen })
}

// relistCheaper reports whether the by-ID fetches since the last list have cost as much
// as a relist would.
func (c *Cache) relistCheaper() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pages > 0 && c.misses >= c.pages
}

// listUntil makes sure done holds, joining a list in progress or starting one until it
// does (see internal/sharedlist). done is evaluated with c.mu held.
func (c *Cache) listUntil(ctx context.Context, done func() bool) error {
	c.mu.RLock()
	ok := done()
	c.mu.RUnlock()
	if ok {
		return nil
	}
	return c.lists.Until(ctx, done, c.beginList)
}

// beginList returns the list to make now. c.mu is held.
func (c *Cache) beginList() sharedlist.List {
	started, sizeHint := c.opts.Clock.Now(), len(c.byID)
	return func(ctx context.Context) (func(), error) {
		byID, byName, pages, err := c.fetchAll(ctx, sizeHint)
		if err != nil {
			return nil, err
		}
		return func() { // c.mu is held
			c.brakeOnList(ctx, started, byID)
			c.vanished = c.lost(ctx, byID)
			c.byID, c.byName, c.pages, c.misses, c.fetched, c.nodeFetched = byID, byName, pages, 0, nil, nil
			c.listedAt = started
			c.gen++
		}, nil
	}
}

func (c *Cache) fetchAll(ctx context.Context, sizeHint int) (map[string]*cloudapi.Instance, map[string][]*cloudapi.Instance, int, error) {
	byID := make(map[string]*cloudapi.Instance, sizeHint)
	byName := make(map[string][]*cloudapi.Instance, sizeHint)
	pages, err := paging.Instances(ctx, c.api, c.opts.PageSize, func(inst *cloudapi.Instance) bool {
		if _, dup := byID[inst.ID]; !dup {
			byID[inst.ID] = inst
			key := NameKey(inst.Name)
			byName[key] = append(byName[key], inst)
		}
		return true
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("listing instances: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Listed instances", "instances", len(byID), "pages", pages)
	return byID, byName, pages, nil
}

// lost returns the instances to confirm once the list next installs: those lost before
// and still not live in next, and, when next lost at least SuspectShare of the live
// instances of the current snapshot, the ones it lost. c.mu is held.
func (c *Cache) lost(ctx context.Context, next map[string]*cloudapi.Instance) map[string]*cloudapi.Instance {
	isLive := func(m map[string]*cloudapi.Instance, id string) bool {
		inst, ok := m[id]
		return ok && inst.State != cloudapi.InstanceTerminated
	}
	out := map[string]*cloudapi.Instance{}
	for id, inst := range c.vanished {
		if !isLive(next, id) {
			out[id] = inst
		}
	}
	live := 0
	var dropped []*cloudapi.Instance
	for id, inst := range c.byID {
		if inst.State == cloudapi.InstanceTerminated {
			continue
		}
		live++
		if !isLive(next, id) {
			dropped = append(dropped, inst)
		}
	}
	for id := range c.fetched {
		if inst, ok := c.byID[id]; ok && inst.State != cloudapi.InstanceTerminated && !isLive(next, id) {
			out[id] = inst
		}
	}
	if len(dropped) > 0 && float64(len(dropped)) >= SuspectShare*float64(live) {
		klog.FromContext(ctx).Info("The instance list lost a large share of the instances the list before had; each is checked with GetInstance before it reads as gone",
			"lost", len(dropped), "live", live, "threshold", SuspectShare)
		for _, inst := range dropped {
			out[inst.ID] = inst
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// get fetches one instance by ID, sharing the call with concurrent lookups of the same
// ID, and adds it to the snapshot. The call runs on its own goroutine and context, so
// that every caller, the one that started it too, stops waiting when its context ends.
func (c *Cache) get(ctx context.Context, id string) (*cloudapi.Instance, error) {
	c.mu.Lock()
	f, ok := c.fetchByID[id]
	if !ok {
		f = &flight{done: make(chan struct{})}
		c.fetchByID[id] = f
		c.misses++
		go c.fetch(context.WithoutCancel(ctx), id, f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for instance %q: %w", id, ctx.Err())
	}
	if f.err != nil {
		return nil, fmt.Errorf("getting instance %q: %w", id, f.err)
	}
	if f.inst == nil {
		return nil, fmt.Errorf("getting instance %q: the cloud answered neither an instance nor an error", id)
	}
	return f.inst, nil
}

// fetch makes the GetInstance of the flight f and adds a found instance to the snapshot.
func (c *Cache) fetch(ctx context.Context, id string, f *flight) {
	f.inst, f.err = c.api.GetInstance(ctx, id)
	if f.err == nil && f.inst != nil && f.inst.ID != id {
		f.err = fmt.Errorf("the cloud answered instance %q instead", f.inst.ID)
	}
	c.mu.Lock()
	delete(c.fetchByID, id)
	if _, listed := c.byID[id]; f.err == nil && f.inst != nil && !listed {
		c.store(f.inst)
	}
	c.mu.Unlock()
	close(f.done)
}
