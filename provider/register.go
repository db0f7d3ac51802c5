package provider

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Backend is a cloud adapter as it registers itself: how to build its cloudapi client
// from the cloud config. C is the type of the backend's own config section, decoded
// strictly from the top-level key Name; use struct{} for a backend without one. If *C has
// a method Validate() error, it is called after decoding and its errors are reported with
// the rest of the config's.
type Backend[C any] struct {
	// Name is the backend's name: the value of the config's "backend" key and the
	// top-level key of its section. Required.
	Name string
	// New builds the backend's client from the validated config and the backend's section
	// (the zero C when the file has none). It must not call the cloud: the cloud is
	// first contacted after leader election. The credential is cfg.Credentials.Token.
	New func(cfg *Config, section C) (cloudapi.Client, error)
	// ConfigOptional allows starting without --cloud-config, with every setting at its
	// default. Leave it false for a backend that needs a cluster ID or credentials.
	ConfigOptional bool
	// NeedsToken is true for a backend whose cloud needs a credential: a config without
	// one (the credentials section, cfg.Credentials.Token) is refused with its other
	// problems, and New is never called without one.
	NeedsToken bool
}

// Register registers providerName with cloudprovider.RegisterCloudProvider, served by
// backend and customised by opts (opts.ProviderName is set to providerName). Call it once
// from an adapter package's init; a CCM's main.go then selects the adapter with a blank
// import and --cloud-provider=providerName. Like cloudprovider.RegisterCloudProvider, it
// stops the process (a fatal log line, exit status 255) when providerName is registered
// twice, and also when opts.LoadBalancerSettings, opts.LoadBalancerShape,
// opts.LoadBalancerAliases, opts.EnvFallbacks or opts.NodeLabels are declared wrongly (see
// loadbalancer.Settings.Validate, cloudapi.LoadBalancerShape.Validate,
// loadbalancer.Aliases.Validate, EnvFallback and Options.NodeLabels): a registration
// is code, and a CCM built from a wrong one must not start. The log line names the
// provider and every problem.
func Register[C any](providerName string, backend Backend[C], opts Options) {
	opts.ProviderName = providerName
	if err := errors.Join(opts.LoadBalancerSettings.Validate(), opts.LoadBalancerShape.Validate()); err != nil {
		klog.ErrorS(err, "Invalid load balancer settings or shape in the provider's registration (provider.Options.LoadBalancerSettings, LoadBalancerShape)", "provider", providerName)
		klog.FlushAndExit(klog.ExitFlushTimeout, 255)
	}
	if err := opts.LoadBalancerAliases.Validate(opts.withDefaults().AnnotationPrefix, opts.LoadBalancerSettings); err != nil {
		klog.ErrorS(err, "Invalid annotation aliases in the provider's registration (provider.Options.LoadBalancerAliases)", "provider", providerName)
		klog.FlushAndExit(klog.ExitFlushTimeout, 255)
	}
	if err := errors.Join(validateEnv(opts.EnvFallbacks, backend.Name), checkNodeLabels(opts.NodeLabels)); err != nil {
		klog.ErrorS(err, "Invalid environment fallbacks or Node labels in the provider's registration (provider.Options.EnvFallbacks, NodeLabels)", "provider", providerName)
		klog.FlushAndExit(klog.ExitFlushTimeout, 255)
	}
	cloudprovider.RegisterCloudProvider(providerName, Factory(backend, opts))
}

// Factory returns the cloudprovider.Factory that Register registers: it reads the cloud
// config, validates it with the backend's section, builds the backend's client and
// assembles the provider with New. Tests use it to build a provider from a config file
// without the global registry.
func Factory[C any](backend Backend[C], opts Options) cloudprovider.Factory {
	return func(r io.Reader) (cloudprovider.Interface, error) {
		cloud, err := build(r, backend, opts)
		if err != nil {
			// Return a nil interface, not a typed nil pointer.
			return nil, err
		}
		return cloud, nil
	}
}

func build[C any](r io.Reader, backend Backend[C], opts Options) (*Cloud, error) {
	opts = opts.withDefaults()
	if backend.Name == "" || backend.New == nil {
		return nil, fmt.Errorf("provider %q: the backend registration needs a Name and a New function", opts.ProviderName)
	}
	if r == nil && !backend.ConfigOptional {
		return nil, fmt.Errorf("provider %q needs a cloud config: start the cloud-controller-manager with --cloud-config=<file> (a YAML file with at least cluster.id and a %q section; see the configuration reference in the README)", opts.ProviderName, backend.Name)
	}
	if err := validateEnv(opts.EnvFallbacks, backend.Name); err != nil {
		return nil, fmt.Errorf("provider %q: its environment fallbacks are declared wrongly: %w", opts.ProviderName, err)
	}
	cfg, fromEnv, err := readConfigEnv(r, opts.ProviderName, opts.EnvFallbacks, os.LookupEnv, readTokenFile)
	if err != nil {
		return nil, withEnvNote(err, fromEnv)
	}
	var errs []error
	switch cfg.Backend {
	case "":
		cfg.Backend = backend.Name
	case backend.Name:
	default:
		errs = append(errs, fmt.Errorf("backend: %q is not a backend of provider %q; it has %q", cfg.Backend, opts.ProviderName, backend.Name))
		cfg.Backend = backend.Name
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if backend.NeedsToken && cfg.Credentials.Token == "" {
		tokenEnv, fileEnv := credentialEnv(opts.ProviderName)
		errs = append(errs, fmt.Errorf("credentials: the %q backend needs a token: set credentials.token or credentials.tokenFile, or $%s or $%s", backend.Name, tokenEnv, fileEnv))
	}
	if err := checkSettings(cfg, opts); err != nil {
		errs = append(errs, err)
	}
	section, _, err := Section[C](cfg, backend.Name)
	if err != nil {
		errs = append(errs, err)
	} else if v, ok := any(&section).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", backend.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, withEnvNote(fmt.Errorf("invalid cloud config for provider %q:\n%w", opts.ProviderName, errors.Join(errs...)), fromEnv)
	}
	client, err := backend.New(cfg, section)
	if err != nil {
		return nil, fmt.Errorf("provider %q: building the %q backend: %w", opts.ProviderName, backend.Name, err)
	}
	return New(*cfg, client, opts)
}

// withEnvNote adds to err which keys were read from the environment (fromEnv, as "key
// from $NAME"), so that an error naming such a key names its variable too.
func withEnvNote(err error, fromEnv []string) error {
	if len(fromEnv) == 0 {
		return err
	}
	return fmt.Errorf("%w\n(read from the environment: %s)", err, strings.Join(fromEnv, ", "))
}

// checkSettings checks the adapter's declarations (opts.LoadBalancerSettings,
// opts.LoadBalancerShape and opts.LoadBalancerAliases, the latter for the config's annotation prefix, else the
// adapter's) and the config's loadBalancer.settings against them, every problem at once,
// each naming its key.
func checkSettings(cfg *Config, opts Options) error {
	if err := opts.LoadBalancerSettings.Validate(); err != nil {
		return fmt.Errorf("provider %q: its load balancer settings are declared wrongly: %w", opts.ProviderName, err)
	}
	if err := opts.LoadBalancerShape.Validate(); err != nil {
		return fmt.Errorf("provider %q: its load balancer shape is declared wrongly: %w", opts.ProviderName, err)
	}
	prefix := cfg.LoadBalancer.AnnotationPrefix
	if prefix == "" {
		prefix = opts.withDefaults().AnnotationPrefix
	}
	if err := opts.LoadBalancerAliases.Validate(prefix, opts.LoadBalancerSettings); err != nil {
		return fmt.Errorf("provider %q: its annotation aliases are declared wrongly for the annotation prefix %q: %w", opts.ProviderName, prefix, err)
	}
	_, err := opts.LoadBalancerSettings.Defaults(cfg.LoadBalancer.SettingDefaults)
	if err == nil {
		return nil
	}
	var errs []error
	if multi, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // splitting errors.Join's result to prefix each
		for _, e := range multi.Unwrap() {
			errs = append(errs, fmt.Errorf("loadBalancer.settings.%w", e))
		}
	} else {
		errs = append(errs, fmt.Errorf("loadBalancer.settings.%w", err))
	}
	return errors.Join(errs...)
}
