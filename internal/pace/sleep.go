package pace

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Sleep waits on clk for d or until ctx is done, whichever comes first. It returns nil
// after d and ctx.Err() when ctx ended first (also when it had ended before the call). A
// d of zero or less returns at once. The wait is a timer of clk, so a fake clock drives
// it in tests.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
