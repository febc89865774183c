//go:build linux

package run

import (
	"encoding/binary"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollSupported: multiplexed workers are driven with poll(2).
const pollSupported = true

// poller waits for readability on a set of descriptors, each tagged with
// its slot index. It is reused for every wait (no allocation).
type poller struct {
	fds   []unix.PollFd
	slots []int
	ready []int
	// slack is the timer slack of the timed waits (Config.TimerSlack;
	// 0: 1 ns, the smallest). slackTid is the thread given it at the last
	// timed wait, 0 none yet.
	slack    time.Duration
	slackTid int
	// locked, if set by the caller, says the goroutine keeps its OS
	// thread until then (its step.Yielder's next yield); slackLocked is
	// the value it had at the last look at the thread id.
	locked, slackLocked time.Time
	// timer, if set up (useTimer), ends the raw timed waits while the
	// thread's deadlines are shared by several waits (see deadlineTimer).
	timer *deadlineTimer
}

func newPoller(n int) *poller {
	return &poller{fds: make([]unix.PollFd, 0, n), slots: make([]int, 0, n), ready: make([]int, 0, n)}
}

// useTimer makes the raw timed waits use a deadline timer (the
// multiplexed open loop's); close releases it.
func (p *poller) useTimer() { p.timer = &deadlineTimer{fd: -1, base: time.Now()} }

// close releases what the poller holds (its deadline timer).
func (p *poller) close() {
	if p.timer != nil && p.timer.fd >= 0 {
		_ = unix.Close(p.timer.fd)
	}
	p.timer = nil
}

// deadlineTimer is a timer descriptor (timerfd) kept armed for the deadline
// of a multiplexed open-loop thread's waits. Each ppoll(2) with a timeout
// arms a high-resolution timer and, when a reply comes first, cancels it;
// on a virtual machine programming the timer is an exit to the hypervisor.
// The waits of a tpcb-like transaction, one per statement, share a
// deadline (the next start, or the thread's yield): polling the descriptor
// with no timeout, armed once for all of them, took 5% off the driver's
// CPU per transaction at a quarter of the capacity of 2 cores. A
// select-only transaction waits once or twice for a deadline, and arming
// a descriptor for each cost 1.5% more than the timeouts. So the thread
// polls the descriptor while its deadlines have lately been waited for
// about deadlineReuse times or more (a moving average), else it waits with
// timeouts. The descriptor's timer has no slack: it fires at the deadline
// (--timer-slack then does not apply), never after it.
type deadlineTimer struct {
	fd      int       // the timerfd, -1 none yet
	refused bool      // the system refused one: timeouts only
	base    time.Time // the origin of the deadlines below
	armed   int64     // deadline it is armed for (ns since base), 0 none or fired
	last    int64     // the deadline of the previous timed wait
	waits   int       // timed waits for last so far
	// reuse is the moving average of the waits per deadline, in
	// 1/reuseScale.
	reuse int
	arms  int // times armed (for tests)
}

// deadlineSame is how far apart two deadlines may be and still be one:
// the caller computes each timeout from its own clock reading. The
// descriptor is re-armed for a deadline more than deadlineEarly before
// the one it is armed for (the waits then never end late by more than
// that, and the clock readings' own drift, well under a microsecond, does
// not re-arm it), and for one more than deadlineSame after it.
const (
	deadlineSame  = 10 * time.Microsecond
	deadlineEarly = time.Microsecond
)

// deadlineReuse is the average number of waits per deadline from which the
// waits poll the descriptor (a tpcb-like run's is 5, a select-only run's
// 1.6, on 2 threads at a quarter of the capacity).
const deadlineReuse = 3

// reuseScale is the fixed-point scale of deadlineTimer.reuse; the average
// moves a sixteenth of the way to each deadline's count.
const reuseScale = 256

// prepare returns the descriptor to poll instead of the timeout, or -1 to
// wait with the timeout.
func (t *deadlineTimer) prepare(timeout time.Duration) int {
	d := int64(time.Since(t.base) + timeout)
	if t.last == 0 || abs64(d-t.last) > int64(deadlineSame) {
		if t.last != 0 {
			t.reuse += (t.waits*reuseScale - t.reuse) / 16
		}
		t.last, t.waits = d, 0
	}
	t.waits++
	if t.reuse < deadlineReuse*reuseScale || t.refused {
		return -1
	}
	if t.fd < 0 {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
		if err != nil {
			t.refused = true
			return -1
		}
		t.fd = fd
	}
	if t.armed == 0 || t.armed-d > int64(deadlineEarly) || d-t.armed > int64(deadlineSame) {
		// Relative: the kernel adds its clock at the call, microseconds
		// from the reading above. Re-arming also clears a firing nobody
		// polled.
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(timeout, 1)))}
		if unix.TimerfdSettime(t.fd, 0, &its, nil) != nil {
			t.armed = 0
			return -1
		}
		t.armed = d
		t.arms++
	}
	return t.fd
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (p *poller) reset() { p.fds, p.slots = p.fds[:0], p.slots[:0] }

func (p *poller) len() int { return len(p.fds) }

func (p *poller) add(slot, fd int) {
	p.fds = append(p.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	p.slots = append(p.slots, slot)
}

// wait blocks until at least one descriptor is readable (or in error or
// hung up: the read then reports it), or timeout passes, and returns the
// slots that are ready. With no descriptor it sleeps for timeout. A signal
// (the Go runtime's preemption) restarts the wait with the whole timeout:
// the caller's loop keeps its own time.
func (p *poller) wait(timeout time.Duration) []int {
	p.ready = p.ready[:0]
	ms := int((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms < 0 {
		ms = 0
	}
	for {
		n, err := unix.Poll(p.fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return p.ready
		}
		p.collect()
		return p.ready
	}
}

// waitFine is wait with a timeout precise to microseconds, for the
// multiplexed open loop: ppoll(2) with the calling thread's timer slack
// set to p.slack (the kernel's default, 50 µs, is what pgbench -R waits
// with; the run's default is half that, Config.TimerSlack), set when the
// wait runs on another thread than the last (a reused thread id with
// another slack would only be less precise, or wake more often). ppoll
// allows at least 0.1% of its timeout whatever the slack (8 µs of the
// longest raw wait, muxOpenWaitMax). The thread id is read once per
// p.locked: a goroutine locked to its thread between its yields, as the
// caller says, cannot have moved (a tpcb-like open-loop transaction has
// about 8 waits, and the read was one system call each). A signal ends
// the wait early with no descriptor ready (the caller's loop keeps its
// own time).
//
// raw: the ppoll is a raw system call. The Go runtime does not see the
// thread enter a system call, and the goroutine keeps its P while it
// waits. An ordinary system call that blocks for more than the runtime's
// monitor tick (20 µs) while no P is idle has its P taken and handed to
// another thread, and each hand-off sets the monitor polling every 20 µs
// again: in an open-loop tpcb-like run at a few hundred transactions a
// second that was 6 monitor wake-ups per transaction and a tenth of the
// driver's CPU. The cost of keeping the P: other goroutines (the
// collector, the samplers) wait for it while no other P is free, so the
// caller bounds a raw wait (muxOpenWaitMax) and its step.Thread yields; a
// signal (the runtime preempting the goroutine, e.g. for a garbage
// collection) ends the wait, and the caller's loop then passes a
// preemption point.
//
// timeout waitForever: no timeout (the closed loop, with a waker). The
// runtime's monitor interrupts a raw wait that has kept its P for 10 ms
// with its preemption signal.
func (p *poller) waitFine(timeout time.Duration, mode pollMode) []int {
	p.ready = p.ready[:0]
	ts := unix.NsecToTimespec(int64(max(timeout, 0)))
	tsp := &ts
	if timeout == waitForever {
		tsp = nil
	}
	raw := mode == pollRaw || mode == pollRawCoarse
	slack := timeout > 0 && mode != pollRawCoarse
	if slack {
		// Only a wait that can time out needs the slack (a look
		// without waiting does not), and only a thread that does not
		// have it yet: the thread id is a cheaper system call than the
		// setting.
		runtime.LockOSThread()
		if p.locked.IsZero() || p.locked != p.slackLocked {
			if tid := unix.Gettid(); tid != p.slackTid {
				if unix.Prctl(unix.PR_SET_TIMERSLACK, slackNs(p.slack), 0, 0, 0) == nil {
					p.slackTid = tid
				}
			}
			p.slackLocked = p.locked
		}
	}
	// The deadline timer, if it takes this wait, is polled last.
	timed := false
	if raw && tsp != nil && timeout > 0 && p.timer != nil {
		if fd := p.timer.prepare(timeout); fd >= 0 {
			timed, tsp = true, nil
			p.fds = append(p.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			p.slots = append(p.slots, -1)
		}
	}
	var n int
	var err error
	if raw {
		var fds unsafe.Pointer
		if len(p.fds) > 0 {
			fds = unsafe.Pointer(&p.fds[0])
		}
		r, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(fds), uintptr(len(p.fds)), uintptr(unsafe.Pointer(tsp)), 0, 0, 0)
		if n = int(r); errno != 0 {
			err = errno
		}
	} else {
		n, err = unix.Ppoll(p.fds, tsp, nil)
	}
	if slack {
		runtime.UnlockOSThread()
	}
	if timed {
		k := len(p.fds) - 1
		if p.fds[k].Revents != 0 {
			p.timer.armed = 0 // fired: the deadline has come
		}
		p.fds, p.slots = p.fds[:k], p.slots[:k]
	}
	if err != nil || n <= 0 {
		return p.ready // a signal (EINTR) or the timeout
	}
	p.collect()
	return p.ready
}

// slackNs is a timer slack for prctl(PR_SET_TIMERSLACK): at least 1 ns (0
// would restore the thread's default).
func slackNs(d time.Duration) uintptr { return uintptr(max(d.Nanoseconds(), 1)) }

// collect appends the ready slots to p.ready (a waker, slot -1, is not
// one).
func (p *poller) collect() {
	for i := range p.fds {
		if p.fds[i].Revents != 0 && p.slots[i] >= 0 {
			p.ready = append(p.ready, p.slots[i])
		}
	}
}

// waker is an eventfd: once woken, every wait that includes it (slot -1)
// returns at once. It lets a closed-loop thread wait for replies with no
// timeout, as pgbench does: a timeout arms a high-resolution timer at
// each wait and cancels it when a reply comes first, and on a virtual
// machine programming the timer is an exit to the hypervisor; in a
// tpcb-like run that was 2% of the driver's CPU.
type waker struct{ fd int }

// newWaker returns a waker, or nil if the system refuses one.
func newWaker() *waker {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil
	}
	return &waker{fd: fd}
}

// wake makes the waker readable for good.
func (w *waker) wake() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(w.fd, one[:])
}

func (w *waker) close() { _ = unix.Close(w.fd) }

// addWaker adds w to the wait (nil: nothing).
func (p *poller) addWaker(w *waker) {
	if w != nil {
		p.add(-1, w.fd)
	}
}

// allowedCPUs lists the CPUs the process may run on, in order, or nil.
func allowedCPUs() []int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
