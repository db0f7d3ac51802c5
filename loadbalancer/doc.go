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
// user can edit. Nothing without both tags is read, changed or deleted. Before it
// creates, EnsureLoadBalancer has looked up by the tags; when a create fails ambiguously
// (ErrTransient: the answer was lost) or with a conflict, it looks again and adopts what
// an earlier create made, so a Service never gets two load balancers. Should a backend
// have made two anyway, EnsureLoadBalancer keeps the one whose address the Service's
// status publishes (else the first by ID) and deletes the others.
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
//     kube-proxy sends in-cluster traffic through the load balancer. A cloud hostname
//     the API server would refuse in the status is an error.
//   - Session affinity: spec.sessionAffinity ClientIP with its timeout
//     (spec.sessionAffinityConfig.clientIP.timeoutSeconds, 10800 s when absent).
//   - Annotations under the configured prefix: see Annotations. A malformed value is an
//     *AnnotationError naming the annotation, the value and what is allowed, which the
//     service controller shows as a Warning event; an unknown key under the prefix is
//     logged as a probable typo.
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
// an unchanged node set likewise. A changed node set, port or annotation is one read by
// owner tags and one UpdateLoadBalancer call whose Changes name what changed, in place,
// so the addresses stay. Only a switch between internal and public replaces the load
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
// # Node labels
//
// The service controller calls UpdateLoadBalancer when the node set changes, but not when
// only a Node's labels change, on which a node selector's targets depend.
// WatchNodeLabels (which provider.Cloud's Initialize starts) watches the Nodes and, after
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
