package cloudclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
)

const (
	// recoveryTime is how long the rate takes to grow by Options.QPS after a decrease: the
	// additive increase is QPS/recoveryTime per second.
	recoveryTime = 10 * time.Second
	// minQPS is the lowest rate that decreases reach (or Options.QPS, if lower). Below it
	// the Retry-After hold alone slows the Client down.
	minQPS = 0.1
)

// call makes one call of the inner client, fn, under the Client's policy: it waits for the
// Retry-After hold and the rate limiter, bounds each attempt with the timeout, records
// metrics and logs, and retries what op may retry. key and value name the resource in
// logs and errors ("id" and the ID, "name" and a name); both are empty for lists.
func call[T any](ctx context.Context, c *Client, op cloudapi.Operation, key, value string, fn func(context.Context) (T, error)) (T, error) {
	return callWith(ctx, c, op, key, value, fn, nil)
}

// beforeRetry runs before each retry of a call, outside any attempt: with the caller's
// context, before the rate limiter, its cloud calls made through the Client as calls of
// their own. done with a nil error ends the call with res; an error ends it with that
// error, as it is.
type beforeRetry[T any] func(ctx context.Context) (res T, done bool, err error)

// callWith is call with a step before each retry (nil: none).
func callWith[T any](ctx context.Context, c *Client, op cloudapi.Operation, key, value string, fn func(context.Context) (T, error), prepare beforeRetry[T]) (T, error) {
	fn = answered(op, fn)
	var zero T
	logger := klog.FromContext(ctx).WithValues("operation", op)
	if key != "" {
		logger = logger.WithValues(key, value)
	}
	r := failure{op: op, what: string(op)}
	if value != "" {
		r.what += " " + value
	}
	if key == "id" {
		r.id = value
	}
	opLabel := string(op)

	var lastErr error
	for attempt := 1; ; attempt++ {
		if attempt > 1 && prepare != nil {
			res, done, err := prepare(ctx)
			if err != nil || done {
				return res, err
			}
		}
		waitStart := c.opts.Clock.Now()
		if err := c.admit(ctx); err != nil {
			return zero, r.notSent(lastErr, attempt-1, err)
		}
		sent := c.opts.Clock.Now()
		c.metrics.wait.Observe(sent.Sub(waitStart).Seconds())
		if attempt > 1 {
			c.metrics.retries.WithLabelValues(opLabel).Inc()
		}

		attemptCtx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		res, err := fn(cloudapi.WithRequestGate(attemptCtx, c.gate(opLabel)))
		// attemptCtx first: when ctx ends, ctx's error is set before attemptCtx's, so this
		// order cannot mistake the end of ctx for a timeout of the attempt.
		timedOut := errors.Is(attemptCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		now := c.opts.Clock.Now()
		took := now.Sub(sent)
		c.metrics.duration.WithLabelValues(opLabel).Observe(took.Seconds())

		if err == nil {
			logger.V(4).Info("Cloud API call", "attempt", attempt, "duration", took)
			return res, nil
		}
		class := cloudapi.ClassOf(err)
		if timedOut && (class == nil || errors.Is(class, cloudapi.ErrTransient)) && !errors.Is(err, cloudapi.ErrTransient) {
			// The inner client answered our own deadline with a context error or an
			// error of no class: say that the attempt timed out, as ErrTransient.
			class = cloudapi.ErrTransient
			err = fmt.Errorf("%w: attempt timed out after %s: %w", cloudapi.ErrTransient, c.opts.Timeout, err)
		}
		c.metrics.errors.WithLabelValues(opLabel, classLabel(class)).Inc()
		logger.V(4).Info("Cloud API call failed", "attempt", attempt, "duration", took, "err", err)
		if class == nil {
			logger.Error(err, "Cloud API returned an error of no cloudapi class; retrying it as transient where that is safe", "attempt", attempt)
		}
		lastErr = err

		if ctx.Err() != nil {
			return zero, r.final(err, attempt, "", nil)
		}
		backoff := c.backoff(attempt)
		wait := backoff
		retryAfter, hasRetryAfter := cloudapi.RetryAfter(err) // none when zero or less
		if hasRetryAfter && retryAfter > c.opts.MaxRetryAfter {
			logger.V(2).Info("Cloud API Retry-After above the cap; waiting for the cap instead", "retryAfter", retryAfter, "maxRetryAfter", c.opts.MaxRetryAfter)
			retryAfter = c.opts.MaxRetryAfter
		}
		if hasRetryAfter && retryAfter > wait {
			wait = retryAfter
		}
		if errors.Is(class, cloudapi.ErrThrottled) {
			c.metrics.throttled.WithLabelValues(opLabel).Inc()
			throttlenote.Record(ctx)
			hold := backoff
			if hasRetryAfter {
				hold = retryAfter
			}
			qps, lowered := c.throttled(now, sent, hold)
			logger.V(2).Info("Cloud API throttled", "attempt", attempt, "retryAfter", retryAfter, "hold", hold, "qps", qps, "lowered", lowered)
		}
		if !retryable(op, class) || attempt >= c.opts.Retry.MaxAttempts ||
			unrepeatable(op) && errors.Is(err, cloudapi.ErrTransient) { // throttled, but also of unknown outcome
			return zero, r.final(err, attempt, "", nil)
		}
		if tooLate(ctx, wait) {
			return zero, r.final(err, attempt, fmt.Sprintf("no retry: the backoff of %s ends after the context's deadline", wait), nil)
		}
		if op.IsWrite() && !errors.Is(class, cloudapi.ErrThrottled) {
			// The write may have been applied; a later ErrNotFound of a delete may be ours.
			r.maybeApplied = true
		}
		logger.V(2).Info("Retrying cloud API call", "attempt", attempt, "backoff", wait, "err", err)
		if err := pace.Sleep(ctx, c.opts.Clock, wait); err != nil {
			return zero, r.final(lastErr, attempt, "stopped waiting to retry", err)
		}
	}
}

// retryable reports whether a failed attempt of op whose error has the given class (nil:
// none) may be retried. This is the policy table of the package documentation.
func retryable(op cloudapi.Operation, class error) bool {
	switch {
	case errors.Is(class, cloudapi.ErrThrottled):
		// The cloud did not apply the request.
		return true
	case class == nil, errors.Is(class, cloudapi.ErrTransient):
		// The outcome is unknown: reads, updates to a desired state and deletes may be
		// repeated; a create may have made a resource, so the layer above looks it up by
		// its tags instead; a target group update is not repeated (see unrepeatable).
		return !unrepeatable(op)
	}
	// ErrNotFound, ErrConflict and ErrInvalidRequest are answers; repeating the request
	// cannot change them.
	return false
}

// isCreate reports whether op creates a resource.
func isCreate(op cloudapi.Operation) bool {
	return op == cloudapi.OpCreateLoadBalancer || op == cloudapi.OpCreateRoute || op == cloudapi.OpCreateTargetGroup
}

// unrepeatable reports whether an attempt of op whose outcome is unknown must not be
// repeated: a create (it may have made the resource), and a target group update, whose
// AddTargets and RemoveTargets describe the difference from the caller's last read and
// which, unlike a load balancer's, this Client cannot read again to re-base (the API has no
// get by ID): the caller reads it again and sends what is still to change.
func unrepeatable(op cloudapi.Operation) bool {
	return isCreate(op) || op == cloudapi.OpUpdateTargetGroup
}

// isDelete reports whether op deletes a resource.
func isDelete(op cloudapi.Operation) bool {
	return op == cloudapi.OpDeleteLoadBalancer || op == cloudapi.OpDeleteRoute || op == cloudapi.OpDeleteTargetGroup
}

// backoff returns the wait before the retry that follows the given attempt (1-based):
// InitialBackoff doubled attempt-1 times, capped at MaxBackoff, shortened by the jitter.
// Nothing overflows, also with a MaxBackoff near the longest time.Duration.
func (c *Client) backoff(attempt int) time.Duration {
	p := c.opts.Retry
	b := p.InitialBackoff
	for i := 1; i < attempt && b < p.MaxBackoff; i++ {
		if b > p.MaxBackoff/2 {
			b = p.MaxBackoff
			break
		}
		b *= 2
	}
	b = min(b, p.MaxBackoff)
	u := min(max(c.opts.Rand(), 0), 1)
	// The share to take off is at most b: computed in float64, it is converted only after
	// it is known to fit, because converting a float64 of 2^63 or more is undefined.
	off := float64(b) * p.Jitter * u
	if off >= float64(b) {
		return 0
	}
	return max(b-time.Duration(off), 0)
}

// gate is the request gate (cloudapi.WithRequestGate) of one attempt of a call of op:
// its first request passes (the attempt was admitted), each later one waits for the
// rate limiter as a call does and is counted in extra_requests_total.
func (c *Client) gate(op string) func(context.Context) error {
	var mu sync.Mutex
	first := true
	return func(ctx context.Context) error {
		mu.Lock()
		wasFirst := first
		first = false
		mu.Unlock()
		if wasFirst {
			return ctx.Err()
		}
		waitStart := c.opts.Clock.Now()
		if err := c.admit(ctx); err != nil {
			return err
		}
		c.metrics.wait.Observe(c.opts.Clock.Now().Sub(waitStart).Seconds())
		c.metrics.requests.WithLabelValues(op).Inc()
		return nil
	}
}

// admit waits until the Client may send one attempt: until the Retry-After hold is over
// and the rate limit gives a slot. It returns ctx's error when ctx ends first, and a
// *waitTooLongError when the wait would end after ctx's deadline.
func (c *Client) admit(ctx context.Context) error {
	limited := c.opts.limited()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := c.opts.Clock.Now()
		c.mu.Lock()
		hold := c.notBefore.Sub(now)
		gen := c.gen
		var delay time.Duration
		var before, after time.Time
		if hold <= 0 && limited {
			c.applyRateLocked(now)
			slot := c.bucket.Next(now)
			delay = slot.Sub(now)
			if delay > 0 && tooLate(ctx, delay) {
				c.mu.Unlock()
				return &waitTooLongError{wait: delay, reason: "the client-side rate limit allows no call before the context's deadline"}
			}
			before = c.bucket.Take(slot)
			after = c.bucket.TAT()
		}
		c.mu.Unlock()

		if hold > 0 {
			throttlenote.Record(ctx) // the cloud throttled this call or another
			if tooLate(ctx, hold) {
				return &waitTooLongError{wait: hold, reason: "the cloud asked to wait until after the context's deadline"}
			}
			if err := pace.Sleep(ctx, c.opts.Clock, hold); err != nil {
				return err
			}
			continue // the hold may have been extended meanwhile
		}
		if delay > 0 {
			if err := pace.Sleep(ctx, c.opts.Clock, delay); err != nil {
				c.mu.Lock()
				if gen == c.gen {
					c.bucket.GiveBack(before, after)
				}
				c.mu.Unlock()
				return err
			}
		}
		if !limited {
			return nil
		}
		// While this call waited for its slot, the cloud may have throttled another one:
		// then wait for the hold, and take a slot at the lowered rate.
		c.mu.Lock()
		current := gen == c.gen && !c.opts.Clock.Now().Before(c.notBefore)
		c.mu.Unlock()
		if current {
			return nil
		}
	}
}

// throttled records a throttled answer at now to an attempt sent at sent: no call may be
// sent before now+hold, and the rate is halved unless it was lowered after sent already
// (that answer came from the rate before the decrease). It returns the rate now in force
// (0: no client-side limit) and whether it was lowered.
func (c *Client) throttled(now, sent time.Time, hold time.Duration) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := now.Add(hold); until.After(c.notBefore) {
		c.notBefore = until
	}
	if !c.opts.limited() {
		return 0, false
	}
	if !c.decreasedAt.IsZero() && !sent.After(c.decreasedAt) {
		return c.rateLocked(now), false
	}
	c.base = max(c.rateLocked(now)/2, min(c.opts.QPS, minQPS))
	c.decreasedAt = now
	// The slots given at the old rate are dropped: their calls take new ones (see
	// admit). A burst of 1 lets no group of calls out after the hold.
	c.gen++
	c.bucket.Reset(now, c.base)
	return c.base, true
}

// rateLocked returns the rate in force at now: Options.QPS, or, after a decrease, the
// rate it was lowered to plus the additive increase since. c.mu must be held.
func (c *Client) rateLocked(now time.Time) float64 {
	if c.decreasedAt.IsZero() {
		return c.opts.QPS
	}
	grown := c.opts.QPS * now.Sub(c.decreasedAt).Seconds() / recoveryTime.Seconds()
	return min(c.opts.QPS, c.base+max(grown, 0))
}

// applyRateLocked sets the bucket to the rate and burst in force at now. The burst is 1
// until the rate is back at Options.QPS. c.mu must be held.
func (c *Client) applyRateLocked(now time.Time) {
	if c.decreasedAt.IsZero() {
		return // never lowered: the bucket has the configured rate and burst
	}
	r := c.rateLocked(now)
	burst := 1
	if r >= c.opts.QPS {
		burst = c.opts.Burst
	}
	c.bucket.Set(r, burst)
}

// tooLate reports whether ctx has a deadline that comes before wait is over.
func tooLate(ctx context.Context, wait time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < wait
}

// waitTooLongError says that a call was not sent because the wait before it would have
// outlasted the context.
type waitTooLongError struct {
	wait   time.Duration
	reason string
}

func (e *waitTooLongError) Error() string { return "not sent: " + e.reason }

// failure builds the errors of one call.
type failure struct {
	op   cloudapi.Operation
	id   string // the resource ID, if the operation names one
	what string // operation and resource, for errors that do not say it themselves
	// maybeApplied is set when a write attempt failed with an unknown outcome.
	maybeApplied bool
}

// final returns the error of a call whose last attempt (number attempts) failed with
// err. It matches everything err matches, and cause too when cause is not nil. note, if
// not empty, says why the call stopped.
func (f *failure) final(err error, attempts int, note string, cause error) error {
	var typed *cloudapi.Error
	if !errors.As(err, &typed) {
		err = fmt.Errorf("%s: %w", f.what, err)
	}
	details := fmt.Sprintf("attempts: %d", attempts)
	if f.maybeApplied && isDelete(f.op) && errors.Is(err, cloudapi.ErrNotFound) {
		details += "; an earlier attempt with an unknown outcome may have deleted it"
	}
	if note != "" {
		details += "; " + note
	}
	if cause != nil {
		return fmt.Errorf("%w (%s: %w)", err, details, cause)
	}
	return fmt.Errorf("%w (%s)", err, details)
}

// notSent returns the error of a call that stopped while it waited to send an attempt,
// with waitErr from admit; lastErr is the error of the attempt before, if any.
func (f *failure) notSent(lastErr error, attempts int, waitErr error) error {
	var tooLong *waitTooLongError
	isTooLong := errors.As(waitErr, &tooLong)
	switch {
	case lastErr != nil && isTooLong:
		return f.final(lastErr, attempts, fmt.Sprintf("no retry: %s (wait %s)", tooLong.reason, tooLong.wait), nil)
	case lastErr != nil:
		return f.final(lastErr, attempts, "stopped waiting to retry", waitErr)
	case isTooLong:
		// Nothing was sent: the call is throttled on the client side, or held by the
		// cloud's Retry-After, and may be made again after tooLong.wait.
		return f.final(&cloudapi.Error{Class: cloudapi.ErrThrottled, Op: f.op, ID: f.id, RetryAfter: tooLong.wait, Err: waitErr}, 0, "", nil)
	default:
		return fmt.Errorf("%s: not sent: %w (attempts: 0)", f.what, waitErr)
	}
}
