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
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// ensure is EnsureLoadBalancer's write, from found, the Service's load balancers as read
// afresh: it deletes duplicates, and creates (or adopts the one its load-balancer-id
// annotation names, or takes over the one the earlier cloud-controller-manager marked as
// the Service's, Aliases.OwnerTag), replaces or updates the load balancer. It returns the load balancer
// as the cloud last answered.
func (l *LoadBalancer) ensure(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, found []cloudapi.LoadBalancer) (_ *cloudapi.LoadBalancer, err error) {
	adoptID := l.intents.annotation(svc, AnnotationLoadBalancerID).loadBalancerID // malformed: desired reports it
	var extras []cloudapi.LoadBalancer                                            // a share's duplicates: deleted once the one kept has their Services' listeners
	if isShare(owner) {
		found, extras = plan.Duplicates(found, "", ingressAddresses(svc))
		defer func() {
			if err == nil {
				err = l.w.dropExtras(ctx, logger, owner, extras)
			}
		}()
	} else if found, err = l.w.dropDuplicates(ctx, logger, svc, owner, found, adoptID); err != nil {
		return nil, err
	}
	if len(found) == 0 && adoptID != "" && !isShare(owner) { // a share adopts nothing: desired says so
		return l.adopt(ctx, logger, svc, owner, nodes, adoption{id: adoptID, key: l.intents.key(svc, AnnotationLoadBalancerID)})
	}
	if tag := l.opts.Aliases.OwnerTag; len(found) == 0 && tag != "" && !isShare(owner) {
		// Before a create: the load balancer the earlier cloud-controller-manager made for
		// the Service, if any, is taken over instead (one list; none without OwnerTag).
		lb, err := l.w.snap.marked(ctx, tag, owner)
		var adopted *cloudapi.LoadBalancer
		if err == nil && lb != nil {
			adopted, err = l.adopt(ctx, logger, svc, owner, nodes, adoption{id: lb.ID, mark: tag + "=" + owner, lb: lb})
		}
		what := ""
		if errors.Is(err, ErrTakeoverRefused) {
			what = err.Error()
		}
		if l.report.changed(svc, ReasonTakeoverRefused, what) {
			logger.Info("Not creating a load balancer: the earlier cloud-controller-manager's cannot be taken over", "err", err)
			l.report.event(svc, corev1.EventTypeWarning, ReasonTakeoverRefused, what)
		}
		if err != nil || adopted != nil {
			return adopted, err
		}
	}
	var current *cloudapi.LoadBalancer
	if len(found) > 0 {
		current = &found[0]
	}
	var carry []cloudapi.Listener
	for _, extra := range extras {
		carry = append(carry, extra.Spec.Listeners...)
	}
	want, err := l.p.ensureWant(logger, svc, owner, nodes, current, carry...)
	if err != nil {
		return nil, err
	}
	release, err := l.w.group(ctx, logger, &want, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	if want.spec.TargetGroup != "" && (current == nil || current.Spec.TargetGroup != want.spec.TargetGroup) {
		defer func() {
			if err != nil {
				l.w.groups.Due() // the group chosen may be named by no load balancer
			}
		}()
	}
	if current == nil {
		if err := l.w.brake.mayCreate(ctx, logger, svc, owner); err != nil {
			return nil, keptEntry{err} // nothing written: the read stands
		}
		return l.w.create(ctx, logger, l.p.creation(logger, svc, owner, want.spec))
	}
	if replace, err := l.p.replaces(logger, svc, current, want.spec); err != nil || replace {
		if err != nil {
			return nil, err
		}
		return l.w.replace(ctx, logger, current, l.p.creation(logger, svc, owner, want.spec))
	}
	return l.w.update(ctx, logger, owner, false, current, want.spec)
}

// adopt makes the load balancer how names the Service's: the one with the ID its
// load-balancer-id annotation names (one fresh read, GetLoadBalancer), or the one the
// earlier cloud-controller-manager marked as the Service's (as marked listed it, no
// further read). When it carries no ownership tag of another cluster or Service, one
// update makes it what the Service asks for, with the Service's owner tags, the load
// balancer's addresses, and what its earlier owner set that the Service does not ask
// otherwise (cloudapi.TagAdopted). A load balancer that does not exist is an error,
// never a reason to create one. After the adoption the load balancer is the Service's
// like any it created. It holds the load balancer's lock (writer.lockLB), so that two
// Services never both adopt it; two clusters can race, since cloudapi has no conditional
// update: the last write wins, and the other cluster's next sync reports the owner's
// tags. Every error of a takeover before its update matches ErrTakeoverRefused.
func (l *LoadBalancer) adopt(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, how adoption) (*cloudapi.LoadBalancer, error) {
	defer l.w.lockLB(how.id)()
	lb := how.lb
	if lb == nil {
		var err error
		if lb, err = l.snap.readAdopted(ctx, how); err != nil {
			return nil, err
		}
	}
	owned, want, err := l.p.adoptWant(logger, l.w, svc, owner, nodes, lb, how)
	if err != nil {
		return nil, err
	}
	release, err := l.w.group(ctx, logger, &want, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	id := how.id
	adopted, err := l.w.update(ctx, logger, owner, true, lb, want.spec)
	if err != nil {
		if !owned {
			return nil, fmt.Errorf("adopting load balancer %s, %s: %w; nothing else was written to it: it is not this Service's until the adopting update succeeds", id, how.named(), err)
		}
		return nil, err
	}
	if !owned {
		logger.Info("Adopted load balancer", "loadBalancer", id, "addresses", adopted.Addresses, "by", how.named())
		l.report.event(svc, corev1.EventTypeNormal, "AdoptedLoadBalancer", fmt.Sprintf("Adopted load balancer %s (addresses [%s]), %s", id, strings.Join(adopted.Addresses, ", "), how.named()))
	}
	return adopted, nil
}

// readAdopted reads the load balancer the Service's load-balancer-id annotation names
// (how): one GetLoadBalancer. One that does not exist is an error, never a reason to
// create one.
func (s *snapshot) readAdopted(ctx context.Context, how adoption) (*cloudapi.LoadBalancer, error) {
	lb, err := s.api.GetLoadBalancer(ctx, how.id)
	switch {
	case cloudapi.IsNotFound(err):
		return nil, fmt.Errorf("annotation %s names load balancer %s, which does not exist: %w; ccmkit creates none in its place: correct the ID, or remove the annotation to get a new load balancer", how.key, how.id, err)
	case err != nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: %w", how.id, how.key, err)
	case lb == nil:
		return nil, fmt.Errorf("reading load balancer %s, named by annotation %s: the cloud answered neither a load balancer nor an error: %w", how.id, how.key, cloudapi.ErrTransient)
	}
	return lb, nil
}

// adoptWant is what adopting lb, named as how says, makes of it for the Service: whether
// lb is the Service's already (owned, by the writer's ownership rule w.adoptable), and the
// spec to write; or why the Service may not adopt it (an error matching
// ErrTakeoverRefused for a takeover). It writes nothing.
func (p *planner) adoptWant(logger klog.Logger, w *writer, svc *corev1.Service, owner string, nodes []*corev1.Node, lb *cloudapi.LoadBalancer, how adoption) (owned bool, want wanted, err error) {
	owned, err = w.adoptable(owner, lb, how)
	if err != nil {
		logger.Info("Refusing to adopt load balancer", "loadBalancer", how.id, "tags", lb.Spec.Tags, "err", err)
		return false, wanted{}, how.refused(err)
	}
	want, err = p.ensureWant(logger, svc, owner, nodes, lb) // owner is no share: a share adopts nothing
	if err != nil {
		return false, wanted{}, how.refused(err)
	}
	if err := keepsAddresses(lb, want.spec, how, p.shape); err != nil {
		return false, wanted{}, how.refused(err)
	}
	return owned, want, nil
}

// keepsAddresses checks that updating lb to want keeps lb's addresses: the Service asks
// for no other address than lb has, and, on a cloud that keeps the families (shape),
// for every family of lb's addresses; a cloud whose load balancers serve the families
// they serve whatever a spec asks never drops one.
func keepsAddresses(lb *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec, how adoption, shape cloudapi.LoadBalancerShape) error {
	if !slices.Equal(want.RequestedIPs, lb.Spec.RequestedIPs) {
		for _, ip := range want.RequestedIPs {
			if !slices.Contains(lb.Addresses, ip) {
				return fmt.Errorf("the Service asks for address %s (annotation %s or spec.loadBalancerIP), but load balancer %s, %s, has [%s]: adopting keeps its addresses; ask for those or none",
					ip, AnnotationIPAddresses, lb.ID, how.named(), strings.Join(lb.Addresses, ", "))
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
			return fmt.Errorf("load balancer %s, %s, has the address %q, which is not an IP address: the cloud's answer cannot tell whether adopting keeps it", lb.ID, how.named(), a)
		}
		f := cloudapi.IPv4
		if !ip.Unmap().Is4() {
			f = cloudapi.IPv6
		}
		if !slices.Contains(families, f) {
			return fmt.Errorf("load balancer %s, %s, has the %s address %s, but the Service's spec.ipFamilies are %v: adopting would drop it; set spec.ipFamilyPolicy and spec.ipFamilies to include %s",
				lb.ID, how.named(), f, a, families, f)
		}
	}
	return nil
}
