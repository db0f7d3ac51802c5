package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
	"github.com/ccmkit/ccmkit/loadbalancer"
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
		ProviderName:      opts.ProviderName,
		LoadBalancerShape: opts.LoadBalancerShape,
		QPS:               cfg.CloudAPI.QPS,
		Burst:             cfg.CloudAPI.Burst,
		Timeout:           cfg.CloudAPI.Timeout,
		MaxRetryAfter:     cfg.CloudAPI.MaxRetryAfter,
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

// CreationsHeldMetric is the name, after cloudprovider_<provider>_, of the counter of the
// creates of load balancers that the creation brake (loadBalancer.creationBrake) held:
// Services whose status has an address while the cloud has no load balancer of theirs,
// more of them at once than the brake allows. A rising count means the cloud config
// points at another project or account than the cluster's load balancers are in (or
// they were deleted behind the cluster's back): look at the CreationHeld events.
// Registered only when load balancers are on.
const CreationsHeldMetric = "loadbalancer_creations_held_total"

// creationsHeld returns the hook that counts the creation brake's holds in
// CreationsHeldMetric.
func creationsHeld(opts Options) (func(), error) {
	var reg cloudclient.Registerer
	if opts.Metrics != nil {
		reg = opts.Metrics
	}
	counter, err := cloudclient.NewCounterVec(reg, opts.ProviderName, CreationsHeldMetric,
		"Creates of load balancers that the creation brake held: Services with an address in their status whose load balancer the cloud does not have, more at once than the brake allows.")
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	return func() { counter.WithLabelValues().Inc() }, nil
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

// LoadBalancerSyncMetric is the name, after cloudprovider_<provider>_, of the histogram
// of the durations of the load balancer calls the service controllers make (the upstream
// service controller's and the class controller's), by method (ensure:
// EnsureLoadBalancer, update: UpdateLoadBalancer, delete: EnsureLoadBalancerDeleted) and
// result (success; retry: a load balancer still provisioning, which the controller asks
// about again; error: the controller records a SyncLoadBalancerFailed event on the
// Service, or for an update logs the error, and retries with backoff). Registered only
// when load balancers are on.
const LoadBalancerSyncMetric = "loadbalancer_sync_duration_seconds"

// The values of LoadBalancerSyncMetric's labels.
const (
	syncEnsure  = "ensure"
	syncUpdate  = "update"
	syncDelete  = "delete"
	syncSuccess = "success"
	syncRetry   = "retry"
	syncError   = "error"
)

// measuredLoadBalancer is the LoadBalancer the provider hands to the service controllers:
// package loadbalancer's, with each EnsureLoadBalancer, UpdateLoadBalancer and
// EnsureLoadBalancerDeleted timed in LoadBalancerSyncMetric.
type measuredLoadBalancer struct {
	*loadbalancer.LoadBalancer
	clock    clock.PassiveClock
	duration *metrics.HistogramVec // method, result
}

var _ cloudprovider.LoadBalancer = (*measuredLoadBalancer)(nil)

// measure wraps lb in LoadBalancerSyncMetric, timed by the provider's clock.
func measure(lb *loadbalancer.LoadBalancer, opts Options) (*measuredLoadBalancer, error) {
	var reg cloudclient.Registerer
	if opts.Metrics != nil {
		reg = opts.Metrics
	}
	duration, err := cloudclient.NewHistogramVec(reg, opts.ProviderName, LoadBalancerSyncMetric,
		"Duration of the load balancer calls of the service controllers, by method (ensure, update, delete) and result (success; retry: still provisioning; error).",
		metrics.ExponentialBuckets(0.01, 3, 11), "method", "result")
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &measuredLoadBalancer{LoadBalancer: lb, clock: c, duration: duration}, nil
}

// observe records one call of method that began at start and returned err.
func (m *measuredLoadBalancer) observe(method string, start time.Time, err error) {
	result := syncSuccess
	var retry *api.RetryError
	switch {
	case errors.As(err, &retry):
		result = syncRetry
	case err != nil:
		result = syncError
	}
	m.duration.WithLabelValues(method, result).Observe(m.clock.Since(start).Seconds())
}

// EnsureLoadBalancer is package loadbalancer's, timed.
func (m *measuredLoadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, service *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	start := m.clock.Now()
	status, err := m.LoadBalancer.EnsureLoadBalancer(ctx, clusterName, service, nodes)
	m.observe(syncEnsure, start, err)
	return status, err
}

// UpdateLoadBalancer is package loadbalancer's, timed.
func (m *measuredLoadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, service *corev1.Service, nodes []*corev1.Node) error {
	start := m.clock.Now()
	err := m.LoadBalancer.UpdateLoadBalancer(ctx, clusterName, service, nodes)
	m.observe(syncUpdate, start, err)
	return err
}

// EnsureLoadBalancerDeleted is package loadbalancer's, timed.
func (m *measuredLoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *corev1.Service) error {
	start := m.clock.Now()
	err := m.LoadBalancer.EnsureLoadBalancerDeleted(ctx, clusterName, service)
	m.observe(syncDelete, start, err)
	return err
}
