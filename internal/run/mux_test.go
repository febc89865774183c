package run

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
)

type countingThread struct{ ticks, stops int }

func (c *countingThread) Tick() { c.ticks++ }
func (c *countingThread) Stop() { c.stops++ }

// fakeMuxWorker runs the fake step on a goroutine started by Begin; the
// goroutine writes a byte to a pipe when the step is done, and Continue
// reads it and returns the outcome.
type fakeMuxWorker struct {
	fakeWorker
	r, w    *os.File
	o       stp.Outcome
	err     error
	shared  bool
	refuse  bool
	pending atomic.Bool
	// begins counts Begin calls; the first failFirst end at once with a
	// connection error (a reconnect that failed), at the times noted.
	begins    int
	failFirst int
	failedAt  []time.Time
	// trips is the round trips of a step (fakeFleet.trips), left the
	// ones still to come in the step pending.
	trips, left int
}

func (f *fakeMuxWorker) Multiplex(on bool) bool {
	if on && f.refuse {
		return false
	}
	f.shared = on
	return true
}

func (f *fakeMuxWorker) Begin(ctx context.Context) (stp.Outcome, bool, error) {
	if !f.shared {
		panic("Begin on a worker that was not switched to multiplexing")
	}
	if f.pending.Load() {
		panic("Begin with a step pending")
	}
	f.begins++
	if f.begins <= f.failFirst {
		f.failedAt = append(f.failedAt, time.Now())
		return stp.Outcome{Op: "op", Class: stp.ClassConnError, Err: errors.New("connection refused")}, false, nil
	}
	f.pending.Store(true)
	f.left = f.trips - 1
	go func() {
		f.o, f.err = f.fakeWorker.Step(ctx)
		_, _ = f.w.Write([]byte{1})
	}()
	return stp.Outcome{}, true, nil
}

func (f *fakeMuxWorker) Continue(ctx context.Context) (stp.Outcome, bool, error) {
	var b [1]byte
	if _, err := f.r.Read(b[:]); err != nil {
		panic(err)
	}
	if f.left > 0 {
		// Another round trip of the step (a statement of a transaction).
		f.left--
		go func() { _, _ = f.w.Write([]byte{1}) }()
		return stp.Outcome{}, true, nil
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
	return func(ctx context.Context, id int) (stp.Worker, error) {
		ff.made.Add(1)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		return &fakeMuxWorker{fakeWorker: fakeWorker{id: id, step: ff.step, closed: &ff.closed, steps: &ff.steps}, r: r, w: w, refuse: id == refuse,
			trips: max(1, ff.trips)}, nil
	}
}

// TestClosedLoopMultiplexed runs the closed-loop tests with the workers
// multiplexed: the results must obey the same rules. The threads wait in
// poll(2), so these runs cannot use a synctest bubble: they are on the real
// clock and assert only what holds on a loaded machine (see runMode).
func TestClosedLoopMultiplexed(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	for _, tc := range []struct {
		name string
		f    func(*testing.T, runMode)
	}{
		{"CountsAndTPS", closedLoopCountsAndTPS},
		{"TransactionsModeExactCounts", transactionsModeExactCounts},
		{"WarmupExcluded", warmupExcluded},
		{"DrainRecordsInFlightWork", drainRecordsInFlightWork},
		{"DrainTimeoutCountsUnfinished", drainTimeoutCountsUnfinished},
		{"InterruptReturnsPromptly", interruptReturnsPromptly},
		{"ConnErrorBackoffAndOutage", connErrorBackoffAndOutage},
		{"StepErrorStopsRun", stepErrorStopsRun},
		{"AbortedStepCountsThenStops", abortedStepCountsThenStops},
		{"InvalidOutcomeClassStopsRun", invalidOutcomeClassStopsRun},
		{"ThinkTimeOutsideTimedRegion", thinkTimeOutsideTimedRegion},
		{"LatencyLimitCountsLate", closedLoopLatencyLimitCountsLate},
		{"MeasureHooks", measureHooks},
		{"PerOpTotalsAndTicks", perOpTotalsAndTicks},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, runMode{mux: true}) })
	}
}

// TestMuxRawWaits runs the multiplexed tests with Ps to spare (as the pg
// target makes them: GOMAXPROCS above the threads), so the threads wait
// with raw waits (below that they wait as ordinary system calls), in the
// closed loop without a timeout while nothing else is due: the drain, the
// interrupt, think times and back-offs must still end their waits.
func TestMuxRawWaits(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	t.Run("Threads", TestMuxThreads)
	t.Run("ClosedLoop", TestClosedLoopMultiplexed)
	t.Run("OpenLoop", TestOpenLoopMultiplexed)
	t.Run("OpenLoopBacklog", TestOpenLoopMultiplexedBacklog)
	t.Run("OpenLoopLatencyLimit", TestOpenLoopMultiplexedLatencyLimit)
	t.Run("OpenLoopInterrupt", TestOpenLoopMultiplexedInterrupt)
	t.Run("OpenLoopReconnectBackoff", TestOpenLoopMultiplexedReconnectBackoff)
}

// TestWaker: a woken waker ends a wait without a timeout, and stays
// readable for every later wait; it is not a ready slot.
func TestWaker(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	w := newWaker()
	if w == nil {
		t.Fatal("no eventfd")
	}
	defer w.close()
	p := newPoller(1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.wake()
	}()
	start := time.Now()
	for range 2 {
		p.reset()
		p.addWaker(w)
		if ready := p.waitFine(waitForever, pollRawCoarse); len(ready) != 0 {
			t.Fatalf("the waker came back as slots %v", ready)
		}
	}
	if el := time.Since(start); el < 20*time.Millisecond || el > 5*time.Second {
		t.Fatalf("two waits took %v: the first should end when woken, after 20 ms, and the second at once", el)
	}
}

// TestMuxThreads: 5 workers on 2 threads overlap their steps (a thread
// begins a step on each of its idle workers before it waits for replies);
// the result says how many threads ran. Real clock (poll(2)): the overlap is
// read from the steps in flight, not from the throughput.
func TestMuxThreads(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	const step = 20 * time.Millisecond
	var inFlight, maxInFlight atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		now := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if now <= m || maxInFlight.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(step)
		inFlight.Add(-1)
		return ok("op"), nil
	}}
	var mu sync.Mutex
	th := []*countingThread{}
	cfg := Config{Workers: 5, Threads: 2, Duration: 500 * time.Millisecond, Tick: 100 * time.Millisecond,
		NewThread: func() stp.Thread {
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
	// Two threads that waited for each step before the next would never
	// have more than 2 in flight; every round of the 25 in the window
	// starts all 5.
	if n := maxInFlight.Load(); n <= int64(cfg.Threads) {
		t.Errorf("at most %d steps in flight on %d threads: the threads did not overlap their workers' steps", n, cfg.Threads)
	}
	// A step never takes less than its 20 ms: at most 25 per worker start
	// in the window.
	if res.Committed == 0 || res.Committed > 5*25 {
		t.Errorf("committed %d, want 1 to %d", res.Committed, 5*25)
	}
	if p50 := res.Latency.PercentileMs(50); p50 < ms(step)*0.999 || p50 >= 2*ms(step) {
		t.Errorf("p50 %v ms, want from the step's %v to twice that (latency is the step's, not its thread's round)", p50, step)
	}
}

// TestMuxFallback: one worker that cannot be multiplexed gives every worker
// its own goroutine, and the others are switched back.
// The fallback runs one goroutine per worker (nothing polls), so it runs in
// a synctest bubble.
func TestMuxFallback(t *testing.T) { synctest.Test(t, muxFallback) }

func muxFallback(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	var made []*fakeMuxWorker
	f := ff.muxFactory(2)
	res, err := Execute(context.Background(), Config{Workers: 4, Threads: 2, Duration: 200 * time.Millisecond},
		func(ctx context.Context, id int) (stp.Worker, error) {
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
	// The run says why --threads did not apply (TLS connections decline).
	if want := "the 4 clients ran on a thread each, not on 2: their connections cannot be polled"; !strings.Contains(res.ThreadsNote, want) {
		t.Errorf("threads note %q, want %q", res.ThreadsNote, want)
	}
	for _, w := range made {
		if w.shared {
			t.Errorf("worker %d left switched to multiplexing", w.id)
		}
	}
}
