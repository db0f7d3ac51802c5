package fake_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
)

// newContractCloud returns a NewBackend that builds a fake from cfg holding the
// fixture's instances, handed to the suite through wrap. A cfg with a StateFile gets a
// file of that name of its own per backend, in a new directory (stateDir).
func newContractCloud(cfg fake.Config, wrap func(*fake.Cloud) cloudapi.Client) cloudapitest.NewBackend {
	return func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		cfg := cfg
		if cfg.StateFile != "" {
			cfg.StateFile = filepath.Join(stateDir(t), cfg.StateFile)
		}
		cloud, err := fake.Open(cfg)
		require.NoError(t, err)
		for _, inst := range f.Instances {
			require.NoError(t, cloud.AddInstance(inst))
		}
		return wrap(cloud)
	}
}

func TestContract(t *testing.T) {
	plain := func(c *fake.Cloud) cloudapi.Client { return c }
	for _, tc := range []struct {
		name    string
		backend cloudapitest.NewBackend
	}{
		{"plain", newContractCloud(fake.Config{}, plain)},
		{"provisioning 3 reads", newContractCloud(fake.Config{Provisioning: fake.Provisioning{Reads: 3}}, plain)},
		{"faultinject zero config", newContractCloud(fake.Config{}, func(c *fake.Cloud) cloudapi.Client {
			return faultinject.Wrap(c, faultinject.Config{})
		})},
		{"state file", newContractCloud(fake.Config{StateFile: "state.json", Provisioning: fake.Provisioning{Reads: 3}}, plain)},
		// Every call goes to a new Cloud opened from the file, as if the process had
		// restarted between any two calls: each write the suite saw acknowledged must be
		// in the file. (Provisioning by reads is off: reads are saved with the next write.)
		{"state file, reopened for every call", newContractCloud(fake.Config{StateFile: "state.json"}, func(c *fake.Cloud) cloudapi.Client {
			return reopening{c.Config()}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) { cloudapitest.Run(t, tc.backend) })
	}
}

// reopening is a cloudapi.Client that opens the cloud from its state file for each call.
type reopening struct{ cfg fake.Config }

func (r reopening) open() (*fake.Cloud, error) { return fake.Open(r.cfg) }

func (r reopening) Instances() cloudapi.InstanceAPI                 { return reopenedInstances(r) }
func (r reopening) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return reopenedLBs(r), true }
func (r reopening) Routes() (cloudapi.RouteAPI, bool)               { return reopenedRoutes(r), true }

type (
	reopenedInstances reopening
	reopenedLBs       reopening
	reopenedRoutes    reopening
)

func (r reopenedInstances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	c, err := reopening(r).open()
	if err != nil {
		return nil, err
	}
	return c.Instances().GetInstance(ctx, id)
}

func (r reopenedInstances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	c, err := reopening(r).open()
	if err != nil {
		return nil, err
	}
	return c.Instances().ListInstances(ctx, opts)
}

func (r reopenedLBs) api() (cloudapi.LoadBalancerAPI, error) {
	c, err := reopening(r).open()
	if err != nil {
		return nil, err
	}
	api, _ := c.LoadBalancers()
	return api, nil
}

func (r reopenedLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.GetLoadBalancer(ctx, id)
}

func (r reopenedLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.ListLoadBalancers(ctx, opts)
}

func (r reopenedLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.CreateLoadBalancer(ctx, spec)
}

func (r reopenedLBs) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.UpdateLoadBalancer(ctx, id, update)
}

func (r reopenedLBs) DeleteLoadBalancer(ctx context.Context, id string) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	return api.DeleteLoadBalancer(ctx, id)
}

func (r reopenedRoutes) api() (cloudapi.RouteAPI, error) {
	c, err := reopening(r).open()
	if err != nil {
		return nil, err
	}
	api, _ := c.Routes()
	return api, nil
}

func (r reopenedRoutes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.ListRoutes(ctx, opts)
}

func (r reopenedRoutes) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	return api.CreateRoute(ctx, spec)
}

func (r reopenedRoutes) DeleteRoute(ctx context.Context, id string) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	return api.DeleteRoute(ctx, id)
}
