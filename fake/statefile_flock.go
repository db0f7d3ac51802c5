//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fake

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
)

const stateFilesSupported = true

const goos = runtime.GOOS

// lockFile takes an exclusive flock on f, waiting while another Cloud holds it (each holds
// it for one write) until ctx ends. The wait polls in real time, not on the cloud's
// clock: it waits for another process, whose writes no test clock moves.
func lockFile(ctx context.Context, f *os.File) error {
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Millisecond)
	}
}

// unlockFile releases lockFile's lock. It cannot fail on a file this package opened and
// locked; were it to, closing the file would be the only release, and the lock file stays
// open for the cloud's lifetime, so the error is not actionable.
func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
