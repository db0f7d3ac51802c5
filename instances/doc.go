// Package instances implements cloudprovider.InstancesV2 and the legacy
// cloudprovider.Instances over cloudapi.InstanceAPI, answering from the shared instance
// snapshot, and owns that snapshot: NewLookup builds the one Lookup that Instances,
// package zones and package routes share.
//
// provider.New builds all three over the provider's instrumented client. A program that
// composes its own cloudprovider.Interface builds them with NewLookup, New, zones.New and
// routes.New (see the example); it then has none of the provider's cloud config, rate
// limit, retries or metrics.
//
// Who calls it, and why it must be cheap and careful: the cloud node controller calls
// InstanceMetadata when a Node is initialized and for every Node every 5 minutes; the
// node lifecycle controller calls InstanceExists and InstanceShutdown for every NotReady
// Node every 5 seconds, and deletes the Node at once when InstanceExists answers
// (false, nil). So InstanceExists answers false only when the cloud says, with certainty,
// that the instance does not exist (cloudapi.ErrNotFound, or the instance is terminated);
// every other failure is returned as an error and the Node is kept.
//
// Instances are found by the Node's spec.providerID (parsed strictly in the configured
// format: a provider ID of another cloud, or one with a character no provider ID has, such
// as a NUL, is an error, never "not found"), and by the Node's
// name when it has no provider ID yet, compared as the kubelet derives Node names from
// hostnames (trimmed, lower case: instance "Worker-1" is Node "worker-1").
//
// When the cloud itself misbehaves, "gone" is not taken on its word (the rules are in
// internal/instancecache, and each check is counted in
// cloudprovider_<provider>_instance_gone_checks_total):
//
//   - Once a refresh of the instance list has failed (the snapshot is refreshed after
//     cache.maxAge), a GetInstance not-found is not enough: InstanceExists
//     returns an error (the Node is kept) until a list succeeds. An adapter that reads a
//     wrong base path's or a proxy's 404 as not found can so not delete every NotReady Node.
//   - When a list loses at least 10 % of the instances live in the list before (missing,
//     or answered terminated), as an empty or truncated list in an incident does, each
//     lost instance is checked with one GetInstance before it reads as gone; it stays to be
//     checked across later lists until the cloud answers for it or lists it again.
//   - A terminated instance found by name counts only from a list begun after the
//     lookup: a new instance may have taken the name of a replaced one.
//   - A cloud whose page tokens repeat (a→b→a) or never end (past 10,000 pages) fails the
//     list with an error; lookups then behave as above for a failing list.
//   - The deletion brake (LookupOptions.Brake, on by default; its rule is
//     internal/instancecache's "The deletion brake"): within a window only a bounded share
//     of the known instances may read as gone, and none while the list has none of the
//     instances it had live (another project or credentials). A held-back answer is an
//     error matching ErrDeletionBrake (the Node is kept), a Warning event
//     EventDeletionBrake on the Node once per window (Options.Recorder), and
//     reason="brake",result="refused" in the metric. The brake lets go when the cloud
//     lists the instances again, or an instance that InstancesV2 looked up by a Node's
//     provider ID (a new Node's); a Node annotated AnnotationAcknowledgeGone="true" has
//     its answer passed on (and is deleted). Only InstancesV2's reads, with the Node in
//     hand, count so: the Lookup's own methods (package routes' ownership checks, package
//     zones) and the legacy Instances methods, given a name or a provider ID, never do.
//
// How instance states map (also in docs/architecture.md):
//
//	state                                exists   shutdown
//	pending, running, stopping, unknown  true     false
//	stopped, terminating                 true     true
//	terminated, or ErrNotFound           false    (InstanceNotFound)
//	any other error                      error    error
package instances
