package sharedlist

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/internal/pace"
)

// The backoff after a failed list: the wait before the next list doubles with each
// failure in a row, from MinBackoff up to MaxBackoff, and resets when a list succeeds.
const (
	// MinBackoff is the wait after the first failure.
	MinBackoff = time.Second
	// MaxBackoff caps the wait.
	MaxBackoff = 30 * time.Second
)

// DefaultMaxAge is how old a snapshot may get before a lookup refreshes it, unless
// configured: the one default behind provider.DefaultCacheMaxAge (the cloud config's
// cache.maxAge), loadbalancer.DefaultMaxAge, routes.DefaultMaxAge and
// instances.DefaultLookupMaxAge. A minute is one list a minute for each snapshot, while
// the node lifecycle controller asks about NotReady Nodes every 5 seconds and the route
// controller lists the routes every 10 seconds.
const DefaultMaxAge = time.Minute

// Lister runs the lists of one snapshot: one at a time, shared by every caller that needs
// it, held back by a backoff after a failure (see the package documentation). Its state
// is guarded by the lock given to New.
type Lister struct {
	mu    sync.Locker
	clock clock.PassiveClock
	what  string

	listing *flight // the list under way, if any
	backoff pace.Backoff
}

// List makes one list. It runs on a goroutine of its own, without the lock, with a
// context that keeps the values of the caller that started it but not its cancellation.
// On success it returns the function that installs the result into the snapshot (nil:
// nothing to install), which the Lister calls with the lock held; on failure it returns
// the error, which every caller waiting for the list gets.
type List func(ctx context.Context) (install func(), err error)

// flight is one list that callers wait for.
type flight struct {
	done chan struct{}
	err  error
}

// New returns a Lister guarded by mu, timed by clk (nil: the real clock). what names the
// list in errors: "waiting for <what>", "<what> failed; next attempt in 2s".
func New(mu sync.Locker, clk clock.PassiveClock, what string) *Lister {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Lister{mu: mu, clock: clk, what: what, backoff: pace.Backoff{Min: MinBackoff, Max: MaxBackoff}}
}

// Until returns nil once done holds, joining the list under way or starting one (with
// begin) until it does. done and begin are called with the lock held; begin returns the
// list to run, and records what the snapshot needs to know of the moment the list began.
//
// It returns the error of a list it waited for, as it is; while the backoff after a
// failed list holds, an error that says when the next list may start and wraps the last
// failure; and, when ctx ends first, an error wrapping ctx's error. A list that a caller
// stopped waiting for goes on and is installed.
func (l *Lister) Until(ctx context.Context, done func() bool, begin func() List) error {
	for {
		l.mu.Lock()
		if done() {
			l.mu.Unlock()
			return nil
		}
		if f := l.listing; f != nil {
			l.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w", l.what, ctx.Err())
			}
			if f.err != nil {
				return f.err
			}
			continue // that list may have begun too early for this caller
		}
		if err := l.backoff.Hold(l.clock.Now(), l.what); err != nil {
			l.mu.Unlock()
			return err
		}
		f := &flight{done: make(chan struct{})}
		l.listing = f
		list := begin()
		l.mu.Unlock()

		// The caller that started the list waits for it like the others, and stops
		// waiting when its context ends.
		go l.run(context.WithoutCancel(ctx), f, list)
	}
}

// Wait returns once the list under way, if any, has ended (nil at once when none is); it
// starts no list, so it never makes a call. It returns the list's error, or, when ctx
// ends first, an error wrapping ctx's error. The lock must not be held.
func (l *Lister) Wait(ctx context.Context) error {
	l.mu.Lock()
	f := l.listing
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", l.what, ctx.Err())
	}
}

// run makes the list of flight f and installs it, or records its failure.
func (l *Lister) run(ctx context.Context, f *flight, list List) {
	install, err := list(ctx)
	l.mu.Lock()
	if err == nil {
		if install != nil {
			install()
		}
		l.backoff.Succeeded()
	} else {
		l.backoff.Failed(l.clock.Now(), err)
	}
	l.listing = nil
	f.err = err
	l.mu.Unlock()
	close(f.done)
}

// Backoff returns the wait after the last failed list before the next may start; zero
// after a success. The lock must be held.
func (l *Lister) Backoff() time.Duration { return l.backoff.Wait() }
