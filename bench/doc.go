// Command bench is `make bench`: it measures ccmkit next to a naive pass-through
// provider (package baseline) on the same converged cluster, both driven by the real
// upstream controllers of k8s.io/cloud-provider (cloud node, node lifecycle, route and
// service controllers) over client-go's fake clientset and informers, against the fake
// cloud, whose per-operation counters are where every call is counted.
//
//	go run ./bench [-json FILE] [-nodes N] [-services S] [-page-size P] ...
//
// It prints one table with each figure of both providers, ccmkit's goal and whether ccmkit
// meets it; with -json the same figures as JSON, one key per figure, each
// {"ccmkit": n, "baseline": n, "unit": "..."} with the goal and a note where there is one.
// Progress goes to stderr. The Nodes start as the cloud node and route controllers leave
// them (provider ID, labels, the provider's addresses, NetworkUnavailable=False), the
// Services with their finalizer and load balancer status, and the cloud with a load
// balancer per Service and a route per Node made by the provider under test; the fake
// clientset drops Events. ccmkit runs without a client-side rate limit by default (-qps
// +Inf: cloudAPI.unlimited), as the baseline has none. The figures:
//
//   - P1, P1_outage: cloud calls per minute of a quiet cluster over simulated minutes, at
//     the upstream default periods (node status every 5 min, node monitor every 5 s, route
//     reconcile every 10 s), with every Node Ready and with a zone's Nodes NotReady. The
//     passes are called in virtual-time order and the provider's clock
//     (provider.Options.Clock, a k8s.io/utils/clock/testing fake clock) is moved to each
//     pass's time: UpdateNodeStatus and MonitorNodes directly; the route controller's
//     reconcile, which is not exported, runs in its own Run loop behind a gate that
//     releases one reconcile per tick.
//   - P2: reads and writes of a converged EnsureLoadBalancer, writes of an
//     UpdateLoadBalancer with unchanged nodes, with ccmkit's load balancer snapshot fresh
//     (the virtual clock stands still). When it has expired, the first call after expiry
//     lists the cluster's load balancers once (⌈S/page size⌉ pages) for every Service.
//     P6 is measured the same way.
//   - P3: wall time of one UpdateNodeStatus over every Node with latency added to every
//     cloud call (the baseline is timed on a subset and scaled linearly, and says so).
//   - P4: cloud reads and writes of a restart over the converged cluster until every
//     controller has synced once. The Services reach the informers once the service
//     controller's node sync has handled the Nodes' add events: upstream's node sync reads
//     the service cache without the lock under which the service sync fills it, a data
//     race that the race detector reports; with no Service known those node syncs make no
//     call, so the count is the same.
//   - P5: the heap retained by the provider alone after a restart.
//   - P6: CPU and allocations per converged EnsureLoadBalancer (testing.Benchmark), the
//     fake cloud's work included, with the Nodes in a shuffled order as the service
//     controller's lister hands them out; P6_sorted_nodes is the same with sorted Nodes.
//     P2_settings_calls and P6_settings are P2's calls and P6 of a converged Service with
//     every setting that costs work (a node selector every Node meets, session affinity,
//     HTTP and HTTPS ports with certificates, the hostname annotation, an
//     adapter-declared setting; every Service of the world has that setting's default),
//     whose load balancer is created for it and deleted afterwards.
//   - node_add: cloud writes, and time, from a new Node's registration until every load
//     balancer has it.
package main
