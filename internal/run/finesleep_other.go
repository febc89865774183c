//go:build !linux

package run

import "time"

// fineSleep waits d (the runtime's timers elsewhere).
func fineSleep(d, _ time.Duration) { time.Sleep(d) }
