// Package instancecache is the one instance snapshot that instances, zones and routes
// share: a paginated list of every instance, refreshed when it is older than a maximum
// age, answering lookups by ID and by name.
//
// Its rules keep the cloud API quiet without ever lying about an instance being gone:
//
//   - A lookup in a fresh snapshot costs no cloud call. Known, the load balancers' read of
//     a Node being initialized, waits for a list for a name the snapshot lacks when it
//     is first asked about (the list the node controller's lookup of a new Node makes
//     too): the names asked about together share one list, and names asked about again
//     need no more than a fresh snapshot (see Known).
//   - Concurrent lookups that need a refresh share one list (one fetch for all of them);
//     concurrent lookups of one missing ID share one GetInstance. Every caller stops
//     waiting when its own context ends, the one that started the call too.
//   - An ID missing from a fresh snapshot is fetched by ID (one call), not by relisting;
//     after more such misses than a relist costs in pages, the next miss relists instead.
//   - Names compare as the kubelet derives a Node's name from its hostname: trimmed and
//     in lower case, so instance "Worker-1" is Node "worker-1".
//   - Errors are never cached. A failed list is retried after a backoff (1 s doubling to
//     30 s), not on every lookup; meanwhile a lookup by ID is one GetInstance.
//   - Lists go through internal/paging: a page token answered twice or a list past
//     paging.MaxPages pages is a failed list, never an endless one.
//
// "Gone" (an error matching cloudapi.ErrNotFound, or a terminated instance) is answered
// only on the cloud's own authoritative word, and only while the cloud looks healthy:
//
//   - By ID: GetInstance answered ErrNotFound, or a list has the instance terminated.
//     While the instance list is failing, a GetInstance not-found alone is not enough:
//     the lookup fails with ErrUnconfirmed (an adapter that maps a proxy's or a wrong
//     base path's 404 onto ErrNotFound would otherwise delete every NotReady Node).
//   - By name (the cloud has no get-by-name): a list that began after the lookup has no
//     live instance of that name. A terminated instance of that name in an older
//     snapshot is not enough: a new instance may have taken the name since.
//   - After a shrink: when a list loses (misses, or answers terminated) at least
//     SuspectShare (10 %) of the instances live in the list before, as a cloud answering an
//     empty or truncated list in an incident does, every lost instance is checked with
//     one GetInstance before any lookup answers it as gone. It stays to be checked, across
//     later lists, until GetInstance answers for it or a list has it live again; and an
//     instance a GetInstance found running is checked again whenever the next list lacks
//     it, whatever share of the whole that list lost. The first
//     list after a start has nothing to compare with; lookups by ID are safe then too (an
//     ID missing from a list is always asked for with GetInstance), lookups by name (Nodes
//     without a provider ID yet) rely on the list.
//
// # The deletion brake
//
// The checks above catch a cloud that is visibly unhealthy. A cloud that answers,
// consistently and with authority, that every instance is gone (the CCM pointed at another
// project, or a token scoped to the wrong one) passes them all; the node lifecycle
// controller would then delete every NotReady Node. Options.Brake bounds that; the rule:
//
//   - Within any Window (default 10 min), at most Share (default 50 %) of the known
//     instances, and at least Minimum (default 2), may read as gone; an instance let go
//     stays gone for the window. The known instances are the most instances any list
//     begun within the window had live (or the snapshot has live, if more).
//   - None at all while the brake is engaged: a list that has none of the instances live
//     that the snapshot before had live (an empty project, or another's), when that
//     snapshot had more than Minimum, engages it; so does a first list with no live
//     instance. A list that has one of those instances live again (any, after an empty
//     first list), or an instance a Node's read looked up by ID since (a new Node's: a
//     node pool replaced between two lists), releases it.
//
// A refused answer is a *BrakeError (errors.Is ErrBrake, never cloudapi.ErrNotFound), so
// the Node is kept; its Report is set once per instance and window, for one event, not
// one per lookup. Package instances passes the answer on for a Node the operator
// annotated, and the refusal is counted by Options.OnCheck (CheckBrake, CheckRefused).
//
// # Which reads count
//
// Only the cluster's own Nodes show that the project is the cluster's. The reads for a
// Node, ByIDForNode and ByNameForNode, are package instances' InstancesV2 reads, which the
// node controllers make with the Node in hand. Every other read is ByID or ByName: a
// route's ownership check where routes carry no tags, the Node of a route to create, a
// zone, instances' legacy methods (given a name or a provider ID, not a Node), any reader
// to come; package sweeper and load balancer adoption read no instance. So:
//
//   - Only a list releases the engaged brake, as above: one that has live an instance
//     the snapshot had live when the brake engaged, or one that ByIDForNode looked up
//     since. No read by name counts (another project may have an instance of the Node's
//     name), nor any read for another purpose, whatever it finds running (after a
//     project switch, a route's target is the other project's instance).
//   - The instances live in the snapshot before a list, whose absence from it engages
//     the brake, are the last list's and those a GetInstance added for ByIDForNode; not
//     one a GetInstance added for another read.
//   - Every read's answer "gone" is braked alike and spends the same allowance; a
//     refusal's Report (the event on the Node) goes to a Node's read alone.
//
// Why these defaults: the window is two node status updates (5 min each) and ten list
// ages (cache.maxAge, 1 min), so the known count always comes from lists that saw the
// cluster before the change; half of the cluster is more than any zone outage or rollout
// loses at once in a cluster of three or more zones; two a window let a cluster of one to
// four Nodes scale down. What it costs a real scale-down: the first window lets half the
// known instances go, each later one half of those still live (at least Minimum), so a
// scale-down of up to two thirds of the instances completes within two windows (60 %:
// half at once, the rest at the first lookup after one window), a larger one later. What
// it does not know: a process starts with no known instances, so a CCM started against
// a project that has other instances (not an empty one) is bounded only by Share of
// those.
//
// Options.OnCheck reports each of these checks; the provider counts them in the
// cloudprovider_<name>_instance_gone_checks_total metric.
package instancecache
