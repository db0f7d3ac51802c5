package loadbalancer

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

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// groupAllNodes is the TagTargetGroup value of the group of every Node.
const groupAllNodes = "all-nodes"

// groups is what a LoadBalancer knows about the cluster's target groups. It is safe for
// concurrent use; the calls about the group of one key (the TagTargetGroup value) are
// serialized by the LoadBalancer's lock of that key (groupLock).
type groups struct {
	api cloudapi.TargetGroupAPI

	mu      sync.Mutex
	entries map[string]*groupEntry // by key
	// known are the tags (as last read) of the groups known to be the cluster's, by group
	// ID, their key the cloudapi.TagTargetGroup tag: found by a
	// list with the cluster's tags (checked), or created by ccmkit. Only those are ever
	// deleted.
	known map[string]map[string]string
	// users counts, by group ID, the calls that chose the group and have not yet written
	// their load balancer: the cloud cannot know of them, so the group is not deleted.
	users map[string]int
	// due is true when a group of the cluster may be unused: a delete of a group or of a
	// load balancer naming one failed, the cloud refused a group's delete as in use, a
	// call that chose a group failed, a load balancer named a group ccmkit did not know,
	// or the LoadBalancer is new (a predecessor may have left one). The next collection
	// lists the cluster's groups and deletes the unused.
	due bool
	// next is when the next collection may begin: at once after a clean one; after one
	// whose lists failed or that could not delete a group that looked unused, backoff
	// later (Options.MaxAge, doubling with each such collection in a row up to
	// collectMaxWaits times it); after one that kept a group made lately, when that group
	// stops being new (whichever comes first).
	next    time.Time
	backoff time.Duration
	// collecting is true while a collection runs: one at a time.
	collecting bool
}

// collectMaxWaits caps the wait between collections, in Options.MaxAge, while a group
// that looks unused cannot be deleted (a load balancer ccmkit does not know names it).
const collectMaxWaits = 32

// groupEntry is what is known about the group of one key.
type groupEntry struct {
	// group is the group as the cloud last answered; nil when it has none.
	group *cloudapi.TargetGroup
	// read is the tick (snapshot.tick) at which the list that found group began; 0 when
	// group is the cloud's answer to a write (no read: a write may be based on it only
	// after a list that begins later).
	read uint64
	// at is when the entry was learnt; an entry older than Options.MaxAge is listed again.
	at time.Time
	// unsure is true after a failed call about the group: only the cloud knows.
	unsure bool
	// lists holds back the group's next list after a failed one, so that an outage of the
	// group API costs one list per backoff, not one per call.
	lists pace.Backoff
	// created is when this LoadBalancer created the group (or adopted it after a lost
	// create). A collection keeps a group created less than collectMaxWaits times
	// Options.MaxAge ago (and comes back for it), so that a Service whose load balancer
	// create keeps failing does not make and delete its group at every retry.
	created time.Time
}

// groupKey returns the TagTargetGroup value of the group of the Nodes sel selects (nil:
// every Node).
func groupKey(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return groupAllNodes
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return "selector-" + hex.EncodeToString(sum[:8])
}

// groupLock is the lock key of the group key k; a Service UID has no "/".
func groupLock(k string) string { return "target-group/" + k }

// groupName is the cloud name of the cluster's group of key k: the cluster ID (shortened,
// as in a load balancer's name), "-nodes-", and a hash of the cluster ID and the key,
// unique per cluster and key, stable and within 63 characters.
func (l *LoadBalancer) groupName(k string) string {
	sum := sha256.Sum256([]byte(l.opts.ClusterID + "\x00" + k))
	return l.namePrefix() + "-nodes-" + hex.EncodeToString(sum[:8])
}

// groupTags are the tags that make a group the cluster's group of key k.
func (l *LoadBalancer) groupTags(k string) map[string]string {
	return map[string]string{cloudapi.TagCluster: l.opts.ClusterID, cloudapi.TagTargetGroup: k}
}

// group makes want send traffic to the cluster's target group of the Nodes in want.Targets
// (those that sel selects; nil: every Node), when the LoadBalancer has target groups: it
// makes the group hold exactly want.Targets and sets want.TargetGroup to its ID and
// want.Targets to none. Without target groups it leaves want as it is.
//
// The group's members are written only from a fresh read of the group: a list by its tags
// that began after since (the arrival of the node set of a node sync), or, when since is
// 0, after the call; concurrent callers for one group are serialized, so the calls of a
// node sync write the group once. A group that already holds want.Targets (as the cloud
// last answered, no older than Options.MaxAge) costs no call. A group is created only after
// such a list found none, and after an ambiguous or conflicting create the group is looked
// up again and adopted.
//
// The function it returns must be called once the load balancer that names the group is
// written, or the attempt given up: until then the group is not deleted.
func (l *LoadBalancer) group(ctx context.Context, logger klog.Logger, want *cloudapi.LoadBalancerSpec, sel labels.Selector, since uint64) (func(), error) {
	if l.groups == nil {
		return func() {}, nil
	}
	k := groupKey(sel)
	defer l.lock(groupLock(k))()
	g := l.groups
	now := l.opts.Clock.Now()

	g.mu.Lock()
	e := g.entries[k]
	if e == nil {
		e = &groupEntry{unsure: true, lists: pace.Backoff{Min: sharedlist.MinBackoff, Max: sharedlist.MaxBackoff}}
		g.entries[k] = e
	}
	current, read, at, unsure := e.group, e.read, e.at, e.unsure
	g.mu.Unlock()

	fresh := !unsure && now.Sub(at) <= l.opts.MaxAge
	if !fresh || current == nil || !l.groupHolds(current, k, want.Targets) {
		if since == 0 {
			since = l.snap.tick()
		}
		if unsure || read <= since || !fresh { // read is 0 after a write: never fresh enough
			g.mu.Lock()
			held := e.lists.Hold(now, "listing target group "+cloudapi.TagTargetGroup+"="+k)
			g.mu.Unlock()
			if held != nil {
				return nil, held
			}
			found, err := l.listGroup(ctx, logger, k)
			if err != nil {
				return nil, err
			}
			current = found
		}
		var err error
		if current, err = l.writeGroup(ctx, logger, k, current, want.Targets); err != nil {
			l.forgetGroup(k)
			return nil, err
		}
	}

	id := current.ID
	g.mu.Lock()
	g.users[id]++
	g.mu.Unlock()
	want.TargetGroup = id
	want.Targets = nil
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.users[id]--; g.users[id] <= 0 {
				delete(g.users, id)
			}
			g.mu.Unlock()
		})
	}, nil
}

// groupHolds reports whether group holds exactly targets and carries the tags of key k.
func (l *LoadBalancer) groupHolds(group *cloudapi.TargetGroup, k string, targets []string) bool {
	return cloudapi.DiffTargetGroup(group.Spec, l.groupSpec(group, k, targets)).Empty()
}

// groupSpec is the spec of the cluster's group of key k with targets as members: current's
// name and foreign tags kept (current may be nil).
func (l *LoadBalancer) groupSpec(current *cloudapi.TargetGroup, k string, targets []string) cloudapi.TargetGroupSpec {
	spec := cloudapi.TargetGroupSpec{Targets: targets, Tags: map[string]string{}}
	if current != nil {
		spec.Name = current.Spec.Name
		maps.Copy(spec.Tags, current.Spec.Tags)
	} else {
		spec.Name = l.groupName(k) // hashed only for a create: groupHolds runs on every call
	}
	maps.Copy(spec.Tags, l.groupTags(k))
	return spec
}

// listGroup lists the cluster's groups of key k (one page, normally) and records what it
// found as a fresh read; it returns the first by ID, or nil when there is none. Groups
// whose tags are not the key's are ignored, whatever the backend's filter did; further
// groups of the key (a cloud that lost track of a create) are left to the collection.
// The caller holds the key's lock.
func (l *LoadBalancer) listGroup(ctx context.Context, logger klog.Logger, k string) (*cloudapi.TargetGroup, error) {
	tags := l.groupTags(k)
	began := l.snap.tick()
	at := l.opts.Clock.Now()
	var all []cloudapi.TargetGroup
	err := l.listGroups(ctx, tags, func(g *cloudapi.TargetGroup) { all = append(all, sortedGroup(g)) })
	g := l.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entries[k]
	if err != nil {
		e.unsure = true
		e.lists.Failed(at, err)
		return nil, fmt.Errorf("looking up target group %s=%s: %w", cloudapi.TagTargetGroup, k, err)
	}
	e.lists.Succeeded()
	var found *cloudapi.TargetGroup
	for i := range all {
		g.known[all[i].ID] = all[i].Spec.Tags
		if found == nil || all[i].ID < found.ID {
			found = &all[i]
		}
	}
	if len(all) > 1 {
		g.due = true
		logger.Info("The cloud has several target groups of one key: using the first by ID; the others are deleted once unused", "key", k, "targetGroup", found.ID, "groups", len(all))
	}
	e.group, e.read, e.at, e.unsure = found, began, at, false
	return found, nil
}

// sortedGroup returns a copy of g with its targets sorted, as the targets a Service wants
// are: comparing them is then one comparison a target, whatever order the cloud answers.
func sortedGroup(g *cloudapi.TargetGroup) cloudapi.TargetGroup {
	c := g.Clone()
	slices.Sort(c.Spec.Targets)
	return c
}

// listGroups lists the groups that carry tags, every page, and calls add for each one
// that carries them and has an ID, whatever the backend's filter did.
func (l *LoadBalancer) listGroups(ctx context.Context, tags map[string]string, add func(*cloudapi.TargetGroup)) error {
	_, err := paging.TargetGroups(ctx, l.groups.api, tags, l.opts.PageSize, func(g *cloudapi.TargetGroup) bool {
		if g.ID != "" {
			add(g)
		}
		return true
	})
	return err
}

// writeGroup makes the cluster's group of key k hold exactly targets, from current, a
// fresh read (nil: there is none): nothing when it does, an update when it exists, else a
// create. It records and returns the group as the cloud answered.
func (l *LoadBalancer) writeGroup(ctx context.Context, logger klog.Logger, k string, current *cloudapi.TargetGroup, targets []string) (*cloudapi.TargetGroup, error) {
	spec := l.groupSpec(current, k, targets)
	var out *cloudapi.TargetGroup
	switch {
	case current != nil && l.groupHolds(current, k, targets):
		return current, nil
	case current != nil:
		update := cloudapi.DiffTargetGroup(current.Spec, spec)
		got, err := l.updateGroup(ctx, current, update)
		if err != nil {
			return nil, fmt.Errorf("updating target group %s: %w", current.ID, err)
		}
		logger.V(2).Info("Updated target group", "targetGroup", current.ID, "key", k, "addTargets", len(update.AddTargets), "removeTargets", len(update.RemoveTargets))
		out = got
	default:
		got, err := l.createGroup(ctx, logger, k, spec)
		if err != nil {
			return nil, err
		}
		out = got
		l.groups.mu.Lock()
		l.groups.entries[k].created = l.opts.Clock.Now()
		l.groups.mu.Unlock()
	}
	if out == nil || out.ID == "" {
		return nil, fmt.Errorf("writing target group %q: the cloud answered no group: %w", spec.Name, cloudapi.ErrTransient)
	}
	c := sortedGroup(out)
	l.groups.mu.Lock()
	e := l.groups.entries[k]
	e.group, e.read, e.at, e.unsure = &c, 0, l.opts.Clock.Now(), false
	l.groups.known[c.ID] = c.Spec.Tags
	l.groups.mu.Unlock()
	return &c, nil
}

// createGroup creates the cluster's group of key k, or adopts the one a lost or
// conflicting create made.
func (l *LoadBalancer) createGroup(ctx context.Context, logger klog.Logger, k string, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	got, err := l.groups.api.CreateTargetGroup(ctx, spec)
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
	found, ferr := l.listGroup(ctx, logger, k)
	if ferr != nil {
		return nil, fmt.Errorf("creating target group %q: %w; looking for it afterwards: %w", spec.Name, err, ferr)
	}
	if found == nil {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating target group %q: %w; no target group with tags %s=%s, %s=%s exists, so another owns the name: rename or delete that group in the cloud",
				spec.Name, err, cloudapi.TagCluster, l.opts.ClusterID, cloudapi.TagTargetGroup, k)
		}
		return nil, fmt.Errorf("creating target group %q: %w", spec.Name, err)
	}
	logger.Info("Adopting the target group of an earlier create", "targetGroup", found.ID, "key", k, "createErr", err)
	if l.groupHolds(found, k, spec.Targets) {
		return found, nil
	}
	update := cloudapi.DiffTargetGroup(found.Spec, l.groupSpec(found, k, spec.Targets))
	got, err = l.updateGroup(ctx, found, update)
	if err != nil {
		return nil, fmt.Errorf("updating target group %s: %w", found.ID, err)
	}
	return got, nil
}

// forgetGroup marks the group of key k unknown after a failed call about it.
func (l *LoadBalancer) forgetGroup(k string) {
	l.groups.mu.Lock()
	defer l.groups.mu.Unlock()
	if e := l.groups.entries[k]; e != nil {
		e.unsure = true
	}
}

// forgetGroupID marks the group with ID id unknown: a load balancer write naming it was
// refused, perhaps because it is gone.
func (l *LoadBalancer) forgetGroupID(id string) {
	if l.groups == nil || id == "" {
		return
	}
	l.groups.mu.Lock()
	defer l.groups.mu.Unlock()
	for _, e := range l.groups.entries {
		if e.group != nil && e.group.ID == id {
			e.unsure = true
		}
	}
}

// groupsDue records that a group of the cluster may be unused (a call that chose one
// failed), for the next collection.
func (l *LoadBalancer) groupsDue() {
	if l.groups == nil {
		return
	}
	l.groups.mu.Lock()
	l.groups.due = true
	l.groups.mu.Unlock()
}

// dropGroups deletes the groups with the given IDs, which the load balancer with ID except
// no longer names, when nothing wants them any more (see dropGroup).
func (l *LoadBalancer) dropGroups(ctx context.Context, logger klog.Logger, except string, ids ...string) {
	if l.groups == nil {
		return
	}
	for _, id := range ids {
		if id != "" {
			l.dropGroup(ctx, logger, except, id)
		}
	}
}

// dropGroup deletes the cluster's group with ID id unless something may want it: only a
// group known to be the cluster's (known; an unknown one is left to the next collection),
// never while a call has chosen it and not yet written its load balancer (that call names
// it, or marks a collection due when it fails), nor while the snapshot knows a load
// balancer other than except that names it (that one drops it when it leaves); the cloud
// refuses to delete a group a load balancer names (ErrConflict), which leaves it to the
// next collection, as a failed delete does. A failed delete never fails the caller, whose
// load balancer is already written.
func (l *LoadBalancer) dropGroup(ctx context.Context, logger klog.Logger, except, id string) (left bool) {
	g := l.groups
	g.mu.Lock()
	tags, ours := g.known[id]
	k := tags[cloudapi.TagTargetGroup]
	g.mu.Unlock()
	if !ours {
		// Not known to be the cluster's (a restart forgot it, or it is another's): the
		// collection lists the cluster's groups by their tags.
		logger.V(2).Info("Leaving a target group not known as the cluster's to the collection", "targetGroup", id)
		l.groupsDue()
		return true
	}
	defer l.lock(groupLock(k))()
	g.mu.Lock()
	chosen := g.users[id] > 0
	g.mu.Unlock()
	if chosen || l.snap.names(id, except) {
		return chosen
	}
	err := l.deleteGroup(ctx, id, tags)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil, errors.Is(err, cloudapi.ErrNotFound):
		delete(g.known, id)
		if e := g.entries[k]; e != nil && e.group != nil && e.group.ID == id {
			e.group, e.read, e.at, e.unsure = nil, 0, l.opts.Clock.Now(), false
		}
		logger.Info("Deleted target group: no load balancer of the cluster names it", "targetGroup", id, "key", k)
		return false
	case errors.Is(err, cloudapi.ErrConflict):
		g.due = true
		logger.V(2).Info("Keeping target group: the cloud says a load balancer names it", "targetGroup", id, "err", err)
	default:
		g.due = true
		logger.Error(err, "Deleting a target group no load balancer names; it is tried again by the next collection", "targetGroup", id)
	}
	return true
}

// collectGroups deletes the cluster's groups that no load balancer names, when a
// collection is due (see groups.due) and groups.next allows it: one list of the cluster's groups by TagCluster (tags checked), after
// the snapshot of the cluster's load balancers is no older than Options.MaxAge, then
// dropGroup for each group the snapshot knows no load balancer of. It runs at the end of
// the LoadBalancer's calls, outside their Service's lock, and from CollectGroups, one at a
// time; a failure leaves it due.
func (l *LoadBalancer) collectGroups(ctx context.Context) {
	g := l.groups
	if g == nil {
		return
	}
	now := l.opts.Clock.Now()
	g.mu.Lock()
	if !g.due || g.collecting || now.Before(g.next) {
		g.mu.Unlock()
		return
	}
	g.due, g.collecting = false, true
	g.mu.Unlock()
	logger := klog.FromContext(ctx)
	failed := true       // the lists failed, or a group that looked unused could not be deleted
	var newest time.Time // the latest time a group made lately was made; zero for none
	defer func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.collecting = false
		g.next = time.Time{}
		if failed {
			g.backoff = min(max(2*g.backoff, l.opts.MaxAge), collectMaxWaits*l.opts.MaxAge)
			g.next = now.Add(g.backoff)
		} else {
			g.backoff = 0
		}
		if !newest.IsZero() {
			if until := newest.Add(collectMaxWaits * l.opts.MaxAge); g.next.IsZero() || until.Before(g.next) {
				g.next = until
			}
		}
		if failed || !newest.IsZero() {
			g.due = true // events during the collection set it as well, without a wait
		}
	}()
	if err := l.snap.refresh(ctx); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the snapshot of the cluster's load balancers could not be refreshed", "err", err)
		return
	}
	var all []cloudapi.TargetGroup
	if err := l.listGroups(ctx, map[string]string{cloudapi.TagCluster: l.opts.ClusterID}, func(tg *cloudapi.TargetGroup) {
		all = append(all, tg.Clone())
	}); err != nil {
		logger.V(2).Info("Collecting unused target groups later: the cluster's target groups could not be listed", "err", err)
		return
	}
	g.mu.Lock()
	for _, tg := range all {
		if _, ok := tg.Spec.Tags[cloudapi.TagTargetGroup]; ok {
			g.known[tg.ID] = tg.Spec.Tags
		}
	}
	g.mu.Unlock()
	failed = false
	recent := now.Add(-collectMaxWaits * l.opts.MaxAge) // see groupEntry.created
	for _, tg := range all {
		k, ok := tg.Spec.Tags[cloudapi.TagTargetGroup]
		if !ok || l.snap.names(tg.ID, "") {
			continue // not one of ccmkit's groups of Nodes, or in use
		}
		g.mu.Lock()
		e := g.entries[k]
		fresh := e != nil && e.group != nil && e.group.ID == tg.ID && e.created.After(recent)
		created := time.Time{}
		if fresh {
			created = e.created
		}
		g.mu.Unlock()
		if fresh {
			if created.After(newest) { // made lately for a call that may succeed next time: later
				newest = created
			}
			continue
		}
		if l.dropGroup(ctx, logger, "", tg.ID) {
			failed = true
		}
	}
}

// CollectGroups runs the collection of unused target groups when one is due and its wait
// allows it (see "Target groups" in the package documentation), as the LoadBalancer's
// calls do at their end; without target groups it does nothing. It is for a caller that
// runs it periodically, so that a collection that no call runs still happens:
// the controller controllers.TargetGroupCollector runs it every cache.maxAge.
func (l *LoadBalancer) CollectGroups(ctx context.Context) { l.collectGroups(ctx) }
