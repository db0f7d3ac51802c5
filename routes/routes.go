package routes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// Routes implements cloudprovider.Routes: the cluster's routes are the route table's
// entries tagged with its cloudapi.TagCluster, the Node of each from its cloudapi.TagNode,
// or, over a route API whose routes carry no tags (cloudapi.RoutesCarryNoTags), the
// entries into the cluster's pod CIDRs whose target is the instance of one of its Nodes
// (see the package documentation's "Ownership"); a Node's instance is found through the
// instance lookup shared with package instances. Another owner's route is never changed
// or deleted.
//
// ListRoutes answers from a snapshot of the cluster's routes (see Options.MaxAge) that
// ccmkit's own confirmed writes keep current, so that the route controller's reconcile
// every 10 seconds costs no cloud call while nothing changes.
type Routes struct {
	api    cloudapi.RouteAPI
	lookup instances.Lookup
	opts   Options
	owner  *owner
	table  *table
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
	if opts.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("MaxAge %s is negative", opts.MaxAge))
	}
	if opts.PageSize < 0 {
		errs = append(errs, fmt.Errorf("PageSize %d is negative", opts.PageSize))
	}
	tagless := api != nil && cloudapi.RoutesCarryNoTags(api)
	if tagless {
		if len(opts.ClusterCIDRs) == 0 {
			errs = append(errs, errors.New("ClusterCIDRs are required: the cloud's routes carry no tags, so the cluster's are those into its pod CIDRs"))
		}
		if opts.NodeNames == nil {
			errs = append(errs, errors.New("NodeNames is required: the cloud's routes carry no tags, so the cluster's are those to its Nodes"))
		}
	}
	for _, c := range opts.ClusterCIDRs {
		if !c.IsValid() || c.Masked() != c || c.Bits() == 0 {
			errs = append(errs, fmt.Errorf("ClusterCIDRs: %s is not a canonical CIDR narrower than the whole address family", c))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("routes: %w", errors.Join(errs...))
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	r := &Routes{api: api, lookup: lookup, opts: opts, owner: &owner{
		clusterID: opts.ClusterID, tagless: tagless, cidrs: opts.ClusterCIDRs, lookup: lookup, nodeNames: opts.NodeNames}}
	r.table = newTable(api, r.owner, opts.PageSize, opts.MaxAge, opts.Clock)
	return r, nil
}

// Options configure Routes.
type Options struct {
	// ClusterID is the cluster's ID, the value of cloudapi.TagCluster on its routes.
	// Required.
	ClusterID string
	// ClusterCIDRs are the cluster's pod CIDRs, the route controller's --cluster-cidr
	// (which the cloud provider is not told). Over a route API whose routes carry no tags
	// (cloudapi.RoutesCarryNoTags) they are required, and only a route into one of them
	// can be the cluster's; else they are not used. Each canonical, none of length 0.
	ClusterCIDRs []netip.Prefix
	// NodeNames returns the names of the cluster's Nodes. Over a route API whose routes
	// carry no tags it is required, and only a route to the instance of one of them can
	// become the cluster's; else it is not called. It is called at most once per list of
	// the route table, and only when a route into ClusterCIDRs is not known already; an
	// error fails that list.
	NodeNames func(ctx context.Context) ([]string, error)
	// PageSize is the page size asked for when listing the cluster's routes; zero asks for
	// the backend's default.
	PageSize int
	// MaxAge is how old the snapshot of the cluster's routes may get before ListRoutes
	// lists them again. Zero means DefaultMaxAge. ccmkit's own writes keep the snapshot
	// current, and a failed write makes the next ListRoutes list, so a longer MaxAge never
	// makes the route controller create or delete a route twice; but a route deleted or
	// changed behind ccmkit's back, or one that became a blackhole, is seen, and repaired,
	// up to MaxAge (plus a reconcile period) later.
	MaxAge time.Duration
	// Clock is the clock the snapshot ages by. Nil means the real clock,
	// clock.RealClock{}; simulations and tests pass a fake one
	// (k8s.io/utils/clock/testing).
	Clock clock.PassiveClock
}

// ListRoutes returns the cluster's routes, sorted by ID, from the snapshot of the
// cluster's routes: no cloud call while the snapshot is trusted and no older than
// Options.MaxAge, else one list of the cluster's routes (one call for a route table that
// fits one page), shared by concurrent callers. A failed list is an error, never an empty
// table; after one, the next list waits for a backoff (internal/sharedlist's), and
// ListRoutes fails at once until then.
func (r *Routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	routes, err := r.table.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.Route, len(routes))
	ptrs := make([]*cloudprovider.Route, len(routes))
	for i, rt := range routes {
		out[i] = cloudprovider.Route{
			Name:            rt.id,
			TargetNode:      types.NodeName(rt.node),
			DestinationCIDR: rt.destination,
			Blackhole:       rt.blackhole,
		}
		ptrs[i] = &out[i]
	}
	return ptrs, nil
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
	if r.owner.tagless && !r.owner.inCIDRs(dst.String()) {
		return fmt.Errorf("route %s to node %s: the destination lies outside the cluster's pod CIDRs %v, so the route would not be known as the cluster's (the cloud's routes carry no tags): the cloud config's routes.clusterCIDRs must hold the route controller's --cluster-cidr",
			dst, route.TargetNode, r.owner.cidrs)
	}
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
		r.table.created(created, string(route.TargetNode))
		logger.V(2).Info("Created route", "route", routeID(created), "instance", inst.ID)
		return nil
	}
	// From here on the create failed and may have been applied all the same: the
	// snapshot of the cluster's routes is distrusted unless a fresh read finds the route.
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) {
		r.table.distrust()
		return fmt.Errorf("creating route %s to node %s: %w", dst, route.TargetNode, err)
	}
	// A lost answer or a route that exists: look at what the table holds for dst.
	existing, lerr := r.findDestination(ctx, dst)
	if lerr != nil {
		r.table.distrust()
		return fmt.Errorf("creating route %s to node %s: %w; looking for it afterwards: %w", dst, route.TargetNode, err, lerr)
	}
	switch {
	case existing == nil:
		r.table.distrust()
		return fmt.Errorf("creating route %s to node %s: %w", dst, route.TargetNode, err)
	case existing.TargetInstanceID == inst.ID && r.owner.createdByUs(existing):
		r.table.created(existing, string(route.TargetNode))
		logger.V(2).Info("Route exists", "route", existing.ID)
		return nil
	default:
		r.table.distrust()
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
	_, err := paging.Routes(ctx, r.api, nil, r.opts.PageSize, func(rt *cloudapi.Route) bool {
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
// route the snapshot of the cluster's routes does not hold is looked up first (one list of
// the whole table) and never deleted when it carries another cluster's tag or none. Where
// routes carry no tags every route is looked up first, as its ID (its destination, say)
// may name a route made since by someone else, and deleted only when the ownership rule
// finds it the cluster's, or it is still the route the snapshot held.
func (r *Routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	id := route.Name
	held, ok := r.table.held(id)
	if !ok || r.owner.tagless {
		// Not the cluster's as far as the snapshot knows, or without tags: read it.
		rt, err := r.findID(ctx, id)
		if err != nil {
			return fmt.Errorf("deleting route %s: %w", id, err)
		}
		if rt == nil {
			r.table.deleted(id)
			return nil // gone already
		}
		known := map[string]entry{}
		if ok {
			known[id] = held
		}
		why, err := r.owner.refusal(ctx, rt, known)
		if err != nil {
			return fmt.Errorf("deleting route %s: %w", id, err)
		}
		if why != "" {
			return fmt.Errorf("deleting route %s (%s to node %s): %s; routes of other owners are never deleted",
				id, route.DestinationCIDR, route.TargetNode, why)
		}
	}
	if err := r.api.DeleteRoute(ctx, id); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		r.table.distrust() // it may have been deleted all the same
		return fmt.Errorf("deleting route %s (%s to node %s): %w", id, route.DestinationCIDR, route.TargetNode, err)
	}
	r.table.deleted(id)
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

// routeID returns the ID of a route the cloud answered, or "" for none.
func routeID(rt *cloudapi.Route) string {
	if rt == nil {
		return ""
	}
	return rt.ID
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
