package fake_test

import (
	"context"
	"path/filepath"
	"sync"
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
	off, on := false, true
	sizes := cloudapitest.WithSettings(map[string]string{"size": "small"}, map[string]string{"size": "large", "algorithm": "least-connections"})
	for _, tc := range []struct {
		name    string
		backend cloudapitest.NewBackend
		opts    []cloudapitest.Option
	}{
		{"plain", newContractCloud(fake.Config{}, plain), []cloudapitest.Option{sizes}},
		{"hostnames and addresses", newContractCloud(fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com"}}, plain),
			[]cloudapitest.Option{cloudapitest.WithHostnames()}},
		{"hostnames without addresses", newContractCloud(fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com", WithoutAddresses: true}}, plain),
			[]cloudapitest.Option{cloudapitest.WithoutAddresses()}},
		{"network load balancers only: no TLS, no HTTP", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TLS: &off, HTTP: &off}}, plain), nil},
		{"provisioning 3 reads", newContractCloud(fake.Config{Provisioning: fake.Provisioning{Reads: 3}}, plain), nil},
		{"faultinject zero config", newContractCloud(fake.Config{}, func(c *fake.Cloud) cloudapi.Client {
			return faultinject.Wrap(c, faultinject.Config{})
		}), nil},
		{"state file", newContractCloud(fake.Config{StateFile: "state.json", Provisioning: fake.Provisioning{Reads: 3}}, plain), nil},
		// After every write the next call goes to a new Cloud opened from the file, as if
		// the process had restarted: each write the suite saw acknowledged must be in the
		// file. (Provisioning by reads is off: reads are saved with the next write.)
		{"state file, reopened after every write", newContractCloud(fake.Config{StateFile: "state.json"}, func(c *fake.Cloud) cloudapi.Client {
			return &reopening{cfg: c.Config()}
		}), []cloudapitest.Option{sizes}},
		{"routes without tags", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TaglessRoutes: true}}, plain), nil},
		{"routes without tags behind faultinject zero config", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TaglessRoutes: true}}, func(c *fake.Cloud) cloudapi.Client {
			return faultinject.Wrap(c, faultinject.Config{})
		}), nil},
		{"target groups", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}}, plain), nil},
		{"target groups behind faultinject zero config", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}}, func(c *fake.Cloud) cloudapi.Client {
			return faultinject.Wrap(c, faultinject.Config{})
		}), nil},
		{"target groups in a state file, reopened after every write", newContractCloud(fake.Config{StateFile: "state.json", Capabilities: fake.Capabilities{TargetGroups: &on}}, func(c *fake.Cloud) cloudapi.Client {
			return &reopening{cfg: c.Config()}
		}), nil},
		{"state file with hostnames, reopened after every write", newContractCloud(fake.Config{StateFile: "state.json", Hostnames: fake.Hostnames{Domain: "lb.example.com"}}, func(c *fake.Cloud) cloudapi.Client {
			return &reopening{cfg: c.Config()}
		}), []cloudapitest.Option{cloudapitest.WithHostnames()}},
	} {
		t.Run(tc.name, func(t *testing.T) { cloudapitest.Run(t, tc.backend, tc.opts...) })
	}
}

// reopening is a cloudapi.Client that opens the cloud from its state file anew after
// every write: the calls up to the next write share that Cloud.
type reopening struct {
	cfg fake.Config
	mu  sync.Mutex
	cur *fake.Cloud
}

func (r *reopening) cloud() (*fake.Cloud, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		c, err := fake.Open(r.cfg)
		if err != nil {
			return nil, err
		}
		r.cur = c
	}
	return r.cur, nil
}

// wrote makes the next call open the cloud from its file again.
func (r *reopening) wrote() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = nil
}

func (r *reopening) Instances() cloudapi.InstanceAPI                 { return reopenedInstances{r} }
func (r *reopening) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return reopenedLBs{r}, true }
func (r *reopening) Routes() (cloudapi.RouteAPI, bool)               { return reopenedRoutes{r}, true }

// TargetGroups makes reopening a cloudapi.TargetGroupClient when its cloud has target
// groups.
func (r *reopening) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	c, err := r.cloud()
	if err != nil {
		return nil, false
	}
	if _, ok := c.TargetGroups(); !ok {
		return nil, false
	}
	return reopenedGroups{r}, true
}

type reopenedGroups struct{ r *reopening }

func (a reopenedGroups) api() (cloudapi.TargetGroupAPI, error) {
	c, err := a.r.cloud()
	if err != nil {
		return nil, err
	}
	api, _ := c.TargetGroups()
	return api, nil
}

func (a reopenedGroups) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	return api.ListTargetGroups(ctx, opts)
}

func (a reopenedGroups) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	defer a.r.wrote()
	return api.CreateTargetGroup(ctx, spec)
}

func (a reopenedGroups) UpdateTargetGroup(ctx context.Context, id string, u cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	defer a.r.wrote()
	return api.UpdateTargetGroup(ctx, id, u)
}

func (a reopenedGroups) DeleteTargetGroup(ctx context.Context, id string) error {
	api, err := a.api()
	if err != nil {
		return err
	}
	defer a.r.wrote()
	return api.DeleteTargetGroup(ctx, id)
}

type (
	reopenedInstances struct{ r *reopening }
	reopenedLBs       struct{ r *reopening }
	reopenedRoutes    struct{ r *reopening }
)

func (a reopenedInstances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	c, err := a.r.cloud()
	if err != nil {
		return nil, err
	}
	return c.Instances().GetInstance(ctx, id)
}

func (a reopenedInstances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	c, err := a.r.cloud()
	if err != nil {
		return nil, err
	}
	return c.Instances().ListInstances(ctx, opts)
}

func (a reopenedLBs) api() (cloudapi.LoadBalancerAPI, error) {
	c, err := a.r.cloud()
	if err != nil {
		return nil, err
	}
	api, _ := c.LoadBalancers()
	return api, nil
}

func (a reopenedLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	return api.GetLoadBalancer(ctx, id)
}

func (a reopenedLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	return api.ListLoadBalancers(ctx, opts)
}

func (a reopenedLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	defer a.r.wrote()
	return api.CreateLoadBalancer(ctx, spec)
}

func (a reopenedLBs) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	defer a.r.wrote()
	return api.UpdateLoadBalancer(ctx, id, update)
}

func (a reopenedLBs) DeleteLoadBalancer(ctx context.Context, id string) error {
	api, err := a.api()
	if err != nil {
		return err
	}
	defer a.r.wrote()
	return api.DeleteLoadBalancer(ctx, id)
}

func (a reopenedRoutes) api() (cloudapi.RouteAPI, error) {
	c, err := a.r.cloud()
	if err != nil {
		return nil, err
	}
	api, _ := c.Routes()
	return api, nil
}

func (a reopenedRoutes) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	return api.ListRoutes(ctx, opts)
}

func (a reopenedRoutes) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	api, err := a.api()
	if err != nil {
		return nil, err
	}
	defer a.r.wrote()
	return api.CreateRoute(ctx, spec)
}

func (a reopenedRoutes) DeleteRoute(ctx context.Context, id string) error {
	api, err := a.api()
	if err != nil {
		return err
	}
	defer a.r.wrote()
	return api.DeleteRoute(ctx, id)
}
