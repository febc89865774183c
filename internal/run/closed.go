package run

import (
	"errors"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/step"
)

// closedLoop is one closed-loop worker: Step, record, think or back off,
// repeat. Per transaction it reads the monotonic clock twice (r.since),
// does two uncontended
// CASes on its own state word and one uncontended lock in its own recorder;
// no goroutine hand-off, no timer unless the workload asks for think time.
func (r *runner) closedLoop(ws *workerState) {
	defer r.workerExit(ws)
	var backoff time.Duration
	for {
		select {
		case <-r.stopIssue:
			return
		default:
		}
		start := r.since()
		st := stStepWarm
		if start >= r.msOff {
			if r.txMode {
				if ws.done >= r.cfg.Transactions {
					return
				}
			} else if start >= r.meOff {
				return
			}
			st = stStepMeasure
		}
		if !ws.state.CompareAndSwap(stIdle, st) {
			return // closed at the drain deadline
		}
		o, err := ws.w.Step(r.stepCtx)
		end := r.since()
		if r.endStep(ws, st, start, end, &o, err) != stepRecorded {
			return
		}
		if o.Class == step.ClassConnError {
			// The worker reconnects inside its next Step; space the
			// attempts out.
			backoff = nextBackoff(backoff)
			ws.sleep(jitter(ws.rng, backoff), r.stopIssue)
			continue
		}
		backoff = 0
		if o.Think > 0 {
			deadline := end + o.Think
			if ws.sleep(o.Think, r.stopIssue) && st == stStepMeasure {
				if over := r.since() - deadline; over > 0 {
					ws.thinkOverrun += over
				}
			}
		}
	}
}

// stepEnd is what endStep made of a finished step.
type stepEnd int

const (
	stepRecorded  stepEnd = iota // recorded; the worker goes on
	stepAbandoned                // abandoned at the drain deadline (counted as unfinished): the worker exits
	stepFailed                   // the step returned an error, which fails the run: the worker exits
)

// endStep does the bookkeeping of a closed-loop step that ran in state st
// (warm-up or measure) from start to end (since r.base), for closedLoop and
// muxLoop alike:
// it hands the worker's state back, and records the outcome and its
// latency in the worker's recorder.
func (r *runner) endStep(ws *workerState, st int32, start, end time.Duration, o *step.Outcome, err error) stepEnd {
	lat := end - start
	ph, e, after := r.settle(ws, st, o, err, lat)
	if e != stepRecorded {
		return e
	}
	if st == stStepMeasure {
		ws.done++
		ws.lastEnd = end
	}
	ws.rec.Record(ph, o.Op, o.Class, lat)
	r.afterOutcome(ws, o, end)
	return r.failAfter(ws, after)
}

// failAfter fails the run with the error of a step that counted
// (step.Aborted), if any: the worker exits.
func (r *runner) failAfter(ws *workerState, after error) stepEnd {
	if after == nil {
		return stepRecorded
	}
	r.fail(ws.id, after)
	return stepFailed
}

// settle ends a step that ran in state st, for both loops: it hands the
// worker's state back (stepAbandoned if the collector abandoned the step
// meanwhile), fails the run on a step error (stepFailed), and counts what
// a measured step counts: late (latency over the limit), its error's
// SQLSTATE, its retries. It returns the step's phase, and for a step that
// counts but stops the run (step.Aborted) its error, for the caller to
// fail the run with once it has recorded the step (failAfter).
func (r *runner) settle(ws *workerState, st int32, o *step.Outcome, err error, latency time.Duration) (metrics.Phase, stepEnd, error) {
	if !ws.state.CompareAndSwap(st, stIdle) {
		return 0, stepAbandoned, nil // counted as unfinished
	}
	measured := st == stStepMeasure
	var after error
	if err != nil {
		if ab, ok := errors.AsType[*step.Aborted](err); ok {
			err, after = nil, ab.Err
		}
	}
	if err == nil {
		err = validClass(o)
	}
	if err != nil {
		ws.stepErrors++
		if measured {
			ws.unfinished++
		}
		r.fail(ws.id, err)
		return 0, stepFailed, nil
	}
	if !measured {
		return metrics.PhaseWarmup, stepRecorded, after
	}
	if limit := r.cfg.LatencyLimit; limit > 0 && latency > limit && o.Class.Completed() {
		ws.late++
	}
	if o.Class.IsError() {
		ws.countSQLState(o.SQLState)
	}
	if o.Attempts > 1 {
		ws.countRetried(o)
	}
	return metrics.PhaseMeasure, stepRecorded, after
}
