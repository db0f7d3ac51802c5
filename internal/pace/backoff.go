package pace

import (
	"fmt"
	"time"
)

// Backoff holds back a retry after failures: after each failure in a row the wait doubles,
// from Min up to Max, and a success resets it. It is not safe for concurrent use; its
// users hold their own lock.
type Backoff struct {
	// Min is the wait after the first failure; Max caps it.
	Min, Max time.Duration

	err   error         // the last failure, nil after a success
	until time.Time     // no retry before this
	wait  time.Duration // the last wait
}

// Failed records a failure at now. The doubling saturates at Max, whatever Max is.
func (b *Backoff) Failed(now time.Time, err error) {
	next := b.Max
	if b.wait <= b.Max/2 {
		next = 2 * b.wait
	}
	b.wait = min(max(next, b.Min), b.Max)
	b.err, b.until = err, now.Add(b.wait)
}

// Succeeded resets the backoff.
func (b *Backoff) Succeeded() { b.err, b.wait = nil, 0 }

// Hold returns, while a retry must wait, an error saying how long and wrapping the last
// failure; nil when a retry may start.
func (b *Backoff) Hold(now time.Time, what string) error {
	if b.err == nil || !now.Before(b.until) {
		return nil
	}
	return fmt.Errorf("%s failed; next attempt in %s: %w", what, b.until.Sub(now).Round(time.Millisecond), b.err)
}

// Wait is the wait after the last failure; zero after a success.
func (b *Backoff) Wait() time.Duration { return b.wait }
