package cloudclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

func TestRateLimit(t *testing.T) {
	tests := []struct {
		name  string
		qps   float64
		burst int
		calls int
		want  []time.Duration // waits
	}{
		{"burst then spaced", 10, 2, 5, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}},
		{"default burst is one second", 4, 0, 6, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
		{"unlimited", 0, 0, 20, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = tt.qps, tt.burst })
			e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).Times(tt.calls)
			for range tt.calls {
				_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, e.clock.Waits())

			n, sum := e.histogram(t, "rate_limiter_wait_seconds", nil)
			assert.Equal(t, uint64(tt.calls), n, "one wait sample per attempt")
			var total time.Duration
			for _, d := range tt.want {
				total += d
			}
			assert.InDelta(t, total.Seconds(), sum, 1e-9)
		})
	}

	t.Run("shared by all operations", func(t *testing.T) {
		e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 10, 1 })
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
		e.mocks.rt.EXPECT().ListRoutes(gomock.Any(), listOpts).Return(&cloudapi.RoutePage{}, nil)
		e.mocks.lb.EXPECT().DeleteLoadBalancer(gomock.Any(), "lb-1").Return(nil)
		_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
		require.NoError(t, err)
		rts, _ := e.client.Routes()
		_, err = rts.ListRoutes(e.ctx, listOpts)
		require.NoError(t, err)
		lbs, _ := e.client.LoadBalancers()
		require.NoError(t, lbs.DeleteLoadBalancer(e.ctx, "lb-1"))
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, e.clock.Waits())
	})

	t.Run("no token before the deadline", func(t *testing.T) {
		e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 0.5, 1 })
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).Times(2)
		_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		defer cancel()
		_, err = e.client.Instances().GetInstance(ctx, "i-1") // the next token comes in 2s
		require.ErrorIs(t, err, cloudapi.ErrThrottled)
		retryAfter, _ := cloudapi.RetryAfter(err)
		assert.Equal(t, 2*time.Second, retryAfter)
		assert.Empty(t, e.clock.Waits())

		// The refused call did not use up the token.
		e.clock.Step(2 * time.Second)
		_, err = e.client.Instances().GetInstance(e.ctx, "i-1")
		require.NoError(t, err)
		assert.Empty(t, e.clock.Waits())
	})
}

// TestThrottleLowersRate checks the multiplicative decrease and additive increase through
// the waits between sequential calls on a fake clock.
func TestThrottleLowersRate(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) {
		o.QPS, o.Burst = 10, 5
		o.Retry.MaxAttempts = 1
	})
	ok := func(n int) {
		t.Helper()
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil).Times(n)
		for range n {
			_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
			require.NoError(t, err)
		}
	}
	throttle := func(retryAfter time.Duration) {
		t.Helper()
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.Throttled(cloudapi.OpGetInstance, retryAfter, nil))
		_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
		require.ErrorIs(t, err, cloudapi.ErrThrottled)
	}
	waits := e.clock.TakeWaits

	ok(5) // the burst
	require.Empty(t, waits())
	throttle(time.Second) // the 6th call, 100ms later, is throttled
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, waits())

	// Every call waits for the hold, then the rate is 5/s plus 1/s per second since the
	// decrease, with a burst of 1: about 6/s just after the hold.
	ok(3)
	got := waits()
	require.Len(t, got, 3)
	assert.Equal(t, time.Second, got[0], "the hold")
	assert.InDelta(t, 1.0/6, got[1].Seconds(), 0.01)
	assert.InDelta(t, 1.0/6.2, got[2].Seconds(), 0.01)

	// 5 seconds after the decrease, the full rate and burst are back; the bucket fills
	// up to the burst again at the full rate.
	e.clock.Step(5 * time.Second)
	ok(1)
	assert.Empty(t, waits())
	e.clock.Step(500 * time.Millisecond)
	ok(5)
	assert.Empty(t, waits(), "the burst of 5 is back")
	ok(1)
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, waits())
}

// TestRequestGate: the requests one call makes beyond its first (an action's polls), as
// the adapter reports them with cloudapi.Request, wait for the rate limiter as calls do
// and are counted; the first passes, since the call was admitted.
func TestRequestGate(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 10, 1 })
	e.mocks.lb.EXPECT().DeleteLoadBalancer(gomock.Any(), "lb-1").DoAndReturn(func(ctx context.Context, _ string) error {
		for range 3 { // the delete, then two polls of its action
			if err := cloudapi.Request(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	lbs, _ := e.client.LoadBalancers()
	require.NoError(t, lbs.DeleteLoadBalancer(e.ctx, "lb-1"))
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, e.clock.Waits(), "the two polls wait their turn; the call itself had the burst")
	assert.InDelta(t, 2, e.counter(t, "extra_requests_total", map[string]string{"operation": string(cloudapi.OpDeleteLoadBalancer)}), 0)

	require.NoError(t, cloudapi.Request(e.ctx), "without a gate (an adapter called outside ccmkit) a request passes")
}
