package pace

import (
	"context"
	"time"
)

// SleepContext waits for d or until ctx is done, whichever comes first. It returns nil
// after d and ctx.Err() when ctx ended first (also when it had ended before the call).
func SleepContext(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
