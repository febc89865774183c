package run

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/workload"
)

// stepFunc is the behaviour of a fake worker: id is the worker, n counts
// that worker's steps from 0.
type stepFunc func(ctx context.Context, id int, n int64) (workload.Outcome, error)

type fakeWorker struct {
	id     int
	n      int64
	step   stepFunc
	closed *atomic.Int64
	steps  *atomic.Int64
}

func (f *fakeWorker) Step(ctx context.Context) (workload.Outcome, error) {
	n := f.n
	f.n++
	f.steps.Add(1)
	return f.step(ctx, f.id, n)
}

func (f *fakeWorker) Close() error {
	f.closed.Add(1)
	return nil
}

// fakeFleet builds fake workers and counts what happened to them.
type fakeFleet struct {
	step   stepFunc
	made   atomic.Int64
	closed atomic.Int64
	steps  atomic.Int64
}

func (ff *fakeFleet) factory() Factory {
	if muxMode {
		return ff.muxFactory(-1)
	}
	return func(ctx context.Context, id int) (workload.Worker, error) {
		ff.made.Add(1)
		return &fakeWorker{id: id, step: ff.step, closed: &ff.closed, steps: &ff.steps}, nil
	}
}

// checkClosed asserts every worker made was closed exactly once.
func (ff *fakeFleet) checkClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for ff.closed.Load() != ff.made.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c, m := ff.closed.Load(), ff.made.Load(); c != m {
		t.Errorf("closed %d workers, made %d", c, m)
	}
}

func ok(op string) workload.Outcome {
	return workload.Outcome{Op: op, Class: workload.ClassOK, Attempts: 1}
}

// sleepStep is a fake step that takes d.
func sleepStep(d time.Duration) stepFunc {
	return func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(d)
		return ok("op"), nil
	}
}

// stall makes every step that runs during [from, to) (relative to the first
// Step of the run) block until to.
type stall struct {
	once     sync.Once
	origin   time.Time
	from, to time.Duration
}

func (s *stall) wrap(d time.Duration) stepFunc {
	return func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		s.once.Do(func() { s.origin = time.Now() })
		time.Sleep(d)
		if el := time.Since(s.origin); el >= s.from && el < s.to {
			time.Sleep(s.to - el)
		}
		return ok("op"), nil
	}
}

func sumTotals(r *Result, skip bool) int64 {
	var n int64
	for c, v := range r.Totals {
		if c == workload.ClassSkippedLate && !skip {
			continue
		}
		n += v
	}
	return n
}

func within(t *testing.T, name string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want in [%v, %v]", name, got, lo, hi)
	}
}
