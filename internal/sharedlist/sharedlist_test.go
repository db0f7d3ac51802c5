package sharedlist_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// snapshot is a minimal user of a Lister: gen counts the installed lists, and each list
// answers what its cloud answers.
type snapshot struct {
	mu     sync.Mutex
	gen    int
	lister *sharedlist.Lister
	clock  *clocktesting.FakeClock
	cloud  cloud
}

// cloud counts the lists made. gate, when not nil, holds every list until it is closed;
// started receives one value when a list begins. fail, when set, is the next lists' error.
type cloud struct {
	calls   atomic.Int64
	gate    chan struct{}
	started chan struct{}
	fail    atomic.Pointer[error]
	// listCtxErr is the error of the last list's context when the list ended.
	listCtxErr atomic.Pointer[error]
}

func newSnapshot() *snapshot {
	s := &snapshot{clock: clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
	s.lister = sharedlist.New(&s.mu, s.clock, "the list of things")
	return s
}

// list is the snapshot's List: it waits for the gate, then installs a new generation or
// fails.
func (s *snapshot) list(ctx context.Context) (func(), error) {
	s.cloud.calls.Add(1)
	if s.cloud.started != nil {
		s.cloud.started <- struct{}{}
	}
	if s.cloud.gate != nil {
		<-s.cloud.gate
	}
	err := ctx.Err()
	s.cloud.listCtxErr.Store(&err)
	if p := s.cloud.fail.Load(); p != nil && *p != nil {
		return nil, *p
	}
	return func() { s.gen++ }, nil
}

// refresh makes sure a list newer than generation seen has been installed.
func (s *snapshot) refresh(ctx context.Context, seen int) error {
	return s.lister.Until(ctx, func() bool { return s.gen > seen }, func() sharedlist.List { return s.list })
}

func (s *snapshot) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func TestConcurrentCallersShareOneList(t *testing.T) {
	s := newSnapshot()
	s.cloud.gate = make(chan struct{})
	s.cloud.started = make(chan struct{}, 1)
	const callers = 20
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- s.refresh(t.Context(), 0) }()
	}
	<-s.cloud.started
	close(s.cloud.gate)
	for range callers {
		require.NoError(t, <-errs)
	}
	assert.EqualValues(t, 1, s.cloud.calls.Load(), "one list for every caller")
	assert.Equal(t, 1, s.generation(), "installed once")

	require.NoError(t, s.refresh(t.Context(), 0), "done already: no list")
	assert.EqualValues(t, 1, s.cloud.calls.Load())
	require.NoError(t, s.refresh(t.Context(), 1), "a caller that needs a newer list gets one")
	assert.EqualValues(t, 2, s.cloud.calls.Load())
}

func TestTheListsResultIsShared(t *testing.T) {
	s := newSnapshot()
	s.cloud.gate = make(chan struct{})
	s.cloud.started = make(chan struct{}, 1)
	cause := errors.New("503")
	s.cloud.fail.Store(&cause)

	starter := make(chan error, 1)
	go func() { starter <- s.refresh(t.Context(), 0) }()
	<-s.cloud.started
	// The others find the list under way: each asks done once, with the lock held, and
	// takes the list to wait for in the same step.
	const callers = 5
	joined := make(chan struct{}, callers)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			errs <- s.lister.Until(t.Context(), func() bool {
				joined <- struct{}{}
				return s.gen > 0
			}, func() sharedlist.List { return s.list })
		}()
	}
	for range callers {
		<-joined
	}
	close(s.cloud.gate)
	for range callers {
		assert.Equal(t, cause, <-errs, "every caller gets the list's own error, as it is")
	}
	require.ErrorIs(t, <-starter, cause, "the starter too (or the hold that wraps it)")
	assert.EqualValues(t, 1, s.cloud.calls.Load())
	assert.Zero(t, s.generation(), "a failed list installs nothing")
}

func TestACallerStopsWaitingAtItsDeadlineWhileTheListGoesOn(t *testing.T) {
	s := newSnapshot()
	s.cloud.gate = make(chan struct{})
	s.cloud.started = make(chan struct{}, 1)

	// The caller that starts the list gives up; the list goes on.
	ctx, cancel := context.WithCancel(t.Context())
	starter := make(chan error, 1)
	go func() { starter <- s.refresh(ctx, 0) }()
	<-s.cloud.started
	cancel()
	err := <-starter
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "waiting for the list of things")

	// Another caller, with a deadline already past, does not wait either.
	past, cancelPast := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancelPast()
	require.ErrorIs(t, s.refresh(past, 0), context.DeadlineExceeded)

	// A patient caller joins the same list and gets its result.
	patient := make(chan error, 1)
	go func() { patient <- s.refresh(t.Context(), 0) }()
	close(s.cloud.gate)
	require.NoError(t, <-patient)
	assert.EqualValues(t, 1, s.cloud.calls.Load(), "the list the first caller started served the last")
	assert.Equal(t, 1, s.generation(), "and was installed")
	assert.NoError(t, *s.cloud.listCtxErr.Load(), "the list's context did not end with its starter's")
}

func TestFailedListBacksOff(t *testing.T) {
	s := newSnapshot()
	cause := errors.New("503")
	s.cloud.fail.Store(&cause)

	err := s.refresh(t.Context(), 0)
	require.ErrorIs(t, err, cause)
	for range 5 {
		err := s.refresh(t.Context(), 0)
		require.ErrorIs(t, err, cause, "the hold wraps the last failure")
		assert.Contains(t, err.Error(), "the list of things failed; next attempt in 1s")
	}
	assert.EqualValues(t, 1, s.cloud.calls.Load(), "one list, then the backoff")

	// How long each retry waits: step the clock until the next list is made.
	var waits []time.Duration
	for range 7 {
		before := s.cloud.calls.Load()
		waited := time.Duration(0)
		for s.cloud.calls.Load() == before {
			require.Less(t, waited, time.Minute)
			s.clock.Step(250 * time.Millisecond)
			waited += 250 * time.Millisecond
			require.Error(t, s.refresh(t.Context(), 0))
		}
		waits = append(waits, waited)
	}
	assert.Equal(t, []time.Duration{
		sharedlist.MinBackoff, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		sharedlist.MaxBackoff, sharedlist.MaxBackoff,
	}, waits, "doubling from MinBackoff, capped at MaxBackoff")

	s.cloud.fail.Store(nil)
	s.clock.Step(sharedlist.MaxBackoff)
	require.NoError(t, s.refresh(t.Context(), 0), "the list works again")
	s.mu.Lock()
	assert.Zero(t, s.lister.Backoff(), "a success resets the backoff")
	s.mu.Unlock()

	s.cloud.fail.Store(&cause)
	require.ErrorIs(t, s.refresh(t.Context(), 1), cause)
	s.mu.Lock()
	assert.Equal(t, sharedlist.MinBackoff, s.lister.Backoff(), "the doubling starts over")
	s.mu.Unlock()
}

func TestWaitJoinsTheListUnderWayAndStartsNone(t *testing.T) {
	s := newSnapshot()
	require.NoError(t, s.lister.Wait(t.Context()), "no list under way: at once")
	assert.Zero(t, s.cloud.calls.Load(), "Wait starts no list")

	s.cloud.gate = make(chan struct{})
	s.cloud.started = make(chan struct{}, 1)
	go func() { _ = s.refresh(t.Context(), 0) }()
	<-s.cloud.started
	waited := make(chan error, 1)
	go func() { waited <- s.lister.Wait(t.Context()) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned before the list under way ended: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(s.cloud.gate)
	require.NoError(t, <-waited)
	assert.Equal(t, 1, s.generation(), "the list it waited for is installed")
	assert.EqualValues(t, 1, s.cloud.calls.Load())

	// A caller whose context ends stops waiting.
	s.cloud.gate = make(chan struct{})
	go func() { _ = s.refresh(t.Context(), 1) }()
	<-s.cloud.started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.lister.Wait(ctx), context.Canceled)
	close(s.cloud.gate)
}
