package server

import "time"

// SetRestartWaitEvery makes a restart command's wait said every d, for a
// test; it returns the previous interval.
func SetRestartWaitEvery(d time.Duration) time.Duration {
	old := restartWaitEvery
	restartWaitEvery = d
	return old
}
