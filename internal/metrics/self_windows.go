//go:build windows

package metrics

import (
	"time"

	"golang.org/x/sys/windows"
)

// processCPU returns the process's user+kernel CPU time (GetProcessTimes),
// 0 if unavailable.
func processCPU() time.Duration {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	// FILETIMEs count 100 ns intervals.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
