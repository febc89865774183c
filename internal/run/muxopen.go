package run

import (
	"time"

	"github.com/tunebench/tunebench/internal/step"
)

// muxOpenWaitMax bounds one wait of a multiplexed open-loop thread: the
// thread keeps its P while it waits (poller.waitFine), and goroutines
// that need one (the collector, the samplers, a garbage collection) may
// wait that long for it. Under the runtime's 10 ms preemption tick, so
// the waits alone never make it preempt the thread.
const muxOpenWaitMax = 8 * time.Millisecond

// muxIdlePark: a multiplexed open-loop thread with nothing in flight whose
// next start is further away than this gives its OS thread back to the
// runtime (step.Thread.Stop) and sleeps on a runtime timer until
// muxParkLead before it, then waits the rest in raw waits. At a rate of
// one start a second, waking every muxOpenWaitMax to keep the P tripled
// the driver's CPU. An ordinary ppoll(2) instead, as before, has its P
// taken by the runtime's monitor after 10 ms, and each such hand-off sets
// the monitor polling every 20 µs for about a millisecond: at 20
// transactions a second that was 1,200 monitor wake-ups a second and most
// of the driver's CPU. A parked goroutine holds no P and is not in a
// system call: the monitor has nothing to take.
const muxIdlePark = 4 * muxOpenWaitMax

// muxParkLead is how long before the next start a parked thread wakes:
// the runtime's timers wake an idle process from an epoll wait whose
// timeout is whole milliseconds, so the precise part of the wait is left
// to the raw waits.
const muxParkLead = 2 * time.Millisecond

// muxParkMax bounds one sleep of a parked thread (a safety net: a halt
// ends the sleep, and nothing else changes while no step is in flight).
const muxParkMax = time.Second

// muxOpen is the open loop of multiplexed thread id (see muxLoop), which
// serves the slots owned; it returns the slots it still owns at the end.
//
// The thread draws its own share of the schedule: a Poisson process of
// the rate times its share of the workers, an independent stream of the
// run's seed (the threads' shares together are a Poisson process of the
// whole rate, as pgbench -R gives each of its threads its own). Intended
// starts that are due wait in the thread's queue until one of its workers
// is free; each is started as soon as it is due and a worker is free, in
// order, and latency runs from the intended start (coordinated-omission
// free), service time from the actual start. Between starts the thread
// waits in ppoll(2) with a timeout precise to microseconds for whichever
// comes first: a reply on a connection with a step in flight, or the next
// intended start when a worker is free for it. As in the thread-per-worker
// open loop, the schedule ends at the measurement's end, what was due
// before is still served in the drain, and a halt abandons the queue
// (counted as unfinished).
func (r *runner) muxOpen(sh *muxShared, id int, owned []int, th step.Thread) []int {
	slots := sh.slots
	sch := newScheduleStream(r.cfg.Rate*float64(len(owned))/float64(len(slots)), r.cfg.Seed, uint64(id))
	quota, mine := r.quota(len(owned)), int64(0) // transactions mode: the thread's measured starts
	next := sch.Next()
	exhausted := r.scheduleEnds(next, mine, quota)
	var due fifo
	// Measured starts still in the queue when the thread stops taking
	// them (a halt, or every worker gone) stay counted in sh.queued: the
	// run counts them as unfinished, even if it could not wait for this
	// thread to end.
	drop := func() {
		r.qPending.Add(-int64(due.len()))
		for due.len() > 0 {
			due.pop()
		}
	}
	defer drop()
	yielder, _ := th.(step.Yielder)
	poller := newPoller(len(owned))
	poller.slack = r.cfg.TimerSlack
	poller.useTimer()
	defer poller.close()
	park := time.NewTimer(time.Hour)
	park.Stop()
	var yieldAt time.Duration // the thread's next yield, since r.base
	for len(owned) > 0 {
		if th != nil {
			th.Tick()
			if yielder != nil {
				// The goroutine keeps its OS thread until then.
				poller.locked = yielder.NextYield()
				yieldAt = poller.locked.Sub(r.base)
			}
		}
		now := r.since()
		if !exhausted && r.isHalted() {
			// Interrupted, failed or past the drain deadline: nothing
			// more starts; the steps in flight finish.
			exhausted = true
			drop()
		}
		if !exhausted && next <= now {
			n, measured := int64(due.len()), int64(0)
			for !exhausted && next <= now {
				due.push(next)
				if next >= r.msOff {
					measured++
					mine++
				}
				next = sch.Next()
				exhausted = r.scheduleEnds(next, mine, quota)
			}
			sh.scheduled.Add(measured)
			sh.queuedMeasured.Add(measured)
			sh.queued(r, int64(due.len())-n)
		}
		// Start the due intended starts on the free workers. free: a
		// worker waits for the next intended start; ready: one could
		// start a due one now (its step ended at once).
		free, ready := false, false
		var wake time.Duration
		for _, i := range owned {
			sl := &slots[i]
			if sl.gone || sl.pending {
				continue
			}
			if due.len() == 0 && exhausted {
				r.muxExit(sh, sl)
				continue
			}
			if due.len() > 0 && now >= sl.nbOff {
				r.muxStartOpen(sh, sl, &due)
				if sl.gone || sl.pending {
					continue
				}
			}
			if sl.nbOff > now {
				// Backing off after a connection error.
				if wake == 0 || sl.nbOff < wake {
					wake = sl.nbOff
				}
				continue
			}
			free = true
			ready = ready || due.len() > 0
		}
		owned = compactOwned(slots, owned)
		if len(owned) == 0 {
			break
		}
		// Wait for a reply, or for the next intended start if a worker
		// is free to take it. Replies come within milliseconds and the
		// starts are precise: the thread keeps its P (pollRaw), for at
		// most muxOpenWaitMax a wait and never past the thread's next
		// yield (the runtime preempts a goroutine that has not been
		// through its scheduler for 10 ms, at the cost the raw wait
		// avoids). Idle until a start further away than muxIdlePark (low
		// rates), it parks (muxIdlePark).
		// One clock reading for every deadline (the starts above took
		// time since now).
		timeout, at := muxParkMax, r.since()
		if ready {
			timeout = 0
		}
		if free && !exhausted {
			timeout = min(timeout, next-at)
		}
		if wake != 0 {
			timeout = min(timeout, wake-at)
		}
		if timeout > muxIdlePark && !muxInFlight(slots, owned) {
			if th != nil {
				th.Stop() // the next Tick takes a thread again
			}
			// A halt ends the sleep; the top of the loop drops the queue.
			sleepOn(park, timeout-muxParkLead, r.halt)
			continue
		}
		mode := pollFine
		timeout = min(timeout, muxPollMax)
		if sh.raw {
			mode, timeout = pollRaw, min(timeout, muxOpenWaitMax)
			if yielder != nil {
				timeout = min(timeout, yieldAt-at)
			}
		}
		r.muxContinue(slots, r.muxReady(poller, nil, slots, owned, timeout, mode), func(sl *muxSlot, o step.Outcome, err error) {
			r.muxDoneOpen(sh, sl, o, err)
		})
	}
	return owned
}

// muxStartOpen starts, on the free slot sl, the first of the due intended
// starts that is not skipped for the latency limit (each taken counts off
// the queue). A step that ends at once (no connection) is recorded, and
// the slot is free again.
func (r *runner) muxStartOpen(sh *muxShared, sl *muxSlot, due *fifo) {
	for due.len() > 0 && !r.isHalted() {
		tk := due.pop()
		r.qPending.Add(-1)
		if tk >= r.msOff {
			sh.queuedMeasured.Add(-1)
		}
		now := r.since()
		st, run := r.beginOpen(sl.ws, tk, now, sl.freeAt)
		if !run {
			if st := sl.ws.state.Load(); st == stClosed || st == stAbandoned {
				r.muxExit(sh, sl) // closed at the drain deadline
				return
			}
			continue
		}
		sl.st, sl.tk, sl.startOff = st, tk, now
		o, pending, err := sl.m.Begin(r.stepCtx)
		if pending {
			sl.pending = true
			return
		}
		r.muxDoneOpen(sh, sl, o, err)
		return
	}
}

// muxDoneOpen records the end of slot sl's step, as openLoop does after
// Step; a worker whose step was abandoned or failed exits.
func (r *runner) muxDoneOpen(sh *muxShared, sl *muxSlot, o step.Outcome, err error) {
	end := r.since()
	sl.freeAt = end
	if r.endOpen(sl.ws, sl.st, sl.tk, sl.startOff, end, &o, err) != stepRecorded {
		r.muxExit(sh, sl)
		return
	}
	if o.Class == step.ClassConnError {
		// The worker reconnects inside its next Begin; space the attempts
		// out.
		sl.backoff = nextBackoff(sl.backoff)
		sl.nbOff = end + jitter(sl.ws.rng, sl.backoff)
		return
	}
	sl.backoff = 0
}

// queued counts n intended starts more in the open-loop threads' queues,
// and keeps the deepest the queues were together.
func (sh *muxShared) queued(r *runner, n int64) {
	d := r.qPending.Add(n)
	for {
		m := sh.maxDepth.Load()
		if d <= m || sh.maxDepth.CompareAndSwap(m, d) {
			return
		}
	}
}
