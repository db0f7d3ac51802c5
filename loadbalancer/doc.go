// Package loadbalancer implements cloudprovider.LoadBalancer over a
// cloudapi.LoadBalancerAPI: it turns a Service of type LoadBalancer and the cluster's
// nodes into a desired cloudapi.LoadBalancerSpec, compares it with what the cloud has and
// writes only the difference.
//
// # Ownership
//
// A Service's load balancer is the one tagged with the cluster ID (cloudapi.TagCluster)
// and the Service's UID (cloudapi.TagService), found by listing with those tags (or in
// the snapshot's list by the cluster tag), never by the Service's status or by a name a
// user can edit. Nothing without both tags is read, changed or deleted, but the one load
// balancer a Service names by ID to adopt it (see below). Before it
// creates, EnsureLoadBalancer has looked up by the tags; when a create fails ambiguously
// (ErrTransient: the answer was lost) or with a conflict, it looks again and adopts what
// an earlier create made, so a Service never gets two load balancers. Should a backend
// have made two anyway, EnsureLoadBalancer keeps the one whose address the Service's
// status publishes (else the first by ID) and deletes the others. Two are two IDs: every
// list hands each ID over once (internal/paging), and the one kept is never deleted as a
// duplicate of itself, so a cloud that lists a load balancer twice (paging by offset
// while something is created) costs the Service nothing.
//
// # What ccmkit writes to
//
// Every update and delete of a load balancer or target group passes one rule, checked
// against the resource as last read, before any call: a load balancer must carry
// cloudapi.TagCluster with the cluster's ID and cloudapi.TagService with the Service's
// UID; a target group cloudapi.TagCluster with the cluster's ID and
// cloudapi.TagTargetGroup. The one exception is the update that adopts a load balancer
// without any of ccmkit's tags (see Adopting and keeping). So nothing is written, targets
// included, to a load balancer the cluster does not own: when the cloud refuses an
// adopting update (ErrInvalidRequest), the targets are not written alone to it, and the
// error says so.
//
// # Adopting and keeping
//
// A Service whose load-balancer-id annotation names a load balancer, and that owns none
// yet, adopts it: EnsureLoadBalancer reads it (GetLoadBalancer) and, when it carries none
// of ccmkit's ownership tags (TagCluster, TagService), updates it in one write to what the
// Service asks for, with the Service's owner tags; the addresses stay (the requested
// addresses are left as they are unless the Service asks for addresses, which must be
// ones the load balancer has, and the Service's IP families must keep every address).
// One that carries another cluster's or Service's tag, even one of them, is refused with
// an error matching ErrOwnedElsewhere that names no other owner, since the Service's
// events are its users'; an ID the cloud does not know is an error, never a reason to
// create one. After the adoption the load balancer is the Service's like any it created.
// While the annotation is set, a Service that owns another load balancer gets an error
// (nothing is swapped or deleted), and an internal switch, which would replace the load
// balancer, is an error. Two Services that name one load balancer never both adopt it:
// adoption and release hold a lock per load balancer ID. Two
// clusters can race, since cloudapi has no conditional update: the last write wins and
// the other cluster's next sync reports the owner's tags.
//
// With the keep-on-delete annotation (default Options.KeepOnDelete),
// EnsureLoadBalancerDeleted releases the Service's load balancer instead of deleting it:
// one update, based on a fresh read by owner tags, removes ccmkit's three tags and every
// target (this cluster's node ports may go to another Service next) and keeps the rest
// and the addresses. A released load balancer is found by no owner tag any more, so a
// retry after a lost answer has nothing left to do, and the snapshot, which lists by the
// cluster tag, no longer holds it. While keep-on-delete is true, an internal switch is an
// error rather than a replacement.
//
// # What the Service asks for
//
//   - Listeners from spec.ports (TCP, UDP, SCTP, mixed), each to its node port. A TCP
//     port's application protocol is its appProtocol when that names tcp, tls, http or
//     https (other values are hints for others: ignored), else the protocol annotation's;
//     the tls-ports annotation makes a port terminate TLS (TCP becomes TLS, HTTP becomes
//     HTTPS); every listener that terminates TLS presents the tls-certificates, which are
//     required then and refused otherwise.
//   - Targets: the instance IDs in the nodes' provider IDs. A node without a provider ID,
//     or with one of another format, is skipped with a log line; no nodes is a load
//     balancer without targets. The node-selector annotation (a label selector) keeps the
//     nodes whose labels it matches, on top of the service controller's own filter (the
//     node.kubernetes.io/exclude-from-external-load-balancers label): one that matches
//     none leaves the load balancer without targets (logged); a malformed one is the
//     annotation's error and leaves the targets as they are.
//   - Health check: HTTP on spec.healthCheckNodePort at /healthz with
//     externalTrafficPolicy Local, else HTTP on kube-proxy's port 10256 at /healthz;
//     every part can be overridden by annotations.
//   - Source ranges: spec.loadBalancerSourceRanges, else the
//     service.beta.kubernetes.io/load-balancer-source-ranges annotation (the upstream
//     helper's rules); allow-all is no source range.
//   - IP families: spec.ipFamilies; the status lists every address, primary family first.
//   - The status: one ingress per address (ipMode Proxy with PROXY protocol, else VIP);
//     the cloud's hostname when the load balancer has no address (a cloud whose load
//     balancers are DNS names); the hostname annotation's name instead of either, so that
//     kube-proxy sends in-cluster traffic through the load balancer. An address or a
//     cloud hostname the API server would refuse in the status (an address checked as
//     its Service status validation checks, strictly: no zone, no leading zeros, not
//     IPv4-mapped) is left out, with a Warning event AddressNotPublished naming the load
//     balancer and the value; when nothing is left, EnsureLoadBalancer fails, so the
//     service controller retries, rather than publish an empty status.
//   - Session affinity: spec.sessionAffinity ClientIP with its timeout
//     (spec.sessionAffinityConfig.clientIP.timeoutSeconds, 10800 s when absent).
//   - Annotations under the configured prefix: see Annotations. A malformed value is an
//     *AnnotationError naming the annotation, the value (a long one cut after 128 runes,
//     with its length: internal/quote) and what is allowed, which the service controller
//     shows as a Warning event; an unknown key under the prefix is
//     logged as a probable typo and shown as a Warning event UnknownAnnotation (through
//     Options.Recorder) once per change of the unknown keys, never a failed sync.
//   - The adapter's own settings (Options.Settings, see Setting): read from annotations
//     under the same prefix with the same errors, defaults from the declaration or
//     Options.SettingDefaults, canonical values in the spec's Settings, diffed as the rest.
//     A changed setting is one in-place update, or, when declared Replace, a new load
//     balancer (never for a default the Service does not annotate on a load balancer made
//     without the setting; refused with keep-on-delete or load-balancer-id), as for the
//     internal annotation. UpdateLoadBalancer never replaces. A setting of the load
//     balancer whose name the adapter does not declare (any more) is not ccmkit's: every
//     update carries it over unchanged, as foreign tags, and it is no difference.
//
// # The snapshot
//
// A LoadBalancer keeps a snapshot of the cluster's load balancers: one paged list by the
// cluster tag, shared by every Service and refreshed by the first EnsureLoadBalancer or
// UpdateLoadBalancer that finds it older than Options.MaxAge (concurrent callers share
// one list). After every fresh read and every write, the Service's entry is replaced by
// what the cloud answered; after a failed call about a Service, its entry is marked
// unknown. A list never puts back an entry that changed while it ran. Identical target
// sets are stored once, so a thousand load balancers over the same five thousand nodes
// take about a megabyte.
//
// The snapshot only skips work that would change nothing. EnsureLoadBalancer and
// UpdateLoadBalancer answer from it alone when it knows exactly one load balancer of the
// Service, active, with addresses, and without anything to change; everything else (no
// load balancer, duplicates, provisioning, status error, an unknown entry, something to
// change) is read afresh by owner tags, and every write is computed from that fresh read,
// never from the snapshot. GetLoadBalancer and EnsureLoadBalancerDeleted always read
// afresh: a stale "absent" must neither skip a delete nor a create. If the snapshot
// cannot be listed, calls read afresh instead, and the list is retried after a backoff (1 s
// doubling to 30 s), not on every call; a cloud error is never taken for "absent".
//
// So after a restart of the cloud-controller-manager on a converged cluster, ensuring and
// updating every Service costs one list of the cluster's load balancers (one page per
// Options.PageSize of them) and no write. A load balancer changed behind ccmkit's back
// while it still matches its Service in the snapshot is repaired by the first call after
// the snapshot expires.
//
// # Writes
//
// EnsureLoadBalancer on a converged load balancer makes no cloud call while the snapshot
// is fresh and one list when it refreshes it, and never writes; UpdateLoadBalancer with
// an unchanged node set likewise. A changed port or annotation is one read by owner tags
// and one UpdateLoadBalancer call whose Changes name what changed, in place, so the
// addresses stay; a changed node set is the same write, based on the node sync's one list
// (see A node sync), or with target groups one write to the group (see Target groups).
// Only a switch between internal and public replaces the load
// balancer. While the cloud provisions, EnsureLoadBalancer returns an api.RetryError, and
// the service controller asks again after ProvisioningRetryDelay instead of backing off;
// a load balancer in status error is a plain error, with the controller's back-off. A
// cloud that refuses what the Service asks for (ErrInvalidRequest: TLS termination or
// session affinity its load balancers lack) has the refusal returned, which the service
// controller shows as a Warning event; when the refused update also moved targets, the
// targets alone are written after it, so that the node set still reaches them. When
// an annotation is malformed, UpdateLoadBalancer still applies the node set to the
// targets and then reports the annotation's error; only a malformed node selector leaves
// the targets as they are.
//
// # A node sync
//
// When a Node is added or removed, the service controller's node sync calls
// UpdateLoadBalancer for every Service of type LoadBalancer with the new node set, from
// several workers at once. Each of those writes is based on a fresh read, and one read
// serves them all: a list of the cluster's load balancers (one page per Options.PageSize
// of them), shared by the concurrent calls, instead of a list by owner tags per Service.
// So a Node added to a cluster with S load balancers costs ⌈S/P⌉ lists and S updates
// (one per load balancer whose targets change), not S lists and S updates.
//
// Fresh is defined precisely. The node set arrives with the first UpdateLoadBalancer call
// that carries it: the first call whose Node objects (compared by object, as the service
// controller's informer replaces a Node that changes, each once, in any order) or their
// provider IDs differ from the previous call's; a later call with the same node set does
// not move its arrival, and a return to an earlier node set is a new arrival. A write of
// UpdateLoadBalancer is based on a read of the Service's load balancer that began after
// both the arrival of the call's node set and the last write (or failed call, or fresh
// read) about that Service ended: either the list of the cluster's load balancers, when
// one began after both, or else the Service's own list by owner tags, made then. A list
// that began before the node set arrived, even one that ended after it, is never the base
// of a write; it only answers, as before, that a load balancer needs no write. The list's
// entry of a Service is not the base either when the Service's entry changed since the
// list began (a write, whose answer is no read; a failed or ambiguous write, which may
// have been applied), when the list found no load balancer of the Service (the read by
// owner tags confirms before UpdateLoadBalancer reports it missing) or several, or when
// the list failed: then each call reads its Service's load balancer by owner tags, as
// without the list, and the list is tried again after its backoff. A node set that holds
// a Node twice has no arrival to compare with, and is read by owner tags. Node sets of
// different sources that alternate (two controllers with their own informers) make an
// arrival at every alternation: more lists, never an older base. SyncNodeLabels, whose
// Node objects are WatchNodeLabels' own, reads by owner tags and moves no arrival.
//
// # Target groups
//
// With a cloud that has target groups (Options.TargetGroups, cloudapi.TargetGroupAPI),
// the load balancers that want the same Nodes share one: every load balancer without a
// node selector sends traffic to the cluster's group of every Node, and those with the
// same node selector (compared in its canonical form) to that selector's group. A load
// balancer then names its group (cloudapi.LoadBalancerSpec.TargetGroup) and has no
// targets of its own, and a Node added or removed is one write to each group whose Nodes
// change, not one per load balancer: a node sync over S load balancers of one group costs
// one list of the group and one update, and no load balancer call while the snapshot
// knows them converged.
//
// A group is the cluster's when it carries cloudapi.TagCluster with the cluster ID, and
// it is the group of its Nodes by cloudapi.TagTargetGroup ("all-nodes", or "selector-"
// and a hash of the selector); its name, made of the cluster ID and a hash, is for
// humans. The rules of load balancers hold for groups: what the LoadBalancer last learnt
// about a group (no older than Options.MaxAge) only skips a write that would change
// nothing; a group's members are written only from a list of the group by its tags that
// began after the node set arrived (for a node sync, see A node sync) or after the call
// (for the others), and the calls about one group are serialized, so the calls of a node
// sync write a group once. A group is created only after such a list found none; after
// an ambiguous or conflicting create it is listed again and adopted. Of two groups with
// the same tags (a cloud that lost track of a create), the first by ID is used.
//
// A load balancer moves between its own targets and its group with one update, keeping
// its addresses: into the group when target groups are turned on (the group is written
// first, so it never names an empty one), out of it when they are off, and from one group
// to another when its node selector changes. Only groups known to be the cluster's (found
// by a list with its tags, which are checked, or created by ccmkit) are ever deleted: a
// group another's load balancer named before a Service adopted it is left alone. The
// group a load balancer leaves (moved, deleted or released: a released one names no group)
// is deleted at once when this LoadBalancer knows it as the cluster's, no call has chosen
// it and not yet written its load balancer, and the snapshot knows no other load balancer
// that names it (one the cloud is deleting does not count); the cloud refuses to delete a
// group in use (ErrConflict), which keeps it. Whatever is left that way (a refused or
// failed delete, a group after a load balancer's failed delete or move, a group made for a
// load balancer whose create then failed, a group a predecessor left or this LoadBalancer
// does not know yet, duplicates of a group, the group of a load balancer deleted behind
// ccmkit's back, which a fresh read or a list of the snapshot finds gone) is found by a
// collection: after such an
// event, and once after the LoadBalancer is made, the next call (GetLoadBalancer,
// EnsureLoadBalancer, UpdateLoadBalancer or EnsureLoadBalancerDeleted, at its end,
// outside its Service's lock) or CollectGroups, which provider.Cloud runs every
// Options.MaxAge, lists the cluster's groups (one list by the cluster tag) once the
// snapshot is no older than Options.MaxAge, and deletes those no load balancer names, as
// above, but a group this LoadBalancer made less than 32 times Options.MaxAge ago (so
// that a Service whose create keeps failing does not make and delete its group at every
// retry; the next collection comes when it is that old). A collection that cannot delete
// a group that looks unused, or whose lists fail, is followed by the next one
// Options.MaxAge later, the wait doubling with each such collection in a row up to 32
// times MaxAge; after a clean one, the next due one runs at once. A cloud error about a group fails the call
// without a load balancer write; the group is listed again next time, after a backoff
// (1 s doubling to 30 s) when the list failed; it is never taken for "no group".
//
// # Node labels
//
// The service controller calls UpdateLoadBalancer when the node set changes, but not when
// only a Node's labels change, on which a node selector's targets depend.
// WatchNodeLabels (which the controller controllers.NodeLabelsController starts) watches the Nodes and, after
// a label change, calls SyncNodeLabels, which does what UpdateLoadBalancer does for every
// Service last seen with a node selector: nothing for those whose targets stay, one read
// and one update for the others.
//
// # Building it
//
// provider.New builds it over the provider's instrumented client. A program that wants
// only Service load balancers builds it with New over a cloudapi.LoadBalancerAPI (see the
// example); it then has none of the provider's rate limit, retries or metrics.
package loadbalancer
