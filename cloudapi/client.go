package cloudapi

import "context"

// Client is the whole cloud API that ccmkit needs. A cloud's adapter implements it.
//
// Instances are required: every Kubernetes cluster has nodes, and node initialization and
// lifecycle depend on them. Load balancers and routes are optional capabilities: a cloud
// without them returns (nil, false) and ccmkit disables the matching parts of
// cloudprovider.Interface instead of failing at run time.
//
// Implementations must be safe for concurrent use by many goroutines. Methods of the
// returned interfaces may be called concurrently, also for the same resource.
type Client interface {
	// Instances returns the instance API. It never returns nil.
	Instances() InstanceAPI
	// LoadBalancers returns the load balancer API and true, or (nil, false) when the cloud
	// has no load balancers.
	LoadBalancers() (LoadBalancerAPI, bool)
	// Routes returns the route API and true, or (nil, false) when the cloud has no
	// programmable routes for pod networks.
	Routes() (RouteAPI, bool)
}

// InstanceAPI reads the cloud's virtual machines (instances). ccmkit never creates or
// changes instances.
type InstanceAPI interface {
	// GetInstance returns the instance with the given cloud ID.
	//
	// It returns an error matching ErrNotFound only when the cloud is certain that no such
	// instance exists (anymore). A terminated instance that the cloud still reports is
	// returned with State InstanceTerminated, not as not found. Any other failure
	// (timeouts, throttling, server errors) must not match ErrNotFound: ccmkit deletes the
	// Node object of an instance that is not found.
	GetInstance(ctx context.Context, id string) (*Instance, error)

	// ListInstances returns one page of the instances that carry every tag in opts.Tags.
	// Pages are ordered by ID, in one order of the cloud's IDs that never changes
	// (byte-wise, or by number for numbered IDs: CompareNumericIDs; the contract suite
	// checks the adapter's with cloudapitest.WithIDOrder); a page token returned in InstancePage.NextPageToken
	// continues after the last item of the page, so paging through a changing set never
	// returns an instance twice. An empty NextPageToken means the last page.
	ListInstances(ctx context.Context, opts ListOptions) (*InstancePage, error)
}

// LoadBalancerAPI manages the cloud's network load balancers.
//
// Both kinds of cloud APIs fit it: an API that replaces a whole load balancer in one call
// implements UpdateLoadBalancer with LoadBalancerUpdate.Spec; an API with separate calls
// for listeners, targets and settings implements it from LoadBalancerUpdate.Changes, making
// only the calls that the changes need.
//
// The spec and the update a write is given are the caller's, read only: a backend never
// writes into their slices and maps (ccmkit hands every Service of a node set the same
// targets), and copies what it keeps (cloudapitest checks both).
type LoadBalancerAPI interface {
	// GetLoadBalancer returns the load balancer with the given ID, or an error matching
	// ErrNotFound when the cloud is certain that it does not exist.
	GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error)

	// ListLoadBalancers returns one page of the load balancers that carry every tag in
	// opts.Tags, ordered by ID, with the same paging guarantees as ListInstances. It is how
	// ccmkit finds the load balancer of a Service: by its owner tags.
	ListLoadBalancers(ctx context.Context, opts ListOptions) (*LoadBalancerPage, error)

	// CreateLoadBalancer creates a load balancer from spec and returns it as the cloud
	// stored it, usually in Status LoadBalancerProvisioning.
	//
	// It returns an error matching ErrConflict when the cloud refuses because a load
	// balancer with the same name already exists, or a requested address is in use.
	// It returns an error matching ErrInvalidRequest when the spec cannot be built
	// (unsupported protocol, session affinity, address outside any pool...): a backend
	// never drops a part of the spec it cannot build, it refuses the spec. A create must
	// never be retried
	// blindly: after an error matching ErrTransient the load balancer may exist, and
	// callers look it up by its tags before creating again.
	CreateLoadBalancer(ctx context.Context, spec LoadBalancerSpec) (*LoadBalancer, error)

	// UpdateLoadBalancer changes the load balancer with the given ID so that it matches
	// update.Spec, and returns it as the cloud stored it. update.Changes says which parts
	// differ from what the caller last read; an adapter with fine-grained calls may make
	// only those calls. It returns an error matching ErrNotFound when the load balancer
	// does not exist, and ErrInvalidRequest when the cloud cannot build update.Spec (as
	// for CreateLoadBalancer) or cannot change a part in place (callers may then replace
	// the load balancer).
	UpdateLoadBalancer(ctx context.Context, id string, update LoadBalancerUpdate) (*LoadBalancer, error)

	// DeleteLoadBalancer deletes the load balancer with the given ID with all its
	// listeners, targets and health checks, and releases its addresses. It returns an error
	// matching ErrNotFound when there was nothing to delete.
	DeleteLoadBalancer(ctx context.Context, id string) error
}

// RouteAPI manages the routes of the cluster's pod networks: each route sends a pod CIDR
// to the instance that runs those pods.
type RouteAPI interface {
	// ListRoutes returns one page of the routes that carry every tag in opts.Tags, ordered
	// by ID, with the same paging guarantees as ListInstances.
	ListRoutes(ctx context.Context, opts ListOptions) (*RoutePage, error)

	// CreateRoute creates a route and returns it as the cloud stored it. It returns an
	// error matching ErrConflict when a route for the same destination CIDR exists in the
	// route table, and ErrInvalidRequest for a malformed CIDR or unknown target.
	CreateRoute(ctx context.Context, spec RouteSpec) (*Route, error)

	// DeleteRoute deletes the route with the given ID. It returns an error matching
	// ErrNotFound when there was nothing to delete.
	DeleteRoute(ctx context.Context, id string) error
}

// ListOptions selects and pages the results of a List call.
type ListOptions struct {
	// Tags filters the results: only resources carrying every key with exactly the given
	// value are returned. Empty means no filter.
	Tags map[string]string
	// PageSize is the most items the caller wants in one page. Zero means the backend's
	// default. A backend may return fewer items, also fewer than PageSize on a page that is
	// not the last; only an empty NextPageToken marks the last page.
	PageSize int
	// PageToken continues a listing where the page that returned it ended. Empty starts
	// from the beginning. Tokens are opaque to callers.
	PageToken string
}

// InstancePage is one page of a ListInstances answer.
type InstancePage struct {
	// Items are the instances of this page.
	Items []Instance
	// NextPageToken continues the listing; empty on the last page.
	NextPageToken string
}

// LoadBalancerPage is one page of a ListLoadBalancers answer.
type LoadBalancerPage struct {
	// Items are the load balancers of this page.
	Items []LoadBalancer
	// NextPageToken continues the listing; empty on the last page.
	NextPageToken string
}

// RoutePage is one page of a ListRoutes answer.
type RoutePage struct {
	// Items are the routes of this page.
	Items []Route
	// NextPageToken continues the listing; empty on the last page.
	NextPageToken string
}
