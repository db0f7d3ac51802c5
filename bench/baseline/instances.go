package baseline

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Instances implements cloudprovider.InstancesV2 with one cloud call per lookup by
// provider ID and a list of every instance per lookup by name.
type Instances struct {
	api    cloudapi.InstanceAPI
	prefix string // "<provider name>://"
}

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// find returns the Node's instance: GetInstance by provider ID, else a list by name.
func (i *Instances) find(ctx context.Context, node *corev1.Node) (*cloudapi.Instance, error) {
	if node.Spec.ProviderID != "" {
		id, err := i.instanceID(node.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		inst, err := i.api.GetInstance(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("getting instance %q: %w", id, err)
		}
		return inst, nil
	}
	return i.byName(ctx, node.Name)
}

// byName lists instances until one is named name. It returns an error matching
// cloudapi.ErrNotFound when a complete list has none.
func (i *Instances) byName(ctx context.Context, name string) (*cloudapi.Instance, error) {
	var found *cloudapi.Instance
	err := listInstances(ctx, i.api, func(inst cloudapi.Instance) bool {
		if inst.Name == name {
			found = &inst
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("no instance is named %q: %w", name, cloudapi.ErrNotFound)
	}
	return found, nil
}

func gone(inst *cloudapi.Instance, err error) bool {
	if err != nil {
		return errors.Is(err, cloudapi.ErrNotFound)
	}
	return inst.State == cloudapi.InstanceTerminated
}

// InstanceExists reports whether the Node's instance exists: false only when the cloud
// says it is not found or terminated.
func (i *Instances) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// InstanceShutdown reports whether the Node's instance is stopped or being deleted, and
// cloudprovider.InstanceNotFound for an instance that does not exist.
func (i *Instances) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return false, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return false, err
	}
	return inst.State == cloudapi.InstanceStopped || inst.State == cloudapi.InstanceTerminating, nil
}

// InstanceMetadata returns the provider ID, type, zone, region and addresses of the
// Node's instance, the addresses in the cloud's order.
func (i *Instances) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return nil, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:   i.prefix + inst.ID,
		InstanceType: inst.Type,
		Zone:         inst.Zone,
		Region:       inst.Region,
	}
	for _, a := range inst.Addresses {
		md.NodeAddresses = append(md.NodeAddresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	return md, nil
}
