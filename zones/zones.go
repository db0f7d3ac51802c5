package zones

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/providerid"
)

// Zones implements cloudprovider.Zones: GetZone from configuration (the
// cloud-controller-manager does not run on the Node it would describe), and the zone of a
// Node's instance through the instance lookup shared with package instances.
type Zones struct {
	lookup instances.Lookup
	opts   Options
}

var _ cloudprovider.Zones = (*Zones)(nil)

// New returns Zones that find instances through lookup (instances.NewLookup, shared with
// package instances). It makes no cloud call.
func New(lookup instances.Lookup, opts Options) (*Zones, error) {
	var errs []error
	if lookup == nil {
		errs = append(errs, errors.New("zones: an instance lookup is required (instances.NewLookup)"))
	}
	if opts.ProviderID.String() == "" {
		errs = append(errs, errors.New("zones: a provider ID format is required"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Zones{lookup: lookup, opts: opts}, nil
}

// Options configure Zones.
type Options struct {
	// ProviderID is the provider ID format. Required.
	ProviderID providerid.Format
	// Zone and Region are what GetZone reports: the cloud-controller-manager does not run
	// on the node it would describe, so only configuration can answer. An empty Zone makes
	// GetZone answer cloudprovider.NotImplemented.
	Zone, Region string
}

// GetZone returns the configured zone and region, or cloudprovider.NotImplemented when no
// zone is configured.
func (z *Zones) GetZone(context.Context) (cloudprovider.Zone, error) {
	if z.opts.Zone == "" {
		return cloudprovider.Zone{}, cloudprovider.NotImplemented
	}
	return cloudprovider.Zone{FailureDomain: z.opts.Zone, Region: z.opts.Region}, nil
}

// GetZoneByProviderID returns the zone of the instance with the provider ID. An instance
// that does not exist is cloudprovider.InstanceNotFound.
func (z *Zones) GetZoneByProviderID(ctx context.Context, providerID string) (cloudprovider.Zone, error) {
	id, err := z.opts.ProviderID.InstanceID(providerID)
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	inst, err := z.lookup.ByID(ctx, id)
	return z.zone(inst, err)
}

// GetZoneByNodeName returns the zone of the instance named nodeName. An instance that
// does not exist is cloudprovider.InstanceNotFound.
func (z *Zones) GetZoneByNodeName(ctx context.Context, nodeName types.NodeName) (cloudprovider.Zone, error) {
	inst, err := z.lookup.ByName(ctx, string(nodeName))
	return z.zone(inst, err)
}

func (z *Zones) zone(inst *cloudapi.Instance, err error) (cloudprovider.Zone, error) {
	if cloudapi.IsNotFound(err) || (err == nil && inst.State == cloudapi.InstanceTerminated) {
		return cloudprovider.Zone{}, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	region := inst.Region
	if region == "" {
		region = z.opts.Region
	}
	return cloudprovider.Zone{FailureDomain: inst.Zone, Region: region}, nil
}
