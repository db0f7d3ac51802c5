// Package servicenodes says, once, which Nodes the upstream service controller
// (k8s.io/cloud-provider/controllers/service) passes to a cloud provider's LoadBalancer:
// its stable node set predicates. Package loadbalancer's Node label watch and package
// lbclass's controller, which both stand in for the service controller, use it.
package servicenodes

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a Node it is about to
// delete: upstream's k8s.io/cloud-provider/controllers/service.ToBeDeletedTaint, which
// this package's test holds it to. It is not imported, so that a LoadBalancer does not
// link the service controller and its metrics.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// Included reports whether node is not excluded from load balancers by the
// node.kubernetes.io/exclude-from-external-load-balancers label (corev1.LabelNodeExcludeBalancers):
// any value but a false boolean excludes, as upstream.
func Included(node *corev1.Node) bool {
	v, ok := node.Labels[corev1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	exclude, err := strconv.ParseBool(v)
	return err == nil && !exclude
}

// Stable reports whether the service controller passes node: it is not being deleted, is
// Included, and is not tainted ToBeDeletedTaint. Readiness does not count: a NotReady
// Node stays a target, and the load balancer's health check decides.
func Stable(node *corev1.Node) bool {
	return node.DeletionTimestamp.IsZero() && Included(node) &&
		!slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == ToBeDeletedTaint })
}

// Filter returns the Stable nodes of nodes, in order.
func Filter(nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if Stable(n) {
			out = append(out, n)
		}
	}
	return out
}
