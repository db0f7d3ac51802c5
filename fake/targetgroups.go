package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TargetGroups returns the target group API, or (nil, false) unless
// Config.Capabilities.TargetGroups is true. It makes the Cloud a
// cloudapi.TargetGroupClient.
func (c *Cloud) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	if !c.cfg.targetGroupsEnabled() {
		return nil, false
	}
	return groupAPI{c}, true
}

var _ cloudapi.TargetGroupClient = (*Cloud)(nil)

type groupAPI struct{ c *Cloud }

// ListTargetGroups returns a page of copies of the groups that carry opts.Tags.
func (a groupAPI) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	const op = cloudapi.OpListTargetGroups
	c := a.c
	leave, err := c.begin(ctx, op, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	c.netMu.Lock()
	defer c.netMu.Unlock()
	groups, next, err := c.groups.page(opts.PageToken, c.pageSize(opts.PageSize), func(g cloudapi.TargetGroup) bool {
		return cloudapi.MatchTags(g.Spec.Tags, opts.Tags)
	})
	if err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, "", err)
	}
	page := &cloudapi.TargetGroupPage{NextPageToken: next}
	for _, g := range groups {
		page.Items = append(page.Items, g.Clone())
	}
	return page, nil
}

// CreateTargetGroup validates spec and stores it.
func (a groupAPI) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	const op = cloudapi.OpCreateTargetGroup
	c := a.c
	leave, err := c.begin(ctx, op, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := c.validateGroupSpec(spec); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, spec.Name, err)
	}
	out, err := c.createGroup(spec)
	if err != nil {
		return nil, err
	}
	if err := saved(op, spec.Name, c.save()); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Cloud) createGroup(spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	for _, id := range c.groups.ids {
		if c.groups.byID[id].Spec.Name == spec.Name {
			return nil, cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpCreateTargetGroup, spec.Name, fmt.Errorf("target group %s already has the name %q", id, spec.Name))
		}
	}
	c.groupSeq++
	g := cloudapi.TargetGroup{ID: fmt.Sprintf("tg-%06d", c.groupSeq), Spec: spec.Clone()}
	slices.Sort(g.Spec.Targets)
	c.groups.put(g.ID, g)
	out := g.Clone()
	return &out, nil
}

// UpdateTargetGroup replaces the group's targets and tags with update.Spec's; the name
// stays.
func (a groupAPI) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	const op = cloudapi.OpUpdateTargetGroup
	c := a.c
	leave, err := c.begin(ctx, op, id)
	if err != nil {
		return nil, err
	}
	defer leave()
	spec := update.Spec
	if spec.Name == "" {
		spec.Name = "-" // the name is not changed: validate the rest
	}
	if err := c.validateGroupSpec(spec); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	out, err := c.updateGroup(id, update.Spec)
	if err != nil {
		return nil, err
	}
	if err := saved(op, id, c.save()); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Cloud) updateGroup(id string, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	g, ok := c.groups.get(id)
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpUpdateTargetGroup, id, nil)
	}
	g.Spec.Targets = slices.Sorted(slices.Values(spec.Targets))
	g.Spec.Tags = maps.Clone(spec.Tags)
	c.groups.put(id, g)
	out := g.Clone()
	return &out, nil
}

// DeleteTargetGroup removes the group, unless a load balancer names it.
func (a groupAPI) DeleteTargetGroup(ctx context.Context, id string) error {
	const op = cloudapi.OpDeleteTargetGroup
	c := a.c
	leave, err := c.begin(ctx, op, id)
	if err != nil {
		return err
	}
	defer leave()
	if err := c.deleteGroup(id); err != nil {
		return err
	}
	return saved(op, id, c.save())
}

func (c *Cloud) deleteGroup(id string) error {
	const op = cloudapi.OpDeleteTargetGroup
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if _, ok := c.groups.get(id); !ok {
		return cloudapi.NewError(cloudapi.ErrNotFound, op, id, nil)
	}
	for _, lbID := range c.lbs.ids {
		if c.lbs.byID[lbID].lb.Spec.TargetGroup == id {
			return cloudapi.NewError(cloudapi.ErrConflict, op, id, fmt.Errorf("load balancer %s sends traffic to target group %s", lbID, id))
		}
	}
	c.groups.delete(id)
	return nil
}

// validateGroupSpec checks a group's spec: a name, known instances, each once.
func (c *Cloud) validateGroupSpec(s cloudapi.TargetGroupSpec) error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("name: required"))
	} else if len(s.Name) > MaxNameLength {
		errs = append(errs, fmt.Errorf("name: %q is longer than %d characters", s.Name, MaxNameLength))
	}
	seen := make(map[string]bool, len(s.Targets))
	c.mu.RLock()
	for _, t := range s.Targets {
		_, known := c.instances.get(t)
		switch {
		case seen[t]:
			errs = append(errs, fmt.Errorf("targets: %q is listed twice", t))
		case !known:
			errs = append(errs, fmt.Errorf("targets: no instance %q", t))
		}
		seen[t] = true
	}
	c.mu.RUnlock()
	return errors.Join(errs...)
}

// checkTargetGroup checks a load balancer spec's target group: none, or, with the
// capability, a group that exists while the load balancer has no targets of its own. The
// caller holds netMu.
func (c *Cloud) checkTargetGroup(spec cloudapi.LoadBalancerSpec) error {
	switch {
	case spec.TargetGroup == "":
		return nil
	case !c.cfg.targetGroupsEnabled():
		return fmt.Errorf("targetGroup: this cloud has no target groups (capabilities.targetGroups is false), so a load balancer cannot name %q", spec.TargetGroup)
	case len(spec.Targets) > 0:
		return fmt.Errorf("targetGroup: a load balancer that sends traffic to target group %q has no targets of its own, but the spec has %d", spec.TargetGroup, len(spec.Targets))
	}
	if _, ok := c.groups.get(spec.TargetGroup); !ok {
		return fmt.Errorf("targetGroup: no target group %q", spec.TargetGroup)
	}
	return nil
}
