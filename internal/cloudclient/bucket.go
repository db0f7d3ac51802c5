package cloudclient

import (
	"math"
	"time"
)

// bucket is a token bucket in its GCRA form (generic cell rate algorithm): instead of a
// token count it keeps tat, the theoretical arrival time of the next call, and hands out
// send times (slots). A slot once given is never moved, and a change of rate applies to
// the slots given after it, after the last slot already given. So the calls sent never
// exceed the rate in force when their slots were given, also while the rate grows and
// many calls wait (a token count, as in golang.org/x/time/rate, would reschedule its
// debt at the new rate and let waiting and new calls overlap). It is not safe for
// concurrent use; the Client guards it.
type bucket struct {
	// interval is the time between two slots at the current rate.
	interval time.Duration
	// tolerance is how far tat may lie ahead of now while a slot is still free at once:
	// (burst-1) intervals.
	tolerance time.Duration
	tat       time.Time
}

// set changes the rate (calls per second, positive) and the burst (at least 1).
func (b *bucket) set(qps float64, burst int) {
	b.interval = max(time.Duration(math.Round(float64(time.Second)/qps)), 1)
	b.tolerance = time.Duration(max(burst, 1)-1) * b.interval
}

// next returns the earliest slot free at now, without taking it.
func (b *bucket) next(now time.Time) time.Time {
	if earliest := b.tat.Add(-b.tolerance); earliest.After(now) {
		return earliest
	}
	return now
}

// take takes the slot returned by next and returns the tat before, for giveBack.
func (b *bucket) take(slot time.Time) (before time.Time) {
	before = b.tat
	if slot.After(b.tat) {
		b.tat = slot
	}
	b.tat = b.tat.Add(b.interval)
	return before
}

// giveBack returns a slot that take handed out and that will not be used, if no slot was
// taken after it; after is the tat that take left, before the tat it returned.
func (b *bucket) giveBack(before, after time.Time) {
	if b.tat.Equal(after) {
		b.tat = before
	}
}

// reset makes the bucket give slots at the rate qps with a burst of 1 from now on,
// forgetting the slots given before.
func (b *bucket) reset(now time.Time, qps float64) {
	b.set(qps, 1)
	b.tat = now
}
