package run

import (
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/workload"
)

// closedLoop is one closed-loop worker: Step, record, think or back off,
// repeat. Per transaction it reads the clock twice, does two uncontended
// CASes on its own state word and one uncontended lock in its own recorder;
// no goroutine hand-off, no timer unless the workload asks for think time.
func (r *runner) closedLoop(ws *workerState) {
	defer r.workerExit(ws)
	ms := r.base.Add(r.msOff)
	me := r.base.Add(r.meOff)
	limit := r.cfg.LatencyLimit
	var backoff time.Duration
	for {
		select {
		case <-r.stopIssue:
			return
		default:
		}
		start := time.Now()
		st := stStepWarm
		if !start.Before(ms) {
			if r.txMode {
				if ws.done >= r.cfg.Transactions {
					return
				}
			} else if !start.Before(me) {
				return
			}
			st = stStepMeasure
		}
		if !ws.state.CompareAndSwap(stIdle, st) {
			return // closed at the drain deadline
		}
		o, err := ws.w.Step(r.stepCtx)
		end := time.Now()
		if !ws.state.CompareAndSwap(st, stIdle) {
			return // abandoned at the drain deadline: counted as unfinished
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
			return
		}
		lat := end.Sub(start)
		ph := metrics.PhaseWarmup
		if st == stStepMeasure {
			ph = metrics.PhaseMeasure
			ws.done++
			ws.lastEnd = end.Sub(r.base)
			if limit > 0 && lat > limit && o.Class.Completed() {
				ws.late++
			}
			if o.Class.IsError() {
				ws.countSQLState(o.SQLState)
			}
		}
		ws.rec.Record(ph, o.Op, o.Class, lat)
		r.afterOutcome(ws, &o, end.Sub(r.base))

		if o.Class == workload.ClassConnError {
			// The worker reconnects inside its next Step; space the
			// attempts out.
			backoff = nextBackoff(backoff)
			ws.sleep(jitter(ws.rng, backoff), r.stopIssue)
			continue
		}
		backoff = 0
		if o.Think > 0 {
			deadline := end.Add(o.Think)
			if ws.sleep(o.Think, r.stopIssue) && st == stStepMeasure {
				if over := time.Since(deadline); over > 0 {
					ws.thinkOverrun += over
				}
			}
		}
	}
}
