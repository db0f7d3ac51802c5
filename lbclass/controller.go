package lbclass

// Controller serves the Services of one load balancer class as the upstream service
// controller (k8s.io/cloud-provider/controllers/service) serves those without a class:
// the same queues, backoff, finalizer, status patches, events and node sync, with the
// filter by class in place of upstream's skip of every class. Helpers follow it.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The upstream service controller's periods and backoff, kept equal so that a Service of
// the class is retried and resynced exactly as one without a class.
const (
	// MinRetryDelay is the first wait before a failed Service sync is retried; it doubles
	// with each failure in a row.
	MinRetryDelay = 5 * time.Second
	// MaxRetryDelay caps the wait between retries of a failed Service sync.
	MaxRetryDelay = 300 * time.Second
	// serviceSyncPeriod and nodeSyncPeriod are the resync periods of the event handlers.
	serviceSyncPeriod = 30 * time.Second
	nodeSyncPeriod    = 100 * time.Second
)

// Options configure a Controller.
type Options struct {
	// Class is the load balancer class served: Services with spec.loadBalancerClass equal
	// to it. Required; a label-style key (an optional DNS subdomain prefix and "/", then a
	// name), as the API server validates spec.loadBalancerClass.
	Class string
	// UnclassedServed says that another controller of the same process, the upstream
	// service controller over the same LoadBalancer, serves Services without a class. When
	// false, the Controller also cleans up after a Service without a class whose load
	// balancer is provably its own (see the package documentation); it never creates one
	// for it.
	UnclassedServed bool
	// ClusterName is the clusterName argument of every LoadBalancer call
	// (--cluster-name).
	ClusterName string
	// Clock times the work queues' delays (backoff, a provisioning load balancer's
	// RetryError); nil means the real clock. Tests pass a fake one.
	Clock clock.WithTicker
}

// Controller is the class controller. New builds it; Run runs it.
type Controller struct {
	opts  Options
	lb    cloudprovider.LoadBalancer
	kube  kubernetes.Interface
	clock clock.WithTicker

	serviceInformer cache.SharedIndexInformer
	serviceLister   corelisters.ServiceLister
	nodeInformer    cache.SharedIndexInformer
	nodeLister      corelisters.NodeLister

	// Set up by Run.
	serviceQueue workqueue.TypedRateLimitingInterface[string]
	nodeQueue    workqueue.TypedRateLimitingInterface[string]
	recorder     record.EventRecorder

	mu sync.Mutex
	// served holds, by key, the last state of each Service the Controller has synced and
	// not yet let go: the upstream controller's cache, which the node sync walks and a
	// deletion without the finalizer is served from. Entries are never changed in place.
	served map[string]*corev1.Service
	// lastSyncedNodes is the node set each Service's load balancer was last given.
	lastSyncedNodes map[string][]*corev1.Node
}

// New returns a Controller serving the Services of opts.Class with lb, calling the API
// server through kube and reading Services and Nodes from the informers. It asks the
// informers' factory for both informers (so that the factory starts them) but does no I/O
// and starts no goroutine: Run does.
func New(lb cloudprovider.LoadBalancer, kube kubernetes.Interface, services coreinformers.ServiceInformer, nodes coreinformers.NodeInformer, opts Options) (*Controller, error) {
	var errs []error
	if opts.Class == "" {
		errs = append(errs, errors.New("lbclass: no load balancer class to serve"))
	}
	for _, msg := range validation.IsQualifiedName(opts.Class) {
		if opts.Class != "" {
			errs = append(errs, fmt.Errorf("lbclass: class %q: %s", opts.Class, msg))
		}
	}
	if lb == nil {
		errs = append(errs, errors.New("lbclass: no LoadBalancer"))
	}
	if kube == nil {
		errs = append(errs, errors.New("lbclass: no Kubernetes client"))
	}
	if services == nil || nodes == nil {
		errs = append(errs, errors.New("lbclass: the Service and Node informers are required"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{
		opts:            opts,
		lb:              lb,
		kube:            kube,
		clock:           opts.Clock,
		serviceInformer: services.Informer(),
		serviceLister:   services.Lister(),
		nodeInformer:    nodes.Informer(),
		nodeLister:      nodes.Lister(),
		served:          map[string]*corev1.Service{},
		lastSyncedNodes: map[string][]*corev1.Node{},
	}, nil
}

// Run serves the class until ctx ends, with workers Service workers and one node worker,
// as the upstream service controller runs with --concurrent-service-syncs. It records
// events as ControllerName, reports itself to metrics (nil: not reported), and returns once
// every goroutine it started has ended. Call it once.
func (c *Controller) Run(ctx context.Context, workers int, metrics *controllersmetrics.ControllerManagerMetrics) {
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName, "class", c.opts.Class)
	ctx = klog.NewContext(ctx, logger)
	if workers < 1 {
		workers = 1
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(0)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})

	c.serviceQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](MinRetryDelay, MaxRetryDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName + "-service", Clock: c.clock})
	c.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](MinRetryDelay, MaxRetryDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName + "-node", Clock: c.clock})
	defer c.serviceQueue.ShutDown()
	defer c.nodeQueue.ShutDown()

	serviceHandler, err := c.serviceInformer.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onServiceAdd,
		UpdateFunc: c.onServiceUpdate,
		DeleteFunc: c.onServiceDelete,
	}, serviceSyncPeriod)
	if err != nil {
		logger.Error(err, "Cannot watch Services")
		return
	}
	defer func() { _ = c.serviceInformer.RemoveEventHandler(serviceHandler) }()
	nodeHandler, err := c.nodeInformer.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNode,
		UpdateFunc: c.onNodeUpdate,
		DeleteFunc: c.enqueueNode,
	}, nodeSyncPeriod)
	if err != nil {
		logger.Error(err, "Cannot watch Nodes")
		return
	}
	defer func() { _ = c.nodeInformer.RemoveEventHandler(nodeHandler) }()

	logger.Info("Starting the load balancer class controller")
	defer logger.Info("Shutting down the load balancer class controller")
	if metrics != nil {
		metrics.ControllerStarted(ControllerName)
		defer metrics.ControllerStopped(ControllerName)
	}
	if !cache.WaitForNamedCacheSyncWithContext(ctx, serviceHandler.HasSynced, nodeHandler.HasSynced) {
		return
	}

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.serviceWorker, time.Second) })
	}
	// One node worker, so that one node change is processed at a time.
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) { c.nodeWorker(ctx, workers) }, time.Second)
	})
	<-ctx.Done()
	c.serviceQueue.ShutDown()
	c.nodeQueue.ShutDown()
	wg.Wait()
}

// ---- Which Services are the Controller's ----

// ofClass reports whether the Service has the served class.
func (c *Controller) ofClass(svc *corev1.Service) bool {
	return svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == c.opts.Class
}

// wantsLoadBalancer is upstream's wantsLoadBalancer with the served class for "no class".
func (c *Controller) wantsLoadBalancer(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && c.ofClass(svc)
}

// concerns reports whether the Controller may act on the Service: one of its class, or,
// when no other controller serves Services without a class, one without a class whose
// load balancer needs cleaning up (the sync then checks that the load balancer is its
// own). A Service of another class never concerns it.
func (c *Controller) concerns(svc *corev1.Service) bool {
	if c.ofClass(svc) {
		return true
	}
	return svc.Spec.LoadBalancerClass == nil && !c.opts.UnclassedServed && needsCleanup(svc)
}

// needsCleanup is upstream's: the Service holds the finalizer and is being deleted or no
// longer of type LoadBalancer.
func needsCleanup(svc *corev1.Service) bool {
	if !servicehelper.HasLBFinalizer(svc) {
		return false
	}
	return svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer
}

// ---- Event handlers ----

func (c *Controller) onServiceAdd(obj any) {
	svc, ok := obj.(*corev1.Service)
	// Cleanup on add catches up with what a previous run left unfinished.
	if ok && (c.wantsLoadBalancer(svc) || (needsCleanup(svc) && c.concerns(svc))) {
		c.enqueueService(obj)
	}
}

func (c *Controller) onServiceUpdate(oldObj, curObj any) {
	oldSvc, ok1 := oldObj.(*corev1.Service)
	curSvc, ok2 := curObj.(*corev1.Service)
	if ok1 && ok2 && (c.needsUpdate(oldSvc, curSvc) || (needsCleanup(curSvc) && c.concerns(curSvc))) {
		c.enqueueService(curObj)
	}
}

// onServiceDelete enqueues a Service the Controller serves that is gone without passing
// through the finalizer (someone removed it), so that its load balancer is deleted from the
// last state seen. Upstream has no such handler; in the normal course the Service has left
// served before it goes, and nothing is enqueued.
func (c *Controller) onServiceDelete(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if _, ok := c.servedState(key); ok {
		c.serviceQueue.Add(key)
	}
}

func (c *Controller) enqueueService(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		klog.Background().Error(err, "No key for a Service", "controller", ControllerName)
		return
	}
	c.serviceQueue.Add(key)
}

func (c *Controller) enqueueNode(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		klog.Background().Error(err, "No key for a Node", "controller", ControllerName)
		return
	}
	c.nodeQueue.Add(key)
}

func (c *Controller) onNodeUpdate(oldObj, curObj any) {
	oldNode, ok1 := oldObj.(*corev1.Node)
	curNode, ok2 := curObj.(*corev1.Node)
	if ok1 && ok2 && shouldSyncUpdatedNode(oldNode, curNode) {
		c.enqueueNode(curObj)
	}
}

// ---- Service sync ----

func (c *Controller) serviceWorker(ctx context.Context) {
	for c.processNextService(ctx) {
	}
}

// processNextService syncs one Service: done, it is forgotten by the backoff; a
// RetryError (a provisioning load balancer) comes back after its delay; any other error
// comes back after the key's exponential backoff (MinRetryDelay doubling to
// MaxRetryDelay).
func (c *Controller) processNextService(ctx context.Context) bool {
	key, quit := c.serviceQueue.Get()
	if quit {
		return false
	}
	defer c.serviceQueue.Done(key)

	err := c.syncService(ctx, key)
	if err == nil {
		c.serviceQueue.Forget(key)
		return true
	}
	logger := klog.FromContext(ctx)
	var re *api.RetryError
	if errors.As(err, &re) {
		logger.Info("Retrying the Service", "service", key, "after", re.RetryAfter(), "err", err)
		c.serviceQueue.AddAfter(key, re.RetryAfter())
	} else {
		logger.Error(err, "Syncing the Service failed; retrying with exponential backoff", "service", key)
		c.serviceQueue.AddRateLimited(key)
	}
	return true
}

// syncService syncs the Service with the given key from the lister's state.
func (c *Controller) syncService(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	svc, err := c.serviceLister.Services(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return c.processServiceDeletion(ctx, key)
	case err != nil:
		return fmt.Errorf("reading Service %s from the informer: %w", key, err)
	default:
		// The informer's object is shared: work on a copy.
		return c.processServiceCreateOrUpdate(ctx, svc.DeepCopy(), key)
	}
}

type loadBalancerOperation int

const (
	deleteLoadBalancer loadBalancerOperation = iota
	ensureLoadBalancer
	// leftAlone: a Service without a class whose load balancer is not (or not yet)
	// provably the Controller's; the Service was not written, nor an event recorded on it.
	leftAlone
)

func (c *Controller) processServiceCreateOrUpdate(ctx context.Context, svc *corev1.Service, key string) error {
	previous, wasServed := c.servedState(key)
	if !c.concerns(svc) {
		return c.letGo(ctx, svc, key, previous, wasServed)
	}
	if wasServed && previous.UID != svc.UID {
		// Deleted and re-created before the Controller saw the deletion, which only a
		// Service without the finalizer can be.
		if err := c.processLoadBalancerDelete(ctx, previous); err != nil {
			return err
		}
	}
	remembered := wasServed && previous.UID == svc.UID && c.ofClass(previous)
	c.serve(key, svc)
	op, err := c.syncLoadBalancerIfNeeded(ctx, svc, remembered)
	if err != nil {
		if op != leftAlone {
			c.recorder.Eventf(svc, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", err)
		}
		return err
	}
	if op != ensureLoadBalancer {
		c.forget(key)
	}
	return nil
}

// letGo handles a Service that does not concern the Controller (any longer): one of
// another class, or without a class while the upstream service controller serves those.
// The Service itself is never written. If the Controller served it before under the same
// UID, it forgets it; a Service that went from the class to another class (through type
// ClusterIP, faster than the Controller looked) still has the Controller's load balancer
// in the cloud, which the Controller deletes, without touching the Service. A Service now
// without a class is the upstream service controller's to clean up, over the same
// LoadBalancer.
func (c *Controller) letGo(ctx context.Context, svc *corev1.Service, key string, previous *corev1.Service, wasServed bool) error {
	if !wasServed {
		return nil
	}
	if svc.Spec.LoadBalancerClass != nil && previous.UID == svc.UID && c.wantsLoadBalancer(previous) {
		logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "newClass", *svc.Spec.LoadBalancerClass)
		_, exists, err := c.lb.GetLoadBalancer(ctx, c.opts.ClusterName, previous)
		if err != nil {
			return fmt.Errorf("failed to check if the load balancer of a Service that left the class exists: %w", err)
		}
		if exists {
			logger.Info("Deleting the load balancer of a Service that moved to another class; the Service is that class's controller's")
			if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, previous); err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
				return fmt.Errorf("failed to delete the load balancer of a Service that left the class: %w", err)
			}
		}
	}
	c.forget(key)
	return nil
}

// syncLoadBalancerIfNeeded is upstream's: it ensures the load balancer of a Service that
// wants one, or deletes it for a Service that no longer does, with the finalizer added
// before a create and removed after a delete, and the status patched from the answer. A
// Service without a class is cleaned up only when its load balancer exists (the
// LoadBalancer finds it by this cluster's and the Service's owner tags) or the Controller
// remembers serving it under this UID.
func (c *Controller) syncLoadBalancerIfNeeded(ctx context.Context, svc *corev1.Service, remembered bool) (loadBalancerOperation, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	previousStatus := svc.Status.LoadBalancer.DeepCopy()
	var newStatus *corev1.LoadBalancerStatus
	var op loadBalancerOperation

	if !c.wantsLoadBalancer(svc) || needsCleanup(svc) {
		op = deleteLoadBalancer
		newStatus = &corev1.LoadBalancerStatus{}
		ours := remembered || c.ofClass(svc)
		_, exists, err := c.lb.GetLoadBalancer(ctx, c.opts.ClusterName, svc)
		if err != nil {
			if !ours {
				// Not known to be the Controller's: no event on it, only the retry.
				op = leftAlone
			}
			return op, fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err)
		}
		if !exists && !ours {
			logger.V(4).Info("Leaving a Service without a class alone: no load balancer of this cluster's is the Service's")
			return leftAlone, nil
		}
		if exists {
			logger.V(2).Info("Deleting the Service's load balancer")
			c.recorder.Event(svc, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer")
			if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil {
				if !errors.Is(err, cloudprovider.ImplementedElsewhere) {
					return op, fmt.Errorf("failed to delete load balancer: %w", err)
				}
				logger.V(4).Info("The load balancer is implemented by another controller; ignoring the error on deletion")
			}
		}
		// The finalizer goes once the load balancer has, so that the Service can go.
		if err := c.removeFinalizer(ctx, svc); err != nil {
			return op, fmt.Errorf("failed to remove load balancer cleanup finalizer: %w", err)
		}
		c.recorder.Event(svc, corev1.EventTypeNormal, "DeletedLoadBalancer", "Deleted load balancer")
	} else {
		op = ensureLoadBalancer
		logger.V(2).Info("Ensuring the Service's load balancer")
		c.recorder.Event(svc, corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer")
		// The finalizer comes before the load balancer, so that the Service cannot go
		// before its load balancer has.
		if err := c.addFinalizer(ctx, svc); err != nil {
			return op, fmt.Errorf("failed to add load balancer cleanup finalizer: %w", err)
		}
		var err error
		newStatus, err = c.ensureLoadBalancer(ctx, svc)
		if err != nil {
			if errors.Is(err, cloudprovider.ImplementedElsewhere) {
				logger.V(4).Info("The load balancer is implemented by another controller; ignoring")
				return op, nil
			}
			// %w, so that a RetryError reaches processNextService.
			return op, fmt.Errorf("failed to ensure load balancer: %w", err)
		}
		if newStatus == nil {
			return op, errors.New("service status returned by EnsureLoadBalancer is nil")
		}
		c.recorder.Event(svc, corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer")
	}

	if err := c.patchStatus(ctx, svc, previousStatus, newStatus); err != nil {
		// A Service gone right after its finalizer was removed cannot be patched, and
		// need not be.
		if !apierrors.IsNotFound(err) {
			return op, fmt.Errorf("failed to update load balancer status: %w", err)
		}
	}
	return op, nil
}

// ensureLoadBalancer ensures the load balancer over the eligible Nodes and remembers them
// as the Service's last synced node set.
func (c *Controller) ensureLoadBalancer(ctx context.Context, svc *corev1.Service) (*corev1.LoadBalancerStatus, error) {
	nodes, err := listWithPredicates(c.nodeLister, stableNodeSetPredicates...)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		c.recorder.Event(svc, corev1.EventTypeWarning, "UnAvailableLoadBalancer", "There are no available nodes for LoadBalancer")
	}
	c.storeLastSyncedNodes(svc, nodes)
	return c.lb.EnsureLoadBalancer(ctx, c.opts.ClusterName, svc, nodes)
}

// processServiceDeletion deletes the load balancer of a served Service that is gone
// without passing through the finalizer, from its last state seen.
func (c *Controller) processServiceDeletion(ctx context.Context, key string) error {
	svc, ok := c.servedState(key)
	if !ok {
		// Never served, or its load balancer is already deleted.
		return nil
	}
	klog.FromContext(ctx).V(2).Info("The Service is gone; deleting its load balancer", "service", key)
	if err := c.processLoadBalancerDelete(ctx, svc); err != nil {
		return err
	}
	c.forget(key)
	return nil
}

func (c *Controller) processLoadBalancerDelete(ctx context.Context, svc *corev1.Service) error {
	if !c.wantsLoadBalancer(svc) {
		return nil
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer")
	if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "DeleteLoadBalancerFailed", "Error deleting load balancer: %v", err)
		return err
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, "DeletedLoadBalancer", "Deleted load balancer")
	return nil
}

// addFinalizer patches the finalizer onto the Service, through the status subresource as
// upstream does.
func (c *Controller) addFinalizer(ctx context.Context, svc *corev1.Service) error {
	if servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	klog.FromContext(ctx).V(2).Info("Adding the finalizer", "service", klog.KObj(svc))
	_, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated)
	return err
}

// removeFinalizer patches the finalizer off the Service.
func (c *Controller) removeFinalizer(ctx context.Context, svc *corev1.Service) error {
	if !servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = nil
	for _, f := range svc.Finalizers {
		if f != servicehelper.LoadBalancerCleanupFinalizer {
			updated.Finalizers = append(updated.Finalizers, f)
		}
	}
	klog.FromContext(ctx).V(2).Info("Removing the finalizer", "service", klog.KObj(svc))
	_, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated)
	return err
}

// patchStatus patches status.loadBalancer when it changed (ingress, ipMode, ports).
func (c *Controller) patchStatus(ctx context.Context, svc *corev1.Service, previous, current *corev1.LoadBalancerStatus) error {
	if servicehelper.LoadBalancerStatusEqual(previous, current) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *current
	klog.FromContext(ctx).V(2).Info("Patching the status", "service", klog.KObj(svc))
	_, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated)
	return err
}

// ---- What the Controller serves ----

func (c *Controller) servedState(key string) (*corev1.Service, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	svc, ok := c.served[key]
	return svc, ok
}

func (c *Controller) serve(key string, svc *corev1.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.served[key] = svc
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.served, key)
	delete(c.lastSyncedNodes, key)
}

// servedServices returns the Services served now.
func (c *Controller) servedServices() []*corev1.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Service, 0, len(c.served))
	for _, svc := range c.served {
		out = append(out, svc)
	}
	return out
}

func (c *Controller) storeLastSyncedNodes(svc *corev1.Service, nodes []*corev1.Node) {
	key, _ := cache.MetaNamespaceKeyFunc(svc)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSyncedNodes[key] = nodes
}

func (c *Controller) getLastSyncedNodes(svc *corev1.Service) []*corev1.Node {
	key, _ := cache.MetaNamespaceKeyFunc(svc)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSyncedNodes[key]
}

// ---- What changes a Service's load balancer ----

// needsUpdate is upstream's needsUpdate with the class's wantsLoadBalancer: a change of
// anything the load balancer is made from.
func (c *Controller) needsUpdate(oldSvc, newSvc *corev1.Service) bool {
	oldWants, newWants := c.wantsLoadBalancer(oldSvc), c.wantsLoadBalancer(newSvc)
	switch {
	case !oldWants && !newWants:
		return false
	case oldWants != newWants:
		return true
	}
	return !reflect.DeepEqual(oldSvc.Spec.LoadBalancerSourceRanges, newSvc.Spec.LoadBalancerSourceRanges) ||
		!portsEqualForLB(oldSvc, newSvc) ||
		oldSvc.Spec.SessionAffinity != newSvc.Spec.SessionAffinity ||
		!reflect.DeepEqual(oldSvc.Spec.SessionAffinityConfig, newSvc.Spec.SessionAffinityConfig) ||
		oldSvc.Spec.LoadBalancerIP != newSvc.Spec.LoadBalancerIP ||
		!reflect.DeepEqual(oldSvc.Spec.ExternalIPs, newSvc.Spec.ExternalIPs) ||
		!reflect.DeepEqual(oldSvc.Annotations, newSvc.Annotations) ||
		oldSvc.UID != newSvc.UID ||
		oldSvc.Spec.ExternalTrafficPolicy != newSvc.Spec.ExternalTrafficPolicy ||
		oldSvc.Spec.HealthCheckNodePort != newSvc.Spec.HealthCheckNodePort ||
		// Families can be added or removed, not reordered: the count is enough.
		len(oldSvc.Spec.IPFamilies) != len(newSvc.Spec.IPFamilies)
}

// portsEqualForLB compares the ports as upstream does: every field the load balancer is
// made from, in order.
func portsEqualForLB(x, y *corev1.Service) bool {
	if len(x.Spec.Ports) != len(y.Spec.Ports) {
		return false
	}
	for i := range x.Spec.Ports {
		a, b := &x.Spec.Ports[i], &y.Spec.Ports[i]
		if a.Name != b.Name || a.Protocol != b.Protocol || a.Port != b.Port || a.NodePort != b.NodePort ||
			a.TargetPort != b.TargetPort || !reflect.DeepEqual(a.AppProtocol, b.AppProtocol) {
			return false
		}
	}
	return true
}
