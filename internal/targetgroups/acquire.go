package targetgroups

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

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
			since = s.cfg.LoadBalancers.Tick()
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
	began := s.cfg.LoadBalancers.Tick()
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

// update updates current, the group as last read, when mayWrite allows it.
func (s *Store) update(ctx context.Context, current *cloudapi.TargetGroup, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	if err := s.mayWrite(current.ID, current.Spec.Tags); err != nil {
		return nil, err
	}
	return s.cfg.API.UpdateTargetGroup(ctx, current.ID, update)
}
