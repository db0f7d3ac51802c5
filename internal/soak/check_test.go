package soak

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// The checks. A violation names the one it failed, so that shrinking can keep a history
// that fails the same way.
const (
	// Safety: must hold at every moment, checked over the whole run.
	checkDuplicateLB = "duplicate-load-balancer" // two load balancers of one Service existed at once
	checkStaleDiff   = "stale-diff"              // an update's Changes did not describe what it changed
	checkNodeDeleted = "node-deleted"            // a Node was deleted while its instance existed
	checkBrakeStuck  = "brake-stuck"             // the deletion brake stayed engaged though a Node's instance ran
	checkNotOurs     = "not-ours-changed"        // a load balancer without this cluster's tags was changed (but by an adoption) or deleted, or a target group without them written
	// In a run with shares (share_test.go).
	checkShareDeleted    = "share-deleted"     // a share's last load balancer was deleted while a Service of the share existed
	checkShareListener   = "share-listener"    // a write about one Service removed the listener of another that exists
	checkReadyPortsTaken = "ready-ports-taken" // a Service of a share was ready while its every port was another's
	checkShareMisplaced  = "share-misplaced"   // a write put a Service's listener onto a shared load balancer it does not ask for (another share, other settings)
	// In a run with project switches (project_test.go).
	checkSwitchedNodeDeleted = "node-deleted-switched" // a Node was deleted while the config pointed at another project
	checkCreationBrake       = "creation-brake"        // more load balancers made anew in another project than the creation brake allows
	// Convergence: must hold once the faults stopped and the controllers settled.
	checkOrphanLB       = "orphaned-load-balancer" // a load balancer of a Service that is gone or wants none
	checkKeptLB         = "kept-load-balancer"     // a load balancer without this cluster's tags keeps ccmkit's tags or targets
	checkMissingLB      = "missing-load-balancer"  // a LoadBalancer Service without one
	checkStatus         = "service-status"         // status ingress is not the load balancer's address
	checkSays           = "service-says"           // the load balancer's ID annotation or condition is not what it is
	checkFinalizer      = "service-finalizer"      // cleanup finalizer missing, left behind, or deletion stuck
	checkLBSpec         = "load-balancer-spec"     // the load balancer does not match the Service and Nodes
	checkOrphanRoute    = "orphaned-route"         // a route of no Node, of a wrong CIDR or instance, or a blackhole
	checkMissingRoute   = "missing-route"          // a Node's pod CIDR without its route
	checkNodeLeft       = "node-without-instance"  // a Node whose instance is gone was not deleted
	checkNodeInit       = "node-uninitialized"     // a Node without provider ID or still tainted uninitialized
	checkShutdownTaint  = "shutdown-taint"         // the shutdown taint does not match the instance and readiness
	checkSettled        = "not-settled"            // a controller still retries after the settle window
	checkOrphanGroup    = "orphaned-target-group"  // a target group of the cluster that no load balancer of the cluster names
	checkDuplicateGroup = "duplicate-target-group" // two target groups of the cluster for the same Nodes
	checkOrphanListener = "orphaned-listener"      // a listener of a shared load balancer of no Service of its share
	checkHandover       = "share-handover"         // a Service of a share lacks a port free on its share's load balancer
	checkCreationHeld   = "creation-held"          // the creation brake holds a Service whose load balancer exists
)

// violation is one broken invariant.
type violation struct {
	Check string
	Msg   string
}

func (v violation) String() string { return v.Check + ": " + v.Msg }

// check returns every violation of the end state: the load balancer history, the cloud's
// inventory against the Services and Nodes, and the Services' statuses against what
// EnsureLoadBalancer returned last.
// With groups, the cloud has target groups, which the load balancers must use.
func check(w *world, cloud *fake.Cloud, rec *recorder, groups bool) []violation {
	inv := cloud.Inventory()
	var out []violation
	out = append(out, checkHistory(cloud.LoadBalancerHistory())...)
	out = append(out, checkKept(inv, rec)...)
	out = append(out, checkGroups(inv, rec.foreignGroups)...)
	out = append(out, checkServices(w, inv, rec, groups)...)
	out = append(out, checkRoutes(w, inv)...)
	out = append(out, checkNodes(w, inv)...)
	return out
}

// owner returns the Service UID a load balancer's tags name when the tags make it the
// cluster's, else "".
func owner(tags map[string]string) string {
	if tags[cloudapi.TagCluster] != clusterID {
		return ""
	}
	return tags[cloudapi.TagService]
}

// checkHistory replays the load balancer writes: no create or adoption may give a Service
// a second load balancer while it has one; every update's Changes must be its real diff,
// also when the update is the client's retry of one whose answer was lost (the retry is
// re-based on a fresh read); and a load balancer without this cluster's tags is never
// deleted, and changed only by an adoption that makes it a Service's without touching its
// addresses, and never when it carries another cluster's tag.
func checkHistory(history []fake.Event) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	live := map[string]string{}                     // load balancer ID → owner UID
	specs := map[string]cloudapi.LoadBalancerSpec{} // load balancer ID → spec before the event
	duplicate := func(e fake.Event, uid string) {
		for _, id := range slices.Sorted(maps.Keys(live)) {
			if uid != "" && id != e.ID && live[id] == uid {
				add(checkDuplicateLB, "%s %s for service UID %s (%s) while %s existed", e.Op, e.ID, uid, e.Spec.Tags[cloudapi.TagServiceName], id)
			}
		}
	}
	for _, e := range history {
		uid := owner(e.Spec.Tags)
		before, existed := specs[e.ID]
		ours := existed && before.Tags[cloudapi.TagCluster] == clusterID
		switch e.Op {
		case cloudapi.OpCreateLoadBalancer:
			duplicate(e, uid)
			live[e.ID] = uid
			specs[e.ID] = e.Spec
		case cloudapi.OpUpdateLoadBalancer:
			switch {
			case !existed:
			case ours:
			case before.Tags[cloudapi.TagCluster] != "":
				add(checkNotOurs, "update of %s, which carries another cluster's tag %v", e.ID, before.Tags)
			case uid == "":
				add(checkNotOurs, "update of %s, which has no ccmkit tags, that does not adopt it (tags after: %v)", e.ID, e.Spec.Tags)
			case e.Actual.RequestedIPs || e.Actual.Internal:
				add(checkNotOurs, "the adoption of %s changed what decides its addresses: %+v", e.ID, e.Actual)
			}
			if uid != live[e.ID] {
				duplicate(e, uid)
			}
			live[e.ID] = uid
			specs[e.ID] = e.Spec
			if !e.ChangesMatch() {
				add(checkStaleDiff, "update of %s claimed %+v but changed %+v", e.ID, e.Changes, e.Actual)
			}
		case cloudapi.OpDeleteLoadBalancer:
			if existed && !ours {
				add(checkNotOurs, "delete of %s, which has no tag of this cluster (tags %v)", e.ID, before.Tags)
			}
			delete(live, e.ID)
			delete(specs, e.ID)
		}
	}
	return out
}

// checkKept checks the load balancers without this cluster's tags: those ccmkit released
// (and the one an operator made) carry neither of ccmkit's Service tags nor targets, nor
// name a target group of this cluster, and the other cluster's is as it was made. The
// operator's still exists: only Services with keep-on-delete adopt it.
func checkKept(inv fake.Inventory, rec *recorder) []violation {
	var out []violation
	operatorID := rec.operatorLB
	ours := map[string]bool{} // the IDs of this cluster's target groups
	for _, g := range inv.TargetGroups {
		if g.Spec.Tags[cloudapi.TagCluster] == clusterID {
			ours[g.ID] = true
		}
	}
	if !slices.ContainsFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool { return lb.ID == operatorID }) {
		out = append(out, violation{Check: checkKeptLB, Msg: fmt.Sprintf("the operator's load balancer %s is gone, though every Service that adopted it had keep-on-delete", operatorID)})
	}
	for _, lb := range inv.LoadBalancers {
		switch lb.Spec.Tags[cloudapi.TagCluster] {
		case clusterID:
		case otherClusterID:
			if !reflect.DeepEqual(lb.Spec, rec.otherLB) {
				out = append(out, violation{Check: checkNotOurs, Msg: fmt.Sprintf("the other cluster's load balancer %s is %+v, was %+v", lb.ID, lb.Spec, rec.otherLB)})
			}
		default:
			_, uid := lb.Spec.Tags[cloudapi.TagService]
			_, name := lb.Spec.Tags[cloudapi.TagServiceName]
			if uid || name || len(lb.Spec.Targets) > 0 {
				out = append(out, violation{Check: checkKeptLB, Msg: fmt.Sprintf("%s (%s) has no cluster tag but tags %v and targets %v", lb.ID, lb.Spec.Name, lb.Spec.Tags, lb.Spec.Targets)})
			}
			if ours[lb.Spec.TargetGroup] {
				out = append(out, violation{Check: checkKeptLB, Msg: fmt.Sprintf("%s (%s) has no cluster tag but names the cluster's target group %s", lb.ID, lb.Spec.Name, lb.Spec.TargetGroup)})
			}
		}
	}
	return out
}

// checkGroups checks the target groups: the foreign ones (made before the history, by ID)
// are as they were made; every group of the cluster is named by a load balancer of the
// cluster (a collection deletes the others), and there is one group of the cluster per
// cloudapi.TagTargetGroup value at most. Any other group is one ccmkit made without this
// cluster's tag.
func checkGroups(inv fake.Inventory, foreign map[string]cloudapi.TargetGroup) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	named := map[string][]string{} // group ID → the cluster's load balancers that name it
	for _, lb := range inv.LoadBalancers {
		if lb.Spec.TargetGroup != "" && owner(lb.Spec.Tags) != "" {
			named[lb.Spec.TargetGroup] = append(named[lb.Spec.TargetGroup], lb.ID)
		}
	}
	byKey := map[string][]string{} // TagTargetGroup value → the cluster's groups
	seen := map[string]bool{}
	for _, g := range inv.TargetGroups {
		seen[g.ID] = true
		if g.Spec.Tags[cloudapi.TagCluster] != clusterID {
			if was, ok := foreign[g.ID]; !ok {
				add(checkNotOurs, "target group %s (%s) has neither this cluster's tag (tags %v) nor was it in the cloud before", g.ID, g.Spec.Name, g.Spec.Tags)
			} else if !reflect.DeepEqual(g, was) {
				add(checkNotOurs, "target group %s without this cluster's tag is %+v, was %+v", g.ID, g.Spec, was.Spec)
			}
			continue
		}
		k := g.Spec.Tags[cloudapi.TagTargetGroup]
		byKey[k] = append(byKey[k], g.ID)
		if len(named[g.ID]) == 0 {
			add(checkOrphanGroup, "target group %s (%s=%s, members %v) is named by no load balancer of the cluster", g.ID, cloudapi.TagTargetGroup, k, g.Spec.Targets)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(foreign)) {
		if !seen[id] {
			add(checkNotOurs, "target group %s (%s) without this cluster's tag was deleted", id, foreign[id].Spec.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if ids := byKey[k]; len(ids) > 1 {
			add(checkDuplicateGroup, "%d target groups of the cluster with %s=%s: %v (named by %v)", len(ids), cloudapi.TagTargetGroup, k, ids, named)
		}
	}
	return out
}

// checkServices checks every Service against its load balancer and every load balancer of
// the cluster against its Service. With groups, the cloud has target groups.
func checkServices(w *world, inv fake.Inventory, rec *recorder, groups bool) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	byUID := map[string]*corev1.Service{}
	for _, name := range w.serviceNames() {
		svc := w.service(name)
		byUID[string(svc.UID)] = svc
	}
	lbs := map[string][]cloudapi.LoadBalancer{}
	for _, lb := range inv.LoadBalancers {
		uid := owner(lb.Spec.Tags)
		if uid == "" {
			continue
		}
		lbs[uid] = append(lbs[uid], lb)
		svc := byUID[uid]
		switch {
		case rec.leftBehind[uid]:
		case svc == nil:
			add(checkOrphanLB, "%s (%s) belongs to service UID %s, which is gone", lb.ID, lb.Spec.Tags[cloudapi.TagServiceName], uid)
		case !wantsLoadBalancer(svc):
			add(checkOrphanLB, "%s belongs to service %s, which is of type %s", lb.ID, svc.Name, svc.Spec.Type)
		}
	}
	nodes := w.listNodes()
	for _, name := range w.serviceNames() {
		svc := w.service(name)
		if svc.DeletionTimestamp != nil {
			add(checkFinalizer, "service %s is still being deleted (finalizers %v)", name, svc.Finalizers)
			continue
		}
		if !wantsLoadBalancer(svc) {
			if servicehelpers.HasLBFinalizer(svc) {
				add(checkFinalizer, "service %s of type %s keeps the load balancer cleanup finalizer", name, svc.Spec.Type)
			}
			if len(svc.Status.LoadBalancer.Ingress) > 0 {
				add(checkStatus, "service %s of type %s has load balancer ingress %v", name, svc.Spec.Type, svc.Status.LoadBalancer.Ingress)
			}
			if id, ok := svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID]; ok {
				add(checkSays, "service %s of type %s has annotation %s=%s", name, svc.Spec.Type, loadbalancer.StatusAnnotationLoadBalancerID, id)
			}
			if c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady); c != nil {
				add(checkSays, "service %s of type %s has condition %s (%s)", name, svc.Spec.Type, c.Type, c.Reason)
			}
			continue
		}
		if !servicehelpers.HasLBFinalizer(svc) {
			add(checkFinalizer, "service %s has no load balancer cleanup finalizer", name)
		}
		if shareOf(svc) != "" {
			continue // its share's load balancer: checkShares
		}
		mine := lbs[string(svc.UID)]
		switch len(mine) {
		case 0:
			add(checkMissingLB, "service %s (UID %s) has no load balancer", name, svc.UID)
			continue
		case 1:
		default:
			add(checkDuplicateLB, "service %s has %d load balancers", name, len(mine))
		}
		lb := mine[0]
		if got := ingressIPs(svc.Status.LoadBalancer); !slices.Equal(got, lb.Addresses) {
			add(checkStatus, "service %s has ingress %v, its load balancer %s has addresses %v", name, got, lb.ID, lb.Addresses)
		}
		switch ensured, ok := rec.ensured[svc.UID]; {
		case !ok:
			add(checkStatus, "service %s: no EnsureLoadBalancer of it ever succeeded", name)
		case !servicehelpers.LoadBalancerStatusEqual(&ensured, &svc.Status.LoadBalancer):
			add(checkStatus, "service %s has status %v, the last successful EnsureLoadBalancer returned %v", name, svc.Status.LoadBalancer.Ingress, ensured.Ingress)
		}
		if id := svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID]; id != lb.ID {
			add(checkSays, "service %s has annotation %s=%q, its load balancer is %s", name, loadbalancer.StatusAnnotationLoadBalancerID, id, lb.ID)
		}
		if c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != loadbalancer.ReasonProvisioned {
			add(checkSays, "service %s's condition %s is %+v, not True (%s)", name, loadbalancer.ConditionLoadBalancerReady, c, loadbalancer.ReasonProvisioned)
		}
		for _, problem := range specProblems(svc, lb, nodes, inv, groups) {
			add(checkLBSpec, "service %s, load balancer %s: %s", name, lb.ID, problem)
		}
	}
	return out
}

func ingressIPs(st corev1.LoadBalancerStatus) []string {
	var ips []string
	for _, in := range st.Ingress {
		ips = append(ips, in.IP)
	}
	return ips
}

// specProblems compares a load balancer with what its Service and the Nodes ask for:
// listeners, targets, the annotations' effects, source ranges, address families and tags.
// With groups (a cloud with target groups) the load balancer names the cluster's group of
// every Node and has no targets of its own, and its targets are the group's members;
// without, it names no group.
func specProblems(svc *corev1.Service, lb cloudapi.LoadBalancer, nodes []*corev1.Node, inv fake.Inventory, groups bool) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if lb.Status != cloudapi.LoadBalancerActive {
		bad("status %s", lb.Status)
	}
	if groups {
		wantTags := map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagTargetGroup: groupAllNodes}
		i := slices.IndexFunc(inv.TargetGroups, func(g cloudapi.TargetGroup) bool { return g.ID == lb.Spec.TargetGroup })
		switch {
		case lb.Spec.TargetGroup == "":
			bad("names no target group")
		case i < 0:
			bad("names target group %s, which does not exist", lb.Spec.TargetGroup)
		case !maps.Equal(inv.TargetGroups[i].Spec.Tags, wantTags):
			bad("names target group %s with tags %v, not the cluster's group of every Node %v", lb.Spec.TargetGroup, inv.TargetGroups[i].Spec.Tags, wantTags)
		}
		if len(lb.Spec.Targets) > 0 {
			bad("has targets of its own %v", lb.Spec.Targets)
		}
	} else if lb.Spec.TargetGroup != "" {
		bad("names target group %s on a cloud without target groups", lb.Spec.TargetGroup)
	}
	targets := inv.Targets(lb)

	type listener struct {
		proto      string
		port, node int32
	}
	var want, got []listener
	for _, p := range svc.Spec.Ports {
		want = append(want, listener{string(p.Protocol), p.Port, p.NodePort})
	}
	for _, l := range lb.Spec.Listeners {
		got = append(got, listener{string(l.Protocol), l.Port, l.TargetPort})
	}
	byKey := func(a, b listener) int { return cmp.Or(strings.Compare(a.proto, b.proto), cmp.Compare(a.port, b.port)) }
	slices.SortFunc(want, byKey)
	slices.SortFunc(got, byKey)
	if !slices.Equal(want, got) {
		bad("listeners %v, want %v (protocol, port, node port)", got, want)
	}

	// Targets: every Node the service controller passes with a provider ID. A Node the
	// autoscaler tainted may still be one: the node sync ignores taint changes.
	must, may := map[string]bool{}, map[string]bool{}
	for _, n := range stableNodes(nodes) {
		if id := providerInstanceID(n.Spec.ProviderID); id != "" {
			must[id] = true
		}
	}
	for _, n := range nodes {
		if id := providerInstanceID(n.Spec.ProviderID); id != "" && hasTaint(n, toBeDeletedTaint) && nodeIncluded(n) {
			may[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(must)) {
		if !slices.Contains(targets, id) {
			bad("target %s is missing (targets %v)", id, targets)
		}
	}
	for _, id := range targets {
		if !must[id] && !may[id] {
			bad("target %s is no Node that should be one (targets %v)", id, targets)
		}
	}

	ann := func(name string) string { return svc.Annotations[loadbalancer.DefaultAnnotationPrefix+name] }
	if want := ann(loadbalancer.AnnotationInternal) == "true"; lb.Spec.Internal != want {
		bad("internal %t, want %t", lb.Spec.Internal, want)
	}
	if want := ann(loadbalancer.AnnotationProxyProtocol) == "true"; lb.Spec.ProxyProtocol != want {
		bad("proxy protocol %t, want %t", lb.Spec.ProxyProtocol, want)
	}
	if want := ann(loadbalancer.AnnotationName); want != "" && lb.Spec.Name != want {
		bad("name %q, want %q", lb.Spec.Name, want)
	}
	if want := ann(loadbalancer.AnnotationLoadBalancerID); want != "" && lb.ID != want {
		bad("load balancer %s, but annotation %s names %s", lb.ID, loadbalancer.AnnotationLoadBalancerID, want)
	}
	if hc := lb.Spec.HealthCheck; hc == nil {
		bad("no health check")
	} else {
		proto := cmp.Or(ann(loadbalancer.AnnotationHealthCheckProtocol), string(cloudapi.HealthCheckHTTP))
		port := fmt.Sprint(loadbalancer.KubeProxyHealthzPort)
		if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			port = fmt.Sprint(svc.Spec.HealthCheckNodePort)
		}
		port = cmp.Or(ann(loadbalancer.AnnotationHealthCheckPort), port)
		path := cmp.Or(ann(loadbalancer.AnnotationHealthCheckPath), "/healthz")
		if proto == string(cloudapi.HealthCheckTCP) {
			path = ""
		}
		if lb.Spec.Tags[cloudapi.TagAdopted] != "" {
			// An adopted load balancer keeps its own health check but for the parts the
			// Service annotates (cloudapi.TagAdopted).
			proto = cmp.Or(ann(loadbalancer.AnnotationHealthCheckProtocol), string(hc.Protocol))
			port = cmp.Or(ann(loadbalancer.AnnotationHealthCheckPort), fmt.Sprint(hc.Port))
			path = cmp.Or(ann(loadbalancer.AnnotationHealthCheckPath), hc.Path)
			if proto == string(cloudapi.HealthCheckTCP) {
				path = ""
			}
		}
		if string(hc.Protocol) != proto || fmt.Sprint(hc.Port) != port || hc.Path != path {
			bad("health check %s port %d path %q, want %s port %s path %q", hc.Protocol, hc.Port, hc.Path, proto, port, path)
		}
	}
	wantRanges := slices.Sorted(slices.Values(svc.Spec.LoadBalancerSourceRanges))
	if gotRanges := slices.Sorted(slices.Values(lb.Spec.SourceRanges)); !slices.Equal(gotRanges, wantRanges) {
		bad("source ranges %v, want %v", gotRanges, wantRanges)
	}
	if len(lb.Addresses) != len(svc.Spec.IPFamilies) {
		bad("addresses %v for IP families %v", lb.Addresses, svc.Spec.IPFamilies)
	}
	if lb.Spec.Tags[cloudapi.TagServiceName] != svc.Namespace+"/"+svc.Name {
		bad("tag %s=%q, want %s/%s", cloudapi.TagServiceName, lb.Spec.Tags[cloudapi.TagServiceName], svc.Namespace, svc.Name)
	}
	return out
}

// providerInstanceID returns the instance ID in a provider ID of the default format, or "".
func providerInstanceID(providerID string) string {
	id, ok := strings.CutPrefix(providerID, provider.DefaultProviderName+"://")
	if !ok {
		return ""
	}
	return id
}

// instanceOf returns the Node's instance among instances: by provider ID when the Node has
// one, else by name; nil when there is none.
func instanceOf(n *corev1.Node, instances []cloudapi.Instance) *cloudapi.Instance {
	for i := range instances {
		if id := providerInstanceID(n.Spec.ProviderID); id != "" && instances[i].ID == id ||
			n.Spec.ProviderID == "" && instances[i].Name == n.Name {
			return &instances[i]
		}
	}
	return nil
}

// checkRoutes checks that the cluster's routes are exactly one per pod CIDR of every Node,
// to the Node's instance, none a blackhole.
func checkRoutes(w *world, inv fake.Inventory) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	have := map[string]int{} // node/cidr → routes
	for _, r := range inv.Routes {
		if r.Tags[cloudapi.TagCluster] != clusterID {
			continue
		}
		name := r.Tags[cloudapi.TagNode]
		have[name+" "+r.DestinationCIDR]++
		n := w.node(name)
		switch {
		case n == nil:
			add(checkOrphanRoute, "route %s (%s) is to node %s, which is gone", r.ID, r.DestinationCIDR, name)
		case !slices.Contains(n.Spec.PodCIDRs, r.DestinationCIDR):
			add(checkOrphanRoute, "route %s sends %s to node %s, whose pod CIDRs are %v", r.ID, r.DestinationCIDR, name, n.Spec.PodCIDRs)
		case r.Blackhole:
			add(checkOrphanRoute, "route %s (%s to node %s) is a blackhole", r.ID, r.DestinationCIDR, name)
		default:
			if inst := instanceOf(n, inv.Instances); inst == nil || inst.ID != r.TargetInstanceID {
				add(checkOrphanRoute, "route %s (%s to node %s) targets instance %s, not the node's", r.ID, r.DestinationCIDR, name, r.TargetInstanceID)
			}
		}
	}
	for _, n := range w.listNodes() {
		for _, cidr := range n.Spec.PodCIDRs {
			if have[n.Name+" "+cidr] == 0 {
				add(checkMissingRoute, "node %s has no route for its pod CIDR %s", n.Name, cidr)
			}
		}
	}
	return out
}

// checkNodes checks that every Node has a live instance, is initialized, and carries the
// shutdown taint exactly when it is NotReady with a stopped instance (Ready: never).
func checkNodes(w *world, inv fake.Inventory) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	for _, n := range w.listNodes() {
		inst := instanceOf(n, inv.Instances)
		if inst == nil || inst.State == cloudapi.InstanceTerminated {
			add(checkNodeLeft, "node %s remains, its instance is gone or terminated", n.Name)
			continue
		}
		if n.Spec.ProviderID == "" || hasTaint(n, cloudproviderapi.TaintExternalCloudProvider) {
			add(checkNodeInit, "node %s is not initialized (provider ID %q, taints %v)", n.Name, n.Spec.ProviderID, n.Spec.Taints)
		}
		tainted := hasTaint(n, cloudproviderapi.TaintNodeShutdown)
		ready := nodeReady(n) == corev1.ConditionTrue
		switch {
		case ready && tainted:
			add(checkShutdownTaint, "node %s is Ready but keeps the shutdown taint", n.Name)
		case !ready && inst.State == cloudapi.InstanceStopped && !tainted:
			add(checkShutdownTaint, "node %s is NotReady with a stopped instance but has no shutdown taint", n.Name)
		}
	}
	return out
}

// checks returns the names of the checks the violations failed, sorted, without repeats.
func checks(vs []violation) []string {
	set := map[string]bool{}
	for _, v := range vs {
		set[v.Check] = true
	}
	return slices.Sorted(maps.Keys(set))
}
