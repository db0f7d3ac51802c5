package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// clusterID is the cluster ID of the provider's config: the ownership tag value.
const clusterID = "soak"

// settleWindow is how long the controllers run after the faults stop before the checks,
// beside brakeSettle: the longest back-off of the service and cloud node controllers (a
// retry scheduled by the last failure may wait that long), plus the instance snapshot's
// maximum age (the lifecycle controller may see a deleted instance that long), plus two
// lifecycle rounds and two route rounds for the work that follows a Node's deletion or
// initialization.
const settleWindow = max(serviceMaxRetryDelay, nodeInitMaxRetryDelay) + provider.DefaultCacheMaxAge +
	2*nodeMonitorPeriod + 2*routeReconcilePeriod

// brakeSettle is how long the deletion brake may hold back the Nodes of the gone instances
// (deleted or terminated) that the history leaves: the brake lets at least
// nodes.deletionBrake.minimum of them go a window, and no more than that in a cluster of a
// few Nodes, so the last of gone go ceil(gone/minimum) windows later, one more for a window
// whose allowance the history spent already; never less than two windows.
//
// It was two windows whatever the history left, on the belief that a history leaves only
// a few such Nodes. It may leave many more: seed 5 of 1000 operations deletes instances of
// a cluster of a few Nodes faster than two a window until its end, and the brake lets them
// go two a window, as it should; the Nodes still there after two windows read as not
// deleted, and the load balancers that the cloud refused while their instances were
// targets, as missing.
func brakeSettle(gone int) time.Duration {
	minimum := provider.DefaultDeletionBrakeMinimum
	windows := max(2, (gone+minimum-1)/minimum+1)
	return time.Duration(windows) * provider.DefaultDeletionBrakeWindow
}

// groupSettle is how much longer the controllers run after the faults stop on a cloud with
// target groups: a collection keeps a group made less than 32 cache.maxAge ago, and its
// wait after a collection that left a group grows up to as much (see package
// loadbalancer's "Target groups"), so the last unused group may be collected that long
// after it was made, plus a round of the periodic collection.
const groupSettle = 33*provider.DefaultCacheMaxAge + provider.DefaultCacheMaxAge

// params are the knobs of one run. Everything but the history derives from the seed.
type params struct {
	seed int64
	// faultRate is the share of cloud calls that get a fault while faults are on.
	faultRate float64
	// maxAttempts is cloudAPI.retry.maxAttempts: how often the provider's client tries a
	// call before the error reaches the controller.
	maxAttempts int
	// pageSize is the fake cloud's page size (and cap).
	pageSize int
	// routePageSize is the fake cloud's route page cap; 0 is one page.
	routePageSize int
	// provisioningReads is how many reads a new load balancer stays provisioning.
	provisioningReads int
	// targetGroups gives the fake cloud target groups (fake.Capabilities.TargetGroups),
	// which the provider then uses: the load balancers share the cluster's group. It is
	// chosen per run (defaultRuns, -soak.groups), not derived from the seed.
	targetGroups bool
	// shares puts Services in shares (op.Share; see share_test.go), chosen per run
	// (defaultRuns, -soak.shares).
	shares bool
	// placed makes a run with shares put its Services in namespaces (op.Namespace) and
	// let them join shares asking for another's ports (op.TakePorts); the regressions
	// found before it run without (TestSoakRegressions).
	placed bool
	// acrossNamespaces is the provider's loadBalancer.shareAcrossNamespaces: whether a
	// share's name is the same in every namespace (see sharing).
	acrossNamespaces bool
	// switches applies the history's project switches (op.Project; see project_test.go),
	// chosen per run (defaultRuns, -soak.switches).
	switches bool
	// deletionBrakeOff and creationBrakeOff switch the provider's brakes off
	// (nodes.deletionBrake.enabled, loadBalancer.creationBrake.enabled): only the tests
	// that show what the checks of the project switches catch without them do.
	deletionBrakeOff, creationBrakeOff bool
	// brakeAcrossRestarts holds the creation brake to its allowance within its window
	// across restarts of the cloud-controller-manager, not only since the last one (see
	// recorder.projectCreate): its memory is its process's.
	brakeAcrossRestarts bool
}

// paramsFor derives the knobs of a run from its seed, so that seeds also vary the cloud.
func paramsFor(seed int64, faultRate float64) params {
	x := mix(uint64(seed), 0x9a7a)
	return params{
		seed:              seed,
		faultRate:         faultRate,
		maxAttempts:       1 + int(x%4),
		pageSize:          2 + int(x>>8%6),
		routePageSize:     []int{0, 0, 3}[x>>16%3],
		provisioningReads: int(x >> 24 % 3),
		acrossNamespaces:  x>>32%2 == 1,
	}
}

func (p params) String() string {
	return fmt.Sprintf("seed=%d faults=%g maxAttempts=%d pageSize=%d routePageSize=%d provisioningReads=%d targetGroups=%t shares=%t acrossNamespaces=%t switches=%t",
		p.seed, p.faultRate, p.maxAttempts, p.pageSize, p.routePageSize, p.provisioningReads, p.targetGroups, p.shares, p.acrossNamespaces, p.switches)
}

// mix is the splitmix64 finalizer over a and b: the seed of a step's faults.
func mix(a, b uint64) uint64 {
	x := a + 0x9e3779b97f4a7c15*(b+1)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// faultRules spreads rate over the four kinds of fault: rules that each fire
// independently, together on about rate of the calls. The rules name no operations, so
// they apply to every call, the target group calls (and the ambiguous group writes)
// included. A fifth rule, at the same rate again, makes the lists repeat an item on a
// page of its own (a cloud paging by offset), so that a list that hands an item over
// twice shows in any order of events. A sixth refuses a quarter of rate of the load
// balancer updates as requests the cloud cannot build (faultinject.Refuse), so that what
// is written after a refusal (the targets alone) meets the ownership checks in any order
// of events, a refused adoption among them.
func faultRules(rate float64) []faultinject.Rule {
	share := func(s float64) float64 { return 1 - math.Pow(1-rate, s) }
	return []faultinject.Rule{
		{Kind: faultinject.Throttle, Probability: share(0.25)},
		{Kind: faultinject.Transient, Probability: share(0.3)},
		{Kind: faultinject.Timeout, Probability: share(0.15)},
		{Kind: faultinject.Ambiguous, Probability: share(0.3)},
		{Kind: faultinject.Repeat, Probability: rate, Ops: []cloudapi.Operation{
			cloudapi.OpListInstances, cloudapi.OpListLoadBalancers, cloudapi.OpListRoutes, cloudapi.OpListTargetGroups}},
		{Kind: faultinject.Refuse, Probability: rate / 4, Ops: []cloudapi.Operation{cloudapi.OpUpdateLoadBalancer}},
	}
}

// result is what a run found.
type result struct {
	violations []violation
	// executed and skipped count the operations that ran and those whose object did not
	// exist.
	executed, skipped int
	// injected sums the fault injector's counters over all steps.
	injected faultinject.OpCounts
	// groupFaults counts the faults injected into the target group calls, by operation
	// and kind.
	groupFaults map[cloudapi.Operation]map[faultinject.Kind]int
	// calls counts the calls the fake cloud received.
	calls fake.Calls
	// lbWrites is the number of load balancer writes.
	lbWrites int
	// serviceWrites counts the provider's patches of Services (the load balancer's ID
	// annotation and condition).
	serviceWrites int
	// groupWrites is the number of target group writes that reached the cloud (creates,
	// updates and deletes, also those whose answer a fault lost).
	groupWrites int
	// adoptions and releases count the updates that made a load balancer without this
	// cluster's tags a Service's, and the reverse; groupAdoptions counts the adoptions of a
	// load balancer that named a target group without this cluster's tags.
	adoptions, groupAdoptions, releases int
	// nodeDeletions counts the Nodes the lifecycle controller deleted.
	nodeDeletions int
	// acknowledged counts the Nodes the operator annotated to acknowledge that their
	// instance is gone while the deletion brake was engaged (see acknowledgeGone).
	acknowledged int
	// sharedWrites counts the writes of shared load balancers; sharedByMany those that
	// left one with the listeners of two Services or more; foreignShareReads the reads of a
	// share scoped to one namespace while syncing a Service of another; portsTaken the
	// Services that joined a share asking for another's ports (op.TakePorts).
	sharedWrites, sharedByMany, foreignShareReads, portsTaken int
	// creationsHeld counts the syncs the creation brake held; acknowledgedNew the
	// Services the operator acknowledged a new load balancer of (see acknowledgeHeld).
	creationsHeld, acknowledgedNew int
	// switches counts the project switches to another project; recreations the load
	// balancers created there for Services with an address, switchedHeld the creates
	// the creation brake held there, brakeRefused the lookups the deletion brake refused
	// there, and leftBehind the Services whose cleanup ran there.
	switches, recreations, switchedHeld, brakeRefused, leftBehind int
	// virtual is the virtual time the run took.
	virtual time.Duration
	// initialized holds when, after the run's start, each Node was last initialized.
	initialized map[string]time.Duration
}

// sim is one run: the world, the fake cloud behind a switch that gives every step its own
// fault injector, and the running cloud-controller-manager.
type sim struct {
	p     params
	ctx   context.Context
	clock *clocktesting.FakePassiveClock
	w     *world
	cloud *fake.Cloud
	sw    *switchClient
	// watched is the cloud as the fault injectors wrap it: the project the config points
	// at (switched by op.Project), which is the fake with its load balancer and target
	// group writes watched by the recorder (see watchedCloud), or the other project.
	watched *switchClient
	// own and other are the cluster's project (watched) and the other project (nil in a
	// run without switches).
	own, other cloudapi.Client
	rec        *recorder
	ccm        *ccm
	res        result
	// start is when the run began.
	start time.Time
	// terminated holds when each terminated instance was terminated: the cloud forgets
	// it terminatedRetention later.
	terminated map[string]time.Time
	// stop stops what the running provider's Initialize started.
	stop chan struct{}
}

// terminatedRetention is how long the cloud keeps listing a terminated instance before it
// is not found, as clouds do for about an hour.
const terminatedRetention = time.Hour

// run runs the history under p, stops the faults, lets the controllers settle and checks
// the end state.
func run(p params, ops []op) (result, error) {
	s, err := newSim(p)
	if err != nil {
		return result{}, err
	}
	if err := s.execute(ops); err != nil {
		return result{}, err
	}
	return s.finish(), nil
}

// execute starts the cloud-controller-manager, runs the operations, each step with its
// own faults, then stops the faults and runs the controllers for the settle window.
func (s *sim) execute(ops []op) error {
	if err := s.restart(); err != nil {
		return err
	}
	s.start = s.clock.Now()
	for _, o := range ops {
		fi := faultinjectWrap(s, o)
		s.sw.set(fi)
		if err := s.apply(o); err != nil {
			return fmt.Errorf("operation %s: %w", o, err)
		}
		if err := s.ccm.runUntil(s.clock.Now().Add(o.Advance)); err != nil {
			return fmt.Errorf("after operation %s: %w", o, err)
		}
		counts := fi.Injected()
		addCounts(&s.res.injected, counts.Total())
		s.addGroupFaults(counts)
	}
	s.sw.set(s.watched)
	if err := s.switchProject(projectOwn); err != nil {
		return err
	}
	settle := settleWindow + brakeSettle(len(s.goneNodes()))
	if s.p.targetGroups {
		settle += groupSettle
	}
	if err := s.ccm.runUntil(s.clock.Now().Add(settle)); err != nil {
		return fmt.Errorf("while settling: %w", err)
	}
	if s.acknowledgeGone()+s.acknowledgeHeld() > 0 {
		if err := s.ccm.runUntil(s.clock.Now().Add(settleWindow)); err != nil {
			return fmt.Errorf("while settling after the operator's acknowledgements: %w", err)
		}
	}
	s.res.virtual = s.clock.Now().Sub(s.start)
	return nil
}

// goneNodes returns the Nodes whose instance is gone (deleted or terminated) in the cloud.
func (s *sim) goneNodes() []*corev1.Node {
	inv := s.cloud.Inventory()
	var out []*corev1.Node
	for _, n := range s.w.listNodes() {
		if inst := instanceOf(n, inv.Instances); inst == nil || inst.State == cloudapi.InstanceTerminated {
			out = append(out, n)
		}
	}
	return out
}

// acknowledgeGone is the operator who, told by the InstanceGoneRefused event that the
// deletion brake holds a Node whose instance is gone (the soak drops events: it asks the
// provider, as the event's lookup does), makes sure in the cloud that it is gone, and
// annotates the Node instances.AnnotationAcknowledgeGone, as the event asks. It returns how
// many Nodes it annotated.
//
// It acknowledges only a brake that cannot release by itself: one whose cluster has no Node
// with a running instance. A Node's instance is looked up by every status pass, and the
// brake releases at the first list that has an instance live that it was asked about; so
// after settling, an engaged brake beside a Node with a live instance is a brake that did not
// release when it should have: a violation (checkBrakeStuck), which the operator must not hide.
//
// The brake engages when a list has none of the instances live that the list before had
// (more than nodes.deletionBrake.minimum): a cluster whose every instance goes within one
// list, as a history may make one (seed 6 of 1000 operations: of three Nodes, the
// autoscaler removes one while the other two instances are deleted behind the cluster's
// back), looks to the brake like a cloud answering for another project, and it holds
// every answer "gone" until a list has one of those instances live again or the operator
// acknowledges. That is the brake's rule; without the operator such Nodes stay for good.
// A Node the brake holds only for its allowance is left to it (brakeSettle).
func (s *sim) acknowledgeGone() int {
	acknowledged := 0
	inv := s.cloud.Inventory()
	var live string // a Node whose instance runs
	for _, n := range s.w.listNodes() {
		if inst := instanceOf(n, inv.Instances); inst != nil && inst.State != cloudapi.InstanceTerminated {
			live = n.Name
			break
		}
	}
	for _, n := range s.goneNodes() {
		var braked *instancecache.BrakeError
		if _, err := s.ccm.inst.InstanceExists(s.ctx, n); !errors.As(err, &braked) || !braked.Engaged {
			continue
		}
		if live != "" {
			s.rec.violations = append(s.rec.violations, violation{Check: checkBrakeStuck, Msg: fmt.Sprintf(
				"the deletion brake still holds Node %s as engaged after settling, though Node %s's instance runs", n.Name, live)})
			continue
		}
		s.w.updateNode(n.Name, func(n *corev1.Node) {
			metav1.SetMetaDataAnnotation(&n.ObjectMeta, instances.AnnotationAcknowledgeGone, "true")
		})
		acknowledged++
	}
	s.res.acknowledged += acknowledged
	return acknowledged
}

// faultinjectWrap returns the fault injector of the step of o: seeded by the run's seed
// and the operation's index, so that the step's faults do not depend on the steps before.
// Timeouts and the throttle's Retry-After are tiny, and the injector's waits end at once
// on a fake clock of its own (not the simulation's clock, which only the scheduler moves):
// the real waits of the provider's client are the only wall time the faults cost.
func faultinjectWrap(s *sim, o op) *faultinject.Client {
	return faultinject.Wrap(s.watched, faultinject.Config{
		Seed:               int64(mix(uint64(s.p.seed), uint64(o.Index))),
		Rules:              faultRules(s.p.faultRate),
		Timeout:            time.Millisecond,
		ThrottleRetryAfter: time.Microsecond,
		Clock:              clocktest.NewStepping(time.Unix(0, 0)),
	})
}

// finish checks the end state and returns the result.
func (s *sim) finish() result {
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	s.res.violations = append(slices.Clone(s.rec.violations), check(s.w, s.cloud, s.rec, s.p.targetGroups)...)
	if s.p.shares {
		s.res.violations = append(s.res.violations, checkShares(s.w, s.cloud.Inventory(), s.rec)...)
	}
	for _, pending := range s.ccm.pendingRetries() {
		if name, ok := strings.CutPrefix(pending, "service "); ok && shareOf(s.w.service(name)) != "" {
			continue // a Service of a share may disagree with it, by design
		}
		s.res.violations = append(s.res.violations, violation{Check: checkSettled, Msg: pending + " still waits for a retry after the settle window"})
	}
	s.res.calls = s.cloud.Calls()
	s.res.lbWrites = len(s.cloud.LoadBalancerHistory())
	s.res.groupWrites = s.rec.groupWrites
	s.res.adoptions, s.res.groupAdoptions, s.res.releases = handovers(s.cloud.LoadBalancerHistory(), s.rec.foreignGroups)
	s.res.nodeDeletions = s.rec.nodeDeletions
	s.res.sharedWrites, s.res.sharedByMany = sharedWrites(s.cloud.LoadBalancerHistory())
	s.res.foreignShareReads = s.rec.foreignShareReads
	s.res.creationsHeld = s.rec.creationsHeld
	s.res.recreations, s.res.switchedHeld, s.res.brakeRefused = s.rec.recreations, s.rec.switchedHeld, s.rec.brakeRefused
	s.res.leftBehind = len(s.rec.leftBehind)
	s.res.initialized = make(map[string]time.Duration, len(s.rec.initialized))
	for name, at := range s.rec.initialized {
		s.res.initialized[name] = at.Sub(s.start)
	}
	return s.res
}

// groupOps are the target group operations.
var groupOps = []cloudapi.Operation{cloudapi.OpListTargetGroups, cloudapi.OpCreateTargetGroup, cloudapi.OpUpdateTargetGroup, cloudapi.OpDeleteTargetGroup}

// addGroupFaults adds the faults of the target group calls in c to the result.
func (s *sim) addGroupFaults(c faultinject.Counts) {
	for _, op := range groupOps {
		for k, n := range c.Ops[op].Faults {
			if s.res.groupFaults == nil {
				s.res.groupFaults = map[cloudapi.Operation]map[faultinject.Kind]int{}
			}
			if s.res.groupFaults[op] == nil {
				s.res.groupFaults[op] = map[faultinject.Kind]int{}
			}
			s.res.groupFaults[op][k] += n
		}
	}
}

// addCounts adds the calls and faults of o to sum.
func addCounts(sum *faultinject.OpCounts, o faultinject.OpCounts) {
	sum.Calls += o.Calls
	sum.Passed += o.Passed
	for k, n := range o.Faults {
		if sum.Faults == nil {
			sum.Faults = map[faultinject.Kind]int{}
		}
		sum.Faults[k] += n
	}
}

func newSim(p params) (*sim, error) {
	c := newClock()
	groups := p.targetGroups
	cloud, err := fake.New(fake.Config{
		PageSize:      p.pageSize,
		RoutePageSize: p.routePageSize,
		Provisioning:  fake.Provisioning{Reads: p.provisioningReads},
		Capabilities:  fake.Capabilities{TargetGroups: &groups},
	}, fake.WithClock(c))
	if err != nil {
		return nil, err
	}
	w := newWorld(c)
	rec := newRecorder(cloud, w)
	if p.shares {
		rec.sharing = &sharing{across: p.acrossNamespaces}
	}
	rec.acrossRestarts = p.brakeAcrossRestarts
	own := &watchedCloud{Client: cloud, rec: rec}
	watched := &switchClient{cur: own, groups: groups}
	s := &sim{
		p:       p,
		ctx:     klog.NewContext(context.Background(), klog.Logger{}), // the zero logger discards
		clock:   c,
		w:       w,
		cloud:   cloud,
		sw:      &switchClient{cur: watched, groups: groups},
		watched: watched,
		own:     own,
		rec:     rec,

		terminated: map[string]time.Time{},
	}
	if err := s.seedLoadBalancers(); err != nil {
		return nil, err
	}
	if p.switches {
		if err := s.newOtherProject(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// restart starts a new cloud-controller-manager: a new provider over the cloud of the
// project the config points at (watched), and controllers with empty memories.
func (s *sim) restart() error {
	routesOn, deletionBrake, creationBrake := true, !s.p.deletionBrakeOff, !s.p.creationBrakeOff
	cloud, err := provider.New(provider.Config{
		Cluster: provider.ClusterConfig{ID: clusterID},
		LoadBalancer: provider.LoadBalancerConfig{
			ShareAcrossNamespaces: s.p.acrossNamespaces,
			CreationBrake:         provider.CreationBrakeConfig{Enabled: &creationBrake},
		},
		Nodes: provider.NodesConfig{DeletionBrake: provider.DeletionBrakeConfig{Enabled: &deletionBrake}},
		CloudAPI: provider.CloudAPIConfig{
			Unlimited: true, // no client-side limit: waits would be real time
			Retry: provider.RetryConfig{
				MaxAttempts:    s.p.maxAttempts,
				InitialBackoff: time.Microsecond,
				MaxBackoff:     time.Microsecond,
			},
		},
		Enable: provider.EnableConfig{Routes: &routesOn},
	}, s.sw, provider.Options{Metrics: metrics.NewKubeRegistry(), Clock: s.clock})
	if err != nil {
		return err
	}
	if s.stop != nil {
		close(s.stop)
	}
	s.stop = make(chan struct{})
	cloud.Initialize(&providertest.ClientBuilder{Kube: s.kube()}, s.stop)
	s.rec.restarted = append(s.rec.restarted, s.clock.Now())
	s.ccm, err = startCCM(s.ctx, s.w, s.rec, cloud)
	return err
}

// Derived names of a Node's parts.
func instanceID(nodeName string) string { return "i-" + nodeName }

func nodeAddress(num int) string {
	return netip.AddrFrom4([4]byte{10, 1, byte(num / 250), byte(num%250 + 1)}).String()
}

func podCIDR(num int) string {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(64 + num/256), byte(num % 256), 0}), 24).String()
}

// apply performs one operation; one whose object does not exist is skipped.
func (s *sim) apply(o op) error {
	for _, id := range slices.Sorted(maps.Keys(s.terminated)) {
		if !s.clock.Now().Before(s.terminated[id].Add(terminatedRetention)) {
			_ = s.cloud.DeleteInstance(id)
			delete(s.terminated, id)
		}
	}
	ok := true
	switch o.Kind {
	case opCreateService:
		svc := newService(o)
		if s.p.shares && s.p.placed {
			svc.Namespace = o.Namespace
		}
		s.prepareCreate(svc, o)
		s.prepareShare(svc, o)
		ok = s.w.createService(svc) == nil
	case opUpdatePorts:
		ok = s.updateLiveService(o.Name, func(svc *corev1.Service) { setPorts(svc, o.Ports) })
	case opUpdateAnnotations:
		ok = s.updateLiveService(o.Name, func(svc *corev1.Service) {
			s.prepareAnnotations(svc, o.Annotations)
			s.prepareShare(svc, o)
		})
	case opSetType:
		ok = s.updateLiveService(o.Name, func(svc *corev1.Service) {
			if o.LoadBalancer {
				s.prepareLoadBalancer(svc)
				svc.Spec.Type = corev1.ServiceTypeLoadBalancer
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			} else {
				svc.Spec.Type = corev1.ServiceTypeClusterIP
				svc.Spec.ExternalTrafficPolicy = ""
			}
		})
	case opDeleteService:
		ok = s.w.deleteService(o.Name)
	case opAddNode:
		ok = s.addNode(o)
	case opRemoveNode:
		ok = s.w.deleteNode(o.Name)
		_ = s.cloud.DeleteInstance(instanceID(o.Name))
	case opDrainNode:
		ok = s.updateNode(o.Name, func(n *corev1.Node) {
			if !hasTaint(n, toBeDeletedTaint) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: toBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule})
			}
		})
	case opExcludeNode:
		ok = s.updateNode(o.Name, func(n *corev1.Node) {
			if o.Exclude {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[corev1.LabelNodeExcludeBalancers] = "true"
			} else {
				delete(n.Labels, corev1.LabelNodeExcludeBalancers)
			}
		})
	case opShutdownNode:
		ok = s.setInstance(o.Name, cloudapi.InstanceStopped, corev1.ConditionUnknown)
	case opStartNode:
		ok = s.setInstance(o.Name, cloudapi.InstanceRunning, corev1.ConditionTrue)
	case opKubeletDown:
		ok = s.updateNode(o.Name, func(n *corev1.Node) { setReady(n, corev1.ConditionUnknown) })
	case opDeleteInstance:
		ok = s.cloud.DeleteInstance(instanceID(o.Name)) == nil
		s.updateNode(o.Name, func(n *corev1.Node) { setReady(n, corev1.ConditionUnknown) })
	case opTerminateInstance:
		if ok = s.setInstance(o.Name, cloudapi.InstanceTerminated, corev1.ConditionUnknown); ok {
			s.terminated[instanceID(o.Name)] = s.clock.Now()
		}
	case opRestart:
		if err := s.restart(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown operation kind %v", o.Kind)
	}
	if ok {
		s.res.executed++
	} else {
		s.res.skipped++
	}
	if s.p.switches {
		return s.switchProject(o.Project)
	}
	return nil
}

// setPorts gives svc ports as a client sets them: without node ports, but those of the
// ports it had already (the same protocol and port), which the client keeps.
func setPorts(svc *corev1.Service, ports []corev1.ServicePort) {
	old := svc.Spec.Ports
	svc.Spec.Ports = slices.Clone(ports)
	for i, p := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
		for _, q := range old {
			if q.Port == p.Port && q.Protocol == p.Protocol {
				svc.Spec.Ports[i].NodePort = q.NodePort
			}
		}
	}
}

// updateLiveService changes a Service that exists and is not being deleted.
func (s *sim) updateLiveService(name string, change func(*corev1.Service)) bool {
	if svc := s.w.service(name); svc == nil || svc.DeletionTimestamp != nil {
		return false
	}
	return s.w.updateService(name, change)
}

func (s *sim) updateNode(name string, change func(*corev1.Node)) bool {
	return s.w.updateNode(name, change)
}

// setInstance sets the state of a Node's instance, unless it is gone or terminated, and
// the Node's readiness with it.
func (s *sim) setInstance(name string, state cloudapi.InstanceState, ready corev1.ConditionStatus) bool {
	if s.w.node(name) == nil {
		return false
	}
	inst := instanceOf(s.w.node(name), s.cloud.Inventory().Instances)
	if inst == nil || inst.State == cloudapi.InstanceTerminated {
		return false
	}
	if err := s.cloud.SetInstanceState(inst.ID, state); err != nil {
		return false
	}
	return s.updateNode(name, func(n *corev1.Node) { setReady(n, ready) })
}

// addNode starts an instance and registers its Node, uninitialized, with a pod CIDR.
func (s *sim) addNode(o op) bool {
	id := instanceID(o.Name)
	err := s.cloud.AddInstance(cloudapi.Instance{
		ID: id, Name: o.Name, Type: "m1.small", Zone: []string{"fake-1a", "fake-1b"}[o.Num%2],
		Addresses: []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: nodeAddress(o.Num)}},
	})
	if err != nil {
		return false
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: corev1.NodeSpec{
			PodCIDR:  podCIDR(o.Num),
			PodCIDRs: []string{podCIDR(o.Num)},
			Taints:   []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	if o.ProviderID {
		n.Spec.ProviderID = provider.DefaultProviderName + "://" + id
	}
	return s.w.createNode(n) == nil
}

// newService builds the Service a create-service operation asks for.
func newService(o op) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Annotations: cloneMap(o.Annotations)},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			Ports:                    slices.Clone(o.Ports),
			IPFamilies:               []corev1.IPFamily{corev1.IPv4Protocol},
			LoadBalancerSourceRanges: slices.Clone(o.SourceRanges),
		},
	}
	if o.LoadBalancer {
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		if o.Local {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
	}
	if o.DualStack {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPv6Protocol)
	}
	return svc
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// switchClient is the cloud client the provider holds across restarts: every call goes to
// the client set for the current step (a fault injector seeded for that step, or the bare
// cloud once the faults stop). faultinject numbers calls from Wrap, so a fresh injector per
// step makes the faults of a step a function of (seed, step index, calls in the step),
// independent of the steps before it.
type switchClient struct {
	mu  sync.Mutex
	cur cloudapi.Client
	// groups is whether the cloud has target groups: the same for every client set.
	groups bool
}

func (s *switchClient) set(c cloudapi.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = c
}

func (s *switchClient) get() cloudapi.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *switchClient) Instances() cloudapi.InstanceAPI                 { return switchInstances{s} }
func (s *switchClient) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return switchLBs{s}, true }
func (s *switchClient) Routes() (cloudapi.RouteAPI, bool)               { return switchRoutes{s}, true }

// TargetGroups makes the switch a cloudapi.TargetGroupClient when the cloud has target
// groups; the provider asks once, at provider.New.
func (s *switchClient) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	if !s.groups {
		return nil, false
	}
	return switchGroups{s}, true
}

type switchInstances struct{ s *switchClient }

func (a switchInstances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return a.s.get().Instances().GetInstance(ctx, id)
}

func (a switchInstances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return a.s.get().Instances().ListInstances(ctx, opts)
}

type switchLBs struct{ s *switchClient }

func (a switchLBs) api() cloudapi.LoadBalancerAPI {
	lb, _ := a.s.get().LoadBalancers()
	return lb
}

func (a switchLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	return a.api().GetLoadBalancer(ctx, id)
}

func (a switchLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return a.api().ListLoadBalancers(ctx, opts)
}

func (a switchLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	return a.api().CreateLoadBalancer(ctx, spec)
}

func (a switchLBs) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	return a.api().UpdateLoadBalancer(ctx, id, update)
}

func (a switchLBs) DeleteLoadBalancer(ctx context.Context, id string) error {
	return a.api().DeleteLoadBalancer(ctx, id)
}

type switchRoutes struct{ s *switchClient }

func (a switchRoutes) api() cloudapi.RouteAPI {
	r, _ := a.s.get().Routes()
	return r
}

func (a switchRoutes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return a.api().ListRoutes(ctx, opts)
}

func (a switchRoutes) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	return a.api().CreateRoute(ctx, spec)
}

func (a switchRoutes) DeleteRoute(ctx context.Context, id string) error {
	return a.api().DeleteRoute(ctx, id)
}

type switchGroups struct{ s *switchClient }

func (a switchGroups) api() cloudapi.TargetGroupAPI {
	g, _ := cloudapi.TargetGroups(a.s.get())
	return g
}

func (a switchGroups) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return a.api().ListTargetGroups(ctx, opts)
}

func (a switchGroups) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	return a.api().CreateTargetGroup(ctx, spec)
}

func (a switchGroups) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	return a.api().UpdateTargetGroup(ctx, id, update)
}

func (a switchGroups) DeleteTargetGroup(ctx context.Context, id string) error {
	return a.api().DeleteTargetGroup(ctx, id)
}

// watchedCloud is a fake cloud with its writes watched: the fault injectors wrap it, so
// every write that reaches the cloud passes here, also one whose answer an ambiguous fault
// then loses. The recorder checks the cluster's project's load balancer and target group
// writes (see recorder.lbWrite, recorder.groupWrite), and the other project's load
// balancer creates (other; see recorder.projectCreate).
type watchedCloud struct {
	cloudapi.Client
	rec   *recorder
	other bool
}

// LoadBalancers returns the cloud's load balancer API, watched.
func (c *watchedCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	lbs, ok := c.Client.LoadBalancers()
	return watchedLBs{LoadBalancerAPI: lbs, rec: c.rec, other: c.other}, ok
}

type watchedLBs struct {
	cloudapi.LoadBalancerAPI
	rec   *recorder
	other bool
}

func (a watchedLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	if !a.other {
		a.rec.lbList(opts)
	}
	return a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
}

func (a watchedLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if a.other {
		a.rec.projectCreate(spec, a.addresses(ctx))
	} else {
		a.rec.lbWrite(cloudapi.OpCreateLoadBalancer, "", &spec)
	}
	return a.LoadBalancerAPI.CreateLoadBalancer(ctx, spec)
}

// addresses returns the addresses and hostnames of the load balancers the cloud has (as
// far as its list answers), for the creation brake's rule on an address another load
// balancer of the cluster holds.
func (a watchedLBs) addresses(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	opts := cloudapi.ListOptions{}
	for range 1000 {
		page, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
		if err != nil || page == nil {
			return out
		}
		for _, lb := range page.Items {
			for _, ad := range lb.Addresses {
				out[ad] = true
			}
			if lb.Hostname != "" {
				out[lb.Hostname] = true
			}
		}
		if page.NextPageToken == "" {
			return out
		}
		opts.PageToken = page.NextPageToken
	}
	return out
}

func (a watchedLBs) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if !a.other {
		a.rec.lbWrite(cloudapi.OpUpdateLoadBalancer, id, &update.Spec)
	}
	return a.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, update)
}

func (a watchedLBs) DeleteLoadBalancer(ctx context.Context, id string) error {
	if !a.other {
		a.rec.lbWrite(cloudapi.OpDeleteLoadBalancer, id, nil)
	}
	return a.LoadBalancerAPI.DeleteLoadBalancer(ctx, id)
}

// TargetGroups returns the cloud's target group API, when the cloud has one: watched in
// the cluster's project.
func (c *watchedCloud) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	g, ok := cloudapi.TargetGroups(c.Client)
	if !ok || c.other {
		return g, ok
	}
	return watchedGroups{inner: g, rec: c.rec}, true
}

type watchedGroups struct {
	inner cloudapi.TargetGroupAPI
	rec   *recorder
}

func (a watchedGroups) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return a.inner.ListTargetGroups(ctx, opts)
}

func (a watchedGroups) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	a.rec.groupWrite(cloudapi.OpCreateTargetGroup, "", spec.Tags)
	return a.inner.CreateTargetGroup(ctx, spec)
}

func (a watchedGroups) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	a.rec.groupWrite(cloudapi.OpUpdateTargetGroup, id, update.Spec.Tags)
	return a.inner.UpdateTargetGroup(ctx, id, update)
}

func (a watchedGroups) DeleteTargetGroup(ctx context.Context, id string) error {
	a.rec.groupWrite(cloudapi.OpDeleteTargetGroup, id, nil)
	return a.inner.DeleteTargetGroup(ctx, id)
}
