package fake

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ccmkit/ccmkit/cloudapi"
)

type routeAPI struct{ c *Cloud }

var _ cloudapi.TaglessRouteAPI = routeAPI{}

// RoutesCarryNoTags reports Config.Capabilities.TaglessRoutes.
func (a routeAPI) RoutesCarryNoTags() bool { return a.c.cfg.routesTagless() }

// ListRoutes returns a page of copies of the routes that carry opts.Tags, each with
// Blackhole set when its target instance is gone or terminated.
func (a routeAPI) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	c := a.c
	leave, err := c.begin(ctx, cloudapi.OpListRoutes, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	c.netMu.Lock()
	items, next, err := c.routes.page(opts.PageToken, c.routePageSize(opts.PageSize), func(r cloudapi.Route) bool {
		return cloudapi.MatchTags(r.Tags, opts.Tags)
	})
	c.netMu.Unlock()
	if err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpListRoutes, "", err)
	}
	c.mu.RLock()
	for i := range items {
		items[i] = c.withBlackhole(items[i].Clone())
	}
	c.mu.RUnlock()
	return &cloudapi.RoutePage{Items: items, NextPageToken: next}, nil
}

// routePageSize returns how many routes a ListRoutes answers with.
func (c *Cloud) routePageSize(requested int) int {
	limit := c.cfg.RoutePageSize
	switch {
	case limit == 0 && requested <= 0:
		return c.routes.len() + 1
	case limit == 0:
		return requested
	case requested <= 0 || requested > limit:
		return limit
	}
	return requested
}

// CreateRoute adds a route to the cloud's one route table.
func (a routeAPI) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	const op = cloudapi.OpCreateRoute
	c := a.c
	leave, err := c.begin(ctx, op, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	dst, err := c.validateRoute(spec)
	if err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, spec.DestinationCIDR, err)
	}
	c.netMu.Lock()
	if other, taken := c.routeDst[dst]; taken {
		c.netMu.Unlock()
		return nil, cloudapi.NewError(cloudapi.ErrConflict, op, spec.DestinationCIDR, fmt.Errorf("route %s already sends %s", other, dst))
	}
	c.routeSeq++
	r := cloudapi.Route{ID: fmt.Sprintf("r-%06d", c.routeSeq), RouteSpec: spec}
	r = r.Clone()
	if c.cfg.routesTagless() {
		r.Tags = nil
	}
	c.routes.put(r.ID, r)
	c.routeDst[dst] = r.ID
	c.netMu.Unlock()
	if err := saved(op, spec.DestinationCIDR, c.save()); err != nil {
		return nil, err
	}
	c.mu.RLock()
	r = c.withBlackhole(r.Clone())
	c.mu.RUnlock()
	return &r, nil
}

// DeleteRoute removes a route.
func (a routeAPI) DeleteRoute(ctx context.Context, id string) error {
	const op = cloudapi.OpDeleteRoute
	c := a.c
	leave, err := c.begin(ctx, op, id)
	if err != nil {
		return err
	}
	defer leave()
	c.netMu.Lock()
	r, ok := c.routes.get(id)
	if !ok {
		c.netMu.Unlock()
		return cloudapi.NewError(cloudapi.ErrNotFound, op, id, nil)
	}
	if dst, err := netip.ParsePrefix(r.DestinationCIDR); err == nil {
		delete(c.routeDst, dst)
	}
	c.routes.delete(id)
	c.netMu.Unlock()
	return saved(op, id, c.save())
}

func (c *Cloud) validateRoute(spec cloudapi.RouteSpec) (netip.Prefix, error) {
	var errs []error
	dst, err := netip.ParsePrefix(spec.DestinationCIDR)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("destination %q is not a CIDR", spec.DestinationCIDR))
	case dst.Masked() != dst:
		errs = append(errs, fmt.Errorf("destination %q has host bits set; the canonical form is %s", spec.DestinationCIDR, dst.Masked()))
	}
	if spec.TargetInstanceID == "" {
		errs = append(errs, errors.New("target instance: required"))
	} else if !c.instanceKnown(spec.TargetInstanceID) {
		errs = append(errs, fmt.Errorf("target instance %q does not exist", spec.TargetInstanceID))
	}
	if spec.TargetAddress != "" {
		if _, err := netip.ParseAddr(spec.TargetAddress); err != nil {
			errs = append(errs, fmt.Errorf("target address %q is not an IP address", spec.TargetAddress))
		}
	}
	for k := range spec.Tags {
		if k == "" {
			errs = append(errs, errors.New("tags: empty key"))
		}
	}
	return dst, errors.Join(errs...)
}

// withBlackhole sets r.Blackhole from the state of its target. The caller holds mu.
func (c *Cloud) withBlackhole(r cloudapi.Route) cloudapi.Route {
	inst, ok := c.instances.get(r.TargetInstanceID)
	r.Blackhole = !ok || inst.State == cloudapi.InstanceTerminated
	return r
}
