package lbclass

// The node sync: which Nodes a load balancer targets and which Node changes reach every
// served load balancer, as in the upstream service controller.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/internal/servicenodes"
)

// nodePredicate says whether a Node is in a load balancer's node set.
type nodePredicate func(*corev1.Node) bool

// stableNodeSetPredicates are upstream's (internal/servicenodes): a Node is a target
// unless it is being deleted, excluded by label, or tainted for deletion by the cluster
// autoscaler.
var stableNodeSetPredicates = []nodePredicate{servicenodes.Stable}

// nodeIncludedPredicate: not labelled for exclusion (internal/servicenodes).
var nodeIncludedPredicate nodePredicate = servicenodes.Included

func listWithPredicates(lister corelisters.NodeLister, predicates ...nodePredicate) ([]*corev1.Node, error) {
	nodes, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return filterWithPredicates(nodes, predicates...), nil
}

func filterWithPredicates(nodes []*corev1.Node, predicates ...nodePredicate) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if respectsPredicates(n, predicates...) {
			out = append(out, n)
		}
	}
	return out
}

func respectsPredicates(node *corev1.Node, predicates ...nodePredicate) bool {
	for _, p := range predicates {
		if !p(node) {
			return false
		}
	}
	return true
}

// shouldSyncUpdatedNode is upstream's: an update of a Node reaches the load balancers
// when it changes whether the Node is excluded by label, or its provider ID. (Additions
// and deletions always do; the taint alone does not, as upstream.)
func shouldSyncUpdatedNode(oldNode, newNode *corev1.Node) bool {
	return respectsPredicates(oldNode, nodeIncludedPredicate) != respectsPredicates(newNode, nodeIncludedPredicate) ||
		oldNode.Spec.ProviderID != newNode.Spec.ProviderID
}

// nodesSufficientlyEqual reports whether two node sets are the same Nodes with the same
// provider IDs, which is all a load balancer is made from.
func nodesSufficientlyEqual(oldNodes, newNodes []*corev1.Node) bool {
	if len(oldNodes) != len(newNodes) {
		return false
	}
	ids := make(map[string]string, len(oldNodes))
	for _, n := range oldNodes {
		ids[n.Name] = n.Spec.ProviderID
	}
	for _, n := range newNodes {
		id, ok := ids[n.Name]
		if !ok || id != n.Spec.ProviderID {
			return false
		}
		delete(ids, n.Name)
	}
	return len(ids) == 0
}

func (c *Controller) nodeWorker(ctx context.Context, workers int) {
	for c.processNextNode(ctx, workers) {
	}
}

// processNextNode syncs every served load balancer's node set for one Node change; the
// Services whose update failed go back to the Service queue for a full sync.
func (c *Controller) processNextNode(ctx context.Context, workers int) bool {
	key, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(key)
	for retry := range c.syncNodes(ctx, workers) {
		c.serviceQueue.Add(retry)
	}
	c.nodeQueue.Forget(key)
	return true
}

// syncNodes updates the node set of every served load balancer, workers at a time, and
// returns the keys of the Services whose update failed.
func (c *Controller) syncNodes(ctx context.Context, workers int) sets.Set[string] {
	logger := klog.FromContext(ctx)
	services := c.servedServices()
	logger.V(2).Info("Syncing the node sets of the class's load balancers", "services", len(services))
	retry := sets.New[string]()
	var mu sync.Mutex
	workqueue.ParallelizeUntil(ctx, workers, len(services), func(i int) {
		if !c.nodeSyncService(ctx, services[i]) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		retry.Insert(services[i].Namespace + "/" + services[i].Name)
	})
	logger.V(2).Info("Synced the node sets of the class's load balancers", "services", len(services), "failed", retry.Len())
	return retry
}

// nodeSyncService gives one Service's load balancer the current node set if it differs
// from the last one given, and reports whether that failed and needs a retry.
func (c *Controller) nodeSyncService(ctx context.Context, svc *corev1.Service) (retry bool) {
	if svc == nil || !c.wantsLoadBalancer(svc) {
		return false
	}
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	nodes, err := listWithPredicates(c.nodeLister)
	if err != nil {
		logger.Error(err, "Listing the Nodes failed")
		return true
	}
	newNodes := filterWithPredicates(nodes, stableNodeSetPredicates...)
	oldNodes := filterWithPredicates(c.getLastSyncedNodes(svc), stableNodeSetPredicates...)
	// Stored before the update, as upstream: a failed update is retried by a full sync
	// of the Service, which stores its own node set.
	c.storeLastSyncedNodes(svc, newNodes)
	if nodesSufficientlyEqual(oldNodes, newNodes) {
		return false
	}
	if err := c.updateLoadBalancerHosts(ctx, svc, newNodes); err != nil {
		logger.Error(err, "Updating the load balancer's nodes failed")
		return true
	}
	return false
}

// updateLoadBalancerHosts calls UpdateLoadBalancer with the node set and records the
// outcome as an event. A failure is an error only while the load balancer exists.
func (c *Controller) updateLoadBalancerHosts(ctx context.Context, svc *corev1.Service, nodes []*corev1.Node) error {
	klog.FromContext(ctx).V(2).Info("Updating the load balancer's nodes", "service", klog.KObj(svc), "nodes", len(nodes))
	err := c.lb.UpdateLoadBalancer(ctx, c.opts.ClusterName, svc, nodes)
	if err == nil {
		if len(nodes) == 0 {
			c.recorder.Event(svc, corev1.EventTypeWarning, "UnAvailableLoadBalancer", "There are no available nodes for LoadBalancer")
		} else {
			c.recorder.Event(svc, corev1.EventTypeNormal, "UpdatedLoadBalancer", "Updated load balancer with new hosts")
		}
		return nil
	}
	if errors.Is(err, cloudprovider.ImplementedElsewhere) {
		return nil
	}
	if _, exists, getErr := c.lb.GetLoadBalancer(ctx, c.opts.ClusterName, svc); getErr != nil {
		klog.FromContext(ctx).Error(getErr, "Checking whether the load balancer exists failed", "service", klog.KObj(svc))
	} else if !exists {
		return nil
	}
	c.recorder.Eventf(svc, corev1.EventTypeWarning, "UpdateLoadBalancerFailed", "Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v", loggableNodeNames(nodes), len(nodes), err)
	return err
}

// maxNodeNamesToLog is how many Node names an event lists, as upstream.
const maxNodeNamesToLog = 20

func loggableNodeNames(nodes []*corev1.Node) []string {
	names := sets.New[string]()
	for _, n := range nodes {
		names.Insert(n.Name)
	}
	sorted := sets.List(names)
	if len(sorted) > maxNodeNamesToLog {
		return append(sorted[:maxNodeNamesToLog], fmt.Sprintf("<%d more>", len(sorted)-maxNodeNamesToLog))
	}
	return sorted
}
