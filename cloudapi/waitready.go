package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/internal/pace"
)

// WaitReady waits until a resource that the cloud builds after answering its create (or
// change) is ready, for a cloud that refuses changes while it builds and has no action
// object to poll (the action polling of an API like Hetzner's waits for the action
// instead). It reads the resource id with read, then every interval until ready reports
// it done, and returns the last read. read makes its requests through ccmkit's gate
// (Transport, or Request before each), so every poll waits for the rate limiter and is
// counted as an extra request, and ctx (the call's attempt, with its timeout) bounds the
// whole wait.
//
// Errors are ErrTransient for op on id, as the resource may have changed: ready's error
// (a build that failed), a ctx that ends first, and a read that answers ErrNotFound (a
// resource just created may not be readable yet; never "gone", the error matches no
// ErrNotFound). Any other error of read
// is returned wrapped. An interval that is not positive is ErrInvalidRequest.
func WaitReady[T any](ctx context.Context, op Operation, id string, interval time.Duration, read func(context.Context) (T, error), ready func(T) (bool, error)) (T, error) {
	var none T
	if interval <= 0 {
		return none, NewError(ErrInvalidRequest, op, id, fmt.Errorf("a poll interval of %v: it must be positive", interval))
	}
	for polls := 1; ; polls++ {
		v, err := read(ctx)
		switch {
		case errors.Is(err, ErrNotFound):
			// its message, not its class: a wait's not-found matches ErrNotFound nowhere
			return none, NewError(ErrTransient, op, id, fmt.Errorf("waiting until it is ready, read %d answered %q", polls, err.Error()))
		case err != nil:
			return none, fmt.Errorf("waiting until it is ready, read %d: %w", polls, err)
		}
		done, err := ready(v)
		switch {
		case err != nil:
			return none, NewError(ErrTransient, op, id, fmt.Errorf("not ready after %d reads: %w", polls, err))
		case done:
			return v, nil
		}
		if err := pace.Sleep(ctx, clock.RealClock{}, interval); err != nil {
			return none, NewError(ErrTransient, op, id, fmt.Errorf("not ready after %d reads: %w", polls, err))
		}
	}
}
