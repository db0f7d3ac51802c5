// Package targetgroups is the store of a cluster's target groups (cloudapi.TargetGroupAPI)
// that package loadbalancer's load balancers share: the load balancers that want the
// same Nodes name one group (cloudapi.LoadBalancerSpec.TargetGroup) instead of their own
// targets, so that a Node added or removed is one write to each group whose Nodes change.
//
// A Store does four things, and decides nothing about when: the caller calls.
//   - Acquire makes the group of a key hold a set of targets and hands out its ID until
//     the caller releases it. A group's members are written only from a fresh read: a
//     list of the group by its tags begun after the caller's event (the arrival of a node
//     set, else the call), serialized per key, so the calls of a node sync write a group
//     once; a group that holds the targets, as the cloud last answered no longer than
//     MaxAge ago, costs no call. A group is created only after such a list found none,
//     and after an ambiguous or conflicting create it is listed again and adopted. Of two
//     groups of one key (a cloud that lost track of a create), the first by ID is used.
//   - Drop deletes at once, without a list, a group a load balancer stopped naming, when
//     nothing may want it (see Drop).
//   - Collect is the periodic collection of unused groups (see Collect); Due asks for
//     one. It deletes by the one rule for an unused group, Deletable, which package
//     sweeper's sweep of target groups applies too.
//
// Why the sweeper keeps a sweep of its own, by the same function: it sees what no Store
// collects (the groups left after target groups were turned off, or by a load balancer
// deleted while no Store ran), and moving those cases here would take a Store without
// sharing and a list of the load balancers at every periodic collection. Applying
// Deletable is simpler and keeps the collection's promise (no churn for a Service whose
// load balancer create keeps failing) with the sweeper on.
//   - Forget marks a group unknown after a load balancer write that named it was refused.
//
// A nil *Store is a cloud without target groups: Due, Forget, Drop and Collect do
// nothing.
//
// Only groups known to be the cluster's are deleted: listed with its tags (checked) or
// created by the Store. Every update and delete passes owned, against the group's tags as
// last read. A cloud error about a group is never taken for "no group".
package targetgroups

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/keyedlock"
	"github.com/ccmkit/ccmkit/internal/pace"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// AllNodes is the key (the cloudapi.TagTargetGroup value) of the group of every Node.
const AllNodes = "all-nodes"

// KeepNew is how many MaxAge an unused group that may be new is kept (see Deletable). It
// also caps the wait between collections that leave a group that looks unused.
const KeepNew = 32

// Deletable is the one rule by which a collection deletes a group of the cluster that no
// load balancer names: Store.Collect, and package sweeper's sweep of target groups, which
// also sees the groups no Store collects (left after target groups were turned off, or by
// a load balancer deleted while no Store ran). A group a load balancer named and let go
// (named) may go. Any other may be new, made for a load balancer whose create keeps
// failing, and is kept until since (when it was made, or first found unused; zero when it
// is not known to be new) is KeepNew times maxAge ago, so that such a Service does not
// have its group made and deleted at every retry.
func Deletable(named bool, since, now time.Time, maxAge time.Duration) bool {
	return named || since.IsZero() || !now.Before(since.Add(KeepNew*maxAge))
}

// Key returns the key of the group of the Nodes sel selects (nil: every Node).
func Key(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return AllNodes
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return "selector-" + hex.EncodeToString(sum[:8])
}

// Config is what a Store works with.
type Config struct {
	// API is the cloud's target group API.
	API cloudapi.TargetGroupAPI
	// ClusterID is the cluster's ID: the groups carry it in cloudapi.TagCluster.
	ClusterID string
	// NamePrefix begins the cloud name of every group: the cluster's own prefix of at
	// most 24 characters that begins the load balancers' names too (package
	// loadbalancer's namePrefix), so that two clusters' groups never share a name.
	NamePrefix string
	// PageSize is the page size of the lists; zero means the backend's default.
	PageSize int
	// MaxAge is how long what the Store last learnt about a group may skip a list.
	MaxAge time.Duration
	// Clock is the clock the Store ages by.
	Clock clock.PassiveClock
	// Tick marks an event in the order of events of the cluster's load balancers and
	// returns it: a list begun after it is a fresh read.
	Tick func() uint64
	// Names reports whether a load balancer of the cluster, other than the one with ID
	// except, names the group with ID group (one the cloud is deleting does not count).
	Names func(group, except string) bool
	// Refresh makes what Names knows no older than MaxAge, before a collection.
	Refresh func(ctx context.Context) error
}

// Store is what is known about the cluster's target groups. It is safe for concurrent
// use; the calls about the group of one key are serialized.
type Store struct {
	cfg   Config
	locks keyedlock.Locks[string] // by key

	mu      sync.Mutex
	entries map[string]*entry // by key
	// known are the tags (as last read) of the groups known to be the cluster's, by group
	// ID, their key the cloudapi.TagTargetGroup tag: found by a list with the cluster's
	// tags (checked), or created by the Store. Only those are ever deleted.
	known map[string]map[string]string
	// users counts, by group ID, the Acquires not yet released: their load balancers
	// are not written yet, so the cloud cannot know of them, and the group is kept.
	users map[string]int
	// due is true when a group of the cluster may be unused (see Due). The next
	// collection lists the cluster's groups and deletes the unused.
	due bool
	// next is when the next collection may begin: at once after a clean one; after one
	// whose lists failed or that could not delete a group that looked unused, backoff
	// later (MaxAge, doubling with each such collection in a row up to KeepNew times it);
	// after one that kept a group made lately, when that group stops being new (whichever
	// comes first).
	next    time.Time
	backoff time.Duration
	// collecting is true while a collection runs: one at a time.
	collecting bool
}

// entry is what is known about the group of one key.
type entry struct {
	// group is the group as the cloud last answered; nil when it has none.
	group *cloudapi.TargetGroup
	// read is the tick at which the list that found group began; 0 when group is the
	// cloud's answer to a write (no read: a write may be based on it only after a list
	// that begins later).
	read uint64
	// at is when the entry was learnt; an entry older than MaxAge is listed again.
	at time.Time
	// unsure is true after a failed call about the group: only the cloud knows.
	unsure bool
	// lists holds back the group's next list after a failed one, so that an outage of the
	// group API costs one list per backoff (internal/pace's Backoff), not one per call.
	lists pace.Backoff
	// created is when the Store created the group (or adopted it after a lost create);
	// see Deletable.
	created time.Time
}

// New returns a Store with a collection due: a predecessor may have left an unused group.
func New(cfg Config) *Store {
	return &Store{cfg: cfg, entries: map[string]*entry{}, known: map[string]map[string]string{}, users: map[string]int{}, due: true}
}

// errNotOwned is matched by the error of a write that owned refused.
var errNotOwned = errors.New("not this cluster's to write")

// owned is the rule every update and delete of a group passes, given its tags as last
// read: it carries cloudapi.TagCluster with the cluster's ID and cloudapi.TagTargetGroup
// (a group of Nodes ccmkit made). Anything else is refused before any call.
func (s *Store) owned(id string, tags map[string]string) error {
	if tags[cloudapi.TagCluster] == s.cfg.ClusterID && tags[cloudapi.TagTargetGroup] != "" {
		return nil
	}
	return fmt.Errorf("target group %s does not carry tags %s=%s and %s: %w", id, cloudapi.TagCluster, s.cfg.ClusterID, cloudapi.TagTargetGroup, errNotOwned)
}

// name is the cloud name of the cluster's group of key k: NamePrefix, "-nodes-", and a
// hash of the cluster ID and the key, unique per cluster and key, stable and within 63
// characters.
func (s *Store) name(k string) string {
	sum := sha256.Sum256([]byte(s.cfg.ClusterID + "\x00" + k))
	return s.cfg.NamePrefix + "-nodes-" + hex.EncodeToString(sum[:8])
}

// tags are the tags that make a group the cluster's group of key k.
func (s *Store) tags(k string) map[string]string {
	return map[string]string{cloudapi.TagCluster: s.cfg.ClusterID, cloudapi.TagTargetGroup: k}
}

// Acquire makes the cluster's group of key k hold exactly targets and returns its ID.
// Its members are written only from a list of the group by its tags begun after since (a
// tick: the arrival of a node sync's node set), or, when since is 0, after the call; a
// group that holds targets, as the cloud last answered no longer than MaxAge ago, costs
// no call.
//
// release must be called once the load balancer that names the group is written, or the
// attempt given up: until then the group is not deleted. It may be called more than once.
func (s *Store) Acquire(ctx context.Context, logger klog.Logger, k string, targets []string, since uint64) (id string, release func(), err error) {
	defer s.locks.Lock(k)()
	now := s.cfg.Clock.Now()

	s.mu.Lock()
	e := s.entries[k]
	if e == nil {
		e = &entry{unsure: true, lists: pace.Backoff{Min: sharedlist.MinBackoff, Max: sharedlist.MaxBackoff}}
		s.entries[k] = e
	}
	current, read, at, unsure := e.group, e.read, e.at, e.unsure
	s.mu.Unlock()

	fresh := !unsure && now.Sub(at) <= s.cfg.MaxAge
	if !fresh || current == nil || !s.holds(current, k, targets) {
		if since == 0 {
			since = s.cfg.Tick()
		}
		if unsure || read <= since || !fresh { // read is 0 after a write: never fresh enough
			s.mu.Lock()
			held := e.lists.Hold(now, "listing target group "+cloudapi.TagTargetGroup+"="+k)
			s.mu.Unlock()
			if held != nil {
				return "", nil, held
			}
			found, err := s.list(ctx, logger, k)
			if err != nil {
				return "", nil, err
			}
			current = found
		}
		if current, err = s.write(ctx, logger, k, current, targets); err != nil {
			s.forgetKey(k)
			return "", nil, err
		}
	}

	id = current.ID
	s.mu.Lock()
	s.users[id]++
	s.mu.Unlock()
	var once sync.Once
	return id, func() {
		once.Do(func() {
			s.mu.Lock()
			if s.users[id]--; s.users[id] <= 0 {
				delete(s.users, id)
			}
			s.mu.Unlock()
		})
	}, nil
}

// holds reports whether group holds exactly targets and carries the tags of key k.
func (s *Store) holds(group *cloudapi.TargetGroup, k string, targets []string) bool {
	return cloudapi.DiffTargetGroup(group.Spec, s.spec(group, k, targets)).Empty()
}

// spec is the spec of the cluster's group of key k with targets as members: current's
// name and foreign tags kept (current may be nil).
func (s *Store) spec(current *cloudapi.TargetGroup, k string, targets []string) cloudapi.TargetGroupSpec {
	spec := cloudapi.TargetGroupSpec{Targets: targets, Tags: map[string]string{}}
	if current != nil {
		spec.Name = current.Spec.Name
		maps.Copy(spec.Tags, current.Spec.Tags)
	} else {
		spec.Name = s.name(k) // hashed only for a create: holds runs on every call
	}
	maps.Copy(spec.Tags, s.tags(k))
	return spec
}

// list lists the cluster's groups of key k (one page, normally) and records what it
// found as a fresh read; it returns the first by ID, or nil when there is none. Groups
// whose tags are not the key's are ignored, whatever the backend's filter did; further
// groups of the key are left to the collection. The caller holds the key's lock.
func (s *Store) list(ctx context.Context, logger klog.Logger, k string) (*cloudapi.TargetGroup, error) {
	began := s.cfg.Tick()
	at := s.cfg.Clock.Now()
	var all []cloudapi.TargetGroup
	err := s.listTagged(ctx, s.tags(k), func(g *cloudapi.TargetGroup) { all = append(all, sorted(g)) })
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	if err != nil {
		e.unsure = true
		e.lists.Failed(at, err)
		return nil, fmt.Errorf("looking up target group %s=%s: %w", cloudapi.TagTargetGroup, k, err)
	}
	e.lists.Succeeded()
	var found *cloudapi.TargetGroup
	for i := range all {
		s.known[all[i].ID] = all[i].Spec.Tags
		if found == nil || all[i].ID < found.ID {
			found = &all[i]
		}
	}
	if len(all) > 1 {
		s.due = true
		logger.Info("The cloud has several target groups of one key: using the first by ID; the others are deleted once unused", "key", k, "targetGroup", found.ID, "groups", len(all))
	}
	e.group, e.read, e.at, e.unsure = found, began, at, false
	return found, nil
}

// sorted returns a copy of g with its targets sorted, as the targets a Service wants
// are: comparing them is then one comparison a target, whatever order the cloud answers.
func sorted(g *cloudapi.TargetGroup) cloudapi.TargetGroup {
	c := g.Clone()
	slices.Sort(c.Spec.Targets)
	return c
}

// listTagged lists the groups that carry tags, every page, and calls add for each one
// that carries them and has an ID, whatever the backend's filter did.
func (s *Store) listTagged(ctx context.Context, tags map[string]string, add func(*cloudapi.TargetGroup)) error {
	_, err := paging.TargetGroups(ctx, s.cfg.API, tags, s.cfg.PageSize, func(g *cloudapi.TargetGroup) bool {
		if g.ID != "" {
			add(g)
		}
		return true
	})
	return err
}

// write makes the cluster's group of key k hold exactly targets, from current, a fresh
// read (nil: there is none): nothing when it does, an update when it exists, else a
// create. It records and returns the group as the cloud answered.
func (s *Store) write(ctx context.Context, logger klog.Logger, k string, current *cloudapi.TargetGroup, targets []string) (*cloudapi.TargetGroup, error) {
	spec := s.spec(current, k, targets)
	var out *cloudapi.TargetGroup
	switch {
	case current != nil && s.holds(current, k, targets):
		return current, nil
	case current != nil:
		update := cloudapi.DiffTargetGroup(current.Spec, spec)
		got, err := s.update(ctx, current, update)
		if err != nil {
			return nil, fmt.Errorf("updating target group %s: %w", current.ID, err)
		}
		logger.V(2).Info("Updated target group", "targetGroup", current.ID, "key", k, "addTargets", len(update.AddTargets), "removeTargets", len(update.RemoveTargets))
		out = got
	default:
		got, err := s.create(ctx, logger, k, spec)
		if err != nil {
			return nil, err
		}
		out = got
		s.mu.Lock()
		s.entries[k].created = s.cfg.Clock.Now()
		s.mu.Unlock()
	}
	if out == nil || out.ID == "" {
		return nil, fmt.Errorf("writing target group %q: the cloud answered no group: %w", spec.Name, cloudapi.ErrTransient)
	}
	c := sorted(out)
	s.mu.Lock()
	e := s.entries[k]
	e.group, e.read, e.at, e.unsure = &c, 0, s.cfg.Clock.Now(), false
	s.known[c.ID] = c.Spec.Tags
	s.mu.Unlock()
	return &c, nil
}

// create creates the cluster's group of key k, or adopts the one a lost or conflicting
// create made.
func (s *Store) create(ctx context.Context, logger klog.Logger, k string, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	got, err := s.cfg.API.CreateTargetGroup(ctx, spec)
	if err == nil {
		if got != nil {
			logger.Info("Created target group", "targetGroup", got.ID, "name", spec.Name, "key", k, "targets", len(spec.Targets))
		}
		return got, nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("creating target group %q: %w", spec.Name, err)
	}
	// The create may have happened (a lost answer), or another process made it: look again.
	found, ferr := s.list(ctx, logger, k)
	if ferr != nil {
		return nil, fmt.Errorf("creating target group %q: %w; looking for it afterwards: %w", spec.Name, err, ferr)
	}
	if found == nil {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating target group %q: %w; no target group with tags %s=%s, %s=%s exists, so another owns the name: rename or delete that group in the cloud",
				spec.Name, err, cloudapi.TagCluster, s.cfg.ClusterID, cloudapi.TagTargetGroup, k)
		}
		return nil, fmt.Errorf("creating target group %q: %w", spec.Name, err)
	}
	logger.Info("Adopting the target group of an earlier create", "targetGroup", found.ID, "key", k, "createErr", err)
	if s.holds(found, k, spec.Targets) {
		return found, nil
	}
	update := cloudapi.DiffTargetGroup(found.Spec, s.spec(found, k, spec.Targets))
	got, err = s.update(ctx, found, update)
	if err != nil {
		return nil, fmt.Errorf("updating target group %s: %w", found.ID, err)
	}
	return got, nil
}

// update updates current, the group as last read, when owned allows it.
func (s *Store) update(ctx context.Context, current *cloudapi.TargetGroup, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	if err := s.owned(current.ID, current.Spec.Tags); err != nil {
		return nil, err
	}
	return s.cfg.API.UpdateTargetGroup(ctx, current.ID, update)
}

// forgetKey marks the group of key k unknown after a failed call about it.
func (s *Store) forgetKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[k]; e != nil {
		e.unsure = true
	}
}

// Forget marks the group with ID id unknown: a load balancer write naming it was
// refused, perhaps because it is gone. An empty id is none.
func (s *Store) Forget(id string) {
	if s == nil || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.group != nil && e.group.ID == id {
			e.unsure = true
		}
	}
}

// Due records that a group of the cluster may be unused, for the next collection: a
// delete of a group or of a load balancer naming one failed, a call that chose a group
// failed, a load balancer that named a group is gone, or a load balancer named a group
// the Store did not know.
func (s *Store) Due() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.due = true
	s.mu.Unlock()
}

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
	if chosen || s.cfg.Names(id, except) {
		return chosen
	}
	err := s.owned(id, tags)
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
	if err := s.cfg.Refresh(ctx); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the snapshot of the cluster's load balancers could not be refreshed", "err", err)
		return
	}
	var all []cloudapi.TargetGroup
	if err := s.listTagged(ctx, map[string]string{cloudapi.TagCluster: s.cfg.ClusterID}, func(tg *cloudapi.TargetGroup) {
		all = append(all, tg.Clone())
	}); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the cluster's target groups could not be listed", "err", err)
		return
	}
	s.mu.Lock()
	for _, tg := range all {
		if tg.Spec.Tags[cloudapi.TagTargetGroup] != "" { // as owned requires
			s.known[tg.ID] = tg.Spec.Tags
		}
	}
	s.mu.Unlock()
	failed = false
	for _, tg := range all {
		k := tg.Spec.Tags[cloudapi.TagTargetGroup]
		if k == "" || s.cfg.Names(tg.ID, "") {
			continue // not one of ccmkit's groups of Nodes, or in use
		}
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
