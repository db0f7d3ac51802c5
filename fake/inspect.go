package fake

import (
	"context"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Inventory is everything a cloud holds, each resource with its tags, as Cloud.Inventory
// returns it. Tests use it to find what ccmkit left behind: load balancers whose Service
// is gone (by their cloudapi.TagService tag) and routes whose instance is gone (Blackhole).
type Inventory struct {
	// Instances, ordered by ID.
	Instances []cloudapi.Instance
	// LoadBalancers, ordered by ID, with their current status. Reading them here does not
	// count as a read for provisioning.
	LoadBalancers []cloudapi.LoadBalancer
	// Routes, ordered by ID, with Blackhole set as ListRoutes would.
	Routes []cloudapi.Route
	// TargetGroups, ordered by ID (Capabilities.TargetGroups).
	TargetGroups []cloudapi.TargetGroup
}

// Targets returns the instance IDs that receive the load balancer's traffic: its target
// group's members when it names one the inventory holds, else its own targets.
func (inv Inventory) Targets(lb cloudapi.LoadBalancer) []string {
	if lb.Spec.TargetGroup == "" {
		return lb.Spec.Targets
	}
	for _, g := range inv.TargetGroups {
		if g.ID == lb.Spec.TargetGroup {
			return g.Spec.Targets
		}
	}
	return nil
}

// LoadBalancersTagged returns the load balancers that carry every tag in filter.
func (inv Inventory) LoadBalancersTagged(filter map[string]string) []cloudapi.LoadBalancer {
	var out []cloudapi.LoadBalancer
	for _, lb := range inv.LoadBalancers {
		if cloudapi.MatchTags(lb.Spec.Tags, filter) {
			out = append(out, lb)
		}
	}
	return out
}

// RoutesTagged returns the routes that carry every tag in filter.
func (inv Inventory) RoutesTagged(filter map[string]string) []cloudapi.Route {
	var out []cloudapi.Route
	for _, r := range inv.Routes {
		if cloudapi.MatchTags(r.Tags, filter) {
			out = append(out, r)
		}
	}
	return out
}

// Inventory returns deep copies of everything the cloud holds. It is not counted as a
// call. With a state file it reads the file first if another Cloud changed it; if that
// read fails, it answers with what this Cloud last read or wrote.
func (c *Cloud) Inventory() Inventory {
	if leave, err := c.enter(context.Background(), false); err == nil {
		defer leave()
	}
	var inv Inventory
	c.netMu.Lock()
	for _, id := range c.lbs.ids {
		inv.LoadBalancers = append(inv.LoadBalancers, c.lbs.byID[id].lb.Clone())
	}
	for _, id := range c.routes.ids {
		inv.Routes = append(inv.Routes, c.routes.byID[id].Clone())
	}
	for _, id := range c.groups.ids {
		inv.TargetGroups = append(inv.TargetGroups, c.groups.byID[id].Clone())
	}
	c.netMu.Unlock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, id := range c.instances.ids {
		inv.Instances = append(inv.Instances, c.instances.byID[id].Clone())
	}
	for i := range inv.Routes {
		inv.Routes[i] = c.withBlackhole(inv.Routes[i])
	}
	return inv
}
