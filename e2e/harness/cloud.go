package harness

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// ProviderName is the --cloud-provider under which the harness registers ccmkit's provider
// over the harness's Cloud. It is the built-in provider's fake backend, with one
// difference: every start of the cloud-controller-manager in this process gets the same
// Cloud (the one Use installed), so a restarted CCM meets the state its predecessor left
// and the harness can inspect and change that state.
const ProviderName = "ccmkit-e2e"

// ProviderIDTemplate is the provider ID format of the harness's provider: the built-in
// provider's, so Nodes look the same as under `--cloud-provider=ccmkit`.
const ProviderIDTemplate = "ccmkit://{id}"

// LoadBalancerSettings are the load balancer settings ProviderName declares, as a cloud's
// adapter declares its own: a size, changed in place, without a default (so that the
// scenarios that do not set it see no setting).
var LoadBalancerSettings = loadbalancer.Settings{{Name: "size", Values: []string{"small", "medium", "large"},
	Doc: "The load balancer's size."}}

// Cloud is the cloud behind the CCM: the fake, described by a cloud config file, behind the
// fault injector (off until enabled).
type Cloud struct {
	// Fake is the in-memory cloud: its state, call counters and load balancer history.
	Fake *fake.Cloud
	// Faults wraps Fake; the CCM calls the cloud through it.
	Faults *faultinject.Client
	// Config is the cloud config file's content, as passed to --cloud-config.
	Config []byte
}

var (
	current  atomic.Pointer[Cloud]
	register sync.Once
)

// NewCloud builds the fake cloud from the `fake:` section of a cloud config for the
// built-in provider (see docs/reference/config.md), behind a fault injector
// configured with faults and switched off (Faults.SetEnabled turns it on). With a
// stateFile in the section the cloud is opened from that file (fake.Open), and shares it
// with every other process that opens it: a CCMProcess over the same cloud config, for one.
func NewCloud(cloudConfig []byte, faults faultinject.Config) (*Cloud, error) {
	cfg, err := provider.ReadConfig(bytes.NewReader(cloudConfig), ProviderName)
	if err != nil {
		return nil, err
	}
	section, ok, err := provider.Section[fake.Config](cfg, fake.SectionName)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the cloud config has no %q section describing the fake cloud", fake.SectionName)
	}
	if section.Region == "" {
		section.Region = cfg.Region
	}
	f, err := fake.Open(section)
	if err != nil {
		return nil, err
	}
	injector := faultinject.Wrap(f, faults)
	injector.SetEnabled(false)
	return &Cloud{Fake: f, Faults: injector, Config: cloudConfig}, nil
}

// Use makes c the cloud of every cloud-controller-manager started from now on in this
// process, and registers ProviderName on first use.
func Use(c *Cloud) {
	register.Do(func() {
		backend := provider.Backend[fake.Config]{
			Name: fake.SectionName,
			New: func(*provider.Config, fake.Config) (cloudapi.Client, error) {
				c := current.Load()
				if c == nil {
					return nil, errors.New("harness: no cloud installed with harness.Use")
				}
				return c.Faults, nil
			},
		}
		provider.Register(ProviderName, backend, provider.Options{ProviderIDTemplate: ProviderIDTemplate, LoadBalancerSettings: LoadBalancerSettings})
	})
	current.Store(c)
}
