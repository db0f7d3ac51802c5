package adapter

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// routes is the cloudapi.TaglessRouteAPI of the configured network's routes: a Hetzner
// route is a destination and a gateway, the private IP of a server in the network, without
// labels (a cloudapi.GatewayRoutes: a route's ID is its destination, which the network
// holds one route for; its target the server that holds the gateway, found from the
// private IPs of the network's servers as last read, read again when they cannot answer:
// a server new to the network by ID, every server in one list, see holders; the first
// from the servers ListInstances last listed whole, serverWalk). Hetzner's networks route
// IPv4.
func (c *Client) routes() cloudapi.GatewayRoutes[*hcloud.Network] {
	return cloudapi.GatewayRoutes[*hcloud.Network]{IPv4Only: true, Table: c.routeTable, Holders: c.holders, Address: c.address,
		Members: members, Cache: c.ips, Listed: c.walk.listed, HoldersPage: maxPerPage, Add: c.addRoute, Delete: c.deleteRoute}
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

// members are the IDs of network n's servers.
func members(n *hcloud.Network) (ids []string) {
	for _, srv := range n.Servers {
		ids = append(ids, strconv.FormatInt(srv.ID, 10))
	}
	return ids
}

// holders are the servers that hold each private IP in network n, in one list of the
// servers; a server of n that the list missed (pages by number shift when a server is
// created or deleted between two page reads) GatewayRoutes reads by ID.
func (c *Client) holders(ctx context.Context, n *hcloud.Network) (map[string]string, error) {
	servers, err := c.api.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{PerPage: maxPerPage}})
	if err != nil {
		return nil, errorOf(cloudapi.OpListRoutes, "", nil, err)
	}
	holder := map[string]string{}
	for _, srv := range servers {
		if ip := privateIP(srv, n); ip != "" {
			holder[ip] = strconv.FormatInt(srv.ID, 10)
		}
	}
	return holder, nil
}

// address is the private IP in network n of the server id: empty for one that does not
// exist or is outside n.
func (c *Client) address(ctx context.Context, op cloudapi.Operation, n *hcloud.Network, id string) (string, error) {
	if srv, err := getByID(ctx, op, id, "server", cloudapi.ErrInvalidRequest, cloudapi.ErrNotFound, c.api.Server.GetByID); err == nil {
		return privateIP(srv, n), nil
	} else if !errors.Is(err, cloudapi.ErrNotFound) {
		return "", err
	}
	return "", nil // gone: it holds none
}

// privateIP is srv's private IP in network n, empty when it is outside n.
func privateIP(srv *hcloud.Server, n *hcloud.Network) string {
	i := slices.IndexFunc(srv.PrivateNet, func(pn hcloud.ServerPrivateNet) bool {
		return pn.Network != nil && pn.Network.ID == n.ID && pn.IP != nil
	})
	if i < 0 {
		return ""
	}
	return srv.PrivateNet[i].IP.String()
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
