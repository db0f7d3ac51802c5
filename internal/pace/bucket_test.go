package pace

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBucket(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	t.Run("burst then spaced", func(t *testing.T) {
		var b Bucket
		b.Set(10, 3)
		var got []time.Time
		for range 5 {
			s := b.Next(t0)
			b.Take(s)
			got = append(got, s)
		}
		assert.Equal(t, []time.Time{ms(0), ms(0), ms(0), ms(100), ms(200)}, got)
		assert.Equal(t, ms(300), b.Next(ms(250)), "next slot")
		for range 3 {
			s := b.Next(ms(800))
			assert.Equal(t, ms(800), s, "a quiet period refills the bucket")
			b.Take(s)
		}
		assert.Equal(t, ms(900), b.Next(ms(800)))
	})

	t.Run("a faster rate does not move slots already given", func(t *testing.T) {
		// Ten calls wait in line at 1/s; then the rate becomes 100/s. New calls line up
		// after the last waiting one, 1s after it at the old interval, then 10ms apart.
		// A token count would hand the new calls slots between the waiting ones.
		var b Bucket
		b.Set(1, 1)
		for range 10 {
			b.Take(b.Next(t0))
		}
		b.Set(100, 1)
		s := b.Next(t0)
		assert.Equal(t, ms(10_000), s)
		b.Take(s)
		assert.Equal(t, ms(10_010), b.Next(t0))
	})

	t.Run("give back", func(t *testing.T) {
		var b Bucket
		b.Set(10, 1)
		b.Take(b.Next(t0))
		s := b.Next(t0)
		before := b.Take(s)
		after := b.TAT()
		b.GiveBack(before, after)
		assert.Equal(t, s, b.Next(t0), "the last slot comes back")

		before = b.Take(s)
		after = b.TAT()
		b.Take(b.Next(t0)) // someone took a slot after it
		b.GiveBack(before, after)
		assert.Equal(t, ms(300), b.Next(t0), "a slot followed by another is not given back")
	})

	t.Run("reset", func(t *testing.T) {
		var b Bucket
		b.Set(10, 5)
		for range 20 {
			b.Take(b.Next(t0))
		}
		b.Reset(ms(50), 4)
		s := b.Next(ms(50))
		assert.Equal(t, ms(50), s, "the old line is forgotten")
		b.Take(s)
		assert.Equal(t, ms(300), b.Next(ms(50)), "burst 1 at the new rate")
	})

	t.Run("a rate too slow for time.Duration is the slowest, not unlimited", func(t *testing.T) {
		for _, qps := range []float64{1e-11, 1e-300, 0, -1, math.NaN()} {
			var b Bucket
			b.Set(qps, 1)
			b.Take(b.Next(t0))
			assert.True(t, b.Next(t0).After(t0.Add(100*365*24*time.Hour)), "qps %v: the second slot is centuries away", qps)
		}
	})

	t.Run("a huge burst saturates instead of overflowing", func(t *testing.T) {
		for _, burst := range []int{math.MaxInt, math.MaxInt64 / 1000} {
			var b Bucket
			b.Set(1, burst)
			for range 1000 {
				s := b.Next(t0)
				if !assert.Equal(t, t0, s, "burst %d: a thousand calls go out at once", burst) {
					break
				}
				b.Take(s)
			}
		}
	})
}
