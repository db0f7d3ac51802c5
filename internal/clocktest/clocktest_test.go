package clocktest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/clocktest"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestSteppingClockEndsEachWaitAtOnce(t *testing.T) {
	clk := clocktest.NewStepping(t0)
	timer := clk.NewTimer(3 * time.Second)
	select {
	case at := <-timer.C():
		assert.Equal(t, t0.Add(3*time.Second), at, "the timer fired at the end of the wait")
	default:
		t.Fatal("the timer has not fired")
	}
	assert.Equal(t, t0.Add(3*time.Second), clk.Now())
	<-clk.After(time.Second)
	assert.Equal(t, t0.Add(4*time.Second), clk.Now())
	assert.Equal(t, []time.Duration{3 * time.Second, time.Second}, clk.TakeWaits())
	assert.Empty(t, clk.Waits(), "taken")
	require.NoError(t, clk.AwaitWaits(t.Context(), 2), "the count outlives TakeWaits")
}

func TestHoldingClockWaitsForTheTest(t *testing.T) {
	clk := clocktest.NewHolding(t0)
	timer := clk.NewTimer(time.Second)
	require.True(t, clk.HasWaiters())
	select {
	case <-timer.C():
		t.Fatal("the timer fired while the clock stood still")
	default:
	}
	clk.Step(time.Second)
	<-timer.C()
	assert.Equal(t, []time.Duration{time.Second}, clk.Waits())

	clk.SetStepping(true)
	<-clk.After(time.Minute)
	assert.Equal(t, t0.Add(time.Second+time.Minute), clk.Now())
}

func TestAwaitWaitsEndsWithTheContext(t *testing.T) {
	clk := clocktest.NewHolding(t0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, clk.AwaitWaits(ctx, 1), context.Canceled)
	require.NoError(t, clk.AwaitWaits(ctx, 0))
}

func TestTickingNeverReadsTheSameTimeTwice(t *testing.T) {
	clk := clocktest.NewTicking(t0, time.Minute)
	assert.Equal(t, t0.Add(time.Minute), clk.Now())
	assert.Equal(t, time.Minute, clk.Since(t0), "Since does not step")

	const readers, reads = 4, 100
	seen := make(chan time.Time, readers*reads)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range reads {
				seen <- clk.Now()
			}
		})
	}
	wg.Wait()
	close(seen)
	distinct := map[time.Time]bool{}
	for at := range seen {
		distinct[at] = true
	}
	assert.Len(t, distinct, readers*reads)
	assert.Equal(t, t0.Add((1+readers*reads)*time.Minute), clk.Now().Add(-time.Minute))
}
