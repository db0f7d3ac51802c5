package cloudclient

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBucket(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	t.Run("burst then spaced", func(t *testing.T) {
		var b bucket
		b.set(10, 3)
		var got []time.Time
		for range 5 {
			s := b.next(t0)
			b.take(s)
			got = append(got, s)
		}
		assert.Equal(t, []time.Time{ms(0), ms(0), ms(0), ms(100), ms(200)}, got)
		assert.Equal(t, ms(300), b.next(ms(250)), "next slot")
		for range 3 {
			s := b.next(ms(800))
			assert.Equal(t, ms(800), s, "a quiet period refills the bucket")
			b.take(s)
		}
		assert.Equal(t, ms(900), b.next(ms(800)))
	})

	t.Run("a faster rate does not move slots already given", func(t *testing.T) {
		// Ten calls wait in line at 1/s; then the rate becomes 100/s. New calls line up
		// after the last waiting one, 1s after it at the old interval, then 10ms apart.
		// A token count would hand the new calls slots between the waiting ones.
		var b bucket
		b.set(1, 1)
		for range 10 {
			b.take(b.next(t0))
		}
		b.set(100, 1)
		s := b.next(t0)
		assert.Equal(t, ms(10_000), s)
		b.take(s)
		assert.Equal(t, ms(10_010), b.next(t0))
	})

	t.Run("give back", func(t *testing.T) {
		var b bucket
		b.set(10, 1)
		b.take(b.next(t0))
		s := b.next(t0)
		before := b.take(s)
		after := b.tat
		b.giveBack(before, after)
		assert.Equal(t, s, b.next(t0), "the last slot comes back")

		before = b.take(s)
		after = b.tat
		b.take(b.next(t0)) // someone took a slot after it
		b.giveBack(before, after)
		assert.Equal(t, ms(300), b.next(t0), "a slot followed by another is not given back")
	})

	t.Run("reset", func(t *testing.T) {
		var b bucket
		b.set(10, 5)
		for range 20 {
			b.take(b.next(t0))
		}
		b.reset(ms(50), 4)
		s := b.next(ms(50))
		assert.Equal(t, ms(50), s, "the old line is forgotten")
		b.take(s)
		assert.Equal(t, ms(300), b.next(ms(50)), "burst 1 at the new rate")
	})
}
