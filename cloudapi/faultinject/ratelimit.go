package faultinject

import (
	"math"
	"time"
)

// bucket is a token bucket in its GCRA form: instead of a token count it keeps the
// theoretical arrival time tat at which the bucket would be full again, in integer
// nanoseconds, so that refill and Retry-After are exact. It is not safe for concurrent use;
// the Client guards it.
type bucket struct {
	// interval is the time that one token takes to come back.
	interval time.Duration
	// tolerance is how far ahead of now tat may be while a token is still free:
	// (burst-1) intervals.
	tolerance time.Duration
	tat       time.Time
}

// newBucket returns a bucket for rl, or nil when rl limits nothing.
func newBucket(rl *RateLimit) *bucket {
	if rl == nil || !(rl.QPS > 0) || math.IsInf(rl.QPS, 0) {
		return nil
	}
	burst := max(rl.Burst, 1)
	interval := time.Duration(math.Round(float64(time.Second) / rl.QPS))
	interval = max(interval, 1)
	return &bucket{interval: interval, tolerance: time.Duration(burst-1) * interval}
}

// take takes a token at now. It returns 0 when it got one, or else how long until the
// next token is free, rounded up to a whole millisecond and at least one millisecond.
func (b *bucket) take(now time.Time) time.Duration {
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	if ahead := tat.Sub(now); ahead > b.tolerance {
		wait := ahead - b.tolerance
		wait = (wait + time.Millisecond - 1) / time.Millisecond * time.Millisecond
		return max(wait, time.Millisecond)
	}
	b.tat = tat.Add(b.interval)
	return 0
}
