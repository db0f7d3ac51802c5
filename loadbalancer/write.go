package loadbalancer

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
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
func (l *LoadBalancer) update(ctx context.Context, logger klog.Logger, uid string, adopting bool, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	changes := l.diff(current.Spec, want)
	if changes.Empty() {
		return current, nil
	}
	lb, err := l.updateLB(ctx, current, uid, adopting, cloudapi.LoadBalancerUpdate{Spec: want, Changes: changes, Current: current})
	if err != nil {
		err = fmt.Errorf("updating load balancer %s: %w", current.ID, err)
		if changes.TargetGroup {
			l.groups.Due() // the group chosen may be named by no load balancer
			if errors.Is(err, cloudapi.ErrInvalidRequest) {
				l.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
			}
		}
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			if terr := l.updateTargetsOnly(ctx, logger, uid, current, want, changes); terr != nil {
				err = fmt.Errorf("%w; the targets were not written alone: %w", err, terr)
			}
		}
		return nil, err
	}
	if lb == nil {
		return nil, fmt.Errorf("updating load balancer %s: the cloud answered neither a load balancer nor an error: %w", current.ID, cloudapi.ErrTransient)
	}
	if old := current.Spec.TargetGroup; old != "" && old != lb.Spec.TargetGroup {
		l.groups.Drop(ctx, logger, current.ID, old)
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
func (l *LoadBalancer) updateTargetsOnly(ctx context.Context, logger klog.Logger, uid string, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, changes cloudapi.LoadBalancerChanges) error {
	only := cloudapi.LoadBalancerChanges{AddTargets: changes.AddTargets, RemoveTargets: changes.RemoveTargets, TargetGroup: changes.TargetGroup}
	others := changes
	others.AddTargets, others.RemoveTargets, others.TargetGroup = nil, nil, false
	if only.Empty() || others.Empty() {
		return nil // no target change, or nothing but: the refused request was this one
	}
	targetsOnly := current.Spec.Clone()
	targetsOnly.Targets = want.Targets
	targetsOnly.TargetGroup = want.TargetGroup
	if _, err := l.updateLB(ctx, current, uid, false, cloudapi.LoadBalancerUpdate{Spec: targetsOnly, Changes: only, Current: current}); err != nil {
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

// updateWant is what UpdateLoadBalancer makes of current: what the Service asks for, but
// never a switch between internal and public (only EnsureLoadBalancer replaces). When an
// annotation is malformed, it is current with the nodes (that a well-formed node selector
// selects) as targets, and the Service's error (serr): removed nodes must not stay targets
// until the user fixes the annotation. A malformed node selector leaves the targets (and
// the target group) as they are: every node is not what its user asked for. With target
// groups, the targets go to the group (see group, whose read is fresh after since), and
// release must be called once the load balancer is written; err is what failed. A Service
// of a share writes its share's load balancer as join makes it; one that disagrees with
// its share writes nothing (serr says why): the share's other Services keep the targets.
func (l *LoadBalancer) updateWant(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, current *cloudapi.LoadBalancer, since uint64) (want cloudapi.LoadBalancerSpec, asked []cloudapi.Listener, serr error, release func(), err error) {
	want, a, serr := l.desired(logger, svc, owner, nodes, current)
	if isShare(owner) {
		if serr == nil {
			asked, _ = plan.Split(&cloudapi.LoadBalancer{Spec: want}, string(svc.UID))
			// A node sync changes the targets, never whose listeners a share's load
			// balancer has: the Service it is given may predate the Service's deletion or
			// its move to another share (the service controller's node sync reads its
			// Services once, as it begins). Its listeners stay as they are, and it is not
			// recorded among the share's members.
			want.Listeners, _ = plan.Split(current, string(svc.UID))
			shareNodes(&want, a)
			want, serr = l.join(logger, svc, owner, want, current, false)
		}
		if serr != nil { // the share's targets are the share's: they follow a Service that agrees
			return l.keepUpdated(current, current.Spec.Clone()), nil, serr, func() {}, nil
		}
	}
	if serr != nil {
		want = current.Spec.Clone()
		if a.nodeSelectorBad {
			return l.keepUpdated(current, want), asked, serr, func() {}, nil
		}
		want.Targets = l.targets(logger, nodes, a.nodeSelector)
		want.TargetGroup = ""
	}
	if release, err = l.group(ctx, logger, &want, a.nodeSelector, since); err != nil {
		return want, asked, serr, nil, err
	}
	return l.keepUpdated(current, want), asked, serr, release, nil
}

// keepUpdated is want without what UpdateLoadBalancer never changes: internal, and the
// settings that only a replacement changes.
func (l *LoadBalancer) keepUpdated(current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	want.Internal = current.Spec.Internal
	l.opts.Settings.keepReplaced(current.Spec, &want)
	return want
}
