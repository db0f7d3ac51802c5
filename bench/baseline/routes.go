package baseline

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Routes implements cloudprovider.Routes with the cloud's route calls and no state.
type Routes struct {
	api       cloudapi.RouteAPI
	clusterID string
	instances *Instances
}

var _ cloudprovider.Routes = (*Routes)(nil)

// ListRoutes lists the routes tagged with the cluster ID, all pages.
func (r *Routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	opts := cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: r.clusterID}}
	var out []*cloudprovider.Route
	for {
		page, err := r.api.ListRoutes(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, rt := range page.Items {
			if !cloudapi.MatchTags(rt.Tags, opts.Tags) {
				continue
			}
			out = append(out, &cloudprovider.Route{
				Name:            rt.ID,
				TargetNode:      types.NodeName(rt.Tags[cloudapi.TagNode]),
				DestinationCIDR: rt.DestinationCIDR,
				Blackhole:       rt.Blackhole,
			})
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		opts.PageToken = page.NextPageToken
	}
}

// CreateRoute finds the instance of route.TargetNode by listing instances, then creates
// the route tagged with the cluster ID and the Node's name.
func (r *Routes) CreateRoute(ctx context.Context, _ string, nameHint string, route *cloudprovider.Route) error {
	dst, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("route to node %s: destination %q is not a CIDR: %w", route.TargetNode, route.DestinationCIDR, err)
	}
	inst, err := r.instances.byName(ctx, string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("route to node %s: %w", route.TargetNode, err)
	}
	_, err = r.api.CreateRoute(ctx, cloudapi.RouteSpec{
		Name:             nameHint,
		DestinationCIDR:  dst.Masked().String(),
		TargetInstanceID: inst.ID,
		Tags:             map[string]string{cloudapi.TagCluster: r.clusterID, cloudapi.TagNode: string(route.TargetNode)},
	})
	if err != nil {
		return fmt.Errorf("creating route %s to node %s: %w", dst, route.TargetNode, err)
	}
	return nil
}

// DeleteRoute deletes the route by its ID (route.Name); a route that is gone is success.
func (r *Routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if err := r.api.DeleteRoute(ctx, route.Name); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		return fmt.Errorf("deleting route %s: %w", route.Name, err)
	}
	return nil
}
