package provider

import (
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// MetricsRegistry is where the cloud API metrics are registered.
type MetricsRegistry = metrics.KubeRegistry

// instrument wraps client in the one decorator every sub-interface calls the cloud
// through: rate limit and throttle backoff, retries, per-attempt timeouts, metrics and
// logging, tuned by the config's cloudAPI section. cloudAPI.unlimited is QPS 0, the
// client's "no client-side limit".
func instrument(client cloudapi.Client, cfg Config, opts Options) (cloudapi.Client, error) {
	copts := cloudclient.Options{
		ProviderName:  opts.ProviderName,
		QPS:           cfg.CloudAPI.QPS,
		Burst:         cfg.CloudAPI.Burst,
		Timeout:       cfg.CloudAPI.Timeout,
		MaxRetryAfter: cfg.CloudAPI.MaxRetryAfter,
		Retry: cloudclient.RetryPolicy{
			MaxAttempts:    cfg.CloudAPI.Retry.MaxAttempts,
			InitialBackoff: cfg.CloudAPI.Retry.InitialBackoff,
			MaxBackoff:     cfg.CloudAPI.Retry.MaxBackoff,
		},
	}
	if cfg.CloudAPI.Unlimited {
		copts.QPS, copts.Burst = 0, 0
	}
	if opts.Metrics != nil {
		copts.Registry = opts.Metrics
	}
	c, err := cloudclient.New(client, copts)
	if err != nil {
		return nil, err
	}
	return c, nil
}
