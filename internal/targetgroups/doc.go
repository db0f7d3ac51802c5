// Package targetgroups is the store of a cluster's target groups (cloudapi.TargetGroupAPI)
// that package loadbalancer's load balancers share: the load balancers that want the
// same Nodes name one group (cloudapi.LoadBalancerSpec.TargetGroup) instead of their own
// targets, so that a Node added or removed is one write to each group whose Nodes change.
//
// A Store does four things, and decides nothing about when: the caller calls.
//   - Acquire makes the group of a key hold a set of targets and hands out its ID until
//     the caller releases it. A group's members are written only from a fresh read: a
//     list of the group by its tags begun after the caller's event (the arrival of a node
//     set, else the call), serialized per key, so the calls of a node sync write a group
//     once; a group that holds the targets, as the cloud last answered no longer than
//     MaxAge ago, costs no call. A group is created only after such a list found none,
//     and after an ambiguous or conflicting create it is listed again and adopted. Of two
//     groups of one key (a cloud that lost track of a create), the first by ID is used.
//   - Drop deletes at once, without a list, a group a load balancer stopped naming, when
//     nothing may want it (see Drop).
//   - Collect is the periodic collection of unused groups (see Collect); Due asks for
//     one. It deletes by the one rule for an unused group, Deletable, which package
//     sweeper's sweep of target groups applies too.
//   - Forget marks a group unknown after a load balancer write that named it was refused.
//
// Why the sweeper keeps a sweep of its own, by the same function: it sees what no Store
// collects (the groups left after target groups were turned off, or by a load balancer
// deleted while no Store ran), and moving those cases here would take a Store without
// sharing and a list of the load balancers at every periodic collection. Applying
// Deletable is simpler and keeps the collection's promise (no churn for a Service whose
// load balancer create keeps failing) with the sweeper on.
//
// A nil *Store is a cloud without target groups: Due, Forget, Drop and Collect do
// nothing.
//
// Only groups known to be the cluster's are deleted: listed with its tags (checked) or
// created by the Store. Every update and delete passes Owned, the one rule of which
// groups are the cluster's groups of Nodes (package sweeper's sweep applies it too),
// against the group's tags as last read. A cloud error about a group is never taken for
// "no group".
//
// What a Store needs to know of the cluster's load balancers (the order of their events,
// which groups they name) it asks of its Config.LoadBalancers, which package loadbalancer's
// snapshot answers: the Store lists and writes only target groups.
package targetgroups
