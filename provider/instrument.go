package provider

import (
	"fmt"

	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
	"github.com/ccmkit/ccmkit/sweeper"
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

// InstanceChecksMetric is the name, after cloudprovider_<provider>_, of the counter of
// answers "instance gone" that the instance snapshot checked instead of trusting, by
// reason (list_failing, list_shrank, brake) and result (gone, exists, refused, error). A
// rising list_failing/refused or list_shrank/exists count means the cloud answers
// not-found for instances that exist: look at the adapter's error mapping and the cloud's
// health. A rising brake/refused count means the deletion brake (nodes.deletionBrake)
// keeps Nodes whose instances the cloud answers gone: look at the credentials and the
// project the cloud config points at, and at the InstanceGoneRefused events.
const InstanceChecksMetric = "instance_gone_checks_total"

// instanceChecks returns the hook that counts the snapshot's checks in
// InstanceChecksMetric.
func instanceChecks(opts Options) (func(reason, result string), error) {
	var reg cloudclient.Registerer
	if opts.Metrics != nil {
		reg = opts.Metrics
	}
	counter, err := cloudclient.NewCounterVec(reg, opts.ProviderName, InstanceChecksMetric,
		"Answers \"instance gone\" that were checked instead of trusted: a GetInstance not found while the instance list fails (reason list_failing, result refused), an instance a shrunken list lost (reason list_shrank; result gone, exists or error), or an answer gone that the deletion brake held back (reason brake, result refused).",
		"reason", "result")
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	return func(reason, result string) {
		counter.WithLabelValues(reason, result).Inc()
	}, nil
}

// SweptMetric is the name, after cloudprovider_<provider>_, of the counter of the
// sweeper's deletes of orphaned resources, by kind (load_balancer, route, target_group)
// and result (deleted, failed, kept: a target group the cloud refused to delete as in
// use). Registered only when sweeper.enabled is true.
const SweptMetric = "swept_total"

// sweptCounter returns the hook that counts the sweeper's deletes in SweptMetric.
func sweptCounter(opts Options) (func(kind sweeper.Kind, result string), error) {
	var reg cloudclient.Registerer
	if opts.Metrics != nil {
		reg = opts.Metrics
	}
	counter, err := cloudclient.NewCounterVec(reg, opts.ProviderName, SweptMetric,
		"Deletes of orphaned cloud resources by the sweeper: load balancers whose Service and routes whose Node is gone, target groups no load balancer names, by kind (load_balancer, route, target_group) and result (deleted, failed, kept: in use).",
		"kind", "result")
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	return func(kind sweeper.Kind, result string) {
		counter.WithLabelValues(string(kind), result).Inc()
	}, nil
}
