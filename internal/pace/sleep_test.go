package pace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/internal/clocktest"
)

func TestSleep(t *testing.T) {
	t.Run("no wait", func(t *testing.T) {
		clk := clocktest.NewHolding(time.Unix(0, 0))
		require.NoError(t, Sleep(t.Context(), clk, 0))
		require.NoError(t, Sleep(t.Context(), clk, -time.Second))
		assert.Empty(t, clk.Waits(), "no timer for a wait of zero or less")
	})

	t.Run("an ended context, even for no wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		clk := clocktest.NewHolding(time.Unix(0, 0))
		require.ErrorIs(t, Sleep(ctx, clk, 0), context.Canceled)
		require.ErrorIs(t, Sleep(ctx, clk, time.Hour), context.Canceled)
		assert.Empty(t, clk.Waits())
	})

	t.Run("ends when the clock has passed the wait", func(t *testing.T) {
		clk := clocktest.NewHolding(time.Unix(0, 0))
		done := make(chan error, 1)
		go func() { done <- Sleep(t.Context(), clk, time.Minute) }()
		require.NoError(t, clk.AwaitWaits(t.Context(), 1))
		clk.Step(59 * time.Second)
		select {
		case err := <-done:
			t.Fatalf("the wait ended before its time: %v", err)
		default:
		}
		clk.Step(time.Second)
		require.NoError(t, <-done)
		assert.Equal(t, []time.Duration{time.Minute}, clk.Waits())
	})

	t.Run("ends with the context", func(t *testing.T) {
		clk := clocktest.NewHolding(time.Unix(0, 0))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- Sleep(ctx, clk, time.Hour) }()
		require.NoError(t, clk.AwaitWaits(t.Context(), 1))
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		assert.False(t, clk.HasWaiters(), "the timer is stopped")
	})

	t.Run("the real clock", func(t *testing.T) {
		require.NoError(t, Sleep(t.Context(), clock.RealClock{}, time.Millisecond))
	})
}
