// Package sweeper deletes what a cluster left behind in the cloud: load balancers and
// routes tagged with the cluster whose Service or Node is gone, or whose share of
// Services has none left (a finalizer removed by hand, a namespace force-deleted, a
// cloud-controller-manager that was down when they went), and target groups of the cluster that none of its load balancers names (the
// group of a load balancer the sweeper deleted, or one a cloud-controller-manager did not
// get to delete). Teardown lists, and when told to deletes, everything a cluster owns (its target
// groups too, when the cloud has them; KindTargetGroup), for whoever deletes a whole
// cluster.
//
// # In a cloud-controller-manager
//
// One line in main.go adds the sweeper, with ccmkit's other controllers (package
// controllers), next to the upstream controllers:
//
//	command := app.NewCloudControllerManagerCommand(opts, initCloud,
//		controllers.With(app.DefaultInitFuncConstructors), names.CCMControllerAliases(),
//		cliflag.NamedFlagSets{}, wait.NeverStop)
//
// It is the controller ControllerName ("ccmkit-sweeper") of --controllers, and is off
// unless the cloud config switches it on (ccmkit's provider: sweeper.enabled). It runs in
// the leader only, calls the cloud through the provider's client (rate limit, retries,
// metrics) and the API server as ClientName.
//
// # What it deletes, and when
//
// A load balancer that carries cloudapi.TagCluster with the cluster's ID, and
// cloudapi.TagService (the owner's UID) and cloudapi.TagServiceName (its namespace/name),
// whose Service is gone; a route that carries the cluster's tag and cloudapi.TagNode
// whose Node is gone. A load balancer is owned while the Service informer holds a
// Service with its UID, whatever the name tag says (a cloud may shorten tag values); a
// load balancer or route the cloud lists without an ID, or a load balancer the cloud
// re-reads as nothing, is never deleted. A load balancer that carries cloudapi.TagShare
// is the share's (below), whatever else it carries. "Gone" is proven twice: the informers have synced and lacked the
// owner at every sweep for the grace period; then, right before the delete, the cloud is
// read again (the resource still has the same tags) and the API server is read live (a
// GET, not the cache) and answers NotFound, or for a Service one of the same name with
// another UID (a Service deleted and created again under its name owns nothing of its
// predecessor's). An error anywhere is never "gone": the resource waits for the next
// sweep. The grace period is counted in the process, so a restart of the
// cloud-controller-manager (or a new leader) starts it again.
//
// A load balancer several Services share (cloudapi.TagShare: the share's key) is the
// share's: it is deleted when no Service of the share exists, as Options.ShareKey reads a
// Service's share annotation (ccmkit's provider passes its load balancers' own reading:
// annotation prefix, aliases, shareAcrossNamespaces). A Service of the share is one of type
// LoadBalancer, not being deleted, that names it; one whose share annotation is malformed
// may be in any share of its namespace, and keeps them. Gone is proven as above, by the
// informer at every sweep for the grace period, then by a live list of the Services of
// the share's namespace (all of them for a "*/" key), after which the cloud's re-read must
// show the load balancer as listed: same tags, same listeners (nothing joined the share).
// Without Options.ShareKey no shared load balancer is touched. The listeners a
// force-deleted Service left on a share others still use are not removed: the sweeper
// only deletes, and a rewrite of the load balancer could race a sync of the share's
// Services (the cloud API has no conditional write); they go with the load balancer, once
// the share's last Service leaves.
//
// Why both: the informer makes a sweep cheap (one cloud list per kind, no API call for
// the owned); the live read closes the window in which the service controller creates a
// load balancer for a Service the sweeper's informer has not yet seen, and the grace
// period covers every other race (a Service or Node being recreated, a controller
// catching up after a restart).
//
// # What it never touches
//
// Anything without the cluster's tag: foreign load balancers, another cluster's, and
// load balancers released by keep-on-delete (which have no ccmkit tag left). A load
// balancer whose Service still exists, whatever its type or class now: cleaning up after
// a Service that stopped being of type LoadBalancer is the service controller's job (or
// lbclass's), which the Service's finalizer guarantees; the sweeper only acts where
// no Service is left to carry a finalizer. A load balancer with the cluster's tag but
// without a complete owner (no UID or no namespace/name) has no owner to prove gone. A
// cloud provider that keeps load balancers by default (ccmkit's loadBalancer.keepOnDelete)
// does not hand the sweeper its load balancers: a gone Service's keep-on-delete
// annotation can no longer be read, so a sweeper could not tell what was meant to stay.
// A target group without the cluster's tag or without cloudapi.TagTargetGroup (not one
// ccmkit made), or one that a load balancer names, of the cluster or not. Any route of a
// cloud whose routes carry no tags (cloudapi.RoutesCarryNoTags): such a route is the
// cluster's only while its target is one of the cluster's Nodes (package routes), so one
// whose Node is gone can no longer be proven the cluster's; the route controller deletes
// it while ccmkit's route snapshot still knows it, and Teardown lists none.
//
// # Target groups
//
// With Options.TargetGroups (ccmkit's provider sets it when the cloud offers
// cloudapi.TargetGroups and load balancers are on), each sweep lists the cluster's target
// groups (one paged list, tags checked on every item), then the cluster's load balancers
// (the list the load balancers are swept from). A group that no load balancer of that list
// names, but for those the sweep deleted, is a candidate; a sweep whose list of groups or
// of load balancers failed neither starts nor ends a candidate's grace period. A candidate
// goes by the one rule of package loadbalancer's collection (targetgroups.Deletable): one
// a load balancer named at an earlier sweep after its grace period; one nothing named yet
// (perhaps made for a Service whose load balancer create keeps failing, which the
// collection keeps so as not to make and delete it at every retry) only once the sweeper
// first found it unused 32 times Options.TargetGroupMaxAge ago (the provider passes
// cache.maxAge), and not before its grace period. Then the cluster's load balancers are
// listed again, and a group none of them names is deleted. The cloud refuses to delete a group in use (cloudapi.ErrConflict: a
// load balancer of another cluster, or one created since the list, names it): the group
// is kept, and is a candidate again, with a new grace period, from the next sweep. A
// not-found answer is a group gone already; any other error leaves it for the next sweep.
// So the group of a swept load balancer goes one grace period after it.
//
// Groups are swept whatever loadBalancer.keepOnDelete says: a released load balancer
// names no group (loadbalancer removes it with the ownership tags), so a group no
// load balancer of the cluster names is nobody's to keep. The load balancers are then
// only listed (Options.ListedLoadBalancers), never deleted.
//
// # What it reports
//
// On the gone owner, referenced by what the resource's tags say (a Service by namespace,
// name and UID; a Node by name, whose events go to the namespace default): a Normal event
// EventDeletedLoadBalancer or EventDeletedRoute per delete and a Warning
// EventDeleteFailed per failed delete; `kubectl get events -n <namespace>` finds them
// after the Service is gone. A target group and a shared load balancer have no owner
// object: their deletes, kept groups and failures are logged, without an event. Options.OnSwept counts the deletes by kind
// and result (ResultKept: a target group the cloud refused as in use); the provider
// exports them as cloudprovider_<provider>_swept_total.
package sweeper
