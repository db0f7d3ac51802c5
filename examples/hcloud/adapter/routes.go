package adapter

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// routes is cloudapi.TaglessRouteAPI over the routes of one network: a Hetzner route is a
// destination and a gateway, the private IP of a server in the network, without labels.
// A route's ID is its destination, which the network holds one route for; its target is
// the server that holds the gateway, found in one list of the servers per list of routes.
type routes struct{ c *Client }

var _ cloudapi.TaglessRouteAPI = routes{}

// RoutesCarryNoTags reports true: Hetzner's routes have no labels.
func (routes) RoutesCarryNoTags() bool { return true }

// ListRoutes returns one page of the network's routes, ordered by ID (the destination); a
// page token is the last ID of the page before. A non-empty opts.Tags selects none, as no
// route carries a tag. A route whose gateway no server of the network holds is a blackhole.
func (r routes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return cloudapi.ListGatewayRoutes(opts, func() ([]cloudapi.GatewayRoute, error) {
		n, err := r.c.network(ctx, cloudapi.OpListRoutes, "")
		if err != nil {
			return nil, err
		}
		servers, err := r.c.api.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{PerPage: maxPerPage}})
		if err != nil {
			return nil, errorOf(cloudapi.OpListRoutes, "", nil, err)
		}
		holder := map[string]string{} // private IP in the network to server ID
		for _, srv := range servers {
			for _, pn := range srv.PrivateNet {
				if pn.Network != nil && pn.Network.ID == n.ID && pn.IP != nil {
					holder[pn.IP.String()] = strconv.FormatInt(srv.ID, 10)
				}
			}
		}
		table := make([]cloudapi.GatewayRoute, 0, len(n.Routes))
		for _, rt := range n.Routes {
			if rt.Destination != nil {
				table = append(table, cloudapi.GatewayRoute{Destination: rt.Destination.String(), Gateway: rt.Gateway.String(), Holder: holder[rt.Gateway.String()]})
			}
		}
		return table, nil
	})
}

// CreateRoute adds a route of spec.DestinationCIDR (IPv4, as Hetzner's networks are) to
// the private IP of server spec.TargetInstanceID in the network, and waits for the action.
// The name and tags are dropped: Hetzner's routes have neither.
func (r routes) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	const op = cloudapi.OpCreateRoute
	invalid := func(format string, args ...any) error {
		return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, spec.DestinationCIDR, fmt.Errorf(format, args...))
	}
	dst, err := cloudapi.GatewayRouteDestination(op, spec, true) // Hetzner networks route IPv4
	if err != nil {
		return nil, err
	}
	sid, ok := cloudapi.NumericID(spec.TargetInstanceID)
	if !ok {
		return nil, invalid("target %q is not a Hetzner Cloud server ID", spec.TargetInstanceID)
	}
	n, err := r.c.network(ctx, op, spec.DestinationCIDR)
	if err != nil {
		return nil, err
	}
	srv, resp, err := r.c.api.Server.GetByID(ctx, sid)
	switch {
	case err != nil:
		return nil, errorOf(op, spec.DestinationCIDR, resp, err)
	case srv == nil:
		return nil, invalid("target server %d does not exist", sid)
	}
	i := slices.IndexFunc(srv.PrivateNet, func(pn hcloud.ServerPrivateNet) bool { return pn.Network != nil && pn.Network.ID == n.ID })
	if i < 0 {
		return nil, invalid("target server %d is not attached to network %q", sid, r.c.cfg.Network)
	}
	gw := srv.PrivateNet[i].IP
	if spec.TargetAddress != "" && spec.TargetAddress != gw.String() {
		return nil, invalid("target address %q is not server %d's IP %s in network %q", spec.TargetAddress, sid, gw, r.c.cfg.Network)
	}
	action, resp, err := r.c.api.Network.AddRoute(ctx, n, hcloud.NetworkAddRouteOpts{Route: hcloud.NetworkRoute{
		Destination: &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), 32)}, Gateway: gw}})
	if err := r.c.wait(ctx, op, spec.DestinationCIDR, action, resp, err); err != nil {
		return nil, err
	}
	rt := cloudapi.GatewayRoute{Destination: dst.String(), Gateway: gw.String(), Holder: spec.TargetInstanceID}.Route()
	return &rt, nil
}

// DeleteRoute deletes the network's route whose destination is id, and waits for the
// action. It is ErrNotFound when the network, read first, has no such route.
func (r routes) DeleteRoute(ctx context.Context, id string) error {
	n, err := r.c.network(ctx, cloudapi.OpDeleteRoute, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(n.Routes, func(rt hcloud.NetworkRoute) bool { return rt.Destination != nil && rt.Destination.String() == id })
	if i < 0 {
		return cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteRoute, id, fmt.Errorf("network %q has no route to %q", r.c.cfg.Network, id))
	}
	action, resp, err := r.c.api.Network.DeleteRoute(ctx, n, hcloud.NetworkDeleteRouteOpts{Route: n.Routes[i]})
	return r.c.wait(ctx, cloudapi.OpDeleteRoute, id, action, resp, err)
}
