//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fake

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenGivesUpOnALockHeldByAHungProcess: Open, which has no caller's context, waits
// openLockTimeout for a state file's lock and then fails naming the file, instead of
// waiting forever for a process that holds the lock and hangs.
func TestOpenGivesUpOnALockHeldByAHungProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	held, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	// Another open file description: flock conflicts with it as with another process's.
	require.NoError(t, syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	saved := openLockTimeout
	openLockTimeout = 50 * time.Millisecond
	t.Cleanup(func() { openLockTimeout = saved })

	_, err = Open(Config{StateFile: path})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "another process has held it")
	_, statErr := os.Stat(path)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing is written without the lock")
}
