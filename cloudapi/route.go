package cloudapi

import "maps"

// RouteSpec is what a caller asks for when it creates a route.
type RouteSpec struct {
	// Name is a human-readable name hint. A cloud may ignore it or make it unique.
	Name string
	// DestinationCIDR is the IPv4 or IPv6 prefix that the route sends to its target, in
	// canonical form (for example "10.244.3.0/24" or "fd00:10:244:3::/64").
	DestinationCIDR string
	// TargetInstanceID is the ID of the instance that receives the traffic.
	TargetInstanceID string
	// TargetAddress is an optional next-hop IP address of the target instance, for clouds
	// that route to an address rather than to an instance. Empty means the instance's
	// primary address.
	TargetAddress string
	// Tags are key/value labels stored with the route; ccmkit records ownership in them.
	Tags map[string]string
}

// Route is a route as the cloud stored it.
type Route struct {
	// ID is the cloud's unique identifier of the route.
	ID string
	// RouteSpec is what the route does.
	RouteSpec
	// Blackhole is true when the cloud reports that the route's target no longer exists,
	// so traffic to DestinationCIDR is dropped.
	Blackhole bool
}

// TaglessRouteAPI is a RouteAPI over a cloud whose routes carry no tags, such as
// Hetzner's network routes (a destination and a gateway, nothing else). A RouteAPI
// declares it by implementing TaglessRouteAPI with RoutesCarryNoTags answering true; a
// RouteAPI that wraps another answers for the one it wraps. ccmkit then cannot record
// ownership in TagCluster and TagNode and decides it itself (package routes: a route is
// the cluster's only when its destination lies in the cluster's pod CIDRs and its target
// is the instance of one of the cluster's Nodes).
//
// Such a RouteAPI keeps RouteAPI's contract, with these differences:
//
//   - CreateRoute drops RouteSpec.Tags; every route it returns or lists has no tags.
//   - Route.ID is synthesized by the adapter from what identifies the route in the
//     cloud, for example its destination in a route table keyed by destination: the
//     same route has the same ID in every answer, of every process, and DeleteRoute
//     takes it; DeleteRoute of an ID that no route has is ErrNotFound only after the
//     adapter read the route table.
//   - ListRoutes returns every route of the table, whoever made it (by hand, another
//     cluster): ccmkit filters. A non-empty ListOptions.Tags selects none, as no route
//     carries a tag; ccmkit lists without Tags.
//   - TargetInstanceID is read back from the cloud: the instance that holds the route's
//     next hop (TargetAddress, when the cloud routes to an address); empty, with
//     Blackhole, when no instance holds it any more. The adapter finds the instances of
//     a list's routes with one read of the instances, not one per route.
type TaglessRouteAPI interface {
	RouteAPI
	// RoutesCarryNoTags reports whether the cloud's routes carry no tags.
	RoutesCarryNoTags() bool
}

// RoutesCarryNoTags reports whether api implements TaglessRouteAPI and declares that its
// routes carry no tags.
func RoutesCarryNoTags(api RouteAPI) bool {
	t, ok := api.(TaglessRouteAPI)
	return ok && t.RoutesCarryNoTags()
}

// Clone returns a deep copy of the route.
func (r Route) Clone() Route {
	r.Tags = maps.Clone(r.Tags)
	return r
}
