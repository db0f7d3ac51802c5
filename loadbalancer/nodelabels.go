package loadbalancer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/servicenodes"
)

// A Service's node-selector annotation makes its targets depend on the Nodes' labels. The
// service controller calls UpdateLoadBalancer when the node set changes (a Node added or
// deleted, a provider ID or the node.kubernetes.io/exclude-from-external-load-balancers
// label changed), but not when other labels change: the targets would stay until the
// Service or the node set next changes. SyncNodeLabels, and WatchNodeLabels, which calls
// it on every label change, close that gap for the Services that select their Nodes.

// tracked holds the Services last seen with a node-selector annotation, by UID: those
// whose targets SyncNodeLabels keeps in line with their Nodes' labels. It has its own
// lock.
type tracked struct {
	// selects reports whether a Service has a node-selector annotation (as the
	// LoadBalancer reads it: its prefix and aliases).
	selects func(svc *corev1.Service) bool

	mu        sync.Mutex
	selecting map[string]*corev1.Service
}

// track remembers svc when it has a node-selector annotation, else forgets its UID. The
// caller holds the Service's lock.
func (t *tracked) track(svc *corev1.Service) {
	selects := t.selects(svc)
	t.mu.Lock()
	defer t.mu.Unlock()
	if selects {
		t.selecting[string(svc.UID)] = svc
	} else {
		delete(t.selecting, string(svc.UID))
	}
}

// untrack forgets the Service with UID uid.
func (t *tracked) untrack(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.selecting, uid)
}

// get returns the Service with UID uid as last tracked; nil when it is not.
func (t *tracked) get(uid string) *corev1.Service {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.selecting[uid]
}

// uids returns the UIDs of the tracked Services, sorted: each sync in turn, by UID.
func (t *tracked) uids() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.selecting))
}

// size returns how many Services are tracked, for tests of what is remembered.
func (t *tracked) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.selecting)
}

// forget forgets everything the LoadBalancer remembers of the Service with UID uid (it
// wants no load balancer, and has none left or is being deleted): whether it selects its
// Nodes, what was last reported about it, and its membership of every share; the
// reporter forgets what it told the Service itself (reporter.tell). Called once its
// cleanup succeeded (and as its deletion begins), so that what is kept per Service does
// not grow with churn.
func (l *LoadBalancer) forget(uid string) {
	l.tracked.untrack(uid)
	l.report.untrack(uid)
	l.shares.leaveAllBut(uid, "")
}

// SyncNodeLabels brings the targets of the Services that select their Nodes by label in
// line with nodes, which must be the Nodes the service controller would pass (see
// WatchNodeLabels). For each Service that EnsureLoadBalancer or UpdateLoadBalancer last
// saw with a node-selector annotation it does what UpdateLoadBalancer does, which costs
// no cloud call while the targets stay. A Service without a load balancer (yet) is
// skipped, and what is wrong with a Service (a malformed annotation) is left to the
// service controller's sync, which reports it; the other failures are returned, joined.
func (l *LoadBalancer) SyncNodeLabels(ctx context.Context, nodes []*corev1.Node) error {
	var errs []error
	for _, uid := range l.tracked.uids() {
		// The Service as last tracked (its sync is not the service controller's node sync:
		// its Node objects are WatchNodeLabels' own, and counting them as a node set that
		// arrived would make the service controller's next node set arrive again, a new
		// list, for nothing); nothing when it is tracked no more.
		svc := l.tracked.get(uid)
		if svc == nil {
			continue
		}
		_, _, err := l.updateNodes(ctx, svc, nodes, false)       // what is wrong with the Service is the service controller's to report
		if err != nil && !errors.Is(err, cloudapi.ErrNotFound) { // none yet: the service controller creates it
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// serviceControllerNodes returns the nodes that the service controller passes to
// EnsureLoadBalancer and UpdateLoadBalancer (internal/servicenodes).
func serviceControllerNodes(all []*corev1.Node) []*corev1.Node { return servicenodes.Filter(all) }

// nodeLabelsKey is the one key of WatchNodeLabels' queue: every change asks for the same
// sync of every Service, so a burst of changes is one sync.
const nodeLabelsKey = "node-labels"

// WatchNodeLabels keeps the targets of the Services with a node selector in line with
// their Nodes' labels, until ctx ends. It watches the cluster's Nodes through client (which
// needs list and watch of Nodes) and, after a Node's labels change, calls SyncNodeLabels
// with the Nodes the service controller would pass: not being deleted, not labelled
// node.kubernetes.io/exclude-from-external-load-balancers, not tainted
// ToBeDeletedByClusterAutoscaler. Changes that come while a sync runs are synced together
// after it; a sync that fails is retried with client-go's default controller backoff
// (5 ms doubling to 1000 s). Its cache keeps only what the targets depend on of each Node
// (name, labels, provider ID, taints, deletion). It returns at once; its goroutines stop
// when ctx ends. The controller controllers.NodeLabelsController starts it.
func (l *LoadBalancer) WatchNodeLabels(ctx context.Context, client kubernetes.Interface) {
	logger := klog.FromContext(ctx).WithName("node-labels")
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(slimNode))
	nodes := factory.Core().V1().Nodes()
	informer, lister := nodes.Informer(), nodes.Lister()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "ccmkit_node_labels"})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			c, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && !maps.Equal(o.Labels, c.Labels) {
				queue.Add(nodeLabelsKey)
			}
		},
	})
	if err != nil { // only when the informer has stopped already
		logger.Error(err, "Not watching Node labels: the targets of Services with a node selector follow label changes only at the service controller's next sync")
		queue.ShutDown()
		return
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			return
		}
		queue.Add(nodeLabelsKey) // a change before the first list came as no update
		for syncNext(ctx, logger, queue, lister.List, l.SyncNodeLabels) {
		}
	}()
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
		err = sync(ctx, serviceControllerNodes(all))
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
