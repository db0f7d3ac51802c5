package cloudapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// GatewayRoutes is the TaglessRouteAPI of a route table that holds at most one route per
// destination and sends it to an address, its gateway (next hop), without tags: Hetzner's
// network routes, OpenStack's router routes. It is made of an adapter's functions over T,
// its SDK's table as read, and gives every such cloud the same route IDs (the
// destination), targets (the instance that holds the gateway) and pages (by ID, the page
// token the last ID of the page before).
type GatewayRoutes[T any] struct {
	// IPv4Only is true for a table that routes IPv4 only.
	IPv4Only bool
	// Table reads the table for op on id (one call) and its routes, without holders. A
	// table that does not exist is a configuration error (ErrInvalidRequest), never
	// ErrNotFound.
	Table func(ctx context.Context, op Operation, id string) (T, []GatewayRoute, error)
	// Holders reads which instance holds each address in table's network (one read of
	// the instances): address to instance ID. It must miss no instance that holds one:
	// a route whose gateway has no holder reads as a blackhole, which the route
	// controller deletes, so a list that can miss an item (pages by number shifting
	// under a change) must be completed, as examples/hcloud's is from the network's
	// members.
	Holders func(ctx context.Context, table T) (map[string]string, error)
	// Gateway returns the address in table's network of the instance instanceID, the
	// gateway of a route to it; ErrInvalidRequest for op when it names no instance or one
	// outside the network.
	Gateway func(ctx context.Context, op Operation, table T, instanceID string) (string, error)
	// Add adds the route of r to table, and Delete deletes it, each waiting until the
	// cloud has done it.
	Add, Delete func(ctx context.Context, table T, r GatewayRoute) error
}

var _ TaglessRouteAPI = GatewayRoutes[struct{}]{}

// RoutesCarryNoTags reports true.
func (GatewayRoutes[T]) RoutesCarryNoTags() bool { return true }

// ListRoutes returns one page of the table's routes, ordered by ID, after opts.PageToken,
// at most opts.PageSize (every route when it is not positive), each with the instance
// that holds its gateway (a Blackhole without one): one read of the table, one of the
// holders. A non-empty opts.Tags selects none, as no route carries a tag, and reads
// nothing.
func (g GatewayRoutes[T]) ListRoutes(ctx context.Context, opts ListOptions) (*RoutePage, error) {
	return listGatewayRoutes(opts, func() ([]GatewayRoute, error) {
		table, routes, err := g.Table(ctx, OpListRoutes, "")
		if err != nil {
			return nil, err
		}
		holders, err := g.Holders(ctx, table)
		if err != nil {
			return nil, err
		}
		for i, r := range routes {
			routes[i].Holder = holders[r.Gateway]
		}
		return routes, nil
	})
}

// CreateRoute adds the route of spec.DestinationCIDR (a canonical CIDR; IPv4 with
// IPv4Only) to the address of the instance spec.TargetInstanceID in the table's network,
// which spec.TargetAddress, when set, must be (ErrInvalidRequest otherwise), and answers
// it as ListRoutes would. The name and tags are dropped: the table has neither.
func (g GatewayRoutes[T]) CreateRoute(ctx context.Context, spec RouteSpec) (*Route, error) {
	const op = OpCreateRoute
	dst, err := gatewayRouteDestination(op, spec, g.IPv4Only)
	if err != nil {
		return nil, err
	}
	table, _, err := g.Table(ctx, op, spec.DestinationCIDR)
	if err != nil {
		return nil, err
	}
	gw, err := g.Gateway(ctx, op, table, spec.TargetInstanceID)
	if err != nil {
		return nil, err
	}
	if spec.TargetAddress != "" && spec.TargetAddress != gw {
		return nil, NewError(ErrInvalidRequest, op, spec.DestinationCIDR, fmt.Errorf(
			"target address %q is not instance %q's address %s in the route table's network", spec.TargetAddress, spec.TargetInstanceID, gw))
	}
	r := GatewayRoute{Destination: dst.String(), Gateway: gw, Holder: spec.TargetInstanceID}
	if err := g.Add(ctx, table, r); err != nil {
		return nil, err
	}
	out := r.route()
	return &out, nil
}

// DeleteRoute deletes the table's route whose destination is id: ErrNotFound when the
// table, read first, has none.
func (g GatewayRoutes[T]) DeleteRoute(ctx context.Context, id string) error {
	table, routes, err := g.Table(ctx, OpDeleteRoute, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(routes, func(r GatewayRoute) bool { return r.Destination == id })
	if i < 0 {
		return NewError(ErrNotFound, OpDeleteRoute, id, fmt.Errorf("the route table has no route to %q", id))
	}
	return g.Delete(ctx, table, routes[i])
}

// GatewayRoute is a route of a GatewayRoutes table.
type GatewayRoute struct {
	// Destination is the route's destination CIDR, as the cloud reports it.
	Destination string
	// Gateway is the address the route sends to.
	Gateway string
	// Holder is the ID of the instance that holds Gateway, empty when none does.
	Holder string
}

// route is r as GatewayRoutes answers it: its ID and DestinationCIDR are the
// destination, TargetAddress the gateway, TargetInstanceID the holder; without a holder,
// a Blackhole.
func (r GatewayRoute) route() Route {
	return Route{ID: r.Destination, Blackhole: r.Holder == "",
		RouteSpec: RouteSpec{DestinationCIDR: r.Destination, TargetInstanceID: r.Holder, TargetAddress: r.Gateway}}
}

// listGatewayRoutes is GatewayRoutes.ListRoutes of the table that read reads whole. An
// error of read is returned as it is.
func listGatewayRoutes(opts ListOptions, read func() ([]GatewayRoute, error)) (*RoutePage, error) {
	if len(opts.Tags) > 0 {
		return &RoutePage{}, nil
	}
	table, err := read()
	if err != nil {
		return nil, err
	}
	var out []Route
	for _, r := range table {
		if r.Destination > opts.PageToken {
			out = append(out, r.route())
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.ID, b.ID) })
	if opts.PageSize > 0 && len(out) > opts.PageSize {
		return &RoutePage{Items: out[:opts.PageSize], NextPageToken: out[opts.PageSize-1].ID}, nil
	}
	return &RoutePage{Items: out}, nil
}

// gatewayRouteDestination returns the destination of a create on a gateway route table:
// spec.DestinationCIDR, which must be a canonical CIDR (its masked form, as
// netip.Prefix.String writes it), of IPv4 when ipv4Only (a table that routes IPv4 only);
// ErrInvalidRequest for op otherwise.
func gatewayRouteDestination(op Operation, spec RouteSpec, ipv4Only bool) (netip.Prefix, error) {
	dst, err := netip.ParsePrefix(spec.DestinationCIDR)
	if err != nil || dst.Masked() != dst || (ipv4Only && !dst.Addr().Is4()) || dst.String() != spec.DestinationCIDR {
		want := "a canonical CIDR"
		if ipv4Only {
			want = "a canonical IPv4 CIDR (the route table routes IPv4 only)"
		}
		return netip.Prefix{}, NewError(ErrInvalidRequest, op, spec.DestinationCIDR, fmt.Errorf("destination %q is not %s", spec.DestinationCIDR, want))
	}
	return dst, nil
}
