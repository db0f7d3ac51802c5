package cloudapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// GatewayRoutes is the TaglessRouteAPI of a route table that holds at most one route per
// destination and sends it to an address, its gateway (next hop), without tags: Hetzner's
// network routes, OpenStack's router routes. It is made of an adapter's functions over T,
// its SDK's table as read, and gives every such cloud the same route IDs (the
// destination), targets (the instance that holds the gateway) and pages (by ID, the page
// token the last ID of the page before).
//
// A route whose gateway no instance holds reads as a blackhole, which the route
// controller deletes: a route list never reads one so unless a whole read of the holders
// in that list found none (Holders, completed from Members). With Members and Cache, a
// list resolves the gateways from the addresses of the network's members as last read,
// and reads only what they cannot answer: each member it does not know (Address), or,
// when a gateway has no known holder, two members claim one address, or more members are
// unknown than a whole read takes requests (HoldersPage), the holders whole. With Listed,
// a process's first list fills that cache from a whole list of the instances the adapter
// already made, instead of reading the holders again.
type GatewayRoutes[T any] struct {
	// IPv4Only is true for a table that routes IPv4 only.
	IPv4Only bool
	// Table reads the table for op on id (one call) and its routes, without holders. A
	// table that does not exist is a configuration error (ErrInvalidRequest), never
	// ErrNotFound.
	Table func(ctx context.Context, op Operation, id string) (T, []GatewayRoute, error)
	// Holders reads which instance holds each address in table's network (a list of the
	// instances): address to instance ID. With Members, a list that can miss an instance
	// (pages by number shifting under a change) is completed with a read of each member
	// it missed (Address); without, it must miss none.
	Holders func(ctx context.Context, table T) (map[string]string, error)
	// Address reads, for op, the address in table's network of the instance id (one
	// read): empty when the cloud is certain that it holds none (it does not exist, or is
	// outside the network); ErrInvalidRequest for an ID that names no instance of the
	// cloud. It is also the gateway of a route that CreateRoute makes to id.
	Address func(ctx context.Context, op Operation, table T, id string) (string, error)
	// Members, when set, returns the IDs of the instances that table's network lists as
	// attached to it (Hetzner's network's servers).
	Members func(table T) []string
	// Cache, when set with Members, remembers the address of each member as last read,
	// for the next list.
	Cache *GatewayHolders
	// Listed, when set with Members and Cache, returns the addresses in table's network,
	// by instance ID, of the instances that a whole list the adapter made for another
	// reason found (ccmkit's list of the instances, walked from its first page to its
	// last), and true; false without one. An empty Cache is filled from it, with the
	// members it gives an address, instead of a read of Holders: a member it gives none
	// stays unknown, and the list resolves as from the Cache (what that cannot answer is
	// read). It is asked only while the Cache is empty: at a process's first list that has
	// routes.
	Listed func(table T) (map[string]string, bool)
	// HoldersPage is how many instances one request of Holders reads (the API's page
	// size): a list that finds more members it does not know than len(members) /
	// HoldersPage reads the holders whole instead of each member. Zero: always whole.
	HoldersPage int
	// Add adds the route of r to table, and Delete deletes it, each waiting until the
	// cloud has done it.
	Add, Delete func(ctx context.Context, table T, r GatewayRoute) error
}

var _ TaglessRouteAPI = GatewayRoutes[struct{}]{}

// RoutesCarryNoTags reports true.
func (GatewayRoutes[T]) RoutesCarryNoTags() bool { return true }

// ListRoutes returns one page of the table's routes, ordered by ID, after opts.PageToken,
// at most opts.PageSize (every route when it is not positive), each with the instance
// that holds its gateway (a Blackhole without one): one read of the table, and of the
// holders what the type's doc says. A non-empty opts.Tags selects none, as no route
// carries a tag, and reads nothing.
func (g GatewayRoutes[T]) ListRoutes(ctx context.Context, opts ListOptions) (*RoutePage, error) {
	return listGatewayRoutes(opts, func() ([]GatewayRoute, error) {
		table, routes, err := g.Table(ctx, OpListRoutes, "")
		if err != nil {
			return nil, err
		}
		holders, err := g.holders(ctx, table, routes)
		if err != nil {
			return nil, err
		}
		for i, r := range routes {
			routes[i].Holder = holders[r.Gateway]
		}
		return routes, nil
	})
}

// holders returns the holder of each address of table's network that routes need: from
// the cache when it answers every gateway, else read whole (and cached).
func (g GatewayRoutes[T]) holders(ctx context.Context, table T, routes []GatewayRoute) (map[string]string, error) {
	switch {
	case len(routes) == 0:
		return nil, nil // no gateway to resolve
	case g.Members == nil:
		return g.Holders(ctx, table)
	}
	members := g.Members(table)
	read := func(id string) (string, error) { return g.Address(ctx, OpListRoutes, table, id) }
	if g.Cache != nil {
		if g.Listed != nil && g.Cache.empty() {
			if listed, ok := g.Listed(table); ok {
				g.Cache.seed(members, listed)
			}
		}
		held, ok, err := g.Cache.resolve(members, routes, read, g.HoldersPage)
		if err != nil || ok {
			return held, err
		}
	}
	held, err := g.Holders(ctx, table)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(held))
	for _, id := range held {
		found[id] = true
	}
	for _, id := range members { // the ones the list missed
		if found[id] {
			continue
		}
		addr, err := read(id)
		if err != nil {
			return nil, err
		}
		if addr != "" {
			held[addr] = id
		}
	}
	g.Cache.fill(members, held)
	return held, nil
}

// CreateRoute adds the route of spec.DestinationCIDR (a canonical CIDR; IPv4 with
// IPv4Only) to the address of the instance spec.TargetInstanceID in the table's network
// (Address), which spec.TargetAddress, when set, must be (ErrInvalidRequest otherwise,
// and for an instance without one), and answers it as ListRoutes would. The name and tags
// are dropped: the table has neither.
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
	gw, err := g.Address(ctx, op, table, spec.TargetInstanceID)
	switch {
	case err != nil:
		return nil, err
	case gw == "":
		return nil, NewError(ErrInvalidRequest, op, spec.DestinationCIDR, fmt.Errorf(
			"instance %q has no address in the route table's network: it does not exist, or is outside the network", spec.TargetInstanceID))
	case spec.TargetAddress != "" && spec.TargetAddress != gw:
		return nil, NewError(ErrInvalidRequest, op, spec.DestinationCIDR, fmt.Errorf(
			"target address %q is not instance %q's address %s in the route table's network", spec.TargetAddress, spec.TargetInstanceID, gw))
	}
	r := GatewayRoute{Destination: dst.String(), Gateway: gw, Holder: spec.TargetInstanceID}
	if err := g.Add(ctx, table, r); err != nil {
		return nil, err
	}
	g.Cache.note(spec.TargetInstanceID, gw)
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

// GatewayHolders is the cache of a GatewayRoutes (its Cache): the address in the
// network of each of its members as last read, by instance ID (empty: none). The zero
// value is empty and ready; it is safe for concurrent use. It holds the network's members
// only; a member that left the network and joined again with another address between two
// lists (or since the listing a GatewayRoutes' Listed filled it from) keeps the address
// read before until a list reads the holders whole.
type GatewayHolders struct {
	mu        sync.Mutex
	addresses map[string]string // nil until a whole read filled it
}

// resolve returns the holder of each address of the members as cached, after reading
// each member it does not know with read, when that answers every gateway of routes
// with one member; ok is false, and nothing read, when the cache is empty or more members
// are unknown than len(members)/perRead (perRead zero: any), and false after the reads
// when a gateway has no holder or two members claim one address: then the caller reads
// the holders whole. A nil c answers false.
func (c *GatewayHolders) resolve(members []string, routes []GatewayRoute, read func(id string) (string, error), perRead int) (held map[string]string, ok bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	c.mu.Lock()
	known := make(map[string]string, len(members))
	var unknown []string
	for _, id := range members {
		if addr, ok := c.addresses[id]; ok {
			known[id] = addr
		} else {
			unknown = append(unknown, id)
		}
	}
	cold := c.addresses == nil
	c.mu.Unlock()
	if cold || (len(unknown) > 0 && (perRead <= 0 || len(unknown) > len(members)/perRead)) {
		return nil, false, nil
	}
	for _, id := range unknown {
		if known[id], err = read(id); err != nil {
			return nil, false, err
		}
	}
	held = make(map[string]string, len(known))
	for id, addr := range known {
		if _, twice := held[addr]; twice && addr != "" {
			return nil, false, nil
		}
		if addr != "" {
			held[addr] = id
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addresses = known // the members only
	for _, r := range routes {
		if held[r.Gateway] == "" {
			return nil, false, nil
		}
	}
	return held, true, nil
}

// fill caches the address of each member from held, a whole read of the holders (none
// for a member that holds none there). A nil c does nothing.
func (c *GatewayHolders) fill(members []string, held map[string]string) {
	if c == nil {
		return
	}
	of := make(map[string]string, len(held))
	for addr, id := range held {
		of[id] = addr
	}
	addresses := make(map[string]string, len(members))
	for _, id := range members {
		addresses[id] = of[id]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addresses = addresses
}

// empty reports whether c was never filled. A nil c is empty.
func (c *GatewayHolders) empty() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addresses == nil
}

// seed fills c, when it is empty, with the address of each member that listed (instance
// ID to address, from a whole list of the instances made for another reason) gives one;
// a member it gives none stays unknown, to be read. A nil c does nothing.
func (c *GatewayHolders) seed(members []string, listed map[string]string) {
	if c == nil {
		return
	}
	addresses := make(map[string]string, len(members))
	for _, id := range members {
		if addr := listed[id]; addr != "" {
			addresses[id] = addr
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addresses == nil {
		c.addresses = addresses
	}
}

// note caches addr as the address of the member id, once the cache was filled. A nil c
// does nothing.
func (c *GatewayHolders) note(id, addr string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addresses != nil {
		c.addresses[id] = addr
	}
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
