// Package instances implements cloudprovider.InstancesV2 and the legacy
// cloudprovider.Instances over cloudapi.InstanceAPI, answering from the shared instance
// snapshot.
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
// format: a provider ID of another cloud is an error, never "not found"), and by the Node's
// name when it has no provider ID yet.
//
// How instance states map (also in docs/architecture.md):
//
//	state                                exists   shutdown
//	pending, running, stopping, unknown  true     false
//	stopped, terminating                 true     true
//	terminated, or ErrNotFound           false    (InstanceNotFound)
//	any other error                      error    error
package instances
