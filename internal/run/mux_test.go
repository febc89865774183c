package run

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/workload"
)

// muxMode makes execute drive the fake workers multiplexed: fakeFleet then
// makes fakeMuxWorkers and execute deals them to half as many threads.
var muxMode bool

// execute is Execute, multiplexed in muxMode.
func execute(ctx context.Context, cfg Config, f Factory) (*Result, error) {
	if muxMode {
		cfg.Threads = max(1, (cfg.Workers+1)/2)
		cfg.forceMux = true
		cfg.NewThread = func() workload.Thread { return &countingThread{} }
	}
	res, err := Execute(ctx, cfg, f)
	if muxMode && res != nil && res.Threads != cfg.Threads {
		panic(fmt.Sprintf("multiplexed run drove %d workers on %d threads, want %d", cfg.Workers, res.Threads, cfg.Threads))
	}
	return res, err
}

type countingThread struct{ ticks, stops int }

func (c *countingThread) Tick() { c.ticks++ }
func (c *countingThread) Stop() { c.stops++ }

// fakeMuxWorker runs the fake step on a goroutine started by Begin; the
// goroutine writes a byte to a pipe when the step is done, and Continue
// reads it and returns the outcome.
type fakeMuxWorker struct {
	fakeWorker
	r, w    *os.File
	o       workload.Outcome
	err     error
	shared  bool
	refuse  bool
	pending atomic.Bool
}

func (f *fakeMuxWorker) Multiplex(on bool) bool {
	if on && f.refuse {
		return false
	}
	f.shared = on
	return true
}

func (f *fakeMuxWorker) Begin(ctx context.Context) (workload.Outcome, bool, error) {
	if !f.shared {
		panic("Begin on a worker that was not switched to multiplexing")
	}
	if !f.pending.CompareAndSwap(false, true) {
		panic("Begin with a step pending")
	}
	go func() {
		f.o, f.err = f.fakeWorker.Step(ctx)
		_, _ = f.w.Write([]byte{1})
	}()
	return workload.Outcome{}, true, nil
}

func (f *fakeMuxWorker) Continue(ctx context.Context) (workload.Outcome, bool, error) {
	var b [1]byte
	if _, err := f.r.Read(b[:]); err != nil {
		panic(err)
	}
	f.pending.Store(false)
	return f.o, false, f.err
}

func (f *fakeMuxWorker) Fd() int { return int(f.r.Fd()) }

func (f *fakeMuxWorker) Close() error {
	if f.pending.Load() {
		panic("Close with a step pending")
	}
	f.r.Close()
	f.w.Close()
	return f.fakeWorker.Close()
}

func (ff *fakeFleet) muxFactory(refuse int) Factory {
	return func(ctx context.Context, id int) (workload.Worker, error) {
		ff.made.Add(1)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		return &fakeMuxWorker{fakeWorker: fakeWorker{id: id, step: ff.step, closed: &ff.closed, steps: &ff.steps}, r: r, w: w, refuse: id == refuse}, nil
	}
}

// TestClosedLoopMultiplexed runs the closed-loop tests with the workers
// multiplexed: the results must obey the same rules.
func TestClosedLoopMultiplexed(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	muxMode = true
	defer func() { muxMode = false }()
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"CountsAndTPS", TestClosedLoopCountsAndTPS},
		{"TransactionsModeExactCounts", TestTransactionsModeExactCounts},
		{"WarmupExcluded", TestWarmupExcluded},
		{"DrainRecordsInFlightWork", TestDrainRecordsInFlightWork},
		{"DrainTimeoutCountsUnfinished", TestDrainTimeoutCountsUnfinished},
		{"InterruptReturnsPromptly", TestInterruptReturnsPromptly},
		{"ConnErrorBackoffAndOutage", TestConnErrorBackoffAndOutage},
		{"StepErrorStopsRun", TestStepErrorStopsRun},
		{"InvalidOutcomeClassStopsRun", TestInvalidOutcomeClassStopsRun},
		{"ThinkTimeOutsideTimedRegion", TestThinkTimeOutsideTimedRegion},
		{"LatencyLimitCountsLate", TestClosedLoopLatencyLimitCountsLate},
		{"MeasureHooks", TestMeasureHooks},
		{"PerOpTotalsAndTicks", TestPerOpTotalsAndTicks},
	} {
		t.Run(tc.name, tc.f)
	}
}

// TestMuxThreads: 5 workers on 2 threads overlap their steps (a step is
// 20 ms of waiting, so 2 threads serving 5 workers approach 5 in flight);
// the result says how many threads ran.
func TestMuxThreads(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	ff := &fakeFleet{step: sleepStep(20 * time.Millisecond)}
	var mu sync.Mutex
	th := []*countingThread{}
	cfg := Config{Workers: 5, Threads: 2, Duration: 500 * time.Millisecond, Tick: 100 * time.Millisecond,
		NewThread: func() workload.Thread {
			mu.Lock()
			defer mu.Unlock()
			c := &countingThread{}
			th = append(th, c)
			return c
		}}
	res, err := Execute(context.Background(), cfg, ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if res.Threads != 2 || len(th) != 2 {
		t.Fatalf("threads %d, disciplines made %d; want 2", res.Threads, len(th))
	}
	for _, c := range th {
		if c.ticks == 0 || c.stops != 1 {
			t.Errorf("thread discipline ticked %d times, stopped %d times", c.ticks, c.stops)
		}
	}
	// One step in flight per worker: up to 250 tps; one per thread would
	// be 100.
	within(t, "tps", res.TPS, 180, 251)
	within(t, "p50 ms", res.Latency.PercentileMs(50), 19, 30)
}

// TestMuxFallback: one worker that cannot be multiplexed gives every worker
// its own goroutine, and the others are switched back.
func TestMuxFallback(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	var made []*fakeMuxWorker
	f := ff.muxFactory(2)
	res, err := Execute(context.Background(), Config{Workers: 4, Threads: 2, Duration: 200 * time.Millisecond},
		func(ctx context.Context, id int) (workload.Worker, error) {
			w, err := f(ctx, id)
			if err == nil {
				made = append(made, w.(*fakeMuxWorker))
			}
			return w, err
		})
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if res.Threads != 4 || res.Committed == 0 {
		t.Fatalf("threads %d committed %d; want one goroutine per worker", res.Threads, res.Committed)
	}
	for _, w := range made {
		if w.shared {
			t.Errorf("worker %d left switched to multiplexing", w.id)
		}
	}
}

// TestThreadsWithRateRefused: the open loop has no multiplexed form.
func TestThreadsWithRateRefused(t *testing.T) {
	_, err := Execute(context.Background(), Config{Workers: 4, Threads: 2, Rate: 100, Duration: time.Second}, (&fakeFleet{step: sleepStep(0)}).factory())
	if err == nil {
		t.Fatal("threads < workers with a rate accepted")
	}
}
