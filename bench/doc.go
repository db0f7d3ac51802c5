// Command bench is the benchmark of ccmkit next to a naive pass-through provider (package
// baseline) on the same converged cluster, both driven by the real upstream controllers
// of k8s.io/cloud-provider (cloud node, node lifecycle, route and service controllers)
// over client-go's fake clientset and informers, against ccmkit's fake cloud, whose
// per-operation counters are where every call is counted. `make bench` runs the same
// harness (package bench/harness) from bench/peers, a module of its own, with two more
// columns: the AWS cloud provider's own code over an in-memory AWS that counts every AWS
// API request (bench/peers/awspeer says what it models and how the provider is
// configured), and ccmkit over a real cloud's API: the Hetzner adapter of examples/hcloud
// through the hcloud-go SDK over that example's Hetzner API mock, which counts every
// request (bench/peers/hcloudpeer). Every column's world holds the same instances, Nodes
// and Services; -peers picks the peer columns to run.
//
//	go run ./bench [-json FILE] [-nodes N] [-services S] [-page-size P] ...
//	go run ./bench -sweep [-sweep-nodes 1000,5000,20000] [-sweep-dir docs/benchmarks]
//	cd bench/peers && go run . [the same flags]
//
// It prints one table with each figure of every column, the ratio of ccmkit's figure to
// the best peer's (the lowest; "=" when both are 0, "∞" when only the peer's is), ccmkit's
// goal and whether ccmkit meets it, then the P1 of a column over a cloud with a request
// budget set against that budget, then the figures a peer wins with the peer's reason; with
// -json the same figures as JSON, one key per figure, each {"ccmkit": n, "baseline": n,
// "aws": n, "ccmkit+hcloud": n, "unit": "...", "best_peer": "...", "ccmkit_per_best_peer": r}
// with the goal and a note where there is one (a column's figure is null where it has
// none). A column of ccmkit over another cloud (harness.OnCcmkit: ccmkit+hcloud) is no
// peer: the ratio and "best peer" leave it out.
// Progress goes to stderr. The Nodes start as the cloud node and route controllers leave
// them (provider ID, labels, the provider's addresses and additional labels,
// NetworkUnavailable=False), the Services as the API server defaults them, with their
// finalizer and load balancer status, and the cloud with a load balancer per Service and
// a route per Node made by the provider under test, and what that provider wrote on the
// Services (ccmkit's load balancer ID annotation and LoadBalancerReady condition); the fake
// clientset drops Events. As in the cloud-controller-manager, every provider is given a
// client of the clientset (Initialize) and, if it uses informers
// (cloudprovider.InformerUser), the informers. ccmkit runs without a client-side rate limit by default (-qps
// +Inf: cloudAPI.unlimited), as the peers have none. The figures:
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
//     cloud call (a peer is timed on -p3-subset Nodes and scaled linearly, and says so).
//     A peer whose provider waits in real time per call (harness.RealTimer: the AWS
//     provider's batcher) has P1_outage counted with a few Nodes NotReady (as many as a
//     MonitorNodes pass asks about in a second, at most -p3-subset) and its
//     MonitorNodes passes' calls scaled linearly to the zone's, and says so.
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
//     P6_cpu is P6 as CPU time: the process's user and system time (getrusage
//     RUSAGE_SELF) over the benchmark's last, longest round divided by its calls. The
//     controllers are stopped by then, so it is the call's own work and the garbage
//     collection it causes; unlike wall time it does not count the time other processes
//     hold the cores, though it still rises when they contend for the caches.
//     P2_settings_calls and P6_settings are P2's calls and P6 of a converged Service with
//     every setting that costs work (a node selector every Node meets, session affinity,
//     HTTP and HTTPS ports with certificates, the hostname annotation, an
//     adapter-declared setting; every Service of the world has that setting's default),
//     whose load balancer is created for it and deleted afterwards.
//   - node_add: cloud writes, and time, from a new Node's registration until every load
//     balancer has it. With -node-repeats N, node_add and node_delete run N times, each
//     with the controllers started afresh on the world's Nodes (whose startup takes the
//     instance out of, or puts it back in, every load balancer before the run), and their
//     seconds are the median (each run's seconds, in order, on a line of their own below
//     the table); their calls are the first run's.
//   - node_delete: a Node's instance deleted in the cloud and the Node NotReady (its kubelet
//     went with it): the cloud writes until the cloud is quiet (the calls by operation in
//     the report) as the node lifecycle
//     controller (a pass every 5 s of virtual time) finds the instance gone and deletes the
//     Node and the service controller takes it out of every load balancer; the time from
//     the NotReady until every load balancer was written without it; and the load
//     balancers that still have it at the end (0).
//   - node_add_groups: node_add over a cloud with target groups (cloudapi.TargetGroupAPI),
//     ccmkit's alone: a second converged cluster is built with the fake cloud's
//     capabilities.targetGroups on from the start, so that ccmkit (loadBalancer.targetGroups,
//     on by default) creates the load balancers in their shared target group and the
//     groups exist before the Node; then a Node is added as in node_add.
//     node_add_groups_calls counts every call (the calls by operation in the report and the
//     log), node_add_groups_seconds the time until every load balancer reaches the new
//     instance (through its group, as the tap sees the group's write), and
//     node_add_groups_lbs the load balancers that reach it at the end (a load balancer
//     that names a group reaches that group's members). The goals: calls ≤ ⌈(N+1)/P⌉ +
//     ⌈S/P⌉ + 1 (the instance list that initializes the Node, as in node_add, then at most
//     a list of the groups and one group write, no load balancer call) and under a
//     second. The peers have no target groups: beside these figures stand their
//     node_add's (every call, its seconds, its load balancers).
//
// With -sweep it runs ccmkit and the baseline (not the peers) side by side at each size
// of -sweep-nodes (N Nodes, S = N/5 Services, the other flags as given; the baseline only
// up to -sweep-baseline-nodes, 5,000 by default: building its cluster and adding a Node
// take time that grows with N × S), prints each size's table, then the cost curve: each
// figure below by size, ccmkit / baseline, and ccmkit's goals checked at the largest
// size. It writes the curve to -sweep-dir/sweep.json (the sizes with ⌈N/P⌉ and
// ⌈S/P⌉ and each figure of both providers, with the calls by operation where it counts
// calls; the goals, met or not, with what the figure is made of); hack/benchplot draws
// it as SVGs beside it (`make bench ARGS=-sweep` does both). The sweep's figures are the
// table's:
//
//   - quiet_calls_per_min, outage_calls_per_min: P1 and P1_outage, every call counted.
//   - restart_reads: the reads of P4.
//   - node_add_calls: every call of node_add, reads and writes.
//   - node_add_groups_calls: every call of node_add_groups (the baseline's: its node_add).
//   - retained_heap_mb: P5.
//   - ensure_cpu_ms: P6_cpu.
//
// The goals at the largest size (20,000 Nodes, 4,000 Services by default) are: quiet ≤ 3 +
// ⌈N/P⌉/5 calls/min (an instance list every 5 minutes and little else), retained heap
// ≤ 60 MB, converged EnsureLoadBalancer ≤ 4 ms of CPU, restart reads ≤ ⌈S/P⌉ + ⌈N/P⌉ + 1.
// For a missed goal the report says what the figure is made of: the calls by operation,
// or for heap and CPU what 1,000 more Nodes (and 200 Services) added between the two
// largest sizes. At 20,000 Nodes the world holds 4,000 load balancers of 20,000 targets
// each: the sweep needs about 6 GB of memory.
package main
