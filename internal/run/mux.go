package run

import (
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/workload"
)

// muxPollMax bounds one poll(2): the loop then looks again at the stop
// signal, at workers waiting out a back-off or think time, and at steps
// whose context was cancelled (a cancelled step's socket is only marked,
// not woken, when no read is in progress; Continue then fails fast).
const muxPollMax = 100 * time.Millisecond

// muxSlot is one worker of a multiplexed group.
type muxSlot struct {
	ws        *workerState
	m         workload.Multiplexed
	pending   bool // a step is in flight
	st        int32
	start     time.Time
	notBefore time.Time // back-off or think time: no step before
	thinkEnd  time.Time // think deadline (for the overrun), zero if none
	backoff   time.Duration
	gone      bool // exited (workerExit done)
}

// multiplexable reports whether the workers can be driven Threads to a
// goroutine, and switches them to it if so.
func (r *runner) multiplexable() bool {
	t := r.cfg.Threads
	if r.cfg.forceMux && t <= 0 {
		t = 1
	}
	if r.open || t <= 0 || (t >= len(r.workers) && !r.cfg.forceMux) || !pollSupported {
		return false
	}
	ms := make([]workload.Multiplexed, len(r.workers))
	for i, ws := range r.workers {
		m, ok := ws.w.(workload.Multiplexed)
		if !ok {
			return false
		}
		ms[i] = m
	}
	for i, m := range ms {
		if !m.Multiplex(true) {
			for _, a := range ms[:i] {
				a.Multiplex(false)
			}
			return false
		}
	}
	return true
}

// muxGroups deals the workers to Threads groups in contiguous blocks
// (pgbench: thread i gets clients i*n/j up to (i+1)*n/j).
func (r *runner) muxGroups() [][]*workerState {
	n, t := len(r.workers), min(max(r.cfg.Threads, 1), len(r.workers))
	groups := make([][]*workerState, 0, t)
	for i := 0; i < t; i++ {
		lo, hi := i*n/t, (i+1)*n/t
		if hi > lo {
			groups = append(groups, r.workers[lo:hi])
		}
	}
	return groups
}

// muxLoop drives a group of multiplexed workers from one goroutine, closed
// loop: every idle worker starts its next step, then the goroutine waits in
// poll(2) until a reply arrives on one of the connections with a step in
// flight, and continues that step. A step's latency runs from just before
// its Begin to just after the Continue that ends it, so time a reply spends
// waiting while the thread serves another connection is counted, as in
// pgbench -j. Phases, states and bookkeeping are those of closedLoop.
func (r *runner) muxLoop(group []*workerState) {
	var th workload.Thread
	if r.cfg.NewThread != nil {
		th = r.cfg.NewThread()
	}
	slots := make([]muxSlot, len(group))
	for i, ws := range group {
		slots[i] = muxSlot{ws: ws, m: ws.w.(workload.Multiplexed)}
	}
	defer func() {
		for i := range slots {
			r.muxExit(&slots[i])
		}
		if th != nil {
			th.Stop()
		}
		// Only now the workers count as gone: when the run ends, the
		// group's goroutine is done with them and with its thread.
		for _, ws := range group {
			close(ws.exited)
		}
	}()
	ms := r.base.Add(r.msOff)
	me := r.base.Add(r.meOff)
	poller := newPoller(len(group))
	live := len(slots)
	stopping := false
	for live > 0 {
		if th != nil {
			th.Tick()
		}
		if !stopping {
			select {
			case <-r.stopIssue:
				stopping = true
			default:
			}
		}
		// Start a step on every idle worker that may start one.
		var wake time.Time
		for i := range slots {
			sl := &slots[i]
			if sl.gone || sl.pending {
				continue
			}
			if stopping {
				r.muxExit(sl)
				live--
				continue
			}
			now := time.Now()
			if now.Before(sl.notBefore) {
				if wake.IsZero() || sl.notBefore.Before(wake) {
					wake = sl.notBefore
				}
				continue
			}
			if !sl.thinkEnd.IsZero() {
				if over := now.Sub(sl.thinkEnd); over > 0 && sl.st == stStepMeasure {
					sl.ws.thinkOverrun += over
				}
				sl.thinkEnd = time.Time{}
			}
			st := stStepWarm
			if !now.Before(ms) {
				if r.txMode {
					if sl.ws.done >= r.cfg.Transactions {
						r.muxExit(sl)
						live--
						continue
					}
				} else if !now.Before(me) {
					r.muxExit(sl)
					live--
					continue
				}
				st = stStepMeasure
			}
			if !sl.ws.state.CompareAndSwap(stIdle, st) {
				r.muxExit(sl) // closed at the drain deadline
				live--
				continue
			}
			sl.st, sl.start = st, now
			o, pending, err := sl.m.Begin(r.stepCtx)
			if pending {
				sl.pending = true
				continue
			}
			if !r.muxDone(sl, o, err) {
				live--
			}
		}
		if live == 0 {
			break
		}
		// Wait for a reply on one of the connections with a step in flight.
		poller.reset()
		for i := range slots {
			if slots[i].pending {
				poller.add(i, slots[i].m.Fd())
			}
		}
		timeout := muxPollMax
		if !wake.IsZero() {
			if d := time.Until(wake); d < timeout {
				timeout = d
			}
		}
		if poller.len() == 0 && timeout <= 0 {
			continue
		}
		ready := poller.wait(timeout)
		if r.stepCtx.Err() != nil {
			// Cancelled at the drain deadline: let every step in flight
			// fail fast (Continue on a cancelled step does not block).
			ready = ready[:0]
			for i := range slots {
				if slots[i].pending {
					ready = append(ready, i)
				}
			}
		}
		for _, i := range ready {
			sl := &slots[i]
			o, pending, err := sl.m.Continue(r.stepCtx)
			if pending {
				continue
			}
			sl.pending = false
			if !r.muxDone(sl, o, err) {
				live--
			}
		}
	}
}

// muxDone records the end of slot's step, as closedLoop does after Step,
// and reports whether the worker goes on (false: it exited).
func (r *runner) muxDone(sl *muxSlot, o workload.Outcome, err error) bool {
	ws := sl.ws
	end := time.Now()
	st := sl.st
	if !ws.state.CompareAndSwap(st, stIdle) {
		r.muxExit(sl) // abandoned at the drain deadline: counted as unfinished
		return false
	}
	if err == nil {
		err = validClass(&o)
	}
	if err != nil {
		ws.stepErrors++
		if st == stStepMeasure {
			ws.unfinished++
		}
		r.fail(ws.id, err)
		r.muxExit(sl)
		return false
	}
	lat := end.Sub(sl.start)
	ph := metrics.PhaseWarmup
	if st == stStepMeasure {
		ph = metrics.PhaseMeasure
		ws.done++
		ws.lastEnd = end.Sub(r.base)
		if limit := r.cfg.LatencyLimit; limit > 0 && lat > limit && o.Class.Completed() {
			ws.late++
		}
		if o.Class.IsError() {
			ws.countSQLState(o.SQLState)
		}
	}
	ws.rec.Record(ph, o.Op, o.Class, lat)
	r.afterOutcome(ws, &o, end.Sub(r.base))
	if o.Class == workload.ClassConnError {
		// The worker reconnects inside its next Begin; space the attempts
		// out.
		sl.backoff = nextBackoff(sl.backoff)
		sl.notBefore = end.Add(jitter(ws.rng, sl.backoff))
		return true
	}
	sl.backoff = 0
	if o.Think > 0 {
		sl.notBefore = end.Add(o.Think)
		sl.thinkEnd = sl.notBefore
	}
	return true
}

// muxExit closes the slot's worker once; the group marks it gone (exited)
// when its goroutine ends.
func (r *runner) muxExit(sl *muxSlot) {
	if sl.gone {
		return
	}
	sl.gone = true
	_ = sl.ws.w.Close()
}
