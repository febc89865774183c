//go:build linux

package run

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	stp "github.com/tunebench/tunebench/internal/step"
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

// TestDeadlineTimer: a multiplexed open-loop thread's raw waits poll a
// timer descriptor, armed once per deadline, while its deadlines have been
// waited for deadlineReuse times or more on average, and wait with ppoll
// timeouts otherwise; the descriptor ends a wait at its deadline.
func TestDeadlineTimer(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	p := newPoller(1)
	p.useTimer()
	defer p.close()
	p.add(0, pipe[0])
	ping := func() {
		if _, err := unix.Write(pipe[1], []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	drain := func() { _, _ = unix.Read(pipe[0], make([]byte, 16)) }
	// A guard: a wait nothing ends (the descriptor not polled, and no
	// timeout) ends by this write, 2 s on.
	guard := time.AfterFunc(2*time.Second, ping)
	defer guard.Stop()

	// Deadlines waited for n times each, a reply ending every wait.
	ping()
	deadlines := func(count, n int) {
		t.Helper()
		base := time.Now().Add(time.Second)
		for k := range count {
			d := base.Add(time.Duration(k) * time.Millisecond)
			for range n {
				if got := p.waitFine(time.Until(d), pollRaw); len(got) != 1 {
					t.Fatalf("a wait with a reply: ready %v", got)
				}
			}
		}
	}
	// Like a tpcb-like run's: the descriptor is taken, armed about once
	// per deadline (a wait descheduled for more than deadlineSame
	// between its clock readings sees another deadline: the bounds leave
	// room for that on a loaded machine).
	deadlines(40, 6)
	if arms := p.timer.arms; arms == 0 || arms > 80 {
		t.Fatalf("40 deadlines waited for 6 times each: armed %d times, want 1 to 80", arms)
	}
	// Like a select-only run's: back to the timeouts.
	deadlines(60, 1)
	arms := p.timer.arms
	deadlines(20, 1)
	if p.timer.arms != arms {
		t.Fatalf("deadlines waited for once each: the descriptor armed %d more times", p.timer.arms-arms)
	}

	// Several waits again (an average above the bound by more than the
	// last deadline's single wait takes off): the descriptor is armed
	// for the deadline and ends the idle wait at it, not before, not
	// much after.
	p.timer.reuse = (deadlineReuse + 1) * reuseScale
	deadline := time.Now().Add(50 * time.Millisecond)
	arms = p.timer.arms
	for range 3 {
		p.waitFine(time.Until(deadline), pollRaw)
	}
	if n := p.timer.arms - arms; n < 1 || n > 2 || p.timer.armed == 0 {
		t.Fatalf("3 waits for one deadline: armed %d times (armed: %v), want once", n, p.timer.armed != 0)
	}
	drain()
	// A signal (the runtime's preemption) ends a raw wait early: the
	// caller waits again, as here.
	var got []int
	for time.Until(deadline) > deadlineSame && len(got) == 0 {
		got = p.waitFine(time.Until(deadline), pollRaw)
		if p.timer.armed == 0 && time.Until(deadline) > deadlineSame {
			t.Fatalf("the descriptor fired %v before the deadline", time.Until(deadline))
		}
	}
	late := time.Since(deadline)
	if len(got) != 0 || late < -deadlineSame || late > 50*time.Millisecond {
		t.Fatalf("idle wait on the descriptor: ready %v, ended %v after the deadline", got, late)
	}
	if p.timer.armed != 0 {
		t.Error("the descriptor fired, and is still taken as armed")
	}
	// An earlier deadline re-arms it (a wait never ends late), a
	// later one by no more than deadlineSame does not.
	ping()
	deadline = time.Now().Add(time.Second)
	for range 2 {
		p.waitFine(time.Until(deadline), pollRaw)
	}
	armed := p.timer.armed
	arms = p.timer.arms
	p.timer.last = 0 // one wait each, whatever the averages
	p.timer.reuse = (deadlineReuse + 1) * reuseScale
	p.waitFine(time.Until(deadline.Add(-5*time.Microsecond)), pollRaw)
	if p.timer.arms != arms+1 || p.timer.armed >= armed {
		t.Errorf("a deadline 5 µs earlier: armed %d more times, now for %v after the old one, want once, before", p.timer.arms-arms, time.Duration(p.timer.armed-armed))
	}
	p.timer.last, p.timer.reuse = 0, (deadlineReuse+1)*reuseScale
	arms = p.timer.arms
	p.waitFine(time.Until(deadline), pollRaw)
	if p.timer.arms != arms {
		t.Errorf("a deadline 5 µs later: re-armed")
	}
	// A poller without the timer (the closed loop's) makes none.
	q := newPoller(0)
	q.waitFine(time.Millisecond, pollRaw)
	if q.timer != nil {
		t.Error("a poller without useTimer has a deadline timer")
	}
}

// timerfds counts the process's timer descriptors (/proc/self/fd).
func timerfds(t *testing.T) int {
	t.Helper()
	n, err := countTimerfds()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func countTimerfds() (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[timerfd]" {
			n++
		}
	}
	return n, nil
}

// timerfdThread yields as the pg target's threads do (step.Yielder, every
// 8 ms), and records, at its ticks, the most timer descriptors the process
// had open (it looks at every 8th tick).
type timerfdThread struct {
	ticks, max int
	err        error
	next       time.Time
}

func (s *timerfdThread) Tick() {
	if now := time.Now(); !now.Before(s.next) {
		s.next = now.Add(8 * time.Millisecond)
	}
	if s.ticks++; s.ticks%8 == 0 && s.err == nil {
		// On the run's thread, not the test's: errors are reported after.
		var n int
		n, s.err = countTimerfds()
		s.max = max(s.max, n)
	}
}
func (s *timerfdThread) Stop()                {}
func (s *timerfdThread) NextYield() time.Time { return s.next }

// TestOpenLoopMultiplexedUsesDeadlineTimer: a multiplexed open-loop thread
// whose transactions are several round trips each (a tpcb-like run's: its
// waits share the deadline of the next start or of the thread's yield)
// waits on a deadline timer with its raw waits, and closes it at the end.
// (TestDeadlineTimer tests the timer; this, that the open loop uses it.)
func TestOpenLoopMultiplexedUsesDeadlineTimer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8)) // raw waits
	before := timerfds(t)
	th := &timerfdThread{}
	ff := &fakeFleet{step: sleepStep(0), trips: 7}
	cfg := muxOpenConfig(2, 1, 500, 600*time.Millisecond, 5)
	cfg.forceMux = true
	cfg.NewThread = func() stp.Thread { return th }
	res, err := Execute(context.Background(), cfg, ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if th.err != nil {
		t.Fatal(th.err)
	}
	if res.Committed == 0 || ff.steps.Load() != res.Committed {
		t.Fatalf("%d steps, %d committed", ff.steps.Load(), res.Committed)
	}
	if th.max <= before {
		t.Errorf("%d ticks: no timer descriptor beyond the %d there before, want the thread's deadline timer", th.ticks, before)
	}
	if after := timerfds(t); after != before {
		t.Errorf("%d timer descriptors after the run, %d before: the thread's was not closed", after, before)
	}
}
