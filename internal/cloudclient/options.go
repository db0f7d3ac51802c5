package cloudclient

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Defaults used when the matching field of Options or RetryPolicy is zero.
const (
	// DefaultMaxAttempts is the default RetryPolicy.MaxAttempts: the first attempt and up
	// to three retries.
	DefaultMaxAttempts = 4
	// DefaultInitialBackoff is the default RetryPolicy.InitialBackoff.
	DefaultInitialBackoff = 200 * time.Millisecond
	// DefaultMaxBackoff is the default RetryPolicy.MaxBackoff.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultJitter is the default RetryPolicy.Jitter.
	DefaultJitter = 0.2
	// DefaultTimeout is the default Options.Timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetryAfter is the default Options.MaxRetryAfter. The throttling windows
	// the big clouds' APIs publish are seconds to a minute, so five minutes honours every
	// real Retry-After; longer than that, a wrong or hostile header would stop node
	// initialization, node lifecycle and the service controller for longer than their own
	// resync periods. A cloud that really needs longer answers the next call throttled
	// again and the hold starts over, so it still sees about one call per five minutes.
	DefaultMaxRetryAfter = 5 * time.Minute
)

// Bounds of the client-side rate limit; Validate refuses values outside.
const (
	// MinQPS is the lowest rate Options.QPS may ask for, one call every 1000 s. A slower
	// rate is no rate limit anyone means, and below about 1e-10 the interval between two
	// calls would overflow time.Duration.
	MinQPS = 0.001
	// MaxBurst is the largest Options.Burst: ten thousand calls at once is more than any
	// cloud API accepts, and at MinQPS the rate limiter's tolerance (Burst-1 intervals)
	// stays far within time.Duration.
	MaxBurst = 10000
)

// Options configure a Client. Only ProviderName is required; every other zero field means
// the documented default.
type Options struct {
	// LoadBalancerShape is what the cloud's load balancers do not keep: after an update
	// of unknown outcome, the changes sent again are those against a fresh read compared
	// as cloudapi.LoadBalancerShape.Comparable does, so a part the cloud does not keep is
	// never taken for an update not applied. The zero value keeps everything.
	LoadBalancerShape cloudapi.LoadBalancerShape
	// ProviderName names the cloud in metric names: cloudprovider_<name>_api_*. It is
	// lower-cased and every character outside [a-z0-9_] becomes "_", so "My-Cloud" gives
	// cloudprovider_my_cloud_api_request_duration_seconds. It must contain at least one
	// letter or digit.
	ProviderName string

	// QPS is the most calls per second the Client sends to the cloud, summed over all
	// operations and goroutines (a token bucket), at least MinQPS. Zero means no
	// client-side limit: the Client then only honours the cloud's Retry-After and cannot
	// lower its rate on throttling, so production configurations should set it. A
	// negative rate, NaN, +Inf and a rate below MinQPS are errors.
	//
	// After the cloud throttles a call, the Client halves its rate (at most once per round
	// of calls sent at the previous rate) and lets it grow back linearly by QPS every
	// 10 seconds, never above QPS; see the package documentation.
	QPS float64
	// Burst is how many calls may be sent at once after a quiet period, while the Client
	// runs at its full QPS; at most MaxBurst. Zero means ceil(QPS), at least 1 and at most
	// MaxBurst. It is ignored when QPS is zero (no limit). While the rate is lowered after
	// throttling the burst is 1.
	Burst int

	// MaxRetryAfter caps the wait that a Retry-After from the cloud imposes, on the retry
	// of the call and on the hold of every other call; a longer Retry-After is cut to it
	// (and logged at V(2) with both values). A Retry-After of zero or less is none. Zero
	// means DefaultMaxRetryAfter; negative is an error.
	MaxRetryAfter time.Duration

	// Retry says how often and how patiently failed calls are retried.
	Retry RetryPolicy

	// Timeout bounds every attempt (one call of the inner client), not the whole call with
	// its retries and waits: the caller's context bounds those. Zero means DefaultTimeout.
	Timeout time.Duration

	// Registry receives the Client's metrics. Nil means the process-wide
	// k8s.io/component-base/metrics/legacyregistry, which is what the controller manager
	// serves on /metrics. Clients with the same ProviderName in the same Registry share
	// their metrics (the second one reuses the collectors the first registered), so
	// creating several Clients never fails or panics on duplicate registration. Tests that
	// read metric values pass their own metrics.NewKubeRegistry().
	Registry Registerer

	// Clock is the Client's clock. It times the rate limiter, Retry-After holds and the
	// request duration metric, and every wait of the Client (rate limiter, Retry-After,
	// backoff) is a timer of it that ends early when the call's context does. Nil means
	// the real clock, clock.RealClock{}. Tests pass a fake clock (k8s.io/utils/clock/testing)
	// and step it. A wait is not started when it would outlast the context's deadline,
	// which is real time: the Client compares the wait with time.Until(deadline).
	Clock clock.Clock
	// Rand returns a number in [0, 1) that draws the jitter of a backoff; it must be safe
	// for concurrent use. Nil means math/rand/v2. Tests set it to make backoffs exact.
	Rand func() float64
}

// RetryPolicy says how often and how patiently failed calls are retried. Which failures
// are retried depends on the operation and the error class; see the package
// documentation.
type RetryPolicy struct {
	// MaxAttempts is the most attempts one call makes, the first included; 1 means no
	// retries. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry; every further retry waits twice
	// as long as the one before, up to MaxBackoff. Zero means DefaultInitialBackoff.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between two attempts (a longer Retry-After from the cloud
	// still wins). Zero means DefaultMaxBackoff, or InitialBackoff if that is longer.
	MaxBackoff time.Duration
	// Jitter, in (0, 1], is the share by which a backoff is shortened at random, so that
	// calls that failed together do not retry together: a backoff b becomes a value in
	// (b*(1-Jitter), b]. Zero means DefaultJitter. Jitter cannot be turned off; tests make
	// it exact with Options.Rand.
	Jitter float64
}

// Registerer is where a Client registers its metrics. A metrics.KubeRegistry is one; the
// process-wide legacy registry is RegistererFunc(legacyregistry.Register).
type Registerer interface {
	// Register registers one metric. It returns a prometheus.AlreadyRegisteredError when
	// an equal metric is registered already.
	Register(metrics.Registerable) error
}

// RegistererFunc adapts a function such as legacyregistry.Register to a Registerer.
type RegistererFunc func(metrics.Registerable) error

// Register calls f(m).
func (f RegistererFunc) Register(m metrics.Registerable) error { return f(m) }

// Validate reports every problem of the options, joined with errors.Join, or nil. New
// calls it; it is exported so that a configuration can be checked before it is used.
func (o Options) Validate() error {
	var errs []error
	if metricName(o.ProviderName) == "" {
		errs = append(errs, fmt.Errorf("provider name %q has no letter or digit", o.ProviderName))
	}
	switch {
	case math.IsNaN(o.QPS), math.IsInf(o.QPS, 0), o.QPS < 0, o.QPS > 0 && o.QPS < MinQPS:
		errs = append(errs, fmt.Errorf("QPS %v must be 0 (no client-side limit) or a finite rate of at least %v", o.QPS, MinQPS))
	}
	if o.Burst < 0 || o.Burst > MaxBurst {
		errs = append(errs, fmt.Errorf("burst %d must be from 0 (ceil(QPS)) to %d", o.Burst, MaxBurst))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %s", o.Timeout))
	}
	if o.MaxRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("negative max Retry-After %s", o.MaxRetryAfter))
	}
	r := o.Retry
	if r.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("negative retry max attempts %d", r.MaxAttempts))
	}
	if r.InitialBackoff < 0 {
		errs = append(errs, fmt.Errorf("negative retry initial backoff %s", r.InitialBackoff))
	}
	if r.MaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("negative retry max backoff %s", r.MaxBackoff))
	}
	if r.InitialBackoff > 0 && r.MaxBackoff > 0 && r.MaxBackoff < r.InitialBackoff {
		errs = append(errs, fmt.Errorf("retry max backoff %s is below the initial backoff %s", r.MaxBackoff, r.InitialBackoff))
	}
	if math.IsNaN(r.Jitter) || r.Jitter < 0 || r.Jitter > 1 {
		errs = append(errs, fmt.Errorf("retry jitter %v is outside [0, 1]", r.Jitter))
	}
	return errors.Join(errs...)
}

// limited reports whether the options ask for a client-side rate limit.
func (o Options) limited() bool { return o.QPS > 0 }

// withDefaults returns the options with every zero field set to its default. It assumes
// Validate passed.
func (o Options) withDefaults() Options {
	if o.limited() && o.Burst == 0 {
		o.Burst = max(1, int(math.Min(math.Ceil(o.QPS), MaxBurst)))
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.Retry.MaxAttempts == 0 {
		o.Retry.MaxAttempts = DefaultMaxAttempts
	}
	if o.Retry.InitialBackoff == 0 {
		o.Retry.InitialBackoff = DefaultInitialBackoff
	}
	if o.Retry.MaxBackoff == 0 {
		o.Retry.MaxBackoff = max(DefaultMaxBackoff, o.Retry.InitialBackoff)
	}
	if o.Retry.Jitter == 0 {
		o.Retry.Jitter = DefaultJitter
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return o
}

// metricName returns the provider name reduced to [a-z0-9_], or "" when it has no letter
// or digit.
func metricName(provider string) string {
	var b strings.Builder
	alnum := false
	for _, r := range strings.ToLower(provider) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			alnum = true
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if !alnum {
		return ""
	}
	return b.String()
}
