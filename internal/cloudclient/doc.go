// Package cloudclient is the decorator that ccmkit puts around every cloudapi.Client: the
// one place for client-side rate limiting, the cloud's Retry-After, retries with backoff
// and jitter, per-attempt timeouts, metrics and logging. Everything above it (instances,
// zones, routes, load balancers) calls the cloud through a *Client and does none of that
// itself; an adapter below it does none of it either.
//
//	c, err := cloudclient.New(adapter, cloudclient.Options{ProviderName: "example", QPS: 20, Burst: 40})
//
// # Retries
//
// A call makes at most RetryPolicy.MaxAttempts attempts. Whether a failed attempt is
// retried depends on the operation and on the class of its error (cloudapi.ClassOf):
//
//	operation                              Transient  Throttled  NotFound  Conflict  InvalidRequest
//	Get*, List* (reads)                    retry      retry      final     final     final
//	UpdateLoadBalancer                     retry      retry      final     final     final
//	Delete* (load balancer, route, group)  retry      retry      final     final     final
//	Create* (load balancer, route, group)  final      retry      final     final     final
//	UpdateTargetGroup                      final      retry      final     final     final
//
// Target groups (cloudapi.TargetGroupAPI) pass through when the inner client offers them
// (cloudapi.TargetGroups). A target group update whose outcome is unknown is not repeated:
// its AddTargets and RemoveTargets describe the difference from the caller's last read,
// and the API has no get by ID to re-base them on; the caller reads the group again.
//
// An attempt that outlives Options.Timeout while the caller's context is still alive is
// Transient (its error then matches cloudapi.ErrTransient). An error of no class at all
// is retried as Transient too, but it is logged as an adapter bug, counted with class
// "unknown" and returned as it is, not reclassified. Throttled attempts were not applied
// by definition, so every operation retries them (a create not when its error matches
// cloudapi.ErrTransient as well: its outcome may be unknown). An update sets a whole
// desired state and may be repeated, but its Changes describe the difference from the
// caller's last read: after an attempt of unknown outcome the repeat reads the load
// balancer again and sends only the changes still to be made (none left: the read is the
// result), so an adapter with fine-grained calls never repeats applied ones. A create whose outcome is unknown may have made the
// resource: it is never repeated here, and the layer above looks the resource up by its
// owner tags before it creates again.
//
// A delete is repeated after a Transient failure; when the repeat answers ErrNotFound,
// the first attempt may have deleted the resource, and the call returns that ErrNotFound
// (its message says so). Callers treat ErrNotFound from a delete as "already gone".
//
// The wait before retry n (n = 1, 2, ...) is InitialBackoff * 2^(n-1), capped at
// MaxBackoff, shortened by a random share of up to Jitter; a longer Retry-After from the
// cloud wins.
//
// # Retry-After
//
// A Retry-After (cloudapi.Error.RetryAfter) sets the wait before the retry and the hold
// of every call (below). It is capped at Options.MaxRetryAfter, DefaultMaxRetryAfter (5
// minutes) unless set: a longer one is cut to the cap and logged at V(2) with both
// values, so that a wrong or hostile answer ("retry after 100 years") cannot stop every
// controller; a cloud that needs longer answers the next call throttled again. A
// Retry-After of zero or less is none. The error returned to the caller is still the
// cloud's, with the cloud's own value. The caller's context ends the call at once, also in the middle of a wait;
// a wait that would outlast the context's deadline is not started. The error of the call
// is the last attempt's error, still matching its class with errors.Is, with the number of
// attempts in its message.
//
// # Rate limiting and throttling
//
// All operations and goroutines share one token bucket of Options.QPS and Options.Burst;
// a call waits for its turn (its slot) unless the wait would outlast its context, and
// then fails at once with ErrThrottled and the wait as RetryAfter, without being sent.
// When the cloud answers ErrThrottled, the Client reacts for every call, not only the
// throttled one:
//
//   - Hold: no call is sent before the throttled answer's time plus its Retry-After (or,
//     if the cloud gave none, the backoff of the throttled attempt). A call whose context
//     ends before the hold does fails at once with ErrThrottled, without being sent.
//   - Multiplicative decrease: the rate is halved, with a burst of 1, so that the calls
//     that waited for the hold leave one by one. Answers to attempts sent before the last
//     decrease do not halve it again: they tell about the old rate.
//   - Additive increase: the rate then grows back linearly, by QPS every 10 seconds, and
//     the burst returns once the rate is back at QPS.
//
// So after the first throttled answer the rate that reaches the cloud, throttled calls
// included, stays at about the rate that the cloud allows: it swings between half of it
// and slightly above it, and probes above it slowly, one call at a time, instead of with
// a burst after every hold. Without a client-side limit (QPS zero) only the hold applies,
// and the calls held back go out together when it ends.
//
// A call whose context carries an internal/throttlenote note records into it every
// throttled answer and every wait for a hold, also when the call then succeeds: that is how
// the load balancers tell a Service that the cloud throttled its sync.
//
// # Metrics
//
// With <p> the provider name reduced to [a-z0-9_], all ALPHA:
//
//	cloudprovider_<p>_api_request_duration_seconds{operation}  histogram, one sample per attempt
//	cloudprovider_<p>_api_request_errors_total{operation,class} failed attempts; class is
//	    not_found, conflict, throttled, invalid, transient or unknown
//	cloudprovider_<p>_api_throttled_total{operation}           attempts the cloud throttled
//	cloudprovider_<p>_api_retries_total{operation}             attempts after the first
//	cloudprovider_<p>_api_rate_limiter_wait_seconds            histogram, wait before each attempt
//
// Not-found answers are counted as errors of class not_found, but they are answers, not
// failures: they are not retried and do not slow the Client down.
//
// # Logging
//
// Through klog.FromContext(ctx): every attempt at V(4) (operation, resource, attempt,
// duration, error), every retry and every throttled answer at V(2) (with the backoff,
// Retry-After, hold and new rate), and an error of no cloudapi class as an error.
package cloudclient
