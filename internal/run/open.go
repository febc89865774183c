package run

import (
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/step"
)

// fifo is the scheduler's overflow queue: intended starts that did not fit
// in the channel. It only grows (nothing is ever dropped).
type fifo struct {
	buf  []time.Duration
	head int
}

func (f *fifo) len() int             { return len(f.buf) - f.head }
func (f *fifo) push(v time.Duration) { f.buf = append(f.buf, v) }
func (f *fifo) front() time.Duration { return f.buf[f.head] }
func (f *fifo) pop() (v time.Duration) {
	v = f.buf[f.head]
	f.head++
	if f.head == len(f.buf) {
		f.buf, f.head = f.buf[:0], 0
	} else if f.head > 1024 && f.head*2 > len(f.buf) {
		n := copy(f.buf, f.buf[f.head:])
		f.buf, f.head = f.buf[:n], 0
	}
	return v
}

// scheduler generates the intended start times of the Poisson schedule
// (origin: the run start, so warm-up and measurement share one schedule that
// never resets) and hands them to the worker pool. The hand-off never drops
// and never blocks the schedule: what does not fit in the channel waits in
// an unbounded FIFO, and the queue depth is tracked.
func (r *runner) scheduler() {
	defer close(r.schedDone)
	defer close(r.q)
	sch := NewSchedule(r.cfg.Rate, r.cfg.Seed)
	quota := r.quota(len(r.workers))
	next := sch.Next()
	exhausted := r.scheduleEnds(next, r.scheduled, quota)
	var dq fifo
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := r.since()
		for !exhausted && next <= now+lookahead {
			dq.push(next)
			if next >= r.msOff {
				r.scheduled++
			}
			next = sch.Next()
			exhausted = r.scheduleEnds(next, r.scheduled, quota)
		}
	flush:
		for dq.len() > 0 {
			select {
			case r.q <- dq.front():
				dq.pop()
			default:
				break flush
			}
		}
		if d := int64(len(r.q) + dq.len()); d > r.maxDepth {
			r.maxDepth = d
		}
		r.qPending.Store(int64(dq.len()))
		if exhausted && dq.len() == 0 {
			return
		}
		var send chan<- time.Duration
		var front time.Duration
		if dq.len() > 0 {
			send, front = r.q, dq.front()
		}
		var tc <-chan time.Time
		if !exhausted {
			wait := next - lookahead - r.since()
			if wait < minWake {
				wait = minWake
			}
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case send <- front:
			dq.pop()
		case <-tc:
		case <-r.halt:
			for dq.len() > 0 {
				if dq.pop() >= r.msOff {
					r.schedUnfinished++
				}
			}
			r.qPending.Store(0)
			return
		}
	}
}

// quota is the number of measured intended starts that workers serve in
// transactions mode (pgbench -t with -R: each client's count includes the
// transactions skipped for the latency limit), 0 in duration mode.
func (r *runner) quota(workers int) int64 {
	if !r.txMode {
		return 0
	}
	return int64(workers) * r.cfg.Transactions
}

// scheduleEnds reports whether a schedule whose next intended start is
// next, having handed out measured measured starts, ends before it: at
// the measurement's end, or in transactions mode once the quota is out.
func (r *runner) scheduleEnds(next time.Duration, measured, quota int64) bool {
	if r.txMode {
		return measured >= quota
	}
	return next >= r.meOff
}

// openLoop is one pool worker: take the next intended start t_k, wait until
// t_k if early, skip it if already later than the latency limit, else run
// it. Latency is measured from t_k, service time from the actual start.
func (r *runner) openLoop(ws *workerState) {
	defer r.workerExit(ws)
	var backoff time.Duration
	for {
		// When this worker became free to take the next start: a start
		// taken later than both that and its due time was held up by the
		// driver itself (the scheduler's hand-off, the worker's wake-up).
		freeAt := r.since()
		tk, ok := <-r.q
		if !ok {
			return
		}
		measured := tk >= r.msOff
		if r.isHalted() {
			if measured {
				ws.unfinished++
			}
			continue
		}
		now := r.since()
		if now < tk {
			// tk is at most the lookahead away: a precise wait of the
			// thread (fineSleep), then a halt that came meanwhile.
			fineSleep(tk-now, r.cfg.TimerSlack)
			// Under a fake clock (testing/synctest) the thread's sleep
			// passes no time: the runtime's timer then does.
			if now = r.since(); now < tk && !ws.sleep(tk-now, r.halt) || r.isHalted() {
				if measured {
					ws.unfinished++
				}
				continue
			}
			now = r.since()
		}
		st, run := r.beginOpen(ws, tk, now, freeAt)
		if !run {
			continue
		}
		o, err := ws.w.Step(r.stepCtx)
		if r.endOpen(ws, st, tk, now, r.since(), &o, err) != stepRecorded {
			return
		}
		if o.Class == step.ClassConnError {
			backoff = nextBackoff(backoff)
			ws.sleep(jitter(ws.rng, backoff), r.halt)
			continue
		}
		backoff = 0
	}
}

// beginOpen decides, for worker ws free since freeAt, about the intended
// start tk taken at now (offsets since the run start): a start whose lag
// is already beyond the latency limit is skipped (counted), one the
// collector closed the worker for is unfinished; otherwise the worker's
// state is moved into the step (st, returned with run true) and the
// dispatch delay recorded: how long after both tk and freeAt the start
// was taken, the driver's own part of the lag.
func (r *runner) beginOpen(ws *workerState, tk, now, freeAt time.Duration) (st int32, run bool) {
	measured := tk >= r.msOff
	ph, st := metrics.PhaseWarmup, stStepWarm
	if measured {
		ph, st = metrics.PhaseMeasure, stStepMeasure
	}
	if limit := r.cfg.LatencyLimit; limit > 0 && now-tk > limit {
		ws.rec.Count(ph, SkippedOp, step.ClassSkippedLate)
		return st, false
	}
	if !ws.state.CompareAndSwap(stIdle, st) {
		if measured {
			ws.unfinished++ // closed at the drain deadline
		}
		return st, false
	}
	if measured {
		ws.dispatch.Record(now - max(tk, freeAt))
	}
	return st, true
}

// endOpen does the bookkeeping of an open-loop step that ran in state st
// (warm-up or measure) for the intended start tk, started at start and
// ended at end (offsets since the run start), for openLoop and the
// multiplexed open loop alike: it hands the worker's state back, and
// records the outcome with its latency (from tk), service time and lag.
func (r *runner) endOpen(ws *workerState, st int32, tk, start, end time.Duration, o *step.Outcome, err error) stepEnd {
	latency := end - tk
	ph, e, after := r.settle(ws, st, o, err, latency)
	if e != stepRecorded {
		return e
	}
	if st == stStepMeasure {
		ws.lastStart, ws.lastEnd = start, end
	}
	ws.rec.RecordOpen(ph, o.Op, o.Class, latency, end-start, start-tk)
	r.afterOutcome(ws, o, end)
	return r.failAfter(ws, after)
}
