package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

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
func (l *LoadBalancer) guard(id string, tags map[string]string, uid string, adopting bool) error {
	switch {
	case id == "":
		return fmt.Errorf("a load balancer without an ID: %w", errNotOwned)
	case uid != "" && tags[cloudapi.TagCluster] == l.opts.ClusterID && ownerKey(tags) == uid:
		return nil
	case adopting && unowned(tags):
		return nil
	}
	return fmt.Errorf("load balancer %s does not carry tags %s: %w", id, tagsText(ownerTags(l.opts.ClusterID, uid)), errNotOwned)
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
func (l *LoadBalancer) updateLB(ctx context.Context, current *cloudapi.LoadBalancer, uid string, adopting bool, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if err := l.guard(current.ID, current.Spec.Tags, uid, adopting); err != nil {
		return nil, err
	}
	lb, err := l.api.UpdateLoadBalancer(ctx, current.ID, update)
	if err == nil && lb == nil {
		return nil, paging.NoAnswer(cloudapi.OpUpdateLoadBalancer, current.ID)
	}
	return lb, err
}

// deleteLB deletes lb, the load balancer as last read, of the Service with UID uid, when
// guard allows it; one that is already gone is fine.
func (l *LoadBalancer) deleteLB(ctx context.Context, lb *cloudapi.LoadBalancer, uid string) error {
	if err := l.guard(lb.ID, lb.Spec.Tags, uid, false); err != nil {
		return fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
	}
	if err := l.api.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
	}
	return nil
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
