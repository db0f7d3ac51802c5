package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/apivalid"
	"github.com/ccmkit/ccmkit/internal/keyedlock"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/providerid"
)

// LoadBalancer implements cloudprovider.LoadBalancer over a cloudapi.LoadBalancerAPI. A
// Service's load balancer is the one that carries the cluster's ID and the Service's UID in
// its tags (cloudapi.TagCluster, cloudapi.TagService); names are for humans.
//
// It keeps a snapshot of the cluster's load balancers (see Options.MaxAge), so that a
// call that would change nothing costs no cloud call; see the package documentation.
type LoadBalancer struct {
	api  cloudapi.LoadBalancerAPI
	opts Options
	snap *snapshot
	// groups are the cluster's target groups; nil without Options.TargetGroups.
	groups *targetgroups.Store
	memo   targetMemo // the targets of the last node set, per node selector
	// nodeSets marks when the node set UpdateLoadBalancer is given changed.
	nodeSets nodeSetClock

	// The whole keys of the annotations read outside parseAnnotations, made once.
	hostnameKey, nodeSelectorKey string
	// adapterDefaults are the adapter's settings every Service starts from (declared
	// defaults, overridden by Options.SettingDefaults); nil for none. Never changed.
	adapterDefaults map[string]string

	// services serializes the calls for one Service (by UID), loadBalancers adoption and
	// release of one load balancer (by cloud ID); see lock.
	services, loadBalancers keyedlock.Locks[string]

	mu        sync.Mutex
	selecting map[string]*corev1.Service // by UID: the Services last seen with a node selector
	unknown   map[string]string          // by UID: the unknown annotation keys last reported in an event
}

var _ cloudprovider.LoadBalancer = (*LoadBalancer)(nil)

// New returns a LoadBalancer. It makes no cloud call.
func New(api cloudapi.LoadBalancerAPI, opts Options) (*LoadBalancer, error) {
	if api == nil {
		return nil, errors.New("loadbalancer: no load balancer API")
	}
	if opts.ClusterID == "" {
		return nil, errors.New("loadbalancer: a cluster ID is required: it marks the load balancers this cluster owns")
	}
	if opts.ProviderID.String() == "" {
		return nil, errors.New("loadbalancer: a provider ID format is required")
	}
	if opts.MaxAge < 0 || opts.PageSize < 0 {
		return nil, fmt.Errorf("loadbalancer: MaxAge (%s) and PageSize (%d) must not be negative", opts.MaxAge, opts.PageSize)
	}
	if opts.AnnotationPrefix == "" {
		opts.AnnotationPrefix = DefaultAnnotationPrefix
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := opts.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("loadbalancer: the adapter's settings: %w", err)
	}
	defaults, err := opts.Settings.Defaults(opts.SettingDefaults)
	if err != nil {
		return nil, fmt.Errorf("loadbalancer: the defaults of the adapter's settings: %w", err)
	}
	snap := newSnapshot(api, opts.ClusterID, opts.MaxAge, opts.PageSize, opts.Clock)
	l := &LoadBalancer{
		adapterDefaults: defaults,
		unknown:         map[string]string{},
		api:             api,
		opts:            opts,
		hostnameKey:     opts.AnnotationPrefix + AnnotationHostname,
		nodeSelectorKey: opts.AnnotationPrefix + AnnotationNodeSelector,
		snap:            snap,
		selecting:       map[string]*corev1.Service{},
	}
	if opts.TargetGroups != nil {
		l.groups = targetgroups.New(targetgroups.Config{
			API: opts.TargetGroups, ClusterID: opts.ClusterID, NamePrefix: namePrefix(l.opts.ClusterID), PageSize: opts.PageSize, MaxAge: opts.MaxAge, Clock: opts.Clock,
			Tick: snap.tick, Names: snap.names, Refresh: snap.refresh,
		})
		// A load balancer that named a group and is gone, behind ccmkit's back too, may
		// have left the group unused.
		snap.lost = l.groups.Due
	}
	return l, nil
}

// ProvisioningRetryDelay is how long the service controller waits before it asks again
// about a load balancer that the cloud is still provisioning.
const ProvisioningRetryDelay = 5 * time.Second

// DefaultAnnotationPrefix is the prefix of the annotations when Options.AnnotationPrefix
// is empty.
const DefaultAnnotationPrefix = "loadbalancer.ccmkit.io/"

// Options configure a LoadBalancer.
type Options struct {
	// ClusterID is the cluster's ID. Every load balancer is tagged with it, and nothing
	// without it is read or changed. Required.
	ClusterID string
	// ProviderID is the format of the Nodes' provider IDs, to find the targets' instance
	// IDs. Required.
	ProviderID providerid.Format
	// AnnotationPrefix is the prefix of the Service annotations, ending in "/". Default
	// DefaultAnnotationPrefix.
	AnnotationPrefix string
	// MaxAge is how old the snapshot of the cluster's load balancers may get before a call
	// refreshes it with one paged list by the cluster tag. Zero means DefaultMaxAge. A load
	// balancer changed behind ccmkit's back while it matches its Service in the snapshot
	// is repaired at most MaxAge later; a longer MaxAge never makes a write wrong, since
	// every write is based on a fresh read.
	MaxAge time.Duration
	// PageSize is the page size asked for when listing the snapshot. Zero means the
	// backend's default.
	PageSize int
	// Clock is the clock the snapshot ages by. Nil means the real clock,
	// clock.RealClock{}; simulations and tests pass a fake one.
	Clock clock.PassiveClock
	// KeepOnDelete is what a Service without the keep-on-delete annotation gets. When
	// true, EnsureLoadBalancerDeleted releases the load balancer (removes its owner tags
	// and targets, keeps it and its addresses) instead of deleting it, and
	// EnsureLoadBalancer refuses an internal switch, which would replace it. Default false.
	KeepOnDelete bool
	// Recorder receives the events that say what ccmkit did beyond an error: a load
	// balancer adopted (AdoptedLoadBalancer) or kept in the cloud (KeptLoadBalancer),
	// annotation keys under the prefix that nothing reads (UnknownAnnotation, a Warning),
	// and addresses or a hostname of the cloud's that the Service's status cannot hold
	// (AddressNotPublished, a Warning), on the Service. Nil records none.
	Recorder record.EventRecorder
	// Settings are the adapter's own load balancer settings (see Setting), read from the
	// Service's annotations and handed to the cloud in cloudapi.LoadBalancerSpec.Settings.
	// New refuses declarations that Settings.Validate refuses.
	Settings Settings
	// SettingDefaults override the declared defaults of Settings for every Service
	// (setting name to value, as the cloud config's loadBalancer.settings). New refuses a
	// name not declared or a value not allowed.
	SettingDefaults map[string]string
	// TargetGroups is the cloud's target group API, or nil when the cloud has none (see
	// cloudapi.TargetGroups). With it, the load balancers that want the same Nodes (the
	// same node selector, or none) send traffic to one shared target group instead of
	// their own targets, so that a Node added or removed is one write to each group
	// rather than one per load balancer (see "Target groups" in the package
	// documentation). Existing load balancers move into their group with one update
	// each, addresses kept. Nil keeps each load balancer's own targets.
	TargetGroups cloudapi.TargetGroupAPI
}

// ErrOwnedElsewhere is matched (errors.Is) by the error of EnsureLoadBalancer when the
// Service's load-balancer-id annotation names a load balancer that carries the ownership
// tags of another cluster or another Service. Nothing is changed then.
var ErrOwnedElsewhere = errors.New("the load balancer is owned elsewhere")

// lock serializes the calls for one Service (by its UID): the service controller's sync
// and its node sync may run for the same Service at once. It also keeps the snapshot's
// entry of the Service in the order of the cloud's answers. Adopting and releasing also
// hold the load balancer's own lock (lockLB), inside the Service's, so that two Services
// never adopt one load balancer at once and none adopts one whose release is still being
// written (or retried).
func (l *LoadBalancer) lock(uid string) (unlock func()) { return l.services.Lock(uid) }

// lockLB serializes the adoption and release of the load balancer with cloud ID id.
func (l *LoadBalancer) lockLB(id string) (unlock func()) { return l.loadBalancers.Lock(id) }

// GetLoadBalancerName returns the cloud name of the Service's load balancer: the name
// annotation if it is valid, else a name made of the cluster ID and the Service UID.
func (l *LoadBalancer) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	if a, _, errs := parseAnnotations(l.opts.AnnotationPrefix, l.opts.Settings, svc.Annotations); len(errs) == 0 && a.name != "" {
		return a.name
	}
	return defaultName(l.opts.ClusterID, svc)
}

// GetLoadBalancer reports whether the Service has a load balancer and its status. It
// always asks the cloud (one list by owner tags), never the snapshot: the service
// controller asks it whether there is anything to delete, and a stale "no" would leave a
// load balancer behind. A cloud error is returned as it is, never as "no load balancer";
// a status of which nothing can be published (addresses or a hostname the API server
// would refuse) is logged and reported empty; what EnsureLoadBalancer reports.
func (l *LoadBalancer) GetLoadBalancer(ctx context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	uid, err := serviceUID(svc)
	if err != nil {
		return nil, false, err
	}
	defer l.groups.Collect(ctx) // last, outside the Service's lock: after a failed delete, the service controller asks here
	defer l.lock(uid)()
	found, err := l.find(ctx, svc)
	if err != nil {
		l.snap.forget(uid)
		return nil, false, err
	}
	if len(found) == 0 {
		l.snap.gone(uid)
		return nil, false, nil
	}
	l.snap.record(uid, pointers(found)...)
	st, _, err := l.status(svc, &found[0]) // EnsureLoadBalancer reports what the status leaves out
	if err != nil {
		// The service controller asks whether there is a load balancer to delete: a status
		// it cannot publish must not keep the answer from it.
		klog.FromContext(ctx).Info("Reporting the Service's load balancer without a status", "service", klog.KObj(svc), "err", err)
		return &corev1.LoadBalancerStatus{}, true, nil
	}
	return st, true, nil
}

// EnsureLoadBalancer makes the Service's load balancer match the Service and nodes and
// returns its status.
//
// When the snapshot knows exactly one load balancer of the Service, active and matching
// what the Service asks for, it returns that one's status without a cloud call (after a
// refresh of the snapshot, when it was older than Options.MaxAge). Otherwise it reads
// the load balancer afresh (a list by owner tags) and writes only what differs from that
// read, in place, except for a switch between internal and public, which replaces the load
// balancer. It creates at most one load balancer per Service UID: after an ambiguous
// failure or a conflict it looks again by owner tags and adopts what it finds. When the
// Service has no load balancer and its load-balancer-id annotation names one, it adopts
// that one instead of creating (see the package documentation), or fails without a write.
// While the cloud provisions, it returns an api.RetryError.
func (l *LoadBalancer) EnsureLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	uid, err := serviceUID(svc)
	if err != nil {
		return nil, err
	}
	defer l.groups.Collect(ctx) // last, outside the Service's lock
	defer l.lock(uid)()
	l.track(svc)

	if current, ok := l.trusted(ctx, uid); ok {
		want, s, err := l.desired(logger, svc, nodes, current)
		if err != nil {
			return nil, err
		}
		done, err := l.group(ctx, logger, &want, s.nodeSelector, 0)
		if err != nil {
			return nil, err
		}
		done()
		if cloudapi.DiffLoadBalancer(l.opts.Settings.comparable(current.Spec), want).Empty() {
			return l.publish(logger, svc, current)
		}
	}

	current, err := l.ensure(ctx, logger, svc, nodes)
	if err != nil {
		l.snap.forget(uid)
		return nil, err
	}
	l.snap.record(uid, current)
	switch {
	case current.Status == cloudapi.LoadBalancerError:
		// Not "not ready yet": let the service controller back off.
		return nil, fmt.Errorf("load balancer %s of service %s/%s: the cloud reports status %s", current.ID, svc.Namespace, svc.Name, current.Status)
	case current.Status != cloudapi.LoadBalancerActive || !reachable(current):
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", current.ID, current.Status), ProvisioningRetryDelay)
	}
	return l.publish(logger, svc, current)
}

// ensure is EnsureLoadBalancer from a fresh read: it finds the Service's load balancers
// by owner tags, deletes duplicates, and creates, replaces or updates the load balancer.
// It returns the load balancer as the cloud last answered.
func (l *LoadBalancer) ensure(ctx context.Context, logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node) (_ *cloudapi.LoadBalancer, err error) {
	found, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		l.snap.gone(string(svc.UID)) // its group, if it had one, may be unused now
	}
	adoptID := l.annotation(svc, AnnotationLoadBalancerID).loadBalancerID // malformed: desired reports it
	found, err = l.dropDuplicates(ctx, logger, svc, found, adoptID)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 && adoptID != "" {
		return l.adopt(ctx, logger, svc, nodes, adoptID)
	}
	var current *cloudapi.LoadBalancer
	if len(found) > 0 {
		current = &found[0]
	}
	want, s, err := l.desired(logger, svc, nodes, current)
	if err != nil {
		return nil, err
	}
	done, err := l.group(ctx, logger, &want, s.nodeSelector, 0)
	if err != nil {
		return nil, err
	}
	defer done()
	if want.TargetGroup != "" && (current == nil || current.Spec.TargetGroup != want.TargetGroup) {
		defer func() {
			if err != nil {
				l.groups.Due() // the group chosen may be named by no load balancer
			}
		}()
	}

	switch {
	case current == nil:
		return l.create(ctx, logger, svc, want)
	case current.Spec.Internal != want.Internal:
		keep, err := l.keepOnDelete(svc)
		if err != nil {
			return nil, err
		}
		if keep {
			return nil, fmt.Errorf("load balancer %s is %s, and annotation %s%s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s%s to \"false\" to replace it, or set %s%s back",
				current.ID, reach(current.Spec.Internal), l.opts.AnnotationPrefix, AnnotationInternal, reach(want.Internal), l.opts.AnnotationPrefix, AnnotationKeepOnDelete, l.opts.AnnotationPrefix, AnnotationInternal)
		}
		logger.Info("Replacing load balancer: internal and public cannot be switched in place", "loadBalancer", current.ID, "internal", want.Internal)
		return l.replace(ctx, logger, svc, current, want)
	case l.opts.Settings.replaced(current.Spec, want) != "":
		name := l.opts.Settings.replaced(current.Spec, want)
		keep, err := l.keepOnDelete(svc)
		if err != nil {
			return nil, err
		}
		if keep {
			return nil, fmt.Errorf("load balancer %s has %s %s, and annotation %s%s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s%s to \"false\" to replace it, or set %s%s back",
				current.ID, name, quote.Value(current.Spec.Settings[name]), l.opts.AnnotationPrefix, name, quote.Value(want.Settings[name]), l.opts.AnnotationPrefix, AnnotationKeepOnDelete, l.opts.AnnotationPrefix, name)
		}
		logger.Info("Replacing load balancer: the cloud cannot change this setting in place", "loadBalancer", current.ID, "setting", name, "from", quote.Text(current.Spec.Settings[name]), "to", quote.Text(want.Settings[name]))
		return l.replace(ctx, logger, svc, current, want)
	default:
		return l.update(ctx, logger, string(svc.UID), false, current, want)
	}
}

// UpdateLoadBalancer brings the targets (and anything else that drifted) in line with the
// nodes. When the snapshot knows exactly one load balancer of the Service, active and
// without anything to change, it makes no cloud call; otherwise it writes only what
// differs from a fresh read: the list of the cluster's load balancers that began after the
// node set arrived, which the calls of one node sync share, else a list by owner tags (see
// "A node sync" in the package documentation). It
// never creates a load balancer: when the Service has none, it returns an error matching
// cloudapi.ErrNotFound, and the service controller's next sync of the Service creates it.
func (l *LoadBalancer) UpdateLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) error {
	uid, err := serviceUID(svc)
	if err != nil {
		return err
	}
	defer l.groups.Collect(ctx) // last, outside the Service's lock
	defer l.lock(uid)()
	l.track(svc)
	serr, err := l.updateNodes(ctx, svc, nodes, true)
	if err != nil {
		return err
	}
	return serr
}

// updateNodes is UpdateLoadBalancer under the Service's lock. It returns what is wrong
// with the Service (serr: a malformed annotation, which does not keep the node set from
// the targets) apart from what failed (err). A node sync (nodeSync: the service
// controller's, which hands every Service the same Node objects) bases its writes on the
// node sync's shared list when it can; other callers read by owner tags.
func (l *LoadBalancer) updateNodes(ctx context.Context, svc *corev1.Service, nodes []*corev1.Node, nodeSync bool) (serr, err error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	uid := string(svc.UID)
	var since uint64
	tracked := false
	if nodeSync {
		since, tracked = l.nodeSets.observe(nodes, l.snap.tick) // first, as the call arrives
	}
	if !tracked {
		since = 0 // a group write then reads the group after this call began
	}
	if current, ok := l.trusted(ctx, uid); ok {
		want, serr, done, err := l.updateWant(ctx, logger, svc, nodes, current, since)
		if err != nil {
			return nil, err
		}
		done()
		if cloudapi.DiffLoadBalancer(l.opts.Settings.comparable(current.Spec), want).Empty() {
			return serr, nil
		}
	}

	// Something to write: the base is a read begun after the node set changed and after
	// the Service's last write, the one list of the cluster's load balancers that serves
	// the whole node sync when it has one, else the Service's own.
	if tracked {
		if current, ok := l.snap.listedSince(ctx, uid, since); ok {
			want, serr, done, err := l.updateWant(ctx, logger, svc, nodes, current, since)
			if err != nil {
				return nil, err
			}
			defer done()
			lb, err := l.update(ctx, logger, uid, false, current, want)
			if err != nil {
				l.snap.forget(uid)
				return nil, err
			}
			l.snap.record(uid, lb)
			return serr, nil
		}
	}
	found, err := l.find(ctx, svc)
	if err != nil {
		l.snap.forget(uid)
		return nil, err
	}
	if len(found) == 0 {
		l.snap.gone(uid)
		return nil, fmt.Errorf("service %s/%s has no load balancer with tags %s=%s, %s=%s to update: %w", svc.Namespace, svc.Name,
			cloudapi.TagCluster, l.opts.ClusterID, cloudapi.TagService, svc.UID, cloudapi.ErrNotFound)
	}
	want, serr, done, err := l.updateWant(ctx, logger, svc, nodes, &found[0], since)
	if err != nil {
		return nil, err
	}
	defer done()
	lb, err := l.update(ctx, logger, uid, false, &found[0], want)
	if err != nil {
		l.snap.forget(uid)
		return nil, err
	}
	found[0] = *lb
	l.snap.record(uid, pointers(found)...)
	return serr, nil
}

// updateWant is what UpdateLoadBalancer makes of current: what the Service asks for, but
// never a switch between internal and public (only EnsureLoadBalancer replaces). When an
// annotation is malformed, it is current with the nodes (that a well-formed node selector
// selects) as targets, and the Service's error (serr): removed nodes must not stay targets
// until the user fixes the annotation. A malformed node selector leaves the targets (and
// the target group) as they are: every node is not what its user asked for. With target
// groups, the targets go to the group (see group, whose read is fresh after since), and
// done must be called once the load balancer is written; err is what failed.
func (l *LoadBalancer) updateWant(ctx context.Context, logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node, current *cloudapi.LoadBalancer, since uint64) (want cloudapi.LoadBalancerSpec, serr error, done func(), err error) {
	want, s, serr := l.desired(logger, svc, nodes, current)
	if serr != nil {
		want = current.Spec.Clone()
		if s.nodeSelectorBad {
			return l.keepUpdated(current, want), serr, func() {}, nil
		}
		want.Targets = l.targets(logger, nodes, s.nodeSelector)
		want.TargetGroup = ""
	}
	if done, err = l.group(ctx, logger, &want, s.nodeSelector, since); err != nil {
		return want, serr, nil, err
	}
	return l.keepUpdated(current, want), serr, done, nil
}

// keepUpdated is want without what UpdateLoadBalancer never changes: internal, and the
// settings that only a replacement changes.
func (l *LoadBalancer) keepUpdated(current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	want.Internal = current.Spec.Internal
	l.opts.Settings.keepReplaced(current.Spec, &want)
	return want
}

// EnsureLoadBalancerDeleted deletes every load balancer that carries the Service's owner
// tags, with its listeners, targets and health check, and returns nil when there is none.
// It always asks the cloud (one list by owner tags), never the snapshot.
//
// When the Service's keep-on-delete annotation (else Options.KeepOnDelete) says so, it
// deletes only duplicates (as EnsureLoadBalancer does) and releases the Service's load
// balancer instead: one update, based on that list, removes the owner tags
// (cloudapi.TagCluster, cloudapi.TagService, cloudapi.TagServiceName) and every target and
// keeps the rest, the addresses too, so that a Service can adopt it again with the
// load-balancer-id annotation. A released load balancer is not the cluster's any more and
// is never found again by owner tags, so a retry after a lost answer finds nothing to do.
// A malformed keep-on-delete annotation is an error before any cloud call: nothing is
// deleted while it is unclear whether to keep it.
func (l *LoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *corev1.Service) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	uid, err := serviceUID(svc)
	if err != nil {
		return err
	}
	keep, err := l.keepOnDelete(svc)
	if err != nil {
		return err
	}
	defer l.groups.Collect(ctx) // last, outside the Service's lock
	defer l.lock(uid)()
	l.untrack(uid)
	l.mu.Lock()
	delete(l.unknown, uid)
	l.mu.Unlock()
	found, err := l.find(ctx, svc)
	if err != nil {
		l.snap.forget(uid)
		return err
	}
	if len(found) == 0 {
		l.snap.gone(uid) // its group, if it had one, may be unused now
		return nil
	}
	if keep {
		if found, err = l.dropDuplicates(ctx, logger, svc, found, l.annotation(svc, AnnotationLoadBalancerID).loadBalancerID); err != nil {
			l.snap.forget(uid)
			return err
		}
	}
	var left []string // the groups the deleted load balancers named
	for i := range found {
		if err := l.remove(ctx, logger, svc, &found[i], keep); err != nil {
			l.snap.forget(uid)
			return err
		}
		if !keep { // a release drops its group itself (update)
			left = append(left, found[i].Spec.TargetGroup)
		}
	}
	l.snap.record(uid)
	l.groups.Drop(ctx, logger, "", left...) // after the record: the snapshot knows they are gone
	return nil
}

// keepOnDelete reports whether the Service's load balancer is kept in the cloud when the
// Service no longer wants it: its keep-on-delete annotation, else Options.KeepOnDelete.
func (l *LoadBalancer) keepOnDelete(svc *corev1.Service) (bool, error) {
	key := l.opts.AnnotationPrefix + AnnotationKeepOnDelete
	v, ok := svc.Annotations[key]
	if !ok {
		return l.opts.KeepOnDelete, nil
	}
	a, _, errs := parseAnnotations(l.opts.AnnotationPrefix, nil, map[string]string{key: v})
	if len(errs) > 0 {
		return false, fmt.Errorf("service %s/%s: %w; nothing is deleted until it says whether to keep the load balancer", svc.Namespace, svc.Name, errs[0])
	}
	return *a.keepOnDelete, nil
}

// annotation returns the Service's annotation name alone, parsed (zero when it is absent
// or malformed: desired reports a malformed one).
func (l *LoadBalancer) annotation(svc *corev1.Service, name string) parsedAnnotations {
	key := l.opts.AnnotationPrefix + name
	v, ok := svc.Annotations[key]
	if !ok {
		return parsedAnnotations{}
	}
	a, _, _ := parseAnnotations(l.opts.AnnotationPrefix, nil, map[string]string{key: v})
	return a
}

// trusted returns the Service's load balancer from the snapshot when the snapshot may
// stand in for a fresh read to find that there is nothing to do: it knows exactly one
// load balancer of the Service, active and with addresses or a hostname. Anything else
// (none, duplicates, provisioning, status error, a failed call since) is read afresh.
func (l *LoadBalancer) trusted(ctx context.Context, uid string) (*cloudapi.LoadBalancer, bool) {
	lbs, ok := l.snap.lookup(ctx, uid)
	if !ok || len(lbs) != 1 || lbs[0].Status != cloudapi.LoadBalancerActive || !reachable(lbs[0]) {
		return nil, false
	}
	return lbs[0], true
}

// reachable reports whether clients can reach the load balancer: it has addresses or a
// hostname.
func reachable(lb *cloudapi.LoadBalancer) bool { return len(lb.Addresses) > 0 || lb.Hostname != "" }

// serviceUID returns the Service's UID, which its load balancer's owner tag holds.
func serviceUID(svc *corev1.Service) (string, error) {
	if svc.UID == "" {
		return "", fmt.Errorf("service %s/%s has no UID: it cannot own a load balancer", svc.Namespace, svc.Name)
	}
	return string(svc.UID), nil
}

// pointers returns pointers to the elements of lbs.
func pointers(lbs []cloudapi.LoadBalancer) []*cloudapi.LoadBalancer {
	out := make([]*cloudapi.LoadBalancer, len(lbs))
	for i := range lbs {
		out[i] = &lbs[i]
	}
	return out
}

// find lists the load balancers with the Service's owner tags, oldest (lowest ID) first.
func (l *LoadBalancer) find(ctx context.Context, svc *corev1.Service) ([]cloudapi.LoadBalancer, error) {
	if _, err := serviceUID(svc); err != nil {
		return nil, err
	}
	var out []cloudapi.LoadBalancer
	_, err := paging.LoadBalancers(ctx, l.api, ownerTags(l.opts.ClusterID, svc), 0, func(lb *cloudapi.LoadBalancer) bool {
		out = append(out, *lb)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("looking up the load balancer of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return out, nil
}

// dropDuplicates deletes all but one of several load balancers of one Service, which only
// a backend that lost track of a create can have made. It keeps the one with ID prefer
// (the load balancer the Service's load-balancer-id annotation names), else the one whose
// address or hostname the Service's status publishes, else the first by ID.
func (l *LoadBalancer) dropDuplicates(ctx context.Context, logger klog.Logger, svc *corev1.Service, found []cloudapi.LoadBalancer, prefer string) ([]cloudapi.LoadBalancer, error) {
	if len(found) < 2 || !slices.ContainsFunc(found, func(lb cloudapi.LoadBalancer) bool { return lb.ID != found[0].ID }) {
		return found[:min(len(found), 1)], nil
	}
	keep := slices.IndexFunc(found, func(lb cloudapi.LoadBalancer) bool { return prefer != "" && lb.ID == prefer })
	if keep < 0 {
		keep = max(0, slices.IndexFunc(found, func(lb cloudapi.LoadBalancer) bool {
			return slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(in corev1.LoadBalancerIngress) bool {
				return (in.IP != "" && slices.Contains(lb.Addresses, in.IP)) || (in.Hostname != "" && in.Hostname == lb.Hostname)
			})
		}))
	}
	for _, extra := range found {
		if extra.ID == found[keep].ID {
			continue // the one kept, however often the cloud listed it
		}
		logger.Info("Deleting duplicate load balancer of the service", "loadBalancer", extra.ID, "keeping", found[keep].ID)
		if err := l.deleteLB(ctx, &extra, string(svc.UID)); err != nil {
			return nil, err
		}
		l.groups.Drop(ctx, logger, extra.ID, extra.Spec.TargetGroup)
	}
	return found[keep : keep+1], nil
}

// create creates the load balancer, or adopts the one a lost or conflicting create made.
func (l *LoadBalancer) create(ctx context.Context, logger klog.Logger, svc *corev1.Service, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	lb, err := l.api.CreateLoadBalancer(ctx, want)
	if err == nil {
		logger.Info("Created load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
		return lb, nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			l.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	// The create may have happened (a lost answer), or another sync made it: look again.
	found, ferr := l.find(ctx, svc)
	if ferr != nil {
		return nil, fmt.Errorf("creating load balancer %q: %w; looking for it afterwards: %w", want.Name, err, ferr)
	}
	if len(found) == 0 {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating load balancer %q: %w; no load balancer of this service exists, so the name or a requested address belongs to another: choose another with annotation %s%s or %s%s, or, if it is a load balancer kept by keep-on-delete, adopt it with annotation %s%s",
				want.Name, err, l.opts.AnnotationPrefix, AnnotationName, l.opts.AnnotationPrefix, AnnotationIPAddresses, l.opts.AnnotationPrefix, AnnotationLoadBalancerID)
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	logger.Info("Adopting the load balancer of an earlier create", "loadBalancer", found[0].ID, "createErr", err)
	return l.update(ctx, logger, string(svc.UID), false, &found[0], want)
}

// adopt makes the load balancer with ID id, named by the Service's load-balancer-id
// annotation, the Service's: one fresh read (GetLoadBalancer), then, when it carries no
// ownership tag of another cluster or Service, one update to what the Service asks for,
// with the Service's owner tags and the load balancer's addresses. A load balancer that
// does not exist is an error, never a reason to create one.
func (l *LoadBalancer) adopt(ctx context.Context, logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node, id string) (*cloudapi.LoadBalancer, error) {
	defer l.lockLB(id)()
	key := l.opts.AnnotationPrefix + AnnotationLoadBalancerID
	lb, err := l.api.GetLoadBalancer(ctx, id)
	switch {
	case cloudapi.IsNotFound(err):
		return nil, fmt.Errorf("annotation %s names load balancer %s, which does not exist: %w; ccmkit creates none in its place: correct the ID, or remove the annotation to get a new load balancer", key, id, err)
	case err != nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: %w", id, key, err)
	case lb == nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: the cloud answered neither a load balancer nor an error: %w", id, key, cloudapi.ErrTransient)
	}
	owned, err := l.adoptable(svc, lb, key)
	if err != nil {
		logger.Info("Refusing to adopt load balancer", "loadBalancer", id, "tags", lb.Spec.Tags, "err", err)
		return nil, err
	}
	want, s, err := l.desired(logger, svc, nodes, lb)
	if err != nil {
		return nil, err
	}
	if err := keepsAddresses(lb, want, key); err != nil {
		return nil, err
	}
	done, err := l.group(ctx, logger, &want, s.nodeSelector, 0)
	if err != nil {
		return nil, err
	}
	defer done()
	adopted, err := l.update(ctx, logger, string(svc.UID), true, lb, want)
	if err != nil {
		if !owned {
			return nil, fmt.Errorf("adopting load balancer %s, named by annotation %s: %w; nothing else was written to it: it is not this Service's until the adopting update succeeds", id, key, err)
		}
		return nil, err
	}
	if !owned {
		logger.Info("Adopted load balancer", "loadBalancer", id, "addresses", adopted.Addresses)
		l.event(svc, corev1.EventTypeNormal, "AdoptedLoadBalancer", fmt.Sprintf("Adopted load balancer %s (addresses [%s]), named by annotation %s", id, strings.Join(adopted.Addresses, ", "), key))
	}
	return adopted, nil
}

// adoptable reports whether the Service may adopt lb: when it carries none of ccmkit's
// ownership tags (owned false), or already the Service's own (owned true: a list that
// missed it). Any other owner, even one tag of one, is ErrOwnedElsewhere; the error names
// no other cluster or Service, since the Service's events are its users'.
func (l *LoadBalancer) adoptable(svc *corev1.Service, lb *cloudapi.LoadBalancer, key string) (owned bool, err error) {
	cluster, hasCluster := lb.Spec.Tags[cloudapi.TagCluster]
	uid, hasService := lb.Spec.Tags[cloudapi.TagService]
	switch {
	case lb.Status == cloudapi.LoadBalancerDeleting:
		return false, fmt.Errorf("annotation %s names load balancer %s, which the cloud is deleting: name another, or remove the annotation to get a new load balancer", key, lb.ID)
	case !hasCluster && !hasService:
		return false, nil
	case cluster == l.opts.ClusterID && uid == string(svc.UID):
		return true, nil
	case hasCluster && cluster != l.opts.ClusterID:
		return false, fmt.Errorf("annotation %s names load balancer %s, which belongs to another cluster (tag %s): %w; ccmkit changes nothing that is not this cluster's: name a load balancer without ownership tags, or remove the annotation",
			key, lb.ID, cloudapi.TagCluster, ErrOwnedElsewhere)
	default:
		return false, fmt.Errorf("annotation %s names load balancer %s, which belongs to another Service (tag %s): %w; it is adopted only once that Service lets it go (deleted with keep-on-delete): name another, or remove the annotation",
			key, lb.ID, cloudapi.TagService, ErrOwnedElsewhere)
	}
}

// keepsAddresses checks that updating lb to want keeps lb's addresses: the Service asks
// for no other address than lb has, and for every family of lb's addresses.
func keepsAddresses(lb *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, key string) error {
	if !slices.Equal(want.RequestedIPs, lb.Spec.RequestedIPs) {
		for _, ip := range want.RequestedIPs {
			if !slices.Contains(lb.Addresses, ip) {
				return fmt.Errorf("the Service asks for address %s (annotation %s or spec.loadBalancerIP), but load balancer %s, named by annotation %s, has [%s]: adopting keeps its addresses; ask for those or none",
					ip, AnnotationIPAddresses, lb.ID, key, strings.Join(lb.Addresses, ", "))
			}
		}
	}
	families := want.IPFamilies
	if len(families) == 0 {
		families = []cloudapi.IPFamily{cloudapi.IPv4}
	}
	for _, a := range lb.Addresses {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return fmt.Errorf("load balancer %s, named by annotation %s, has the address %q, which is not an IP address: the cloud's answer cannot tell whether adopting keeps it", lb.ID, key, a)
		}
		f := cloudapi.IPv4
		if !ip.Unmap().Is4() {
			f = cloudapi.IPv6
		}
		if !slices.Contains(families, f) {
			return fmt.Errorf("load balancer %s, named by annotation %s, has the %s address %s, but the Service's spec.ipFamilies are %v: adopting would drop it; set spec.ipFamilyPolicy and spec.ipFamilies to include %s",
				lb.ID, key, f, a, families, f)
		}
	}
	return nil
}

// replace deletes the Service's load balancer current and creates one from want, then
// drops the target group current named when the new one names another.
func (l *LoadBalancer) replace(ctx context.Context, logger klog.Logger, svc *corev1.Service, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if err := l.remove(ctx, logger, svc, current, false); err != nil {
		return nil, err
	}
	created, err := l.create(ctx, logger, svc, want)
	if old := current.Spec.TargetGroup; old != "" && (err != nil || created.Spec.TargetGroup != old) {
		if err != nil {
			l.groups.Due()
		} else {
			l.groups.Drop(ctx, logger, current.ID, old)
		}
	}
	return created, err
}

// remove deletes the Service's load balancer lb, or releases it when keep is true.
func (l *LoadBalancer) remove(ctx context.Context, logger klog.Logger, svc *corev1.Service, lb *cloudapi.LoadBalancer, keep bool) error {
	if keep {
		return l.release(ctx, logger, svc, lb)
	}
	if err := l.deleteLB(ctx, lb, string(svc.UID)); err != nil {
		if lb.Spec.TargetGroup != "" {
			l.groups.Due() // it may be gone all the same, and its group unused
		}
		return err
	}
	logger.Info("Deleted load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
	return nil
}

// release lets go of the Service's load balancer lb, read by owner tags just before: one
// update removes ccmkit's ownership tags and every target, and keeps everything else (the
// name, listeners, health check, requested addresses, other tags) and the addresses. The
// targets go because they are this cluster's nodes, whose node ports another Service may
// get next: a kept load balancer must not send traffic into the cluster.
func (l *LoadBalancer) release(ctx context.Context, logger klog.Logger, svc *corev1.Service, lb *cloudapi.LoadBalancer) error {
	defer l.lockLB(lb.ID)()
	want := lb.Spec.Clone()
	for _, k := range []string{cloudapi.TagCluster, cloudapi.TagService, cloudapi.TagServiceName} {
		delete(want.Tags, k)
	}
	want.Targets = nil
	want.TargetGroup = ""
	released, err := l.update(ctx, logger, string(svc.UID), false, lb, want)
	if err != nil {
		return fmt.Errorf("releasing load balancer %s (keep-on-delete): %w", lb.ID, err)
	}
	logger.Info("Released load balancer: kept in the cloud without this cluster's ownership tags and targets", "loadBalancer", lb.ID, "addresses", released.Addresses)
	l.event(svc, corev1.EventTypeNormal, "KeptLoadBalancer", fmt.Sprintf("Kept load balancer %s (addresses [%s]) in the cloud without this Service's ownership tags and targets; a Service adopts it with annotation %s%s: %s",
		lb.ID, strings.Join(released.Addresses, ", "), l.opts.AnnotationPrefix, AnnotationLoadBalancerID, lb.ID))
	return nil
}

// update writes the differences between current and want, if any, for the Service with
// UID uid (adopting: the update that adopts current; see guard).
//
// When the cloud refuses them as a request it cannot build (ErrInvalidRequest: a setting
// its load balancers lack, such as TLS termination), the Service cannot have what it asks
// for until its owner changes it; its targets must follow the nodes all the same. So when
// want also changes the targets, update writes the targets alone, and returns the refusal;
// never to a load balancer that is not yet the Service's (a refused adoption), which
// would send traffic into the cluster from a load balancer no Service owns.
func (l *LoadBalancer) update(ctx context.Context, logger klog.Logger, uid string, adopting bool, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	changes := cloudapi.DiffLoadBalancer(l.opts.Settings.comparable(current.Spec), want)
	if changes.Empty() {
		return current, nil
	}
	lb, err := l.updateLB(ctx, current, uid, adopting, cloudapi.LoadBalancerUpdate{Spec: want, Changes: changes})
	if err != nil {
		err = fmt.Errorf("updating load balancer %s: %w", current.ID, err)
		if changes.TargetGroup {
			l.groups.Due() // the group chosen may be named by no load balancer
			if errors.Is(err, cloudapi.ErrInvalidRequest) {
				l.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
			}
		}
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			if terr := l.updateTargetsOnly(ctx, logger, uid, current, want, changes); terr != nil {
				err = fmt.Errorf("%w; the targets were not written alone: %w", err, terr)
			}
		}
		return nil, err
	}
	if lb == nil {
		return nil, fmt.Errorf("updating load balancer %s: the cloud answered neither a load balancer nor an error: %w", current.ID, cloudapi.ErrTransient)
	}
	if old := current.Spec.TargetGroup; old != "" && old != lb.Spec.TargetGroup {
		l.groups.Drop(ctx, logger, current.ID, old)
	}
	logger.V(2).Info("Updated load balancer", "loadBalancer", lb.ID, "addTargets", len(changes.AddTargets), "removeTargets", len(changes.RemoveTargets),
		"addListeners", len(changes.AddListeners), "updateListeners", len(changes.UpdateListeners), "removeListeners", len(changes.RemoveListeners))
	return lb, nil
}

// updateTargetsOnly writes want's targets onto current, the load balancer of the Service
// with UID uid, after the cloud refused the whole of changes, when they change the
// targets and something else. A failed write is logged: the refusal is what the caller
// reports; a write guard refuses (current is not the Service's) is returned, for the
// caller to say why.
func (l *LoadBalancer) updateTargetsOnly(ctx context.Context, logger klog.Logger, uid string, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, changes cloudapi.LoadBalancerChanges) error {
	only := cloudapi.LoadBalancerChanges{AddTargets: changes.AddTargets, RemoveTargets: changes.RemoveTargets, TargetGroup: changes.TargetGroup}
	others := changes
	others.AddTargets, others.RemoveTargets, others.TargetGroup = nil, nil, false
	if only.Empty() || others.Empty() {
		return nil // no target change, or nothing but: the refused request was this one
	}
	targetsOnly := current.Spec.Clone()
	targetsOnly.Targets = want.Targets
	targetsOnly.TargetGroup = want.TargetGroup
	if _, err := l.updateLB(ctx, current, uid, false, cloudapi.LoadBalancerUpdate{Spec: targetsOnly, Changes: only}); err != nil {
		if errors.Is(err, errNotOwned) {
			return err
		}
		logger.Error(err, "Updating the targets alone, after the cloud refused the Service's other changes", "loadBalancer", current.ID)
		return nil
	}
	logger.Info("Updated the targets alone: the cloud refused the Service's other changes", "loadBalancer", current.ID,
		"addTargets", len(only.AddTargets), "removeTargets", len(only.RemoveTargets))
	return nil
}

// status is the Service status of a load balancer:
//   - the hostname annotation's name alone, when the Service has a valid one: kube-proxy
//     then has no address to short-circuit and sends in-cluster traffic through the load
//     balancer;
//   - else one ingress per address, with ipMode Proxy when the load balancer sends the
//     PROXY protocol (kube-proxy must then not short-circuit in-cluster traffic to the
//     address), VIP otherwise; a hostname the cloud reports beside addresses is not
//     published, so that every ingress is one address (a DNS controller publishing the
//     status would otherwise mix address and alias records for one name);
//   - else the cloud's hostname, for clouds whose load balancers are reached by name.
//
// What the cloud reports that the API server would refuse in the status (an address that
// apivalid.IP refuses, a hostname that checkHostname refuses) is left out and described in
// refused, its value quoted to a bound. When that leaves nothing to publish, the status
// is an error, never an empty status, which would read as "no load balancer".
func (l *LoadBalancer) status(svc *corev1.Service, lb *cloudapi.LoadBalancer) (_ *corev1.LoadBalancerStatus, refused []string, _ error) {
	if h := l.annotatedHostname(svc); h != "" {
		return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: h}}}, nil, nil
	}
	st := &corev1.LoadBalancerStatus{}
	if len(lb.Addresses) == 0 && lb.Hostname != "" {
		if err := checkHostname(lb.Hostname); err != nil {
			refused = append(refused, fmt.Sprintf("the hostname %s (%v)", quote.Value(lb.Hostname), err))
		} else {
			st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{Hostname: lb.Hostname})
		}
	}
	mode := corev1.LoadBalancerIPModeVIP
	if lb.Spec.ProxyProtocol {
		mode = corev1.LoadBalancerIPModeProxy
	}
	for _, a := range lb.Addresses {
		if err := apivalid.IP(a); err != nil {
			refused = append(refused, fmt.Sprintf("the address %s (%v)", quote.Value(a), err))
			continue
		}
		m := mode
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: a, IPMode: &m})
	}
	if len(st.Ingress) == 0 && len(refused) > 0 {
		return nil, refused, fmt.Errorf("load balancer %s: the cloud reports nothing a Service's status can hold: %s", lb.ID, listRefused(refused))
	}
	return st, refused, nil
}

// maxRefusedListed is how many of the values the status leaves out an error or event
// lists; it says how many more there are.
const maxRefusedListed = 3

// listRefused joins what status refused, at most maxRefusedListed of them.
func listRefused(refused []string) string {
	if len(refused) <= maxRefusedListed {
		return strings.Join(refused, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(refused[:maxRefusedListed], ", "), len(refused)-maxRefusedListed)
}

// publish is status for EnsureLoadBalancer, which reports what the status leaves out: a
// Warning event AddressNotPublished on the Service naming the load balancer and the
// values, whether the rest is published or the status is an error.
func (l *LoadBalancer) publish(logger klog.Logger, svc *corev1.Service, lb *cloudapi.LoadBalancer) (*corev1.LoadBalancerStatus, error) {
	st, refused, err := l.status(svc, lb)
	if len(refused) > 0 {
		logger.Info("Not publishing what the cloud reports and a Service's status cannot hold", "loadBalancer", lb.ID, "refused", len(refused), "published", st != nil)
		l.event(svc, corev1.EventTypeWarning, "AddressNotPublished", fmt.Sprintf("Load balancer %s: the cloud reports %s, which a Service's status cannot hold: not published",
			lb.ID, listRefused(refused)))
	}
	return st, err
}

// annotatedHostname returns the Service's hostname annotation, or "" when it has none or
// a malformed one (which desired reports).
func (l *LoadBalancer) annotatedHostname(svc *corev1.Service) string {
	h := strings.TrimSpace(svc.Annotations[l.hostnameKey])
	if h == "" || checkHostname(h) != nil {
		return ""
	}
	return h
}
