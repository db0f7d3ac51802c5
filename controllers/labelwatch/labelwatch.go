package labelwatch

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/internal/servicenodes"
)

// Syncer syncs the targets of the Services that select their Nodes by label with the
// Nodes' labels. *loadbalancer.LoadBalancer is one.
type Syncer interface {
	// SyncNodeLabels brings the targets of the Services that select their Nodes by label
	// in line with nodes, the Nodes the service controller would pass. An error makes Run
	// try again after a backoff.
	SyncNodeLabels(ctx context.Context, nodes []*corev1.Node) error
}

// queueKey is the one key of Run's queue: every change asks for the same sync of every
// Service, so a burst of changes is one sync.
const queueKey = "node-labels"

// Run keeps the targets of the Services with a node selector in line with their Nodes'
// labels until ctx ends, and returns once its goroutines have stopped. It watches the
// cluster's Nodes through client (which needs list and watch of Nodes) and, once its cache
// has synced and after each change of a Node's labels, calls syncer.SyncNodeLabels with
// the Nodes the service controller would pass: not being deleted, not labelled
// node.kubernetes.io/exclude-from-external-load-balancers, not tainted
// ToBeDeletedByClusterAutoscaler. Changes that come while a sync runs are synced together
// after it; a sync that fails is logged and retried with client-go's default controller
// backoff (5 ms doubling to 1000 s). Its queue is named ccmkit_node_labels (in the
// workqueue metrics, when a provider of them is registered), its log lines carry the
// logger name node-labels, and its cache keeps only what the targets depend on of each
// Node (name, labels, provider ID, taints, deletion).
func Run(ctx context.Context, client kubernetes.Interface, syncer Syncer) {
	logger := klog.FromContext(ctx).WithName("node-labels")
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(slimNode))
	nodes := factory.Core().V1().Nodes()
	informer, lister := nodes.Informer(), nodes.Lister()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "ccmkit_node_labels"})
	defer queue.ShutDown()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			c, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && !maps.Equal(o.Labels, c.Labels) {
				queue.Add(queueKey)
			}
		},
	})
	if err != nil { // only when the informer has stopped already
		logger.Error(err, "Not watching Node labels: the targets of Services with a node selector follow label changes only at the service controller's next sync")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	stopped := make(chan struct{})
	defer func() { <-stopped }()
	go func() {
		defer close(stopped)
		<-ctx.Done()
		queue.ShutDown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	queue.Add(queueKey) // a change before the first list came as no update
	for syncNext(ctx, logger, queue, lister.List, syncer.SyncNodeLabels) {
	}
}

// syncNext takes the next request off the queue and syncs the Nodes list lists (those
// the service controller would pass); false when the queue is shut down.
func syncNext(ctx context.Context, logger klog.Logger, queue workqueue.TypedRateLimitingInterface[string],
	list func(labels.Selector) ([]*corev1.Node, error), sync func(context.Context, []*corev1.Node) error,
) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	all, err := list(labels.Everything())
	if err == nil {
		err = sync(ctx, servicenodes.Filter(all))
	}
	if err != nil {
		logger.Error(err, "Syncing the targets of Services with a node selector after Node labels changed; retrying", "retries", queue.NumRequeues(key))
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// slimNode is the informer's transform: it keeps of a Node only what the targets depend
// on, so that the watch's cache of a large cluster stays small.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil // a deletion's final state unknown: as it is
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			Labels: n.Labels, DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{ProviderID: n.Spec.ProviderID, Taints: n.Spec.Taints},
	}, nil
}
