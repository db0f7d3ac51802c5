package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// routes is the cloudapi.TaglessRouteAPI of the configured network's routes: a Hetzner
// route is a destination and a gateway, the private IP of a server in the network, without
// labels (a cloudapi.GatewayRoutes: a route's ID is its destination, which the network
// holds one route for; its target the server that holds the gateway, found in one list
// of the servers per list of routes, see holders). Hetzner's networks route IPv4.
func (c *Client) routes() cloudapi.GatewayRoutes[*hcloud.Network] {
	return cloudapi.GatewayRoutes[*hcloud.Network]{IPv4Only: true, Table: c.routeTable, Holders: c.holders, Gateway: c.gateway,
		Add: c.addRoute, Delete: c.deleteRoute}
}

// routeTable reads the network and its routes.
func (c *Client) routeTable(ctx context.Context, op cloudapi.Operation, id string) (*hcloud.Network, []cloudapi.GatewayRoute, error) {
	n, err := c.network(ctx, op, id)
	if err != nil {
		return nil, nil, err
	}
	table := make([]cloudapi.GatewayRoute, 0, len(n.Routes))
	for _, rt := range n.Routes {
		if rt.Destination != nil {
			table = append(table, cloudapi.GatewayRoute{Destination: rt.Destination.String(), Gateway: rt.Gateway.String()})
		}
	}
	return n, table, nil
}

// holders are the servers that hold each private IP in network n: one list of the
// servers, and a GET of each of n's servers that the list missed (pages by number shift
// when a server is created or deleted between two page reads, and a gateway without its
// holder would read as a blackhole, which the route controller deletes); one deleted
// since holds none.
func (c *Client) holders(ctx context.Context, n *hcloud.Network) (map[string]string, error) {
	servers, err := c.api.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{PerPage: maxPerPage}})
	if err != nil {
		return nil, errorOf(cloudapi.OpListRoutes, "", nil, err)
	}
	listed := map[int64]bool{}
	for _, srv := range servers {
		listed[srv.ID] = true
	}
	for _, m := range n.Servers {
		if listed[m.ID] {
			continue
		}
		if srv, err := getByID(ctx, cloudapi.OpListRoutes, strconv.FormatInt(m.ID, 10), "server", cloudapi.ErrTransient, cloudapi.ErrNotFound, c.api.Server.GetByID); err == nil {
			servers = append(servers, srv)
		} else if !errors.Is(err, cloudapi.ErrNotFound) {
			return nil, err
		}
	}
	holder := map[string]string{}
	for _, srv := range servers {
		for _, pn := range srv.PrivateNet {
			if pn.Network != nil && pn.Network.ID == n.ID && pn.IP != nil {
				holder[pn.IP.String()] = strconv.FormatInt(srv.ID, 10)
			}
		}
	}
	return holder, nil
}

// gateway is the private IP in network n of the server target; a target that names no
// server is ErrInvalidRequest.
func (c *Client) gateway(ctx context.Context, op cloudapi.Operation, n *hcloud.Network, target string) (string, error) {
	srv, err := getByID(ctx, op, target, "server", cloudapi.ErrInvalidRequest, cloudapi.ErrInvalidRequest, c.api.Server.GetByID)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(srv.PrivateNet, func(pn hcloud.ServerPrivateNet) bool { return pn.Network != nil && pn.Network.ID == n.ID })
	if i < 0 {
		return "", cloudapi.NewError(cloudapi.ErrInvalidRequest, op, target, fmt.Errorf("server %s is not attached to network %q", target, c.cfg.Network))
	}
	return srv.PrivateNet[i].IP.String(), nil
}

// addRoute and deleteRoute add and delete the route r of network n, each waiting for its
// action.
func (c *Client) addRoute(ctx context.Context, n *hcloud.Network, r cloudapi.GatewayRoute) error {
	action, resp, err := c.api.Network.AddRoute(ctx, n, hcloud.NetworkAddRouteOpts{Route: networkRoute(r)})
	return c.wait(ctx, cloudapi.OpCreateRoute, r.Destination, action, resp, err)
}

func (c *Client) deleteRoute(ctx context.Context, n *hcloud.Network, r cloudapi.GatewayRoute) error {
	action, resp, err := c.api.Network.DeleteRoute(ctx, n, hcloud.NetworkDeleteRouteOpts{Route: networkRoute(r)})
	return c.wait(ctx, cloudapi.OpDeleteRoute, r.Destination, action, resp, err)
}

// networkRoute is the SDK's form of a route the table read or GatewayRoutes checked.
func networkRoute(r cloudapi.GatewayRoute) hcloud.NetworkRoute {
	_, dst, _ := net.ParseCIDR(r.Destination)
	return hcloud.NetworkRoute{Destination: dst, Gateway: net.ParseIP(r.Gateway)}
}
