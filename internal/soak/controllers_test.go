package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// The periods and back-offs of the upstream controllers (k8s.io/cloud-provider
// controllers and the cloud-controller-manager's defaults) that the driver models.
const (
	// serviceMinRetryDelay and serviceMaxRetryDelay are the service controller's per-item
	// exponential back-off.
	serviceMinRetryDelay = 5 * time.Second
	serviceMaxRetryDelay = 300 * time.Second
	// nodeInitMinRetryDelay and nodeInitMaxRetryDelay are the cloud node controller's
	// (the workqueue's default controller rate limiter, per item).
	nodeInitMinRetryDelay = 5 * time.Millisecond
	nodeInitMaxRetryDelay = 1000 * time.Second
	// nodeMonitorPeriod is --node-monitor-period: how often the cloud node lifecycle
	// controller checks the Nodes.
	nodeMonitorPeriod = 5 * time.Second
	// routeReconcilePeriod is --route-reconciliation-period.
	routeReconcilePeriod = 10 * time.Second
	// clusterName is --cluster-name, which the controllers pass to the provider.
	clusterName = "kubernetes"
	// toBeDeletedTaint is the cluster autoscaler's taint that the service controller
	// excludes from load balancer targets.
	toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"
	// maxWorkPerRun bounds the work items of one runUntil, to report a livelock instead of
	// hanging.
	maxWorkPerRun = 200_000
)

// clusterCIDR is --cluster-cidr: the route controller touches only routes inside it.
var clusterCIDR = netip.MustParsePrefix("10.64.0.0/10")

// queue models a client-go rate-limited delaying work queue with a per-item exponential
// failure rate limiter. It has two parts, as client-go's has:
//
//   - the queue proper (Add): an item waits there until a worker takes it; adding an item
//     that is already there changes nothing;
//   - the delayed adds (AddAfter, AddRateLimited): an item joins the queue at its time; a
//     delayed add of an item that already has one keeps the earlier time, and neither an
//     Add nor the worker taking the item removes a delayed add that is not due yet.
//
// So a retry once scheduled is never postponed: when an event makes an item sync at once
// and that sync fails, the retry it schedules (after a longer back-off) does not replace
// the earlier one. AddRateLimited waits base*2^failures, capped; Forget resets failures.
type queue struct {
	base, max time.Duration
	// queued holds the items of the queue proper, with when they were added.
	queued map[string]time.Time
	// delayed holds the delayed adds: when each item joins the queue.
	delayed  map[string]time.Time
	failures map[string]int
}

func newQueue(base, limit time.Duration) *queue {
	return &queue{base: base, max: limit, queued: map[string]time.Time{}, delayed: map[string]time.Time{}, failures: map[string]int{}}
}

// add puts key into the queue at now (Add).
func (q *queue) add(key string, now time.Time) {
	if _, ok := q.queued[key]; !ok {
		q.queued[key] = now
	}
}

// addAfter makes key join the queue d after now, or earlier if a delayed add of it
// already was due earlier (AddAfter).
func (q *queue) addAfter(key string, now time.Time, d time.Duration) {
	if d <= 0 {
		q.add(key, now)
		return
	}
	t := now.Add(d)
	if old, ok := q.delayed[key]; !ok || t.Before(old) {
		q.delayed[key] = t
	}
}

// addRateLimited adds key after its back-off and counts a failure (AddRateLimited).
func (q *queue) addRateLimited(key string, now time.Time) {
	q.addAfter(key, now, q.backoff(q.failures[key]))
	q.failures[key]++
}

// backoff is the wait after n earlier failures.
func (q *queue) backoff(n int) time.Duration {
	d := q.base
	for range n {
		if d >= q.max/2 {
			return q.max
		}
		d *= 2
	}
	return min(d, q.max)
}

// forget resets the failures of key.
func (q *queue) forget(key string) { delete(q.failures, key) }

// peek returns the item a worker takes next and when: the earliest of the queued items
// and the delayed adds, ties broken by key.
func (q *queue) peek() (string, time.Time, bool) {
	var key string
	var at time.Time
	found := false
	for _, m := range []map[string]time.Time{q.queued, q.delayed} {
		for k, t := range m {
			if !found || t.Before(at) || (t.Equal(at) && k < key) {
				key, at, found = k, t, true
			}
		}
	}
	return key, at, found
}

// take removes key, which a worker takes at now, from the queue proper; a delayed add of
// it that is due by now has joined the queue and goes with it, a later one stays.
func (q *queue) take(key string, now time.Time) {
	delete(q.queued, key)
	if t, ok := q.delayed[key]; ok && !t.After(now) {
		delete(q.delayed, key)
	}
}

// recorder keeps what the checks need from the run itself: the last status each Service
// got from a successful EnsureLoadBalancer, and the safety violations seen as they
// happened.
type recorder struct {
	cloud      *fake.Cloud
	ensured    map[types.UID]corev1.LoadBalancerStatus
	violations []violation
	// nodeDeletions counts the Nodes the lifecycle controller deleted.
	nodeDeletions int
	// initialized holds when the cloud node controller last initialized each Node.
	initialized map[string]time.Time
	// operatorLB is the ID of operatorLB in the cloud. Only Services with keep-on-delete
	// adopt it (see adopt_test.go), so it must exist at the end.
	operatorLB string
	// otherLB is otherClusterLB as the cloud stored it (naming otherClusterGroup when the
	// cloud has target groups): nothing may change it.
	otherLB cloudapi.LoadBalancerSpec
	// foreignGroups are the target groups without this cluster's tags made before the
	// history (operatorGroup and otherClusterGroup), by ID; nil without target groups.
	foreignGroups map[string]cloudapi.TargetGroup
	// groupWrites counts the target group writes sent to the cloud.
	groupWrites int
	// world is the simulation's API server.
	world *world
	// sharing is how the provider reads the share annotation in a run with shares, whose
	// load balancer writes lbWrite checks; nil without shares.
	sharing *sharing
	// syncing is the UID of the Service whose load balancer the service controller syncs.
	syncing types.UID
	// lastEnsure is the error of each Service's last EnsureLoadBalancer, and synced the
	// Service as last synced (the service controller's cache), by UID.
	lastEnsure map[types.UID]error
	synced     map[types.UID]*corev1.Service
	syncedAt   map[types.UID]time.Time
	// foreignShareReads counts the reads of a share's load balancer scoped to one
	// namespace while syncing a Service of another (see lbList).
	foreignShareReads int
	// creationsHeld counts the EnsureLoadBalancer calls the creation brake held
	// (loadbalancer.ErrCreationHeld).
	creationsHeld int

	// The project switches (project_test.go). other is the other project, nil in a run
	// without switches; switched is whether the config points at it now.
	other    *fake.Cloud
	switched bool
	// leftBehind holds the UIDs of the Services whose cleanup succeeded while the config
	// pointed at the other project, and leftBehindShares the shares they were in: what
	// they had in the cluster's project is left there.
	leftBehind, leftBehindShares map[string]bool
	// recreated holds, by owner, when a load balancer was created in the other project
	// for a Service that had an address (see projectCreate).
	recreated map[string]time.Time
	// recreations counts those creates; switchedHeld the creates the creation brake held
	// and brakeRefused the lookups the deletion brake refused while switched.
	recreations, switchedHeld, brakeRefused int
	// addressed holds how many owners of Services with an address there were at each sync
	// within the creation brake's window while switched (see syncStarts).
	addressed []addressedAt
	// restarted holds when the cloud-controller-manager was (re)started.
	restarted []time.Time
	// acrossRestarts counts the creation brake's re-creations across restarts
	// (params.brakeAcrossRestarts).
	acrossRestarts bool
}

func newRecorder(cloud *fake.Cloud, w *world) *recorder {
	return &recorder{cloud: cloud, world: w, ensured: map[types.UID]corev1.LoadBalancerStatus{}, initialized: map[string]time.Time{},
		lastEnsure: map[types.UID]error{}, synced: map[types.UID]*corev1.Service{}, syncedAt: map[types.UID]time.Time{}, leftBehind: map[string]bool{}, leftBehindShares: map[string]bool{}, recreated: map[string]time.Time{}}
}

// firstStart and lastRestart return when the cloud-controller-manager started first and
// last; zero before it started.
func (r *recorder) firstStart() time.Time {
	if len(r.restarted) == 0 {
		return time.Time{}
	}
	return r.restarted[0]
}

func (r *recorder) lastRestart() time.Time {
	if len(r.restarted) == 0 {
		return time.Time{}
	}
	return r.restarted[len(r.restarted)-1]
}

// project returns the cloud of the project the config points at.
func (r *recorder) project() *fake.Cloud {
	if r.switched {
		return r.other
	}
	return r.cloud
}

// ensureDone records the outcome of a Service's EnsureLoadBalancer.
func (r *recorder) ensureDone(svc *corev1.Service, err error) {
	r.lastEnsure[svc.UID] = err
	if errors.Is(err, loadbalancer.ErrCreationHeld) {
		r.creationsHeld++
		if r.switched {
			r.switchedHeld++
		}
	}
}

// cleanedUp records that the cleanup of svc's load balancer succeeded: while the config
// points at the other project, what it had in the cluster's is left behind.
func (r *recorder) cleanedUp(svc *corev1.Service) {
	if !r.switched {
		return
	}
	r.leftBehind[string(svc.UID)] = true
	if r.sharing != nil {
		if key := r.sharing.key(svc); key != "" {
			r.leftBehindShares[key] = true
		}
	}
}

// lifecycleDeletes checks, at the moment the node lifecycle controller deletes the Node,
// that its instance is really gone (not found, or terminated) and that the config does
// not point at another project.
func (r *recorder) lifecycleDeletes(n *corev1.Node) {
	r.nodeDeletions++
	if r.switched {
		r.violations = append(r.violations, violation{Check: checkSwitchedNodeDeleted,
			Msg: fmt.Sprintf("node %s was deleted while the cloud config pointed at another project", n.Name)})
	}
	inst := instanceOf(n, r.cloud.Inventory().Instances)
	if inst != nil && inst.State != cloudapi.InstanceTerminated {
		r.violations = append(r.violations, violation{Check: checkNodeDeleted,
			Msg: fmt.Sprintf("node %s was deleted while its instance %s exists in state %s", n.Name, inst.ID, inst.State)})
	}
}

// groupWrite checks, as a target group write reaches the cloud (before the cloud applies
// it, also when a fault then loses the answer), that ccmkit writes only this cluster's
// groups: a group it updates or deletes carries this cluster's tag, and a group it creates
// or updates keeps it (tags is the spec's; nil for a delete).
func (r *recorder) groupWrite(op cloudapi.Operation, id string, tags map[string]string) {
	r.groupWrites++
	if op != cloudapi.OpDeleteTargetGroup && tags[cloudapi.TagCluster] != clusterID {
		r.violations = append(r.violations, violation{Check: checkNotOurs,
			Msg: fmt.Sprintf("%s %s writes tags %v, without this cluster's tag", op, id, tags)})
	}
	if id == "" {
		return
	}
	for _, g := range r.cloud.Inventory().TargetGroups {
		if g.ID == id && g.Spec.Tags[cloudapi.TagCluster] != clusterID {
			r.violations = append(r.violations, violation{Check: checkNotOurs,
				Msg: fmt.Sprintf("%s of target group %s (%s), which has no tag of this cluster (tags %v)", op, id, g.Spec.Name, g.Spec.Tags)})
		}
	}
}

// ccm is one incarnation of the cloud-controller-manager: the provider and the models of
// the service, cloud node, cloud node lifecycle and route controllers with their in-memory
// state. A restart replaces it with a new one over the same world and cloud.
type ccm struct {
	ctx    context.Context
	w      *world
	rec    *recorder
	lb     cloudprovider.LoadBalancer
	inst   cloudprovider.InstancesV2
	routes cloudprovider.Routes // nil when routes are off

	// Service controller.
	cache      map[string]*corev1.Service // by name: the Service as last synced
	lastSynced map[string][]*corev1.Node  // by Service name
	svcQ       *queue
	nodeQ      *queue
	// Cloud node controller.
	initQ *queue
	// Cloud node lifecycle and route controllers.
	nextMonitor, nextRoutes time.Time
	// The collection of unused target groups that the controller
	// controllers.TargetGroupCollector runs every cache.maxAge
	// (loadbalancer.LoadBalancer.CollectGroups); nil without one.
	collect     func(context.Context)
	nextCollect time.Time
}

// startCCM starts the controllers over cloud: they get an add event for every object, as
// informers that list at start do, and the periodic loops run at once.
func startCCM(ctx context.Context, w *world, rec *recorder, cloud cloudprovider.Interface) (*ccm, error) {
	lb, ok := cloud.LoadBalancer()
	if !ok {
		return nil, errors.New("the provider offers no load balancers")
	}
	inst, ok := cloud.InstancesV2()
	if !ok {
		return nil, errors.New("the provider offers no InstancesV2")
	}
	routes, _ := cloud.Routes()
	now := w.clock.Now()
	c := &ccm{
		ctx: ctx, w: w, rec: rec, lb: lb, inst: inst, routes: routes,
		cache:       map[string]*corev1.Service{},
		lastSynced:  map[string][]*corev1.Node{},
		svcQ:        newQueue(serviceMinRetryDelay, serviceMaxRetryDelay),
		nodeQ:       newQueue(serviceMinRetryDelay, serviceMaxRetryDelay),
		initQ:       newQueue(nodeInitMinRetryDelay, nodeInitMaxRetryDelay),
		nextMonitor: now,
		nextRoutes:  now,
		nextCollect: now.Add(provider.DefaultCacheMaxAge),
	}
	if c2, ok := lb.(interface{ CollectGroups(context.Context) }); ok {
		c.collect = c2.CollectGroups
	}
	w.watch = c
	for _, name := range w.serviceNames() {
		c.serviceAdded(w.service(name))
	}
	for _, n := range w.listNodes() {
		c.nodeAdded(n)
	}
	return c, nil
}

// work is one thing a controller does at a time.
type work int

// The kinds of work, in the order they run when due at the same instant.
const (
	workNone work = iota
	workInitNode
	workSyncNodes
	workSyncService
	workMonitorNodes
	workReconcileRoutes
	workCollectGroups
)

// next returns the earliest due work.
func (c *ccm) next() (work, string, time.Time) {
	kind, key, at := workNone, "", time.Time{}
	consider := func(k work, key2 string, t time.Time, ok bool) {
		if ok && (kind == workNone || t.Before(at)) {
			kind, key, at = k, key2, t
		}
	}
	k, t, ok := c.initQ.peek()
	consider(workInitNode, k, t, ok)
	k, t, ok = c.nodeQ.peek()
	consider(workSyncNodes, k, t, ok)
	k, t, ok = c.svcQ.peek()
	consider(workSyncService, k, t, ok)
	consider(workMonitorNodes, "", c.nextMonitor, true)
	consider(workReconcileRoutes, "", c.nextRoutes, c.routes != nil)
	consider(workCollectGroups, "", c.nextCollect, c.collect != nil)
	return kind, key, at
}

// runUntil does all the work that is due until end, in time order, moving the clock.
func (c *ccm) runUntil(end time.Time) error {
	for n := 0; ; n++ {
		kind, key, at := c.next()
		if kind == workNone || at.After(end) {
			break
		}
		if n >= maxWorkPerRun {
			return fmt.Errorf("livelock: more than %d work items before %s", maxWorkPerRun, end.Format(time.RFC3339))
		}
		advanceTo(c.w.clock, at)
		now := c.w.clock.Now()
		switch kind {
		case workInitNode:
			c.initQ.take(key, now)
			if err := c.initNode(key); err != nil {
				c.initQ.addRateLimited(key, now)
			} else {
				c.initQ.forget(key)
			}
		case workSyncNodes:
			c.nodeQ.take(key, now)
			for _, name := range c.syncNodes() {
				c.svcQ.add(name, now)
			}
			c.nodeQ.forget(key)
		case workSyncService:
			c.svcQ.take(key, now)
			err := c.syncService(key)
			var retry *cloudproviderapi.RetryError
			switch {
			case err == nil:
				c.svcQ.forget(key)
			case errors.As(err, &retry):
				c.svcQ.addAfter(key, now, retry.RetryAfter())
			default:
				c.svcQ.addRateLimited(key, now)
			}
		case workMonitorNodes:
			c.monitorNodes()
			c.nextMonitor = now.Add(nodeMonitorPeriod)
		case workReconcileRoutes:
			c.reconcileRoutes()
			c.nextRoutes = now.Add(routeReconcilePeriod)
		case workCollectGroups:
			c.collect(c.ctx)
			c.nextCollect = now.Add(provider.DefaultCacheMaxAge)
		}
	}
	advanceTo(c.w.clock, end)
	return nil
}

// pendingRetries returns the Services and Nodes whose last sync failed and that wait for
// a retry.
func (c *ccm) pendingRetries() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.svcQ.failures)) {
		out = append(out, "service "+k)
	}
	for _, k := range slices.Sorted(maps.Keys(c.initQ.failures)) {
		if c.w.node(k) != nil {
			out = append(out, "node "+k)
		}
	}
	return out
}

// --- Informer event handlers.

func (c *ccm) serviceAdded(cur *corev1.Service) {
	if wantsLoadBalancer(cur) || needsCleanup(cur) {
		c.svcQ.add(cur.Name, c.w.clock.Now())
	}
}

func (c *ccm) serviceUpdated(old, cur *corev1.Service) {
	if needsUpdate(old, cur) || needsCleanup(cur) {
		c.svcQ.add(cur.Name, c.w.clock.Now())
	}
}

func (c *ccm) nodeAdded(cur *corev1.Node) {
	now := c.w.clock.Now()
	c.nodeQ.add(cur.Name, now)
	c.initQ.add(cur.Name, now)
}

func (c *ccm) nodeUpdated(old, cur *corev1.Node) {
	now := c.w.clock.Now()
	if nodeIncluded(old) != nodeIncluded(cur) || old.Spec.ProviderID != cur.Spec.ProviderID {
		c.nodeQ.add(cur.Name, now)
	}
	c.initQ.add(cur.Name, now)
}

func (c *ccm) nodeDeleted(old *corev1.Node) { c.nodeQ.add(old.Name, c.w.clock.Now()) }

// --- Service controller.

// wantsLoadBalancer reports whether the default cloud provider serves the Service.
func wantsLoadBalancer(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// needsCleanup reports whether the Service holds the cleanup finalizer but is being deleted
// or no longer of type LoadBalancer.
func needsCleanup(svc *corev1.Service) bool {
	if !servicehelpers.HasLBFinalizer(svc) {
		return false
	}
	return svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer
}

// needsUpdate reports whether a Service update matters to its load balancer, on the same
// fields as the service controller: the type, source ranges, ports, session affinity,
// requested and external IPs, annotations, UID, traffic policy, health check node port and
// the number of IP families.
func needsUpdate(old, cur *corev1.Service) bool {
	if !wantsLoadBalancer(old) && !wantsLoadBalancer(cur) {
		return false
	}
	o, n := old.Spec, cur.Spec
	return wantsLoadBalancer(old) != wantsLoadBalancer(cur) ||
		!reflect.DeepEqual(o.LoadBalancerSourceRanges, n.LoadBalancerSourceRanges) ||
		!reflect.DeepEqual(o.Ports, n.Ports) ||
		o.SessionAffinity != n.SessionAffinity ||
		!reflect.DeepEqual(o.SessionAffinityConfig, n.SessionAffinityConfig) ||
		o.LoadBalancerIP != n.LoadBalancerIP || //nolint:staticcheck // the controller compares the deprecated field
		!slices.Equal(o.ExternalIPs, n.ExternalIPs) ||
		!maps.Equal(old.Annotations, cur.Annotations) ||
		old.UID != cur.UID ||
		o.ExternalTrafficPolicy != n.ExternalTrafficPolicy ||
		o.HealthCheckNodePort != n.HealthCheckNodePort ||
		len(o.IPFamilies) != len(n.IPFamilies)
}

// nodeIncluded reports whether the Node lacks the exclude-from-external-load-balancers
// label (or has it with a false value).
func nodeIncluded(n *corev1.Node) bool {
	v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err == nil && !b
}

// stableNodes filters nodes as the service controller does for load balancer targets: not
// being deleted, not excluded, not tainted for deletion by the cluster autoscaler.
// Readiness does not count.
func stableNodes(nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if n.DeletionTimestamp == nil && nodeIncluded(n) && !hasTaint(n, toBeDeletedTaint) {
			out = append(out, n)
		}
	}
	return out
}

// sameNodeSet reports whether two node lists have the same names with the same provider
// IDs: the only change for which the node sync updates load balancers.
func sameNodeSet(a, b []*corev1.Node) bool {
	distill := func(nodes []*corev1.Node) map[string]string {
		m := make(map[string]string, len(nodes))
		for _, n := range nodes {
			m[n.Name] = n.Spec.ProviderID
		}
		return m
	}
	return len(a) == len(b) && maps.Equal(distill(a), distill(b))
}

// syncService is the service controller's sync of one Service key.
func (c *ccm) syncService(name string) error {
	svc := c.w.service(name)
	defer func() { c.rec.syncing = "" }()
	if svc == nil {
		cached, ok := c.cache[name]
		if !ok {
			return nil
		}
		c.rec.syncing = cached.UID
		if err := c.deleteLoadBalancer(cached); err != nil {
			return err
		}
		c.rec.cleanedUp(cached)
		delete(c.cache, name)
		return nil
	}
	if cached, ok := c.cache[name]; ok && cached.UID != svc.UID {
		c.rec.syncing = cached.UID
		if err := c.deleteLoadBalancer(cached); err != nil {
			return err
		}
		c.rec.cleanedUp(cached)
	}
	c.rec.syncing = svc.UID
	c.cache[name] = svc
	c.rec.synced[svc.UID], c.rec.syncedAt[svc.UID] = svc, c.w.clock.Now()
	c.rec.syncStarts()
	deleted, err := c.syncLoadBalancer(svc)
	if err != nil {
		return err
	}
	if deleted {
		delete(c.cache, name)
	}
	return nil
}

// deleteLoadBalancer deletes the load balancer of a Service that is gone.
func (c *ccm) deleteLoadBalancer(svc *corev1.Service) error {
	if !wantsLoadBalancer(svc) {
		return nil
	}
	return c.lb.EnsureLoadBalancerDeleted(c.ctx, clusterName, svc)
}

// syncLoadBalancer ensures or deletes the Service's load balancer and patches its status
// and finalizer. It reports whether it took the delete path.
func (c *ccm) syncLoadBalancer(svc *corev1.Service) (bool, error) {
	previous := svc.Status.LoadBalancer.DeepCopy()
	var status *corev1.LoadBalancerStatus
	deleting := !wantsLoadBalancer(svc) || needsCleanup(svc)
	if deleting {
		_, exists, err := c.lb.GetLoadBalancer(c.ctx, clusterName, svc)
		if err != nil {
			return true, fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err)
		}
		if exists {
			if err := c.lb.EnsureLoadBalancerDeleted(c.ctx, clusterName, svc); err != nil {
				return true, fmt.Errorf("failed to delete load balancer: %w", err)
			}
		}
		c.rec.cleanedUp(svc)
		if servicehelpers.HasLBFinalizer(svc) {
			c.w.updateService(svc.Name, func(s *corev1.Service) {
				s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == servicehelpers.LoadBalancerCleanupFinalizer })
			})
		}
		status = &corev1.LoadBalancerStatus{}
	} else {
		if !servicehelpers.HasLBFinalizer(svc) {
			c.w.updateService(svc.Name, func(s *corev1.Service) {
				s.Finalizers = append(s.Finalizers, servicehelpers.LoadBalancerCleanupFinalizer)
			})
		}
		nodes := stableNodes(c.w.listNodes())
		c.lastSynced[svc.Name] = nodes
		st, err := c.lb.EnsureLoadBalancer(c.ctx, clusterName, svc, nodes)
		c.rec.ensureDone(svc, err)
		if err != nil {
			return false, fmt.Errorf("failed to ensure load balancer: %w", err)
		}
		if st == nil {
			return false, errors.New("service status returned by EnsureLoadBalancer is nil")
		}
		c.rec.ensured[svc.UID] = *st.DeepCopy()
		status = st
	}
	if !servicehelpers.LoadBalancerStatusEqual(previous, status) {
		c.w.updateService(svc.Name, func(s *corev1.Service) { s.Status.LoadBalancer = *status.DeepCopy() })
	}
	return deleting, nil
}

// syncNodes is the node sync: every cached Service whose node set changed since its last
// sync gets UpdateLoadBalancer. It returns the Services to retry through the service queue.
func (c *ccm) syncNodes() []string {
	var retry []string
	for _, name := range slices.Sorted(maps.Keys(c.cache)) {
		if c.nodeSyncService(c.cache[name]) {
			retry = append(retry, name)
		}
	}
	return retry
}

func (c *ccm) nodeSyncService(svc *corev1.Service) bool {
	if svc == nil || !wantsLoadBalancer(svc) {
		return false
	}
	nodes := stableNodes(c.w.listNodes())
	old := stableNodes(c.lastSynced[svc.Name])
	c.lastSynced[svc.Name] = nodes
	if sameNodeSet(old, nodes) {
		return false
	}
	c.rec.syncing = svc.UID
	defer func() { c.rec.syncing = "" }()
	if err := c.lb.UpdateLoadBalancer(c.ctx, clusterName, svc, nodes); err != nil {
		// Only an error while the load balancer still exists is worth a retry.
		if _, exists, gerr := c.lb.GetLoadBalancer(c.ctx, clusterName, svc); gerr == nil && !exists {
			return false
		}
		return true
	}
	return false
}

// --- Cloud node controller.

// initNode initializes a Node that has the cloud provider's uninitialized taint: provider
// ID, addresses and topology labels from InstanceMetadata, then the taint is removed (one
// write; upstream makes a spec update and a status patch).
func (c *ccm) initNode(name string) error {
	n := c.w.node(name)
	if n == nil || !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider) {
		return nil
	}
	md, err := c.inst.InstanceMetadata(c.ctx, n)
	if err != nil {
		return fmt.Errorf("failed to get instance metadata for node %s: %w", name, err)
	}
	if md == nil {
		return nil
	}
	if md.ProviderID == "" && n.Spec.ProviderID == "" {
		return fmt.Errorf("cloud provider does not set node provider ID for node %s", name)
	}
	c.w.updateNode(name, func(n *corev1.Node) {
		if n.Spec.ProviderID == "" {
			n.Spec.ProviderID = md.ProviderID
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k, v := range map[string]string{
			corev1.LabelInstanceTypeStable: md.InstanceType,
			corev1.LabelTopologyZone:       md.Zone,
			corev1.LabelTopologyRegion:     md.Region,
		} {
			if v != "" {
				n.Labels[k] = v
			}
		}
		n.Spec.Taints = withoutTaint(n.Spec.Taints, cloudproviderapi.TaintExternalCloudProvider)
		n.Status.Addresses = md.NodeAddresses
	})
	c.rec.initialized[name] = c.w.clock.Now()
	return nil
}

// --- Cloud node lifecycle controller.

// monitorNodes is one round of the lifecycle controller: a Ready Node loses the shutdown
// taint; a NotReady Node whose instance does not exist (false with a nil error) is deleted;
// one whose instance is shut down gets the shutdown taint. Errors skip the Node.
func (c *ccm) monitorNodes() {
	for _, n := range c.w.listNodes() {
		if nodeReady(n) == corev1.ConditionTrue {
			if hasTaint(n, cloudproviderapi.TaintNodeShutdown) {
				c.w.updateNode(n.Name, func(n *corev1.Node) {
					n.Spec.Taints = withoutTaint(n.Spec.Taints, cloudproviderapi.TaintNodeShutdown)
				})
			}
			continue
		}
		exists, err := c.inst.InstanceExists(c.ctx, n)
		if err != nil {
			if c.rec.switched && errors.Is(err, instancecache.ErrBrake) {
				c.rec.brakeRefused++
			}
			continue
		}
		if !exists {
			c.rec.lifecycleDeletes(n)
			c.w.deleteNode(n.Name)
			continue
		}
		shutdown, err := c.inst.InstanceShutdown(c.ctx, n)
		if err != nil {
			continue
		}
		if shutdown && !hasTaint(n, cloudproviderapi.TaintNodeShutdown) {
			c.w.updateNode(n.Name, func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule})
			})
		}
	}
}

// --- Route controller.

// responsibleForRoute reports whether the route controller manages a destination: one
// that overlaps the cluster CIDR.
func responsibleForRoute(dst string) bool {
	p, err := netip.ParsePrefix(dst)
	if err != nil {
		return false
	}
	return clusterCIDR.Overlaps(p)
}

// reconcileRoutes is one round of the route controller: one ListRoutes; routes that are
// blackholes or match no Node's pod CIDR are deleted; every pod CIDR without a route of
// its Node gets one. Errors of single routes wait for the next round. Upstream runs the
// deletes and creates concurrently; the driver runs them one after the other.
func (c *ccm) reconcileRoutes() {
	routes, err := c.routes.ListRoutes(c.ctx, clusterName)
	if err != nil {
		return
	}
	nodes := c.w.listNodes()
	want := map[types.NodeName]map[string]bool{}
	for _, n := range nodes {
		for _, cidr := range n.Spec.PodCIDRs {
			if want[types.NodeName(n.Name)] == nil {
				want[types.NodeName(n.Name)] = map[string]bool{}
			}
			want[types.NodeName(n.Name)][cidr] = true
		}
	}
	have := map[types.NodeName]map[string]bool{}
	for _, r := range routes {
		if r.TargetNode != "" {
			if have[r.TargetNode] == nil {
				have[r.TargetNode] = map[string]bool{}
			}
			have[r.TargetNode][r.DestinationCIDR] = true
		}
	}
	for _, r := range routes {
		if !responsibleForRoute(r.DestinationCIDR) {
			continue
		}
		if r.Blackhole || r.TargetNode == "" || !want[r.TargetNode][r.DestinationCIDR] {
			_ = c.routes.DeleteRoute(c.ctx, clusterName, r)
		}
	}
	for _, n := range nodes {
		for _, cidr := range n.Spec.PodCIDRs {
			if have[types.NodeName(n.Name)][cidr] {
				continue
			}
			route := &cloudprovider.Route{TargetNode: types.NodeName(n.Name), TargetNodeAddresses: n.Status.Addresses, DestinationCIDR: cidr}
			_ = c.routes.CreateRoute(c.ctx, clusterName, string(n.UID), route)
		}
	}
}
