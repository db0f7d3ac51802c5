package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// Clock is a clocktesting.FakeClock that records the waits started on it with NewTimer
// and After and, while it steps, ends each one as soon as it starts: it steps the fake
// time by the wait right after the wait's timer is made, so the timer has fired before
// the waiter looks at it. Every other method is the FakeClock's. It is safe for
// concurrent use.
type Clock struct {
	*clocktesting.FakeClock

	mu       sync.Mutex
	stepping bool
	waits    []time.Duration // since the last TakeWaits
	started  int             // waits started in all
	changed  chan struct{}   // closed and replaced when a wait starts
}

var _ clock.WithTicker = (*Clock)(nil)

// NewStepping returns a Clock at t that ends every wait as soon as it starts.
func NewStepping(t time.Time) *Clock {
	return &Clock{FakeClock: clocktesting.NewFakeClock(t), stepping: true, changed: make(chan struct{})}
}

// NewHolding returns a Clock at t whose waits last until the test steps the clock past
// their end (Step, SetTime) or the waiter gives up.
func NewHolding(t time.Time) *Clock {
	return &Clock{FakeClock: clocktesting.NewFakeClock(t), changed: make(chan struct{})}
}

// SetStepping switches between ending every wait at once (true) and holding waits
// until the test steps the clock (false), for the waits that start afterwards.
func (c *Clock) SetStepping(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stepping = on
}

// NewTimer makes a timer of the fake clock that fires after d, records the wait, and
// steps the clock by d while it steps.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.begin(d)
	return t
}

// After is NewTimer's channel, as time.After is.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.begin(d)
	return ch
}

// begin records a wait of d that has begun, and ends it when the clock steps.
func (c *Clock) begin(d time.Duration) {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.started++
	close(c.changed)
	c.changed = make(chan struct{})
	step := c.stepping
	c.mu.Unlock()
	if step {
		c.Step(d)
	}
}

// Waits returns the durations of the waits started since the last TakeWaits, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// TakeWaits returns what Waits returns and forgets those waits.
func (c *Clock) TakeWaits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}

// Started returns how many waits have started on the clock in all (TakeWaits does not
// change the count).
func (c *Clock) Started() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// AwaitWaits blocks until n waits in all have started on the clock (see Started), or
// until ctx ends, and returns ctx's error then.
func (c *Clock) AwaitWaits(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		got, changed := c.started, c.changed
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Ticking is a clock.PassiveClock over a clocktesting.FakePassiveClock that steps it by a
// fixed step before every read of Now: each read sees a time one step later than the read
// before it. It is safe for concurrent use: two reads never see the same time.
type Ticking struct {
	mu   sync.Mutex
	fake *clocktesting.FakePassiveClock
	step time.Duration
}

var _ clock.PassiveClock = (*Ticking)(nil)

// NewTicking returns a Ticking clock at start whose first Now is start+step.
func NewTicking(start time.Time, step time.Duration) *Ticking {
	return &Ticking{fake: clocktesting.NewFakePassiveClock(start), step: step}
}

// Now steps the clock and returns its new time.
func (t *Ticking) Now() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fake.SetTime(t.fake.Now().Add(t.step))
	return t.fake.Now()
}

// Hold stops the steps of Now: the clock then moves only by Step, so that a test
// decides how much time passes whatever the code under test reads.
func (t *Ticking) Hold() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.step = 0
}

// Step moves the clock by d.
func (t *Ticking) Step(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fake.SetTime(t.fake.Now().Add(d))
}

// Since returns the time from ts to the clock's time, without a step.
func (t *Ticking) Since(ts time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fake.Since(ts)
}
