package routes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// Routes implements cloudprovider.Routes: the cluster's routes are the route table's
// entries tagged with its cloudapi.TagCluster, the Node of each from its cloudapi.TagNode;
// a Node's instance is found through the instance lookup shared with package instances.
// Another owner's route is never changed or deleted.
type Routes struct {
	api    cloudapi.RouteAPI
	lookup instances.Lookup
	opts   Options

	mu   sync.Mutex
	ours map[string]bool // IDs the last ListRoutes confirmed as the cluster's
}

var _ cloudprovider.Routes = (*Routes)(nil)

// New returns Routes over api, finding Nodes' instances through lookup
// (instances.NewLookup, shared with package instances). It makes no cloud call.
func New(api cloudapi.RouteAPI, lookup instances.Lookup, opts Options) (*Routes, error) {
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("no route API"))
	}
	if lookup == nil {
		errs = append(errs, errors.New("an instance lookup is required (instances.NewLookup)"))
	}
	if opts.ClusterID == "" {
		errs = append(errs, errors.New("a cluster ID is required: it marks the routes this cluster owns"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("routes: %w", errors.Join(errs...))
	}
	return &Routes{api: api, lookup: lookup, opts: opts, ours: map[string]bool{}}, nil
}

// Options configure Routes.
type Options struct {
	// ClusterID is the cluster's ID, the value of cloudapi.TagCluster on its routes.
	// Required.
	ClusterID string
	// PageSize is the page size ListRoutes asks for; zero asks for the backend's default.
	PageSize int
}

func (r *Routes) clusterTags() map[string]string {
	return map[string]string{cloudapi.TagCluster: r.opts.ClusterID}
}

// ListRoutes returns the cluster's routes: one ListRoutes call for a route table that fits
// one page.
func (r *Routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	routes, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*cloudprovider.Route, 0, len(routes))
	ids := make(map[string]bool, len(routes))
	for _, rt := range routes {
		ids[rt.ID] = true
		out = append(out, &cloudprovider.Route{
			Name:            rt.ID,
			TargetNode:      types.NodeName(rt.Tags[cloudapi.TagNode]),
			DestinationCIDR: rt.DestinationCIDR,
			Blackhole:       rt.Blackhole,
		})
	}
	r.mu.Lock()
	r.ours = ids
	r.mu.Unlock()
	return out, nil
}

// list lists the routes with the cluster's tag, all pages.
func (r *Routes) list(ctx context.Context) ([]cloudapi.Route, error) {
	tags := r.clusterTags()
	var out []cloudapi.Route
	_, err := paging.All(ctx, cloudapi.OpListRoutes, r.page(tags), func(rt *cloudapi.Route) bool {
		if cloudapi.MatchTags(rt.Tags, tags) { // a backend that ignored the filter must not make us touch others' routes
			out = append(out, *rt)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's routes: %w", err)
	}
	return out, nil
}

// page fetches one page of the routes with tags (all routes when tags is nil).
func (r *Routes) page(tags map[string]string) paging.Page[cloudapi.Route] {
	return func(ctx context.Context, token string) ([]cloudapi.Route, string, error) {
		p, err := r.api.ListRoutes(ctx, cloudapi.ListOptions{Tags: tags, PageSize: r.opts.PageSize, PageToken: token})
		if err != nil {
			return nil, "", err
		}
		return p.Items, p.NextPageToken, nil
	}
}

// CreateRoute creates a route of route.DestinationCIDR to the instance of
// route.TargetNode, tagged as the cluster's and the Node's.
func (r *Routes) CreateRoute(ctx context.Context, _ string, nameHint string, route *cloudprovider.Route) error {
	logger := klog.FromContext(ctx).WithValues("node", route.TargetNode, "destination", route.DestinationCIDR)
	dst, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("route to node %s: destination %q is not a CIDR: %w", route.TargetNode, route.DestinationCIDR, err)
	}
	dst = dst.Masked()
	inst, err := r.lookup.ByName(ctx, string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("route %s to node %s: finding the node's instance: %w", dst, route.TargetNode, err)
	}
	spec := cloudapi.RouteSpec{
		Name:             routeName(nameHint, dst),
		DestinationCIDR:  dst.String(),
		TargetInstanceID: inst.ID,
		Tags:             map[string]string{cloudapi.TagCluster: r.opts.ClusterID, cloudapi.TagNode: string(route.TargetNode)},
	}
	if route.EnableNodeAddresses {
		spec.TargetAddress = nextHop(route.TargetNodeAddresses, dst.Addr().Is6())
	}
	created, err := r.api.CreateRoute(ctx, spec)
	if err == nil {
		logger.V(2).Info("Created route", "route", created.ID, "instance", inst.ID)
		return nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) {
		return fmt.Errorf("creating route %s to node %s: %w", dst, route.TargetNode, err)
	}
	// A lost answer or a route that exists: look at what the table holds for dst.
	existing, lerr := r.findDestination(ctx, dst)
	if lerr != nil {
		return fmt.Errorf("creating route %s to node %s: %w; looking for it afterwards: %w", dst, route.TargetNode, err, lerr)
	}
	switch {
	case existing == nil:
		return fmt.Errorf("creating route %s to node %s: %w", dst, route.TargetNode, err)
	case existing.TargetInstanceID == inst.ID && existing.Tags[cloudapi.TagCluster] == r.opts.ClusterID:
		logger.V(2).Info("Route exists", "route", existing.ID)
		return nil
	default:
		return fmt.Errorf("creating route %s to node %s (instance %s): %w: route %s already sends %s to instance %s (cluster tag %q, node tag %q)",
			dst, route.TargetNode, inst.ID, cloudapi.ErrConflict, existing.ID, dst, existing.TargetInstanceID, existing.Tags[cloudapi.TagCluster], existing.Tags[cloudapi.TagNode])
	}
}

// findDestination returns the route of the whole table, of any owner, for dst, or nil.
func (r *Routes) findDestination(ctx context.Context, dst netip.Prefix) (*cloudapi.Route, error) {
	return r.findFunc(ctx, func(rt cloudapi.Route) bool {
		p, err := netip.ParsePrefix(rt.DestinationCIDR)
		return err == nil && p.Masked() == dst
	})
}

// findID returns the route of the whole table, of any owner, with the ID, or nil.
func (r *Routes) findID(ctx context.Context, id string) (*cloudapi.Route, error) {
	return r.findFunc(ctx, func(rt cloudapi.Route) bool { return rt.ID == id })
}

func (r *Routes) findFunc(ctx context.Context, match func(cloudapi.Route) bool) (*cloudapi.Route, error) {
	var found *cloudapi.Route
	_, err := paging.All(ctx, cloudapi.OpListRoutes, r.page(nil), func(rt *cloudapi.Route) bool {
		if match(*rt) {
			found = rt
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	return found, nil
}

// DeleteRoute deletes a route that ListRoutes returned. A route that is gone is success; a
// route the last ListRoutes did not confirm as the cluster's is looked up first (one list)
// and never deleted when it carries another cluster's tag or none.
func (r *Routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	id := route.Name
	r.mu.Lock()
	known := r.ours[id]
	r.mu.Unlock()
	if !known {
		// Not from the last list: find it in the whole table.
		rt, err := r.findID(ctx, id)
		if err != nil {
			return fmt.Errorf("deleting route %s: %w", id, err)
		}
		if rt == nil {
			return nil // gone already
		}
		if rt.Tags[cloudapi.TagCluster] != r.opts.ClusterID {
			return fmt.Errorf("deleting route %s (%s to node %s): it is not a route of cluster %q (cluster tag %q); routes of other owners are never deleted",
				id, route.DestinationCIDR, route.TargetNode, r.opts.ClusterID, rt.Tags[cloudapi.TagCluster])
		}
	}
	if err := r.api.DeleteRoute(ctx, id); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		return fmt.Errorf("deleting route %s (%s to node %s): %w", id, route.DestinationCIDR, route.TargetNode, err)
	}
	r.mu.Lock()
	delete(r.ours, id)
	r.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Deleted route", "route", id, "destination", route.DestinationCIDR, "node", route.TargetNode)
	return nil
}

// routeName is a readable route name: the hint, else the destination.
func routeName(hint string, dst netip.Prefix) string {
	if hint != "" {
		return hint + "-" + strings.NewReplacer(".", "-", ":", "-", "/", "-").Replace(dst.String())
	}
	return dst.String()
}

// nextHop returns the first InternalIP of the wanted family, or "".
func nextHop(addrs []corev1.NodeAddress, want6 bool) string {
	for _, a := range addrs {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is6() == want6 {
			return ip.String()
		}
	}
	return ""
}
