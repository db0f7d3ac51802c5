package pace

import (
	"math"
	"time"
)

// Bucket is a token bucket in its GCRA form (generic cell rate algorithm): instead of a
// token count it keeps tat, the theoretical arrival time of the next call, and hands out
// send times (slots). A slot once given is never moved, and a change of rate applies to
// the slots given after it, after the last slot already given. So the calls sent never
// exceed the rate in force when their slots were given, also while the rate grows and
// many calls wait (a token count, as in golang.org/x/time/rate, would reschedule its
// debt at the new rate and let waiting and new calls overlap). Its zero value gives every
// slot at once until Set is called. It is not safe for concurrent use.
type Bucket struct {
	// interval is the time between two slots at the current rate.
	interval time.Duration
	// tolerance is how far tat may lie ahead of now while a slot is still free at once:
	// (burst-1) intervals.
	tolerance time.Duration
	tat       time.Time
}

// Set changes the rate (calls per second, positive) and the burst (at least 1). Callers
// validate both; out of range, nothing overflows and a bad rate never means "unlimited":
// a rate so low that the interval between two slots exceeds the longest time.Duration
// (below about 1.1e-10), zero, a negative rate and NaN give that longest interval, a
// rate above 1e9 gives slots 1ns apart, and a burst whose tolerance would exceed the
// longest time.Duration gets the longest.
func (b *Bucket) Set(qps float64, burst int) {
	interval := float64(time.Second) / qps
	switch {
	case !(qps > 0) || interval >= math.MaxInt64:
		b.interval = math.MaxInt64
	default:
		b.interval = max(time.Duration(math.Round(interval)), 1)
	}
	extra := time.Duration(max(burst, 1) - 1)
	if extra > math.MaxInt64/b.interval {
		b.tolerance = math.MaxInt64
	} else {
		b.tolerance = extra * b.interval
	}
}

// Next returns the earliest slot free at now, without taking it.
func (b *Bucket) Next(now time.Time) time.Time {
	if earliest := b.tat.Add(-b.tolerance); earliest.After(now) {
		return earliest
	}
	return now
}

// Take takes the slot returned by Next and returns the theoretical arrival time before,
// for GiveBack.
func (b *Bucket) Take(slot time.Time) (before time.Time) {
	before = b.tat
	if slot.After(b.tat) {
		b.tat = slot
	}
	b.tat = b.tat.Add(b.interval)
	return before
}

// GiveBack returns a slot that Take handed out and that will not be used, if no slot was
// taken after it; after is TAT after the Take, before what Take returned.
func (b *Bucket) GiveBack(before, after time.Time) {
	if b.tat.Equal(after) {
		b.tat = before
	}
}

// Reset makes the bucket give slots at the rate qps with a burst of 1 from now on,
// forgetting the slots given before.
func (b *Bucket) Reset(now time.Time, qps float64) {
	b.Set(qps, 1)
	b.tat = now
}

// TAT returns the theoretical arrival time: when the next slot is free with no burst left.
func (b *Bucket) TAT() time.Time { return b.tat }

// TakeNow takes a slot at now if one is free and returns 0; else it takes nothing and
// returns how long until the next slot is free. It is how a server refuses calls beyond
// its rate.
func (b *Bucket) TakeNow(now time.Time) time.Duration {
	if slot := b.Next(now); slot.After(now) {
		return slot.Sub(now)
	}
	b.Take(now)
	return 0
}
