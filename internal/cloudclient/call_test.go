package cloudclient_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
)

// errUnclassified is an adapter error that maps onto no cloudapi class.
var errUnclassified = errors.New("connection reset by peer")

// TestRetryPolicy runs every operation against every error class and checks how often the
// inner client is called, what the caller gets, and the metrics. The expectation is
// written out here, independently of the package's own table.
func TestRetryPolicy(t *testing.T) {
	const maxAttempts = 3
	classes := []struct {
		name  string
		err   error
		class error // nil: the error has no class
		label string
	}{
		{"transient", cloudapi.NewError(cloudapi.ErrTransient, "", "", errors.New("503")), cloudapi.ErrTransient, "transient"},
		{"throttled", cloudapi.Throttled("", 0, errors.New("429")), cloudapi.ErrThrottled, "throttled"},
		{"not found", cloudapi.NewError(cloudapi.ErrNotFound, "", "", nil), cloudapi.ErrNotFound, "not_found"},
		{"conflict", fmt.Errorf("name taken: %w", cloudapi.ErrConflict), cloudapi.ErrConflict, "conflict"},
		{"invalid", cloudapi.NewError(cloudapi.ErrInvalidRequest, "", "", nil), cloudapi.ErrInvalidRequest, "invalid"},
		{"unclassified", errUnclassified, nil, "unknown"},
	}
	retried := func(op cloudapi.Operation, class error) bool {
		create := op == cloudapi.OpCreateLoadBalancer || op == cloudapi.OpCreateRoute
		switch {
		case errors.Is(class, cloudapi.ErrThrottled):
			return true
		case class == nil, errors.Is(class, cloudapi.ErrTransient):
			return !create
		}
		return false
	}
	for _, tc := range opCases() {
		for _, cl := range classes {
			t.Run(string(tc.op)+"/"+cl.name, func(t *testing.T) {
				e := newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = maxAttempts })
				calls := 1
				if retried(tc.op, cl.class) {
					calls = maxAttempts
				}
				tc.expect(e.mocks, repeat(cl.err, calls)...) // gomock fails on any other count

				_, err := tc.call(e.ctx, e.client)
				require.Error(t, err)
				assert.ErrorIs(t, err, cl.err, "the inner error is kept")
				assert.Equal(t, cl.class, cloudapi.ClassOf(err), "the class is kept")
				assert.Contains(t, err.Error(), fmt.Sprintf("attempts: %d", calls))

				op := string(tc.op)
				assert.Equal(t, float64(calls), e.counter(t, "request_errors_total", map[string]string{"operation": op, "class": cl.label}))
				assert.Equal(t, float64(calls), e.counter(t, "request_errors_total", nil), "no other class counted")
				assert.Equal(t, float64(calls-1), e.counter(t, "retries_total", map[string]string{"operation": op}))
				wantThrottled := 0.0
				if errors.Is(cl.class, cloudapi.ErrThrottled) {
					wantThrottled = float64(calls)
				}
				assert.Equal(t, wantThrottled, e.counter(t, "throttled_total", map[string]string{"operation": op}))
				n, _ := e.histogram(t, "request_duration_seconds", map[string]string{"operation": op})
				assert.Equal(t, uint64(calls), n, "one duration sample per attempt")
			})
		}
	}
}

func TestSuccessAfterFailures(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", errors.New("503"))
	for _, tc := range opCases() {
		t.Run(string(tc.op), func(t *testing.T) {
			e := newEnv(t)
			// Creates may only retry throttled answers; everything else retries both.
			first := error(transient)
			if tc.op == cloudapi.OpCreateLoadBalancer || tc.op == cloudapi.OpCreateRoute {
				first = cloudapi.Throttled(tc.op, 0, nil)
			}
			want := tc.expect(e.mocks, first, first, nil)

			got, err := tc.call(e.ctx, e.client)
			require.NoError(t, err)
			if want != nil {
				assert.Same(t, want, got)
			}
			// Backoffs 200ms and 400ms (no jitter); nothing else waited.
			assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, e.clock.Waits())
			assert.Equal(t, 2.0, e.counter(t, "retries_total", nil))
		})
	}
}

// TestCreateNotRepeatedWhenThrottledAndTransient checks that an error matching both
// ErrThrottled and ErrTransient, as an adapter that wraps one in the other returns, does
// not repeat a create: its outcome may be unknown.
func TestCreateNotRepeatedWhenThrottledAndTransient(t *testing.T) {
	both := fmt.Errorf("%w: gave up: %w", cloudapi.ErrTransient, cloudapi.Throttled("", time.Second, nil))
	require.Equal(t, cloudapi.ErrThrottled, cloudapi.ClassOf(both), "precondition: classed as throttled")
	for _, tc := range opCases() {
		if tc.op != cloudapi.OpCreateLoadBalancer && tc.op != cloudapi.OpCreateRoute {
			continue
		}
		t.Run(string(tc.op), func(t *testing.T) {
			e := newEnv(t)
			tc.expect(e.mocks, both) // gomock fails on a second call
			_, err := tc.call(e.ctx, e.client)
			require.ErrorIs(t, err, cloudapi.ErrTransient)
			assert.Contains(t, err.Error(), "attempts: 1")
		})
	}
}

func TestDeleteNotFoundAfterUnknownOutcome(t *testing.T) {
	for _, tc := range opCases() {
		if tc.op != cloudapi.OpDeleteLoadBalancer && tc.op != cloudapi.OpDeleteRoute {
			continue
		}
		t.Run(string(tc.op), func(t *testing.T) {
			e := newEnv(t)
			tc.expect(e.mocks,
				cloudapi.NewError(cloudapi.ErrTransient, tc.op, "", context.DeadlineExceeded), // applied, answer lost
				cloudapi.NewError(cloudapi.ErrNotFound, tc.op, "", nil))

			_, err := tc.call(e.ctx, e.client)
			require.ErrorIs(t, err, cloudapi.ErrNotFound)
			assert.True(t, cloudapi.IsNotFound(err))
			assert.NotErrorIs(t, err, cloudapi.ErrTransient, "only the last answer counts")
			assert.Contains(t, err.Error(), "attempts: 2; an earlier attempt with an unknown outcome may have deleted it")
		})
	}
}

// doublings returns n waits that start at first and double up to limit, without
// overflowing.
func doublings(first, limit time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i, d := 0, first; i < n; i++ {
		out[i] = d
		if d > limit/2 {
			d = limit
		} else {
			d *= 2
		}
	}
	return out
}

func TestBackoff(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", nil)
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	tests := []struct {
		name  string
		retry cloudclient.RetryPolicy
		rand  float64
		want  []time.Duration
	}{
		{"defaults without jitter", cloudclient.RetryPolicy{MaxAttempts: 5}, 0, ms(200, 400, 800, 1600)},
		{"capped", cloudclient.RetryPolicy{MaxAttempts: 5, MaxBackoff: 500 * time.Millisecond}, 0, ms(200, 400, 500, 500)},
		{"jitter shortens", cloudclient.RetryPolicy{MaxAttempts: 4}, 0.5, ms(180, 360, 720)},
		{"custom jitter", cloudclient.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, Jitter: 1}, 0.25, ms(750, 1500)},
		{"max backoff defaults to at least initial", cloudclient.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Minute}, 0, []time.Duration{time.Minute, time.Minute}},
		{"doubling saturates at the longest max backoff", cloudclient.RetryPolicy{MaxAttempts: 40, InitialBackoff: time.Second, MaxBackoff: math.MaxInt64}, 0, doublings(time.Second, math.MaxInt64, 39)},
		{"full jitter of the longest backoff", cloudclient.RetryPolicy{MaxAttempts: 2, InitialBackoff: math.MaxInt64, MaxBackoff: math.MaxInt64, Jitter: 1}, 0.75, []time.Duration{math.MaxInt64 / 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *cloudclient.Options) {
				o.Retry = tt.retry
				o.Rand = func() float64 { return tt.rand }
			})
			e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, transient).Times(len(tt.want) + 1)
			_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
			require.ErrorIs(t, err, cloudapi.ErrTransient)
			assert.Equal(t, tt.want, e.clock.Waits())
		})
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration
	}{
		{"longer than the backoff wins", 3 * time.Second, 3 * time.Second},
		{"shorter than the backoff loses", 50 * time.Millisecond, 200 * time.Millisecond},
		{"none: the backoff", 0, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			start := e.clock.Now()
			gomock.InOrder(
				e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.Throttled(cloudapi.OpGetInstance, tt.retryAfter, nil)),
				e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").DoAndReturn(func(context.Context, string) (*cloudapi.Instance, error) {
					assert.Equal(t, tt.want, e.clock.Now().Sub(start), "the retry is sent after the wait")
					return &cloudapi.Instance{ID: "i-1"}, nil
				}),
			)
			_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{tt.want}, e.clock.Waits(), "one wait, as long as the larger of Retry-After and backoff")
		})
	}

	t.Run("transient with Retry-After", func(t *testing.T) {
		e := newEnv(t)
		unavailable := &cloudapi.Error{Class: cloudapi.ErrTransient, Op: cloudapi.OpGetInstance, RetryAfter: 2 * time.Second}
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, unavailable)
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
		_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{2 * time.Second}, e.clock.Waits())
	})
}

// TestRetryAfterIsCapped checks that a Retry-After beyond Options.MaxRetryAfter holds the
// retry and every other call only as long as the cap, that one of zero or less is none,
// and that the clamp is logged with both values.
func TestRetryAfterIsCapped(t *testing.T) {
	const hundredYears = 100 * 365 * 24 * time.Hour
	tests := []struct {
		name       string
		max        time.Duration // Options.MaxRetryAfter
		retryAfter time.Duration
		want       time.Duration // the wait before the retry
		clamped    bool
	}{
		{"a hundred years: the default cap", 0, hundredYears, cloudclient.DefaultMaxRetryAfter, true},
		{"the longest duration: the default cap", 0, math.MaxInt64, cloudclient.DefaultMaxRetryAfter, true},
		{"a configured cap", 30 * time.Second, time.Hour, 30 * time.Second, true},
		{"at the cap", 0, cloudclient.DefaultMaxRetryAfter, cloudclient.DefaultMaxRetryAfter, false},
		{"below the cap", 0, 4 * time.Minute, 4 * time.Minute, false},
		{"negative: none, the backoff", 0, -time.Hour, 200 * time.Millisecond, false},
		{"the most negative: none, the backoff", 0, math.MinInt64, 200 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *cloudclient.Options) { o.MaxRetryAfter = tt.max })
			start := e.clock.Now()
			throttled := &cloudapi.Error{Class: cloudapi.ErrThrottled, Op: cloudapi.OpGetInstance, ID: "i-1", RetryAfter: tt.retryAfter}
			gomock.InOrder(
				e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, throttled),
				e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{ID: "i-1"}, nil),
			)
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
			_, err := e.client.Instances().GetInstance(klog.NewContext(e.ctx, logger), "i-1")
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{tt.want}, e.clock.TakeWaits(), "one wait before the retry")

			// The hold of every other call ends with the retry's wait: a call made now,
			// with a deadline an hour away, goes out at once.
			ctx, cancel := context.WithTimeout(e.ctx, time.Hour)
			defer cancel()
			e.mocks.in.EXPECT().ListInstances(gomock.Any(), listOpts).DoAndReturn(func(context.Context, cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
				assert.Equal(t, tt.want, e.clock.Now().Sub(start), "sent when the hold is over")
				return &cloudapi.InstancePage{}, nil
			})
			_, err = e.client.Instances().ListInstances(ctx, listOpts)
			require.NoError(t, err)
			assert.Empty(t, e.clock.TakeWaits(), "no further hold")

			underlier, ok := logger.GetSink().(ktesting.Underlier)
			require.True(t, ok)
			logs := underlier.GetBuffer().String()
			clampLog := fmt.Sprintf(`INFO Cloud API Retry-After above the cap; waiting for the cap instead operation="GetInstance" id="i-1" retryAfter=%q maxRetryAfter=%q`,
				tt.retryAfter, tt.want)
			if tt.clamped {
				assert.Contains(t, logs, clampLog)
			} else {
				assert.NotContains(t, logs, "above the cap")
			}
		})
	}
}

// TestThrottleHoldsEveryCall checks that a throttled answer holds back the calls of other
// operations too, and that a call that cannot outlive the hold is not sent.
func TestThrottleHoldsEveryCall(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = 1 })
	start := e.clock.Now()
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.Throttled(cloudapi.OpGetInstance, 2*time.Second, nil))
	_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	require.Empty(t, e.clock.Waits(), "no retry with MaxAttempts 1")

	// Within the hold, a call whose context ends before the hold does is not sent: it
	// answers ErrThrottled at once, with the rest of the hold as RetryAfter.
	e.clock.Step(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	_, err = e.client.Instances().ListInstances(ctx, listOpts)
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	retryAfter, ok := cloudapi.RetryAfter(err)
	require.True(t, ok)
	assert.Equal(t, 1500*time.Millisecond, retryAfter)
	assert.Contains(t, err.Error(), "attempts: 0")
	assert.Empty(t, e.clock.Waits())

	// Another operation waits for the rest of the hold, then goes out.
	rts, _ := e.client.Routes()
	e.mocks.rt.EXPECT().ListRoutes(gomock.Any(), listOpts).DoAndReturn(func(context.Context, cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
		assert.Equal(t, 2*time.Second, e.clock.Now().Sub(start))
		return &cloudapi.RoutePage{}, nil
	})
	_, err = rts.ListRoutes(e.ctx, listOpts)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{1500 * time.Millisecond}, e.clock.Waits())

	// After the hold, calls go out at once.
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-2").Return(&cloudapi.Instance{}, nil)
	_, err = e.client.Instances().GetInstance(e.ctx, "i-2")
	require.NoError(t, err)
	assert.Len(t, e.clock.Waits(), 1)
}

func TestNoRetryPastDeadline(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", nil)

	t.Run("backoff", func(t *testing.T) {
		e := newEnv(t, func(o *cloudclient.Options) { o.Retry.InitialBackoff = time.Hour })
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, transient)
		ctx, cancel := context.WithTimeout(e.ctx, time.Minute) // the backoff is an hour
		defer cancel()
		_, err := e.client.Instances().GetInstance(ctx, "i-1")
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.Contains(t, err.Error(), "attempts: 1; no retry")
		assert.Empty(t, e.clock.Waits())
		assert.Equal(t, 0.0, e.counter(t, "retries_total", nil))
	})

	t.Run("rate limit after the backoff", func(t *testing.T) {
		// One call a minute: after the first attempt and its 200ms backoff, the next slot
		// is 59.8s away, beyond the deadline. The retry is not sent, nor counted.
		e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 1.0/60, 1 })
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, transient)
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		_, err := e.client.Instances().GetInstance(ctx, "i-1")
		require.ErrorIs(t, err, cloudapi.ErrTransient, "the last answer is kept")
		assert.NotErrorIs(t, err, cloudapi.ErrThrottled)
		assert.Contains(t, err.Error(), "attempts: 1; no retry: the client-side rate limit")
		assert.Equal(t, []time.Duration{200 * time.Millisecond}, e.clock.Waits())
		assert.Equal(t, 0.0, e.counter(t, "retries_total", nil))
	})
}

func TestAttemptTimeout(t *testing.T) {
	const timeout = 20 * time.Millisecond
	// hang answers when the attempt's context ends, with answer(ctx.Err()).
	hang := func(t *testing.T, answer func(error) error) func(ctx context.Context, id string) (*cloudapi.Instance, error) {
		return func(ctx context.Context, _ string) (*cloudapi.Instance, error) {
			deadline, ok := ctx.Deadline()
			if assert.True(t, ok, "every attempt has a deadline") {
				assert.LessOrEqual(t, time.Until(deadline), timeout)
			}
			<-ctx.Done()
			return nil, answer(ctx.Err())
		}
	}
	tests := []struct {
		name   string
		answer func(error) error
	}{
		{"context error", func(err error) error { return err }},
		{"classified", func(err error) error {
			return cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", err)
		}},
		{"unclassified", func(error) error { return errUnclassified }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *cloudclient.Options) {
				o.Timeout = timeout
				o.Retry.MaxAttempts = 2
			})
			e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").DoAndReturn(hang(t, tt.answer)).Times(2)
			_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
			require.ErrorIs(t, err, cloudapi.ErrTransient, "a timed-out attempt is transient")
			assert.False(t, cloudapi.IsNotFound(err), "a timeout is never not found")
			assert.Contains(t, err.Error(), "attempts: 2")
			assert.Equal(t, 2.0, e.counter(t, "request_errors_total", map[string]string{"class": "transient"}))
		})
	}

	t.Run("create is not retried", func(t *testing.T) {
		e := newEnv(t, func(o *cloudclient.Options) { o.Timeout = timeout })
		e.mocks.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).DoAndReturn(func(ctx context.Context, _ cloudapi.RouteSpec) (*cloudapi.Route, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		rts, _ := e.client.Routes()
		_, err := rts.CreateRoute(e.ctx, rtSpec)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.Contains(t, err.Error(), "attempt timed out after 20ms")
	})
}

func TestParentContextStops(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", errors.New("503"))

	t.Run("before the first attempt", func(t *testing.T) {
		e := newEnv(t) // no call expected
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := e.client.Instances().GetInstance(ctx, "i-1")
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, cloudapi.ErrTransient, cloudapi.ClassOf(err), "the outcome is unknown, not not found")
		assert.Contains(t, err.Error(), "attempts: 0")
	})

	t.Run("during an attempt", func(t *testing.T) {
		e := newEnv(t)
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").DoAndReturn(func(context.Context, string) (*cloudapi.Instance, error) {
			cancel()
			return nil, transient
		})
		_, err := e.client.Instances().GetInstance(ctx, "i-1")
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.Contains(t, err.Error(), "attempts: 1")
		assert.Empty(t, e.clock.Waits(), "no backoff")
	})

	t.Run("during the backoff", func(t *testing.T) {
		e := newEnv(t)
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, transient)
		err := e.cancelDuringWait(t, func(ctx context.Context) error {
			_, err := e.client.Instances().GetInstance(ctx, "i-1")
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, cloudapi.ErrTransient, "the last answer is kept")
		assert.Contains(t, err.Error(), "attempts: 1; stopped waiting to retry")
		assert.Equal(t, 0.0, e.counter(t, "retries_total", nil), "no retry was made")
	})

	t.Run("during the rate limiter wait", func(t *testing.T) {
		e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 1, 1 })
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
		_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
		require.NoError(t, err)

		err = e.cancelDuringWait(t, func(ctx context.Context) error {
			_, err := e.client.Instances().GetInstance(ctx, "i-1")
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []time.Duration{time.Second}, e.clock.Waits())
	})
}

func TestUnclassifiedErrorIsLogged(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = 2 })
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, errUnclassified)
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{ID: "i-1"}, nil)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	ctx := klog.NewContext(context.Background(), logger)
	_, err := e.client.Instances().GetInstance(ctx, "i-1")
	require.NoError(t, err)

	underlier, ok := logger.GetSink().(ktesting.Underlier)
	require.True(t, ok)
	logs := underlier.GetBuffer().String()
	for _, want := range []string{
		`ERROR Cloud API returned an error of no cloudapi class; retrying it as transient where that is safe err="connection reset by peer" operation="GetInstance" id="i-1" attempt=1`,
		`INFO Retrying cloud API call operation="GetInstance" id="i-1" attempt=1 backoff="200ms"`,
		`INFO Cloud API call operation="GetInstance" id="i-1" attempt=2`,
	} {
		assert.Contains(t, logs, want)
	}
	assert.Equal(t, 1.0, e.counter(t, "request_errors_total", map[string]string{"class": "unknown"}))
}

func TestUnclassifiedErrorIsReturnedAsIs(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = 1 })
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, errUnclassified)
	_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
	require.ErrorIs(t, err, errUnclassified)
	assert.Nil(t, cloudapi.ClassOf(err), "not reclassified")
	assert.True(t, strings.HasPrefix(err.Error(), "GetInstance i-1: connection reset by peer"), err.Error())
}

// TestThrottleNotes checks that a call records into its context's note a throttled answer
// and a wait for the hold, also when the call then succeeds, and nothing otherwise.
func TestThrottleNotes(t *testing.T) {
	e := newEnv(t)
	throttled := cloudapi.Throttled(cloudapi.OpGetInstance, 2*time.Second, nil)

	ctx, first := throttlenote.With(e.ctx)
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, throttled)
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
	_, err := e.client.Instances().GetInstance(ctx, "i-1")
	require.NoError(t, err, "retried after the hold")
	// The throttled answer; its retry waited out the hold before it asked to be admitted.
	assert.Equal(t, int64(1), first.Count())

	ctx, calm := throttlenote.With(e.ctx)
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-2").Return(&cloudapi.Instance{}, nil)
	_, err = e.client.Instances().GetInstance(ctx, "i-2")
	require.NoError(t, err)
	assert.Zero(t, calm.Count(), "the hold is over")

	// Another call's throttled answer holds this one: noted, though this one succeeds.
	e = newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = 1 })
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-3").Return(nil, throttled)
	_, err = e.client.Instances().GetInstance(e.ctx, "i-3") // no note: nothing to record
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	ctx, held := throttlenote.With(e.ctx)
	e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
	_, err = e.client.Instances().GetInstance(ctx, "i-1")
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{2 * time.Second}, e.clock.Waits())
	assert.Equal(t, int64(1), held.Count())
}
