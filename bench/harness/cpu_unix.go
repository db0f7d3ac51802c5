//go:build unix

package harness

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used so far, user and system, from
// getrusage(RUSAGE_SELF): every goroutine's and the garbage collector's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
