package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// ErrTakeoverRefused is matched (errors.Is) by the error of EnsureLoadBalancer when a
// load balancer carries the Service's mark of the cloud's earlier cloud-controller-manager
// (Aliases.OwnerTag) but the Service cannot take it over: another cluster's or Service's
// ownership tags (then it matches ErrOwnedElsewhere too), addresses that adopting would
// change, or several load balancers so marked. ccmkit then creates none: a Service gets
// no second load balancer and no new address behind its operator's back.
var ErrTakeoverRefused = errors.New("the earlier cloud-controller-manager's load balancer cannot be taken over")

// ReasonTakeoverRefused is the reason of the Warning event, and of the condition
// ConditionLoadBalancerReady, on a Service whose takeover is refused (ErrTakeoverRefused).
const ReasonTakeoverRefused = "TakeoverRefused"

// adoption is how a Service comes to adopt a load balancer: named by its load-balancer-id
// annotation (key), or marked as its own by the earlier cloud-controller-manager (mark:
// the tag and the Service's UID), and what the messages about it say.
type adoption struct {
	id   string
	key  string                 // the annotation's key, for an adoption by ID
	mark string                 // "tag=uid", for a takeover
	lb   *cloudapi.LoadBalancer // the load balancer as listed, for a takeover; nil: read by id
}

// named says how the Service names the load balancer, after its ID: "named by
// annotation k", or "marked hcloud-ccm/service-uid=… by the earlier cloud-controller-manager".
func (a adoption) named() string {
	if a.mark != "" {
		return "marked " + a.mark + " by the earlier cloud-controller-manager"
	}
	return "named by annotation " + a.key
}

// instead says what a user does who wants the Service to have another load balancer.
func (a adoption) instead() string {
	if a.mark != "" {
		tag, _, _ := strings.Cut(a.mark, "=")
		return "remove the tag " + tag + " from it (or delete it) to give the Service a new load balancer; ccmkit creates none while one carries the Service's mark"
	}
	return "remove the annotation to get a new load balancer"
}

// refused wraps err, a refusal of the adoption, for a takeover: it then matches
// ErrTakeoverRefused too.
func (a adoption) refused(err error) error {
	if a.mark == "" || err == nil || errors.Is(err, ErrTakeoverRefused) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTakeoverRefused, err)
}

// marked returns the load balancer the earlier cloud-controller-manager marked as the
// Service's, with the tag whose value is the Service's UID uid: one paged list filtered by
// the tag (the only call). Load balancers the cloud is deleting are left out. It returns
// nil when there is none, and an error matching ErrTakeoverRefused when there are several:
// the Service then gets none of them and no new one.
func (s *snapshot) marked(ctx context.Context, tag, uid string) (*cloudapi.LoadBalancer, error) {
	var found []cloudapi.LoadBalancer
	_, err := paging.LoadBalancers(ctx, s.api, map[string]string{tag: uid}, s.pageSize, func(lb *cloudapi.LoadBalancer) bool {
		if lb.Spec.Tags[tag] == uid && lb.Status != cloudapi.LoadBalancerDeleting { // a backend may ignore the filter
			found = append(found, *lb)
		}
		return true
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("listing the load balancers the earlier cloud-controller-manager marked %s=%s: %w; ccmkit creates none before it knows", tag, uid, err)
	case len(found) == 0:
		return nil, nil
	case len(found) > 1:
		ids := make([]string, len(found))
		for i := range found {
			ids[i] = found[i].ID
		}
		return nil, fmt.Errorf("%w: load balancers %s all carry the earlier cloud-controller-manager's mark %s=%s: ccmkit takes over none of them and creates none; delete the ones not to keep, or remove the tag %s from them, leaving one",
			ErrTakeoverRefused, strings.Join(ids, ", "), tag, uid, tag)
	}
	return &found[0], nil
}
