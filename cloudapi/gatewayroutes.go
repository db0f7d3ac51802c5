package cloudapi

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// GatewayRoute is a route of a table that holds at most one route per destination and
// sends it to an address, its gateway (next hop), without tags: Hetzner's network routes,
// OpenStack's router routes. A TaglessRouteAPI over such a table answers with Route,
// lists with ListGatewayRoutes and checks a create's destination with
// GatewayRouteDestination, so that every such cloud has the same route IDs and targets.
type GatewayRoute struct {
	// Destination is the route's destination CIDR, as the cloud reports it.
	Destination string
	// Gateway is the address the route sends to.
	Gateway string
	// Holder is the ID of the instance that holds Gateway, empty when none does.
	Holder string
}

// Route is r as a TaglessRouteAPI answers it: its ID and DestinationCIDR are the
// destination, TargetAddress the gateway, TargetInstanceID the holder; without a holder,
// a Blackhole.
func (r GatewayRoute) Route() Route {
	return Route{ID: r.Destination, Blackhole: r.Holder == "",
		RouteSpec: RouteSpec{DestinationCIDR: r.Destination, TargetInstanceID: r.Holder, TargetAddress: r.Gateway}}
}

// ListGatewayRoutes answers ListRoutes of a TaglessRouteAPI over a gateway route table
// that read reads whole (one read of the table, one of the instances that hold its
// gateways): the routes ordered by ID, after opts.PageToken (the last ID of the page
// before), at most opts.PageSize (every route when it is not positive). A non-empty
// opts.Tags selects none, as no route carries a tag, and reads nothing. An error of read
// is returned as it is.
func ListGatewayRoutes(opts ListOptions, read func() ([]GatewayRoute, error)) (*RoutePage, error) {
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
			out = append(out, r.Route())
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.ID, b.ID) })
	if opts.PageSize > 0 && len(out) > opts.PageSize {
		return &RoutePage{Items: out[:opts.PageSize], NextPageToken: out[opts.PageSize-1].ID}, nil
	}
	return &RoutePage{Items: out}, nil
}

// GatewayRouteDestination returns the destination of a create on a gateway route table:
// spec.DestinationCIDR, which must be a canonical CIDR (its masked form, as
// netip.Prefix.String writes it), of IPv4 when ipv4Only (a table that routes IPv4 only);
// ErrInvalidRequest for op otherwise.
func GatewayRouteDestination(op Operation, spec RouteSpec, ipv4Only bool) (netip.Prefix, error) {
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
