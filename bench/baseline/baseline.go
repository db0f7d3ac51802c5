package baseline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// DefaultProviderName is the provider name, and the scheme of the provider IDs, when
// Options.ProviderName is empty.
const DefaultProviderName = "baseline"

// Options configure a Cloud.
type Options struct {
	// ClusterID is the value of cloudapi.TagCluster on the load balancers and routes the
	// provider creates and looks for. Required.
	ClusterID string
	// ProviderName is the provider's name and the scheme of its provider IDs
	// ("<name>://<instance ID>"). Default DefaultProviderName.
	ProviderName string
}

// Cloud implements cloudprovider.Interface by passing every call to the cloud.
type Cloud struct {
	client    cloudapi.Client
	opts      Options
	instances *Instances
	lbs       *LoadBalancer // nil when the cloud has no load balancers
	routes    *Routes       // nil when the cloud has no routes
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New returns a Cloud over client. It makes no cloud call.
func New(client cloudapi.Client, opts Options) (*Cloud, error) {
	if client == nil {
		return nil, errors.New("baseline: a cloud client is required")
	}
	if opts.ClusterID == "" {
		return nil, errors.New("baseline: a cluster ID is required")
	}
	if opts.ProviderName == "" {
		opts.ProviderName = DefaultProviderName
	}
	c := &Cloud{client: client, opts: opts}
	c.instances = &Instances{api: client.Instances(), prefix: opts.ProviderName + "://"}
	if api, ok := client.LoadBalancers(); ok {
		c.lbs = &LoadBalancer{api: api, clusterID: opts.ClusterID, instances: c.instances}
	}
	if api, ok := client.Routes(); ok {
		c.routes = &Routes{api: api, clusterID: opts.ClusterID, instances: c.instances}
	}
	return c, nil
}

// Initialize does nothing: the provider records no events.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer returns the load balancer implementation, when the cloud has load balancers.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.lbs == nil {
		return nil, false
	}
	return c.lbs, true
}

// Instances is not offered; the controllers use InstancesV2.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 returns the instance lookups.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones is not offered; InstancesV2 reports zones.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not offered.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes returns the route implementation, when the cloud has routes.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// ProviderName returns the provider's name.
func (c *Cloud) ProviderName() string { return c.opts.ProviderName }

// HasClusterID reports true: New requires one.
func (c *Cloud) HasClusterID() bool { return true }

// listInstances calls ListInstances page by page until keep returns false or the list
// ends.
func listInstances(ctx context.Context, api cloudapi.InstanceAPI, keep func(cloudapi.Instance) bool) error {
	opts := cloudapi.ListOptions{}
	for {
		page, err := api.ListInstances(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing instances: %w", err)
		}
		for _, inst := range page.Items {
			if !keep(inst) {
				return nil
			}
		}
		if page.NextPageToken == "" {
			return nil
		}
		opts.PageToken = page.NextPageToken
	}
}

// instanceID returns the instance ID in a provider ID of the form "<name>://<id>".
func (i *Instances) instanceID(providerID string) (string, error) {
	id, ok := strings.CutPrefix(providerID, i.prefix)
	if !ok || id == "" {
		return "", fmt.Errorf("provider ID %q does not have the form %s<instance ID>", providerID, i.prefix)
	}
	return id, nil
}
