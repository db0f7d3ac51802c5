package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/keyedlock"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// LoadBalancer implements cloudprovider.LoadBalancer over a cloudapi.LoadBalancerAPI. A
// Service's load balancer is the one that carries the cluster's ID and the Service's UID in
// its tags (cloudapi.TagCluster, cloudapi.TagService); names are for humans.
//
// It keeps a snapshot of the cluster's load balancers (see Options.MaxAge), so that a
// call that would change nothing costs no load balancer call; see snapshot.
type LoadBalancer struct {
	opts Options
	snap *snapshot // read: what the cloud has (see reconcile)
	p    *planner  // plan: what to write
	// quiet plans for Plan: the same planner, reporting to nobody.
	quiet *planner
	w     *writer // apply: the one that writes
	// report is the one that tells Services what their syncs found out.
	report *reporter

	// nodeSets marks when the node set UpdateLoadBalancer is given changed.
	nodeSets nodeSetClock
	// services serializes the calls for one owner (a Service's UID, or a share: see
	// intents.owner): the service controller's sync and its node sync may run for the same
	// Service at once, and the Services of a share write one load balancer. It also keeps
	// the snapshot's entry of the owner in the order of the cloud's answers. Adopting and
	// releasing also hold the load balancer's own lock (writer.lockLB), inside this one.
	services keyedlock.Locks[string]

	shares  shareBook // the shares' members (see planner.join)
	intents intents   // reads what each Service asks (its annotations, its owner)
	tracked tracked   // the Services that select their Nodes by label (see SyncNodeLabels)
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
	for k, whose := range map[string]string{StatusAnnotationLoadBalancerID: "which ccmkit writes", AnnotationAcknowledgeNewLoadBalancer: "which the operator sets"} {
		if strings.HasPrefix(k, opts.AnnotationPrefix) {
			return nil, fmt.Errorf("loadbalancer: the annotation prefix %q holds %s, %s: choose another prefix", opts.AnnotationPrefix, k, whose)
		}
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
	if err := opts.Shape.Validate(); err != nil {
		return nil, fmt.Errorf("loadbalancer: the adapter's load balancer shape: %w", err)
	}
	if err := opts.Aliases.Validate(opts.AnnotationPrefix, opts.Settings); err != nil {
		return nil, fmt.Errorf("loadbalancer: the adapter's annotation aliases: %w", err)
	}
	if err := opts.CreationBrake.Validate(); err != nil {
		return nil, fmt.Errorf("loadbalancer: %w", err)
	}
	defaults, err := opts.Settings.Defaults(opts.SettingDefaults)
	if err != nil {
		return nil, fmt.Errorf("loadbalancer: the defaults of the adapter's settings: %w", err)
	}
	snap := newSnapshot(api, opts.ClusterID, opts.MaxAge, opts.PageSize, opts.Clock)
	cmp := comparer{settings: opts.Settings, shape: opts.Shape}
	l := &LoadBalancer{
		intents: intents{prefix: opts.AnnotationPrefix, settings: opts.Settings, aliases: opts.Aliases, keepByDefault: opts.KeepOnDelete, shareAcross: opts.ShareAcrossNamespaces,
			services: opts.Services, serves: opts.Serves},
		report: &reporter{
			services: opts.Services, recorder: opts.Recorder, clock: opts.Clock,
			prefixes: strings.Join(append([]string{opts.AnnotationPrefix}, opts.Aliases.Prefixes...), " or "),
			reported: map[reported]string{}, told: map[string]told{}, throttledAt: map[string]time.Time{},
		},
		opts:   opts,
		snap:   snap,
		shares: shareBook{members: map[string]map[string]plan.Member{}},
	}
	l.report.lock = l.services.Lock
	l.nodeSets.known = opts.NodeProviderID
	planned := func(shares *shareBook, report *reporter) *planner {
		return &planner{clusterID: opts.ClusterID, prefix: opts.AnnotationPrefix, settings: opts.Settings, settingDefaults: defaults, aliases: opts.Aliases, shape: opts.Shape,
			providerID: opts.ProviderID, cmp: cmp, intents: &l.intents, shares: shares, report: report}
	}
	l.p = planned(&l.shares, l.report)
	// Plan's planner tells nobody (no event, no write on a Service) and remembers no
	// share's members for the syncs.
	l.quiet = planned(&shareBook{members: map[string]map[string]plan.Member{}}, &reporter{clock: opts.Clock, lock: l.services.Lock, prefixes: l.report.prefixes, reported: map[reported]string{}})
	brake := &creationBrake{CreationBrake: opts.CreationBrake, clusterID: opts.ClusterID, maxAge: opts.MaxAge, clock: opts.Clock,
		services: opts.Services, serves: opts.Serves, owner: l.intents.owner, lookup: snap.lookup, addresses: snap.addresses, report: l.report, onHeld: opts.OnCreationHeld,
		passed: map[string]time.Time{}, asked: map[string]time.Time{}, replacing: map[string]bool{}}
	l.w = &writer{api: api, clusterID: opts.ClusterID, prefix: opts.AnnotationPrefix, cmp: cmp, snap: snap, brake: brake, report: l.report}
	l.tracked = tracked{selecting: map[string]*corev1.Service{}, selects: func(svc *corev1.Service) bool {
		return len(opts.Aliases.spellings(opts.AnnotationPrefix, AnnotationNodeSelector, svc.Annotations)) > 0
	}}
	if opts.TargetGroups != nil {
		l.w.groups = targetgroups.New(targetgroups.Config{
			API: opts.TargetGroups, ClusterID: opts.ClusterID, NamePrefix: namePrefix(l.opts.ClusterID), PageSize: opts.PageSize, MaxAge: opts.MaxAge, Clock: opts.Clock,
			LoadBalancers: groupUsers{snap},
		})
		// A load balancer that named a group and is gone, behind ccmkit's back too, may
		// have left the group unused.
		snap.lost = l.w.groups.Due
	}
	return l, nil
}

// ErrOwnedElsewhere is matched (errors.Is) by the error of EnsureLoadBalancer when the
// Service's load-balancer-id annotation names a load balancer that carries the ownership
// tags of another cluster or another Service. Nothing is changed then.
var ErrOwnedElsewhere = errors.New("the load balancer is owned elsewhere")

// comparer tells what must change for a load balancer the cloud reports to be another:
// the adapter's settings compared in their canonical spelling (Settings.comparable), the
// parts the cloud does not keep (Options.Shape) not at all.
type comparer struct {
	settings Settings
	shape    cloudapi.LoadBalancerShape
}

// diff is what must change for a load balancer the cloud reports as current to be want.
func (c comparer) diff(current, want cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerChanges {
	return cloudapi.DiffLoadBalancer(c.shape.Comparable(c.settings.comparable(current), want), want)
}

// same reports whether the load balancer specs a and b ask for the same, as the cloud
// keeps them (diff finds nothing to change).
func (c comparer) same(a, b cloudapi.LoadBalancerSpec) bool { return c.diff(a, b).Empty() }

// GetLoadBalancerName returns the cloud name of the Service's load balancer: the name
// annotation if it is valid, else a name made of the cluster ID and the Service UID (or,
// for a Service of a share, the share).
func (l *LoadBalancer) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	a, _, errs := l.intents.parse(svc.Annotations)
	if len(errs) == 0 && a.name != "" {
		return a.name
	}
	if owner, err := l.intents.owner(svc); err == nil {
		if share, ok := strings.CutPrefix(owner, shareOwnerPrefix); ok {
			return shareName(l.opts.ClusterID, share)
		}
	}
	return defaultName(l.opts.ClusterID, svc)
}

// GetLoadBalancer reports whether the Service has a load balancer and its status. It
// always asks the cloud (one list by owner tags), never the snapshot: the service
// controller asks it whether there is anything to delete, and a stale "no" would leave a
// load balancer behind. A cloud error is returned as it is, never as "no load balancer";
// a status of which nothing can be published (addresses or a hostname the API server
// would refuse) is logged and reported empty; what EnsureLoadBalancer reports.
//
// The service controller asks it before EnsureLoadBalancerDeleted, which it calls only
// when there is a load balancer: so for a Service that wants none (being deleted, or no
// longer of type LoadBalancer) it also reports one (without a status) when the Service
// has listeners on a share's load balancer it left at the same time, as far as the
// snapshot of the cluster's load balancers knows (refreshed first when older than
// Options.MaxAge), and when it finds none, it removes what EnsureLoadBalancerDeleted
// would have removed (see Options.Services).
func (l *LoadBalancer) GetLoadBalancer(ctx context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	wantsNone := svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer
	owner, err := l.intents.owner(svc)
	if err != nil {
		if !wantsNone {
			return nil, false, err
		}
		owner = l.intents.ownerOnDelete(svc)
	}
	var found []cloudapi.LoadBalancer
	err = l.reconcile(ctx, svc, owner, step{write: func(read []cloudapi.LoadBalancer, _ bool) ([]*cloudapi.LoadBalancer, error) {
		found = read
		return pointers(read), nil
	}})
	if err == nil && len(found) == 0 && wantsNone {
		// Its listeners on the load balancer of a share it left at the same time (or whose
		// leaving failed) are there to delete too.
		others, err := l.snap.elsewhere(ctx, string(svc.UID), owner)
		if err != nil {
			return nil, false, fmt.Errorf("service %s/%s: finding the shared load balancers it may have listeners on: %w", svc.Namespace, svc.Name, err)
		}
		if len(others) > 0 {
			return &corev1.LoadBalancerStatus{}, true, nil
		}
		l.report.tell(ctx, svc, &throttlenote.Note{}, outcome{cleanup: true})
		l.forget(string(svc.UID))
	}
	if err != nil || len(found) == 0 {
		return nil, false, err
	}
	st, _, err := status(l.intents.annotatedHostname(svc), &found[0]) // EnsureLoadBalancer reports what the status leaves out
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
// that one instead of creating (see adopt), or fails without a write.
// While the cloud provisions, it returns an api.RetryError.
func (l *LoadBalancer) EnsureLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (st *corev1.LoadBalancerStatus, err error) {
	ctx, note := throttlenote.With(ctx)
	var said outcome
	defer func() { said.err = err; l.report.tell(ctx, svc, note, said) }()
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	owner, err := l.intents.owner(svc)
	if err != nil {
		return nil, err
	}
	var current *cloudapi.LoadBalancer
	defer func() {
		// What the Service left goes once its load balancer serves it: one that waits for
		// its ports in a share (ErrPortsTaken) keeps what serves it now, and its address.
		if err == nil {
			err = l.leaveOthers(ctx, logger, svc, owner, current)
		}
	}()
	err = l.reconcile(ctx, svc, owner, step{
		enter: func() bool {
			l.tracked.track(svc)
			// A Service is a member of the share its annotation names now, and of no other,
			// from its first sync on: it is handed no port of a share it left, whatever
			// becomes of this sync's write.
			l.shares.leaveAllBut(string(svc.UID), owner)
			return true
		},
		fromSnapshot: func(lb *cloudapi.LoadBalancer) (done bool, err error) {
			want, err := l.p.ensureWant(logger, svc, owner, nodes, lb)
			if err != nil {
				return false, err
			}
			release, err := l.w.group(ctx, logger, &want, 0)
			if err != nil {
				return false, err
			}
			release()
			if !l.w.cmp.same(lb.Spec, want.spec) {
				return false, nil
			}
			current = lb
			return true, nil
		},
		write: func(found []cloudapi.LoadBalancer, _ bool) ([]*cloudapi.LoadBalancer, error) {
			lb, err := l.ensure(ctx, logger, svc, owner, nodes, found)
			if err != nil {
				return nil, err
			}
			current = lb
			return []*cloudapi.LoadBalancer{lb}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	said = outcome{id: current.ID, known: true}
	if err := l.p.readiness(svc, owner, current, nil); err != nil {
		return nil, err
	}
	return l.report.publish(logger, svc, l.intents.annotatedHostname(svc), current)
}

// notReady returns what keeps the Service's load balancer from being ready, nil when it
// is ready (active, with addresses or a hostname): while the cloud provisions, an
// api.RetryError, which the service controller retries after ProvisioningRetryDelay; for
// the cloud's status error, an error, after which it backs off.
func notReady(svc *corev1.Service, lb *cloudapi.LoadBalancer) error {
	switch {
	case lb.Status == cloudapi.LoadBalancerError:
		// Not "not ready yet": let the service controller back off.
		return fmt.Errorf("load balancer %s of service %s/%s: the cloud reports status %s", lb.ID, svc.Namespace, svc.Name, lb.Status)
	case lb.Status != cloudapi.LoadBalancerActive || !reachable(lb):
		return api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.Status), ProvisioningRetryDelay)
	}
	return nil
}

// EnsureLoadBalancerDeleted deletes every load balancer that carries the Service's owner
// tags, with its listeners, targets and health check, and returns nil when there is none.
// It always asks the cloud (one list by owner tags), never the snapshot. For a Service of
// a share, it removes the Service's listeners from the share's load balancer, and deletes
// that only when the Service is the last of its share (see leaveShare). Then it removes
// the Service's listeners from every other share's load balancer the snapshot of the
// cluster's load balancers (refreshed when older than Options.MaxAge) knows it on.
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
func (l *LoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *corev1.Service) (err error) {
	ctx, note := throttlenote.With(ctx)
	defer func() {
		l.report.tell(ctx, svc, note, outcome{cleanup: true, err: err})
		if err == nil {
			l.forget(string(svc.UID)) // it has no load balancer left
		}
	}()
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	owner := l.intents.ownerOnDelete(svc)
	if err := l.deleteFor(ctx, logger, svc, owner, true); err != nil {
		return err
	}
	return l.leaveOthers(ctx, logger, svc, owner, nil)
}

// deleteFor is EnsureLoadBalancerDeleted for the load balancers of owner: the Service's
// own (its UID), or its share's, of which it removes only its listeners, and the whole
// load balancer only when no other Service of the share has listeners on it or exists
// (intents.othersInShare). Either is deleted, or released with keep-on-delete. untrack forgets
// the Service (it wants no load balancer any more).
func (l *LoadBalancer) deleteFor(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, untrack bool) error {
	uid, err := serviceUID(svc)
	if err != nil {
		return err
	}
	keep, err := l.intents.keepOnDelete(svc)
	if err != nil {
		return err
	}
	shared := strings.HasPrefix(owner, shareOwnerPrefix)
	var left []string // the groups the deleted load balancers named
	return l.reconcile(ctx, svc, owner, step{
		enter: func() bool {
			if untrack {
				l.tracked.untrack(uid)
				l.report.untrack(uid)
			}
			return true
		},
		write: func(found []cloudapi.LoadBalancer, _ bool) (_ []*cloudapi.LoadBalancer, err error) {
			if keep && !shared && len(found) > 0 {
				if found, err = l.w.dropDuplicates(ctx, logger, svc, owner, found, l.intents.annotation(svc, AnnotationLoadBalancerID).loadBalancerID); err != nil {
					return nil, err
				}
			}
			var stay []*cloudapi.LoadBalancer // a share's load balancers other Services keep
			if shared {
				if untrack {
					l.shares.leaveAllBut(uid, "") // deleted, or wants no load balancer: in no share
				} else {
					l.shares.leave(owner, uid) // it left this share, and may be in another already
				}
				var last []cloudapi.LoadBalancer
				for i := range found { // each: duplicates of a share may hold other Services' listeners
					lb, err := l.leaveShare(ctx, logger, svc, owner, &found[i])
					switch {
					case err != nil:
						return nil, err
					case lb != nil:
						stay = append(stay, lb)
					default:
						last = append(last, found[i])
					}
				}
				found = last
			}
			for i := range found {
				if err := l.w.remove(ctx, logger, svc, owner, &found[i], keep); err != nil {
					return nil, err
				}
				if !keep { // a release drops its group itself (update)
					left = append(left, found[i].Spec.TargetGroup)
				}
			}
			return stay, nil
		},
		recorded: func() { l.w.groups.Drop(ctx, logger, "", left...) }, // the snapshot knows they are gone
	})
}
