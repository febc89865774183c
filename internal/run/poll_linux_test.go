//go:build linux

package run

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSlackOncePerLockedPeriod: a timed wait gives its thread the smallest
// timer slack; within one locked period (poller.locked unchanged) later
// waits do not look at the thread again, a new period or no period does.
func TestSlackOncePerLockedPeriod(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	p := newPoller(1)
	p.locked = time.Now()
	p.waitFine(time.Microsecond, pollRaw)
	if p.slackTid != tid {
		t.Fatalf("first wait: slack set on thread %d, want %d", p.slackTid, tid)
	}
	if s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil || s != 1 {
		t.Errorf("timer slack %d (%v), want 1 ns", s, err)
	}
	// As if the slack had gone to another thread: only a look at the
	// thread would notice.
	p.slackTid = -1
	p.waitFine(time.Microsecond, pollRaw)
	if p.slackTid != -1 {
		t.Error("a wait in the same locked period looked at the thread again")
	}
	p.locked = p.locked.Add(time.Millisecond)
	p.waitFine(time.Microsecond, pollRaw)
	if p.slackTid != tid {
		t.Errorf("new period: slack on thread %d, want %d", p.slackTid, tid)
	}
	p.locked, p.slackTid = time.Time{}, -1
	p.waitFine(time.Microsecond, pollRaw)
	if p.slackTid != tid {
		t.Errorf("no period: slack on thread %d, want %d", p.slackTid, tid)
	}
}
