// Package routes implements cloudprovider.Routes over a cloudapi.RouteAPI: the routes that
// send each Node's pod CIDRs to its instance, for clusters whose pod network relies on the
// cloud's routing (the upstream route controller reconciles them every 10 seconds).
//
// # Ownership
//
// A route belongs to the cluster when it carries cloudapi.TagCluster with the cluster ID;
// cloudapi.TagNode records its Node's name at creation. ListRoutes returns only the
// cluster's routes, so the route controller never sees, let alone deletes, a route of
// another cluster or one made by hand; DeleteRoute refuses a route it cannot confirm as the
// cluster's.
//
// # Calls
//
// A reconcile with nothing to change is exactly one cloud call: one ListRoutes, filtered by
// the cluster tag, asking for the whole route table in one page (clouds read a route table
// as one object). The Node of a route comes from its tag, never from a call per route. A
// route whose target is gone is reported as a blackhole when the cloud says so, and the
// route controller deletes it.
//
// # Idempotence
//
// CreateRoute of a route that exists with the same destination and target is success; one
// for the same destination to another target is an error that names both. After an
// ambiguous failure (cloudapi.ErrTransient) or a conflict, CreateRoute lists again to find
// out. DeleteRoute of a route that is gone is success.
//
// # Node addresses
//
// With EnableNodeAddresses, the first InternalIP of the route's family among
// TargetNodeAddresses becomes the route's next hop (cloudapi.RouteSpec.TargetAddress).
// ListRoutes reports routes with EnableNodeAddresses false: the cloud keeps one next hop,
// not the Node's address list, and reporting a list it cannot keep would make the route
// controller replace the route on every reconcile.
//
// # Building it
//
// provider.New builds it over the provider's instrumented client and instance lookup. A
// program that composes its own cloudprovider.Interface builds it with New over the
// client's RouteAPI and an instances.NewLookup shared with package instances (see that
// package's example); it then has none of the provider's rate limit, retries or metrics.
package routes
