package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/providerid"
)

var _ cloudprovider.LoadBalancer = (*LoadBalancer)(nil)

// ProvisioningRetryDelay is how long the service controller waits before it asks again
// about a load balancer that the cloud is still provisioning.
const ProvisioningRetryDelay = 5 * time.Second

// DefaultAnnotationPrefix is the prefix of the annotations when Options.AnnotationPrefix
// is empty.
const DefaultAnnotationPrefix = "loadbalancer.ccmkit.io/"

// Options configure a LoadBalancer.
type Options struct {
	// ClusterID is the cluster's ID. Every load balancer is tagged with it, and nothing
	// without it is read or changed. Required.
	ClusterID string
	// ProviderID is the format of the Nodes' provider IDs, to find the targets' instance
	// IDs. Required.
	ProviderID providerid.Format
	// AnnotationPrefix is the prefix of the Service annotations, ending in "/". Default
	// DefaultAnnotationPrefix.
	AnnotationPrefix string
}

// LoadBalancer implements cloudprovider.LoadBalancer over a cloudapi.LoadBalancerAPI. A
// Service's load balancer is the one that carries the cluster's ID and the Service's UID in
// its tags (cloudapi.TagCluster, cloudapi.TagService); names are for humans.
type LoadBalancer struct {
	api  cloudapi.LoadBalancerAPI
	opts Options

	mu    sync.Mutex
	locks map[string]*serviceLock // by Service UID
}

type serviceLock struct {
	sync.Mutex
	users int
}

// New returns a LoadBalancer. It makes no cloud call.
func New(api cloudapi.LoadBalancerAPI, opts Options) (*LoadBalancer, error) {
	if api == nil {
		return nil, errors.New("loadbalancer: no load balancer API")
	}
	if opts.ClusterID == "" {
		return nil, errors.New("loadbalancer: a cluster ID is required: it marks the load balancers this cluster owns")
	}
	if opts.ProviderID.String() == "" {
		return nil, errors.New("loadbalancer: a provider ID format is required")
	}
	if opts.AnnotationPrefix == "" {
		opts.AnnotationPrefix = DefaultAnnotationPrefix
	}
	return &LoadBalancer{api: api, opts: opts, locks: map[string]*serviceLock{}}, nil
}

// lock serializes the writes for one Service: the service controller's sync and its node
// sync may run for the same Service at once.
func (l *LoadBalancer) lock(uid string) func() {
	l.mu.Lock()
	sl := l.locks[uid]
	if sl == nil {
		sl = &serviceLock{}
		l.locks[uid] = sl
	}
	sl.users++
	l.mu.Unlock()
	sl.Lock()
	return func() {
		sl.Unlock()
		l.mu.Lock()
		if sl.users--; sl.users == 0 {
			delete(l.locks, uid)
		}
		l.mu.Unlock()
	}
}

// GetLoadBalancerName returns the cloud name of the Service's load balancer: the name
// annotation if it is valid, else a name made of the cluster ID and the Service UID.
func (l *LoadBalancer) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	if s, _, err := parseAnnotations(l.opts.AnnotationPrefix, svc.Annotations); err == nil && s.name != "" {
		return s.name
	}
	return l.defaultName(svc)
}

// GetLoadBalancer reports whether the Service has a load balancer and its status. One
// cloud read (a list by owner tags).
func (l *LoadBalancer) GetLoadBalancer(ctx context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	found, err := l.find(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	if len(found) == 0 {
		return nil, false, nil
	}
	return l.status(svc, &found[0]), true, nil
}

// EnsureLoadBalancer makes the Service's load balancer match the Service and nodes and
// returns its status. It reads once (a list by owner tags); it writes only when something
// differs, and then in place, except for a switch between internal and public, which
// replaces the load balancer. It creates at most one load balancer per Service UID: after
// an ambiguous failure or a conflict it looks again by owner tags and adopts what it finds.
// While the cloud provisions, it returns an api.RetryError.
func (l *LoadBalancer) EnsureLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	defer l.lock(string(svc.UID))()

	found, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	found, err = l.dropDuplicates(ctx, logger, svc, found)
	if err != nil {
		return nil, err
	}
	var current *cloudapi.LoadBalancer
	if len(found) > 0 {
		current = &found[0]
	}
	want, err := l.desired(logger, svc, nodes, current)
	if err != nil {
		return nil, err
	}

	switch {
	case current == nil:
		current, err = l.create(ctx, logger, svc, want)
	case current.Spec.Internal != want.Internal:
		logger.Info("Replacing load balancer: internal and public cannot be switched in place", "loadBalancer", current.ID, "internal", want.Internal)
		if err := l.delete(ctx, current.ID); err != nil {
			return nil, err
		}
		current, err = l.create(ctx, logger, svc, want)
	default:
		current, err = l.update(ctx, logger, current, want)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case current.Status == cloudapi.LoadBalancerError:
		// Not "not ready yet": let the service controller back off.
		return nil, fmt.Errorf("load balancer %s of service %s/%s: the cloud reports status %s", current.ID, svc.Namespace, svc.Name, current.Status)
	case current.Status != cloudapi.LoadBalancerActive || len(current.Addresses) == 0:
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", current.ID, current.Status), ProvisioningRetryDelay)
	}
	return l.status(svc, current), nil
}

// UpdateLoadBalancer brings the targets (and anything else that drifted) in line with the
// nodes. With an unchanged node set it makes one read and no write. It never creates a
// load balancer: when the Service has none, it returns an error, and the service
// controller's next sync of the Service creates it.
func (l *LoadBalancer) UpdateLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	defer l.lock(string(svc.UID))()
	found, err := l.find(ctx, svc)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("service %s/%s has no load balancer with tags %s=%s, %s=%s to update: %w", svc.Namespace, svc.Name,
			cloudapi.TagCluster, l.opts.ClusterID, cloudapi.TagService, svc.UID, cloudapi.ErrNotFound)
	}
	current := &found[0]
	want, serr := l.desired(logger, svc, nodes, current)
	if serr != nil {
		// A malformed annotation must not keep removed nodes as targets: apply the node
		// set to what is there, and report the Service's error.
		want = current.Spec.Clone()
		want.Targets = l.targets(logger, svc, nodes)
	}
	if current.Spec.Internal != want.Internal {
		want.Internal = current.Spec.Internal // only EnsureLoadBalancer replaces
	}
	if _, err := l.update(ctx, logger, current, want); err != nil {
		return err
	}
	return serr
}

// EnsureLoadBalancerDeleted deletes every load balancer that carries the Service's owner
// tags, with its listeners, targets and health check, and returns nil when there is none.
func (l *LoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *corev1.Service) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	defer l.lock(string(svc.UID))()
	found, err := l.find(ctx, svc)
	if err != nil {
		return err
	}
	for _, lb := range found {
		if err := l.delete(ctx, lb.ID); err != nil {
			return err
		}
		logger.Info("Deleted load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
	}
	return nil
}

// find lists the load balancers with the Service's owner tags, oldest (lowest ID) first.
func (l *LoadBalancer) find(ctx context.Context, svc *corev1.Service) ([]cloudapi.LoadBalancer, error) {
	if svc.UID == "" {
		return nil, fmt.Errorf("service %s/%s has no UID: it cannot own a load balancer", svc.Namespace, svc.Name)
	}
	opts := cloudapi.ListOptions{Tags: l.ownerTags(svc)}
	var out []cloudapi.LoadBalancer
	for {
		page, err := l.api.ListLoadBalancers(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("looking up the load balancer of service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		for _, lb := range page.Items {
			// Trust, but verify: a backend that ignored the filter must not make us touch
			// another owner's load balancer.
			if cloudapi.MatchTags(lb.Spec.Tags, opts.Tags) {
				out = append(out, lb)
			}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		if page.NextPageToken == opts.PageToken {
			return nil, fmt.Errorf("looking up the load balancer of service %s/%s: the cloud answered page token %q twice", svc.Namespace, svc.Name, page.NextPageToken)
		}
		opts.PageToken = page.NextPageToken
	}
}

// dropDuplicates deletes all but one of several load balancers of one Service, which only
// a backend that lost track of a create can have made. It keeps the one whose address the
// Service's status publishes, else the first by ID.
func (l *LoadBalancer) dropDuplicates(ctx context.Context, logger klog.Logger, svc *corev1.Service, found []cloudapi.LoadBalancer) ([]cloudapi.LoadBalancer, error) {
	if len(found) < 2 {
		return found, nil
	}
	keep := 0
	for i, lb := range found {
		if slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(in corev1.LoadBalancerIngress) bool {
			return in.IP != "" && slices.Contains(lb.Addresses, in.IP)
		}) {
			keep = i
			break
		}
	}
	for i, extra := range found {
		if i == keep {
			continue
		}
		logger.Info("Deleting duplicate load balancer of the service", "loadBalancer", extra.ID, "keeping", found[keep].ID)
		if err := l.delete(ctx, extra.ID); err != nil {
			return nil, err
		}
	}
	return found[keep : keep+1], nil
}

// create creates the load balancer, or adopts the one a lost or conflicting create made.
func (l *LoadBalancer) create(ctx context.Context, logger klog.Logger, svc *corev1.Service, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	lb, err := l.api.CreateLoadBalancer(ctx, want)
	if err == nil {
		logger.Info("Created load balancer", "loadBalancer", lb.ID, "name", lb.Spec.Name)
		return lb, nil
	}
	if !errors.Is(err, cloudapi.ErrConflict) && !errors.Is(err, cloudapi.ErrTransient) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	// The create may have happened (a lost answer), or another sync made it: look again.
	found, ferr := l.find(ctx, svc)
	if ferr != nil {
		return nil, fmt.Errorf("creating load balancer %q: %w; looking for it afterwards: %w", want.Name, err, ferr)
	}
	if len(found) == 0 {
		if errors.Is(err, cloudapi.ErrConflict) {
			return nil, fmt.Errorf("creating load balancer %q: %w; no load balancer of this service exists, so the name or a requested address belongs to another: choose another with annotation %s%s or %s%s",
				want.Name, err, l.opts.AnnotationPrefix, AnnotationName, l.opts.AnnotationPrefix, AnnotationIPAddresses)
		}
		return nil, fmt.Errorf("creating load balancer %q: %w", want.Name, err)
	}
	logger.Info("Adopting the load balancer of an earlier create", "loadBalancer", found[0].ID, "createErr", err)
	return l.update(ctx, logger, &found[0], want)
}

// update writes the differences between current and want, if any.
func (l *LoadBalancer) update(ctx context.Context, logger klog.Logger, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	changes := cloudapi.DiffLoadBalancer(current.Spec, want)
	if changes.Empty() {
		return current, nil
	}
	lb, err := l.api.UpdateLoadBalancer(ctx, current.ID, cloudapi.LoadBalancerUpdate{Spec: want, Changes: changes})
	if err != nil {
		return nil, fmt.Errorf("updating load balancer %s: %w", current.ID, err)
	}
	logger.V(2).Info("Updated load balancer", "loadBalancer", lb.ID, "addTargets", len(changes.AddTargets), "removeTargets", len(changes.RemoveTargets),
		"addListeners", len(changes.AddListeners), "updateListeners", len(changes.UpdateListeners), "removeListeners", len(changes.RemoveListeners))
	return lb, nil
}

// delete deletes a load balancer; one that is already gone is fine.
func (l *LoadBalancer) delete(ctx context.Context, id string) error {
	if err := l.api.DeleteLoadBalancer(ctx, id); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", id, err)
	}
	return nil
}

// status is the Service status of a load balancer: one ingress per address, with ipMode
// Proxy when the load balancer sends the PROXY protocol (kube-proxy must then not
// short-circuit in-cluster traffic to the address), VIP otherwise.
func (l *LoadBalancer) status(_ *corev1.Service, lb *cloudapi.LoadBalancer) *corev1.LoadBalancerStatus {
	mode := corev1.LoadBalancerIPModeVIP
	if lb.Spec.ProxyProtocol {
		mode = corev1.LoadBalancerIPModeProxy
	}
	st := &corev1.LoadBalancerStatus{}
	for _, a := range lb.Addresses {
		m := mode
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: a, IPMode: &m})
	}
	return st
}
