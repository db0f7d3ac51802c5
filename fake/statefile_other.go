//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fake

import (
	"context"
	"errors"
	"os"
	"runtime"
)

// stateFilesSupported is false where this package has no file lock: Open refuses a state
// file there rather than let two processes write it at once.
const stateFilesSupported = false

const goos = runtime.GOOS

func lockFile(context.Context, *os.File) error {
	return errors.New("state files are not supported on " + goos)
}

func unlockFile(*os.File) {}
