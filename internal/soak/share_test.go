package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// How a run with shares (params.shares) puts Services in shares. The generator gives a
// create-service or update-annotations operation a share of a small set (shareNames) or
// none, so that Services join, leave and move between shares, and meet there on the same
// ports or not. With params.placed (every run with shares but the regressions found
// before it), a Service is created in one of two namespaces (op.Namespace), and a third
// of the Services that join a share ask for the ports of a Service of the share
// (op.TakePorts), and wait for them. The seed decides whether the provider shares across
// namespaces (params.acrossNamespaces, loadBalancer.shareAcrossNamespaces): a share's key
// is then "*/name", else "namespace/name", and its Services are counted in that scope
// (sharing). The run sets the share annotation as a user would, with two rules a careful
// user keeps:
//
//   - A Service that names a load balancer by ID (load-balancer-id, see adopt_test.go)
//     stays out of shares (the two annotations refuse each other), and a Service of a
//     share sets neither load-balancer-id nor keep-on-delete (it never adopts or keeps).
//   - An agreeing one (op.Agree, or op.TakePorts) asks for what the share asks for beside
//     its ports: no load balancer annotation but the share, externalTrafficPolicy
//     Cluster, no source ranges, IPv4 only. The others ask for what their annotations
//     say, and may disagree: their syncs fail (loadbalancer.ErrShareConflict) while
//     another Service of the share asks for what its load balancer has, by design.
//
// What must hold, besides every check of the other runs for the Services of no share:
//
//   - at every write: a shared load balancer is never deleted while a Service of its share
//     exists (of type LoadBalancer, not being deleted, in the share's scope) and no other
//     load balancer of the share is left (a duplicate may go), but by a Service of the
//     share that replaces it while no other one has a listener on it, or each that has
//     asks for what it asks for; a write about a Service removes no listener of another
//     Service that exists; a write puts a Service's listener only onto a load balancer of
//     its share that is what it asks for, unless it is there already; a write that frees
//     a port hands it to the Service of the share waiting for it (checkShareDeleted,
//     checkShareListener, checkShareMisplaced, checkHandover);
//   - at every condition the provider writes: a Service of a share is not ready while
//     another Service has its every port on the share's load balancer
//     (checkReadyPortsTaken);
//   - once settled: at most one load balancer per share, none of a share without a
//     Service, and every listener of a shared load balancer is a Service's of the share
//     (checkDuplicateLB, checkOrphanLB, checkOrphanListener); every Service of a share
//     whose last sync did not find it disagreeing has each port it asks for, to its node
//     port, unless another Service has it (checkHandover), and is not ready while another
//     has them all (checkReadyPortsTaken). A Service of a share may still wait for a
//     retry (it disagrees, or waits for ports), and its load balancer's settings, status
//     and targets are not checked against its own spec.

// annotationShare is the share annotation's key.
var annotationShare = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationShare

// shareOf returns the share a Service's annotation names, "" for none or no Service.
func shareOf(svc *corev1.Service) string {
	if svc == nil {
		return ""
	}
	return svc.Annotations[annotationShare]
}

// sharing is how the provider of a run with shares reads the share annotation: with
// loadBalancer.shareAcrossNamespaces (params.acrossNamespaces) a share's name is the same
// in every namespace, else it is scoped to the Service's namespace.
type sharing struct{ across bool }

// key returns the cloudapi.TagShare value of the share svc names: "namespace/name", or
// "*/name" across namespaces; "" for none or no Service.
func (sh sharing) key(svc *corev1.Service) string {
	name := shareOf(svc)
	if name == "" {
		return ""
	}
	ns := svc.Namespace
	if sh.across {
		ns = "*"
	}
	return ns + "/" + name
}

// inShare reports whether svc is a Service of the share key: of type LoadBalancer, not
// being deleted, naming it. Such a Service keeps the share's load balancer.
func (sh sharing) inShare(svc *corev1.Service, key string) bool {
	return svc != nil && wantsLoadBalancer(svc) && svc.DeletionTimestamp == nil && key != "" && sh.key(svc) == key
}

// members returns the UIDs of the Services of the share key in w, of every namespace:
// the share's scope is what its key says, whichever Service a write is about.
func (sh sharing) members(w *world, key string) map[string]bool {
	out := map[string]bool{}
	for _, name := range w.serviceNames() {
		if svc := w.service(name); sh.inShare(svc, key) {
			out[string(svc.UID)] = true
		}
	}
	return out
}

// listenerUID is the UID of the Service a shared load balancer's listener belongs to: the
// part of its name before ':' (package loadbalancer's naming).
func listenerUID(name string) string {
	uid, _, _ := strings.Cut(name, ":")
	return uid
}

// prepareShare sets the share annotation o asks for in a run with shares (see the rules
// above); without shares it does nothing. With o.TakePorts (in a run that applies it,
// params.placed), a Service that joins a share asks for the ports of the share's first
// other Service (by name), and agrees with it.
func (s *sim) prepareShare(svc *corev1.Service, o op) {
	if !s.p.shares {
		return
	}
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	delete(svc.Annotations, annotationShare)
	if o.Share == "" || svc.Annotations[annotationID] != "" {
		return
	}
	delete(svc.Annotations, annotationKeep)
	take := o.TakePorts && s.p.placed
	if o.Agree || take {
		for k := range svc.Annotations {
			if strings.HasPrefix(k, loadbalancer.DefaultAnnotationPrefix) {
				delete(svc.Annotations, k)
			}
		}
		svc.Spec.LoadBalancerSourceRanges = nil
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	svc.Annotations[annotationShare] = o.Share
	if !take {
		return
	}
	sh := s.sharing()
	for _, name := range s.w.serviceNames() {
		if other := s.w.service(name); name != svc.Name && sh.inShare(other, sh.key(svc)) {
			setPorts(svc, other.Spec.Ports)
			s.res.portsTaken++
			return
		}
	}
}

// sharing returns how the run's provider reads the share annotation.
func (s *sim) sharing() sharing { return sharing{across: s.p.acrossNamespaces} }

// shareLBs returns the cluster's load balancers of the share key in inv.
func shareLBs(inv fake.Inventory, key string) []cloudapi.LoadBalancer {
	var out []cloudapi.LoadBalancer
	for _, lb := range inv.LoadBalancers {
		if lb.Spec.Tags[cloudapi.TagCluster] == clusterID && lb.Spec.Tags[cloudapi.TagShare] == key {
			out = append(out, lb)
		}
	}
	return out
}

// portsHeld returns, when no load balancer of lbs has a listener of svc and another
// Service's listener on them has each port svc asks for, those ports with their holders
// ("80/TCP (UID ...)"); nil otherwise. Such a Service is not served: it must not be
// ready.
func portsHeld(svc *corev1.Service, lbs []cloudapi.LoadBalancer) []string {
	if len(svc.Spec.Ports) == 0 {
		return nil
	}
	holder := map[cloudapi.ListenerKey]string{}
	for _, lb := range lbs {
		for _, l := range lb.Spec.Listeners {
			uid := listenerUID(l.Name)
			if uid == string(svc.UID) {
				return nil
			}
			holder[l.Key()] = uid
		}
	}
	var out []string
	for _, p := range svc.Spec.Ports {
		uid, ok := holder[portKey(p)]
		if !ok {
			return nil
		}
		out = append(out, fmt.Sprintf("%d/%s (UID %s)", p.Port, p.Protocol, uid))
	}
	return out
}

// portKey is the key of the listener of a Service port.
func portKey(p corev1.ServicePort) cloudapi.ListenerKey {
	return cloudapi.ListenerKey{Protocol: cloudapi.Protocol(p.Protocol), Port: p.Port}
}

// conditionWritten checks, as the provider writes a Service's condition in a run with
// shares, that a Service of a share is not reported ready (LoadBalancerReady True) while
// another Service of the share has every port it asks for on the share's load balancer
// in the project the config points at.
func (r *recorder) conditionWritten(svc *corev1.Service) {
	if r.sharing == nil || svc == nil {
		return
	}
	c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady)
	key := r.sharing.key(svc)
	if c == nil || c.Status != metav1.ConditionTrue || !r.sharing.inShare(svc, key) {
		return
	}
	if held := portsHeld(svc, shareLBs(r.project().Inventory(), key)); held != nil {
		r.violations = append(r.violations, violation{Check: checkReadyPortsTaken, Msg: fmt.Sprintf(
			"service %s/%s of share %s is reported ready while its every port is another Service's: %v", svc.Namespace, svc.Name, key, held)})
	}
}

// lbWrite checks, as a load balancer write reaches the cloud (before the cloud applies it,
// also when a fault then loses the answer) in a run with shares, that a shared load
// balancer is deleted only when no Service of its share exists or another load balancer
// of the share is left (but by a replacement, see replaces); that an update removes no
// listener of a Service that exists but the one synced (r.syncing); and that a create or
// update puts a Service's listener only onto a load balancer of its share that is what
// the Service asks for (askedPart; both as it was last synced), a port handed over or
// carried from a duplicate too, unless the listener stays as it was (served). spec is the create's or update's;
// nil for a delete. id is "" for a create.
func (r *recorder) lbWrite(op cloudapi.Operation, id string, spec *cloudapi.LoadBalancerSpec) {
	if r.sharing == nil {
		return
	}
	add := func(check, format string, args ...any) {
		r.violations = append(r.violations, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	inv := r.cloud.Inventory()
	var cur cloudapi.LoadBalancer
	if i := slices.IndexFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool { return lb.ID == id }); i >= 0 {
		cur = inv.LoadBalancers[i]
	} else if op != cloudapi.OpCreateLoadBalancer {
		return
	}
	tags := cur.Spec.Tags
	if spec != nil {
		tags = spec.Tags
	}
	key := tags[cloudapi.TagShare]
	if key == "" || tags[cloudapi.TagCluster] != clusterID {
		return
	}
	live := r.sharing.members(r.world, key)
	if op == cloudapi.OpDeleteLoadBalancer {
		others := slices.ContainsFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool {
			return lb.ID != id && lb.Spec.Tags[cloudapi.TagCluster] == clusterID && lb.Spec.Tags[cloudapi.TagShare] == key
		})
		if len(live) > 0 && !others && !r.replaces(cur, live) {
			add(checkShareDeleted, "delete of %s, the load balancer of share %s, while its Services %v exist (syncing %s)", id, key, slices.Sorted(maps.Keys(live)), r.syncing)
		}
		return
	}
	kept := map[string]bool{}
	for _, l := range spec.Listeners {
		kept[l.Name] = true
	}
	existing := map[string]bool{}
	for _, name := range r.world.serviceNames() {
		existing[string(r.world.service(name).UID)] = true
	}
	for _, l := range cur.Spec.Listeners {
		uid := listenerUID(l.Name)
		if !kept[l.Name] && uid != string(r.syncing) && existing[uid] {
			add(checkShareListener, "%s of %s (share %s) removes listener %s of Service UID %s while syncing %s", op, id, key, l.Name, uid, r.syncing)
		}
	}
	part := lbPart(*spec)
	r.handedOver(op, id, key, cur.Spec, *spec, live)
	for _, l := range spec.Listeners {
		svc := r.synced[types.UID(listenerUID(l.Name))]
		switch {
		case svc == nil || !existing[string(svc.UID)]:
		case r.sharing.key(svc) != key && !served(inv, key, l.Name, nil):
			add(checkShareMisplaced, "%s %s (share %s) puts listener %s of service %s/%s, which is not in the share (as last synced: share %q) (syncing %s)", op, id, key, l.Name, svc.Namespace, svc.Name, r.sharing.key(svc), r.syncing)
		case askedPart(svc) != part && !served(inv, key, l.Name, &part):
			add(checkShareMisplaced, "%s %s (share %s) puts listener %s of service %s/%s, which asks for %+v, onto a load balancer of %+v (syncing %s)", op, id, key, l.Name, svc.Namespace, svc.Name, askedPart(svc), part, r.syncing)
		}
	}
}

// handedOver checks that an update of the share key's load balancer cur to spec that
// frees a port (a listener of cur whose protocol and port spec has not) hands it to a
// Service of the share waiting for it, in the same write: one whose last sync, since the
// last restart (so that the provider knows it), failed with loadbalancer.ErrPortsTaken,
// that asks for the port and for what spec is (askedPart; both as last synced).
func (r *recorder) handedOver(op cloudapi.Operation, id, key string, cur, spec cloudapi.LoadBalancerSpec, live map[string]bool) {
	if op != cloudapi.OpUpdateLoadBalancer {
		return
	}
	kept := map[cloudapi.ListenerKey]bool{}
	for _, l := range spec.Listeners {
		kept[l.Key()] = true
	}
	restarted := r.lastRestart()
	for _, l := range cur.Listeners {
		if kept[l.Key()] {
			continue
		}
		for _, uid := range slices.Sorted(maps.Keys(live)) {
			w := r.synced[types.UID(uid)]
			if w == nil || uid == string(r.syncing) || !errors.Is(r.lastEnsure[w.UID], loadbalancer.ErrPortsTaken) ||
				r.syncedAt[w.UID].Before(restarted) || r.sharing.key(w) != key || askedPart(w) != lbPart(spec) ||
				!slices.ContainsFunc(w.Spec.Ports, func(p corev1.ServicePort) bool { return portKey(p) == l.Key() }) {
				continue
			}
			r.violations = append(r.violations, violation{Check: checkHandover, Msg: fmt.Sprintf(
				"%s of %s (share %s) frees port %d/%s, which service %s/%s waits for, without handing it over (syncing %s)", op, id, key, l.Port, l.Protocol, w.Namespace, w.Name, r.syncing)})
			break
		}
	}
}

// served reports whether a load balancer of the share key in inv (of part p, unless nil)
// has the listener named name: a listener the write keeps as it is, whatever its Service
// asks for now (a Service that comes to disagree keeps what it had, and one that leaves
// the share keeps it until its load balancer elsewhere is written).
func served(inv fake.Inventory, key, name string, p *part) bool {
	return slices.ContainsFunc(shareLBs(inv, key), func(lb cloudapi.LoadBalancer) bool {
		return (p == nil || lbPart(lb.Spec) == *p) && slices.ContainsFunc(lb.Spec.Listeners, func(l cloudapi.Listener) bool { return l.Name == name })
	})
}

// replaces reports whether the delete of cur, a load balancer of a share with the
// Services live, is the replacement of a change a cloud cannot make in place by the
// Service synced, of the share: when no other Service of the share has a listener on
// it; or when cur is not what the synced Service asks for (askedPart, as last synced)
// and each other Service with a listener on it asks for the same as the synced one, so
// that the share changes what it shares once its last Service asks for it.
func (r *recorder) replaces(cur cloudapi.LoadBalancer, live map[string]bool) bool {
	if !live[string(r.syncing)] {
		return false
	}
	me := r.synced[r.syncing]
	asks := func(uid string) bool {
		other := r.synced[types.UID(uid)]
		return me != nil && other != nil && askedPart(other) == askedPart(me) && lbPart(cur.Spec) != askedPart(me)
	}
	return !slices.ContainsFunc(cur.Spec.Listeners, func(l cloudapi.Listener) bool {
		uid := listenerUID(l.Name)
		return uid != string(r.syncing) && live[uid] && !asks(uid)
	})
}

// part is what the Services of a share must agree on that the soak varies, beside
// settings it keeps equal: whether the load balancer is internal, proxy protocol, the
// source ranges and the address families.
type part struct {
	internal, proxyProtocol bool
	ranges, families        string
}

// askedPart is the part svc asks for.
func askedPart(svc *corev1.Service) part {
	var families []string
	for _, f := range svc.Spec.IPFamilies {
		families = append(families, string(f))
	}
	return part{
		internal:      svc.Annotations[annotationInternal] == "true",
		proxyProtocol: svc.Annotations[loadbalancer.DefaultAnnotationPrefix+loadbalancer.AnnotationProxyProtocol] == "true",
		ranges:        strings.Join(slices.Sorted(slices.Values(svc.Spec.LoadBalancerSourceRanges)), ","),
		families:      familiesText(families),
	}
}

// familiesText names address families, IPv4 for none (the default of either).
func familiesText(families []string) string {
	if len(families) == 0 {
		return string(corev1.IPv4Protocol)
	}
	return strings.Join(families, ",")
}

// lbPart is the part a load balancer has.
func lbPart(spec cloudapi.LoadBalancerSpec) part {
	var families []string
	for _, f := range spec.IPFamilies {
		families = append(families, string(f))
	}
	return part{
		internal:      spec.Internal,
		proxyProtocol: spec.ProxyProtocol,
		ranges:        strings.Join(slices.Sorted(slices.Values(spec.SourceRanges)), ","),
		families:      familiesText(families),
	}
}

// lbList counts, in a run with shares, the reads of a share's load balancers (a list by
// its tags, the first page) scoped to one namespace while the service controller syncs a
// Service of another: a sync that revisits a share the snapshot is unsure of.
func (r *recorder) lbList(opts cloudapi.ListOptions) {
	key := opts.Tags[cloudapi.TagShare]
	if r.sharing == nil || key == "" || opts.PageToken != "" {
		return
	}
	if ns, _, _ := strings.Cut(key, "/"); ns != "*" {
		if svc := r.world.serviceByUID(r.syncing); svc != nil && svc.Namespace != ns {
			r.foreignShareReads++
		}
	}
}

// checkShares checks the cluster's shared load balancers once settled: one per share at
// most, none of a share without a Service, and no listener that is not a Service's of
// the share, but those a cleanup in another project left behind (recorder.leftBehind).
// It checks every Service of a share that its last sync did not find disagreeing
// (loadbalancer.ErrShareConflict): its share has a load balancer, on which each port it
// asks for is its listener, to its node port, or another Service's (a port freed was
// handed over); and it is not ready while another Service has its every port.
func checkShares(w *world, inv fake.Inventory, rec *recorder) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	sh := *rec.sharing
	byKey := map[string][]string{}
	for _, lb := range inv.LoadBalancers {
		key := lb.Spec.Tags[cloudapi.TagShare]
		if key == "" || lb.Spec.Tags[cloudapi.TagCluster] != clusterID {
			continue
		}
		byKey[key] = append(byKey[key], lb.ID)
		live := sh.members(w, key)
		left := rec.leftBehindShares[key] || slices.ContainsFunc(lb.Spec.Listeners, func(l cloudapi.Listener) bool { return rec.leftBehind[listenerUID(l.Name)] })
		if len(live) == 0 && !left {
			add(checkOrphanLB, "%s (%s) is the load balancer of share %s, which has no Service", lb.ID, lb.Spec.Name, key)
		}
		for _, l := range lb.Spec.Listeners {
			if uid := listenerUID(l.Name); !live[uid] && !rec.leftBehind[uid] {
				add(checkOrphanListener, "%s (share %s) has listener %s (%s/%d) of no Service of the share (Services %v)", lb.ID, key, l.Name, l.Protocol, l.Port, slices.Sorted(maps.Keys(live)))
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		if ids := byKey[key]; len(ids) > 1 {
			add(checkDuplicateLB, "share %s has %d load balancers: %v", key, len(ids), ids)
		}
	}
	for _, name := range w.serviceNames() {
		svc := w.service(name)
		key := sh.key(svc)
		if !sh.inShare(svc, key) || errors.Is(rec.lastEnsure[svc.UID], loadbalancer.ErrShareConflict) {
			continue
		}
		lbs := shareLBs(inv, key)
		if len(lbs) == 0 {
			add(checkHandover, "service %s/%s of share %s: the share has no load balancer (last sync: %v)", svc.Namespace, name, key, rec.lastEnsure[svc.UID])
			continue
		}
		if held := portsHeld(svc, lbs); held != nil {
			if c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady); c != nil && c.Status == metav1.ConditionTrue {
				add(checkReadyPortsTaken, "service %s/%s of share %s is ready while its every port is another Service's: %v", svc.Namespace, name, key, held)
			}
			continue
		}
		lb := lbs[0]
		for _, p := range svc.Spec.Ports {
			i := slices.IndexFunc(lb.Spec.Listeners, func(l cloudapi.Listener) bool { return l.Key() == portKey(p) })
			switch {
			case i < 0:
				add(checkHandover, "port %d/%s of service %s/%s is free on %s, the load balancer of its share %s, which does not serve it (last sync: %v)", p.Port, p.Protocol, svc.Namespace, name, lb.ID, key, rec.lastEnsure[svc.UID])
			case listenerUID(lb.Spec.Listeners[i].Name) == string(svc.UID) && lb.Spec.Listeners[i].TargetPort != p.NodePort:
				add(checkHandover, "port %d/%s of service %s/%s on %s (share %s) goes to node port %d, not its %d", p.Port, p.Protocol, svc.Namespace, name, lb.ID, key, lb.Spec.Listeners[i].TargetPort, p.NodePort)
			}
		}
	}
	return out
}

// sharedWrites counts the writes of shared load balancers in history, and those that left
// one with the listeners of two Services or more.
func sharedWrites(history []fake.Event) (writes, byMany int) {
	for _, e := range history {
		if e.Spec.Tags[cloudapi.TagShare] == "" {
			continue
		}
		writes++
		uids := map[string]bool{}
		for _, l := range e.Spec.Listeners {
			uids[listenerUID(l.Name)] = true
		}
		if len(uids) > 1 {
			byMany++
		}
	}
	return writes, byMany
}

// TestShareChecksCatchViolations plants each kind of damage the checks of a run with
// shares look for into a share of two Services, a and b (of two namespaces when the
// provider shares across namespaces), and expects the check that must report it: the
// checks are not vacuous.
func TestShareChecksCatchViolations(t *testing.T) {
	ctx := context.Background()
	listener := func(uid types.UID, port int32) cloudapi.Listener {
		return cloudapi.Listener{Name: string(uid) + ":p", Protocol: cloudapi.ProtocolTCP, Port: port, TargetPort: 30000 + port}
	}
	service := func(name, ns string, port int32) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{annotationShare: shareNames[0]}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, NodePort: 30000 + port}}},
		}
	}
	// setup returns a world with Services a (port 80) and b (port 443) in the share, a
	// cloud with the share's load balancer holding a listener of each, and a recorder
	// that checks writes. Across namespaces, b is in another namespace.
	setup := func(t *testing.T, across bool) (*world, *fake.Cloud, *recorder, cloudapi.LoadBalancer, types.UID, types.UID) {
		t.Helper()
		cloud, err := fake.New(fake.Config{})
		require.NoError(t, err)
		w := newWorld(newClock())
		require.NoError(t, w.createService(service("a", namespaces[0], 80)))
		bNamespace := namespaces[0]
		if across {
			bNamespace = namespaces[1]
		}
		require.NoError(t, w.createService(service("b", bNamespace, 443)))
		a, b := w.service("a").UID, w.service("b").UID
		rec := newRecorder(cloud, w)
		rec.sharing = &sharing{across: across}
		rec.synced[a], rec.synced[b] = w.service("a"), w.service("b")
		api, _ := cloud.LoadBalancers()
		lb, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared",
			Tags:      map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagShare: rec.sharing.key(w.service("a"))},
			Listeners: []cloudapi.Listener{listener(a, 80), listener(b, 443)}})
		require.NoError(t, err)
		require.Empty(t, checkShares(w, cloud.Inventory(), rec), "the undamaged share must pass")
		return w, cloud, rec, *lb, a, b
	}
	withListeners := func(spec cloudapi.LoadBalancerSpec, listeners ...cloudapi.Listener) *cloudapi.LoadBalancerSpec {
		spec = spec.Clone()
		spec.Listeners = listeners
		return &spec
	}
	update := func(t *testing.T, cloud *fake.Cloud, lb cloudapi.LoadBalancer, listeners ...cloudapi.Listener) {
		t.Helper()
		api, _ := cloud.LoadBalancers()
		spec := lb.Spec.Clone()
		spec.Listeners = listeners
		_, err := api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
		require.NoError(t, err)
	}
	// waiting adds Service c to the share, asking for port 80, which a has; with ready,
	// c is reported ready.
	waiting := func(t *testing.T, w *world, rec *recorder, ready bool) {
		t.Helper()
		require.NoError(t, w.createService(service("c", namespaces[0], 80)))
		cond := metav1.Condition{Type: loadbalancer.ConditionLoadBalancerReady, Status: metav1.ConditionFalse, Reason: loadbalancer.ReasonPortsTaken}
		if ready {
			cond = metav1.Condition{Type: loadbalancer.ConditionLoadBalancerReady, Status: metav1.ConditionTrue, Reason: loadbalancer.ReasonProvisioned}
		}
		w.updateService("c", func(svc *corev1.Service) { meta.SetStatusCondition(&svc.Status.Conditions, cond) })
		rec.conditionWritten(w.service("c"))
	}
	// freeing adds c, waiting for port 80 (its last sync failed with
	// loadbalancer.ErrPortsTaken), and moves a, synced, from port 80 to 8080; it returns
	// c's UID.
	freeing := func(t *testing.T, w *world, rec *recorder, a types.UID) types.UID {
		t.Helper()
		waiting(t, w, rec, false)
		c := w.service("c")
		rec.synced[c.UID], rec.lastEnsure[c.UID] = c, fmt.Errorf("planted: %w", loadbalancer.ErrPortsTaken)
		w.updateService("a", func(svc *corev1.Service) { svc.Spec.Ports[0].Port = 8080; svc.Spec.Ports[0].NodePort = 38080 })
		rec.synced[a], rec.syncing = w.service("a"), a
		return c.UID
	}
	tests := []struct {
		name   string
		across bool
		damage func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID)
		want   []string // nil: no violation
	}{
		{name: "a listener of no Service of the share", want: []string{checkOrphanListener},
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, _ *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				update(t, cloud, lb, append(lb.Spec.Listeners, listener("uid-gone", 8080))...)
			}},
		{name: "two load balancers of a share", want: []string{checkDuplicateLB},
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, _ *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				_, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared-2", Tags: lb.Spec.Tags})
				require.NoError(t, err)
			}},
		{name: "a share without Services", want: []string{checkOrphanLB, checkOrphanListener},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, _ *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				require.True(t, w.deleteService("a"))
				require.True(t, w.deleteService("b"))
			}},
		{name: "a write about a removes b's listener", want: []string{checkShareListener},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, listener(a, 80)))
			}},
		{name: "a write about a removes its own listener",
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, listener(b, 443)))
			}},
		{name: "the share's load balancer deleted while b has a listener on it", want: []string{checkShareDeleted},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "the share's load balancer deleted while its Services exist, about no Service", want: []string{checkShareDeleted},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a duplicate of the share deleted",
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				dup, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared-2", Tags: lb.Spec.Tags})
				require.NoError(t, err)
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, dup.ID, nil)
				require.NoError(t, api.DeleteLoadBalancer(ctx, dup.ID))
			}},
		{name: "across namespaces, the share's load balancer deleted by a's sync while b of another namespace has a listener", across: true, want: []string{checkShareDeleted},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a Service of another namespace naming the share keeps it across namespaces", across: true,
			want: []string{checkShareDeleted, checkOrphanListener},
			damage: func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				require.NoError(t, w.createService(service("c", namespaces[1], 8080)))
				require.True(t, w.deleteService("a"))
				require.True(t, w.deleteService("b"))
				update(t, cloud, lb, listener(a, 80), listener(b, 443), listener(w.service("c").UID, 8080))
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a Service of another namespace naming the share's name is in another share (which has no load balancer)",
			want: []string{checkOrphanLB, checkOrphanListener, checkHandover},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				require.NoError(t, w.createService(service("c", namespaces[1], 8080)))
				require.True(t, w.deleteService("a"))
				require.True(t, w.deleteService("b"))
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a replacement by a while b, which asks for the same, has a listener on it",
			damage: func(_ *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				w.updateService("a", func(svc *corev1.Service) { svc.Annotations[annotationInternal] = "true" })
				w.updateService("b", func(svc *corev1.Service) { svc.Annotations[annotationInternal] = "true" })
				rec.synced[a], rec.synced[w.service("b").UID] = w.service("a"), w.service("b")
				rec.syncing = a
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a replacement by a while b, which asks for other settings, has a listener on it", want: []string{checkShareDeleted},
			damage: func(_ *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				w.updateService("a", func(svc *corev1.Service) { svc.Annotations[annotationInternal] = "true" })
				rec.synced[a] = w.service("a")
				rec.syncing = a
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a Service that asks for other settings keeps its listener",
			damage: func(_ *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				w.updateService("b", func(svc *corev1.Service) { svc.Annotations[annotationInternal] = "true" })
				rec.synced[b] = w.service("b")
				rec.syncing = a
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, lb.Spec.Listeners...))
			}},
		{name: "a port handed over to a Service that asks for other settings", want: []string{checkShareMisplaced},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, b types.UID) {
				waiting(t, w, rec, false)
				w.updateService("c", func(svc *corev1.Service) { svc.Annotations[annotationInternal] = "true" })
				c := w.service("c")
				rec.synced[c.UID] = c
				rec.syncing = b
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, append(lb.Spec.Listeners, listener(c.UID, 8080))...))
			}},
		{name: "a port handed over to a Service that left the share", want: []string{checkShareMisplaced},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				waiting(t, w, rec, false)
				w.updateService("c", func(svc *corev1.Service) { delete(svc.Annotations, annotationShare) })
				c := w.service("c")
				rec.synced[c.UID] = c
				rec.syncing = b
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, append(lb.Spec.Listeners, listener(c.UID, 8080))...))
			}},
		{name: "a Service waits for a port another has",
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				waiting(t, w, rec, false)
			}},
		{name: "a Service ready while its every port is another's", want: []string{checkReadyPortsTaken},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				waiting(t, w, rec, true)
			}},
		{name: "a port a Service freed not handed over to the one waiting for it", want: []string{checkHandover},
			damage: func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, b types.UID) {
				waiting(t, w, rec, false)
				w.updateService("a", func(svc *corev1.Service) { delete(svc.Annotations, annotationShare) })
				update(t, cloud, lb, listener(b, 443))
			}},
		{name: "a write that frees a port a Service waits for keeps it from it", want: []string{checkHandover},
			damage: func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				freeing(t, w, rec, a)
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, listener(a, 8080), listener(b, 443)))
				update(t, cloud, lb, listener(a, 8080), listener(b, 443))
			}},
		{name: "a write that frees a port a Service waits for hands it over",
			damage: func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				c := freeing(t, w, rec, a)
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, withListeners(lb.Spec, listener(a, 8080), listener(b, 443), listener(c, 80)))
				update(t, cloud, lb, listener(a, 8080), listener(b, 443), listener(c, 80))
			}},
		{name: "a port a Service freed handed over",
			damage: func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, b types.UID) {
				waiting(t, w, rec, false)
				w.updateService("a", func(svc *corev1.Service) { delete(svc.Annotations, annotationShare) })
				update(t, cloud, lb, listener(w.service("c").UID, 80), listener(b, 443))
			}},
		{name: "a Service's listener to another node port", want: []string{checkHandover},
			damage: func(_ *testing.T, w *world, _ *fake.Cloud, _ *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				w.updateService("a", func(svc *corev1.Service) { svc.Spec.Ports[0].NodePort = 31000 })
			}},
		{name: "a disagreeing Service is not served, by design",
			damage: func(t *testing.T, w *world, _ *fake.Cloud, rec *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				require.NoError(t, w.createService(service("c", namespaces[0], 8080)))
				rec.lastEnsure[w.service("c").UID] = fmt.Errorf("planted: %w", loadbalancer.ErrShareConflict)
			}},
		{name: "a share without a load balancer", want: []string{checkHandover},
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, _ *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				require.NoError(t, api.DeleteLoadBalancer(ctx, lb.ID))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, cloud, rec, lb, a, b := setup(t, tt.across)
			tt.damage(t, w, cloud, rec, lb, a, b)
			got := checks(append(slices.Clone(rec.violations), checkShares(w, cloud.Inventory(), rec)...))
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, slices.Sorted(slices.Values(tt.want)), got)
		})
	}
}
