// Package soak is a seeded, bounded chaos soak test of ccmkit. It has no API: everything
// is in its tests, which run with the rest of `go test -race ./...`.
//
// # What it does
//
// A history of thousands of random operations, generated from a seed, runs against the
// real provider (provider.New over the fake cloud), with the cloud wrapped in
// cloudapi/faultinject so that about a fifth of the cloud calls fail: throttled, transient,
// timed out, or ambiguous (applied, then the answer is lost). The operations are what the
// world does to a cluster:
//
//   - Services: create (ports, type, externalTrafficPolicy, IP families, source ranges,
//     annotations under loadbalancer.ccmkit.io/ including internal, proxy-protocol, name and
//     the health check ones and keep-on-delete, plus an unknown key and a foreign
//     annotation), replace ports, replace annotations, change the type away from
//     LoadBalancer and back, delete (a name may be reused by a new Service with a new UID).
//     Load balancers change hands: a new Service may name by ID (load-balancer-id) a load
//     balancer without ccmkit tags, one kept by keep-on-delete or the one an operator made
//     before the history, and a Service that turns LoadBalancer again names its own kept
//     one. The run sets the ID as a careful user would (adopt_test.go says how), so that no
//     Service fails by design; a load balancer of another cluster is in the cloud too.
//   - Nodes: add (an instance starts, its kubelet registers an uninitialized Node, with or
//     without spec.providerID, and the Node gets a pod CIDR), remove (an autoscaler deletes
//     the Node, then the instance), drain (the autoscaler's ToBeDeleted taint), exclude
//     from load balancers (label on and off), shut down (instance stopped, Node NotReady),
//     start, kubelet down (Node NotReady, instance running), instance deleted or terminated
//     in the cloud behind the cluster's back (Node NotReady). Terminated instances are
//     forgotten by the cloud an hour later.
//   - Cloud-controller-manager restarts: a new provider.New over the same cloud, and
//     controllers that lose all their in-memory state.
//   - The cloud config, in a run with project switches: the operator points it at another
//     project, an empty one, and a few dozen operations later back (each a restart, as a
//     config change takes effect; project_test.go says how), while the world goes on.
//
// A run is on a cloud with or without target groups (cloudapi.TargetGroupAPI; the fake's
// Capabilities.TargetGroups, which the provider then uses: see package loadbalancer's
// "Target groups"). With them, the load balancers of the cluster share its group of every
// Node (no Service has a node selector), and the cloud holds two groups that are not the
// cluster's before the history: an operator's, which the operator's load balancer names
// (so a Service that adopts it moves it off a foreign group), and the other cluster's
// group of every Node, which the other cluster's load balancer names. The faults apply to
// the group calls too (the fault rules name no operations): lists, creates, updates and
// deletes fail, and creates, updates and deletes are ambiguous, like the others. Every
// list (instances, load balancers, routes, groups) also repeats an item on a page of its
// own at the fault rate (faultinject.Repeat, a cloud paging by offset), so a caller that
// took it for two (and deleted a load balancer as its own duplicate) fails a check; and a
// quarter of the fault rate of the load balancer updates is refused as a request the
// cloud cannot build (faultinject.Refuse), so that the targets written alone after a
// refusal (never onto a load balancer whose adoption was refused) meet the checks too. The
// collection of unused groups that the controller controllers.TargetGroupCollector runs
// every cache.maxAge (loadbalancer.LoadBalancer.CollectGroups) runs as a periodic loop of
// the simulation.
//
// A run may put Services in shares (loadbalancer.AnnotationShare; share_test.go says how):
// create-service and update-annotations give a Service one of two shares or none, so that
// Services join, leave, move and are deleted, agreeing with their share or not, on the
// same ports or not, and a third of those that join ask for the ports another Service of
// the share has (they wait for them: loadbalancer.ErrPortsTaken). Its Services are in two
// namespaces, and the seed decides whether the provider shares across namespaces
// (loadBalancer.shareAcrossNamespaces): a share is its namespace's, or every namespace's,
// and the checks count a share's Services in that scope, whichever Service a write is
// about (a sync of one namespace revisits the shares of another that the snapshot is
// unsure of after a fault; the run counts those reads). At every load balancer write it
// checks that a share's last load balancer is not deleted while a Service of the share
// exists (but by a Service of the share replacing it, when no other Service's listener is
// on it or each such Service asks for what it asks for); that a write about one Service
// removes no listener of another that exists; that a write puts a Service's listener
// only onto a load balancer of its share that is what it asks for (a port handed over, or
// carried from a duplicate, too); and that a write that frees a port a Service of the
// share waits for hands it over in that write. At every condition the provider writes, no
// Service of a share is LoadBalancerReady while another Service has its every port. Once
// settled: one load balancer per share at most, none of a share without a Service, no
// listener of a Service not in the share, and every Service of a share that does not
// disagree with it has each port it asks for, to its node port, unless another Service
// has it (the ports freed were handed over), and is not ready while another has them
// all. TestSoakRegressions replays the orders of events it found wrong once (and, skipped,
// those it found that are not fixed yet); TestShareChecksCatchViolations holds its checks
// to finding what they look for.
//
// A run may switch the cloud config to another project and back (project_test.go says
// how). While it points there no Node may be deleted (the deletion brake refuses every
// answer "gone" of an empty project), and within the creation brake's window no more
// owners (Services, or shares) of Services with an address may get a load balancer there
// than the creation brake allows (loadbalancer.CreationBrake; its memory is its
// process's, so it is counted since the last restart). A Service cleaned up while
// switched leaves what it had in the cluster's project, by design; the end checks allow
// that. TestBrakeChecksCatchViolations runs a switch with either brake off and expects its
// check to report it.
//
// After the history the faults stop, the controllers run for the settle window (the
// longest back-off of the service and cloud node controllers, 300s and 1000s, plus the
// instance snapshot's maximum age, plus two rounds of the lifecycle and route
// controllers, plus the windows of the deletion brake that the Nodes of gone instances
// left by the history need, as it lets them go nodes.deletionBrake.minimum a window in a
// cluster of a few Nodes: ceil(gone/minimum) windows and one more, at least two;
// with target groups 34 minutes more: a collection keeps a group made less than 32
// cache.maxAge ago). Then the operator acknowledges (instances.AnnotationAcknowledgeGone)
// every Node whose instance is gone in the cloud while the brake is engaged (a cluster
// whose every instance went within one list, which the brake cannot tell from another
// project), as the brake's event asks, and every Service the creation brake holds (its
// condition says CreationHeld: a Service that got its address in another project, or
// moved out of a share, while more than the brake allows wait) with
// loadbalancer.AnnotationAcknowledgeNewLoadBalancer, and the controllers run the settle
// window once more; a Node the brake holds only for its allowance is left to it. The end
// state is then checked:
//
//   - no Service ever had two load balancers at once (fake.Cloud.LoadBalancerHistory is
//     replayed), and every update's Changes were its real diff, also for the client's
//     retry of an update whose answer was lost (it is re-based on a fresh read);
//   - no Node was deleted while its instance existed (checked when the lifecycle
//     controller deletes it);
//   - no load balancer without this cluster's tags was ever deleted, or changed but by an
//     adoption that left what decides its addresses alone, and the other cluster's never;
//   - no target group without this cluster's tags was ever written: every group write that
//     reaches the cloud (also one whose answer a fault loses) is checked, as it is sent,
//     against the group's tags in the cloud, and a create or update must carry the
//     cluster's tag; at the end the two groups that were there before are as they were made;
//   - every load balancer without this cluster's tags carries neither of ccmkit's Service
//     tags nor targets nor names a group of the cluster (a released one), and the one the
//     operator made still exists;
//   - every target group of the cluster is named by a load balancer of the cluster (no
//     orphan: a group left unused must have been deleted at once or by a collection), and
//     there is at most one group of the cluster per cloudapi.TagTargetGroup value (a
//     duplicate may exist while the faults are on, not at the end);
//   - no load balancer or route of the cluster is orphaned (fake.Cloud.Inventory): every
//     load balancer belongs to a Service that wants one (but one a cleanup while the config
//     pointed at another project left), every route to an existing Node's pod CIDR and
//     instance, none a blackhole; every pod CIDR has its route;
//   - the creation brake holds no Service whose load balancer exists;
//   - every LoadBalancer Service has exactly one load balancer, active, and its status is
//     both the last successful EnsureLoadBalancer's and the load balancer's addresses; its
//     listeners are its ports and node ports; its targets are the instances of the Nodes
//     the service controller passes (a Node tainted ToBeDeleted may still be one, as the
//     node sync ignores taint changes): with target groups, the members of the group it
//     names (fake.Inventory.Targets), which must be the cluster's group of every Node, and
//     it has no targets of its own; without, its own targets, and it names no group;
//     internal, proxy protocol, name, health check, source ranges, address families, the
//     Service name tag and the load balancer the load-balancer-id annotation names match;
//     the cleanup finalizer is on LoadBalancer Services only, and no deletion is stuck;
//   - every LoadBalancer Service has its load balancer's ID in the annotation
//     status.ccmkit.io/load-balancer-id and the condition LoadBalancerReady True
//     (Provisioned), which the provider writes through the client Initialize gets (its
//     patches applied to the simulation's Services); every other Service has neither;
//   - every Node has a live instance, is initialized, and has the shutdown taint exactly
//     when it is NotReady with a stopped instance (never when Ready);
//   - no controller still waits to retry a Service or a Node.
//
// TestChecksCatchCorruptedEndStates (and TestGroupChecksCatchCorruptedEndStates, on a cloud
// with target groups) plants each kind of damage into a converged end state and expects
// its check to report it, so that the checks are known not to be vacuous.
//
// # The driver
//
// The upstream controllers are not run. Their informers, work queues and goroutines make
// a run depend on scheduling, and the service controller has a data race between its node
// sync and its service sync on its cache. Instead a small deterministic driver calls
// cloudprovider.Interface the way the controllers of k8s.io/cloud-provider v0.37.2 do,
// one call at a time, on a virtual clock (which the provider's instance snapshot and the
// fake cloud also read). It models:
//
//   - Informers: a write to the simulated API server is an event delivered at once to the
//     handlers; a restart delivers an add for every object.
//   - Work queues, as client-go's rate-limited delaying queue: an event adds an item at
//     once, and a failed sync adds it after its back-off (or its RetryAfter); a retry
//     already scheduled stays scheduled, so an event whose sync fails again never
//     postpones it (the failure still doubles the back-off of the retries after it).
//   - Service controller: adds on create when the Service wants a load balancer or needs
//     cleanup, on update when needsUpdate's fields changed or cleanup is needed; syncService
//     with its cache (the Service as last synced), the UID-changed path, the delete path
//     (GetLoadBalancer, EnsureLoadBalancerDeleted, finalizer removed, status cleared) and the
//     ensure path (finalizer added, EnsureLoadBalancer with the stable node set, status
//     patched when it changed); api.RetryError waits its RetryAfter, other errors the
//     per-Service exponential back-off (5s to 300s), success forgets it. The node sync runs
//     on Node add and delete and on changes of the exclude label or provider ID; for every
//     cached Service whose node set (names and provider IDs, without deleted, excluded or
//     ToBeDeleted Nodes; readiness does not count) changed since its last sync it calls
//     UpdateLoadBalancer, asks GetLoadBalancer after an error and retries through the
//     service queue only while the load balancer exists.
//   - Cloud node controller: a Node with the uninitialized taint gets InstanceMetadata,
//     then provider ID (if unset), addresses, instance type and topology labels and loses
//     the taint; errors retry with the per-Node back-off (5ms to 1000s).
//   - Cloud node lifecycle controller: every 5s, Ready Nodes lose the shutdown taint;
//     for a NotReady Node, InstanceExists false with a nil error deletes it, an error skips
//     it, and InstanceShutdown true taints it.
//   - Route controller: every 10s one ListRoutes; routes in the cluster CIDR that are
//     blackholes or match no Node's pod CIDR are deleted, then every pod CIDR without a
//     route of its Node is created with the Node's UID as name hint; errors wait for the
//     next round.
//
// It does not model: concurrency between and inside the controllers (the provider's own
// locking is not exercised here); the cloud node controller's periodic address updates,
// label reconciliation and node status updates; the route controller's NetworkUnavailable
// condition and its watch-based mode; events, metrics and leader election; API server
// failures, conflicts and informer lag; the kube-controller-manager's eviction; Nodes
// that re-register; node address changes; the watch of node labels
// (controllers/labelwatch); the sweeper (package sweeper, off by default); a cloud
// config that changes without a restart (credentials rotated under the running process),
// and another project that has instances of its own (the deletion brake bounds a process
// started against one only by its share of those). The history has no Services with a node selector (so a
// cloud with target groups has one group of the cluster, that of every Node), a
// LoadBalancerClass, spec.loadBalancerIP or the ip-addresses annotation, no malformed
// annotations (a Service with one fails by design and never converges), and no adoption
// that is refused (another owner, an ID that does not exist, an address it would lose:
// the loadbalancer unit tests and the e2e suite have those); two Services never name one
// load balancer at once, since the driver runs one call at a time.
//
// # Determinism and reproducing a failure
//
// Everything derives from the seed and the run's choices (target groups, shares, project
// switches): the history (each operation carries all its random choices and its original
// index), the knobs of the run (the provider's retry attempts and
// loadBalancer.shareAcrossNamespaces, the fake's page sizes and provisioning reads) and
// the faults. Each step (an operation and
// the controllers' work until the next one) gets its own faultinject.Client seeded with
// the seed and the operation's index; faultinject draws its decisions from (seed,
// operation, call number), and the numbering starts at every step, so the faults of a step
// do not depend on the steps before it and a shortened history keeps them. The provider's
// client neither limits its rate nor waits more than microseconds between retries, so
// wall time cannot change an outcome.
//
// A failure prints the seed and every violation, then shrinks the history with delta
// debugging to a sub-history that still fails a check of the same name, and prints it
// with the command that replays it:
//
//	go test ./internal/soak -run 'TestSoak$' -soak.seed=2 -soak.ops=1000 -soak.faults=0.2 -soak.groups=false -soak.shares=false -soak.switches=false -soak.only=9,12
//
// # Flags
//
//	-soak.ops=N       operations of one run (default 3000 with -soak.seed); without both
//	                  flags the CI soak runs: seeds 1, 2 and 3 of 2500 operations each
//	                  without target groups, seed 4 of 2500 operations with them, and
//	                  seeds 7 and 35 of 1000 operations with shares and project switches
//	                  (7 shares across namespaces, 35 does not)
//	-soak.seed=S      the seed of one run; 0 with -soak.ops picks one from the clock and logs it
//	-soak.groups      the run of -soak.seed is on a cloud with target groups
//	-soak.shares      the run of -soak.seed puts Services in shares
//	-soak.switches    the run of -soak.seed switches the cloud config to another project and back
//	-soak.faults=F    share of calls that fail while faults are on (default 0.2)
//	-soak.only=LIST   replay only the operations with these indices
//	-soak.shrink=D    wall-time budget for shrinking a failure (default 2m; 0 disables)
//	-soak.log         log every operation
//
// A longer soak: go test ./internal/soak -run 'TestSoak$' -soak.ops=20000 -soak.seed=123
package soak
