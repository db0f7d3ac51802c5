package providertest

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Option describes the cloud or the provider that New builds.
type Option func(*settings)

// settings is what the options describe.
type settings struct {
	cfg    provider.Config
	fake   fake.Config
	faults *faultinject.Config
	opts   provider.Options
	errs   []error
}

// WithFake describes the fake cloud in Go: its instances, page size, address pools,
// provisioning and capabilities (see package fake). It replaces the cloud an earlier
// option described. A zero Region is the config's region, else fake.DefaultRegion.
func WithFake(cfg fake.Config) Option {
	return func(s *settings) { s.fake = cfg }
}

// WithYAML describes the provider and the cloud in YAML: a cloud config file of the
// built-in provider, as given to the cloud-controller-manager with --cloud-config (see
// docs/reference/config.md), whose `fake:` section is the cloud. It is read
// as provider.ReadConfig reads the file, strictly: an unknown key is an error naming it
// and its line. It replaces the config the earlier options set, and the cloud when it has
// a `fake:` section. Keys it leaves out take this package's defaults (DefaultClusterID,
// DefaultQPS, DefaultBurst, DefaultMaxAttempts, routes on), else the provider's.
func WithYAML(cloudConfig string) Option {
	return func(s *settings) {
		cfg, section, hasFake, err := parseYAML(cloudConfig, s.opts.ProviderName)
		if err != nil {
			s.errs = append(s.errs, err)
			return
		}
		s.cfg = cfg
		if hasFake {
			s.fake = section
		}
	}
}

// WithConfig changes the provider's config (the Go form of the cloud config file): tweak
// gets the config the earlier options set, zero where nothing did. Fields left zero take
// this package's defaults (DefaultClusterID, DefaultQPS, DefaultBurst,
// DefaultMaxAttempts), else the provider's; Enable.Routes left nil means on when the
// cloud has routes. For example, to check retries:
//
//	providertest.WithConfig(func(c *provider.Config) { c.CloudAPI.Retry.MaxAttempts = 4 })
func WithConfig(tweak func(*provider.Config)) Option {
	return func(s *settings) {
		if tweak == nil {
			s.errs = append(s.errs, errors.New("WithConfig: the function is nil"))
			return
		}
		tweak(&s.cfg)
	}
}

// WithFaults puts a fault injector configured with cfg between the provider and the fake
// (Cloud.Faults), enabled: see package faultinject. WithFaults(faultinject.Config{})
// injects nothing until the test scripts faults (Cloud.Faults.Script) or sets rules. A
// cfg that faultinject.Config.Validate rejects fails New.
func WithFaults(cfg faultinject.Config) Option {
	return func(s *settings) {
		if err := cfg.Validate(); err != nil {
			s.errs = append(s.errs, fmt.Errorf("WithFaults: %w", err))
			return
		}
		s.faults = &cfg
	}
}

// WithOptions sets the provider's options: its name (the scheme of provider IDs, the
// prefix of metric names), the provider ID template and the annotation prefix of an
// adapter whose behaviour the test reproduces. A nil Metrics is a registry of the test's
// own. A non-nil Clock replaces the clock New makes, for the provider and the fake;
// Advance then fails the test.
func WithOptions(opts provider.Options) Option {
	return func(s *settings) { s.opts = opts }
}

// parseYAML reads a cloud config of the built-in provider: the config with only the keys
// the file sets where this package has defaults of its own, and its `fake:` section.
func parseYAML(doc, providerName string) (provider.Config, fake.Config, bool, error) {
	if providerName == "" {
		providerName = provider.DefaultProviderName
	}
	cfg, err := provider.ReadConfig(strings.NewReader(doc), providerName)
	if err != nil {
		return provider.Config{}, fake.Config{}, false, fmt.Errorf("WithYAML: %w", err)
	}
	switch cfg.Backend {
	case "", fake.SectionName:
		cfg.Backend = fake.SectionName
	default:
		return provider.Config{}, fake.Config{}, false, fmt.Errorf("WithYAML: backend: %q is not the fake cloud; leave the key out or write %q", cfg.Backend, fake.SectionName)
	}
	section, ok, err := provider.Section[fake.Config](cfg, fake.SectionName)
	if err != nil {
		return provider.Config{}, fake.Config{}, false, fmt.Errorf("WithYAML: %w", err)
	}
	// ReadConfig filled in the provider's defaults; put back what the file says where this
	// package's defaults differ, so that they apply to the keys the file leaves out.
	var literal struct {
		CloudAPI struct {
			QPS   float64 `yaml:"qps"`
			Burst int     `yaml:"burst"`
			Retry struct {
				MaxAttempts int `yaml:"maxAttempts"`
			} `yaml:"retry"`
		} `yaml:"cloudAPI"`
	}
	if err := yaml.Unmarshal([]byte(doc), &literal); err != nil {
		// ReadConfig decoded the same document strictly; this cannot fail after it.
		return provider.Config{}, fake.Config{}, false, fmt.Errorf("WithYAML: %w", err)
	}
	cfg.CloudAPI.QPS = literal.CloudAPI.QPS
	cfg.CloudAPI.Burst = literal.CloudAPI.Burst
	cfg.CloudAPI.Retry.MaxAttempts = literal.CloudAPI.Retry.MaxAttempts
	return *cfg, section, ok, nil
}
