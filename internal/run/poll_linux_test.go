//go:build linux

package run

import (
	"context"
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

// TestTimerSlackSet: the multiplexed open loop's timed waits and the
// thread-per-worker open loop's sleeps give their thread the run's timer
// slack (Config.TimerSlack), 1 ns for none.
func TestTimerSlackSet(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	slack := func() int {
		s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	p := newPoller(0)
	p.slack = 40 * time.Microsecond
	p.waitFine(time.Microsecond, pollRaw)
	if s := slack(); s != 40_000 {
		t.Errorf("after a raw wait: timer slack %d ns, want 40000", s)
	}
	fineSleep(time.Microsecond, 30*time.Microsecond)
	if s := slack(); s != 30_000 {
		t.Errorf("after fineSleep: timer slack %d ns, want 30000", s)
	}
	fineSleep(time.Microsecond, 0)
	if s := slack(); s != 1 {
		t.Errorf("after fineSleep with none: timer slack %d ns, want 1", s)
	}
}

// slackThread records the timer slack of the thread each Tick runs on.
type slackThread struct{ seen map[int]int }

func (s *slackThread) Tick() {
	if v, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		s.seen[v]++
	}
}
func (s *slackThread) Stop() {}

// TestOpenLoopMultiplexedTimerSlack: the multiplexed open loop waits with
// the configured slack (no other code or test sets 41 µs; a thread
// inherits its creator's slack, so a value other tests use could be a
// leftover), and the default applies when the config gives none.
func TestOpenLoopMultiplexedTimerSlack(t *testing.T) {
	for _, tc := range []struct {
		slack, want time.Duration
	}{{41 * time.Microsecond, 41 * time.Microsecond}, {0, DefaultTimerSlack}} {
		th := &slackThread{seen: map[int]int{}}
		cfg := muxOpenConfig(2, 1, 500, 300*time.Millisecond, 3)
		cfg.TimerSlack = tc.slack
		res := execMuxOneThread(t, context.Background(), cfg, 200*time.Microsecond, th)
		if res.TimerSlack != tc.want {
			t.Errorf("slack %v: the result says %v, want %v", tc.slack, res.TimerSlack, tc.want)
		}
		if tc.slack != 0 && th.seen[int(tc.want.Nanoseconds())] == 0 {
			t.Errorf("slack %v: no tick ran on a thread with a timer slack of %v (seen: %v)", tc.slack, tc.want, th.seen)
		}
	}
}
