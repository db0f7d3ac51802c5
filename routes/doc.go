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
// A cloud whose routes carry no tags (cloudapi.TaglessRouteAPI, such as Hetzner's network
// routes) lists its whole route table, and ccmkit owns a route only when its destination
// lies inside one of the cluster's pod CIDRs (Options.ClusterCIDRs, the cloud config's
// routes.clusterCIDRs: the route controller's --cluster-cidr) and its target instance is
// the instance of one of the cluster's Nodes (the Node named as the instance,
// Options.NodeNames). A route made by hand into another range, one to an instance that is
// no Node (or to an address no instance holds), and another cluster's route into its own
// pod CIDR are not the cluster's: never listed, changed or deleted. A route made by hand
// into the pod CIDRs to a Node's instance cannot be told from ccmkit's: it is the
// cluster's, and the route controller deletes it unless it is its Node's. A route the
// snapshot held as the cluster's stays the cluster's while its destination and target do
// not change, so that the route of a Node that is gone (and of its instance: a blackhole)
// is listed and deleted by the route controller; a process that never saw it cannot tell
// it from one made by hand, and keeps it (CreateRoute for that destination then fails with
// a conflict that names it: delete it by hand). The sweeper sweeps no such route.
//
// The rule assumes one cluster per pod CIDR in a route table. Two clusters whose pod
// CIDRs overlap in one network cannot both route (one route per destination: their
// creates conflict); each still owns only the routes to its own Nodes' instances, unless
// an instance of the other is named as one of its Nodes (a Node whose instance is gone,
// not yet deleted, whose name the other cluster reused): then it may delete that route.
// Config validation refuses what it can see (overlapping or all-covering
// routes.clusterCIDRs); it cannot see another cluster's.
//
// A route's target instance is found with instances.Lookup's ByID, a read that never
// counts for the instance lookup's deletion brake: after a project switch the route table
// and its targets are the other project's, and finding them running must not release it.
//
// # Calls
//
// ListRoutes answers from a snapshot of the cluster's routes, so that the route
// controller's reconcile with nothing to change costs no cloud call while the snapshot is
// no older than Options.MaxAge (the cloud config's cache.maxAge, a minute by default), and
// one ListRoutes after it: the routes filtered by the cluster tag (or, where routes carry
// no tags, every route, and one list of the Nodes when a route is not known already), the
// whole route table asked for in one page (clouds read a route table as one object). Concurrent callers share
// one list, and after a failed list the next waits for a backoff (internal/sharedlist's);
// a failed list is an error, never an empty table (internal/sharedlist). The Node of a
// route comes from its tag, or from its instance in the shared instance snapshot, never
// from a call per route; where routes carry no tags, the process's first list fills
// that snapshot before it reads the table (joining the cloud node controller's list when
// one is under way; once, whether the table's list then succeeds or not), so that an adapter that reads the table's gateways from a list of the instances
// can take that one (cloudapi.GatewayRoutes' Listed) instead of making a second.
//
// ccmkit's own writes keep the snapshot current: a route created, or found after a create
// whose answer was lost, is added; a route deleted, or found gone, is removed; a write
// made while a list is under way is replayed on that list's answer. A write that failed
// may have been applied all the same, so after one the snapshot is not used: the next
// ListRoutes lists. The route controller therefore never creates or deletes a route
// twice because of the snapshot.
//
// What changes behind ccmkit's back is seen when the snapshot is next listed, up to
// MaxAge later: a route deleted or changed by hand is repaired by the first reconcile
// after that, and a route whose instance was deleted is reported as a blackhole, which
// the route controller deletes, only then. A Node whose instance is gone is deleted by the
// node lifecycle controller, and its routes with it at the next reconcile, whatever the
// snapshot's age.
//
// # Idempotence
//
// CreateRoute of a route that exists with the same destination and target is success; one
// for the same destination to another target is an error that names both. After an
// ambiguous failure (cloudapi.ErrTransient) or a conflict, CreateRoute lists again to find
// out. DeleteRoute of a route that is gone is success. Where routes carry no tags,
// DeleteRoute lists the table first (one list per delete): a route's ID, which the
// adapter synthesizes (its destination, say), may name a route made by hand since the
// snapshot's list, which is then not deleted.
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
