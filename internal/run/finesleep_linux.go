//go:build linux

package run

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// fineSleep waits d in a nanosleep(2) of the calling thread, with the
// given timer slack (Config.TimerSlack). The Go runtime's own timers, when
// the process has nothing else to do, wake from the netpoller's epoll
// wait, whose timeout is whole milliseconds: an open-loop worker waiting
// for a start a few hundred microseconds away woke up to a millisecond
// late, and that was the driver's part of every transaction's latency. A
// thread's nanosleep wakes within tens of microseconds. The thread is blocked meanwhile (the
// runtime hands its P to others); d is short (at most the scheduler's
// lookahead), so the wait is not interruptible.
func fineSleep(d, slack time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	// The kernel may defer the wake-up by that much to serve it with
	// others (the default slack is 50 µs). Per thread, so set each time.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, slackNs(slack), 0, 0, 0)
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
	runtime.UnlockOSThread()
}
