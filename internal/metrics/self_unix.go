//go:build unix

package metrics

import (
	"syscall"
	"time"
)

// processCPU returns the process's user+sys CPU time, 0 if unavailable.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
