package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
	routecontroller "k8s.io/cloud-provider/controllers/route"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	"k8s.io/component-base/metrics/legacyregistry"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the route controller's feature gates, as the CCM registers them
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/internal/nodecontrollers"
)

// The upstream defaults of the cloud-controller-manager that the benchmark runs with.
const (
	nodeStatusUpdateFrequency = 5 * time.Minute  // --node-status-update-frequency
	nodeMonitorPeriod         = 5 * time.Second  // --node-monitor-period
	routeReconcilePeriod      = 10 * time.Second // --route-reconciliation-period
	concurrentSyncs           = 1                // --concurrent-node-syncs, --concurrent-node-status-updates, --concurrent-service-syncs, lifecycle workers
)

// parts says which controllers a session runs with their own Run loops. The cloud node
// and node lifecycle controllers are always built, so that the simulation can call their
// pass functions; the route controller always runs, behind its gate.
type parts struct {
	nodeController bool // RunWithContext: the initialization workers and a status pass at once
	lifecycle      bool // Run: MonitorNodes at once and every 5 s of real time
	// lifecycleOnce runs the node lifecycle controller with a period of an hour: its Run
	// sets up its event recorder (which MonitorNodes needs to delete a Node) and makes
	// one pass at once; the scenario calls MonitorNodes itself.
	lifecycleOnce bool
	service       bool // Run: a sync of every Service and the node sync
}

// session is the upstream controllers over a fake clientset and a new provider of
// the world's kind: a cloud-controller-manager that just started.
type session struct {
	w        *world
	provider cloudprovider.Interface
	obs      *observedCloud
	kube     *kube
	factory  informers.SharedInformerFactory
	node     *nodecontroller.CloudNodeController
	life     *nodelifecycle.CloudNodeLifecycleController
	gate     *routeGate

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ClientBuilder gives a provider a clientset, as the cloud-controller-manager's client
// builder gives it one of the API server: the benchmark's sessions give theirs.
type ClientBuilder struct{ Clientset clientset.Interface }

var _ cloudprovider.ControllerClientBuilder = ClientBuilder{}

// Config fails: the clientset is in memory, there is no server to configure a client of.
func (ClientBuilder) Config(name string) (*restclient.Config, error) {
	return nil, fmt.Errorf("client %s: the benchmark's clientset is in memory: no REST config", name)
}

// ConfigOrDie stops the process, as the upstream builder's does when Config fails.
func (b ClientBuilder) ConfigOrDie(name string) *restclient.Config {
	_, err := b.Config(name)
	klog.ErrorS(err, "No REST config for the provider")
	klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	return nil
}

// Client returns the clientset, whatever the name.
func (b ClientBuilder) Client(string) (clientset.Interface, error) { return b.Clientset, nil }

// ClientOrDie returns the clientset, whatever the name.
func (b ClientBuilder) ClientOrDie(string) clientset.Interface { return b.Clientset }

// start builds a new provider and the controllers over k, starts the informers, waits
// for their caches and runs the parts asked for.
func (w *world) start(ctx context.Context, k *kube, run parts) (*session, error) {
	p, err := w.cloud.NewProvider(w.clock)
	if err != nil {
		return nil, err
	}
	s := &session{w: w, provider: p, obs: &observedCloud{Interface: p, trace: w.cfg.trace}, kube: k}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.factory = informers.NewSharedInformerFactory(k, 0)
	// As the cloud-controller-manager does before it starts the controllers: the provider
	// gets its client (for events, and whatever else it uses it for), then the informers.
	p.Initialize(ClientBuilder{k}, s.ctx.Done())
	if iu, ok := p.(cloudprovider.InformerUser); ok {
		iu.SetInformers(s.factory)
	}
	fail := func(err error) (*session, error) {
		s.stop()
		return nil, err
	}
	nodes := s.factory.Core().V1().Nodes()
	if err := w.cfg.trace.watchNodes(nodes.Informer()); err != nil {
		return fail(err)
	}

	if s.node, err = nodecontrollers.NewNode(nodes, k, s.obs, nodeStatusUpdateFrequency, concurrentSyncs, concurrentSyncs); err != nil {
		return fail(err)
	}
	monitorPeriod := nodeMonitorPeriod
	if run.lifecycleOnce {
		monitorPeriod = time.Hour
	}
	if s.life, err = nodecontrollers.NewLifecycle(nodes, k, s.obs, monitorPeriod, concurrentSyncs); err != nil {
		return fail(err)
	}
	routes, ok := p.Routes()
	if !ok {
		return fail(errors.New("the provider offers no Routes"))
	}
	s.gate = newRouteGate(routes)
	rc, err := routecontroller.New(s.gate, k, nodes, clusterName, []*net.IPNet{w.cidr})
	if err != nil {
		return fail(err)
	}
	var sc *servicecontroller.Controller
	if run.service {
		if sc, err = servicecontroller.New(s.obs, k, s.factory.Core().V1().Services(), nodes, clusterName, utilfeature.DefaultFeatureGate); err != nil {
			return fail(err)
		}
	}

	s.factory.Start(s.ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(s.ctx.Done()) {
		if !ok {
			return fail(fmt.Errorf("informer for %v did not sync", typ))
		}
	}
	metrics := controllersmetrics.NewControllerManagerMetrics("bench")
	s.wg.Go(func() { rc.Run(s.ctx, time.Millisecond, metrics) })
	if run.nodeController {
		s.wg.Go(func() { s.node.RunWithContext(s.ctx, metrics) })
	}
	if run.lifecycle || run.lifecycleOnce {
		s.wg.Go(func() { s.life.Run(s.ctx, metrics) })
	}
	if run.service {
		syncs, err := nodeSyncs()
		if err != nil {
			return fail(err)
		}
		s.wg.Go(func() { sc.Run(s.ctx, concurrentSyncs, metrics) })
		if err := s.addServices(syncs); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// addServices hands the world's Services to the informers once the service controller's
// node sync has processed the initial add event of every Node (before is its count of
// node syncs before Run). Upstream's node sync reads the controller's service cache
// without the lock under which the service sync fills it, a data race that the race
// detector reports (a cloud-controller-manager that starts has it too); in this order
// the two never overlap. The cloud calls are the same: with no Service known, those node
// syncs call nothing, and then every Service is ensured once.
func (s *session) addServices(before uint64) error {
	want := before + uint64(len(s.w.nodes))
	var syncs uint64
	err := waitFor(s.ctx, func() bool {
		syncs, _ = nodeSyncs()
		return syncs >= want
	})
	if err != nil {
		return fmt.Errorf("waiting for the node sync of %d Nodes (%d so far): %w", len(s.w.nodes), syncs-before, err)
	}
	lister := s.factory.Core().V1().Services().Lister()
	tracker := s.kube.Tracker()
	// The fake watch buffers 100 events and panics when it overflows: add in batches
	// and let the informer catch up.
	const batch = 50
	for i, svc := range s.w.services {
		if err := tracker.Add(svc.DeepCopy()); err != nil {
			return err
		}
		if added := i + 1; added%batch == 0 || added == len(s.w.services) {
			err := waitFor(s.ctx, func() bool {
				l, err := lister.List(labels.Everything())
				return err == nil && len(l) >= added
			})
			if err != nil {
				return fmt.Errorf("waiting for the informer to see %d Services: %w", added, err)
			}
		}
	}
	return nil
}

// nodeSyncs returns how many node syncs the service controllers have run in this process
// (the sample count of their service_controller_nodesync_latency_seconds histogram).
func nodeSyncs() (uint64, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, fmt.Errorf("reading the service controller's metrics: %w", err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() == "service_controller_nodesync_latency_seconds" {
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n, nil
}

// stop stops the controllers and the informers and waits until their goroutines are gone,
// so that nothing refers to the provider any more.
func (s *session) stop() {
	s.cancel()
	s.factory.Shutdown()
	s.wg.Wait()
	// The controllers' own goroutines (workers, event broadcasters) end on their next
	// round; wait until the goroutine count settles.
	last, stable := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(30 * time.Second); stable < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if n := runtime.NumGoroutine(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
}

// waitSynced waits until the service controller has ensured every Service once (when it
// runs) and the cloud calls have stopped.
func (s *session) waitSynced(ctx context.Context, serviceController bool) error {
	if serviceController {
		want := int64(len(s.w.services))
		if err := waitFor(ctx, func() bool { return s.obs.ensured.Load() >= want }); err != nil {
			return fmt.Errorf("waiting for the service controller to ensure %d load balancers (%d so far): %w", want, s.obs.ensured.Load(), err)
		}
	}
	return s.w.waitQuiet(ctx)
}

// waitTimeout bounds every wait for the controllers.
const waitTimeout = time.Hour

// waitFor polls cond until it holds.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// waitOn waits until ready is closed, for at most waitTimeout.
func waitOn(ctx context.Context, ready <-chan struct{}) error {
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	select {
	case <-ready:
		return nil
	case <-timeout.C:
		return fmt.Errorf("not in %v", waitTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// seeNotReady returns a channel that is closed once the session's Node informer (the one
// the node lifecycle controller's lister reads) has seen the Node name not Ready: by the
// informer's own event, so that a scenario timed from a change of the Node adds no
// polling interval of its own. It returns once the handler has been handed the Nodes
// already there, so that handing them over is not timed. The handler stays until the
// session stops.
func (s *session) seeNotReady(ctx context.Context, name string) (<-chan struct{}, error) {
	seen := make(chan struct{})
	var once sync.Once
	notReady := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && n.Name == name && !isReady(n) {
			once.Do(func() { close(seen) })
		}
	}
	reg, err := s.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notReady,
		UpdateFunc: func(_, obj any) { notReady(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching Node %s: %w", name, err)
	}
	if err := waitFor(ctx, reg.HasSynced); err != nil {
		return nil, fmt.Errorf("watching Node %s: the Nodes already there: %w", name, err)
	}
	return seen, nil
}

// waitQuiet waits until the cloud has received no call for cfg.quiet.
func (w *world) waitQuiet(ctx context.Context) error {
	last, since := w.cloud.Calls().Total(), time.Now()
	return waitFor(ctx, func() bool {
		if n := w.cloud.Calls().Total(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= w.cfg.quiet
	})
}

// routeGate hands the route controller's reconciles out one at a time. The controller's
// reconcile function is not exported; it runs in Run's loop (with a 1 ms period here), and
// every reconcile starts with ListRoutes, so the gate holds each ListRoutes until the
// simulation releases it, and the next ListRoutes marks the end of the reconcile before.
type routeGate struct {
	cloudprovider.Routes
	arrive  chan struct{}
	proceed chan struct{}
	parked  bool // a reconcile waits at the gate; touched only by pass
	passes  atomic.Int64
}

func newRouteGate(r cloudprovider.Routes) *routeGate {
	return &routeGate{Routes: r, arrive: make(chan struct{}), proceed: make(chan struct{})}
}

// ListRoutes waits for pass, then lists.
func (g *routeGate) ListRoutes(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	select {
	case g.arrive <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-g.proceed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Routes.ListRoutes(ctx, cluster)
}

// pass lets one reconcile run and returns once it has finished.
func (g *routeGate) pass(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if !g.parked {
		select {
		case <-g.arrive:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the route controller: %w", ctx.Err())
		}
	}
	g.parked = false
	select {
	case g.proceed <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.arrive:
		g.parked = true
	case <-ctx.Done():
		return fmt.Errorf("waiting for a route reconcile to end: %w", ctx.Err())
	}
	g.passes.Add(1)
	return nil
}

// observedCloud counts what the controllers asked the provider, to tell when they have
// synced, and traces the calls (-trace); it changes nothing.
type observedCloud struct {
	cloudprovider.Interface
	ensured  atomic.Int64 // successful EnsureLoadBalancer calls
	metadata atomic.Int64 // InstanceMetadata calls
	trace    *tracer
}

// LoadBalancer returns the provider's, observed.
func (o *observedCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := o.Interface.LoadBalancer()
	if !ok {
		return nil, false
	}
	return observedLB{lb, o}, true
}

// InstancesV2 returns the provider's, observed.
func (o *observedCloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	iv2, ok := o.Interface.InstancesV2()
	if !ok {
		return nil, false
	}
	return observedInstances{iv2, o}, true
}

type observedLB struct {
	cloudprovider.LoadBalancer
	o *observedCloud
}

func (l observedLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	done := l.o.trace.call("EnsureLoadBalancer %s (%s)", svc.Name, nodesInShort(nodes))
	st, err := l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	done(err)
	if err == nil {
		l.o.ensured.Add(1)
	}
	return st, err
}

func (l observedLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	done := l.o.trace.call("UpdateLoadBalancer %s (%s)", svc.Name, nodesInShort(nodes))
	err := l.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	done(err)
	return err
}

func (l observedLB) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	done := l.o.trace.call("EnsureLoadBalancerDeleted %s", svc.Name)
	err := l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	done(err)
	return err
}

type observedInstances struct {
	cloudprovider.InstancesV2
	o *observedCloud
}

func (i observedInstances) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	done := i.o.trace.call("InstanceMetadata %s", node.Name)
	md, err := i.InstancesV2.InstanceMetadata(ctx, node)
	done(err)
	i.o.metadata.Add(1)
	return md, err
}

func (i observedInstances) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	done := i.o.trace.call("InstanceExists %s", node.Name)
	ok, err := i.InstancesV2.InstanceExists(ctx, node)
	done(err)
	return ok, err
}

func (i observedInstances) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	done := i.o.trace.call("InstanceShutdown %s", node.Name)
	ok, err := i.InstancesV2.InstanceShutdown(ctx, node)
	done(err)
	return ok, err
}
