package sweeper

// Teardown lists, and when asked deletes, every load balancer and route of one cluster.

import (
	"context"
	"errors"
	"fmt"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Resource is one cloud resource of a cluster.
type Resource struct {
	// Kind is a load balancer or a route.
	Kind Kind
	// ID is the cloud's ID.
	ID string
	// Name is the load balancer's name, or the route's destination CIDR.
	Name string
	// Owner is the owner its tags name: the Service's namespace/name, or the Node's name.
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

// Teardown finds every load balancer and route of client tagged with cloudapi.TagCluster
// = clusterID, whoever its owner, and with opts.Delete deletes each: what a cluster's
// owner (a Cluster API provider, an operator) runs after deleting the cluster, when no
// controller is left to clean up. Nothing without that tag is listed or deleted (an item
// the cloud answers without it is dropped), so load balancers released by
// keep-on-delete, another cluster's and foreign ones survive. A resource the cloud
// answers not found on delete is gone already, which counts as deleted.
//
// It returns the resources found, load balancers first, each with its delete error, and
// an error joining every failure: a list that failed (its kind's resources are then
// missing from the answer) and every failed delete. A dry run deletes nothing. An empty
// clusterID is an error: it would name no cluster.
func Teardown(ctx context.Context, client cloudapi.Client, clusterID string, opts TeardownOptions) ([]Resource, error) {
	if clusterID == "" {
		return nil, errors.New("teardown: the cluster ID is empty; give the ID the cluster's resources are tagged with")
	}
	var found []Resource
	var errs []error
	if api, ok := client.LoadBalancers(); ok {
		lbs, err := ListLoadBalancers(ctx, api, clusterID, opts.PageSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown: %w", err))
		}
		for _, lb := range lbs {
			r := Resource{Kind: KindLoadBalancer, ID: lb.ID, Name: lb.Spec.Name, Owner: lb.Spec.Tags[cloudapi.TagServiceName]}
			if opts.Delete {
				if err := api.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
					r.Err = fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
					errs = append(errs, fmt.Errorf("teardown: %w", r.Err))
				}
			}
			found = append(found, r)
		}
	}
	if api, ok := client.Routes(); ok {
		rts, err := ListRoutes(ctx, api, clusterID, opts.PageSize)
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
	return found, errors.Join(errs...)
}
