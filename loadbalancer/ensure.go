package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// ensure is EnsureLoadBalancer's write, from found, the Service's load balancers as read
// afresh: it deletes duplicates, and creates (or adopts the one its load-balancer-id
// annotation names), replaces or updates the load balancer. It returns the load balancer
// as the cloud last answered.
func (l *LoadBalancer) ensure(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, found []cloudapi.LoadBalancer) (_ *cloudapi.LoadBalancer, err error) {
	adoptID := l.intents.annotation(svc, AnnotationLoadBalancerID).loadBalancerID // malformed: desired reports it
	var extras []cloudapi.LoadBalancer                                            // a share's duplicates: deleted once the one kept has their Services' listeners
	if isShare(owner) {
		found, extras = plan.Duplicates(found, "", ingressAddresses(svc))
		defer func() {
			if err == nil {
				err = l.dropExtras(ctx, logger, owner, extras)
			}
		}()
	} else if found, err = l.dropDuplicates(ctx, logger, svc, owner, found, adoptID); err != nil {
		return nil, err
	}
	if len(found) == 0 && adoptID != "" && !isShare(owner) { // a share adopts nothing: desired says so
		return l.adopt(ctx, logger, svc, owner, nodes, adoptID)
	}
	var current *cloudapi.LoadBalancer
	if len(found) > 0 {
		current = &found[0]
	}
	var carry []cloudapi.Listener
	for _, extra := range extras {
		carry = append(carry, extra.Spec.Listeners...)
	}
	want, release, err := l.ensureWant(ctx, logger, svc, owner, nodes, current, carry...)
	if err != nil {
		return nil, err
	}
	defer release()
	if want.TargetGroup != "" && (current == nil || current.Spec.TargetGroup != want.TargetGroup) {
		defer func() {
			if err != nil {
				l.groups.Due() // the group chosen may be named by no load balancer
			}
		}()
	}

	switch {
	case current == nil:
		if err := l.cbrake.mayCreate(ctx, logger, svc, owner); err != nil {
			return nil, keptEntry{err} // nothing written: the read stands
		}
		return l.create(ctx, logger, svc, owner, want)
	case current.Spec.Internal != want.Internal:
		keep, err := l.intents.keepOnDelete(svc)
		if err != nil {
			return nil, err
		}
		if keep {
			return nil, fmt.Errorf("load balancer %s is %s, and annotation %s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s to replace it, or set %s back",
				current.ID, reach(current.Spec.Internal), l.intents.key(svc, AnnotationInternal), reach(want.Internal), l.intents.annotation(svc, AnnotationKeepOnDelete).setTo(l.opts.AnnotationPrefix, AnnotationKeepOnDelete, `"false"`), l.intents.key(svc, AnnotationInternal))
		}
		logger.Info("Replacing load balancer: internal and public cannot be switched in place", "loadBalancer", current.ID, "internal", want.Internal)
		return l.replace(ctx, logger, svc, owner, current, want)
	case l.opts.Settings.replaced(current.Spec, want) != "":
		name := l.opts.Settings.replaced(current.Spec, want)
		keep, err := l.intents.keepOnDelete(svc)
		if err != nil {
			return nil, err
		}
		if keep {
			return nil, fmt.Errorf("load balancer %s has %s %s, and annotation %s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s to replace it, or set %s back",
				current.ID, name, quote.Value(current.Spec.Settings[name]), l.intents.key(svc, name), quote.Value(want.Settings[name]), l.intents.annotation(svc, AnnotationKeepOnDelete).setTo(l.opts.AnnotationPrefix, AnnotationKeepOnDelete, `"false"`), l.intents.key(svc, name))
		}
		logger.Info("Replacing load balancer: the cloud cannot change this setting in place", "loadBalancer", current.ID, "setting", name, "from", quote.Text(current.Spec.Settings[name]), "to", quote.Text(want.Settings[name]))
		return l.replace(ctx, logger, svc, owner, current, want)
	default:
		return l.update(ctx, logger, owner, false, current, want)
	}
}

// ensureWant is what EnsureLoadBalancer makes of current (nil: none): the spec the
// Service asks for (desired; for a Service of a share, joined with the other Services'
// listeners and carry's, see join), its targets sent to their group (group, read after
// the call began); release must be called once the load balancer is written.
func (l *LoadBalancer) ensureWant(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, current *cloudapi.LoadBalancer, carry ...cloudapi.Listener) (_ cloudapi.LoadBalancerSpec, release func(), _ error) {
	want, a, err := l.desired(logger, svc, owner, nodes, current)
	if err != nil {
		return want, nil, err
	}
	if isShare(owner) {
		shareNodes(&want, a)
		if want, err = l.join(logger, svc, owner, want, current, true, carry...); err != nil {
			return want, nil, err
		}
	}
	release, err = l.group(ctx, logger, &want, a.nodeSelector, 0)
	return want, release, err
}

// dropDuplicates deletes all but one of several load balancers of one Service, which only
// a backend that lost track of a create can have made. It keeps the one with ID prefer
// (the load balancer the Service's load-balancer-id annotation names), else the one whose
// address or hostname the Service's status publishes, else the first by ID.
func (l *LoadBalancer) dropDuplicates(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, found []cloudapi.LoadBalancer, prefer string) ([]cloudapi.LoadBalancer, error) {
	kept, extras := plan.Duplicates(found, prefer, ingressAddresses(svc))
	if err := l.dropExtras(ctx, logger, owner, extras); err != nil {
		return nil, err
	}
	return kept, nil
}

// dropExtras deletes extras, duplicates of owner's load balancer.
func (l *LoadBalancer) dropExtras(ctx context.Context, logger klog.Logger, owner string, extras []cloudapi.LoadBalancer) error {
	for _, extra := range extras {
		logger.Info("Deleting duplicate load balancer of the service", "loadBalancer", extra.ID)
		if err := l.deleteLB(ctx, &extra, owner); err != nil {
			return err
		}
		l.groups.Drop(ctx, logger, extra.ID, extra.Spec.TargetGroup)
	}
	return nil
}

// create creates the load balancer, or adopts the one a lost or conflicting create made.
func (l *LoadBalancer) create(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	lb, err := l.api.CreateLoadBalancer(ctx, want)
	if err == nil && lb == nil {
		err = paging.NoAnswer(cloudapi.OpCreateLoadBalancer, "") // made or not: look, as after a lost answer
	}
	if err == nil {
		logger.Info("Created load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
		return lb, nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, cloudapi.ErrInvalidRequest) {
			l.groups.Forget(want.TargetGroup) // refused perhaps because the group is gone
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	// The create may have happened (a lost answer), or another sync made it: look again.
	found, ferr := l.find(ctx, svc, owner)
	if ferr != nil {
		return nil, fmt.Errorf("creating load balancer %q: %w; looking for it afterwards: %w", want.Name, err, ferr)
	}
	if len(found) == 0 {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating load balancer %q: %w; %s", want.Name, err, l.nameTakenAdvice(svc, owner))
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	logger.Info("Adopting the load balancer of an earlier create", "loadBalancer", found[0].ID, "createErr", err)
	if isShare(owner) {
		// Another Service of the share may have made it: join it as it is.
		var jerr error
		if want, jerr = l.join(logger, svc, owner, want, &found[0], true); jerr != nil {
			return nil, jerr
		}
	}
	return l.update(ctx, logger, owner, false, &found[0], want)
}

// adopt makes the load balancer with ID id, named by the Service's load-balancer-id
// annotation, the Service's: one fresh read (GetLoadBalancer), then, when it carries no
// ownership tag of another cluster or Service, one update to what the Service asks for,
// with the Service's owner tags and the load balancer's addresses. A load balancer that
// does not exist is an error, never a reason to create one. After the adoption the load
// balancer is the Service's like any it created. It holds the load balancer's lock
// (lockLB), so that two Services never both adopt it; two clusters can race, since
// cloudapi has no conditional update: the last write wins, and the other cluster's next
// sync reports the owner's tags.
func (l *LoadBalancer) adopt(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, id string) (*cloudapi.LoadBalancer, error) {
	defer l.lockLB(id)()
	key := l.intents.key(svc, AnnotationLoadBalancerID)
	lb, err := l.api.GetLoadBalancer(ctx, id)
	switch {
	case cloudapi.IsNotFound(err):
		return nil, fmt.Errorf("annotation %s names load balancer %s, which does not exist: %w; ccmkit creates none in its place: correct the ID, or remove the annotation to get a new load balancer", key, id, err)
	case err != nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: %w", id, key, err)
	case lb == nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: the cloud answered neither a load balancer nor an error: %w", id, key, cloudapi.ErrTransient)
	}
	owned, err := l.adoptable(owner, lb, key)
	if err != nil {
		logger.Info("Refusing to adopt load balancer", "loadBalancer", id, "tags", lb.Spec.Tags, "err", err)
		return nil, err
	}
	want, a, err := l.desired(logger, svc, owner, nodes, lb)
	if err != nil {
		return nil, err
	}
	if err := keepsAddresses(lb, want, key, l.opts.Shape); err != nil {
		return nil, err
	}
	release, err := l.group(ctx, logger, &want, a.nodeSelector, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	adopted, err := l.update(ctx, logger, owner, true, lb, want)
	if err != nil {
		if !owned {
			return nil, fmt.Errorf("adopting load balancer %s, named by annotation %s: %w; nothing else was written to it: it is not this Service's until the adopting update succeeds", id, key, err)
		}
		return nil, err
	}
	if !owned {
		logger.Info("Adopted load balancer", "loadBalancer", id, "addresses", adopted.Addresses)
		l.report.event(svc, corev1.EventTypeNormal, "AdoptedLoadBalancer", fmt.Sprintf("Adopted load balancer %s (addresses [%s]), named by annotation %s", id, strings.Join(adopted.Addresses, ", "), key))
	}
	return adopted, nil
}

// adoptable reports whether the Service may adopt lb: when it carries none of ccmkit's
// ownership tags (owned false), or already the Service's own (owned true: a list that
// missed it). Any other owner, even one tag of one, is ErrOwnedElsewhere; the error names
// no other cluster or Service, since the Service's events are its users'.
func (l *LoadBalancer) adoptable(owner string, lb *cloudapi.LoadBalancer, key string) (owned bool, err error) {
	cluster, hasCluster := lb.Spec.Tags[cloudapi.TagCluster]
	switch {
	case lb.Status == cloudapi.LoadBalancerDeleting:
		return false, fmt.Errorf("annotation %s names load balancer %s, which the cloud is deleting: name another, or remove the annotation to get a new load balancer", key, lb.ID)
	case unowned(lb.Spec.Tags):
		return false, nil
	case cluster == l.opts.ClusterID && ownerKey(lb.Spec.Tags) == owner:
		return true, nil
	case hasCluster && cluster != l.opts.ClusterID:
		return false, fmt.Errorf("annotation %s names load balancer %s, which belongs to another cluster (tag %s): %w; ccmkit changes nothing that is not this cluster's: name a load balancer without ownership tags, or remove the annotation",
			key, lb.ID, cloudapi.TagCluster, ErrOwnedElsewhere)
	default:
		return false, fmt.Errorf("annotation %s names load balancer %s, which belongs to another Service or share (tag %s or %s): %w; it is adopted only once it is let go (deleted with keep-on-delete): name another, or remove the annotation",
			key, lb.ID, cloudapi.TagService, cloudapi.TagShare, ErrOwnedElsewhere)
	}
}

// keepsAddresses checks that updating lb to want keeps lb's addresses: the Service asks
// for no other address than lb has, and, on a cloud that keeps the families (shape),
// for every family of lb's addresses; a cloud whose load balancers serve the families
// they serve whatever a spec asks never drops one.
func keepsAddresses(lb *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, key string, shape cloudapi.LoadBalancerShape) error {
	if !slices.Equal(want.RequestedIPs, lb.Spec.RequestedIPs) {
		for _, ip := range want.RequestedIPs {
			if !slices.Contains(lb.Addresses, ip) {
				return fmt.Errorf("the Service asks for address %s (annotation %s or spec.loadBalancerIP), but load balancer %s, named by annotation %s, has [%s]: adopting keeps its addresses; ask for those or none",
					ip, AnnotationIPAddresses, lb.ID, key, strings.Join(lb.Addresses, ", "))
			}
		}
	}
	families := want.IPFamilies
	if len(families) == 0 {
		families = []cloudapi.IPFamily{cloudapi.IPv4}
	}
	if !shape.Keeps(cloudapi.FeatureIPFamilies) {
		families = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
	}
	for _, a := range lb.Addresses {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return fmt.Errorf("load balancer %s, named by annotation %s, has the address %q, which is not an IP address: the cloud's answer cannot tell whether adopting keeps it", lb.ID, key, a)
		}
		f := cloudapi.IPv4
		if !ip.Unmap().Is4() {
			f = cloudapi.IPv6
		}
		if !slices.Contains(families, f) {
			return fmt.Errorf("load balancer %s, named by annotation %s, has the %s address %s, but the Service's spec.ipFamilies are %v: adopting would drop it; set spec.ipFamilyPolicy and spec.ipFamilies to include %s",
				lb.ID, key, f, a, families, f)
		}
	}
	return nil
}

// replace deletes the Service's load balancer current and creates one from want, then
// drops the target group current named when the new one names another.
func (l *LoadBalancer) replace(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	l.cbrake.replaces(owner, true) // the create is the Service's request, also when it is retried
	if err := l.remove(ctx, logger, svc, owner, current, false); err != nil {
		return nil, err
	}
	created, err := l.create(ctx, logger, svc, owner, want)
	if err == nil {
		l.cbrake.replaces(owner, false)
	}
	if old := current.Spec.TargetGroup; old != "" && (err != nil || created.Spec.TargetGroup != old) {
		if err != nil {
			l.groups.Due()
		} else {
			l.groups.Drop(ctx, logger, current.ID, old)
		}
	}
	return created, err
}

// remove deletes the load balancer lb of owner (the Service's, or its share's), or
// releases it when keep is true.
func (l *LoadBalancer) remove(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer, keep bool) error {
	if keep {
		return l.release(ctx, logger, svc, owner, lb)
	}
	if err := l.deleteLB(ctx, lb, owner); err != nil {
		if lb.Spec.TargetGroup != "" {
			l.groups.Due() // it may be gone all the same, and its group unused
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
func (l *LoadBalancer) release(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer) error {
	defer l.lockLB(lb.ID)()
	want := lb.Spec.Clone()
	for _, k := range append(ownershipTags, cloudapi.TagShareNodes) {
		delete(want.Tags, k)
	}
	if isShare(owner) {
		want.Name = keptName(want.Name, lb.ID) // the share's next load balancer takes its name
	}
	want.Targets = nil
	want.TargetGroup = ""
	released, err := l.update(ctx, logger, owner, false, lb, want)
	if err != nil {
		return fmt.Errorf("releasing load balancer %s (keep-on-delete): %w", lb.ID, err)
	}
	logger.Info("Released load balancer: kept in the cloud without this cluster's ownership tags and targets", "loadBalancer", lb.ID, "addresses", released.Addresses)
	l.report.event(svc, corev1.EventTypeNormal, "KeptLoadBalancer", fmt.Sprintf("Kept load balancer %s (addresses [%s]) in the cloud without this Service's ownership tags and targets; a Service adopts it with annotation %s%s: %s",
		lb.ID, strings.Join(released.Addresses, ", "), l.opts.AnnotationPrefix, AnnotationLoadBalancerID, lb.ID))
	return nil
}
