// Package baseline is the naive cloud provider that `make bench` compares ccmkit with: a
// cloudprovider.Interface over a cloudapi.Client that passes every call straight to the
// cloud, the way most cloud-controller-managers start out. It keeps no cache and no
// state between calls, and it is correct: driven by the upstream controllers it leaves
// the cloud in the same state as ccmkit (every Service's load balancer with its ports and
// every Node as a target, one route per Node's pod CIDR), only at a higher price.
//
// What each call costs:
//
//   - InstancesV2: one GetInstance per lookup by provider ID. A Node without a provider
//     ID is found by name, and the cloud has no get-by-name, so that is a list of every
//     instance (all pages) per lookup.
//   - LoadBalancer: a Service's load balancer is found by listing with its owner tags
//     (cloudapi.TagCluster, cloudapi.TagService). EnsureLoadBalancer and
//     UpdateLoadBalancer read the load balancer, set the listeners and targets on what
//     they read and write the whole load balancer back: one UpdateLoadBalancer per call,
//     also when nothing changed. That read-modify-write is what a naive CCM does; it is
//     the cost the benchmark shows next to ccmkit's "write only the difference".
//   - Routes: ListRoutes lists the cluster's routes by tag (all pages); CreateRoute finds
//     the target instance by name (a list of every instance) and creates the route;
//     DeleteRoute deletes by ID.
//
// Instances, Zones and Clusters are not offered: the upstream controllers use
// InstancesV2 when it is there.
package baseline
