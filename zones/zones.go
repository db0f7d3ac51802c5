package zones

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/providerid"
)

// Lookup finds instances; the shared instance snapshot implements it. Both methods return
// an error matching cloudapi.ErrNotFound only when the cloud said so.
type Lookup interface {
	// ByID returns the instance with the given cloud ID.
	ByID(ctx context.Context, id string) (*cloudapi.Instance, error)
	// ByName returns the instance with the given name.
	ByName(ctx context.Context, name string) (*cloudapi.Instance, error)
}

// Options configure Zones.
type Options struct {
	// ProviderID is the provider ID format. Required.
	ProviderID providerid.Format
	// Zone and Region are what GetZone reports: the cloud-controller-manager does not run
	// on the node it would describe, so only configuration can answer. An empty Zone makes
	// GetZone answer cloudprovider.NotImplemented.
	Zone, Region string
	// Lookup is the shared instance snapshot. Nil builds a private one over the API.
	Lookup Lookup
}

// Zones implements cloudprovider.Zones.
type Zones struct {
	lookup Lookup
	opts   Options
}

var _ cloudprovider.Zones = (*Zones)(nil)

// New returns Zones over api. It makes no cloud call.
func New(api cloudapi.InstanceAPI, opts Options) (*Zones, error) {
	if opts.ProviderID.String() == "" {
		return nil, fmt.Errorf("zones: a provider ID format is required")
	}
	if opts.Lookup == nil {
		opts.Lookup = instancecache.New(api, instancecache.Options{MaxAge: time.Minute})
	}
	return &Zones{lookup: opts.Lookup, opts: opts}, nil
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
