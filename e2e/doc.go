// Package e2e is ccmkit's end-to-end suite: the cloud-controller-manager's production code
// path (k8s.io/cloud-provider's command with ccmkit's provider registered, as in
// examples/ccm) against a real kube-apiserver and etcd on 127.0.0.1, over the fake cloud
// of testdata/cloud.yaml. Each scenario starts its own control plane and CCM (package
// harness), acts as kubelets and users do through the API, and asserts on the Kubernetes
// objects and on the fake cloud's state. Most scenarios run twice: on a healthy cloud and
// with throttling, transient errors, timeouts and lost write answers injected; after every
// scenario the faults stop and the cloud must hold no duplicate or orphaned load balancer
// and no stale route. Ownership is followed through the fake's history by the tags: an
// update may adopt or release a load balancer, and only load balancers tagged with the
// cluster can be orphans (a released or an operator's load balancer is no cluster's).
// The cloud's new load balancers are active at once, but in the scenarios of the two
// controllers that wait for one still provisioning (TestLoadBalancerLifecycle for the
// upstream service controller, TestLoadBalancerClass for the class controller) and of
// the state file: there a new load balancer answers its first read as provisioning, and
// the controller comes back after loadbalancer.ProvisioningRetryDelay (5 s).
//
// share_test.go's TestServicesShareALoadBalancer runs Services of one share
// (loadbalancer.AnnotationShare): one load balancer and one address, a port another
// Service has left out with a ShareConflict event, a disagreeing Service refused without
// a write, no write after a restart, deleting removes only a Service's listeners and the
// last one deletes the load balancer (about 12 s, both modes).
//
// Two scenarios run the cloud-controller-manager a user runs instead: examples/ccm, built
// once per test binary (harness.BuildCCM) and started as its own process under
// --cloud-provider=ccmkit, on the same cloud with a state file (the `fake:` section's
// stateFile), which the test reads through a fake.Cloud of its own. In
// statefile_test.go, TestCCMProcessKilledKeepsEveryLoadBalancer kills the process with
// SIGKILL five times at seeded moments (CCMKIT_E2E_SEED, default 1) while it creates the
// load balancers of fourteen Services, one deleted and two created while it is down, and
// starts it again: no Service's address ever changes once assigned, no Service ever has
// two load balancers or a replaced one, no load balancer is created twice (the file's ID
// sequence), the deleted Service's load balancer and finalizer go, and the file holds
// exactly one load balancer per Service, with its addresses, and a route per pod CIDR.
// TestCCMFailoverWithASharedStateFile runs two leader-elected replicas on one state file
// and kills the leader twice: the standby, which opened the file before the leader
// created the load balancers, takes them over with the same addresses. They take about
// 30 and 45 seconds on 2 cores.
//
// failover_test.go proves high availability as deploy/ runs it: examples/restcloud and
// its restcloud-server are built once (harness.Build) and run as processes (StartProcess):
// the server over a state file with seeded faults, two CCMs with deploy/base's flags and a
// short lease against it. TestRestcloudFailoverUnderChurn kills the leader with SIGKILL at
// seeded moments (CCMKIT_E2E_FAILOVER_ROUNDS, default 4; CCMKIT_E2E_SEED) under Service
// and Node churn with throttling, lost write answers and errors, and checks the server's
// load balancer history (never two per Service, nothing created or updated twice, only
// deleted Services' deleted), the cloud (one per Service with its first address, every
// Node a target, no orphan), no Node deleted whose instance exists, and exit 0 on SIGTERM
// (about 70 s). TestRestcloudTakeoverCost measures the takeover with nothing changing, with
// the test's lease and deploy/'s: its time, logged, and its cloud calls, reads within
// ⌈S/P⌉ + ⌈N/P⌉ + 1 and no write (about 65 s).
//
// hcloud_test.go runs examples/hcloud's CCM (examples/ccm over the Hetzner adapter, built by
// harness.Build; this module requires examples/hcloud through a replace directive) as a
// process against hcloudmock, the Hetzner API mock, served in the test's process with a
// rate limit the CCM overdraws (5 requests, 1 a second). TestHcloudCCMProcessOverTheMock:
// Nodes initialized from servers, a LoadBalancer Service with the adapter's settings as
// annotations given its load balancer's address, a Node added as a target although the
// first add_target action fails, and after a SIGKILL and a start again a full resync with
// no write to the mock while the Service keeps its address (about 60 s, the CCM's build
// included).
//
// targetgroups_test.go runs the in-process CCM on a fake cloud with target groups
// (`capabilities: {targetGroups: true}`): eight load balancers in two groups, a Node added
// under the upstream service controller's node sync is one group list and one group write
// and no load balancer write, a restart writes nothing, and the groups go with the last
// load balancer (about 40 s, both modes).
//
// admission_test.go applies the admission policies of restcloud's configuration
// (loadbalancer.AdmissionPolicy) to a real kube-apiserver, without a CCM, type-checks
// them against the Service's schema from the server's OpenAPI: malformed
// annotation values and contradictions are refused, valid Services admitted, an unknown
// key admitted with a warning (about 10 s).
//
// Run it from the repository root with `make e2e` (part of `make test`): it builds the
// control plane first (`make controlplane`). The suite does not run under -race: the
// upstream service controller has a data race of its own between its node sync and
// service sync, which the race detector reports in the in-process CCM; ccmkit's own code
// is race-tested by the unit suite.
package e2e
