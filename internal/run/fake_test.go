package run

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
)

// stepFunc is the behaviour of a fake worker: id is the worker, n counts
// that worker's steps from 0.
type stepFunc func(ctx context.Context, id int, n int64) (stp.Outcome, error)

type fakeWorker struct {
	id     int
	n      int64
	step   stepFunc
	closed *atomic.Int64
	steps  *atomic.Int64
}

func (f *fakeWorker) Step(ctx context.Context) (stp.Outcome, error) {
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
	step stepFunc
	// trips: a multiplexed worker's step (muxFactory) is this many round
	// trips, the step and then trips-1 replies at once (0: one).
	trips  int
	made   atomic.Int64
	closed atomic.Int64
	steps  atomic.Int64
}

// factory makes plain fake workers (one goroutine each); muxFactory makes
// ones that can be multiplexed.
func (ff *fakeFleet) factory() Factory {
	return func(ctx context.Context, id int) (stp.Worker, error) {
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

func ok(op string) stp.Outcome {
	return stp.Outcome{Op: op, Class: stp.ClassOK, Attempts: 1}
}

// sleepStep is a fake step that takes d.
func sleepStep(d time.Duration) stepFunc {
	return func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
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
	return func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
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
		if c == stp.ClassSkippedLate && !skip {
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

// runMode says how a closed-loop test body drives its fake workers, and so
// which clock it runs on.
//
// The zero mode gives every worker its own goroutine and runs in a
// synctest bubble (inBubble): the fake steps sleep on the bubble's fake
// clock, which moves only when every goroutine of the run is durably
// blocked (in a sleep, on a timer or a channel), straight to the next
// deadline. Durations are then exact and a busy machine cannot stretch
// them, so these runs assert exact counts, latencies and instants.
//
// mux drives the workers multiplexed, two to a thread (mux.go). A
// multiplexed thread waits for its fake workers' pipes in poll(2), and a
// goroutine in a system call is not durably blocked: in a bubble the fake
// clock would never move (the thread polls again at every timeout). These
// runs stay on the real clock and assert only what holds however loaded
// the machine is: hard bounds (a sleep or a timer never ends early, so a
// step never takes less than its sleep and nothing starts before its
// time), comparisons with what the fake workers recorded, and hand-offs
// that the test synchronises with the executor's hooks, never a band
// around a wall-clock duration.
type runMode struct{ mux bool }

// virtual reports whether the body runs on a bubble's fake clock.
func (m runMode) virtual() bool { return !m.mux }

// execute runs Execute with ff's workers, multiplexed on half as many
// threads in mux mode.
func (m runMode) execute(ctx context.Context, cfg Config, ff *fakeFleet) (*Result, error) {
	if !m.mux {
		return Execute(ctx, cfg, ff.factory())
	}
	cfg.Threads = max(1, (cfg.Workers+1)/2)
	cfg.forceMux = true
	cfg.NewThread = func() stp.Thread { return &countingThread{} }
	res, err := Execute(ctx, cfg, ff.muxFactory(-1))
	if res != nil && res.Threads != cfg.Threads {
		panic(fmt.Sprintf("multiplexed run drove %d workers on %d threads, want %d", cfg.Workers, res.Threads, cfg.Threads))
	}
	return res, err
}

// inBubble runs a closed-loop test body, one goroutine per worker, in a
// synctest bubble.
func inBubble(t *testing.T, body func(*testing.T, runMode)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) { body(t, runMode{}) })
}

// sameMs checks a latency read from a histogram against the exact value
// it must have: the histograms keep 3 significant digits, so it may be
// up to one part in a thousand off.
func sameMs(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > want/1000 {
		t.Errorf("%s = %v ms, want %v ms", name, got, want)
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
