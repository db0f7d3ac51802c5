package cloudclient

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The values of the class label of the errors metric.
const (
	classNotFound  = "not_found"
	classConflict  = "conflict"
	classThrottled = "throttled"
	classInvalid   = "invalid"
	classTransient = "transient"
	classUnknown   = "unknown"
)

// classLabel returns the class label for a class returned by cloudapi.ClassOf.
func classLabel(class error) string {
	switch {
	case class == nil:
		return classUnknown
	case errors.Is(class, cloudapi.ErrNotFound):
		return classNotFound
	case errors.Is(class, cloudapi.ErrConflict):
		return classConflict
	case errors.Is(class, cloudapi.ErrThrottled):
		return classThrottled
	case errors.Is(class, cloudapi.ErrInvalidRequest):
		return classInvalid
	case errors.Is(class, cloudapi.ErrTransient):
		return classTransient
	}
	return classUnknown
}

// clientMetrics are the metrics of one Client; Clients of the same provider in the same
// registry share them.
type clientMetrics struct {
	duration  *metrics.HistogramVec // operation
	errors    *metrics.CounterVec   // operation, class
	throttled *metrics.CounterVec   // operation
	retries   *metrics.CounterVec   // operation
	requests  *metrics.CounterVec   // operation
	wait      *metrics.Histogram
}

// newClientMetrics creates the metrics for provider (already reduced to [a-z0-9_]) and
// registers them with reg, reusing metrics of the same name that reg already has.
func newClientMetrics(reg Registerer, provider string) (*clientMetrics, error) {
	const namespace = "cloudprovider"
	subsystem := provider + "_api"
	m := &clientMetrics{
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "request_duration_seconds",
			Help:           "Duration of one attempt of a cloud API call, by operation, whatever its outcome.",
			Buckets:        metrics.ExponentialBuckets(0.005, 2.5, 10),
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation"}),
		errors: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "request_errors_total",
			Help:           "Attempts of cloud API calls that returned an error, by operation and error class (not_found, conflict, throttled, invalid, transient, unknown).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation", "class"}),
		throttled: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "throttled_total",
			Help:           "Attempts of cloud API calls that the cloud refused because of its rate limit, by operation.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation"}),
		retries: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "retries_total",
			Help:           "Retries of cloud API calls (attempts after the first), by operation.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation"}),
		requests: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "extra_requests_total",
			Help:           "Requests an attempt of a cloud API call made beyond its first, as the adapter reports them (cloudapi.Request): an asynchronous action's polls, pages an SDK reads by itself; each waited for the rate limiter. By operation.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation"}),
		wait: metrics.NewHistogram(&metrics.HistogramOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "rate_limiter_wait_seconds",
			Help:           "Time an attempt of a cloud API call waited for the client-side rate limiter and for the cloud's Retry-After before it was sent.",
			Buckets:        metrics.ExponentialBuckets(0.001, 4, 9),
			StabilityLevel: metrics.ALPHA,
		}),
	}
	var errs []error
	var err error
	if m.duration, err = register(reg, m.duration); err != nil {
		errs = append(errs, err)
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		errs = append(errs, err)
	}
	if m.throttled, err = register(reg, m.throttled); err != nil {
		errs = append(errs, err)
	}
	if m.retries, err = register(reg, m.retries); err != nil {
		errs = append(errs, err)
	}
	if m.requests, err = register(reg, m.requests); err != nil {
		errs = append(errs, err)
	}
	if m.wait, err = register(reg, m.wait); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("registering metrics: %w", errors.Join(errs...))
	}
	return m, nil
}

// register registers m with reg and returns it, or, when reg holds an equal metric
// already, returns that one, so that Clients of one provider share their metrics.
func register[M metrics.Registerable](reg Registerer, m M) (M, error) {
	err := reg.Register(m)
	if err == nil {
		return m, nil
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(M); ok {
			return existing, nil
		}
	}
	return m, fmt.Errorf("metric %s: %w", m.FQName(), err)
}

// NewCounterVec registers a counter named cloudprovider_<provider>_<name> with reg (nil
// means the process-wide legacy registry), or returns the equal one reg holds already, so
// that the provider's metrics that are not about single API calls sit beside the Client's
// under the same name and registry rules.
func NewCounterVec(reg Registerer, provider, name, help string, labels ...string) (*metrics.CounterVec, error) {
	p, reg, err := providerMetric(reg, provider, name)
	if err != nil {
		return nil, err
	}
	return register(reg, metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cloudprovider",
		Subsystem:      p,
		Name:           name,
		Help:           help,
		StabilityLevel: metrics.ALPHA,
	}, labels))
}

// NewHistogramVec registers a histogram named cloudprovider_<provider>_<name> with the
// buckets given, under NewCounterVec's rules.
func NewHistogramVec(reg Registerer, provider, name, help string, buckets []float64, labels ...string) (*metrics.HistogramVec, error) {
	p, reg, err := providerMetric(reg, provider, name)
	if err != nil {
		return nil, err
	}
	return register(reg, metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "cloudprovider",
		Subsystem:      p,
		Name:           name,
		Help:           help,
		Buckets:        buckets,
		StabilityLevel: metrics.ALPHA,
	}, labels))
}

// providerMetric returns the metric name part of provider and the registry a metric of
// the provider's named name goes to: reg, or the legacy registry when reg is nil.
func providerMetric(reg Registerer, provider, name string) (string, Registerer, error) {
	p := metricName(provider)
	if p == "" {
		return "", nil, fmt.Errorf("metric %s: provider name %q has no letter or digit", name, provider)
	}
	if reg == nil {
		reg = RegistererFunc(legacyregistry.Register)
	}
	return p, reg, nil
}
