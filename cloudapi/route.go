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

// Clone returns a deep copy of the route.
func (r Route) Clone() Route {
	r.Tags = maps.Clone(r.Tags)
	return r
}
