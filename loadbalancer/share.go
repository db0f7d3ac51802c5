package loadbalancer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// A load balancer several Services share (AnnotationShare) belongs to the share, not to
// one Service: it carries cloudapi.TagShare instead of cloudapi.TagService, and each of
// its listeners belongs to the Service whose UID begins its name (shareListenerName). The
// calls about a Service of a share run as the share (its owner, see owner): under one
// lock, with one entry in the snapshot, so that a node sync writes a shared load
// balancer once. What is not a listener is the share's and must agree between its
// Services (see planner.join); the last Service out deletes the load balancer (see leaveShare). The rules
// are package plan's; this file reads, writes and reports.

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
// Service gets the ports in the write that frees them (plan.HandOver); its condition
// ConditionLoadBalancerReady says ReasonPortsTaken until then.
var ErrPortsTaken = errors.New("another Service of the share has every port the Service asks for")

// reasonShareConflict is the reason of the Warning event about a Service of a share whose
// listeners, or some of them, could not be added to the share's load balancer.
const reasonShareConflict = "ShareConflict"

// isShare reports whether owner (see intents.owner) is a share.
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

// shareBook is what this process knows of the shares' members: what each Service of a
// share asked for at its last sync (plan.Member), by share owner and UID. A Service is a
// member of one share at a time. It has its own lock.
type shareBook struct {
	mu      sync.Mutex
	members map[string]map[string]plan.Member
}

// others returns the members of the share owner but the Service with UID uid.
func (b *shareBook) others(owner, uid string) map[string]plan.Member {
	b.mu.Lock()
	defer b.mu.Unlock()
	known := make(map[string]plan.Member, len(b.members[owner]))
	for k, m := range b.members[owner] {
		if k != uid {
			known[k] = m
		}
	}
	return known
}

// member returns what the Service with UID uid asked for as a member of the share owner.
func (b *shareBook) member(owner, uid string) (plan.Member, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.members[owner][uid]
	return m, ok
}

// join records me as what the Service with UID uid asks for in the share owner, and
// forgets it in every other share.
func (b *shareBook) join(owner, uid string, me plan.Member) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forget(uid, owner)
	if b.members[owner] == nil {
		b.members[owner] = map[string]plan.Member{}
	}
	b.members[owner][uid] = me
}

// leave forgets the Service with UID uid in the share owner only: it left that share,
// and may be a member of another already.
func (b *shareBook) leave(owner, uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ms := b.members[owner]; ms != nil {
		delete(ms, uid)
		if len(ms) == 0 {
			delete(b.members, owner)
		}
	}
}

// leaveAllBut forgets the Service with UID uid in every share but keep (empty: in
// every share).
func (b *shareBook) leaveAllBut(uid, keep string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forget(uid, keep)
}

// forget is leaveAllBut with b.mu held.
func (b *shareBook) forget(uid, keep string) {
	for owner, ms := range b.members {
		if owner == keep {
			continue
		}
		delete(ms, uid)
		if len(ms) == 0 {
			delete(b.members, owner)
		}
	}
}

// shares returns how many shares have members, for tests of what is remembered.
func (b *shareBook) shares() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.members)
}

// shareNodes records in want which Nodes its targets are (cloudapi.TagShareNodes, the
// key of the Nodes a's node selector selects), which the Services of a share must agree
// on.
func shareNodes(want *cloudapi.LoadBalancerSpec, a parsedAnnotations) {
	want.Tags[cloudapi.TagShareNodes] = targetgroups.Key(a.nodeSelector)
}

// leaveShare removes the Service's listeners (and those of no Service) from lb, its
// share's load balancer as read just before, handing the ports it frees to the members
// waiting for them, and returns lb as the cloud then answered; nil when the Service is
// the last of its share, for the caller to delete or release lb. plan.Leave decides; the
// Services of the share are asked for (othersInShare) only when no other Service has a
// listener on lb.
func (l *LoadBalancer) leaveShare(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer) (*cloudapi.LoadBalancer, error) {
	uid := string(svc.UID)
	exist := true
	if plan.NeedsMembers(*lb, uid) {
		var err error
		if exist, err = l.intents.othersInShare(ctx, svc, owner, &l.shares); err != nil {
			return nil, err
		}
	}
	left := plan.Leave(uid, *lb, l.shares.others(owner, uid), exist, l.w.cmp.same)
	switch left.Op {
	case plan.Last:
		return nil, nil
	case plan.Stay:
		return lb, nil
	}
	written, err := l.w.update(ctx, logger, owner, false, lb, left.Spec)
	if err != nil {
		return nil, err
	}
	logger.Info("Removed the Service's listeners from its share's load balancer", "loadBalancer", lb.ID, "listeners", left.Mine, "othersListeners", left.Others)
	return written, nil
}

// leaveOthers removes the Service's listeners from the load balancers of the shares it is
// no longer in, and deletes (or releases) its own load balancer once it is in a share,
// as EnsureLoadBalancerDeleted would (deleteFor): owner is whom its load balancer
// belongs to now, current its load balancer as written (nil when the Service wants none). It finds them in the snapshot
// (see snapshot.elsewhere), refreshed first when older than Options.MaxAge, and writes
// each from a fresh read; an owner the snapshot is unsure of (a call about it failed,
// perhaps the leave itself) is read too. A snapshot that has never been listed is an
// error when the Service wants none (nothing of it may stay behind when its deletion
// succeeds) or has moved (its sync is retried until it has left the old one).
func (l *LoadBalancer) leaveOthers(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, current *cloudapi.LoadBalancer) error {
	l.shares.leaveAllBut(string(svc.UID), owner)
	others, err := l.snap.elsewhere(ctx, string(svc.UID), owner)
	if err != nil {
		// No list of the cluster's load balancers has completed since the start. A
		// Service being deleted, or one whose status publishes an address its load
		// balancer has not (it moved from another), fails its sync, so that the service
		// controller retries it until it has left what it left (a converged Service is
		// not synced again otherwise); any other is logged, and the next sync looks.
		if current == nil || !publishes(svc, current) {
			return fmt.Errorf("service %s/%s: finding the load balancers it may have left: %w", svc.Namespace, svc.Name, err)
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
func (l *LoadBalancer) ShareKey(svc *corev1.Service) (string, error) { return l.intents.shareOf(svc) }

// publishes reports whether every address and hostname the Service's status publishes
// is lb's: false when the status names one of another load balancer (the Service moved
// from it); true for a status that names none.
func publishes(svc *corev1.Service, lb *cloudapi.LoadBalancer) bool {
	return !slices.ContainsFunc(ingressAddresses(svc), func(a string) bool { return !plan.Reaches(*lb, a) })
}
