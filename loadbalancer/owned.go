package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/keyedlock"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
)

// writer is the one code that writes to the cloud's load balancers and target groups:
// every write passes guard, the ownership rule, first. It writes what the caller's plan
// asks for (a spec from the planner, a spec package plan decided), no more, and tells
// the target-group store of every group a write let go. reconcile records its answers in
// the snapshot.
type writer struct {
	api       cloudapi.LoadBalancerAPI
	clusterID string
	prefix    string // the annotation prefix, for the event of a release
	cmp       comparer
	snap      *snapshot // find: the look after a create whose answer is unknown
	// groups are the cluster's target groups; nil without Options.TargetGroups.
	groups *targetgroups.Store
	brake  *creationBrake
	report *reporter
	// loadBalancers serializes adoption and release of one load balancer (by cloud ID), inside
	// its Service's lock, so that two Services never adopt one load balancer at once and
	// none adopts one whose release is still being written (or retried).
	loadBalancers keyedlock.Locks[string]
}

// lockLB serializes the adoption and release of the load balancer with cloud ID id.
func (w *writer) lockLB(id string) (unlock func()) { return w.loadBalancers.Lock(id) }

// errNotOwned is matched by the error of a write that guard refused: to a load balancer
// that does not carry this cluster's ownership as last read.
var errNotOwned = errors.New("not this cluster's to write")

// guard is the one rule every write of a LoadBalancer to the cloud's load balancers
// passes (updateLB, deleteLB), given the load balancer's tags as last read: it must carry
// cloudapi.TagCluster with the cluster's ID and the owner the write is for (uid: the
// Service's UID in cloudapi.TagService, or its share in cloudapi.TagShare; see ownerKey).
// The one exception is the update that adopts a load
// balancer (adopting): one that carries none of ccmkit's ownership tags. Anything else is
// refused before any call with an error matching errNotOwned, so that nothing, targets
// included, is written to what the cluster does not own. Target groups pass the same
// kind of rule in internal/targetgroups.
func (w *writer) guard(id string, tags map[string]string, uid string, adopting bool) error {
	switch {
	case id == "":
		return fmt.Errorf("a load balancer without an ID: %w", errNotOwned)
	case uid != "" && tags[cloudapi.TagCluster] == w.clusterID && ownerKey(tags) == uid:
		return nil
	case adopting && unowned(tags):
		return nil
	}
	return fmt.Errorf("load balancer %s does not carry tags %s: %w", id, tagsText(ownerTags(w.clusterID, uid)), errNotOwned)
}

// unowned reports whether tags carry none of ccmkit's ownership tags: a load balancer a
// Service may adopt, the one kind ccmkit writes to without being its owner.
func unowned(tags map[string]string) bool {
	for _, k := range ownershipTags {
		if _, ok := tags[k]; ok {
			return false
		}
	}
	return true
}

// updateLB updates current, the load balancer as last read, for the Service with UID uid,
// when guard allows it (adopting: the update that adopts it).
func (w *writer) updateLB(ctx context.Context, current *cloudapi.LoadBalancer, uid string, adopting bool, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if err := w.guard(current.ID, current.Spec.Tags, uid, adopting); err != nil {
		return nil, err
	}
	lb, err := w.api.UpdateLoadBalancer(ctx, current.ID, update)
	if err == nil && lb == nil {
		return nil, paging.NoAnswer(cloudapi.OpUpdateLoadBalancer, current.ID)
	}
	return lb, err
}

// deleteLB deletes lb, the load balancer as last read, of the Service with UID uid, when
// guard allows it; one that is already gone is fine.
func (w *writer) deleteLB(ctx context.Context, lb *cloudapi.LoadBalancer, uid string) error {
	if err := w.guard(lb.ID, lb.Spec.Tags, uid, false); err != nil {
		return fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
	}
	if err := w.api.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
	}
	return nil
}

// adoptable reports whether the Service may adopt lb, named for adoption as how says:
// when it carries none of ccmkit's ownership tags (owned false), or already the Service's
// own (owned true: a list that missed it). Any other owner, even one tag of one, is
// ErrOwnedElsewhere; the error names no other cluster or Service, since the Service's
// events are its users'.
func (w *writer) adoptable(owner string, lb *cloudapi.LoadBalancer, how adoption) (owned bool, err error) {
	cluster, hasCluster := lb.Spec.Tags[cloudapi.TagCluster]
	names := fmt.Sprintf("annotation %s names load balancer %s", how.key, lb.ID)
	other, otherService := "name a load balancer without ownership tags, or remove the annotation", "name another, or remove the annotation"
	if how.mark != "" {
		names = fmt.Sprintf("the earlier cloud-controller-manager's mark %s is on load balancer %s", how.mark, lb.ID)
		other, otherService = how.instead(), how.instead()
	}
	switch {
	case lb.Status == cloudapi.LoadBalancerDeleting:
		return false, fmt.Errorf("%s, which the cloud is deleting: name another, or %s", names, how.instead())
	case unowned(lb.Spec.Tags):
		return false, nil
	case cluster == w.clusterID && ownerKey(lb.Spec.Tags) == owner:
		return true, nil
	case hasCluster && cluster != w.clusterID:
		return false, fmt.Errorf("%s, which belongs to another cluster (tag %s): %w; ccmkit changes nothing that is not this cluster's: %s",
			names, cloudapi.TagCluster, ErrOwnedElsewhere, other)
	default:
		return false, fmt.Errorf("%s, which belongs to another Service or share (tag %s or %s): %w; it is adopted only once it is let go (deleted with keep-on-delete): %s",
			names, cloudapi.TagService, cloudapi.TagShare, ErrOwnedElsewhere, otherService)
	}
}

// ownershipTags are the tags of ccmkit's that make a load balancer somebody's: one that
// carries any of them is never adopted, and a release removes them all.
var ownershipTags = []string{cloudapi.TagCluster, cloudapi.TagService, cloudapi.TagServiceName, cloudapi.TagShare}

// tagsText is tags as "k=v, k=v", sorted by key, for messages.
func tagsText(tags map[string]string) string {
	out := make([]string, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, k+"="+tags[k])
	}
	return strings.Join(out, ", ")
}
