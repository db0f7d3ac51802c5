package soak

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// How a run with project switches (params.switches) points the cloud config at another
// project and back. The generator marks an operation now and then with op.Project: after
// it, the operator changes the cloud config to another project (projectOther), and a few
// dozen operations later back to the cluster's (projectOwn); the history's end switches
// back too, before the controllers settle. A config change takes effect at a restart: the
// switch is a restart of the cloud-controller-manager whose client now reaches the other
// project (a restart-ccm while switched stays there). The other project is a fake cloud of
// its own, with the faults of the step, its own address pools and nothing in it: no
// instance, so that the deletion brake engages at its first list (a process started
// against a project with instances of its own is bounded only by the brake's share of
// those, as package instancecache says), and none of the cluster's load balancers. The
// world goes on meanwhile: every operation of the history may come while switched.
//
// What must hold, besides every other check:
//
//   - no Node is deleted while switched (checkSwitchedNodeDeleted, as the lifecycle
//     controller deletes it): the deletion brake refuses every answer "gone";
//   - within any window of the creation brake, the owners (a Service, or a share) whose
//     load balancer is created in the other project by the sync of a Service that has an
//     address are at most the creation brake's allowance, max(minimum, floor(share × the
//     owners of the Services with an address)) at each create (checkCreationBrake,
//     projectCreate), counted across restarts.
//
// What a switch leaves by design, which the checks allow:
//
//   - a Service whose cleanup (deleted, or no longer of type LoadBalancer) ran while
//     switched found nothing to delete there: what it had in the cluster's project stays
//     (recorder.leftBehind; a sweeper's work for a deleted Service), and is no orphan for
//     the end checks, nor is a share's load balancer such a Service was in;
//   - a Service that got its load balancer in the other project has that project's
//     address in its status when the config is back: the creation brake holds its new
//     load balancer in the cluster's project while more such Services than it allows
//     wait, until the operator, told by the CreationHeld condition, acknowledges
//     (loadbalancer.AnnotationAcknowledgeNewLoadBalancer; see acknowledgeHeld). A Service
//     held while its owner has a load balancer in the cluster's project is a violation
//     (checkCreationHeld).

// Address pools of the other project, apart from the fake's defaults.
var otherPools = fake.AddressPools{
	Public:   fake.Pool{IPv4: []string{"192.0.2.0/24"}, IPv6: []string{"2001:db8:ff::/64"}},
	Internal: fake.Pool{IPv4: []string{"10.201.0.0/16"}, IPv6: []string{"fd00:201::/64"}},
}

// newOtherProject makes the other project: an empty fake cloud with the cluster's cloud's
// knobs and capabilities, whose load balancer creates the recorder checks (watchedCloud).
func (s *sim) newOtherProject() error {
	groups := s.p.targetGroups
	other, err := fake.New(fake.Config{
		PageSize:      s.p.pageSize,
		RoutePageSize: s.p.routePageSize,
		Provisioning:  fake.Provisioning{Reads: s.p.provisioningReads},
		AddressPools:  otherPools,
		Capabilities:  fake.Capabilities{TargetGroups: &groups},
	}, fake.WithClock(s.clock))
	if err != nil {
		return err
	}
	s.rec.other = other
	s.other = &watchedCloud{Client: other, rec: s.rec, other: true}
	return nil
}

// switchProject points the cloud config at the project to (projectOther, projectOwn; ""
// changes nothing) when it points at the other one, and restarts the
// cloud-controller-manager to read it.
func (s *sim) switchProject(to string) error {
	switch {
	case to == projectOther && !s.rec.switched && s.other != nil:
		s.watched.set(s.other)
		s.rec.switched = true
		s.res.switches++
	case to == projectOwn && s.rec.switched:
		s.watched.set(s.own)
		s.rec.switched = false
	default:
		return nil
	}
	return s.restart()
}

// creationBrakeAllows is how many owners the creation brake lets have a new load balancer
// within its window, of addressed owners of Services with an address (the provider's
// defaults).
func creationBrakeAllows(addressed int) int {
	return max(provider.DefaultCreationBrakeMinimum, int(math.Floor(provider.DefaultCreationBrakeShare*float64(addressed))))
}

// addressedOwners returns the owners (see ownerOf) of the Services of type
// LoadBalancer, not being deleted, with an address in their status.
func (r *recorder) addressedOwners() map[string]bool {
	out := map[string]bool{}
	for _, name := range r.world.serviceNames() {
		svc := r.world.service(name)
		if !wantsLoadBalancer(svc) || svc.DeletionTimestamp != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		out[r.ownerOf(svc)] = true
	}
	return out
}

// ownerOf is whom svc's load balancer belongs to: its share's key, else its UID.
func (r *recorder) ownerOf(svc *corev1.Service) string {
	if r.sharing != nil {
		if key := r.sharing.key(svc); key != "" {
			return "share " + key
		}
	}
	return string(svc.UID)
}

// lbOwner is whom a load balancer with tags belongs to, as ownerOf names it.
func lbOwner(tags map[string]string) string {
	if key := tags[cloudapi.TagShare]; key != "" {
		return "share " + key
	}
	return tags[cloudapi.TagService]
}

// projectCreate checks, as a load balancer create reaches the other project (also when a
// fault then loses its answer), that the creation brake holds: a create for the sync of a
// Service with an address makes its owner one of those re-created within the creation
// brake's window, which must be no more than it allows at some sync within the window
// (the most owners of Services with an address then: the brake decides at a sync, and an
// owner it let through may create later). A create for a Service whose address another
// load balancer of the project has (held: a share it left) is no re-creation, as the
// brake's rule says. The brake's memory is its process's: the
// owners are counted since the last restart of the cloud-controller-manager, or across
// restarts with params.brakeAcrossRestarts.
func (r *recorder) projectCreate(spec cloudapi.LoadBalancerSpec, held map[string]bool) {
	svc := r.world.serviceByUID(r.syncing)
	if svc == nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		return // a new Service: never held
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if held[in.IP] || (in.Hostname != "" && held[in.Hostname]) {
			return // its address is another load balancer's there (a share it left): nothing is lost
		}
	}
	r.recreations++
	now := r.world.clock.Now()
	r.recreated[lbOwner(spec.Tags)] = now
	since := now.Add(-provider.DefaultCreationBrakeWindow)
	if last := r.lastRestart(); !r.acrossRestarts && last.After(since) {
		since = last.Add(-time.Nanosecond) // the restart's own instant counts
	}
	var owners []string
	for _, owner := range slices.Sorted(maps.Keys(r.recreated)) {
		if r.recreated[owner].After(since) {
			owners = append(owners, owner)
		}
	}
	addressed := len(r.addressedOwners())
	for _, a := range r.addressed {
		if a.at.After(since) {
			addressed = max(addressed, a.owners)
		}
	}
	if allowed := creationBrakeAllows(addressed); len(owners) > allowed {
		r.violations = append(r.violations, violation{Check: checkCreationBrake, Msg: fmt.Sprintf(
			"a load balancer for %s/%s, which has address %v, is created in another project at %s: %d owners re-created within %s (%v), the creation brake allows %d (of at most %d with an address)",
			svc.Namespace, svc.Name, ingressIPs(svc.Status.LoadBalancer), now.Sub(r.firstStart()).Round(time.Second), len(owners), provider.DefaultCreationBrakeWindow,
			owners, allowed, addressed)})
	}
}

// syncStarts records, at a sync of a Service while the config points at the other project,
// how many owners of Services with an address there are (see projectCreate).
func (r *recorder) syncStarts() {
	if !r.switched {
		return
	}
	now := r.world.clock.Now()
	r.addressed = slices.DeleteFunc(r.addressed, func(a addressedAt) bool {
		return !a.at.After(now.Add(-provider.DefaultCreationBrakeWindow))
	})
	r.addressed = append(r.addressed, addressedAt{at: now, owners: len(r.addressedOwners())})
}

// addressedAt is how many owners of Services with an address there were at a sync.
type addressedAt struct {
	at     time.Time
	owners int
}

// acknowledgeHeld is the operator who, told by the CreationHeld condition that the
// creation brake holds a new load balancer for a Service that has an address, makes sure
// the config points at the cluster's project and that the Service's load balancer is
// gone there, and acknowledges the new address
// (loadbalancer.AnnotationAcknowledgeNewLoadBalancer=<the address it gives up>). A held
// Service whose owner has a load balancer in the cluster's project is not acknowledged:
// the brake holds what it should have found (checkCreationHeld). It returns how many
// Services it annotated.
func (s *sim) acknowledgeHeld() int {
	inv := s.cloud.Inventory()
	acknowledged := 0
	for _, name := range s.w.serviceNames() {
		svc := s.w.service(name)
		c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady)
		addrs := ingressIPs(svc.Status.LoadBalancer)
		if c == nil || c.Reason != loadbalancer.ReasonCreationHeld || len(addrs) == 0 || !wantsLoadBalancer(svc) {
			continue
		}
		owner := s.rec.ownerOf(svc)
		if i := slices.IndexFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool {
			return lb.Spec.Tags[cloudapi.TagCluster] == clusterID && lbOwner(lb.Spec.Tags) == owner
		}); i >= 0 {
			s.rec.violations = append(s.rec.violations, violation{Check: checkCreationHeld, Msg: fmt.Sprintf(
				"the creation brake holds a new load balancer for %s/%s (address %v), whose load balancer %s exists", svc.Namespace, name, addrs, inv.LoadBalancers[i].ID)})
			continue
		}
		s.w.updateService(name, func(svc *corev1.Service) {
			metav1.SetMetaDataAnnotation(&svc.ObjectMeta, loadbalancer.AnnotationAcknowledgeNewLoadBalancer, addrs[0])
		})
		acknowledged++
	}
	s.res.acknowledgedNew += acknowledged
	return acknowledged
}

// TestBrakeChecksCatchViolations runs a scripted history with a project switch: four
// Nodes, one NotReady, and five Services with an address. With both brakes (the default)
// no Node is deleted while switched and no load balancer is made anew; with either brake
// off, its check reports what the brake would have held, so the checks are not vacuous.
func TestBrakeChecksCatchViolations(t *testing.T) {
	var ops []op
	add := func(o op) {
		o.Index = len(ops)
		if o.Advance == 0 {
			o.Advance = 10 * time.Second
		}
		ops = append(ops, o)
	}
	for i := range 4 {
		add(op{Kind: opAddNode, Name: fmt.Sprintf("node-%d", i), Num: i})
	}
	for i := range 5 {
		add(op{Kind: opCreateService, Name: fmt.Sprintf("svc-%d", i), LoadBalancer: true,
			Ports: []corev1.ServicePort{{Name: "p0", Protocol: corev1.ProtocolTCP, Port: 80}}})
	}
	add(op{Kind: opKubeletDown, Name: "node-1", Advance: time.Minute})
	add(op{Kind: opRestart, Project: projectOther, Advance: 5 * time.Minute})
	add(op{Kind: opRestart, Project: projectOwn})

	tests := []struct {
		name                     string
		deletionOff, creationOff bool
		want                     []string
	}{
		{name: "both brakes on"},
		{name: "deletion brake off", deletionOff: true, want: []string{checkSwitchedNodeDeleted}},
		{name: "creation brake off", creationOff: true, want: []string{checkCreationBrake}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := paramsFor(1, 0)
			p.switches, p.deletionBrakeOff, p.creationBrakeOff = true, tt.deletionOff, tt.creationOff
			res, err := run(p, ops)
			require.NoError(t, err)
			assert.Equal(t, 1, res.switches)
			got := []string{}
			for _, c := range checks(res.violations) {
				if c == checkSwitchedNodeDeleted || c == checkCreationBrake {
					got = append(got, c)
				}
			}
			t.Logf("violations: %v", res.violations)
			assert.ElementsMatch(t, tt.want, got, "violations: %v", res.violations)
			if tt.want == nil {
				assert.Empty(t, res.violations)
				assert.NotZero(t, res.brakeRefused, "the deletion brake refused no lookup while switched")
				assert.NotZero(t, res.switchedHeld, "the creation brake held no create while switched")
			}
		})
	}
}
