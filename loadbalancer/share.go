package loadbalancer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
)

// A load balancer several Services share (AnnotationShare) belongs to the share, not to
// one Service: it carries cloudapi.TagShare instead of cloudapi.TagService, and each of
// its listeners belongs to the Service whose UID begins its name (shareListenerName). The
// calls about a Service of a share run as the share (its owner, see owner): under one
// lock, with one entry in the snapshot, so that a node sync writes a shared load
// balancer once. What is not a listener is the share's and must agree between its
// Services (see join); the last Service out deletes the load balancer (see leave).

// shareOwnerPrefix begins the owner of a share's load balancer; a Service's own load
// balancer's owner is the Service's UID, which never begins with it.
const shareOwnerPrefix = "share:"

// ErrShareConflict is matched (errors.Is) by the error of a sync of a Service of a share
// that cannot join the share's load balancer: what it asks for beside its listeners
// (addresses, targets, health check, source ranges, settings, ...) differs from what
// another Service of the share asks for. Nothing of the Service is added then, and
// nothing of the others changes; a Warning event ShareConflict names the other Service.
var ErrShareConflict = errors.New("the Service disagrees with another Service of its share")

// ErrPortsTaken is matched (errors.Is) by the error of a sync of a Service of a share
// whose every port (protocol and number) another Service of the share has on the share's
// load balancer: nothing of the load balancer serves it. The error names the holders. The
// Service gets the ports in the write that frees them (see handOver); its condition
// ConditionLoadBalancerReady says ReasonPortsTaken until then.
var ErrPortsTaken = errors.New("another Service of the share has every port the Service asks for")

// reasonShareConflict is the reason of the Warning event about a Service of a share whose
// listeners, or some of them, could not be added to the share's load balancer.
const reasonShareConflict = "ShareConflict"

// isShare reports whether owner (see LoadBalancer.owner) is a share.
func isShare(owner string) bool { return strings.HasPrefix(owner, shareOwnerPrefix) }

// ownerKey is whom a load balancer with tags belongs to inside the cluster: the share of
// cloudapi.TagShare (shareOwnerPrefix and the share's key), else the Service UID of
// cloudapi.TagService; empty for neither.
func ownerKey(tags map[string]string) string {
	if share := tags[cloudapi.TagShare]; share != "" {
		return shareOwnerPrefix + share
	}
	return tags[cloudapi.TagService]
}

// ownerTags are the tags that make a load balancer owner's (see ownerKey): the lookup
// filter.
func ownerTags(clusterID, owner string) map[string]string {
	if share, ok := strings.CutPrefix(owner, shareOwnerPrefix); ok {
		return map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagShare: share}
	}
	return map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagService: owner}
}

// owner returns whom the Service's load balancer belongs to: its share when its share
// annotation names one (see ShareKey), else the Service itself (its UID). A malformed
// share annotation is an error: which load balancer is the Service's is then unclear, and
// nothing is read or written for it.
func (l *LoadBalancer) owner(svc *corev1.Service) (string, error) {
	uid, err := serviceUID(svc)
	if err != nil {
		return "", err
	}
	share, err := l.ShareKey(svc)
	if err != nil {
		return "", fmt.Errorf("%w; nothing is read or written for it until it says which share it is in", err)
	}
	if share == "" {
		return uid, nil
	}
	return shareOwnerPrefix + share, nil
}

// shareKey is the value of cloudapi.TagShare for the share name of a Service in
// namespace: "namespace/name", or "*/name" when Options.ShareAcrossNamespaces makes a
// share's name the same in every namespace.
func (l *LoadBalancer) shareKey(namespace, name string) string {
	if l.opts.ShareAcrossNamespaces {
		namespace = "*"
	}
	return namespace + "/" + name
}

// shareScope is the namespace whose Services may be in the share owner: the namespace of
// its key, or every namespace (metav1.NamespaceAll) for a key of
// Options.ShareAcrossNamespaces ("*/name") or one that names no namespace, so that a
// share's members are never looked for in too few places.
func shareScope(owner string) string {
	ns, _, ok := strings.Cut(strings.TrimPrefix(owner, shareOwnerPrefix), "/")
	if !ok || ns == "*" {
		return metav1.NamespaceAll
	}
	return ns
}

// shareName is the cloud name of a share's load balancer without a name annotation: the
// cluster ID (shortened) and a hash of the share's key, unique, stable and within 63
// characters.
func shareName(clusterID, share string) string {
	sum := sha256.Sum256([]byte(share))
	return namePrefix(clusterID) + "-s" + hex.EncodeToString(sum[:16])
}

// shareListenerName is the name of the listener name of the Service with UID uid on a
// share's load balancer: the UID, ':' and the listener's name.
func shareListenerName(uid, name string) string { return uid + ":" + name }

// listenerOwner is the UID of the Service a listener of a share's load balancer belongs
// to, read from its name; empty when the name names none (a listener somebody added by
// hand, or one a cloud renamed: nobody's, and gone with the next write).
func listenerOwner(name string) string {
	uid, _, ok := strings.Cut(name, ":")
	if !ok {
		return ""
	}
	return uid
}

// member is what a Service of a share last asked for: beside its listeners (part, see
// sharedPart), and its own listeners; whether it agreed with the share then (see join),
// and its namespace/name, for messages.
type member struct {
	name      string
	part      cloudapi.LoadBalancerSpec
	listeners []cloudapi.Listener
	agreed    bool
}

// sharedPart is spec without what is not the share's to agree on: listeners (each
// Service's own), tags but cloudapi.TagShareNodes, and targets (the Nodes of
// TagShareNodes, which change with the node set).
func sharedPart(spec cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	p := spec.Clone()
	p.Listeners, p.Tags, p.Targets, p.TargetGroup = nil, nil, nil, ""
	if nodes, ok := spec.Tags[cloudapi.TagShareNodes]; ok {
		p.Tags = map[string]string{cloudapi.TagShareNodes: nodes}
	}
	return p
}

// split returns the listeners of lb that belong to the Service with UID uid, and those of
// other Services; listeners of no Service (see listenerOwner) are in neither.
func split(lb *cloudapi.LoadBalancer, uid string) (mine, others []cloudapi.Listener) {
	if lb == nil {
		return nil, nil
	}
	for _, ls := range lb.Spec.Listeners {
		switch listenerOwner(ls.Name) {
		case "":
		case uid:
			mine = append(mine, ls)
		default:
			others = append(others, ls)
		}
	}
	return mine, others
}

// join is what the Service, of the share owner, makes of the share's load balancer
// current (nil: none yet), given want, the load balancer the Service asks for (its
// listeners, those want has of the Service's, and cloudapi.TagShareNodes, see
// shareNodes): current with the Service's listeners replaced by want's, carry's listeners
// of other Services added (those of a duplicate of current about to be deleted), and
// everything that is not a listener as want asks; listeners of no Service are dropped. It
// records what the Service asks for among the share's members first.
//
// A Service disagrees with the share when a Service of the share that this LoadBalancer
// has synced asks for another part (or node selector), or when current has listeners of
// a Service not synced since the start and current's part is not want's: then join
// returns an error matching ErrShareConflict (and records a Warning event naming the
// other, once per change), and nothing is to be written. So a share changes what it
// shares once its last Service asks for it, and a Service that asks alone is refused.
// A port (protocol and number) another Service's listener has is not added: its
// listener is left out, with a Warning event naming the other Service; the others are
// added.
func (l *LoadBalancer) join(logger klog.Logger, svc *corev1.Service, owner string, want cloudapi.LoadBalancerSpec, current *cloudapi.LoadBalancer, carry ...cloudapi.Listener) (cloudapi.LoadBalancerSpec, error) {
	uid := string(svc.UID)
	mine, _ := split(&cloudapi.LoadBalancer{Spec: want}, uid)
	me := member{name: svc.Namespace + "/" + svc.Name, part: sharedPart(want), listeners: mine}
	known := l.otherMembers(owner, uid)
	defer func() { l.register(owner, uid, me) }()

	_, others := split(current, uid)
	for _, ls := range carry {
		if o := listenerOwner(ls.Name); o != "" && o != uid && !slices.ContainsFunc(others, func(x cloudapi.Listener) bool { return x.Key() == ls.Key() }) {
			others = append(others, ls)
		}
	}
	if other := l.disagreeing(me, known, others, current); other != "" {
		err := fmt.Errorf("service %s/%s cannot join the load balancer of its share %s: it asks for other addresses, targets, health check, source ranges or settings than %s; every Service of a share must ask for the same beside its ports: %w",
			svc.Namespace, svc.Name, strings.TrimPrefix(owner, shareOwnerPrefix), other, ErrShareConflict)
		if l.changed(svc, reasonShareConflict, err.Error()) {
			logger.Info("Not adding the Service to its share's load balancer: it disagrees with another Service of the share", "other", other)
			l.event(svc, corev1.EventTypeWarning, reasonShareConflict, err.Error())
		}
		return cloudapi.LoadBalancerSpec{}, err
	}
	me.agreed = true

	out := want
	out.Listeners = slices.Clone(others)
	var taken []string
	for _, ls := range mine {
		i := slices.IndexFunc(others, func(o cloudapi.Listener) bool { return o.Key() == ls.Key() })
		if i >= 0 {
			taken = append(taken, fmt.Sprintf("%d/%s (%s)", ls.Port, ls.Protocol, l.memberName(known, listenerOwner(others[i].Name))))
			continue
		}
		out.Listeners = append(out.Listeners, ls)
	}
	// The ports the Service freed (it changed them) go to the members waiting for them.
	out.Listeners = append(out.Listeners, handOver(known, out.Listeners)...)
	sortListeners(out.Listeners)
	msg := ""
	if len(taken) > 0 {
		msg = fmt.Sprintf("Not adding port(s) %s to the load balancer of share %s: another Service of the share has them; choose other ports", strings.Join(taken, ", "), strings.TrimPrefix(owner, shareOwnerPrefix))
	}
	if l.changed(svc, reasonShareConflict, msg) {
		logger.Info("Not adding ports another Service of the share has", "ports", taken)
		l.event(svc, corev1.EventTypeWarning, reasonShareConflict, msg)
	}
	return out, nil
}

// disagreeing returns who the Service me disagrees with (see join), empty for none. A
// Service that asks for what current (the share's load balancer) has agrees: the share
// keeps working as it is. Otherwise it disagrees with a synced member (known) that asks
// for another part, and, when others (the other Services' listeners on current) belong
// to a Service not synced since the start, with that Service, which asked for current's.
func (l *LoadBalancer) disagreeing(me member, known map[string]member, others []cloudapi.Listener, current *cloudapi.LoadBalancer) string {
	if len(others) == 0 || l.diff(sharedPart(current.Spec), me.part).Empty() {
		return ""
	}
	names := make([]string, 0, len(known))
	for uid := range known {
		names = append(names, uid)
	}
	slices.Sort(names)
	for _, uid := range names {
		if m := known[uid]; !l.diff(m.part, me.part).Empty() {
			return "Service " + m.name
		}
	}
	for _, ls := range others {
		uid := listenerOwner(ls.Name)
		if _, ok := known[uid]; !ok {
			return fmt.Sprintf("load balancer %s as Service with UID %s has it", current.ID, uid)
		}
	}
	return ""
}

// memberName names the Service with UID uid for a message: its namespace/name when it is
// a synced member (known), else its UID.
func (l *LoadBalancer) memberName(known map[string]member, uid string) string {
	if m, ok := known[uid]; ok {
		return "Service " + m.name
	}
	return "Service with UID " + uid
}

// register records me as what the Service with UID uid asks for in the share owner, and
// forgets it among the members of every other share (a Service is in one share at a
// time).
func (l *LoadBalancer) register(owner, uid string, me member) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetMember(uid, owner)
	if l.members[owner] == nil {
		l.members[owner] = map[string]member{}
	}
	l.members[owner][uid] = me
}

// otherMembers returns the members of the share owner but the Service with UID uid.
func (l *LoadBalancer) otherMembers(owner, uid string) map[string]member {
	l.mu.Lock()
	defer l.mu.Unlock()
	known := make(map[string]member, len(l.members[owner]))
	for k, m := range l.members[owner] {
		if k != uid {
			known[k] = m
		}
	}
	return known
}

// handOver returns the listeners that members of a share (known: all but the Service
// whose sync this is) asked for and did not get because another Service had their port,
// and that are free in stay (the listeners the share's load balancer keeps): a Service
// that leaves a share, or changes its ports, hands the ports it frees to those that asked
// for them, in the same write. Only members that agreed with the share at their last
// sync get them, each port once, by UID order.
func handOver(known map[string]member, stay []cloudapi.Listener) []cloudapi.Listener {
	taken := map[cloudapi.ListenerKey]bool{}
	for _, ls := range stay {
		taken[ls.Key()] = true
	}
	var out []cloudapi.Listener
	for _, k := range slices.Sorted(maps.Keys(known)) {
		if m := known[k]; m.agreed {
			for _, ls := range m.listeners {
				if !taken[ls.Key()] {
					taken[ls.Key()] = true
					out = append(out, ls.Clone())
				}
			}
		}
	}
	return out
}

// unserved returns an error matching ErrPortsTaken when the Service with svc's UID is a
// member of the share owner that agreed with it and asked for listeners, and lb (the
// share's load balancer as written) has none of them as the Service's: another Service
// holds every port it asks for. The error names the holders. It is nil for a Service
// that is no member of a share.
func (l *LoadBalancer) unserved(svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer) error {
	if !isShare(owner) {
		return nil
	}
	uid := string(svc.UID)
	l.mu.Lock()
	me, ok := l.members[owner][uid]
	l.mu.Unlock()
	if !ok || !me.agreed || len(me.listeners) == 0 {
		return nil
	}
	known := l.otherMembers(owner, uid)
	var holders []string
	for _, want := range me.listeners {
		i := slices.IndexFunc(lb.Spec.Listeners, func(ls cloudapi.Listener) bool { return ls.Key() == want.Key() })
		switch {
		case i < 0, listenerOwner(lb.Spec.Listeners[i].Name) == uid:
			return nil // served, or not written yet: not a port another Service holds
		default:
			holders = append(holders, fmt.Sprintf("%d/%s (%s)", want.Port, want.Protocol, l.memberName(known, listenerOwner(lb.Spec.Listeners[i].Name))))
		}
	}
	return fmt.Errorf("service %s/%s is not served by the load balancer %s of its share %s: its port(s) %s are another Service's; it gets each in the write that frees it, or choose other ports: %w",
		svc.Namespace, svc.Name, lb.ID, strings.TrimPrefix(owner, shareOwnerPrefix), strings.Join(holders, ", "), ErrPortsTaken)
}

// sortListeners sorts listeners by protocol, then port: the order of every spec ccmkit
// writes.
func sortListeners(ls []cloudapi.Listener) {
	slices.SortFunc(ls, func(x, y cloudapi.Listener) int {
		if x.Protocol != y.Protocol {
			return strings.Compare(string(x.Protocol), string(y.Protocol))
		}
		return int(x.Port) - int(y.Port)
	})
}

// leaveMember forgets the Service with UID uid among the members of every share but
// keep (empty: of every share).
func (l *LoadBalancer) leaveMember(uid, keep string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetMember(uid, keep)
}

// leftShare forgets the Service with UID uid among the members of the share owner only:
// it left that share, and may be a member of another already.
func (l *LoadBalancer) leftShare(owner, uid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ms := l.members[owner]; ms != nil {
		delete(ms, uid)
		if len(ms) == 0 {
			delete(l.members, owner)
		}
	}
}

// forgetMember is leaveMember with l.mu held.
func (l *LoadBalancer) forgetMember(uid, keep string) {
	for owner, ms := range l.members {
		if owner == keep {
			continue
		}
		delete(ms, uid)
		if len(ms) == 0 {
			delete(l.members, owner)
		}
	}
}

// shareNodes records in want which Nodes its targets are (cloudapi.TagShareNodes, the
// key of the Nodes a's node selector selects), which the Services of a share must agree
// on.
func shareNodes(want *cloudapi.LoadBalancerSpec, a parsedAnnotations) {
	want.Tags[cloudapi.TagShareNodes] = targetgroups.Key(a.nodeSelector)
}

// othersInShare reports whether a Service of the share owner other than svc exists:
// with Options.Services, one of type LoadBalancer that this LoadBalancer serves
// (Options.Serves), not being deleted, whose share annotation names the share (the API server's word: a Service not synced yet counts);
// without it, a member this LoadBalancer synced. The Services are looked for in the
// share's own scope (shareScope), whoever svc is: a sync of a Service of another
// namespace or share may revisit the share's load balancer. An error of the API server
// is returned: the caller deletes nothing then.
func (l *LoadBalancer) othersInShare(ctx context.Context, svc *corev1.Service, owner string) (bool, error) {
	var services []corev1.Service
	asked := false
	if l.opts.Services != nil {
		if api := l.opts.Services.Services(shareScope(owner)); api != nil {
			list, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, fmt.Errorf("listing the Services that may share load balancer of share %s: %w", strings.TrimPrefix(owner, shareOwnerPrefix), err)
			}
			services, asked = list.Items, true
		}
	}
	if !asked {
		l.mu.Lock()
		defer l.mu.Unlock()
		for uid := range l.members[owner] {
			if uid != string(svc.UID) {
				return true, nil
			}
		}
		return false, nil
	}
	for i := range services {
		o := &services[i]
		if o.UID == svc.UID || o.DeletionTimestamp != nil || o.Spec.Type != corev1.ServiceTypeLoadBalancer || (l.opts.Serves != nil && !l.opts.Serves(o)) {
			continue
		}
		if theirs, err := l.owner(o); err == nil && theirs == owner {
			return true, nil
		}
	}
	return false, nil
}

// leaveShare removes the Service's listeners (and those of no Service) from lb, its
// share's load balancer as read just before, and returns lb as the cloud then answered;
// nil when the Service is the last of its share (no other Service's listener on lb, and
// no other Service of the share exists: othersInShare), for the caller to delete or
// release lb.
func (l *LoadBalancer) leaveShare(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer) (*cloudapi.LoadBalancer, error) {
	mine, others := split(lb, string(svc.UID))
	if len(others) == 0 {
		stay, err := l.othersInShare(ctx, svc, owner)
		if err != nil {
			return nil, err
		}
		if !stay {
			return nil, nil
		}
	}
	if len(mine)+len(others) == len(lb.Spec.Listeners) && len(mine) == 0 {
		return lb, nil
	}
	want := lb.Spec.Clone()
	want.Listeners = append(slices.Clone(others), handOver(l.otherMembers(owner, string(svc.UID)), others)...)
	sortListeners(want.Listeners)
	if len(want.Listeners) == 0 {
		// No listener left to serve: no targets either (a cloud may refuse targets whose
		// instances are gone by now); the next Service of the share sets them.
		want.Targets, want.TargetGroup = nil, ""
	}
	left, err := l.update(ctx, logger, owner, false, lb, want)
	if err != nil {
		return nil, err
	}
	logger.Info("Removed the Service's listeners from its share's load balancer", "loadBalancer", lb.ID, "listeners", len(mine), "othersListeners", len(others))
	return left, nil
}

// leaveOthers removes the Service's listeners from the load balancers of the shares it is
// no longer in, and deletes (or releases) its own load balancer once it is in a share,
// as EnsureLoadBalancerDeleted would (deleteFor): owner is whom its load balancer
// belongs to now (empty when the Service wants none). It finds them in the snapshot
// (see snapshot.elsewhere), refreshed first when older than Options.MaxAge, and writes
// each from a fresh read; an owner the snapshot is unsure of (a call about it failed,
// perhaps the leave itself) is read too. When the Service wants none (deleting), a
// snapshot that cannot be refreshed is an error: nothing of the Service may stay behind
// when its deletion succeeds.
func (l *LoadBalancer) leaveOthers(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, deleting bool) error {
	l.leaveMember(string(svc.UID), owner)
	others, err := l.snap.elsewhere(ctx, string(svc.UID), owner)
	if err != nil {
		if deleting {
			return fmt.Errorf("service %s/%s: finding the shared load balancers it may have listeners on: %w", svc.Namespace, svc.Name, err)
		}
		logger.V(2).Info("Not looking for the load balancers the Service left: the snapshot of the cluster's load balancers could not be refreshed; the next sync looks", "err", err)
		return nil
	}
	for _, other := range others {
		logger.Info("Leaving the load balancer the Service no longer belongs to", "owner", other, "now", owner)
		if err := l.deleteFor(ctx, logger, svc, other, false); err != nil {
			return fmt.Errorf("service %s/%s: leaving the load balancer it had before (owner %s): %w", svc.Namespace, svc.Name, other, err)
		}
	}
	return nil
}

// ShareKey returns the share the Service's load balancer belongs to, as the value of
// cloudapi.TagShare on it: the key of the share its share annotation names (read as this
// LoadBalancer reads it: its annotation prefix, aliases and
// Options.ShareAcrossNamespaces), or "" when the Service names none. A malformed share
// annotation is an error: which share the Service is in is then unknown. It reads svc's
// annotations only; the sweeper tells by it whether a Service of a share exists.
func (l *LoadBalancer) ShareKey(svc *corev1.Service) (string, error) {
	a, errs := l.only(svc, AnnotationShare)
	if len(errs) > 0 {
		return "", fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, errs[0])
	}
	if a.share == "" {
		return "", nil
	}
	return l.shareKey(svc.Namespace, a.share), nil
}
