package faultinject_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

func TestZeroConfigPassesThrough(t *testing.T) {
	backendErr := cloudapi.NewError(cloudapi.ErrConflict, "", "", errors.New("HTTP 409"))
	for _, tc := range allOps() {
		for _, innerErr := range []error{nil, backendErr} {
			t.Run(fmt.Sprintf("%s/err=%v", tc.op, innerErr), func(t *testing.T) {
				m := newMocks(t)
				want := tc.expect(m, 1, innerErr)
				c := faultinject.Wrap(m.client, faultinject.Config{})

				got, err := tc.call(t.Context(), c)

				if innerErr == nil {
					assert.NoError(t, err)
				} else {
					assert.Same(t, innerErr, err, "the inner error comes back as it is")
				}
				if want != nil {
					assert.Same(t, want, got, "the inner result comes back as it is")
				} else {
					assert.Nil(t, got)
				}
				assert.Equal(t, faultinject.OpCounts{Calls: 1, Passed: 1}, c.Injected().Ops[tc.op])
			})
		}
	}
}

func TestZeroConfigAddsNoWait(t *testing.T) {
	m := newMocks(t)
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{ID: "i-1"}, nil)
	s := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{Clock: s})
	_, err := c.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
	assert.Empty(t, s.Waits())
}

func TestCapabilitiesPassThrough(t *testing.T) {
	ctrl := gomock.NewController(t)
	inner := cloudapimock.NewMockClient(ctrl)
	inner.EXPECT().Instances().Return(cloudapimock.NewMockInstanceAPI(ctrl))
	inner.EXPECT().LoadBalancers().Return(nil, false)
	inner.EXPECT().Routes().Return(nil, false)
	c := faultinject.Wrap(inner, faultinject.Config{})

	assert.NotNil(t, c.Instances())
	lb, ok := c.LoadBalancers()
	assert.False(t, ok)
	assert.Nil(t, lb)
	rt, ok := c.Routes()
	assert.False(t, ok)
	assert.Nil(t, rt)

	m := newMocks(t)
	c = faultinject.Wrap(m.client, faultinject.Config{})
	lb, ok = c.LoadBalancers()
	assert.True(t, ok)
	assert.NotNil(t, lb)
	rt, ok = c.Routes()
	assert.True(t, ok)
	assert.NotNil(t, rt)
}

func TestKinds(t *testing.T) {
	const (
		timeout    = 3 * time.Second
		retryAfter = 5 * time.Second
	)
	for _, kind := range []faultinject.Kind{faultinject.Transient, faultinject.Timeout, faultinject.Throttle, faultinject.Ambiguous, faultinject.Refuse} {
		for _, tc := range allOps() {
			for _, how := range []string{"rule", "script"} {
				t.Run(fmt.Sprintf("%s/%s/%s", kind, tc.op, how), func(t *testing.T) {
					m := newMocks(t)
					if kind == faultinject.Ambiguous {
						// The call is applied: the inner client sees it exactly once.
						tc.expect(m, 1, nil)
					}
					s := newClock()
					cfg := faultinject.Config{Timeout: timeout, ThrottleRetryAfter: retryAfter, Clock: s}
					if how == "rule" {
						cfg.Rules = []faultinject.Rule{{Probability: 1, Kind: kind}}
					}
					c := faultinject.Wrap(m.client, cfg)
					if how == "script" {
						c.Script(tc.op, faultinject.Fault{Kind: kind})
					}

					got, err := tc.call(t.Context(), c)

					assert.Nil(t, got, "a faulted call returns no result")
					var cerr *cloudapi.Error
					require.ErrorAs(t, err, &cerr)
					assert.Equal(t, tc.op, cerr.Op)
					assert.Equal(t, tc.id, cerr.ID)
					require.ErrorIs(t, err, faultinject.ErrInjected)
					assert.False(t, cloudapi.IsNotFound(err))

					wantClass, wantSleeps, wantPassed := cloudapi.ErrTransient, []time.Duration(nil), 0
					switch kind {
					case faultinject.Timeout:
						wantSleeps = []time.Duration{timeout}
						require.ErrorIs(t, err, context.DeadlineExceeded)
					case faultinject.Throttle:
						wantClass = cloudapi.ErrThrottled
						ra, ok := cloudapi.RetryAfter(err)
						assert.True(t, ok)
						assert.Equal(t, retryAfter, ra)
					case faultinject.Ambiguous:
						wantPassed = 1
						require.ErrorIs(t, err, context.DeadlineExceeded)
					case faultinject.Refuse:
						wantClass = cloudapi.ErrInvalidRequest
					}
					assert.Equal(t, wantClass, cloudapi.ClassOf(err))
					if !errors.Is(wantClass, cloudapi.ErrThrottled) {
						_, ok := cloudapi.RetryAfter(err)
						assert.False(t, ok)
					}
					assert.Equal(t, wantSleeps, s.Waits())
					assert.Equal(t, faultinject.OpCounts{
						Calls: 1, Passed: wantPassed, Faults: map[faultinject.Kind]int{kind: 1},
					}, c.Injected().Ops[tc.op])
				})
			}
		}
	}
}

func TestAmbiguousHidesTheInnerAnswer(t *testing.T) {
	for _, innerErr := range []error{nil, cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpCreateRoute, "", nil)} {
		t.Run(fmt.Sprintf("err=%v", innerErr), func(t *testing.T) {
			m := newMocks(t)
			m.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).Return(resultOf(innerErr, cloudapi.Route{ID: "rt-1"}), innerErr).Times(1)
			c := faultinject.Wrap(m.client, faultinject.Config{})
			c.Script(cloudapi.OpCreateRoute, faultinject.Fault{Kind: faultinject.Ambiguous})
			rt, ok := c.Routes()
			require.True(t, ok)

			got, err := rt.CreateRoute(t.Context(), rtSpec)

			assert.Nil(t, got)
			assert.Equal(t, cloudapi.ErrTransient, cloudapi.ClassOf(err))
			assert.NotErrorIs(t, err, cloudapi.ErrConflict, "the caller cannot know what the cloud answered")
		})
	}
}

func TestDefaults(t *testing.T) {
	m := newMocks(t)
	s := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{Clock: s})
	c.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Timeout}, faultinject.Fault{Kind: faultinject.Throttle})

	_, err := c.Instances().GetInstance(t.Context(), "i-1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []time.Duration{faultinject.DefaultTimeout}, s.Waits())
	assert.Equal(t, time.Second, faultinject.DefaultTimeout)

	_, err = c.Instances().GetInstance(t.Context(), "i-1")
	ra, ok := cloudapi.RetryAfter(err)
	require.True(t, ok)
	assert.Equal(t, faultinject.DefaultThrottleRetryAfter, ra)
	assert.Equal(t, time.Second, faultinject.DefaultThrottleRetryAfter)
}

func TestErrorMessage(t *testing.T) {
	m := newMocks(t)
	c := faultinject.Wrap(m.client, faultinject.Config{})
	c.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Transient})
	_, err := c.Instances().GetInstance(t.Context(), "i-1")
	assert.EqualError(t, err, "GetInstance i-1: transient failure: injected fault: service unavailable")
}

func TestTimeoutEndsWithTheContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(t *testing.T) context.Context
		wantErr error
	}{
		{name: "deadline", wantErr: context.DeadlineExceeded, ctx: func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}},
		{name: "canceled", wantErr: context.Canceled, ctx: func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMocks(t)
			// The real clock: the wait must end with the context.
			c := faultinject.Wrap(m.client, faultinject.Config{Timeout: time.Hour})
			c.Script(cloudapi.OpDeleteRoute, faultinject.Fault{Kind: faultinject.Timeout})
			rt, _ := c.Routes()

			start := time.Now()
			err := rt.DeleteRoute(tt.ctx(t), "rt-1")

			assert.Less(t, time.Since(start), 10*time.Second)
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, cloudapi.ErrTransient)
			assert.Equal(t, 1, c.Injected().Ops[cloudapi.OpDeleteRoute].Faults[faultinject.Timeout])
		})
	}
}

// callN calls GetInstance n times through c and returns the outcome of each call.
func callN(t *testing.T, c *faultinject.Client, op cloudapi.Operation, n int) []faultinject.Kind {
	t.Helper()
	out := make([]faultinject.Kind, n)
	for i := range out {
		var err error
		switch op {
		case cloudapi.OpGetInstance:
			_, err = c.Instances().GetInstance(t.Context(), "i-1")
		case cloudapi.OpListInstances:
			_, err = c.Instances().ListInstances(t.Context(), cloudapi.ListOptions{})
		default:
			t.Fatalf("callN does not make %s calls", op)
		}
		out[i] = outcome(err)
	}
	return out
}

func share(outcomes []faultinject.Kind, k faultinject.Kind) float64 {
	n := 0
	for _, o := range outcomes {
		if o == k {
			n++
		}
	}
	return float64(n) / float64(len(outcomes))
}

func TestProbability(t *testing.T) {
	const n = 10_000
	rules := []faultinject.Rule{
		// Applies to another operation only: never fires for GetInstance.
		{Ops: []cloudapi.Operation{cloudapi.OpCreateRoute}, Probability: 1, Kind: faultinject.Timeout},
		{Ops: []cloudapi.Operation{cloudapi.OpGetInstance}, Probability: 0.2, Kind: faultinject.Transient},
		{Probability: 0.5, Kind: faultinject.Throttle},
	}
	tests := []struct {
		seed int64
	}{{seed: 0}, {seed: 1}, {seed: -7}, {seed: math.MaxInt64}}
	for _, tt := range tests {
		t.Run(fmt.Sprint("seed=", tt.seed), func(t *testing.T) {
			backend := &stubCloud{}
			c := faultinject.Wrap(backend, faultinject.Config{Seed: tt.seed, Rules: rules})

			got := callN(t, c, cloudapi.OpGetInstance, n)

			// Rules draw independently: the second fires for (1-0.2)*0.5 of the calls.
			assert.InDelta(t, 0.2, share(got, faultinject.Transient), 0.02)
			assert.InDelta(t, 0.4, share(got, faultinject.Throttle), 0.02)
			assert.InDelta(t, 0.4, share(got, faultinject.None), 0.02)
			assert.Zero(t, share(got, faultinject.Timeout))

			counts := c.Injected().Ops[cloudapi.OpGetInstance]
			assert.Equal(t, n, counts.Calls)
			assert.Equal(t, int(backend.calls.Load()), counts.Passed)
			assert.Equal(t, int(share(got, faultinject.None)*n+0.5), counts.Passed)
			assert.Equal(t, map[faultinject.Kind]int{
				faultinject.Transient: int(share(got, faultinject.Transient)*n + 0.5),
				faultinject.Throttle:  int(share(got, faultinject.Throttle)*n + 0.5),
			}, counts.Faults)
		})
	}
}

func TestProbabilityBounds(t *testing.T) {
	for _, p := range []float64{-1, 0, math.NaN(), 1, 2} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			c := faultinject.Wrap(&stubCloud{}, faultinject.Config{Rules: []faultinject.Rule{{Probability: p, Kind: faultinject.Transient}}})
			got := share(callN(t, c, cloudapi.OpGetInstance, 200), faultinject.Transient)
			if p >= 1 {
				assert.InDelta(t, 1, got, 0)
			} else {
				assert.Zero(t, got)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	const n = 500
	rules := []faultinject.Rule{
		{Probability: 0.1, Kind: faultinject.Timeout},
		{Probability: 0.3, Kind: faultinject.Transient},
		{Probability: 0.2, Kind: faultinject.Throttle},
	}
	newClient := func(seed int64) *faultinject.Client {
		s := newClock()
		return faultinject.Wrap(&stubCloud{}, faultinject.Config{Seed: seed, Rules: rules, Clock: s})
	}
	get, list := cloudapi.OpGetInstance, cloudapi.OpListInstances

	// Reference: all GetInstance calls, then all ListInstances calls.
	ref := newClient(42)
	refGet, refList := callN(t, ref, get, n), callN(t, ref, list, n)

	t.Run("same seed, same sequence", func(t *testing.T) {
		c := newClient(42)
		assert.Equal(t, refGet, callN(t, c, get, n))
		assert.Equal(t, refList, callN(t, c, list, n))
	})
	t.Run("other seed, other sequence", func(t *testing.T) {
		c := newClient(43)
		assert.NotEqual(t, refGet, callN(t, c, get, n))
	})
	t.Run("operations do not affect each other", func(t *testing.T) {
		c := newClient(42)
		var gotGet, gotList []faultinject.Kind
		for range n {
			gotList = append(gotList, callN(t, c, list, 1)...)
			gotGet = append(gotGet, callN(t, c, get, 1)...)
		}
		assert.Equal(t, refGet, gotGet)
		assert.Equal(t, refList, gotList)
	})
	t.Run("operations differ under one seed", func(t *testing.T) {
		assert.NotEqual(t, refGet, refList)
	})
	t.Run("disabled calls are numbered", func(t *testing.T) {
		c := newClient(42)
		c.SetEnabled(false)
		disabled := callN(t, c, get, 100)
		assert.Equal(t, make([]faultinject.Kind, 100), disabled, "all passed")
		c.SetEnabled(true)
		assert.Equal(t, refGet[100:], callN(t, c, get, n-100))
	})
	t.Run("reset keeps the numbering", func(t *testing.T) {
		c := newClient(42)
		first := callN(t, c, get, 100)
		c.Reset()
		assert.Equal(t, refGet, append(first, callN(t, c, get, n-100)...))
	})
	t.Run("concurrent callers get the same outcomes", func(t *testing.T) {
		c := newClient(42)
		const workers = 5
		results := make([][]faultinject.Kind, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for range n / workers {
					_, err := c.Instances().GetInstance(context.Background(), "i-1")
					results[w] = append(results[w], outcome(err))
				}
			})
		}
		wg.Wait()
		var all []faultinject.Kind
		for _, r := range results {
			all = append(all, r...)
		}
		assert.ElementsMatch(t, refGet, all)
	})
}

func TestScript(t *testing.T) {
	notFound := cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, "i-1", errors.New("HTTP 404"))
	plain := errors.New("connection reset by peer")
	m := newMocks(t)
	inst := &cloudapi.Instance{ID: "i-1"}
	// Called for the scripted Fault{} and for the Ambiguous rule once the script is done.
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(inst, nil).Times(2)
	s := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{
		// Every unscripted call is ambiguous, and only one token is ever free: the
		// script must win over both.
		Rules:     []faultinject.Rule{{Probability: 1, Kind: faultinject.Ambiguous}},
		RateLimit: &faultinject.RateLimit{QPS: 0.001, Burst: 1},
		Clock:     s,
	})
	c.Script(cloudapi.OpGetInstance,
		faultinject.Fault{Kind: faultinject.Transient},
		faultinject.Fault{Err: notFound},
		faultinject.Fault{})
	c.Script(cloudapi.OpGetInstance, // appended
		faultinject.Fault{Kind: faultinject.Throttle, Err: plain}, // Err wins over Kind
		faultinject.Fault{Kind: faultinject.Kind(99)},             // undefined: passes like None
		faultinject.Fault{Kind: faultinject.Timeout})
	c.Script(cloudapi.OpListInstances, faultinject.Fault{Kind: faultinject.Throttle})
	get := func() (*cloudapi.Instance, error) { return c.Instances().GetInstance(t.Context(), "i-1") }

	_, err := get()
	assert.Equal(t, cloudapi.ErrTransient, cloudapi.ClassOf(err), "1st: Transient")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)

	got, err := get()
	assert.Nil(t, got)
	assert.Same(t, notFound, err, "2nd: the scripted error as it is")

	got, err = get()
	require.NoError(t, err, "3rd: Fault{} passes, skipping the rate limiter and the rules")
	assert.Same(t, inst, got)

	_, err = get()
	assert.Same(t, plain, err, "4th: Err wins over Kind")

	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(inst, nil).Times(1)
	got, err = get()
	require.NoError(t, err, "5th: an undefined kind passes")
	assert.Same(t, inst, got)

	_, err = get()
	require.ErrorIs(t, err, context.DeadlineExceeded, "6th: Timeout")

	_, err = get()
	require.ErrorIs(t, err, cloudapi.ErrTransient, "7th: script done, the one token taken, the Ambiguous rule fires")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	_, err = get()
	require.ErrorIs(t, err, cloudapi.ErrThrottled, "8th: no token left")

	counts := c.Injected().Ops[cloudapi.OpGetInstance]
	assert.Equal(t, faultinject.OpCounts{
		Calls: 8, Passed: 3, ScriptedErrors: 2, RateLimited: 1,
		Faults: map[faultinject.Kind]int{faultinject.Transient: 1, faultinject.Timeout: 1, faultinject.Ambiguous: 1},
	}, counts)

	// ListInstances has its own script.
	_, err = c.Instances().ListInstances(t.Context(), cloudapi.ListOptions{})
	assert.Equal(t, cloudapi.ErrThrottled, cloudapi.ClassOf(err))
	ra, _ := cloudapi.RetryAfter(err)
	assert.Equal(t, faultinject.DefaultThrottleRetryAfter, ra, "the scripted Throttle, not the rate limiter's")
}

func TestScriptSurvivesDisable(t *testing.T) {
	m := newMocks(t)
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).Times(2)
	c := faultinject.Wrap(m.client, faultinject.Config{})
	c.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Transient})
	c.SetEnabled(false)
	_, err := c.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
	c.Reset()
	c.SetEnabled(true)
	_, err = c.Instances().GetInstance(t.Context(), "i-1")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	_, err = c.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
}

func TestRateLimit(t *testing.T) {
	m := newMocks(t)
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).AnyTimes()
	m.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).Return(&cloudapi.Route{}, nil).AnyTimes()
	clock := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{
		RateLimit: &faultinject.RateLimit{QPS: 10, Burst: 5},
		Clock:     clock,
	})
	rt, _ := c.Routes()
	// Calls alternate between two operations: the bucket is shared.
	i := 0
	call := func() error {
		i++
		if i%2 == 0 {
			_, err := rt.CreateRoute(t.Context(), rtSpec)
			return err
		}
		_, err := c.Instances().GetInstance(t.Context(), "i-1")
		return err
	}
	requireThrottled := func(t *testing.T, want time.Duration) {
		t.Helper()
		err := call()
		require.ErrorIs(t, err, cloudapi.ErrThrottled)
		require.ErrorIs(t, err, faultinject.ErrInjected)
		ra, ok := cloudapi.RetryAfter(err)
		require.True(t, ok)
		assert.Equal(t, want, ra)
	}

	for n := range 5 {
		require.NoError(t, call(), "burst call %d", n+1)
	}
	requireThrottled(t, 100*time.Millisecond)
	clock.Step(40 * time.Millisecond)
	requireThrottled(t, 60*time.Millisecond)
	clock.Step(60 * time.Millisecond)
	require.NoError(t, call(), "one token came back")
	requireThrottled(t, 100*time.Millisecond)

	clock.Step(time.Hour)
	for n := range 5 {
		require.NoError(t, call(), "refilled to the burst, call %d", n+1)
	}
	requireThrottled(t, 100*time.Millisecond)

	total := c.Injected().Total()
	assert.Equal(t, 4, total.RateLimited)
	assert.Equal(t, 11, total.Passed)
	assert.Equal(t, 15, total.Calls)
}

func TestRateLimitRetryAfterRounding(t *testing.T) {
	tests := []struct {
		name    string
		qps     float64
		advance time.Duration
		want    time.Duration
	}{
		{name: "rounded up to a millisecond", qps: 3, want: 334 * time.Millisecond},
		{name: "at least a millisecond", qps: 3, advance: 333*time.Millisecond + 200*time.Microsecond, want: time.Millisecond},
		{name: "fast bucket", qps: 1e6, want: time.Millisecond},
		{name: "slow bucket", qps: 0.5, advance: 500 * time.Millisecond, want: 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			c := faultinject.Wrap(&stubCloud{}, faultinject.Config{
				RateLimit: &faultinject.RateLimit{QPS: tt.qps, Burst: 0}, // counts as 1
				Clock:     clock,
			})
			_, err := c.Instances().GetInstance(t.Context(), "i-1")
			require.NoError(t, err)
			clock.Step(tt.advance)
			_, err = c.Instances().GetInstance(t.Context(), "i-1")
			ra, ok := cloudapi.RetryAfter(err)
			require.True(t, ok, "throttled: %v", err)
			assert.Equal(t, tt.want, ra)
			clock.Step(ra)
			_, err = c.Instances().GetInstance(t.Context(), "i-1")
			require.NoError(t, err, "waiting RetryAfter is enough")
		})
	}
}

func TestRateLimitIgnoredWithoutPositiveQPS(t *testing.T) {
	for _, qps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		t.Run(fmt.Sprint(qps), func(t *testing.T) {
			c := faultinject.Wrap(&stubCloud{}, faultinject.Config{RateLimit: &faultinject.RateLimit{QPS: qps, Burst: 1}})
			assert.Equal(t, make([]faultinject.Kind, 20), callN(t, c, cloudapi.OpGetInstance, 20))
		})
	}
}

func TestLatency(t *testing.T) {
	var mu sync.Mutex
	var sampled []time.Duration
	var us []float64
	recording := faultinject.LatencyFunc(func(u float64) time.Duration {
		d := time.Duration(u * float64(time.Second))
		mu.Lock()
		defer mu.Unlock()
		us = append(us, u)
		sampled = append(sampled, d)
		return d
	})
	s := newClock()
	c := faultinject.Wrap(&stubCloud{}, faultinject.Config{Seed: 3, Latency: recording, Clock: s})
	callN(t, c, cloudapi.OpGetInstance, 50)

	require.Len(t, sampled, 50)
	assert.Equal(t, sampled, s.Waits(), "the client waits what the Latency samples")
	for _, u := range us {
		assert.GreaterOrEqual(t, u, 0.0)
		assert.Less(t, u, 1.0)
	}
	assert.Greater(t, len(uniqueFloats(us)), 45, "each call draws its own u")

	t.Run("reproducible", func(t *testing.T) {
		s2 := newClock()
		c2 := faultinject.Wrap(&stubCloud{}, faultinject.Config{Seed: 3, Latency: faultinject.LatencyFunc(func(u float64) time.Duration {
			return time.Duration(u * float64(time.Second))
		}), Clock: s2})
		callN(t, c2, cloudapi.OpGetInstance, 50)
		assert.Equal(t, s.Waits(), s2.Waits())
	})
}

func uniqueFloats(fs []float64) map[float64]bool {
	m := make(map[float64]bool, len(fs))
	for _, f := range fs {
		m[f] = true
	}
	return m
}

func TestOpLatency(t *testing.T) {
	m := newMocks(t)
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
	m.in.EXPECT().ListInstances(gomock.Any(), listOpts).Return(&cloudapi.InstancePage{}, nil)
	m.rt.EXPECT().DeleteRoute(gomock.Any(), "rt-1").Return(nil)
	s := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{
		Latency: faultinject.Fixed(time.Millisecond),
		OpLatency: map[cloudapi.Operation]faultinject.Latency{
			cloudapi.OpGetInstance:   faultinject.Fixed(7 * time.Millisecond),
			cloudapi.OpListInstances: nil, // none
		},
		Clock: s,
	})
	_, err := c.Instances().GetInstance(t.Context(), "i-1")
	require.NoError(t, err)
	_, err = c.Instances().ListInstances(t.Context(), listOpts)
	require.NoError(t, err)
	rt, _ := c.Routes()
	require.NoError(t, rt.DeleteRoute(t.Context(), "rt-1"))
	assert.Equal(t, []time.Duration{7 * time.Millisecond, time.Millisecond}, s.Waits())
}

func TestLatencyEndsWithTheContext(t *testing.T) {
	t.Run("fake sleep", func(t *testing.T) {
		m := newMocks(t) // no inner call expected
		s := newClock()
		c := faultinject.Wrap(m.client, faultinject.Config{Latency: faultinject.Fixed(time.Second), Clock: s})
		c.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Throttle})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()

		_, err := c.Instances().GetInstance(ctx, "i-1")

		assert.Equal(t, cloudapi.ErrTransient, cloudapi.ClassOf(err))
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, faultinject.ErrInjected)
		assert.Equal(t, faultinject.OpCounts{Calls: 1, Canceled: 1}, c.Injected().Ops[cloudapi.OpGetInstance])

		_, err = c.Instances().GetInstance(t.Context(), "i-1")
		require.ErrorIs(t, err, cloudapi.ErrThrottled, "the canceled call did not use up the script")
	})
	t.Run("real sleep", func(t *testing.T) {
		m := newMocks(t)
		c := faultinject.Wrap(m.client, faultinject.Config{Latency: faultinject.Fixed(time.Hour)})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		lb, _ := c.LoadBalancers()

		start := time.Now()
		_, err := lb.CreateLoadBalancer(ctx, lbSpec)

		assert.Less(t, time.Since(start), 10*time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, cloudapi.ErrTransient)
	})
}

func TestSetEnabled(t *testing.T) {
	m := newMocks(t)
	const n = 20
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).Times(n)
	s := newClock()
	c := faultinject.Wrap(m.client, faultinject.Config{
		Rules:     []faultinject.Rule{{Probability: 1, Kind: faultinject.Transient}},
		RateLimit: &faultinject.RateLimit{QPS: 0.001, Burst: 1},
		Latency:   faultinject.Fixed(time.Hour),
		Clock:     s,
	})
	c.SetEnabled(false)
	assert.Equal(t, make([]faultinject.Kind, n), callN(t, c, cloudapi.OpGetInstance, n))
	assert.Equal(t, faultinject.OpCounts{Calls: n, Passed: n}, c.Injected().Ops[cloudapi.OpGetInstance])
	assert.Empty(t, s.Waits(), "a disabled client does not wait")
}

func TestSetRules(t *testing.T) {
	c := faultinject.Wrap(&stubCloud{}, faultinject.Config{})
	assert.Equal(t, faultinject.None, callN(t, c, cloudapi.OpGetInstance, 1)[0])

	rules := []faultinject.Rule{{Ops: []cloudapi.Operation{cloudapi.OpGetInstance}, Probability: 1, Kind: faultinject.Throttle}}
	c.SetRules(rules)
	rules[0].Kind = faultinject.Transient      // the client keeps its own copy
	rules[0].Ops[0] = cloudapi.OpListInstances // also of Ops
	assert.Equal(t, faultinject.Throttle, callN(t, c, cloudapi.OpGetInstance, 1)[0])
	assert.Equal(t, faultinject.None, callN(t, c, cloudapi.OpListInstances, 1)[0])

	c.SetRules(nil)
	assert.Equal(t, faultinject.None, callN(t, c, cloudapi.OpGetInstance, 1)[0])
}

func TestWrapCopiesConfig(t *testing.T) {
	cfg := faultinject.Config{
		Rules:     []faultinject.Rule{{Probability: 1, Kind: faultinject.Throttle}},
		OpLatency: map[cloudapi.Operation]faultinject.Latency{},
	}
	s := newClock()
	cfg.Clock = s
	c := faultinject.Wrap(&stubCloud{}, cfg)
	cfg.Rules[0].Kind = faultinject.Transient
	cfg.OpLatency[cloudapi.OpGetInstance] = faultinject.Fixed(time.Second)

	assert.Equal(t, faultinject.Throttle, callN(t, c, cloudapi.OpGetInstance, 1)[0])
	assert.Empty(t, s.Waits())
}

func TestRuleOfKindNoneShields(t *testing.T) {
	c := faultinject.Wrap(&stubCloud{}, faultinject.Config{Rules: []faultinject.Rule{
		{Ops: []cloudapi.Operation{cloudapi.OpListInstances}, Probability: 1, Kind: faultinject.None},
		{Probability: 1, Kind: faultinject.Transient},
		{Probability: 1, Kind: faultinject.Kind(42)},
	}})
	assert.Equal(t, faultinject.None, callN(t, c, cloudapi.OpListInstances, 1)[0])
	assert.Equal(t, faultinject.Transient, callN(t, c, cloudapi.OpGetInstance, 1)[0])
	assert.Empty(t, c.Injected().Ops[cloudapi.OpListInstances].Faults, "None is not a fault")
}

func TestInjectedAndReset(t *testing.T) {
	c := faultinject.Wrap(&stubCloud{}, faultinject.Config{})
	c.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Transient})
	c.Script(cloudapi.OpListInstances, faultinject.Fault{Kind: faultinject.Transient}, faultinject.Fault{Kind: faultinject.Throttle})
	callN(t, c, cloudapi.OpGetInstance, 2)
	callN(t, c, cloudapi.OpListInstances, 3)

	snap := c.Injected()
	assert.Equal(t, faultinject.Counts{Ops: map[cloudapi.Operation]faultinject.OpCounts{
		cloudapi.OpGetInstance:   {Calls: 2, Passed: 1, Faults: map[faultinject.Kind]int{faultinject.Transient: 1}},
		cloudapi.OpListInstances: {Calls: 3, Passed: 1, Faults: map[faultinject.Kind]int{faultinject.Transient: 1, faultinject.Throttle: 1}},
	}}, snap)
	assert.Equal(t, faultinject.OpCounts{
		Calls: 5, Passed: 2, Faults: map[faultinject.Kind]int{faultinject.Transient: 2, faultinject.Throttle: 1},
	}, snap.Total())

	snap.Ops[cloudapi.OpGetInstance].Faults[faultinject.Transient] = 99
	assert.Equal(t, 1, c.Injected().Ops[cloudapi.OpGetInstance].Faults[faultinject.Transient], "a snapshot is a copy")

	c.Reset()
	assert.Empty(t, c.Injected().Ops)
	assert.Equal(t, faultinject.OpCounts{}, c.Injected().Total())
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     faultinject.Config
		wantErr []string
	}{
		{name: "zero"},
		{name: "full", cfg: faultinject.Config{
			Rules:              []faultinject.Rule{{Ops: []cloudapi.Operation{cloudapi.OpCreateRoute}, Probability: 0.5, Kind: faultinject.Ambiguous}, {Probability: 1}},
			Latency:            faultinject.Fixed(time.Millisecond),
			OpLatency:          map[cloudapi.Operation]faultinject.Latency{cloudapi.OpGetInstance: nil},
			Timeout:            time.Second,
			ThrottleRetryAfter: time.Second,
			RateLimit:          &faultinject.RateLimit{QPS: 10, Burst: 1},
		}},
		{name: "everything wrong", cfg: faultinject.Config{
			Rules: []faultinject.Rule{
				{Ops: []cloudapi.Operation{"Reboot"}, Probability: 1.5, Kind: faultinject.Kind(9)},
				{Probability: math.NaN()},
			},
			OpLatency:          map[cloudapi.Operation]faultinject.Latency{"Reboot": nil},
			Timeout:            -1,
			ThrottleRetryAfter: -1,
			RateLimit:          &faultinject.RateLimit{QPS: math.Inf(1)},
		}, wantErr: []string{
			`rule 0: unknown operation "Reboot"`,
			"rule 0: probability 1.5 is outside [0, 1]",
			"rule 0: unknown kind Kind(9)",
			"rule 1: probability NaN is outside [0, 1]",
			`latency for unknown operation "Reboot"`,
			"negative timeout -1ns",
			"negative throttle retry-after -1ns",
			"rate limit QPS +Inf is not a positive finite number",
			"rate limit burst 0 is below 1",
		}},
		{name: "zero QPS", cfg: faultinject.Config{RateLimit: &faultinject.RateLimit{Burst: 1}},
			wantErr: []string{"rate limit QPS 0 is not a positive finite number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, strings.Split(err.Error(), "\n"), "one line per problem")
		})
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		kind  faultinject.Kind
		want  string
		valid bool
	}{
		{faultinject.None, "None", true},
		{faultinject.Transient, "Transient", true},
		{faultinject.Timeout, "Timeout", true},
		{faultinject.Throttle, "Throttle", true},
		{faultinject.Ambiguous, "Ambiguous", true},
		{faultinject.Kind(-1), "Kind(-1)", false},
		{faultinject.Repeat, "Repeat", true},
		{faultinject.Refuse, "Refuse", true},
		{faultinject.Kind(7), "Kind(7)", false},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.kind.String())
			assert.Equal(t, tt.valid, tt.kind.Valid())
		})
	}
}

func TestRuleValidate(t *testing.T) {
	require.NoError(t, faultinject.Rule{}.Validate(), "the zero rule never fires and is valid")
	require.NoError(t, faultinject.Rule{Ops: []cloudapi.Operation{cloudapi.OpDeleteRoute}, Probability: 1, Kind: faultinject.Timeout}.Validate())
	err := faultinject.Rule{Probability: -0.1, Kind: faultinject.Kind(7)}.Validate()
	assert.EqualError(t, err, "probability -0.1 is outside [0, 1]\nunknown kind Kind(7)")
}

func TestScriptNothing(t *testing.T) {
	c := faultinject.Wrap(&stubCloud{}, faultinject.Config{})
	c.Script(cloudapi.OpGetInstance)
	assert.Equal(t, faultinject.None, callN(t, c, cloudapi.OpGetInstance, 1)[0])
}

// A Repeat fault answers a list as an offset-paged cloud does after a create between two
// page reads: the page as the inner client answered it, then, for the wrapper's token,
// the page's last item again with the inner page's next token, which the inner client
// never sees. Other operations and empty pages pass unchanged.
func TestRepeat(t *testing.T) {
	m := newMocks(t)
	inner := &cloudapi.LoadBalancerPage{Items: []cloudapi.LoadBalancer{{ID: "lb-1"}, {ID: "lb-2"}}, NextPageToken: "inner-next"}
	m.lb.EXPECT().ListLoadBalancers(gomock.Any(), listOpts).Return(inner, nil).Times(1)
	empty := listOpts
	empty.PageToken = "empty"
	m.lb.EXPECT().ListLoadBalancers(gomock.Any(), empty).Return(&cloudapi.LoadBalancerPage{}, nil).Times(1)
	m.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(&cloudapi.LoadBalancer{ID: "lb-1"}, nil).Times(1)
	c := faultinject.Wrap(m.client, faultinject.Config{Rules: []faultinject.Rule{{Probability: 1, Kind: faultinject.Repeat}}})
	lbs, ok := c.LoadBalancers()
	require.True(t, ok)

	first, err := lbs.ListLoadBalancers(t.Context(), listOpts)
	require.NoError(t, err)
	assert.Equal(t, inner.Items, first.Items)
	require.NotEmpty(t, first.NextPageToken)
	assert.NotEqual(t, "inner-next", first.NextPageToken)

	next := listOpts
	next.PageToken = first.NextPageToken
	second, err := lbs.ListLoadBalancers(t.Context(), next)
	require.NoError(t, err)
	assert.Equal(t, &cloudapi.LoadBalancerPage{Items: []cloudapi.LoadBalancer{{ID: "lb-2"}}, NextPageToken: "inner-next"}, second)

	got, err := lbs.ListLoadBalancers(t.Context(), empty)
	require.NoError(t, err)
	assert.Empty(t, got.Items)
	assert.Empty(t, got.NextPageToken, "an empty page has nothing to repeat")

	lb, err := lbs.GetLoadBalancer(t.Context(), "lb-1")
	require.NoError(t, err)
	assert.Equal(t, "lb-1", lb.ID, "a call that is no list passes")

	assert.Equal(t, 4, c.Injected().Ops[cloudapi.OpListLoadBalancers].Calls+c.Injected().Ops[cloudapi.OpGetLoadBalancer].Calls)
}
