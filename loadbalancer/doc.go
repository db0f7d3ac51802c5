// Package loadbalancer implements cloudprovider.LoadBalancer over a
// cloudapi.LoadBalancerAPI: it turns a Service of type LoadBalancer and the cluster's
// Nodes into a desired cloudapi.LoadBalancerSpec, compares it with what the cloud has and
// writes only the difference, in place (only a switch between internal and public, or an
// adapter setting declared Replace, replaces a load balancer).
//
// # Promises
//
//   - Ownership is data: a Service's load balancer is the one tagged with the cluster ID
//     (cloudapi.TagCluster) and the Service's UID (cloudapi.TagService). Nothing else is
//     changed or deleted, but a load balancer without any of ccmkit's tags that the
//     Service adopts with its load-balancer-id annotation, or takes over from the
//     cloud's earlier cloud-controller-manager by its mark (Aliases.OwnerTag, one list
//     before a create; takeover.go); one owned elsewhere is ErrOwnedElsewhere, a mark
//     that cannot be taken over ErrTakeoverRefused, and neither is ever a reason to
//     create a second load balancer. An adopted load balancer keeps what its earlier
//     owner set that the Service does not ask for (cloudapi.TagAdopted). Every write
//     passes one guard (owned.go).
//   - Sharing (share.go; its rules are internal/plan's pure functions): Services that
//     name one share (AnnotationShare) get one load balancer, owned by the share
//     (cloudapi.TagShare), each listener by its Service (its name begins with the
//     Service's UID). What is not a listener must agree (ErrShareConflict); a port
//     another Service of the share has is not added (a Service holding none of its
//     ports is ErrPortsTaken) and goes to it in the write that frees it; the last
//     Service out, counted in the share's own scope, deletes it. The calls of a share's
//     Services run as the share: one lock, one snapshot entry, one write per node sync.
//   - One load balancer per Service (or share): a create is never repeated after an ambiguous answer
//     or a conflict; the Service's load balancer is looked up again and adopted, and
//     duplicates a backend made anyway are deleted, never the one kept.
//   - Every write is based on a fresh read; a cloud error is never "absent". A converged
//     call costs no load balancer call while the snapshot of the cluster's load balancers
//     is no older than Options.MaxAge, and a restart ⌈S/Options.PageSize⌉ lists.
//   - A node sync (UpdateLoadBalancer for every Service after a Node change) costs one
//     shared list of the cluster's load balancers and one write per load balancer whose
//     targets change; with target groups, one write per group. New Nodes without a
//     provider ID yet cost the one instance list that the node controller's lookup of
//     them shares; a Node that never gets one, a list per cache age at most
//     (Options.NodeProviderID).
//   - Bad input is the Service's error (an *AnnotationError names the annotation, the
//     value and what is allowed) or a Warning event, never a silent default: a malformed
//     annotation still lets the node set reach the targets. An adapter's aliases
//     (Aliases: the keys of its cloud's earlier cloud-controller-manager) read exactly as
//     the annotations they stand for; two spellings of one annotation that disagree are
//     malformed (ErrConflictingAnnotations), never a guess which one wins.
//   - The Service says what happened (Options.Services; servicestatus.go): its load
//     balancer's cloud ID in StatusAnnotationLoadBalancerID, outside the annotation
//     prefix and never read, and the condition ConditionLoadBalancerReady with a Reason
//     constant, each written only when it changes; a throttled sync is a Warning event
//     EventCloudThrottled, at most one a minute per Service. A failed write is logged,
//     never the call's error, and the next is tried a minute later.
//
// # Where each concern lives
//
// A call reads, plans, applies and reports, in that order, on one path (reconcile.go:
// GetLoadBalancer, EnsureLoadBalancer, UpdateLoadBalancer in nodesync.go,
// EnsureLoadBalancerDeleted and SyncNodeLabels are entries into reconcile, which holds the
// owner's lock, answers from the snapshot or reads afresh, and records the cloud's answer
// or forgets the entry). Each step is a type of its own:
//
//   - Read: intents (intents.go) reads what a Service asks, annotation by annotation, and
//     whom its load balancer belongs to (owner: the Service, or its share), and whether a
//     share has other Services; parseAnnotations (parse.go) is the one reading of all of
//     them, aliases (aliases.go) included. What the cloud has is the snapshot
//     (snapshot.go; find, trusted and the fresh read in reconcile.go; marked in
//     takeover.go, the list by the earlier cloud-controller-manager's mark).
//   - Plan: the planner (planner.go) makes no cloud call: translate (translate.go,
//     defaults.go) is a pure function from a Service, its Nodes' targets (targets.go) and
//     the adapter's declared settings (Setting, settings.go) to the spec and a typed list
//     of problems; the rules of shares and duplicates are package internal/plan's (who
//     owns a listener, joining, leaving and the last one out, the ports a member waits
//     for, which duplicate is kept), with the members in the shareBook (share.go); the
//     planner also decides when a change takes a replacement. The creation brake
//     (creationbrake.go) decides whether a Service with an address may get a new load
//     balancer. The annotations are Annotations (annotations.go; the README's reference is
//     checked against it).
//   - Apply: the writer (owned.go, write.go) is the one code that writes to the cloud: every
//     write passes one guard (owned.go); it creates, updates, replaces, deletes and
//     releases, and acquires and drops target groups. ensure.go sequences
//     EnsureLoadBalancer's write and adoption (by ID, or a takeover by mark),
//     share.go leaving a share.
//   - Report: the reporter (report.go, servicestatus.go, status.go) is the one that tells a
//     Service what its syncs found out: the status published, the status annotation, the
//     condition and the events, each once per change.
//   - The node sync's shared list (nodesync.go: when a node set arrived, and which list
//     may be the base of a write); the targets and their memo (targets.go).
//   - Target groups (Options.TargetGroups; the store in internal/targetgroups, driven by
//     the writer; groups.go here): the load balancers that want the same Nodes name one group, and a Node
//     added or removed is one write per group. Unused groups are deleted at once when
//     their last load balancer leaves, and otherwise by a collection at the end of a call
//     or from CollectGroups, by the one rule the sweeper applies too.
//   - Names (names.go): the cloud names of the cluster's load balancers and target
//     groups, valid names for any cluster ID and never another cluster's; a share's load
//     balancer released with keep-on-delete is renamed, so that the share's next one
//     takes its name. Ownership is by tags, never by name.
//   - The admission policy (admission.go; its CEL in admissioncel.go): AdmissionPolicy
//     writes ValidatingAdmissionPolicies with which the API server refuses malformed
//     annotations at apply time, from the same declarations the translation checks
//     (each Annotation's CEL check beside its parser, a Setting's Values, the cloud's
//     health check unit), the aliases' legacy keys included.
//   - Node labels (nodelabels.go): SyncNodeLabels, which the Node label watch
//     (controllers/labelwatch) calls, syncs the targets of the Services it tracks with a
//     node selector (tracked) when only a Node's labels change, which the service
//     controller does not.
//
// # Building it
//
// provider.New builds it over the provider's instrumented client. A program that wants
// only Service load balancers builds it with New over a cloudapi.LoadBalancerAPI (see the
// example); it then has none of the provider's rate limit, retries or metrics.
package loadbalancer
