package sweeper

// Teardown lists, and when asked deletes, every load balancer, route and target group of
// one cluster.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Resource is one cloud resource of a cluster.
type Resource struct {
	// Kind is a load balancer, a route or a target group.
	Kind Kind
	// ID is the cloud's ID.
	ID string
	// Name is the load balancer's or target group's name, or the route's destination CIDR.
	Name string
	// Owner is the owner its tags name: the Service's namespace/name, "share " and the
	// share's key for a load balancer several Services share (cloudapi.TagShare), the
	// Node's name, or for a target group which Nodes it holds (its
	// cloudapi.TagTargetGroup value).
	Owner string
	// Err is why deleting it failed; nil when it was deleted or not to be deleted.
	Err error
}

// TeardownOptions tune Teardown.
type TeardownOptions struct {
	// Delete deletes what Teardown finds. False (the default) is a dry run: Teardown
	// only lists.
	Delete bool
	// PageSize is the page size of the cloud lists; zero is the backend's default.
	PageSize int
}

// Teardown finds every load balancer, route and target group of client tagged with
// cloudapi.TagCluster = clusterID, whoever its owner, and with opts.Delete deletes each:
// what a cluster's owner (a Cluster API provider, an operator) runs after deleting the
// cluster, when no controller is left to clean up; load balancers several Services share
// (cloudapi.TagShare) are the cluster's too, whoever their Services. Target groups are looked for only when
// client offers them (cloudapi.TargetGroups). Nothing without that tag is listed or
// deleted (an item the cloud answers without it is dropped), so load balancers released
// by keep-on-delete, another cluster's and foreign resources survive. A resource the
// cloud answers not found on delete is gone already, which counts as deleted. A cloud
// whose routes carry no tags (cloudapi.RoutesCarryNoTags) has no route that can be told
// as the cluster's: none is listed, and the error says so.
//
// Target groups are deleted after the load balancers, which name them. A group the cloud
// still finds in use (cloudapi.ErrConflict: one of the cluster's load balancers whose
// delete failed, or another's load balancer that names it) is kept, never forced: its
// error says which, and a second run once that load balancer is gone deletes it.
//
// It returns the resources found, load balancers first, then routes, then target groups,
// each with its delete error, and an error joining every failure: a list that failed (its
// kind's resources are then missing from the answer) and every failed delete. A dry run
// deletes nothing. An empty clusterID is an error: it would name no cluster.
func Teardown(ctx context.Context, client cloudapi.Client, clusterID string, opts TeardownOptions) ([]Resource, error) {
	if clusterID == "" {
		return nil, errors.New("teardown: the cluster ID is empty; give the ID the cluster's resources are tagged with")
	}
	var found []Resource
	var errs []error
	// kept holds, by target group ID, the cluster's load balancers that name the group
	// and whose delete failed: why the group's delete is refused.
	kept := map[string][]string{}
	lbsListed := true
	if api, ok := client.LoadBalancers(); ok {
		lbs, err := listLoadBalancers(ctx, api, clusterID, opts.PageSize)
		if err != nil {
			lbsListed = false
			errs = append(errs, fmt.Errorf("teardown: %w", err))
		}
		for _, lb := range lbs {
			r := Resource{Kind: KindLoadBalancer, ID: lb.ID, Name: lb.Spec.Name, Owner: loadBalancerOwner(lb.Spec.Tags)}
			if opts.Delete {
				if err := api.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
					r.Err = fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
					errs = append(errs, fmt.Errorf("teardown: %w", r.Err))
					if g := lb.Spec.TargetGroup; g != "" {
						kept[g] = append(kept[g], lb.ID)
					}
				}
			}
			found = append(found, r)
		}
	}
	if api, ok := client.Routes(); ok && cloudapi.RoutesCarryNoTags(api) {
		errs = append(errs, errors.New("teardown: routes not listed: the cloud's routes carry no tags, so the cluster's cannot be told from others once its Nodes are gone; delete the routes into the cluster's pod CIDRs by hand"))
	} else if ok {
		rts, err := listClusterRoutes(ctx, api, clusterID, opts.PageSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown: %w", err))
		}
		for _, rt := range rts {
			r := Resource{Kind: KindRoute, ID: rt.ID, Name: rt.DestinationCIDR, Owner: rt.Tags[cloudapi.TagNode]}
			if opts.Delete {
				if err := api.DeleteRoute(ctx, rt.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
					r.Err = fmt.Errorf("deleting route %s: %w", rt.ID, err)
					errs = append(errs, fmt.Errorf("teardown: %w", r.Err))
				}
			}
			found = append(found, r)
		}
	}
	if api, ok := cloudapi.TargetGroups(client); ok {
		groups, err := listTargetGroups(ctx, api, clusterID, opts.PageSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown: %w", err))
		}
		for _, g := range groups {
			r := Resource{Kind: KindTargetGroup, ID: g.ID, Name: g.Spec.Name, Owner: g.Spec.Tags[cloudapi.TagTargetGroup]}
			if opts.Delete {
				if err := api.DeleteTargetGroup(ctx, g.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
					r.Err = targetGroupDeleteError(g.ID, kept[g.ID], lbsListed, err)
					errs = append(errs, fmt.Errorf("teardown: %w", r.Err))
				}
			}
			found = append(found, r)
		}
	}
	return found, errors.Join(errs...)
}

// loadBalancerOwner is the owner a load balancer's tags name (Resource.Owner): its share,
// which owns it whatever else it carries (as package loadbalancer reads it), else its
// Service's namespace/name.
func loadBalancerOwner(tags map[string]string) string {
	if key := tags[cloudapi.TagShare]; key != "" {
		return shareOwner(key)
	}
	return tags[cloudapi.TagServiceName]
}

// targetGroupDeleteError is why deleting the target group id failed with err; failedLBs
// are the cluster's load balancers that name it and failed to delete, lbsListed is false
// when the cluster's load balancers could not be listed.
func targetGroupDeleteError(id string, failedLBs []string, lbsListed bool, err error) error {
	switch {
	case !errors.Is(err, cloudapi.ErrConflict):
		return fmt.Errorf("deleting target group %s: %w", id, err)
	case !lbsListed:
		return fmt.Errorf("target group %s kept: still in use by a load balancer, and the cluster's load balancers could not be listed; run teardown again: %w", id, err)
	case len(failedLBs) > 0:
		return fmt.Errorf("target group %s kept: still in use by the cluster's load balancer(s) %s, whose delete failed; run teardown again: %w",
			id, strings.Join(failedLBs, ", "), err)
	}
	return fmt.Errorf("target group %s kept: still in use by a load balancer that is not the cluster's, was created since the list, or is still "+
		"being deleted (a cloud that deletes load balancers after answering): wait for deletes to finish and run teardown again, or delete that load balancer "+
		"or make it name another group: %w", id, err)
}
