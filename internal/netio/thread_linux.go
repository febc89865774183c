//go:build linux

package netio

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tunebench/tunebench/internal/step"
)

// yieldEvery is how often Thread.Tick yields. The runtime's sysmon takes the
// P away from a goroutine that has not been through the scheduler for 10 ms
// (forcePreemptNS) even while it sleeps in a system call, and then polls
// every 20 µs for a while: with four workers blocked in reads that was a
// sysmon wake-up every ~160 µs and a fifth of the client's CPU time. A
// goroutine that yields more often than every 10 ms is never the target.
// 8 ms leaves a margin for a late turn of the driver's loop; at 5 ms the
// yields (two thread hand-offs, and the policy and affinity switches around
// them) were about 5% of the driver's CPU in a select-only run.
const yieldEvery = 8 * time.Millisecond

// Thread is the scheduling discipline of one goroutine that drives a direct
// connection (see Target.Connect) in a loop, one per load-generating worker.
// Call Tick on that goroutine before each transaction. The zero value is
// ready; a Thread must not be shared.
//
// On its first Tick the goroutine is locked to its OS thread, and the thread
// is given the SCHED_BATCH policy: a worker woken by the server's reply then
// does not preempt the server process that woke it (wake-up preemption) but
// runs when that process blocks, usually at once, as it waits for the next
// statement. Where client and server share cores, that halves the server's
// involuntary context switches and cuts CPU per transaction on both sides
// (measured in docs/benchmarks.md). The policy needs no privilege; if the
// kernel refuses it, nothing else changes.
//
// Paced (an open loop's thread; a session's own thread is paced when its
// step context is an open loop's, step.WithPaced) leaves the policy out:
// the thread also wakes from its own timer for intended starts, and a
// SCHED_BATCH thread woken while a server process runs on its CPU waits
// for that process to block or for the end of its time slice. Without it
// the yields need no policy switches either (two system calls each).
//
// Pin keeps the goroutine on one CPU: its thread is given that affinity on
// the first Tick and again after each yield, and gets its own affinity
// back whenever it is returned to the runtime.
type Thread struct {
	started   bool
	paced     bool          // an open loop's (Paced, PaceFor): no SCHED_BATCH
	batch     bool          // Tick set SCHED_BATCH on the current thread
	lastYield time.Duration // since threadEpoch: one clock reading a Tick

	pin     bool // Pin was called
	pinCPU  int
	pinned  bool        // the current thread has pinCPU's affinity
	unpinTo unix.CPUSet // the thread's affinity before pinning
	haveTo  bool        // unpinTo was read

	// The policy attributes of the first thread, for every later switch:
	// the runtime's threads share them (SCHED_FLAG_RESET_ON_FORK), and
	// reading them again at each yield cost a system call.
	nice int32
}

// Pin asks Tick to keep the goroutine's thread on cpu (workload.PinnedThread).
// Call it on the goroutine before its first Tick. It reports false, changing
// nothing, if cpu is not one the process may run on.
func (t *Thread) Pin(cpu int) bool {
	var set unix.CPUSet
	if cpu < 0 || unix.SchedGetaffinity(0, &set) != nil || !set.IsSet(cpu) {
		return false
	}
	t.pin, t.pinCPU = true, cpu
	return true
}

// KernelBound says that the workers this Thread drives wait only on their
// sockets (step.KernelBound): direct connections.
func (t *Thread) KernelBound() {}

// Paced tells the Thread that it serves an open loop's schedule
// (step.PacedThread): Tick then leaves the thread's policy as it is.
func (t *Thread) Paced() { t.paced = true }

// PaceFor makes a Thread that has not started paced when ctx is an open
// loop's step context (step.WithPaced), and not paced otherwise (so it
// overrides an earlier Paced): for a session's own Thread, which the
// executor does not see; Session.Ready calls it before each Tick.
func (t *Thread) PaceFor(ctx context.Context) {
	if !t.started {
		t.paced = step.IsPaced(ctx)
	}
}

// pinThread gives the current (locked) thread the pinned affinity,
// remembering the one it had.
func (t *Thread) pinThread() {
	if !t.pin || t.pinned {
		return
	}
	if !t.haveTo {
		// The runtime's threads share the process's affinity: read it
		// once.
		if unix.SchedGetaffinity(0, &t.unpinTo) != nil {
			return
		}
		t.haveTo = true
	}
	var set unix.CPUSet
	set.Set(t.pinCPU)
	t.pinned = unix.SchedSetaffinity(0, &set) == nil
}

// unpinThread restores the affinity the current thread had before
// pinThread.
func (t *Thread) unpinThread() {
	if t.pinned {
		_ = unix.SchedSetaffinity(0, &t.unpinTo)
		t.pinned = false
	}
}

// NextYield is when Tick will next yield (step.Yielder).
func (t *Thread) NextYield() time.Time { return threadEpoch.Add(t.lastYield + yieldEvery) }

// threadEpoch is the origin of Thread.lastYield.
var threadEpoch = time.Now()

// Tick is called before each transaction, on the worker's goroutine.
func (t *Thread) Tick() {
	if !t.started {
		t.started = true
		runtime.LockOSThread()
		if !t.paced {
			t.batch, t.nice = startBatch()
		}
		t.pinThread()
		t.lastYield = time.Since(threadEpoch)
		return
	}
	if now := time.Since(threadEpoch); now-t.lastYield >= yieldEvery {
		t.lastYield = now
		// A locked goroutine that yields hands its P to another thread
		// and back (tens of µs, two wake-ups); unlocked, Gosched is a
		// cheap trip through the run queue. The thread is returned to the
		// runtime with its policy restored.
		t.unpinThread()
		if t.batch {
			setPolicy(unix.SCHED_NORMAL, t.nice)
		}
		runtime.UnlockOSThread()
		runtime.Gosched()
		runtime.LockOSThread()
		if t.batch {
			t.batch = setPolicy(unix.SCHED_BATCH, t.nice)
		}
		t.pinThread()
	}
}

// Stop releases the goroutine's thread with its normal policy. Call it on
// the worker's goroutine when it stops driving the connection (optional if
// the goroutine exits: the runtime then ends the locked thread).
func (t *Thread) Stop() {
	if !t.started {
		return
	}
	t.unpinThread()
	if t.batch {
		setPolicy(unix.SCHED_NORMAL, t.nice)
		t.batch = false
	}
	runtime.UnlockOSThread()
	t.started = false
}

// startBatch moves the calling thread from SCHED_OTHER to SCHED_BATCH,
// keeping its nice value, and reports whether it did, with that nice value
// for later switches (setPolicy). A thread that already had another policy
// (the user's choice, e.g. chrt) is left alone, and so is any failure.
func startBatch() (bool, int32) {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil || attr.Policy != unix.SCHED_NORMAL {
		return false, 0
	}
	return setPolicy(unix.SCHED_BATCH, attr.Nice), attr.Nice
}

// setPolicy gives the calling thread policy (SCHED_NORMAL or SCHED_BATCH)
// with nice; threads it creates start with SCHED_NORMAL.
func setPolicy(policy uint32, nice int32) bool {
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy, Nice: nice, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	return unix.SchedSetAttr(0, &a, 0) == nil
}

// EnsureProcs raises GOMAXPROCS to workers+1 if it is lower. A goroutine
// blocked in a read on a direct connection keeps its P; with fewer Ps than
// workers, a worker whose reply arrived waits for sysmon to take a P from
// a blocked one (20 µs to 10 ms) and sysmon spins doing it; the extra P lets
// sysmon see an idle P and leave the blocked ones alone. Only worth doing for
// direct connections. A GOMAXPROCS above the number of cores costs little
// here: the workers spend their time blocked in the kernel, not competing
// for Ps (the garbage collector does start more mark workers, but a
// worker allocates almost nothing per transaction).
func EnsureProcs(workers int) {
	if runtime.GOMAXPROCS(0) < workers+1 {
		runtime.GOMAXPROCS(workers + 1)
	}
}

// Batch reports whether the current thread was given SCHED_BATCH by Tick.
func (t *Thread) Batch() bool { return t.batch }
