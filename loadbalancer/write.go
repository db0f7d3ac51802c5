package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/targetgroups"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// update writes the differences between current and want, if any, for the Service with
// UID uid (adopting: the update that adopts current; see guard).
//
// When the cloud refuses them as a request it cannot build (ErrInvalidRequest: a setting
// its load balancers lack, such as TLS termination), the Service cannot have what it asks
// for until its owner changes it; its targets must follow the nodes all the same. So when
// want also changes the targets, update writes the targets alone, and returns the refusal;
// never to a load balancer that is not yet the Service's (a refused adoption), which
// would send traffic into the cluster from a load balancer no Service owns.
func (w *writer) update(ctx context.Context, logger klog.Logger, uid string, adopting bool, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	changes := w.cmp.diff(current.Spec, want)
	if changes.Empty() {
		return current, nil
	}
	lb, err := w.updateLB(ctx, current, uid, adopting, cloudapi.LoadBalancerUpdate{Spec: want, Changes: changes, Current: current})
	if err != nil {
		err = fmt.Errorf("updating load balancer %s: %w", current.ID, err)
		if changes.TargetGroup {
			w.groups.Due() // the group chosen may be named by no load balancer
			if errors.Is(err, cloudapi.ErrInvalidRequest) {
				w.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
			}
		}
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			if terr := w.updateTargetsOnly(ctx, logger, uid, current, want, changes); terr != nil {
				err = fmt.Errorf("%w; the targets were not written alone: %w", err, terr)
			}
		}
		return nil, err
	}
	if lb == nil {
		return nil, fmt.Errorf("updating load balancer %s: the cloud answered neither a load balancer nor an error: %w", current.ID, cloudapi.ErrTransient)
	}
	if old := current.Spec.TargetGroup; old != "" && old != lb.Spec.TargetGroup {
		w.groups.Drop(ctx, logger, current.ID, old)
	}
	logger.V(2).Info("Updated load balancer", "loadBalancer", lb.ID, "addTargets", len(changes.AddTargets), "removeTargets", len(changes.RemoveTargets),
		"addListeners", len(changes.AddListeners), "updateListeners", len(changes.UpdateListeners), "removeListeners", len(changes.RemoveListeners))
	return lb, nil
}

// updateTargetsOnly writes want's targets onto current, the load balancer of the Service
// with UID uid, after the cloud refused the whole of changes, when they change the
// targets and something else. A failed write is logged: the refusal is what the caller
// reports; a write guard refuses (current is not the Service's) is returned, for the
// caller to say why.
func (w *writer) updateTargetsOnly(ctx context.Context, logger klog.Logger, uid string, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, changes cloudapi.LoadBalancerChanges) error {
	only := cloudapi.LoadBalancerChanges{AddTargets: changes.AddTargets, RemoveTargets: changes.RemoveTargets, TargetGroup: changes.TargetGroup}
	others := changes
	others.AddTargets, others.RemoveTargets, others.TargetGroup = nil, nil, false
	if only.Empty() || others.Empty() {
		return nil // no target change, or nothing but: the refused request was this one
	}
	targetsOnly := current.Spec.Clone()
	targetsOnly.Targets = want.Targets
	targetsOnly.TargetGroup = want.TargetGroup
	if _, err := w.updateLB(ctx, current, uid, false, cloudapi.LoadBalancerUpdate{Spec: targetsOnly, Changes: only, Current: current}); err != nil {
		if errors.Is(err, errNotOwned) {
			return err
		}
		logger.Error(err, "Updating the targets alone, after the cloud refused the Service's other changes", "loadBalancer", current.ID)
		return nil
	}
	logger.Info("Updated the targets alone: the cloud refused the Service's other changes", "loadBalancer", current.ID,
		"addTargets", len(only.AddTargets), "removeTargets", len(only.RemoveTargets))
	return nil
}

// dropDuplicates deletes all but one of several load balancers of one Service, which only
// a backend that lost track of a create can have made. It keeps the one with ID prefer
// (the load balancer the Service's load-balancer-id annotation names), else the one whose
// address or hostname the Service's status publishes, else the first by ID.
func (w *writer) dropDuplicates(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, found []cloudapi.LoadBalancer, prefer string) ([]cloudapi.LoadBalancer, error) {
	kept, extras := plan.Duplicates(found, prefer, ingressAddresses(svc))
	if err := w.dropExtras(ctx, logger, owner, extras); err != nil {
		return nil, err
	}
	return kept, nil
}

// dropExtras deletes extras, duplicates of owner's load balancer.
func (w *writer) dropExtras(ctx context.Context, logger klog.Logger, owner string, extras []cloudapi.LoadBalancer) error {
	for _, extra := range extras {
		logger.Info("Deleting duplicate load balancer of the service", "loadBalancer", extra.ID)
		if err := w.deleteLB(ctx, &extra, owner); err != nil {
			return err
		}
		w.groups.Drop(ctx, logger, extra.ID, extra.Spec.TargetGroup)
	}
	return nil
}

// creation is a create the planner asks for: want, the load balancer of owner (the Service
// svc's, or its share's), with what the planner makes of a load balancer of owner that an
// earlier create made (again: perhaps another Service's of the share), and what to advise
// when the cloud refuses the name or an address and owner has none (taken).
type creation struct {
	svc   *corev1.Service
	owner string
	want  cloudapi.LoadBalancerSpec
	again func(found *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, error)
	taken func() string
}

// create creates the load balancer, or adopts the one a lost or conflicting create made.
func (w *writer) create(ctx context.Context, logger klog.Logger, c creation) (*cloudapi.LoadBalancer, error) {
	want := c.want
	lb, err := w.api.CreateLoadBalancer(ctx, want)
	if err == nil && lb == nil {
		err = paging.NoAnswer(cloudapi.OpCreateLoadBalancer, "") // made or not: look, as after a lost answer
	}
	if err == nil {
		logger.Info("Created load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
		return lb, nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			w.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	// The create may have happened (a lost answer), or another sync made it: look again.
	found, ferr := w.snap.find(ctx, c.svc, c.owner)
	if ferr != nil {
		return nil, fmt.Errorf("creating load balancer %q: %w; looking for it afterwards: %w", want.Name, err, ferr)
	}
	if len(found) == 0 {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating load balancer %q: %w; %s", want.Name, err, c.taken())
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	logger.Info("Adopting the load balancer of an earlier create", "loadBalancer", found[0].ID, "createErr", err)
	if want, err = c.again(&found[0]); err != nil {
		return nil, err
	}
	return w.update(ctx, logger, c.owner, false, &found[0], want)
}

// replace deletes the Service's load balancer current and creates one from want, then
// drops the target group current named when the new one names another.
func (w *writer) replace(ctx context.Context, logger klog.Logger, current *cloudapi.LoadBalancer, c creation) (*cloudapi.LoadBalancer, error) {
	w.brake.replaces(c.owner, true) // the create is the Service's request, also when it is retried
	if err := w.remove(ctx, logger, c.svc, c.owner, current, false); err != nil {
		return nil, err
	}
	created, err := w.create(ctx, logger, c)
	if err == nil {
		w.brake.replaces(c.owner, false)
	}
	if old := current.Spec.TargetGroup; old != "" && (err != nil || created.Spec.TargetGroup != old) {
		if err != nil {
			w.groups.Due()
		} else {
			w.groups.Drop(ctx, logger, current.ID, old)
		}
	}
	return created, err
}

// remove deletes the load balancer lb of owner (the Service's, or its share's), or
// releases it when keep is true.
func (w *writer) remove(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer, keep bool) error {
	if keep {
		return w.release(ctx, logger, svc, owner, lb)
	}
	if err := w.deleteLB(ctx, lb, owner); err != nil {
		if lb.Spec.TargetGroup != "" {
			w.groups.Due() // it may be gone all the same, and its group unused
		}
		return err
	}
	logger.Info("Deleted load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
	return nil
}

// release lets go of the Service's load balancer lb, read by owner tags just before: one
// update removes ccmkit's ownership tags and every target, and keeps everything else (the
// name, listeners, health check, requested addresses, other tags) and the addresses; a
// share's load balancer is renamed (keptName), so that the share's next one can take its
// name, the share's or the name annotation's. The
// targets go because they are this cluster's nodes, whose node ports another Service may
// get next: a kept load balancer must not send traffic into the cluster.
func (w *writer) release(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer) error {
	defer w.lockLB(lb.ID)()
	want := lb.Spec.Clone()
	for _, k := range append(ownershipTags, cloudapi.TagShareNodes, cloudapi.TagAdopted) {
		delete(want.Tags, k)
	}
	if isShare(owner) {
		want.Name = keptName(want.Name, lb.ID) // the share's next load balancer takes its name
	}
	want.Targets = nil
	want.TargetGroup = ""
	released, err := w.update(ctx, logger, owner, false, lb, want)
	if err != nil {
		return fmt.Errorf("releasing load balancer %s (keep-on-delete): %w", lb.ID, err)
	}
	logger.Info("Released load balancer: kept in the cloud without this cluster's ownership tags and targets", "loadBalancer", lb.ID, "addresses", released.Addresses)
	w.report.event(svc, corev1.EventTypeNormal, "KeptLoadBalancer", fmt.Sprintf("Kept load balancer %s (addresses [%s]) in the cloud without this Service's ownership tags and targets; a Service adopts it with annotation %s%s: %s",
		lb.ID, strings.Join(released.Addresses, ", "), w.prefix, AnnotationLoadBalancerID, lb.ID))
	return nil
}

// group makes want's targets go to the cluster's target group of the Nodes in its
// targets (those that want.sel selects; nil: every Node), when the LoadBalancer has target
// groups and want is grouped (internal/targetgroups' Store.Acquire, whose read is fresh
// after since): it sets the spec's TargetGroup to the group's ID and its Targets to none.
// Otherwise it leaves want as it is. The function it returns must be called once the load
// balancer that names the group is written, or the attempt given up.
func (w *writer) group(ctx context.Context, logger klog.Logger, want *wanted, since uint64) (func(), error) {
	if w.groups == nil || !want.grouped {
		return func() {}, nil
	}
	id, release, err := w.groups.Acquire(ctx, logger, targetgroups.Key(want.sel), want.spec.Targets, since)
	if err != nil {
		return nil, err
	}
	want.spec.TargetGroup, want.spec.Targets = id, nil
	return release, nil
}
