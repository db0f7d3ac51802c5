package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// CreationBrake bounds how many Services whose status already holds an address may each
// get a new load balancer, so that a cloud-controller-manager pointed at another project
// or account (which finds none of the cluster's load balancers) does not create one for
// every Service and publish new addresses in place of the ones clients use.
//
// A re-creation is a create for a Service whose fresh read found no load balancer of its
// owner (the Service, or its share) while its status.loadBalancer.ingress holds an
// address or hostname; a Service without one (a new Service) is never held, and neither
// is an adoption, nor a replacement the Service asked for. Within any Window at most
// max(Minimum, floor(Share × the owners of Services with an address)) owners may be
// re-created. With Options.Services the brake counts at once every owner that would be
// re-created (the Services of every namespace whose owner the snapshot of the cluster's
// load balancers has none of), so that the first create of a wrong project is already
// held; without it, it counts the owners as their syncs ask, and allows Minimum.
//
// A held create writes nothing: the sync fails with an error matching ErrCreationHeld,
// the Service's condition says ReasonCreationHeld, a Warning event ReasonCreationHeld
// says why (once per change), and Options.OnCreationHeld counts it. It goes on once the
// config points at the cluster's project again (the load balancers are found), or once
// the Service acknowledges the new address (AnnotationAcknowledgeNewLoadBalancer). The
// zero CreationBrake is off.
//
// Its memory is its process's: the owners re-created within the window are forgotten
// by a restart, so each restart within a window lets up to another allowance through
// when the creates come one by one (without a Services client, or as Services move into
// new shares); with a Services client a wrong project's creates are counted at once, after
// a restart too.
type CreationBrake struct {
	// Window is the time over which re-creations are counted; zero turns the brake off.
	Window time.Duration
	// Share is the share of the owners of Services with an address that may be
	// re-created within the window; in (0, 1].
	Share float64
	// Minimum is how many owners may be re-created within the window whatever Share
	// allows; at least 0.
	Minimum int
}

// Validate reports what is wrong with b.
func (b CreationBrake) Validate() error {
	switch {
	case b.Window < 0:
		return fmt.Errorf("the creation brake's window %s is negative", b.Window)
	case b.Window > 0 && (math.IsNaN(b.Share) || b.Share <= 0 || b.Share > 1):
		return fmt.Errorf("the creation brake's share %v must be more than 0 and at most 1", b.Share)
	case b.Minimum < 0:
		return fmt.Errorf("the creation brake's minimum %d is negative", b.Minimum)
	}
	return nil
}

// AnnotationAcknowledgeNewLoadBalancer is the Service annotation by which an operator lets
// the creation brake pass a new load balancer for the Service: its value is the address
// (or hostname) in the Service's status that the new load balancer gives up. It counts
// only while the status still holds that address, so it acknowledges one re-creation:
// once the new address is published, it acknowledges nothing. It is outside the
// annotation prefix, as an operator's word, not a user's request.
const AnnotationAcknowledgeNewLoadBalancer = "ccmkit.io/acknowledge-new-load-balancer"

// ErrCreationHeld is matched (errors.Is) by the error of EnsureLoadBalancer when the
// creation brake (Options.CreationBrake) holds the new load balancer of a Service whose
// status already holds an address. Nothing is written then.
var ErrCreationHeld = errors.New("the creation brake holds a new load balancer for a Service that has an address")

// ReasonCreationHeld is the reason of the condition ConditionLoadBalancerReady and of the
// Warning event of a Service whose new load balancer the creation brake holds.
const ReasonCreationHeld = "CreationHeld"

// creationBrake applies the CreationBrake: what it reads (the Services, the snapshot),
// how it reports a hold, and its memory, under its own lock.
type creationBrake struct {
	CreationBrake
	clusterID string
	maxAge    time.Duration
	clock     clock.PassiveClock
	services  typedcorev1.ServicesGetter            // nil: it counts the owners as their syncs ask
	serves    func(svc *corev1.Service) bool        // nil: every Service
	owner     func(*corev1.Service) (string, error) // whom a Service's load balancer belongs to
	lookup    func(ctx context.Context, owner string) ([]*cloudapi.LoadBalancer, bool)
	addresses func(ctx context.Context) (map[string]bool, error) // of the cluster's load balancers
	report    *reporter
	onHeld    func() // nil: none

	mu sync.Mutex
	// passed holds the owners re-created within the window, with when.
	passed map[string]time.Time
	// asked holds the owners whose re-creation was asked for within the window, with
	// when: the count without a Services client.
	asked map[string]time.Time
	// replacing holds the owners whose load balancer this process deleted to replace it
	// (internal switched, or a setting only a replacement changes): their create is the
	// Service's request, never held.
	replacing map[string]bool
	// counted is the last count of recreations, reused for maxAge, so that the held
	// Services' retries do not each list every Service of the cluster.
	counted struct {
		at        time.Time
		missing   map[string]bool
		addressed int
	}
}

// prune forgets what is not after since. b.mu is held.
func (b *creationBrake) prune(since time.Time) {
	for _, m := range []map[string]time.Time{b.passed, b.asked} {
		for k, at := range m {
			if !at.After(since) {
				delete(m, k)
			}
		}
	}
}

// mayCreate returns nil when the Service's load balancer (of owner, which a fresh read
// found none of) may be created, and an error matching ErrCreationHeld when the creation
// brake holds it (see CreationBrake), or an error when it cannot tell.
func (b *creationBrake) mayCreate(ctx context.Context, logger klog.Logger, svc *corev1.Service, owner string) error {
	addrs := ingressAddresses(svc)
	if b.Window <= 0 || len(addrs) == 0 {
		return nil
	}
	if ack := svc.Annotations[AnnotationAcknowledgeNewLoadBalancer]; ack != "" && slices.Contains(addrs, ack) {
		logger.Info("Creating a new load balancer for a Service with an address: the Service acknowledges it", "address", quote.Text(ack), "annotation", AnnotationAcknowledgeNewLoadBalancer)
		b.report.changed(svc, ReasonCreationHeld, "")
		return nil
	}
	b.mu.Lock()
	_, replacing := b.replacing[owner]
	delete(b.replacing, owner)
	b.mu.Unlock()
	if replacing {
		return nil // a replacement the Service asked for: this process deleted the old one
	}
	now := b.clock.Now()
	held, err := b.addresses(ctx)
	if err != nil {
		return fmt.Errorf("service %s/%s has an address but no load balancer: the creation brake cannot tell whether the cluster's load balancers are there: %w", svc.Namespace, svc.Name, err)
	}
	if slices.ContainsFunc(addrs, func(a string) bool { return held[a] }) {
		return nil // its address is another load balancer's of the cluster (a share it left, say): nothing is lost
	}
	missing, addressed, err := b.recreations(ctx, owner, held)
	if err != nil {
		return fmt.Errorf("service %s/%s has an address but no load balancer: counting the Services that would get a new one at once (the creation brake): %w", svc.Namespace, svc.Name, err)
	}
	b.mu.Lock()
	b.prune(now.Add(-b.Window))
	b.asked[owner] = now
	if missing == nil { // no Services client: the owners asked for within the window
		missing = map[string]bool{}
		for k := range b.asked {
			missing[k] = true
		}
	}
	would := len(missing) // the owners that get a new load balancer within the window: missing and passed
	for k := range b.passed {
		if !missing[k] {
			would++
		}
	}
	_, passedBefore := b.passed[owner]
	allowed := max(b.Minimum, int(math.Floor(b.Share*float64(addressed))))
	pass := passedBefore || would <= allowed
	if pass {
		b.passed[owner] = now
	}
	b.mu.Unlock()
	if pass {
		b.report.changed(svc, ReasonCreationHeld, "")
		return nil
	}
	err = fmt.Errorf("service %s/%s has address %s but the cloud has no load balancer of it (tags %s): %d load balancers of Services with an address would be made within %s, more than the creation brake allows (%d): %w; if the cloud config points at another project or account, correct it; to give this Service a new load balancer and a new address, annotate it %s=%s",
		svc.Namespace, svc.Name, quote.Value(addrs[0]), tagsText(ownerTags(b.clusterID, owner)), would, b.Window, allowed, ErrCreationHeld,
		AnnotationAcknowledgeNewLoadBalancer, addrs[0])
	if b.onHeld != nil {
		b.onHeld()
	}
	if b.report.changed(svc, ReasonCreationHeld, err.Error()) {
		logger.Info("Not creating a load balancer for a Service that has an address: the creation brake holds it", "address", quote.Text(addrs[0]), "wouldCreate", would, "allowed", allowed)
		b.report.event(svc, corev1.EventTypeWarning, ReasonCreationHeld, err.Error())
	}
	return err
}

// recreations returns, with Options.Services, the owners of the Services this
// LoadBalancer serves, of type LoadBalancer, not being deleted, with an address in their
// status (addressed, how many), and those of them (missing, owner among them) that the
// snapshot of the cluster's load balancers (as fresh as Options.MaxAge) has no load
// balancer of and that no acknowledgement lets pass. It lists the Services at most once
// per Options.MaxAge, so that the held Services' retries do not each list every Service of
// the cluster. missing is nil without Options.Services. The caller must not change
// missing.
func (b *creationBrake) recreations(ctx context.Context, owner string, held map[string]bool) (missing map[string]bool, addressed int, _ error) {
	if b.services == nil {
		return nil, 0, nil
	}
	api := b.services.Services(metav1.NamespaceAll)
	if api == nil {
		return nil, 0, nil
	}
	now := b.clock.Now()
	b.mu.Lock()
	last := b.counted
	b.mu.Unlock()
	if last.missing != nil && now.Sub(last.at) < b.maxAge {
		if !last.missing[owner] {
			last.missing = maps.Clone(last.missing)
			last.missing[owner] = true
		}
		return last.missing, last.addressed, nil
	}
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("listing the Services: %w", err)
	}
	owners := map[string]bool{owner: true} // by owner: whether it would get a new load balancer
	for i := range list.Items {
		o := &list.Items[i]
		addrs := ingressAddresses(o)
		if o.DeletionTimestamp != nil || o.Spec.Type != corev1.ServiceTypeLoadBalancer || len(addrs) == 0 || (b.serves != nil && !b.serves(o)) {
			continue
		}
		theirs, err := b.owner(o)
		if err != nil || owners[theirs] {
			continue
		}
		lbs, ok := b.lookup(ctx, theirs)
		acknowledged := slices.Contains(addrs, o.Annotations[AnnotationAcknowledgeNewLoadBalancer])
		lost := !slices.ContainsFunc(addrs, func(a string) bool { return held[a] }) // on no load balancer of the cluster
		owners[theirs] = ok && len(lbs) == 0 && lost && !acknowledged
	}
	missing = map[string]bool{}
	for k, recreated := range owners {
		if recreated {
			missing[k] = true
		}
	}
	b.mu.Lock()
	b.counted.at, b.counted.missing, b.counted.addressed = now, missing, len(owners)
	b.mu.Unlock()
	return missing, len(owners), nil
}

// ingressAddresses returns the IPs and hostnames of the Service's status.loadBalancer.
func ingressAddresses(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		for _, a := range []string{in.IP, in.Hostname} {
			if a = strings.TrimSpace(a); a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}

// replaces records that owner's load balancer is deleted to be replaced (on), so that the
// create that follows, retried after a failure too, passes the brake; or that the
// replacement is made (off).
func (b *creationBrake) replaces(owner string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.replacing[owner] = true
	} else {
		delete(b.replacing, owner)
	}
}
