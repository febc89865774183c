package run

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
)

// The multiplexed open loop waits in ppoll(2), so (as the multiplexed
// closed loop, runMode) it runs on the real clock and its tests assert
// only what holds however loaded the machine is: the counts the seeded
// schedules imply, every intended start accounted for, and hard bounds (a
// sleep never ends early, nothing starts before its time).

// muxOpenConfig is an open-loop run of workers on threads, multiplexed.
func muxOpenConfig(workers, threads int, rate float64, dur time.Duration, seed int64) Config {
	return Config{Workers: workers, Threads: threads, Rate: rate, Duration: dur, Seed: seed, Tick: 100 * time.Millisecond,
		NewThread: func() stp.Thread { return &countingThread{} }}
}

// muxSchedulePoints returns the intended starts in [from, to) of the
// threads' shares of the schedule, merged in order: thread g of threads
// serving n of the workers draws stream g at rate*n/workers.
func muxSchedulePoints(rate float64, seed int64, workers, threads int, from, to time.Duration) []time.Duration {
	var out []time.Duration
	for g := 0; g < threads; g++ {
		n := (g+1)*workers/threads - g*workers/threads
		s := newScheduleStream(rate*float64(n)/float64(workers), seed, uint64(g))
		for at := s.Next(); at < to; at = s.Next() {
			if at >= from {
				out = append(out, at)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestMuxScheduleIsPoisson: the threads' shares merged are a Poisson
// process of the whole rate (exponential gaps, KS test at alpha 0.01), and
// the streams of one seed differ from each other.
func TestMuxScheduleIsPoisson(t *testing.T) {
	const rate, n = 1000.0, 100_000
	pts := muxSchedulePoints(rate, 42, 5, 2, 0, time.Duration(float64(n)/rate*float64(time.Second)))
	gaps := make([]float64, 0, len(pts))
	var prev time.Duration
	for _, p := range pts {
		gaps = append(gaps, (p - prev).Seconds())
		prev = p
	}
	within(t, "points", float64(len(gaps)), n*0.98, n*1.02)
	exponentialKS(t, gaps, 1/rate)
	a, b := newScheduleStream(rate, 42, 0), newScheduleStream(rate, 42, 1)
	if a.Next() == b.Next() {
		t.Error("streams 0 and 1 of a seed start alike")
	}
	if x, y := NewSchedule(rate, 42).Next(), newScheduleStream(rate, 42, 0).Next(); x != y {
		t.Errorf("stream 0 (%v) is not NewSchedule's (%v)", y, x)
	}
}

// TestOpenLoopMultiplexed: 4 workers on 2 threads serve exactly the
// intended starts of the threads' seeded schedules, each no earlier than
// due, with latency from the intended start.
func TestOpenLoopMultiplexed(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	const step = time.Millisecond
	const rate, dur, seed = 400.0, 1500 * time.Millisecond, 3
	ff := &fakeFleet{step: sleepStep(step)}
	res, err := Execute(context.Background(), muxOpenConfig(4, 2, rate, dur, seed), ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if res.Threads != 2 || !res.OpenLoop {
		t.Fatalf("threads %d open %v, want 2 threads in the open loop", res.Threads, res.OpenLoop)
	}
	want := len(muxSchedulePoints(rate, seed, 4, 2, 0, dur))
	if res.Scheduled != int64(want) || res.Committed != res.Scheduled || res.Unfinished != 0 || res.Skipped != 0 {
		t.Errorf("scheduled %d committed %d unfinished %d skipped %d, want %d from the seeded schedules",
			res.Scheduled, res.Committed, res.Unfinished, res.Skipped, want)
	}
	if got := ff.steps.Load(); got != int64(want) {
		t.Errorf("%d steps, want %d", got, want)
	}
	// A step never takes less than its sleep; latency includes service.
	if res.Service.MinMs() < ms(step)*0.999 || res.Latency.MinMs() < res.Service.MinMs()*0.999 {
		t.Errorf("service min %v ms, latency min %v ms; want at least the step's %v", res.Service.MinMs(), res.Latency.MinMs(), step)
	}
	if res.Lag.Count() != res.Committed || res.Dispatch == nil || res.Dispatch.Count() != res.Committed {
		t.Errorf("lag %d and dispatch %d samples for %d committed", res.Lag.Count(), res.Dispatch.Count(), res.Committed)
	}
	if res.MeasuredSeconds < dur.Seconds() {
		t.Errorf("measured %v s, want at least %v", res.MeasuredSeconds, dur.Seconds())
	}
}

// TestOpenLoopMultiplexedBacklog: one worker per thread doing 15 ms steps
// at 100/s in all (~1.5 s of work a second for 2 workers: a backlog). The
// drain serves it, the window extends to the last measured start, the lag
// shows the queueing, and the deepest queue is reported.
func TestOpenLoopMultiplexedBacklog(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	const step = 15 * time.Millisecond
	const rate, dur, seed = 200.0, time.Second, 4
	ff := &fakeFleet{step: sleepStep(step)}
	cfg := muxOpenConfig(2, 1, rate, dur, seed)
	cfg.forceMux = true
	res, err := Execute(context.Background(), cfg, ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if res.Threads != 1 || res.Unfinished != 0 || res.Committed != res.Scheduled {
		t.Fatalf("threads %d committed %d scheduled %d unfinished %d", res.Threads, res.Committed, res.Scheduled, res.Unfinished)
	}
	// Two workers do at most 2/15 ms = 133/s: the seeded schedule's starts
	// take at least that long to serve.
	if least := float64(len(muxSchedulePoints(rate, seed, 2, 1, 0, dur))) * step.Seconds() / 2; res.MeasuredSeconds < least*0.98 {
		t.Errorf("measured %v s, want at least %.2f s: the backlog served in the drain must extend the window", res.MeasuredSeconds, least)
	}
	if p := res.Lag.PercentileMs(99); p < 100 {
		t.Errorf("schedule lag p99 %.1f ms: the backlog should show there", p)
	}
	if res.MaxQueueDepth < 20 {
		t.Errorf("deepest queue %d, want the backlog's tens", res.MaxQueueDepth)
	}
}

// TestOpenLoopMultiplexedLatencyLimit: with 20 ms steps on 2 workers at
// 300/s and a 5 ms limit, starts already later than the limit are skipped,
// and every intended start is a commit, a skip or unfinished.
func TestOpenLoopMultiplexedLatencyLimit(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	ff := &fakeFleet{step: sleepStep(20 * time.Millisecond)}
	cfg := muxOpenConfig(2, 1, 300, time.Second, 5)
	cfg.forceMux, cfg.LatencyLimit = true, 5*time.Millisecond
	res, err := Execute(context.Background(), cfg, ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	// At most 2 workers x 1 s / 20 ms = 100 steps (plus the drain's).
	if res.Skipped < 100 || res.Committed > 110 || res.Committed == 0 {
		t.Errorf("skipped %d committed %d of %d", res.Skipped, res.Committed, res.Scheduled)
	}
	// Every committed one started within the limit, so it took at most
	// the limit more than its service time... and at least the 20 ms.
	if res.Late != res.Committed {
		t.Errorf("late %d of %d committed (20 ms steps, 5 ms limit)", res.Late, res.Committed)
	}
}

// TestOpenLoopMultiplexedTransactions: a count with a rate on multiplexed
// threads: each thread serves its workers' count of its own share of the
// schedule, clients x count in all, and the window ends with the last.
func TestOpenLoopMultiplexedTransactions(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	cfg := muxOpenConfig(5, 2, 500, 0, 8)
	cfg.Transactions = 12
	start := time.Now()
	res, err := Execute(context.Background(), cfg, ff.muxFactory(-1))
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if res.Threads != 2 || res.Scheduled != 60 || res.Committed != 60 || ff.steps.Load() != 60 {
		t.Errorf("threads %d scheduled %d committed %d steps %d, want 2 threads and 60 each", res.Threads, res.Scheduled, res.Committed, ff.steps.Load())
	}
	// Thread 0 serves 2 workers (24 starts) at 200/s, thread 1 three (36)
	// at 300/s: the run lasts until the later of their last starts.
	last := max(muxStarts(500, 8, 5, 2, 0)[23], muxStarts(500, 8, 5, 2, 1)[35])
	if res.MeasuredSeconds < last.Seconds() || el < last {
		t.Errorf("measured %v s in %v, want at least the last intended start, %v", res.MeasuredSeconds, el, last)
	}
}

// muxStarts are the first intended starts of thread g's share of the
// schedule (muxSchedulePoints' streams), in order.
func muxStarts(rate float64, seed int64, workers, threads, g int) []time.Duration {
	n := (g+1)*workers/threads - g*workers/threads
	s := newScheduleStream(rate*float64(n)/float64(workers), seed, uint64(g))
	out := make([]time.Duration, 100)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// TestOpenLoopMultiplexedInterrupt: an interrupt abandons the threads'
// queues (counted as unfinished), the steps in flight finish, and the run
// returns promptly.
func TestOpenLoopMultiplexedInterrupt(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	ff := &fakeFleet{step: sleepStep(20 * time.Millisecond)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(time.Second)
		cancel()
	}()
	start := time.Now()
	res, err := Execute(ctx, muxOpenConfig(4, 2, 600, time.Minute, 6), ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("returned %v after the start, want soon after the interrupt at 1 s", took)
	}
	ff.checkClosed(t)
	accounted(t, res)
	// 4 workers do at most 200/s against 600/s scheduled.
	if !res.Interrupted || res.Unfinished < 100 {
		t.Errorf("interrupted %v unfinished %d", res.Interrupted, res.Unfinished)
	}
}

// TestOpenLoopMultiplexedReconnectBackoff: a worker whose steps end at
// once with a connection error (Begin could not reconnect) backs off
// between attempts (never sooner than the back-off's lower bound: half of
// 10 ms, the jitter's least), the other worker serves the schedule
// meanwhile, and every intended start is accounted for.
func TestOpenLoopMultiplexedReconnectBackoff(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	var failing *fakeMuxWorker
	f := ff.muxFactory(-1)
	cfg := muxOpenConfig(2, 1, 200, time.Second, 8)
	cfg.forceMux = true
	res, err := Execute(context.Background(), cfg, func(ctx context.Context, id int) (stp.Worker, error) {
		w, err := f(ctx, id)
		if err == nil && id == 0 {
			failing = w.(*fakeMuxWorker)
			failing.failFirst = 5
		}
		return w, err
	})
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if got := res.Totals[stp.ClassConnError]; got != 5 {
		t.Errorf("%d connection errors, want the 5 failed reconnects", got)
	}
	if res.Committed == 0 || res.Committed+5 < res.Scheduled-res.Unfinished-res.Skipped {
		t.Errorf("committed %d of %d scheduled", res.Committed, res.Scheduled)
	}
	for i := 1; i < len(failing.failedAt); i++ {
		if gap := failing.failedAt[i].Sub(failing.failedAt[i-1]); gap < 5*time.Millisecond {
			t.Errorf("reconnect attempts %d and %d %v apart: no back-off", i-1, i, gap)
		}
	}
}

// execMuxOneThread runs cfg multiplexed on one thread whose discipline is
// th, with workers whose steps take step, and checks that every worker was
// closed.
func execMuxOneThread(t *testing.T, ctx context.Context, cfg Config, step time.Duration, th stp.Thread) *Result {
	t.Helper()
	ff := &fakeFleet{step: sleepStep(step)}
	cfg.forceMux = true
	cfg.NewThread = func() stp.Thread { return th }
	res, err := Execute(ctx, cfg, ff.muxFactory(-1))
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	return res
}

// yieldingThread is a step.Yielder that is always due to yield.
type yieldingThread struct{ ticks atomic.Int64 }

func (y *yieldingThread) Tick()                { y.ticks.Add(1) }
func (y *yieldingThread) Stop()                {}
func (y *yieldingThread) NextYield() time.Time { return time.Now() }

// TestRawWaitEndsAtTheYield: a multiplexed open-loop thread waiting for a
// reply (a raw wait, which keeps the runtime's processor) waits no longer
// than its thread discipline's next yield, so that the discipline gets to
// yield (Tick) on time. With the yield always due the thread goes round
// its loop without waiting; waits of up to muxOpenWaitMax would give some
// 40 rounds in the 300 ms of 100 ms steps.
func TestRawWaitEndsAtTheYield(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	y := &yieldingThread{}
	res := execMuxOneThread(t, context.Background(), muxOpenConfig(1, 1, 20, 300*time.Millisecond, 9), 100*time.Millisecond, y)
	accounted(t, res)
	if n := y.ticks.Load(); n < 1000 {
		t.Errorf("%d rounds of the thread's loop: its raw waits ran past the yield", n)
	}
}

// parkingThread counts its ticks and stops (a multiplexed open-loop thread
// parks with Stop), and records whether it was told it is paced.
type parkingThread struct {
	ticks, stops atomic.Int64
	paced        atomic.Bool
}

func (p *parkingThread) Tick()  { p.ticks.Add(1) }
func (p *parkingThread) Stop()  { p.stops.Add(1) }
func (p *parkingThread) Paced() { p.paced.Store(true) }

// TestOpenLoopMultiplexedParks: at a low rate the thread gives its OS
// thread back between starts (Stop) and still serves every intended start
// of the seeded schedule, none before its time; a halt ends a park at once
// instead of at the park's end (muxParkMax).
func TestOpenLoopMultiplexedParks(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	const rate, dur, seed = 8.0, 1500 * time.Millisecond, 4
	th := &parkingThread{}
	res := execMuxOneThread(t, context.Background(), muxOpenConfig(2, 1, rate, dur, seed), time.Millisecond, th)
	accounted(t, res)
	pts := muxSchedulePoints(rate, seed, 2, 1, 0, dur)
	if res.Scheduled != int64(len(pts)) || res.Committed != res.Scheduled {
		t.Errorf("scheduled %d committed %d, want %d from the seeded schedule", res.Scheduled, res.Committed, len(pts))
	}
	// Every gap between starts longer than muxIdlePark (plus the step and
	// a margin for a loaded machine's late turns) is a park; the thread's
	// last Stop ends the run.
	parks := int64(0)
	prev := time.Duration(0)
	for _, p := range pts {
		if p-prev > muxIdlePark+40*time.Millisecond {
			parks++
		}
		prev = p
	}
	if parks < 3 {
		t.Fatalf("seed gives %d long gaps, want a schedule with some", parks)
	}
	if got := th.stops.Load() - 1; got < parks {
		t.Errorf("%d parks, want at least the %d gaps longer than %v", got, parks, muxIdlePark)
	}
	if !th.paced.Load() {
		t.Error("the open loop's thread was not told it is paced")
	}
	if res.Lag.Count() != res.Committed || res.Lag.MinMs() < 0 {
		t.Errorf("lag: %d samples, min %v ms", res.Lag.Count(), res.Lag.MinMs())
	}

	// A first start seconds away: the thread parks at once; the
	// interrupt must end the park.
	const slow = 0.2
	if first := muxSchedulePoints(slow, seed, 2, 1, 0, time.Minute)[0]; first < 3*time.Second {
		t.Fatalf("first start at %v, want one seconds away", first)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	execMuxOneThread(t, ctx, muxOpenConfig(2, 1, slow, time.Minute, seed), time.Millisecond, &parkingThread{})
	if took := time.Since(start); took >= 200*time.Millisecond+muxParkMax*7/10 {
		t.Errorf("returned %v after the start, with the interrupt at 200 ms: the park did not end on the halt", took)
	}
}

// kernelThread is a parkingThread that says its workers wait only on the
// kernel (step.KernelBound), and records GOMAXPROCS at each tick.
type kernelThread struct {
	parkingThread
	procs atomic.Int64 // the largest GOMAXPROCS seen by Tick
}

func (k *kernelThread) KernelBound() {}
func (k *kernelThread) Tick() {
	k.parkingThread.Tick()
	if n := int64(runtime.GOMAXPROCS(0)); n > k.procs.Load() {
		k.procs.Store(n)
	}
}

// TestOpenLoopMultiplexedHoldsProcs: with Ps to spare and threads whose
// workers wait only on the kernel, a multiplexed open loop runs with
// GOMAXPROCS equal to its threads and restores it afterwards; a closed
// loop leaves it alone (and its threads are not paced).
func TestOpenLoopMultiplexedHoldsProcs(t *testing.T) {
	if !pollSupported {
		t.Skip("multiplexing needs poll(2)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	var ths []*kernelThread
	newThread := func() stp.Thread {
		k := &kernelThread{}
		ths = append(ths, k)
		return k
	}
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	cfg := muxOpenConfig(4, 2, 400, 300*time.Millisecond, 5)
	cfg.NewThread = newThread
	if _, err := Execute(context.Background(), cfg, ff.muxFactory(-1)); err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if len(ths) != 2 {
		t.Fatalf("%d threads, want 2", len(ths))
	}
	for i, k := range ths {
		if got := k.procs.Load(); got != 2 {
			t.Errorf("open loop, thread %d: GOMAXPROCS up to %d during the run, want the 2 threads'", i, got)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != 8 {
		t.Errorf("GOMAXPROCS %d after the run, want 8 back", got)
	}

	ths = nil
	ff = &fakeFleet{step: sleepStep(time.Millisecond)}
	ccfg := Config{Workers: 4, Threads: 2, Duration: 300 * time.Millisecond, Seed: 5, Tick: 100 * time.Millisecond, NewThread: newThread}
	if _, err := Execute(context.Background(), ccfg, ff.muxFactory(-1)); err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	for i, k := range ths {
		if got := k.procs.Load(); got != 8 {
			t.Errorf("closed loop, thread %d: GOMAXPROCS %d, want 8 as it was", i, got)
		}
		if k.paced.Load() {
			t.Errorf("closed loop, thread %d told it is paced", i)
		}
	}
}

// TestHoldProcs: holds add up, and the last one back restores the
// GOMAXPROCS from before the first.
func TestHoldProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(7))
	a := holdProcs(2)
	b := holdProcs(3)
	if got := runtime.GOMAXPROCS(0); got != 5 {
		t.Errorf("two holds: GOMAXPROCS %d, want 5", got)
	}
	a()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("one hold left: GOMAXPROCS %d, want 3", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != 7 {
		t.Errorf("no hold: GOMAXPROCS %d, want 7 back", got)
	}
}
