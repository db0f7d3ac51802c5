package main

import (
	"sync"
	"time"
)

// virtualClock is the time the provider's caches age by (provider.Options.Now): the
// quiet-cluster simulation moves it from one controller pass to the next instead of
// sleeping.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newVirtualClock(start time.Time) *virtualClock { return &virtualClock{now: start} }

// Now returns the virtual time.
func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *virtualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock forward by d.
func (c *virtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
