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
	"github.com/ccmkit/ccmkit/internal/paging"
)

// groupAllNodes is the TagTargetGroup value of the group of every Node.
const groupAllNodes = "all-nodes"

// groups is what a LoadBalancer knows about the cluster's target groups, by group key
// (the TagTargetGroup value). It is safe for concurrent use; the calls about one key are
// serialized by the LoadBalancer's lock of that key (groupLock).
type groups struct {
	api cloudapi.TargetGroupAPI

	mu      sync.Mutex
	entries map[string]*groupEntry // by key
	// dropping are the IDs of groups no load balancer wants any more whose delete failed;
	// the next drop tries them again.
	dropping map[string]bool
}

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
	// users counts the calls that chose the group and have not yet written their load
	// balancer: the group is not deleted under them.
	users int
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
		e = &groupEntry{unsure: true}
		g.entries[k] = e
	}
	current, read, at, unsure := e.group, e.read, e.at, e.unsure
	g.mu.Unlock()

	fresh := !unsure && now.Sub(at) <= l.opts.MaxAge
	if !fresh || current == nil || !l.groupHolds(current, k, want.Targets) {
		if since == 0 {
			since = l.snap.tick()
		}
		if unsure || read == 0 || read <= since || !fresh {
			found, err := l.listGroup(ctx, k)
			if err != nil {
				l.forgetGroup(k)
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

	g.mu.Lock()
	e = g.entries[k]
	e.users++
	delete(g.dropping, current.ID)
	g.mu.Unlock()
	want.TargetGroup = current.ID
	want.Targets = nil
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			e.users--
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
	spec := cloudapi.TargetGroupSpec{Name: l.groupName(k), Targets: targets, Tags: map[string]string{}}
	if current != nil {
		spec.Name = current.Spec.Name
		maps.Copy(spec.Tags, current.Spec.Tags)
	}
	maps.Copy(spec.Tags, l.groupTags(k))
	return spec
}

// listGroup lists the cluster's groups of key k (one page, normally) and records what it
// found as a fresh read; it returns the first by ID, or nil when there is none. Groups
// whose tags are not the key's are ignored, whatever the backend's filter did.
func (l *LoadBalancer) listGroup(ctx context.Context, k string) (*cloudapi.TargetGroup, error) {
	tags := l.groupTags(k)
	began := l.snap.tick()
	at := l.opts.Clock.Now()
	page := func(ctx context.Context, token string) ([]cloudapi.TargetGroup, string, error) {
		p, err := l.groups.api.ListTargetGroups(ctx, cloudapi.ListOptions{Tags: tags, PageToken: token, PageSize: l.opts.PageSize})
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			return nil, "", fmt.Errorf("the cloud answered neither a page nor an error: %w", cloudapi.ErrTransient)
		}
		return p.Items, p.NextPageToken, nil
	}
	var found *cloudapi.TargetGroup
	_, err := paging.All(ctx, cloudapi.OpListTargetGroups, page, func(g *cloudapi.TargetGroup) bool {
		if g.ID != "" && cloudapi.MatchTags(g.Spec.Tags, tags) && (found == nil || g.ID < found.ID) {
			c := g.Clone()
			found = &c
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("looking up target group %s=%s: %w", cloudapi.TagTargetGroup, k, err)
	}
	l.groups.mu.Lock()
	e := l.groups.entries[k]
	e.group, e.read, e.at, e.unsure = found, began, at, false
	l.groups.mu.Unlock()
	return found, nil
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
		got, err := l.groups.api.UpdateTargetGroup(ctx, current.ID, update)
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
	}
	if out == nil || out.ID == "" {
		return nil, fmt.Errorf("writing target group %q: the cloud answered no group: %w", spec.Name, cloudapi.ErrTransient)
	}
	c := out.Clone()
	l.groups.mu.Lock()
	e := l.groups.entries[k]
	e.group, e.read, e.at, e.unsure = &c, 0, l.opts.Clock.Now(), false
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
	found, ferr := l.listGroup(ctx, k)
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
	got, err = l.groups.api.UpdateTargetGroup(ctx, found.ID, update)
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

// dropGroups deletes the groups with the given IDs, which load balancer except no longer
// names, when no load balancer of the cluster wants them any more, and retries the deletes
// that failed before. A group is kept while a call has chosen it and not yet written its
// load balancer, while the snapshot knows another load balancer that names it, and when
// the cloud refuses the delete because a load balancer names it (ErrConflict). A failed
// delete is logged and tried again by the next drop: it never fails the caller, whose load
// balancer is already written.
func (l *LoadBalancer) dropGroups(ctx context.Context, logger klog.Logger, except string, ids ...string) {
	if l.groups == nil {
		return
	}
	g := l.groups
	g.mu.Lock()
	for id := range g.dropping {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if id == "" {
			continue
		}
		l.dropGroup(ctx, logger, except, id)
	}
}

func (l *LoadBalancer) dropGroup(ctx context.Context, logger klog.Logger, except, id string) {
	g := l.groups
	k := ""
	g.mu.Lock()
	for key, e := range g.entries {
		if e.group != nil && e.group.ID == id {
			k = key
		}
	}
	g.mu.Unlock()
	lockKey := groupLock(k)
	if k == "" {
		lockKey = groupLock("id/" + id) // a group no entry knows: no call chooses it
	}
	defer l.lock(lockKey)()
	g.mu.Lock()
	e := g.entries[k]
	inUse := e != nil && e.users > 0 && e.group != nil && e.group.ID == id
	g.mu.Unlock()
	if inUse || l.snap.names(id, except) {
		g.mu.Lock()
		delete(g.dropping, id)
		g.mu.Unlock()
		return
	}
	err := g.api.DeleteTargetGroup(ctx, id)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil, errors.Is(err, cloudapi.ErrNotFound):
		delete(g.dropping, id)
		if e != nil && e.group != nil && e.group.ID == id {
			e.group, e.read, e.at, e.unsure = nil, 0, l.opts.Clock.Now(), false
		}
		logger.Info("Deleted target group: no load balancer of the cluster names it", "targetGroup", id, "key", k)
	case errors.Is(err, cloudapi.ErrConflict):
		delete(g.dropping, id) // a load balancer names it: it is not unused
		logger.V(2).Info("Keeping target group: a load balancer names it", "targetGroup", id)
	default:
		g.dropping[id] = true
		logger.Error(err, "Deleting a target group no load balancer names; it is tried again with the next", "targetGroup", id)
	}
}
