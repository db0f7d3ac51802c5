package faultinject

import (
	"math"
	"time"

	"github.com/ccmkit/ccmkit/internal/pace"
)

// newBucket returns the bucket of rl, or nil when rl limits nothing.
func newBucket(rl *RateLimit) *pace.Bucket {
	if rl == nil || !(rl.QPS > 0) || math.IsInf(rl.QPS, 0) {
		return nil
	}
	b := &pace.Bucket{}
	b.Set(rl.QPS, rl.Burst)
	return b
}

// refuse takes a slot of b at now. It returns 0 when it got one, or else how long until
// the next slot is free, rounded up to a whole millisecond (Retry-After's precision here)
// and at least one millisecond.
func refuse(b *pace.Bucket, now time.Time) time.Duration {
	wait := b.TakeNow(now)
	if wait == 0 {
		return 0
	}
	wait = (wait + time.Millisecond - 1) / time.Millisecond * time.Millisecond
	return max(wait, time.Millisecond)
}
