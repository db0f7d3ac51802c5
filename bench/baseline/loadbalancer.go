package baseline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// ProvisioningRetryDelay is how long the service controller waits before it asks again
// about a load balancer that the cloud is still provisioning.
const ProvisioningRetryDelay = 5 * time.Second

// LoadBalancer implements cloudprovider.LoadBalancer by listing, then writing the whole
// load balancer back on every EnsureLoadBalancer and UpdateLoadBalancer.
type LoadBalancer struct {
	api       cloudapi.LoadBalancerAPI
	clusterID string
	instances *Instances
}

var _ cloudprovider.LoadBalancer = (*LoadBalancer)(nil)

func (l *LoadBalancer) ownerTags(svc *corev1.Service) map[string]string {
	return map[string]string{cloudapi.TagCluster: l.clusterID, cloudapi.TagService: string(svc.UID)}
}

// find lists the load balancers with the Service's owner tags, all pages.
func (l *LoadBalancer) find(ctx context.Context, svc *corev1.Service) ([]cloudapi.LoadBalancer, error) {
	if svc.UID == "" {
		return nil, fmt.Errorf("service %s/%s has no UID", svc.Namespace, svc.Name)
	}
	opts := cloudapi.ListOptions{Tags: l.ownerTags(svc)}
	var out []cloudapi.LoadBalancer
	for {
		page, err := l.api.ListLoadBalancers(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("looking up the load balancer of service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		for _, lb := range page.Items {
			if cloudapi.MatchTags(lb.Spec.Tags, opts.Tags) {
				out = append(out, lb)
			}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		opts.PageToken = page.NextPageToken
	}
}

// GetLoadBalancerName returns the cluster ID and the Service UID.
func (l *LoadBalancer) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	name := l.clusterID + "-" + strings.ReplaceAll(string(svc.UID), "-", "")
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// GetLoadBalancer reports whether the Service has a load balancer, and its status.
func (l *LoadBalancer) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	found, err := l.find(ctx, svc)
	if err != nil || len(found) == 0 {
		return nil, false, err
	}
	return status(&found[0]), true, nil
}

// apply sets what the Service and the nodes decide on spec: name, listeners, targets,
// source ranges, IP families and owner tags.
func (l *LoadBalancer) apply(spec *cloudapi.LoadBalancerSpec, svc *corev1.Service, nodes []*corev1.Node) {
	spec.Name = l.GetLoadBalancerName(context.Background(), "", svc)
	spec.Listeners = nil
	for _, p := range svc.Spec.Ports {
		spec.Listeners = append(spec.Listeners, cloudapi.Listener{Name: p.Name, Protocol: cloudapi.Protocol(p.Protocol), Port: p.Port, TargetPort: p.NodePort})
	}
	spec.Targets = targets(l.instances, nodes)
	spec.SourceRanges = append([]string(nil), svc.Spec.LoadBalancerSourceRanges...)
	spec.IPFamilies = nil
	for _, f := range svc.Spec.IPFamilies {
		spec.IPFamilies = append(spec.IPFamilies, cloudapi.IPFamily(f))
	}
	tags := maps.Clone(spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, l.ownerTags(svc))
	tags[cloudapi.TagServiceName] = svc.Namespace + "/" + svc.Name
	spec.Tags = tags
}

// targets returns the instance IDs of the nodes whose provider ID this provider made.
func targets(i *Instances, nodes []*corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if id, err := i.instanceID(n.Spec.ProviderID); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// write sends the whole spec: an update of current when there is one, else a create.
func (l *LoadBalancer) write(ctx context.Context, current *cloudapi.LoadBalancer, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if current == nil {
		lb, err := l.api.CreateLoadBalancer(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("creating load balancer %q: %w", spec.Name, err)
		}
		return lb, nil
	}
	lb, err := l.api.UpdateLoadBalancer(ctx, current.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(current.Spec, spec)})
	if err != nil {
		return nil, fmt.Errorf("updating load balancer %s: %w", current.ID, err)
	}
	return lb, nil
}

// EnsureLoadBalancer finds the Service's load balancer by its owner tags and writes it
// whole: a create when there is none, else an update, also when nothing changed.
func (l *LoadBalancer) EnsureLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	found, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	var current *cloudapi.LoadBalancer
	var spec cloudapi.LoadBalancerSpec
	if len(found) > 0 {
		current = &found[0]
		spec = current.Spec.Clone()
	}
	l.apply(&spec, svc, nodes)
	lb, err := l.write(ctx, current, spec)
	if err != nil {
		return nil, err
	}
	switch {
	case lb.Status == cloudapi.LoadBalancerError:
		return nil, fmt.Errorf("load balancer %s: the cloud reports status %s", lb.ID, lb.Status)
	case lb.Status != cloudapi.LoadBalancerActive || len(lb.Addresses) == 0:
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is %s", lb.ID, lb.Status), ProvisioningRetryDelay)
	}
	return status(lb), nil
}

// UpdateLoadBalancer finds the Service's load balancer, sets the targets from nodes and
// writes it whole, also when the targets did not change.
func (l *LoadBalancer) UpdateLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) error {
	found, err := l.find(ctx, svc)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("service %s/%s has no load balancer to update: %w", svc.Namespace, svc.Name, cloudapi.ErrNotFound)
	}
	spec := found[0].Spec.Clone()
	spec.Targets = targets(l.instances, nodes)
	_, err = l.write(ctx, &found[0], spec)
	return err
}

// EnsureLoadBalancerDeleted deletes every load balancer with the Service's owner tags.
func (l *LoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *corev1.Service) error {
	found, err := l.find(ctx, svc)
	if err != nil {
		return err
	}
	for _, lb := range found {
		if err := l.api.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, cloudapi.ErrNotFound) {
			return fmt.Errorf("deleting load balancer %s: %w", lb.ID, err)
		}
	}
	return nil
}

// status is one ingress per address, ipMode VIP.
func status(lb *cloudapi.LoadBalancer) *corev1.LoadBalancerStatus {
	st := &corev1.LoadBalancerStatus{}
	for _, a := range lb.Addresses {
		mode := corev1.LoadBalancerIPModeVIP
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: a, IPMode: &mode})
	}
	return st
}
