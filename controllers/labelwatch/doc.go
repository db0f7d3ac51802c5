// Package labelwatch is the Node label watch: the controller that keeps the targets of
// the load balancers whose Service selects its Nodes by label (the node-selector
// annotation) in line with the Nodes' labels. The upstream service controller syncs a
// Service's load balancer when the node set changes (a Node added or deleted, a provider
// ID or the node.kubernetes.io/exclude-from-external-load-balancers label changed), but
// not when other labels change; Run watches the Nodes and, after a Node's labels change,
// hands the Nodes the service controller would pass to a Syncer
// (loadbalancer.LoadBalancer.SyncNodeLabels).
//
// A cloud-controller-manager runs it as the controller controllers.NodeLabelsController
// ("ccmkit-node-labels"), which controllers.With adds. A program that runs the service
// controller itself, without the command, starts it with Run, as
// examples/servicecontroller does: this package does not import
// k8s.io/cloud-provider/app.
package labelwatch
