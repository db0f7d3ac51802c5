// Package awspeer is the AWS cloud provider's column of `make bench`: the provider of
// k8s.io/cloud-provider-aws (package pkg/providers/v1), its own code unchanged, over an
// in-memory AWS that holds the benchmark's world and counts every AWS API request it
// answers.
//
// The provider takes its AWS clients through its Services interface (EC2, classic ELB,
// ELBv2, instance metadata, KMS); this package implements them over one in-memory state:
//
//   - EC2: the world's instances (running, in the VPC's subnet of their zone, with the
//     cluster tag, their private address and a resource-based private DNS name), the
//     three zones, a public subnet per zone tagged for ELBs, the VPC's main route table
//     (tagged with the cluster, an internet gateway route) that also holds the pod
//     routes, and security groups. DescribeInstances is counted as the SDK sends it: one
//     request per 1,000 instances (the MaxResults the provider's SDK wrapper sets) without
//     instance IDs, one request with them; other lists are answered in one request.
//   - Classic ELB: load balancers with their listeners, subnets, security groups,
//     registered instances, health check, attributes and tags. An answer the real API
//     normalizes (attributes, health check) is what was last written, the most favourable
//     answer for the provider: a converged load balancer compares equal.
//   - Metadata: the instance ID of instance 0 (the provider's own instance) and the region.
//   - ELBv2 and KMS: every call fails with UnsupportedOperation (counted); the world's
//     Services are classic load balancers, which use neither. So do the two EC2 calls
//     the world never needs: RevokeSecurityGroupIngress and DeleteTags.
//
// Not modelled: quotas (a route table holds at most 1,000 routes on AWS; the in-memory one
// has no limit, so the route controller runs at every size, as the code is written),
// request throttling, eventual consistency. The provider reads the wall clock, not the
// benchmark's virtual clock: its caches (the instance list its load balancers use) and its
// DescribeInstances batcher (which waits 100 ms for more requests before it sends one)
// run in real time.
//
// Why the column does not run on virtual time: the provider's clock cannot be injected.
// It calls package time itself, with no clock in its Cloud, its Config or its Services
// interface: time.Now for the instance cache's age (instances.go, instanceCache), two
// time.NewTimer in the batcher that the InstancesV2 lookups by ID go through
// (batcher.Batcher.waitForIdle, 100 ms idle and 1 s at most, describe_instance_batch.go),
// and time.Sleep between retries of a security group create (aws.go). What the benchmark
// injects (the AWS clients, the metadata service) never sees those waits. The one way to
// run this code on a fake clock without changing it is testing/synctest, whose bubble
// fakes package time for the goroutines inside it; it needs a *testing.T and every
// goroutine the column talks to inside the bubble (the fake clientset, its informers and
// the upstream controllers, each with the benchmark's own fake clock beside synctest's),
// and bench/peers is a program run with go run, not a test. So P1_outage and P3 are
// measured on a subset of Nodes (-p3-subset) and scaled linearly (each NotReady Node's
// lookups are the same calls, sent one after another by the controllers), and the report
// says where a figure is extrapolated; P1 and P4 are measured whole, in real time, which
// is why this column takes about an hour at 5,000 Nodes.
//
// The configuration is the one the provider's documentation gives a large cluster
// (Config): KubernetesClusterID, resource-based node names (the Node is named after its
// instance ID, so the provider finds the instance without a lookup by name), one shared
// security group for every ELB (ElbSecurityGroup, instead of a group per load balancer,
// for AWS's limit of security groups) and DisableSecurityGroupIngress (instead of a rule
// per load balancer on the nodes' group, for AWS's limit of rules per group).
package awspeer
