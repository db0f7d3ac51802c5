package sweeper

// Sweeper deletes this cluster's load balancers and routes whose owner is gone from the
// Kubernetes API; proven gone twice (the informer, then a live read after the grace
// period), re-read in the cloud right before the delete. It deletes the cluster's target
// groups that no load balancer of the cluster names, after the grace period and a fresh
// list of the load balancers.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
)

// Defaults of Options.
const (
	// DefaultGracePeriod is how long a resource must look orphaned before the sweeper
	// deletes it: longer than any Service's or Node's creation takes to reach the
	// informers, and than an operator's "delete the finalizer, then recreate" takes.
	DefaultGracePeriod = 10 * time.Minute
	// DefaultInterval is the time between two sweeps.
	DefaultInterval = 5 * time.Minute
)

// Kind is the kind of cloud resource the sweeper and Teardown delete.
type Kind string

// The kinds of resources.
const (
	// KindLoadBalancer is a load balancer, owned by a Service (cloudapi.TagService) or by
	// a share of Services (cloudapi.TagShare).
	KindLoadBalancer Kind = "load_balancer"
	// KindRoute is a route, owned by a Node (cloudapi.TagNode).
	KindRoute Kind = "route"
	// KindTargetGroup is a target group (cloudapi.TargetGroupAPI), shared by the
	// cluster's load balancers that want the same Nodes (cloudapi.TagTargetGroup), used
	// by the load balancers that name it (cloudapi.LoadBalancerSpec.TargetGroup).
	KindTargetGroup Kind = "target_group"
)

// The results the sweeper reports through Options.OnSwept.
const (
	// ResultDeleted: the orphan was deleted (or the cloud answered it was gone already).
	ResultDeleted = "deleted"
	// ResultFailed: the delete failed; the orphan is tried again at the next sweep.
	ResultFailed = "failed"
	// ResultKept: the cloud refused the delete because the resource is in use
	// (cloudapi.ErrConflict: a target group that a load balancer names, perhaps one of
	// another cluster or one created since the sweep's lists); it is a candidate again
	// from the next sweep, with a new grace period.
	ResultKept = "kept"
)

// The reasons of the sweeper's events.
const (
	// EventDeletedLoadBalancer is the Normal event of a deleted orphaned load balancer,
	// on its gone Service.
	EventDeletedLoadBalancer = "DeletedOrphanedLoadBalancer"
	// EventDeletedRoute is the Normal event of a deleted orphaned route, on its gone Node.
	EventDeletedRoute = "DeletedOrphanedRoute"
	// EventDeleteFailed is the Warning event of a delete that failed.
	EventDeleteFailed = "DeleteOrphanFailed"
)

// Options configure a Sweeper.
type Options struct {
	// ClusterID is the cluster's ID, the value of cloudapi.TagCluster on its resources.
	// Required: nothing without this tag is ever looked at twice.
	ClusterID string
	// GracePeriod is how long a resource must look orphaned, sweep after sweep, before it
	// is deleted. Zero means DefaultGracePeriod.
	GracePeriod time.Duration
	// Interval is the time between two sweeps. Zero means DefaultInterval.
	Interval time.Duration
	// PageSize is the page size of the cloud lists; zero is the backend's default.
	PageSize int
	// Clock is what the grace period and the interval are measured on. Nil means the real
	// clock.
	Clock clock.WithTicker
	// Recorder records the sweeper's events (see the Event constants). Nil drops them.
	Recorder record.EventRecorder
	// OnSwept, when set, is called once per delete the sweeper attempted, with its kind
	// and result (ResultDeleted, ResultFailed, ResultKept): the provider counts them in a
	// metric.
	OnSwept func(kind Kind, result string)
	// TargetGroups is the cloud's target group API (cloudapi.TargetGroups). When not nil,
	// the sweeper also deletes the cluster's target groups that none of the cluster's
	// load balancers names (see Sweeper). It learns which groups are named from the list
	// of the cluster's load balancers, through the lbs given to New, or through
	// ListedLoadBalancers when that is nil; New refuses TargetGroups with neither.
	TargetGroups cloudapi.TargetGroupAPI
	// ListedLoadBalancers is the load balancer API through which the target group sweep
	// lists the cluster's load balancers when New's lbs is nil (the load balancers are not
	// swept: kept on delete, say). It is only listed, never changed. Ignored when New's
	// lbs is set.
	ListedLoadBalancers cloudapi.LoadBalancerAPI
	// TargetGroupMaxAge is the load balancers' loadbalancer.Options.MaxAge (the cloud
	// config's cache.maxAge): a target group that no load balancer named since the sweeper
	// first found it unused may be new, and is kept targetgroups' KeepNew (32) times it,
	// by the rule package loadbalancer's collection applies (see Sweeper). Zero means
	// loadbalancer.DefaultMaxAge.
	TargetGroupMaxAge time.Duration
	// ShareKey tells which share a Service is in, as its load balancer's
	// cloudapi.TagShare: the share's key, "" for none, an error for a malformed share
	// annotation. It must read Services as the load balancers do (ccmkit's provider passes
	// its load balancers' (*loadbalancer.LoadBalancer).ShareKey). When set, the sweeper
	// also deletes the cluster's shared load balancers no Service of whose share exists
	// (see Sweeper); nil leaves every shared load balancer alone.
	ShareKey func(svc *corev1.Service) (string, error)
}

// Sweeper finds and deletes the cluster's orphans: load balancers tagged with
// Options.ClusterID whose Service (cloudapi.TagService, a UID) is gone from the
// Kubernetes API, or whose share (cloudapi.TagShare) has no Service left, and routes
// tagged with it whose Node (cloudapi.TagNode) is gone.
//
// With Options.ShareKey, a load balancer several Services share (cloudapi.TagShare: the
// share's key, "namespace/name" or "*/name") is deleted only when all of these hold: the
// informers have synced; no Service of the share was in the informer cache at any sweep
// for GracePeriod; a live list of the Services (of the key's namespace, or all of them
// for "*/") has none either; and a fresh read of the cloud, after that list, shows the
// load balancer as the sweep listed it (same tags, same listeners: nothing joined it).
// A Service of the share is one of type LoadBalancer, not being deleted, whose share
// annotation Options.ShareKey reads as the share; one whose share annotation is
// malformed, in the key's namespace (any, for "*/"), may be one and keeps the load
// balancer. Listeners of gone Services on a shared load balancer that a live Service of
// its share still uses are not removed: the sweeper writes no load balancer, it only
// deletes. A shared load balancer has no owner object: its delete gets no event, only
// logs and Options.OnSwept.
//
// A resource is deleted only when all of these hold, in this order: the informers have
// synced; it carries this cluster's tag and its owner's tag; its owner was absent from
// the informer cache at every sweep for GracePeriod (counted from the sweep that first
// saw it so, in this process: a restart starts the grace period again); a fresh read of
// the cloud (GetLoadBalancer; a list of the route by its tags) still shows it with the
// same tags; and a live read of the Kubernetes API (a GET, not the cache) answers that
// the owner does not exist: NotFound, or a Service of the same namespace and name with
// another UID. Any error on the way leaves the resource alone until the next sweep.
//
// With Options.TargetGroups, a target group is deleted only when all of these hold: it
// carries this cluster's tag and cloudapi.TagTargetGroup (a group ccmkit made: the one
// rule targetgroups.Owned, which package loadbalancer's store applies too); the one
// rule of package loadbalancer's collection (targetgroups.Deletable) allows it: a load
// balancer named it at an earlier sweep, or the sweeper first found it unused at least 32
// times Options.TargetGroupMaxAge ago (a group nothing named yet may be one made for a
// Service whose load balancer create keeps failing, which the collection keeps that long
// so that it is not made and deleted at every retry); no load
// balancer of the cluster named it at any sweep for GracePeriod (counted as above), each
// sweep judging by its list of the groups and its list of the cluster's load balancers,
// begun after it, and only when both succeeded (a sweep whose list failed neither starts
// nor ends a grace period); a list of the cluster's load balancers begun after the grace
// period ended, right before the delete, names it neither; and the cloud does not refuse
// the delete as a group in use (cloudapi.ErrConflict: a load balancer of another cluster,
// or one created since, names it), which keeps it and starts its grace period again. A
// group has no owner object: it gets no event, only logs and Options.OnSwept.
type Sweeper struct {
	lbs            cloudapi.LoadBalancerAPI
	routes         cloudapi.RouteAPI
	groups         cloudapi.TargetGroupAPI  // nil: groups are not swept
	listLBs        cloudapi.LoadBalancerAPI // lbs, else Options.ListedLoadBalancers
	kube           kubernetes.Interface
	services       corelisters.ServiceLister
	servicesSynced cache.InformerSynced
	nodes          corelisters.NodeLister
	nodesSynced    cache.InformerSynced
	opts           Options

	mu sync.Mutex
	// suspects holds, by resource and owner, when a sweep first saw the resource
	// orphaned; a resource seen owned again, or no longer listed, is dropped.
	suspects map[suspect]time.Time
	// named holds the target groups (by ID) that a listed load balancer named at a sweep,
	// while the groups' list still has them: a group its load balancers let go (see
	// targetgroups.Deletable).
	named map[string]bool
}

// errListFailed marks the error of a sweep whose list of a kind failed.
var errListFailed = errors.New("the list failed, nothing of this kind swept")

// suspect is a resource that looked orphaned, with the owner it names.
type suspect struct {
	kind  Kind
	id    string
	owner string // a Service UID, a share (shareOwner), or a Node name
}

// New returns a Sweeper over the cloud's load balancers (lbs; nil: none are swept) and
// routes (routes; nil, or routes that carry no tags (cloudapi.RoutesCarryNoTags): none
// are swept), reading owners from the informers and live from kube. It does no I/O and
// starts nothing; Run does.
func New(lbs cloudapi.LoadBalancerAPI, routes cloudapi.RouteAPI, kube kubernetes.Interface,
	services coreinformers.ServiceInformer, nodes coreinformers.NodeInformer, opts Options) (*Sweeper, error) {
	var errs []error
	if opts.ClusterID == "" {
		errs = append(errs, errors.New("sweeper: a cluster ID is required: the sweeper touches only resources tagged with it"))
	}
	if opts.GracePeriod < 0 {
		errs = append(errs, fmt.Errorf("sweeper: grace period %s must be positive", opts.GracePeriod))
	}
	if opts.Interval < 0 {
		errs = append(errs, fmt.Errorf("sweeper: interval %s must be positive", opts.Interval))
	}
	if opts.TargetGroupMaxAge < 0 {
		errs = append(errs, fmt.Errorf("sweeper: target group max age %s must not be negative", opts.TargetGroupMaxAge))
	}
	if opts.TargetGroups != nil && lbs == nil && opts.ListedLoadBalancers == nil {
		errs = append(errs, errors.New("sweeper: target groups need a load balancer API to list the cluster's load balancers, which tell what groups are in use: pass lbs or Options.ListedLoadBalancers"))
	}
	if kube == nil || services == nil || nodes == nil {
		errs = append(errs, errors.New("sweeper: a Kubernetes client and the Service and Node informers are required"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if opts.GracePeriod == 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.TargetGroupMaxAge == 0 {
		opts.TargetGroupMaxAge = sharedlist.DefaultMaxAge // loadbalancer.DefaultMaxAge, which sweeper does not import
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Recorder == nil {
		opts.Recorder = &record.FakeRecorder{}
	}
	if routes != nil && cloudapi.RoutesCarryNoTags(routes) {
		// Without tags a route is the cluster's only while its target is one of its
		// Nodes (package routes): a route whose Node is gone can no longer be proven the
		// cluster's, so it is kept.
		routes = nil
	}
	listLBs := lbs
	if listLBs == nil {
		listLBs = opts.ListedLoadBalancers
	}
	return &Sweeper{
		lbs:            lbs,
		routes:         routes,
		groups:         opts.TargetGroups,
		listLBs:        listLBs,
		kube:           kube,
		services:       services.Lister(),
		servicesSynced: services.Informer().HasSynced,
		nodes:          nodes.Lister(),
		nodesSynced:    nodes.Informer().HasSynced,
		opts:           opts,
		suspects:       map[suspect]time.Time{},
		named:          map[string]bool{},
	}, nil
}

// Run waits for the informers to sync, then sweeps every Options.Interval until ctx
// ends. A failed sweep is logged and the next one comes at the next interval.
func (s *Sweeper) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSync("sweeper", ctx.Done(), s.servicesSynced, s.nodesSynced) {
		return
	}
	logger.Info("Sweeping orphaned load balancers, routes and target groups", "cluster", s.opts.ClusterID,
		"loadBalancers", s.lbs != nil, "routes", s.routes != nil, "targetGroups", s.groups != nil,
		"gracePeriod", s.opts.GracePeriod, "interval", s.opts.Interval)
	ticker := s.opts.Clock.NewTicker(s.opts.Interval)
	defer ticker.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Sweep failed; trying again at the next interval", "interval", s.opts.Interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Result is what one sweep did.
type Result struct {
	// Suspects are the resources that look orphaned and wait for their grace period.
	Suspects int
	// Deleted are the resources the sweep deleted.
	Deleted []Resource
}

// Sweep is one sweep: it lists the cluster's load balancers and routes (and target
// groups), notes the ones whose owner the informers lack (the groups no load balancer
// names), and deletes those that have been orphaned for the grace period and are
// confirmed so by the cloud and a live read of the API (a fresh list of the load
// balancers). It refuses to run before the informers have synced. The error joins every
// failure; a failure of one resource does not stop the others.
func (s *Sweeper) Sweep(ctx context.Context) (Result, error) {
	var res Result
	if !s.servicesSynced() || !s.nodesSynced() {
		return res, errors.New("sweeper: the Service and Node informers have not synced; nothing is swept before they have")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[suspect]bool{}
	var errs []error
	// A kind whose list failed keeps its suspects: a flaky cloud does not restart their
	// grace periods.
	failed := map[Kind]bool{}
	var groups []cloudapi.TargetGroup
	var groupsErr error
	if s.groups != nil {
		// Listed before the load balancers: a group that a load balancer names by the time
		// they are listed is seen named.
		groups, groupsErr = listTargetGroups(ctx, s.groups, s.opts.ClusterID, s.opts.PageSize)
	}
	var lbs []cloudapi.LoadBalancer
	var lbsErr error
	if s.listLBs != nil {
		lbs, lbsErr = listLoadBalancers(ctx, s.listLBs, s.opts.ClusterID, s.opts.PageSize)
	}
	if s.lbs != nil {
		err := lbsErr
		if err != nil {
			err = fmt.Errorf("sweeper: %w: %w", errListFailed, err)
		} else {
			err = s.sweepLoadBalancers(ctx, lbs, listed, &res)
		}
		if err != nil {
			errs = append(errs, err)
			failed[KindLoadBalancer] = errors.Is(err, errListFailed)
		}
	}
	if s.groups != nil {
		switch {
		case groupsErr != nil:
			errs = append(errs, fmt.Errorf("sweeper: %w: %w", errListFailed, groupsErr))
			failed[KindTargetGroup] = true
		case lbsErr != nil:
			if s.lbs == nil { // else reported above
				errs = append(errs, fmt.Errorf("sweeper: %w: %w", errListFailed, lbsErr))
			}
			failed[KindTargetGroup] = true
		default:
			if err := s.sweepTargetGroups(ctx, groups, lbs, listed, &res); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if s.routes != nil {
		if err := s.sweepRoutes(ctx, listed, &res); err != nil {
			errs = append(errs, err)
			failed[KindRoute] = errors.Is(err, errListFailed)
		}
	}
	for k := range s.suspects {
		if !listed[k] && !failed[k.kind] {
			delete(s.suspects, k)
		}
	}
	res.Suspects = len(s.suspects)
	return res, errors.Join(errs...)
}

// due records k as orphaned now and reports whether it has been so for the grace period.
// The caller marks it listed.
func (s *Sweeper) due(k suspect) bool {
	now := s.opts.Clock.Now()
	first, ok := s.suspects[k]
	if !ok {
		s.suspects[k] = now
		return false
	}
	return now.Sub(first) >= s.opts.GracePeriod
}

// sweepLoadBalancers sweeps the cluster's load balancers lbs, as the sweep listed them.
func (s *Sweeper) sweepLoadBalancers(ctx context.Context, lbs []cloudapi.LoadBalancer, listed map[suspect]bool, res *Result) error {
	logger := klog.FromContext(ctx)
	// Ownership is the UID: a Service with this UID anywhere owns its load balancer, even
	// when the name tag does not name it (a cloud that shortens tag values, a hand edit).
	svcs, err := s.services.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("sweeper: %w: listing the Service informer: %w", errListFailed, err)
	}
	live := make(map[string]bool, len(svcs))
	for _, svc := range svcs {
		live[string(svc.UID)] = true
	}
	shares := s.sharesOf(svcs)
	var errs []error
	for _, lb := range lbs {
		if lb.ID == "" {
			logger.Info("Not sweeping a load balancer the cloud listed without an ID", "name", lb.Spec.Name)
			continue
		}
		if key := lb.Spec.Tags[cloudapi.TagShare]; key != "" {
			// The share's, whatever else it carries (as package loadbalancer reads it).
			if err := s.sweepShared(ctx, lb, key, shares, listed, res); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		uid, ns, name, ok := serviceOwner(lb.Spec.Tags)
		if !ok {
			logger.V(2).Info("Not sweeping a load balancer without a complete owner: no Service to prove gone",
				"loadBalancer", lb.ID, "serviceUID", lb.Spec.Tags[cloudapi.TagService], "service", lb.Spec.Tags[cloudapi.TagServiceName])
			continue
		}
		if live[uid] {
			continue // owned
		}
		k := suspect{kind: KindLoadBalancer, id: lb.ID, owner: uid}
		listed[k] = true
		if !s.due(k) {
			continue
		}
		deleted, err := s.deleteLoadBalancer(ctx, lb.ID, uid, ns, name)
		if err != nil {
			errs = append(errs, err)
		}
		if deleted {
			delete(s.suspects, k)
			res.Deleted = append(res.Deleted, Resource{Kind: KindLoadBalancer, ID: lb.ID, Name: lb.Spec.Name, Owner: ns + "/" + name})
		}
	}
	return errors.Join(errs...)
}

// sweepShared sweeps lb, a load balancer of the share key, as the sweep listed it;
// shares are the shares of the Services in the informer cache.
func (s *Sweeper) sweepShared(ctx context.Context, lb cloudapi.LoadBalancer, key string, shares shareMembers, listed map[suspect]bool, res *Result) error {
	if s.opts.ShareKey == nil {
		klog.FromContext(ctx).V(2).Info("Not sweeping a shared load balancer: the sweeper was not told how Services name their share", "loadBalancer", lb.ID, "share", key)
		return nil
	}
	if shares.has(key) {
		return nil // owned
	}
	k := suspect{kind: KindLoadBalancer, id: lb.ID, owner: shareOwner(key)}
	listed[k] = true
	if !s.due(k) {
		return nil
	}
	deleted, err := s.deleteSharedLoadBalancer(ctx, lb, key)
	if deleted {
		delete(s.suspects, k)
		res.Deleted = append(res.Deleted, Resource{Kind: KindLoadBalancer, ID: lb.ID, Name: lb.Spec.Name, Owner: shareOwner(key)})
	}
	return err
}

// deleteSharedLoadBalancer confirms with a live list that no Service of the share key
// exists, then re-reads lb (as the sweep listed it) in the cloud and deletes it unless it
// changed. The list comes first: a Service that joins the share after it writes the load
// balancer, which the re-read then sees. deleted is true when it is gone from the cloud.
func (s *Sweeper) deleteSharedLoadBalancer(ctx context.Context, lb cloudapi.LoadBalancer, key string) (deleted bool, _ error) {
	logger := klog.FromContext(ctx).WithValues("loadBalancer", lb.ID, "share", key)
	ns, _, _ := strings.Cut(key, "/")
	if ns == "*" {
		ns = metav1.NamespaceAll
	}
	list, err := s.kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("sweeper: confirming that no Service of share %s exists: %w", key, err)
	}
	svcs := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		svcs[i] = &list.Items[i]
	}
	if s.sharesOf(svcs).has(key) {
		logger.Info("Not sweeping a shared load balancer: a live read of the API finds a Service of its share")
		return false, nil
	}
	cur, err := s.lbs.GetLoadBalancer(ctx, lb.ID)
	if errors.Is(err, cloudapi.ErrNotFound) {
		return false, nil // gone already; the next list will not show it
	}
	if err != nil {
		return false, fmt.Errorf("sweeper: re-reading load balancer %s of share %s before deleting it: %w", lb.ID, key, err)
	}
	if cur == nil {
		return false, fmt.Errorf("sweeper: re-reading load balancer %s of share %s before deleting it: the cloud answered neither a load balancer nor an error", lb.ID, key)
	}
	if cur.Spec.Tags[cloudapi.TagCluster] != s.opts.ClusterID || cur.Spec.Tags[cloudapi.TagShare] != key {
		logger.Info("Not sweeping a shared load balancer whose owner tags changed")
		return false, nil
	}
	if !cloudapi.DiffLoadBalancer(lb.Spec, cur.Spec).Empty() {
		logger.Info("Not sweeping a shared load balancer that changed since the sweep listed it: a Service may have joined its share")
		return false, nil
	}
	if err := s.lbs.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		s.report(KindLoadBalancer, ResultFailed)
		return false, fmt.Errorf("sweeper: deleting load balancer %s of share %s, which no Service is in: %w", lb.ID, key, err)
	}
	s.report(KindLoadBalancer, ResultDeleted)
	logger.Info("Deleted an orphaned shared load balancer: no Service of its share exists", "gracePeriod", s.opts.GracePeriod, "listeners", len(cur.Spec.Listeners))
	return true, nil
}

// shareMembers are the shares that Services are in (Options.ShareKey), and the
// namespaces of the Services whose share annotation is malformed: those may be in any
// share of their namespace.
type shareMembers struct {
	keys  map[string]bool
	doubt map[string]bool
}

// sharesOf returns the shares of svcs: of each one of type LoadBalancer that is not being
// deleted (what keeps a share's load balancer, as package loadbalancer counts).
func (s *Sweeper) sharesOf(svcs []*corev1.Service) shareMembers {
	m := shareMembers{keys: map[string]bool{}, doubt: map[string]bool{}}
	if s.opts.ShareKey == nil {
		return m
	}
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil {
			continue
		}
		key, err := s.opts.ShareKey(svc)
		switch {
		case err != nil:
			m.doubt[svc.Namespace] = true
		case key != "":
			m.keys[key] = true
		}
	}
	return m
}

// has reports whether a Service may be in the share key: one names it, or one whose
// share annotation is malformed is in its namespace (any namespace for a "*/" key).
func (m shareMembers) has(key string) bool {
	if m.keys[key] {
		return true
	}
	ns, _, _ := strings.Cut(key, "/")
	return m.doubt[ns] || (ns == "*" && len(m.doubt) > 0)
}

// shareOwner is how the sweeper names the share key as an owner (Resource.Owner).
func shareOwner(key string) string { return "share " + key }

// deleteLoadBalancer re-reads the load balancer in the cloud, confirms with a live read
// that its Service is gone, and deletes it. deleted is true when it is gone from the
// cloud.
func (s *Sweeper) deleteLoadBalancer(ctx context.Context, id, uid, ns, name string) (deleted bool, _ error) {
	logger := klog.FromContext(ctx)
	cur, err := s.lbs.GetLoadBalancer(ctx, id)
	if errors.Is(err, cloudapi.ErrNotFound) {
		return false, nil // gone already; the next list will not show it
	}
	if err != nil {
		return false, fmt.Errorf("sweeper: re-reading load balancer %s before deleting it: %w", id, err)
	}
	if cur == nil {
		return false, fmt.Errorf("sweeper: re-reading load balancer %s before deleting it: the cloud answered neither a load balancer nor an error", id)
	}
	if cur.Spec.Tags[cloudapi.TagCluster] != s.opts.ClusterID || cur.Spec.Tags[cloudapi.TagService] != uid {
		logger.Info("Not sweeping a load balancer whose owner tags changed", "loadBalancer", id, "service", ns+"/"+name)
		return false, nil
	}
	gone, err := s.serviceGone(ctx, ns, name, uid)
	if err != nil || !gone {
		return false, err
	}
	ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name, UID: types.UID(uid)}
	err = s.lbs.DeleteLoadBalancer(ctx, id)
	if err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		s.report(KindLoadBalancer, ResultFailed)
		s.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, EventDeleteFailed,
			"Deleting load balancer %s, left behind by this deleted Service, failed (tried again at the next sweep): %v", id, err)
		return false, fmt.Errorf("sweeper: deleting load balancer %s of the deleted Service %s/%s: %w", id, ns, name, err)
	}
	s.report(KindLoadBalancer, ResultDeleted)
	s.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, EventDeletedLoadBalancer,
		"Deleted load balancer %s, left behind by this deleted Service (UID %s) for at least %s", id, uid, s.opts.GracePeriod)
	logger.Info("Deleted an orphaned load balancer", "loadBalancer", id, "service", klog.KRef(ns, name), "serviceUID", uid)
	return true, nil
}

// serviceGone reads the Service live: gone when the API answers NotFound or a Service
// of another UID. An error is never gone.
func (s *Sweeper) serviceGone(ctx context.Context, ns, name, uid string) (bool, error) {
	svc, err := s.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sweeper: confirming that Service %s/%s is gone: %w", ns, name, err)
	default:
		return string(svc.UID) != uid, nil
	}
}

// sweepRoutes sweeps the cluster's routes.
func (s *Sweeper) sweepRoutes(ctx context.Context, listed map[suspect]bool, res *Result) error {
	rts, err := listClusterRoutes(ctx, s.routes, s.opts.ClusterID, s.opts.PageSize)
	if err != nil {
		return fmt.Errorf("sweeper: %w: %w", errListFailed, err)
	}
	var errs []error
	for _, rt := range rts {
		node := rt.Tags[cloudapi.TagNode]
		if node == "" || rt.ID == "" {
			continue // no owner to prove gone, or nothing to delete by
		}
		if _, err := s.nodes.Get(node); err == nil {
			continue // owned
		}
		k := suspect{kind: KindRoute, id: rt.ID, owner: node}
		listed[k] = true
		if !s.due(k) {
			continue
		}
		deleted, err := s.deleteRoute(ctx, rt.ID, node)
		if err != nil {
			errs = append(errs, err)
		}
		if deleted {
			delete(s.suspects, k)
			res.Deleted = append(res.Deleted, Resource{Kind: KindRoute, ID: rt.ID, Name: rt.DestinationCIDR, Owner: node})
		}
	}
	return errors.Join(errs...)
}

// deleteRoute re-reads the route in the cloud (the cloud API has no GetRoute: a list by
// its tags), confirms with a live read that its Node is gone, and deletes it.
func (s *Sweeper) deleteRoute(ctx context.Context, id, node string) (deleted bool, _ error) {
	rts, err := listRoutes(ctx, s.routes, map[string]string{cloudapi.TagCluster: s.opts.ClusterID, cloudapi.TagNode: node}, s.opts.PageSize)
	if err != nil {
		return false, fmt.Errorf("sweeper: re-reading route %s before deleting it: %w", id, err)
	}
	var cur *cloudapi.Route
	for i := range rts {
		if rts[i].ID == id {
			cur = &rts[i]
		}
	}
	if cur == nil {
		return false, nil // gone, or its tags changed
	}
	if _, err := s.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if err != nil {
			return false, fmt.Errorf("sweeper: confirming that Node %s is gone: %w", node, err)
		}
		return false, nil
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node}
	err = s.routes.DeleteRoute(ctx, id)
	if err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		s.report(KindRoute, ResultFailed)
		s.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, EventDeleteFailed,
			"Deleting route %s (%s), left behind by this deleted Node, failed (tried again at the next sweep): %v", id, cur.DestinationCIDR, err)
		return false, fmt.Errorf("sweeper: deleting route %s of the deleted Node %s: %w", id, node, err)
	}
	s.report(KindRoute, ResultDeleted)
	s.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, EventDeletedRoute,
		"Deleted route %s (%s), left behind by this deleted Node for at least %s", id, cur.DestinationCIDR, s.opts.GracePeriod)
	klog.FromContext(ctx).Info("Deleted an orphaned route", "route", id, "destination", cur.DestinationCIDR, "node", node)
	return true, nil
}

// sweepTargetGroups sweeps the cluster's target groups, as the sweep listed them (groups),
// against the cluster's load balancers the sweep listed after them (lbs): a group that
// none names, but for those the sweep deleted, is a candidate. The caller calls it only
// when both lists succeeded.
func (s *Sweeper) sweepTargetGroups(ctx context.Context, groups []cloudapi.TargetGroup, lbs []cloudapi.LoadBalancer, listed map[suspect]bool, res *Result) error {
	logger := klog.FromContext(ctx)
	sweptLBs := map[string]bool{}
	for _, r := range res.Deleted {
		if r.Kind == KindLoadBalancer {
			sweptLBs[r.ID] = true
		}
	}
	named := map[string]string{}
	for _, lb := range lbs {
		if lb.Spec.TargetGroup == "" {
			continue
		}
		s.named[lb.Spec.TargetGroup] = true // swept or not, it named the group
		if !sweptLBs[lb.ID] {
			named[lb.Spec.TargetGroup] = lb.ID
		}
	}
	listedGroups := map[string]bool{}
	now := s.opts.Clock.Now()
	var due []cloudapi.TargetGroup
	for _, g := range groups {
		listedGroups[g.ID] = true
		key := g.Spec.Tags[cloudapi.TagTargetGroup]
		switch {
		case g.ID == "":
			logger.Info("Not sweeping a target group the cloud listed without an ID", "name", g.Spec.Name)
			continue
		case !targetgroups.Owned(s.opts.ClusterID, g.Spec.Tags):
			// Another cluster's (the list drops these already: no list is trusted with a
			// delete), or the cluster's without the target group tag: not one ccmkit made.
			logger.V(2).Info("Not sweeping a target group that is not one of the cluster's groups of Nodes",
				"targetGroup", g.ID, "name", g.Spec.Name, "tags", []string{cloudapi.TagCluster, cloudapi.TagTargetGroup})
			continue
		case named[g.ID] != "":
			continue // in use
		}
		k := suspect{kind: KindTargetGroup, id: g.ID, owner: key}
		listed[k] = true
		if s.due(k) && targetgroups.Deletable(s.named[g.ID], s.suspects[k], now, s.opts.TargetGroupMaxAge) {
			due = append(due, g)
		}
	}
	for id := range s.named {
		if !listedGroups[id] {
			delete(s.named, id)
		}
	}
	if len(due) == 0 {
		return nil
	}
	// The load balancers again, listed after the grace period ended: one created since the
	// sweep's list (a Service's new load balancer, or one moved into the group) keeps it.
	fresh, err := listLoadBalancers(ctx, s.listLBs, s.opts.ClusterID, s.opts.PageSize)
	if err != nil {
		return fmt.Errorf("sweeper: listing the cluster's load balancers again before deleting %d orphaned target group(s): %w", len(due), err)
	}
	named = map[string]string{}
	for _, lb := range fresh {
		if lb.Spec.TargetGroup != "" {
			named[lb.Spec.TargetGroup] = lb.ID
		}
	}
	var errs []error
	for _, g := range due {
		key := g.Spec.Tags[cloudapi.TagTargetGroup]
		k := suspect{kind: KindTargetGroup, id: g.ID, owner: key}
		if lb := named[g.ID]; lb != "" {
			logger.Info("Not sweeping a target group that a load balancer names now", "targetGroup", g.ID, "name", g.Spec.Name, "loadBalancer", lb)
			delete(s.suspects, k)
			continue
		}
		deleted, err := s.deleteTargetGroup(ctx, g)
		if err != nil {
			errs = append(errs, err)
			continue // still a candidate: tried again at the next sweep
		}
		delete(s.suspects, k) // deleted, or kept: a new grace period if it is a candidate again
		if deleted {
			delete(s.named, g.ID)
			res.Deleted = append(res.Deleted, Resource{Kind: KindTargetGroup, ID: g.ID, Name: g.Spec.Name, Owner: key})
		}
	}
	return errors.Join(errs...)
}

// deleteTargetGroup deletes the orphaned target group g. deleted is true when it is gone
// from the cloud (deleted, or the cloud answered it was gone already); false with no
// error when the cloud refused the delete because the group is in use (kept).
func (s *Sweeper) deleteTargetGroup(ctx context.Context, g cloudapi.TargetGroup) (deleted bool, _ error) {
	logger := klog.FromContext(ctx).WithValues("targetGroup", g.ID, "name", g.Spec.Name, "key", g.Spec.Tags[cloudapi.TagTargetGroup])
	err := s.groups.DeleteTargetGroup(ctx, g.ID)
	switch {
	case err == nil:
		s.report(KindTargetGroup, ResultDeleted)
		logger.Info("Deleted an orphaned target group", "gracePeriod", s.opts.GracePeriod)
		return true, nil
	case errors.Is(err, cloudapi.ErrNotFound):
		s.report(KindTargetGroup, ResultDeleted)
		logger.Info("An orphaned target group was gone already")
		return true, nil
	case errors.Is(err, cloudapi.ErrConflict):
		s.report(KindTargetGroup, ResultKept)
		logger.Info("Kept an orphaned target group: the cloud says a load balancer uses it (of another cluster, or created since); a candidate again from the next sweep", "err", err)
		return false, nil
	default:
		s.report(KindTargetGroup, ResultFailed)
		return false, fmt.Errorf("sweeper: deleting the orphaned target group %s (%s) failed; trying again at the next sweep: %w", g.ID, g.Spec.Name, err)
	}
}

func (s *Sweeper) report(kind Kind, result string) {
	if s.opts.OnSwept != nil {
		s.opts.OnSwept(kind, result)
	}
}

// serviceOwner returns the owner a load balancer's tags name: the Service's UID and its
// namespace and name; ok is false when any is missing.
func serviceOwner(tags map[string]string) (uid, ns, name string, ok bool) {
	uid = tags[cloudapi.TagService]
	ns, name, found := strings.Cut(tags[cloudapi.TagServiceName], "/")
	if uid == "" || !found || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", "", false
	}
	return uid, ns, name, true
}

// listLoadBalancers returns every load balancer tagged with clusterID (all pages), and
// only those: an item the cloud answered without the tag, despite the filter, is
// dropped.
func listLoadBalancers(ctx context.Context, api cloudapi.LoadBalancerAPI, clusterID string, pageSize int) ([]cloudapi.LoadBalancer, error) {
	if clusterID == "" {
		return nil, errors.New("listing a cluster's load balancers: the cluster ID is empty")
	}
	tags := map[string]string{cloudapi.TagCluster: clusterID}
	var out []cloudapi.LoadBalancer
	_, err := paging.LoadBalancers(ctx, api, tags, pageSize, func(lb *cloudapi.LoadBalancer) bool {
		out = append(out, *lb)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing the load balancers of cluster %q: %w", clusterID, err)
	}
	return out, nil
}

// listClusterRoutes returns every route tagged with clusterID (all pages), and only those.
func listClusterRoutes(ctx context.Context, api cloudapi.RouteAPI, clusterID string, pageSize int) ([]cloudapi.Route, error) {
	if clusterID == "" {
		return nil, errors.New("listing a cluster's routes: the cluster ID is empty")
	}
	rts, err := listRoutes(ctx, api, map[string]string{cloudapi.TagCluster: clusterID}, pageSize)
	if err != nil {
		return nil, fmt.Errorf("listing the routes of cluster %q: %w", clusterID, err)
	}
	return rts, nil
}

// listRoutes lists the routes that carry every tag of tags.
func listRoutes(ctx context.Context, api cloudapi.RouteAPI, tags map[string]string, pageSize int) ([]cloudapi.Route, error) {
	var out []cloudapi.Route
	_, err := paging.Routes(ctx, api, tags, pageSize, func(rt *cloudapi.Route) bool {
		out = append(out, *rt)
		return true
	})
	return out, err
}

// listTargetGroups returns every target group tagged with clusterID (all pages), and only
// those: an item the cloud answered without the tag, despite the filter, is dropped.
func listTargetGroups(ctx context.Context, api cloudapi.TargetGroupAPI, clusterID string, pageSize int) ([]cloudapi.TargetGroup, error) {
	if clusterID == "" {
		return nil, errors.New("listing a cluster's target groups: the cluster ID is empty")
	}
	tags := map[string]string{cloudapi.TagCluster: clusterID}
	var out []cloudapi.TargetGroup
	_, err := paging.TargetGroups(ctx, api, tags, pageSize, func(g *cloudapi.TargetGroup) bool {
		out = append(out, *g)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing the target groups of cluster %q: %w", clusterID, err)
	}
	return out, nil
}
