//go:build !unix

package harness

import "time"

// processCPU returns zero where getrusage is missing: the CPU figures then read 0.
func processCPU() time.Duration { return 0 }
