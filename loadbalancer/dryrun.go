package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// PlanAction is what EnsureLoadBalancer would do for a Service, as Plan finds it.
type PlanAction string

// The actions of a ServicePlan.
const (
	// PlanUnchanged: the Service has its load balancer, and nothing would be written.
	PlanUnchanged PlanAction = "unchanged"
	// PlanUpdate: the Service's load balancer would be updated in place, its addresses
	// kept.
	PlanUpdate PlanAction = "update"
	// PlanAdopt: the load balancer the Service's load-balancer-id annotation names would
	// be adopted, its addresses kept.
	PlanAdopt PlanAction = "adopt"
	// PlanTakeover: the load balancer the earlier cloud-controller-manager marked as the
	// Service's (Aliases.OwnerTag) would be taken over, its addresses kept.
	PlanTakeover PlanAction = "takeover"
	// PlanCreate: a new load balancer would be made, with a new address.
	PlanCreate PlanAction = "create"
	// PlanReplace: the Service's load balancer would be deleted and a new one made, with
	// a new address (a switch between internal and public, or a setting the cloud changes
	// only that way).
	PlanReplace PlanAction = "replace"
	// PlanRefused: the adoption or takeover would be refused (Err says why): nothing would
	// be written, and no load balancer made.
	PlanRefused PlanAction = "refused"
	// PlanFails: the sync would fail before any write (Err says why: a malformed
	// annotation, a setting the cloud does not support, ...).
	PlanFails PlanAction = "fails"
)

// ServicePlan is what EnsureLoadBalancer would do for one Service, found by Plan
// without writing anything.
type ServicePlan struct {
	// Action is what would be done.
	Action PlanAction
	// LoadBalancerID is the load balancer the Service has, would adopt or take over (or
	// whose adoption would be refused); empty for a create.
	LoadBalancerID string
	// Addresses are what clients reach that load balancer by (plan.Endpoints: its
	// addresses and its hostname), which every action but PlanReplace keeps.
	Addresses []string
	// By says how the Service names the load balancer it would adopt: "named by
	// annotation <key>", or "marked <tag>=<uid> by the earlier cloud-controller-manager".
	By string
	// Duplicates are the IDs of other load balancers with the Service's ownership tags,
	// which the sync would delete.
	Duplicates []string
	// Current is the load balancer's spec as read; nil for a create.
	Current *cloudapi.LoadBalancerSpec
	// Want is the spec the sync would write (for PlanRefused and PlanFails, the zero
	// spec).
	Want cloudapi.LoadBalancerSpec
	// Changes are what would change from Current to Want (see Parts).
	Changes cloudapi.LoadBalancerChanges
	// Err is why the action is PlanRefused or PlanFails; nil otherwise.
	Err error
}

// NewAddress reports whether the Service would get a new address: a new load balancer
// (PlanCreate) or a replaced one (PlanReplace).
func (p ServicePlan) NewAddress() bool { return p.Action == PlanCreate || p.Action == PlanReplace }

// Plan reports what EnsureLoadBalancer would do for the Service with nodes, from a fresh
// read of the cloud and without writing anything, to the cloud or the cluster: no event,
// no annotation or condition on the Service. It follows EnsureLoadBalancer's path: the
// Service's own load balancer (a list by owner tags), else the one its load-balancer-id
// annotation names (one read), else, with Aliases.OwnerTag, the one the earlier
// cloud-controller-manager marked as the Service's (one list), else a create; and for
// each, the spec the planner makes and what differs from the load balancer as read. With
// Options.TargetGroups, a load balancer that sends to a target group is planned with its
// targets as they are (a group is the cluster's, not one Service's). The error is a read
// that failed; what the sync would refuse is in the plan (PlanRefused, PlanFails). It
// takes no lock and leaves the snapshot as it is, so it may run beside the syncs.
func (l *LoadBalancer) Plan(ctx context.Context, svc *corev1.Service, nodes []*corev1.Node) (ServicePlan, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "plan", true)
	owner, err := l.intents.owner(svc)
	if err != nil {
		return ServicePlan{Action: PlanFails, Err: err}, nil
	}
	found, err := l.snap.find(ctx, svc, owner)
	if err != nil {
		return ServicePlan{}, err
	}
	adoptID := l.intents.annotation(svc, AnnotationLoadBalancerID).loadBalancerID
	if len(found) > 0 {
		prefer := adoptID
		if isShare(owner) {
			prefer = ""
		}
		kept, extras := plan.Duplicates(found, prefer, ingressAddresses(svc))
		out := l.quiet.planFor(logger, svc, owner, nodes, &kept[0], l.w.groups != nil)
		for _, x := range extras {
			out.Duplicates = append(out.Duplicates, x.ID)
		}
		return out, nil
	}
	var how adoption
	var lb *cloudapi.LoadBalancer
	switch tag := l.opts.Aliases.OwnerTag; {
	case isShare(owner):
	case adoptID != "":
		how = adoption{id: adoptID, key: l.intents.key(svc, AnnotationLoadBalancerID)}
		if lb, err = l.snap.readAdopted(ctx, how); cloudapi.IsNotFound(err) {
			return ServicePlan{Action: PlanRefused, LoadBalancerID: adoptID, By: how.named(), Err: err}, nil
		} else if err != nil {
			return ServicePlan{}, err
		}
	case tag != "":
		lb, err = l.snap.marked(ctx, tag, owner)
		if errors.Is(err, ErrTakeoverRefused) {
			return ServicePlan{Action: PlanRefused, Err: err}, nil
		} else if err != nil {
			return ServicePlan{}, err
		}
		if lb != nil {
			how = adoption{id: lb.ID, mark: tag + "=" + owner, lb: lb}
		}
	}
	if lb == nil {
		want, err := l.quiet.ensureWant(logger, svc, owner, nodes, nil)
		if err != nil {
			return ServicePlan{Action: PlanFails, Err: err}, nil
		}
		return ServicePlan{Action: PlanCreate, Want: want.spec}, nil
	}
	out := ServicePlan{Action: PlanAdopt, LoadBalancerID: lb.ID, Addresses: slices.Clone(plan.Endpoints(*lb)), By: how.named(), Current: &lb.Spec}
	if how.mark != "" {
		out.Action = PlanTakeover
	}
	owned, want, err := l.quiet.adoptWant(logger, l.w, svc, owner, nodes, lb, how)
	if err != nil {
		out.Action, out.Err = PlanRefused, err
		return out, nil
	}
	if owned { // a list that missed it
		return l.quiet.planFor(logger, svc, owner, nodes, lb, l.w.groups != nil), nil
	}
	keepGroup(&want, lb, l.w.groups != nil)
	out.Want, out.Changes = want.spec, l.w.cmp.diff(lb.Spec, want.spec)
	return out, nil
}

// planFor is Plan for the Service's own load balancer current (grouped: the LoadBalancer
// has target groups).
func (p *planner) planFor(logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, current *cloudapi.LoadBalancer, grouped bool) ServicePlan {
	out := ServicePlan{Action: PlanUpdate, LoadBalancerID: current.ID, Addresses: slices.Clone(plan.Endpoints(*current)), Current: &current.Spec}
	want, err := p.ensureWant(logger, svc, owner, nodes, current)
	if err != nil {
		out.Action, out.Err = PlanFails, err
		return out
	}
	keepGroup(&want, current, grouped)
	out.Want = want.spec
	replace, err := p.replaces(logger, svc, current, want.spec)
	switch {
	case err != nil:
		out.Action, out.Err = PlanFails, err
	case replace:
		out.Action = PlanReplace
	default:
		out.Changes = p.cmp.diff(current.Spec, want.spec)
		if out.Changes.Empty() {
			out.Action = PlanUnchanged
		}
	}
	return out
}

// keepGroup leaves the targets of want as current has them when want's go to a target
// group (grouped: the LoadBalancer has target groups) and current sends to one: which
// group they would go to is the target group store's to decide, which Plan does not ask
// (it may create one).
func keepGroup(want *wanted, current *cloudapi.LoadBalancer, grouped bool) {
	if grouped && want.grouped && current.Spec.TargetGroup != "" {
		want.spec.TargetGroup, want.spec.Targets = current.Spec.TargetGroup, slices.Clone(current.Spec.Targets)
	}
}

// Parts describes each part of the load balancer that would change, one line each
// ("health check: TCP :31443 every 15s ... → HTTP :10256 ..."), in the order of
// cloudapi.LoadBalancerChanges' fields; none when nothing would change (or there is
// nothing to compare: a create, a refusal).
func (p ServicePlan) Parts() []string {
	c, cur, want := p.Changes, cloudapi.LoadBalancerSpec{}, p.Want
	if p.Current != nil {
		cur = *p.Current
	}
	var out []string
	add := func(part string, from, to any) { out = append(out, fmt.Sprintf("%s: %v → %v", part, from, to)) }
	if c.Name {
		add("name", fmt.Sprintf("%q", cur.Name), fmt.Sprintf("%q", want.Name))
	}
	if c.Internal {
		add("internal", cur.Internal, want.Internal)
	}
	for _, ln := range c.AddListeners {
		out = append(out, fmt.Sprintf("listener %d/%s: add (to node port %d)", ln.Port, ln.Protocol, ln.TargetPort))
	}
	for _, ln := range c.UpdateListeners {
		out = append(out, fmt.Sprintf("listener %d/%s: update (to node port %d)", ln.Port, ln.Protocol, ln.TargetPort))
	}
	for _, k := range c.RemoveListeners {
		out = append(out, fmt.Sprintf("listener %d/%s: remove", k.Port, k.Protocol))
	}
	if len(c.AddTargets) > 0 {
		out = append(out, "targets: add "+someOf(c.AddTargets))
	}
	if len(c.RemoveTargets) > 0 {
		out = append(out, "targets: remove "+someOf(c.RemoveTargets))
	}
	if c.TargetGroup {
		add("target group", fmt.Sprintf("%q", cur.TargetGroup), fmt.Sprintf("%q", want.TargetGroup))
	}
	if c.HealthCheck {
		add("health check", healthCheckText(cur.HealthCheck), healthCheckText(want.HealthCheck))
	}
	if c.SourceRanges {
		add("source ranges", cur.SourceRanges, want.SourceRanges)
	}
	if c.ProxyProtocol {
		add("PROXY protocol", cur.ProxyProtocol, want.ProxyProtocol)
	}
	if c.IPFamilies {
		add("IP families", cur.IPFamilies, want.IPFamilies)
	}
	if c.RequestedIPs {
		add("requested addresses", cur.RequestedIPs, want.RequestedIPs)
	}
	if c.SessionAffinity {
		affinity := func(s cloudapi.LoadBalancerSpec) string {
			return strings.TrimSpace(fmt.Sprintf("%s %s %s", s.SessionAffinity, s.SessionAffinityTimeout, s.SessionAffinityCookieName))
		}
		add("session affinity", affinity(cur), affinity(want))
	}
	for _, name := range c.SettingValues {
		add("setting "+name, fmt.Sprintf("%q", cur.SettingValues[name]), fmt.Sprintf("%q", want.SettingValues[name]))
	}
	if c.Tags {
		out = append(out, "tags: "+tagChanges(cur.Tags, want.Tags))
	}
	return out
}

// someOf is ids joined, at most five of them and the count of the others.
func someOf(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:5], ", "), len(ids)-5)
}

// healthCheckText is hc in one line; "none" for nil.
func healthCheckText(hc *cloudapi.HealthCheck) string {
	if hc == nil {
		return "none"
	}
	s := fmt.Sprintf("%s :%d", hc.Protocol, hc.Port)
	if hc.Path != "" {
		s += " " + hc.Path
	}
	return fmt.Sprintf("%s every %s, timeout %s, healthy after %d, unhealthy after %d", s, hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold)
}

// tagChanges says which tags from would gain (+k=v), change (~k=v) and lose (-k) to be to.
func tagChanges(from, to map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(to)) {
		switch old, ok := from[k]; {
		case !ok:
			out = append(out, "+"+k+"="+to[k])
		case old != to[k]:
			out = append(out, "~"+k+"="+to[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(from)) {
		if _, ok := to[k]; !ok {
			out = append(out, "-"+k)
		}
	}
	return strings.Join(out, ", ")
}
