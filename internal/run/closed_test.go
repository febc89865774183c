package run

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	stp "github.com/tunebench/tunebench/internal/step"
)

func TestValidate(t *testing.T) {
	good := Config{Workers: 1, Duration: time.Second}
	if err := good.withDefaults().Validate(); err != nil {
		t.Fatalf("good config rejected: %v", err)
	}
	bad := map[string]Config{
		"no workers":        {Duration: time.Second},
		"neither":           {Workers: 1},
		"both":              {Workers: 1, Duration: time.Second, Transactions: 5},
		"negative duration": {Workers: 1, Duration: -time.Second},
		"negative tx":       {Workers: 1, Transactions: -1},
		"negative warmup":   {Workers: 1, Duration: time.Second, Warmup: -1},
		"negative rate":     {Workers: 1, Duration: time.Second, Rate: -1},
		"NaN rate":          {Workers: 1, Duration: time.Second, Rate: math.NaN()},
		"inf rate":          {Workers: 1, Duration: time.Second, Rate: math.Inf(1)},
		"negative limit":    {Workers: 1, Duration: time.Second, LatencyLimit: -1},
		"negative drain":    {Workers: 1, Duration: time.Second, DrainTimeout: -1},
		"tiny tick":         {Workers: 1, Duration: time.Second, Tick: time.Millisecond},
		"negative tick":     {Workers: 1, Duration: time.Second, Tick: -time.Second},
		"negative slack":    {Workers: 1, Duration: time.Second, Rate: 10, TimerSlack: -1},
		"slack too long":    {Workers: 1, Duration: time.Second, Rate: 10, TimerSlack: MaxTimerSlack + 1},
	}
	for name, c := range bad {
		_, err := Execute(context.Background(), c, func(context.Context, int) (stp.Worker, error) {
			t.Fatalf("%s: factory called for an invalid config", name)
			return nil, nil
		})
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%s: error kind %v, want usage", name, errs.KindOf(err))
		}
	}
}

func TestFactoryErrorClosesMadeWorkers(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	boom := errors.New("connection refused")
	f := ff.factory()
	res, err := Execute(context.Background(), Config{Workers: 5, Duration: time.Second}, func(ctx context.Context, id int) (stp.Worker, error) {
		if id == 3 {
			return nil, boom
		}
		return f(ctx, id)
	})
	if !errors.Is(err, boom) || res != nil {
		t.Fatalf("got %v, %v; want the factory error", res, err)
	}
	if ff.made.Load() != 3 || ff.closed.Load() != 3 || ff.steps.Load() != 0 {
		t.Fatalf("made %d closed %d steps %d", ff.made.Load(), ff.closed.Load(), ff.steps.Load())
	}
}

// Ready is called once every worker is made and before any step; its
// error ends the run before it started, with every worker closed.
func TestReadyBeforeTheFirstStep(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	var madeAtReady, stepsAtReady int64 = -1, -1
	wait := errors.New("the other shards never came")
	res, err := Execute(context.Background(), Config{Workers: 4, Duration: time.Second, Ready: func(context.Context) error {
		madeAtReady, stepsAtReady = ff.made.Load(), ff.steps.Load()
		return wait
	}}, ff.factory())
	if !errors.Is(err, wait) || res != nil {
		t.Fatalf("got %v, %v; want Ready's error", res, err)
	}
	if madeAtReady != 4 || stepsAtReady != 0 || ff.closed.Load() != 4 || ff.steps.Load() != 0 {
		t.Fatalf("at Ready: made %d, steps %d; after: closed %d, steps %d", madeAtReady, stepsAtReady, ff.closed.Load(), ff.steps.Load())
	}
}

// The closed-loop tests below run twice: one goroutine per worker in a
// synctest bubble (TestX), and multiplexed on the real clock
// (TestClosedLoopMultiplexed/X). See runMode for what each asserts.
//
// On the bubble's clock goroutines due at the same instant wake in no
// fixed order, so the step lengths are chosen so that no run ends (its
// last step ends) at a tick boundary or at the window's end: the collector
// may harvest at that instant before the last steps record, and as the
// fake clock does not move before Execute returns, the final harvest is
// skipped (it is taken only when the clock moved past the last tick), and
// those steps would be missing from the ticks and the Result. On a real
// clock the final reading always comes later.

func TestClosedLoopCountsAndTPS(t *testing.T) { inBubble(t, closedLoopCountsAndTPS) }

func closedLoopCountsAndTPS(t *testing.T, m runMode) {
	const step = 3 * time.Millisecond
	ff := &fakeFleet{step: sleepStep(step)}
	var ticks []Tick
	cfg := Config{Workers: 4, Duration: time.Second, Tick: 100 * time.Millisecond,
		OnTick: func(t Tick) { ticks = append(ticks, t) }}
	res, err := m.execute(context.Background(), cfg, ff)
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if res.MeasuredSeconds != 1 {
		t.Errorf("measured seconds %v, want exactly the duration", res.MeasuredSeconds)
	}
	if res.Committed != res.Totals[stp.ClassOK] || res.Committed == 0 || res.Errors != 0 {
		t.Fatalf("committed %d totals %v", res.Committed, res.Totals)
	}
	if res.TPS != float64(res.Committed)/res.MeasuredSeconds {
		t.Errorf("tps %v != committed/measured", res.TPS)
	}
	if res.Latency.Count() != res.Committed || res.Service != nil || res.Lag != nil {
		t.Errorf("latency count %d service %v lag %v", res.Latency.Count(), res.Service, res.Lag)
	}
	// A worker starts its steps back to back while its clock is in the
	// window: at 0, 3, ..., 999 ms, 334 steps, the last one drained. A step
	// never takes less than its sleep, so no run can do more.
	most := int64(cfg.Workers) * int64((cfg.Duration+step-1)/step)
	if m.virtual() {
		if res.Committed != most {
			t.Errorf("committed %d, want %d (334 back-to-back steps of 3 ms per worker)", res.Committed, most)
		}
		sameMs(t, "min latency", res.Latency.MinMs(), ms(step))
		sameMs(t, "max latency", res.Latency.MaxMs(), ms(step))
	} else {
		if res.Committed > most {
			t.Errorf("committed %d, more than %d steps of 3 ms fit in the window", res.Committed, most)
		}
		if min := res.Latency.MinMs(); min < ms(step)*0.999 {
			t.Errorf("min latency %v ms, shorter than the %v step", min, step)
		}
	}
	if len(res.Ops) != 1 || res.Ops[0].Op != "op" || res.Ops[0].Count != res.Committed {
		t.Errorf("ops %+v", res.Ops)
	}
	// Every step shows up in exactly one tick; measured steps are the
	// result (no warm-up here), drained ones are included.
	var inTicks int64
	for _, tk := range res.Series {
		inTicks += tk.Completed
	}
	if inTicks != ff.steps.Load() || res.Committed != ff.steps.Load() {
		t.Errorf("steps %d, in ticks %d, committed %d", ff.steps.Load(), inTicks, res.Committed)
	}
	if len(ticks) != len(res.Series) {
		t.Errorf("%d ticks via OnTick, %d in series", len(ticks), len(res.Series))
	}
	if m.virtual() {
		// Ten ticks across the window, then one for the 4 steps drained
		// up to 1.002 s.
		if len(res.Series) != 11 {
			t.Fatalf("%d ticks, want 11: %+v", len(res.Series), res.Series)
		}
		for i, tk := range res.Series[:10] {
			if want := float64(i+1) * 0.1; math.Abs(tk.T-want) > 1e-9 || tk.Phase != PhaseMeasure {
				t.Errorf("tick %d: T %v phase %s, want %v measure", i, tk.T, tk.Phase, want)
			}
			// Each tick carries its own interval's length.
			if math.Abs(tk.Span-0.1) > 1e-9 || math.Abs(tk.TPS-float64(tk.Committed)/tk.Span) > 1e-6 {
				t.Errorf("tick %d: span %v, tps %v for %d committed; want a 0.1 s span", i, tk.Span, tk.TPS, tk.Committed)
			}
		}
		if last := res.Series[10]; math.Abs(last.T-1.002) > 1e-9 || last.Phase != PhaseDrain || last.Completed != int64(cfg.Workers) {
			t.Errorf("last tick %+v, want the 4 steps drained at T=1.002", last)
		}
	} else {
		// A collector that wakes late on a loaded machine may skip a
		// boundary, but every measure tick ends on one, and the window's
		// end always gets its tick.
		prev, lastMeasure := math.Inf(-1), 0.0
		for i, tk := range res.Series {
			if tk.T <= prev {
				t.Errorf("tick %d at T=%v after T=%v", i, tk.T, prev)
			}
			prev = tk.T
			if tk.Phase != PhaseMeasure {
				continue
			}
			if k := tk.T * 10; math.Abs(k-math.Round(k)) > 1e-9 {
				t.Errorf("measure tick %d at T=%v, not on a tick boundary", i, tk.T)
			}
			lastMeasure = tk.T
		}
		if math.Abs(lastMeasure-1) > 1e-9 {
			t.Errorf("last measure tick at T=%v, want the window's end", lastMeasure)
		}
	}
	if res.DriverCPUSeconds <= 0 {
		t.Errorf("driver CPU %v", res.DriverCPUSeconds)
	}
	if res.Interrupted || res.OpenLoop || res.Workers != 4 {
		t.Errorf("flags %+v", res)
	}
	if !res.StartedAt.Before(res.EndedAt) {
		t.Error("start/end times")
	}
}

func TestTransactionsModeExactCounts(t *testing.T) { inBubble(t, transactionsModeExactCounts) }

func transactionsModeExactCounts(t *testing.T, m runMode) {
	const step = 200 * time.Microsecond
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		time.Sleep(step)
		if n%10 == 9 {
			return stp.Outcome{Op: "b", Class: stp.ClassUserAbort, Attempts: 1}, nil
		}
		return ok("a"), nil
	}}
	cfg := Config{Workers: 3, Transactions: 50, Warmup: 100 * time.Millisecond, Tick: 50 * time.Millisecond}
	t0 := time.Now()
	res, err := m.execute(context.Background(), cfg, ff)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if got := sumTotals(res, true); got != 150 {
		t.Fatalf("measured transactions %d, want 150 (totals %v)", got, res.Totals)
	}
	if ff.steps.Load() <= 150 {
		t.Fatalf("warm-up did no steps: %d", ff.steps.Load())
	}
	if res.Totals[stp.ClassUserAbort]+res.Committed != 150 {
		t.Fatalf("totals %v", res.Totals)
	}
	if res.TPS != float64(res.Committed)/res.MeasuredSeconds {
		t.Errorf("tps")
	}
	var warm []float64
	for _, tk := range res.Series {
		if tk.Phase == PhaseWarmup {
			warm = append(warm, tk.T)
			if tk.T > 0 {
				t.Errorf("warm-up tick at T=%v", tk.T)
			}
		}
	}
	if m.virtual() {
		// Each worker does 500 warm-up steps (0 to 100 ms), then its 50
		// measured ones, the last ending at 110 ms. Its steps count from 0
		// over both phases: the measured ones are 500..549, of which 505,
		// 515, ..., 545 abort.
		if ff.steps.Load() != 3*550 {
			t.Errorf("steps %d, want %d", ff.steps.Load(), 3*550)
		}
		if res.Totals[stp.ClassUserAbort] != 15 {
			t.Errorf("totals %v, want 15 user aborts", res.Totals)
		}
		if res.MeasuredSeconds != 0.01 {
			t.Errorf("measured %v, want 0.01 (measurement start to the last transaction's end)", res.MeasuredSeconds)
		}
		if len(warm) != 2 || warm[0] != -0.05 || warm[1] != 0 {
			t.Errorf("warm-up ticks at %v, want [-0.05 0]", warm)
		}
	} else {
		// The window runs from the end of the warm-up to the end of the
		// last transaction: inside the run.
		if res.MeasuredSeconds <= 0 || res.MeasuredSeconds > (took-cfg.Warmup).Seconds() {
			t.Errorf("measured %v, run took %v with %v of warm-up", res.MeasuredSeconds, took, cfg.Warmup)
		}
		if len(warm) == 0 {
			t.Error("no warm-up tick")
		}
	}
}

func TestWarmupExcluded(t *testing.T) { inBubble(t, warmupExcluded) }

func warmupExcluded(t *testing.T, m runMode) {
	// Workers 0 and 1: steps are slow (30 ms) during the warm-up and fast
	// (3 ms) after it, as seen by the worker's own clock; the result must
	// not contain any slow step. Worker 2: its first step starts with the
	// run and returns only after the measurement started; it must not be
	// in the result either (the start decides), and its next ones are fast.
	var origin atomic.Pointer[time.Time]
	const (
		warm = 400 * time.Millisecond
		fast = 3 * time.Millisecond
	)
	measuring := make(chan struct{})
	var once sync.Once
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		now := time.Now()
		origin.CompareAndSwap(nil, &now)
		if id == 2 && n == 0 {
			<-measuring
			time.Sleep(4 * time.Millisecond)
			return ok("straddle"), nil
		}
		if id != 2 && time.Since(*origin.Load()) < warm-50*time.Millisecond {
			time.Sleep(30 * time.Millisecond)
			return ok("warm"), nil
		}
		time.Sleep(fast)
		return ok("fast"), nil
	}}
	// A live view splits each tick's interval by phase (Tick.Interval and
	// its warm-up part): the measured part must add up to the result.
	var ivMeasured, ivWarm, warmInMeasureTicks int64
	onTick := func(tk Tick) {
		w := tk.IntervalWarmup.Committed()
		ivWarm += w
		ivMeasured += tk.Interval.Committed() - w
		if tk.Phase == PhaseMeasure {
			warmInMeasureTicks += w
		}
	}
	res, err := m.execute(context.Background(), Config{Workers: 3, Warmup: warm, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond,
		OnMeasureStart: func() { once.Do(func() { close(measuring) }) }, OnTick: onTick}, ff)
	if err != nil {
		t.Fatal(err)
	}
	if ivMeasured != res.Committed || ivWarm != res.CommittedAll-res.Committed {
		t.Errorf("tick intervals: %d measured, %d warm-up; result %d measured of %d", ivMeasured, ivWarm, res.Committed, res.CommittedAll)
	}
	if m.virtual() && warmInMeasureTicks == 0 {
		t.Error("no warm-up step ended in a measurement tick (worker 2's straddling step should)")
	}
	for _, tk := range res.Series {
		if tk.Interval != nil || tk.IntervalWarmup != nil {
			t.Fatal("the stored series keeps a tick's interval snapshots")
		}
	}
	for _, o := range res.Ops {
		if o.Op != "fast" {
			t.Errorf("warm-up op %q in the result", o.Op)
		}
	}
	if m.virtual() {
		// Workers 0 and 1: slow steps at 0, 30, ..., 330 ms (12), fast ones
		// from 360 ms every 3 ms. Those starting at 360..399 ms (14) are
		// warm-up steps that end in the window; the measured ones start at
		// 402, ..., 699 ms: 100. Worker 2: the straddling step to 404 ms,
		// then fast ones at 404, ..., 698 ms: 99.
		const steps = 2*(12+14+100) + 1 + 99
		if res.Committed != 299 || ff.steps.Load() != steps {
			t.Errorf("committed %d of %d steps, want 299 of %d", res.Committed, ff.steps.Load(), steps)
		}
		sameMs(t, "max latency", res.Latency.MaxMs(), ms(fast))
	} else if res.Latency.Count() != res.Committed || res.Latency.MinMs() < ms(fast)*0.999 {
		t.Errorf("latency count %d min %v ms, committed %d", res.Latency.Count(), res.Latency.MinMs(), res.Committed)
	}
	var warmCommitted, all int64
	for _, tk := range res.Series {
		all += tk.Completed
		if tk.Phase == PhaseWarmup {
			warmCommitted += tk.Committed
		}
	}
	if res.CommittedAll != ff.steps.Load() || res.AmbiguousAll != 0 {
		t.Errorf("committed over all phases %d, steps %d, ambiguous %d", res.CommittedAll, ff.steps.Load(), res.AmbiguousAll)
	}
	if warmCommitted == 0 || all != ff.steps.Load() {
		t.Errorf("warm-up ticks committed %d; ticks total %d, steps %d", warmCommitted, all, ff.steps.Load())
	}
	if res.Series[0].T >= 0 || res.Series[0].Phase != PhaseWarmup {
		t.Errorf("first tick %+v", res.Series[0])
	}
	if res.MeasuredSeconds != 0.3 {
		t.Errorf("measured %v", res.MeasuredSeconds)
	}
}

func TestDrainRecordsInFlightWork(t *testing.T) { inBubble(t, drainRecordsInFlightWork) }

func drainRecordsInFlightWork(t *testing.T, m runMode) {
	// Each worker's first step is short; its second one is in flight when
	// the window closes: it returns only once the tick of the window's end
	// is out, and takes 150 ms more. Nothing starts after the window.
	windowEnded := make(chan struct{})
	var once sync.Once
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if n == 0 {
			time.Sleep(10 * time.Millisecond)
			return ok("op"), nil
		}
		<-windowEnded
		time.Sleep(150 * time.Millisecond)
		return ok("op"), nil
	}}
	cfg := Config{Workers: 2, Duration: 500 * time.Millisecond, Tick: 100 * time.Millisecond,
		OnTick: func(tk Tick) {
			if tk.T >= 0.5-1e-9 {
				once.Do(func() { close(windowEnded) })
			}
		}}
	res, err := m.execute(context.Background(), cfg, ff)
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed != 4 || res.Unfinished != 0 || ff.steps.Load() != 4 {
		t.Fatalf("committed %d unfinished %d steps %d", res.Committed, res.Unfinished, ff.steps.Load())
	}
	if res.MeasuredSeconds != 0.5 {
		t.Errorf("measured %v", res.MeasuredSeconds)
	}
	var drained int64
	for _, tk := range res.Series {
		if tk.Phase == PhaseDrain {
			drained += tk.Completed
		}
	}
	last := res.Series[len(res.Series)-1]
	if last.Phase != PhaseDrain || drained != 2 {
		t.Errorf("last tick %+v, %d completed in drain ticks; want the 2 drained steps", last, drained)
	}
	if m.virtual() && math.Abs(last.T-0.65) > 1e-9 {
		t.Errorf("last tick at T=%v, want 0.65 (the drained steps' end)", last.T)
	}
	ff.checkClosed(t)
}

func TestDrainTimeoutCountsUnfinished(t *testing.T) { inBubble(t, drainTimeoutCountsUnfinished) }

func drainTimeoutCountsUnfinished(t *testing.T, m runMode) {
	var cancelled atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if id == 0 && n == 3 {
			<-ctx.Done() // hangs until the drain deadline
			cancelled.Add(1)
			return stp.Outcome{Op: "op", Class: stp.ClassFailedError, Err: ctx.Err()}, nil
		}
		time.Sleep(10 * time.Millisecond)
		return ok("op"), nil
	}}
	cfg := Config{Workers: 2, Duration: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Tick: 50 * time.Millisecond}
	start := time.Now()
	res, err := m.execute(context.Background(), cfg, ff)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// The hanging step is abandoned at the drain deadline, the window's end
	// plus DrainTimeout, and returns as soon as its context is cancelled.
	deadline := cfg.Duration + cfg.DrainTimeout
	if m.virtual() && el != deadline {
		t.Errorf("took %v, want %v (the drain deadline)", el, deadline)
	}
	if !m.virtual() && (el < deadline || el >= DefaultDrainTimeout) {
		t.Errorf("took %v, want the configured drain deadline %v (not before, and not the default %v)", el, deadline, DefaultDrainTimeout)
	}
	if res.Unfinished != 1 || cancelled.Load() != 1 || res.Errors != 0 {
		t.Fatalf("unfinished %d cancelled %d errors %d", res.Unfinished, cancelled.Load(), res.Errors)
	}
	// The abandoned step may have committed: its outcome is unknown.
	if res.AmbiguousAll != 1 || res.CommittedAll != ff.steps.Load()-1 {
		t.Errorf("ambiguous %d committed-all %d steps %d", res.AmbiguousAll, res.CommittedAll, ff.steps.Load())
	}
	ff.checkClosed(t)
}

func TestInterruptReturnsPromptly(t *testing.T) { inBubble(t, interruptReturnsPromptly) }

func interruptReturnsPromptly(t *testing.T, m runMode) {
	const step = 50 * time.Millisecond
	var sawCancel atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		time.Sleep(step)
		if ctx.Err() != nil {
			sawCancel.Add(1)
		}
		return ok("op"), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The interrupt comes half-way through the seventh step.
	const cancelAfter = 325 * time.Millisecond
	var cancelledAt, measureStart time.Time
	go func() {
		time.Sleep(cancelAfter)
		cancelledAt = time.Now()
		cancel()
	}()
	start := time.Now()
	res, err := m.execute(ctx, Config{Workers: 4, Duration: time.Minute, Tick: 100 * time.Millisecond,
		OnMeasureStart: func() { measureStart = time.Now() }}, ff)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("interrupt returned error %v", err)
	}
	back := time.Since(cancelledAt)
	if !res.Interrupted {
		t.Error("not marked interrupted")
	}
	if m.virtual() {
		// The steps in flight (started at 300 ms) end at 350 ms; nothing
		// starts after the interrupt.
		if back != 25*time.Millisecond {
			t.Errorf("returned %v after the interrupt, want 25ms (the end of the steps in flight)", back)
		}
		if res.MeasuredSeconds != cancelAfter.Seconds() {
			t.Errorf("measured %v, want %v (up to the interrupt)", res.MeasuredSeconds, cancelAfter.Seconds())
		}
		if res.Committed != 4*7 {
			t.Errorf("committed %d, want %d", res.Committed, 4*7)
		}
	} else {
		// Not the minute asked for, nor the drain of an interrupt cut
		// short.
		if back >= MaxInterruptDrain {
			t.Errorf("returned %v after the interrupt", back)
		}
		// The window runs from the run's start (the start hook comes
		// after it) to the interrupt (noticed before the return).
		if lo, hi := cancelledAt.Sub(measureStart).Seconds(), took.Seconds(); res.MeasuredSeconds < lo || res.MeasuredSeconds > hi {
			t.Errorf("measured %v, want from the interrupt's %v to the return's %v", res.MeasuredSeconds, lo, hi)
		}
	}
	if sawCancel.Load() != 0 {
		t.Errorf("%d in-flight steps saw their context cancelled by the interrupt", sawCancel.Load())
	}
	if res.Committed != ff.steps.Load() || res.Unfinished != 0 {
		t.Errorf("committed %d steps %d unfinished %d: in-flight work must be drained and recorded", res.Committed, ff.steps.Load(), res.Unfinished)
	}
	ff.checkClosed(t)
}

func TestConnErrorBackoffAndOutage(t *testing.T) { inBubble(t, connErrorBackoffAndOutage) }

func connErrorBackoffAndOutage(t *testing.T, m runMode) {
	var mu sync.Mutex
	var starts, ends []time.Time
	// Steps 0-1 ok, 2-7 conn_error (an outage), then ok; steps 20-22
	// conn_error again (a second outage).
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		time.Sleep(time.Millisecond)
		defer func() {
			mu.Lock()
			ends = append(ends, time.Now())
			mu.Unlock()
		}()
		if (n >= 2 && n < 8) || (n >= 20 && n < 23) {
			return stp.Outcome{Op: "op", Class: stp.ClassConnError, SQLState: "08006", Err: errors.New("connection reset")}, nil
		}
		if n == 25 {
			return stp.Outcome{Op: "op", Class: stp.ClassConnError, Err: errors.New("eof")}, nil
		}
		return ok("op"), nil
	}}
	var onErr atomic.Int64
	res, err := m.execute(context.Background(), Config{Workers: 1, Duration: 1500 * time.Millisecond, Seed: 3,
		OnError: func(w int, o stp.Outcome) { onErr.Add(1) }}, ff)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Back-offs that were not reset would grow to a second each and leave
	// no time for the steps looked at below.
	if len(starts) < 26 || len(ends) < 26 {
		t.Fatalf("only %d steps in %v: the back-off kept growing", len(starts), 1500*time.Millisecond)
	}
	gap := func(i int) time.Duration { return starts[i+1].Sub(ends[i]) }
	// checkGaps checks the waits after the conn errors first..first+count-1:
	// back-offs of 10, 20, 40, ... ms, each drawn from [d/2, d]; a timer
	// never fires early, so they are never shorter.
	checkGaps := func(first, count int) {
		d := backoffMin
		for i := first; i < first+count; i++ {
			if g := gap(i); g < d/2 || (m.virtual() && g > d) {
				t.Errorf("gap after conn_error step %d = %v, want in [%v, %v]", i, g, d/2, d)
			}
			d *= 2
		}
		// The next step after the successful one is immediate.
		if g := gap(first + count); m.virtual() && g != 0 {
			t.Errorf("gap %v after a success", g)
		}
	}
	checkGaps(2, 6)
	checkGaps(20, 3)
	if !m.virtual() {
		// On the real clock the upper ends are compared with what a broken
		// back-off would do. After the first outage's last back-off (320 ms
		// drawn, at least 160 ms) the success is not followed by a wait,
		// and the second outage starts again from 10 ms (without the reset
		// it would wait at least 320 ms).
		if g := gap(8); g >= gap(7) {
			t.Errorf("gap %v after a success, not shorter than the back-off %v before it", g, gap(7))
		}
		if g := gap(20); g >= 160*time.Millisecond {
			t.Errorf("first back-off of the second outage %v: not reset by the successes", g)
		}
	}
	if len(res.Outages) != 3 {
		t.Fatalf("outages %+v, want 3", res.Outages)
	}
	o := res.Outages[0]
	if o.Errors != 6 || o.End <= o.Start {
		t.Errorf("first outage %+v", o)
	}
	// The outage runs from the end of the first error (step 2) to the end
	// of the last (step 7) as the executor timed them: each end lies
	// between the fake step's return and the next step's start.
	length := o.End - o.Start
	if lo, hi := ends[7].Sub(starts[3]).Seconds(), starts[8].Sub(ends[2]).Seconds(); length < lo-1e-9 || length > hi+1e-9 {
		t.Errorf("outage length %v s, want in [%v, %v]", length, lo, hi)
	}
	if want := ends[7].Sub(ends[2]).Seconds(); m.virtual() && math.Abs(length-want) > 1e-9 {
		t.Errorf("outage length %v s, want %v", length, want)
	}
	if res.Outages[1].Errors != 3 || res.Outages[2].Errors != 1 || res.Outages[2].Start != res.Outages[2].End {
		t.Errorf("outages %+v", res.Outages)
	}
	if res.Totals[stp.ClassConnError] != 10 || res.Errors != 10 || onErr.Load() != 10 {
		t.Errorf("conn errors %d errors %d callbacks %d", res.Totals[stp.ClassConnError], res.Errors, onErr.Load())
	}
	if res.SQLStates["08006"] != 9 || res.SQLStates[NoSQLState] != 1 {
		t.Errorf("sqlstates %v", res.SQLStates)
	}
}

func TestStepErrorStopsRun(t *testing.T) { inBubble(t, stepErrorStopsRun) }

func stepErrorStopsRun(t *testing.T, m runMode) {
	boom := errors.New("worker broke")
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if id == 1 && n == 20 {
			time.Sleep(2 * time.Millisecond)
			return stp.Outcome{}, boom
		}
		time.Sleep(5 * time.Millisecond)
		return ok("op"), nil
	}}
	start := time.Now()
	res, err := m.execute(context.Background(), Config{Workers: 3, Duration: time.Minute}, ff)
	el := time.Since(start)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the step error", err)
	}
	if res == nil || res.Committed == 0 || res.Interrupted {
		t.Fatalf("partial result %+v", res)
	}
	if m.virtual() {
		// Worker 1 fails at 102 ms; the other two finish their steps in
		// flight (started at 100 ms) at 105 ms and start nothing more.
		if el != 105*time.Millisecond || res.Committed != 21+20+21 {
			t.Errorf("stopped after %v with %d committed, want 105ms and %d", el, res.Committed, 21+20+21)
		}
	} else if el >= MaxInterruptDrain {
		t.Errorf("run did not stop promptly: %v", el)
	}
	// The failing step is not an outcome; it is counted as unfinished.
	if res.AmbiguousAll != 1 || res.CommittedAll != ff.steps.Load()-1 {
		t.Errorf("ambiguous %d committed-all %d", res.AmbiguousAll, res.CommittedAll)
	}
	if res.Unfinished != 1 || res.Committed != ff.steps.Load()-1 {
		t.Errorf("unfinished %d committed %d steps %d", res.Unfinished, res.Committed, ff.steps.Load())
	}
	ff.checkClosed(t)
}

func TestAbortedStepCountsThenStops(t *testing.T) { inBubble(t, abortedStepCountsThenStops) }

// abortedStepCountsThenStops: a step that ends with a step.Aborted is
// recorded with its outcome (pgbench counts the transaction whose script
// ended inside a transaction block, then aborts the client), and the run
// stops with the error inside, as for any step error.
func abortedStepCountsThenStops(t *testing.T, m runMode) {
	boom := errors.New("the script ended inside a transaction block")
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if id == 1 && n == 20 {
			time.Sleep(2 * time.Millisecond)
			return ok("op"), &stp.Aborted{Err: boom}
		}
		time.Sleep(5 * time.Millisecond)
		return ok("op"), nil
	}}
	start := time.Now()
	res, err := m.execute(context.Background(), Config{Workers: 3, Duration: time.Minute}, ff)
	el := time.Since(start)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the step's error", err)
	}
	if res == nil || res.Interrupted {
		t.Fatalf("partial result %+v", res)
	}
	if m.virtual() && (el != 105*time.Millisecond || res.Committed != 63) {
		// Worker 1's 21st step ends aborted at 102 ms, the others' 21st
		// at 105 ms, and nothing starts after.
		t.Errorf("stopped after %v with %d committed, want 105ms and 63", el, res.Committed)
	}
	// Every step counted, the aborted one too; none is unfinished or of
	// unknown outcome.
	if res.Committed != ff.steps.Load() || res.Unfinished != 0 || res.AmbiguousAll != 0 {
		t.Errorf("committed %d of %d steps, unfinished %d, ambiguous %d", res.Committed, ff.steps.Load(), res.Unfinished, res.AmbiguousAll)
	}
	ff.checkClosed(t)
}

func TestInvalidOutcomeClassStopsRun(t *testing.T) { inBubble(t, invalidOutcomeClassStopsRun) }

func invalidOutcomeClassStopsRun(t *testing.T, m runMode) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		return stp.Outcome{Op: "x", Class: stp.NumClasses + 3}, nil
	}}
	_, err := m.execute(context.Background(), Config{Workers: 1, Duration: time.Minute}, ff)
	if err == nil {
		t.Fatal("invalid class accepted")
	}
}

func TestThinkTimeOutsideTimedRegion(t *testing.T) { inBubble(t, thinkTimeOutsideTimedRegion) }

func thinkTimeOutsideTimedRegion(t *testing.T, m runMode) {
	const step, think = time.Millisecond, 20 * time.Millisecond
	var mu sync.Mutex
	starts := map[int][]time.Time{}
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		mu.Lock()
		starts[id] = append(starts[id], time.Now())
		mu.Unlock()
		time.Sleep(step)
		o := ok("op")
		o.Think = think
		return o, nil
	}}
	cfg := Config{Workers: 2, Duration: 500 * time.Millisecond}
	t0 := time.Now()
	res, err := m.execute(context.Background(), cfg, ff)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	// The think time is slept between the steps: a worker's next step
	// never starts sooner than 21 ms after the last one started.
	mu.Lock()
	for id, ss := range starts {
		for i := 1; i < len(ss); i++ {
			if g := ss[i].Sub(ss[i-1]); g < step+think || (m.virtual() && g != step+think) {
				t.Errorf("worker %d: step %d started %v after the one before, want %v", id, i, g, step+think)
			}
		}
	}
	mu.Unlock()
	// So at most 24 steps per worker start in the window (0, 21, ..., 483
	// ms).
	most := int64(cfg.Workers) * 24
	if m.virtual() {
		if res.Committed != most {
			t.Errorf("committed %d, want %d", res.Committed, most)
		}
		// Latency is the step alone; the think time is not in it.
		sameMs(t, "max latency", res.Latency.MaxMs(), ms(step))
		sameMs(t, "min latency", res.Latency.MinMs(), ms(step))
		if res.ThinkOverrun != 0 {
			t.Errorf("think overrun %v on a clock that fires every timer on time", res.ThinkOverrun)
		}
		return
	}
	if res.Committed > most || res.Committed == 0 {
		t.Errorf("committed %d, want 1 to %d", res.Committed, most)
	}
	// Think time in the timed region would put a whole think (a timer
	// never fires early) in every latency; the 1 ms steps' median stays
	// well below it however loaded the machine.
	if p50 := res.Latency.PercentileMs(50); p50 >= ms(think) {
		t.Errorf("think time leaked into latency: p50 %v ms, max %v ms", p50, res.Latency.MaxMs())
	}
	if res.ThinkOverrun < 0 || res.ThinkOverrun > time.Duration(cfg.Workers)*took {
		t.Errorf("think overrun %v in a run of %v", res.ThinkOverrun, took)
	}
}

func TestClosedLoopLatencyLimitCountsLate(t *testing.T) {
	inBubble(t, closedLoopLatencyLimitCountsLate)
}

func closedLoopLatencyLimitCountsLate(t *testing.T, m runMode) {
	var slow atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if n%2 == 0 {
			slow.Add(1)
			time.Sleep(30 * time.Millisecond)
		} else {
			time.Sleep(time.Millisecond)
		}
		return ok("op"), nil
	}}
	res, err := m.execute(context.Background(), Config{Workers: 1, Duration: 300 * time.Millisecond, LatencyLimit: 20 * time.Millisecond}, ff)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 0 {
		t.Errorf("skipped %d in a closed loop", res.Skipped)
	}
	if m.virtual() {
		// A slow and a fast step every 31 ms: slow ones at 0, 31, ...,
		// 279 ms (10, all late), fast ones at 30, ..., 278 ms (9).
		if res.Late != 10 || res.Committed != 19 {
			t.Errorf("late %d of %d, want 10 of 19", res.Late, res.Committed)
		}
		return
	}
	// Every step started in the window (no warm-up), so every slow step
	// (30 ms, over the 20 ms limit) is measured and late; the fast ones
	// are not all late.
	if res.Late < slow.Load() || res.Late >= res.Committed {
		t.Errorf("late %d of %d, with %d slow steps", res.Late, res.Committed, slow.Load())
	}
}

func TestMeasureHooks(t *testing.T) { inBubble(t, measureHooks) }

func measureHooks(t *testing.T, m runMode) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		time.Sleep(time.Millisecond)
		return ok("op"), nil
	}}
	var starts, ends atomic.Int32
	var startAt, endAt atomic.Int64
	t0 := time.Now()
	cfg := Config{Workers: 2, Warmup: 200 * time.Millisecond, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond,
		OnMeasureStart: func() { starts.Add(1); startAt.Store(int64(time.Since(t0))) },
		OnMeasureEnd:   func() { ends.Add(1); endAt.Store(int64(time.Since(t0))) }}
	if _, err := m.execute(context.Background(), cfg, ff); err != nil {
		t.Fatal(err)
	}
	if starts.Load() != 1 || ends.Load() != 1 {
		t.Fatalf("hooks called %d/%d times, want 1/1", starts.Load(), ends.Load())
	}
	s, e := time.Duration(startAt.Load()), time.Duration(endAt.Load())
	// The hooks run on the executor's schedule: the start after the
	// warm-up, the end after the measurement; exactly then on the fake
	// clock, maybe late but never early on a real one.
	ws, we := cfg.Warmup, cfg.Warmup+cfg.Duration
	if m.virtual() && (s != ws || e != we) {
		t.Errorf("measure start at %v, end at %v, want %v and %v", s, e, ws, we)
	}
	if s < ws || e < we || e < s {
		t.Errorf("measure start at %v, end at %v, want from %v and %v on", s, e, ws, we)
	}
	// Without a warm-up the window opens before the first step: the hook
	// sees every measured step, a -t run's first ones too.
	var open atomic.Bool
	var before atomic.Int64
	ff = &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		if !open.Load() {
			before.Add(1)
		}
		time.Sleep(time.Millisecond)
		return ok("op"), nil
	}}
	// (The hook takes its time: steps started before it would run meanwhile.)
	cfg = Config{Workers: 2, Transactions: 3, OnMeasureStart: func() { time.Sleep(20 * time.Millisecond); open.Store(true) }}
	if _, err := m.execute(context.Background(), cfg, ff); err != nil {
		t.Fatal(err)
	}
	if before.Load() != 0 {
		t.Errorf("%d steps started before the measure start hook", before.Load())
	}
}

func TestPerOpTotalsAndTicks(t *testing.T) { inBubble(t, perOpTotalsAndTicks) }

func perOpTotalsAndTicks(t *testing.T, m runMode) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		time.Sleep(3 * time.Millisecond)
		if n%2 == 0 {
			return ok("a"), nil
		}
		return stp.Outcome{Op: "b", Class: stp.ClassAmbiguousCommit, Attempts: 1}, nil
	}}
	res, err := m.execute(context.Background(), Config{Workers: 2, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond}, ff)
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.AllByOp["a"], res.AllByOp["b"]
	if a.Committed != res.CommittedAll || a.Ambiguous != 0 || b.Committed != 0 || b.Ambiguous != res.AmbiguousAll || a.Committed+b.Ambiguous != ff.steps.Load() {
		t.Errorf("by op %+v, committed %d, ambiguous %d, steps %d", res.AllByOp, res.CommittedAll, res.AmbiguousAll, ff.steps.Load())
	}
	// Per worker, steps start at 0, 3, ..., 399 ms: 134, half of them a.
	if m.virtual() && (ff.steps.Load() != 2*134 || a.Committed != 134) {
		t.Errorf("steps %d, a committed %d; want %d and 134", ff.steps.Load(), a.Committed, 2*134)
	}
	var sumA int64
	for _, tk := range res.Series {
		if tk.Ops == nil {
			// Before the second op was seen (a slow start on a loaded
			// machine) a tick has no per-op counts: what it committed
			// is a's (b never commits).
			sumA += tk.Committed
		}
		if tk.Ops != nil {
			sumA += tk.Ops["a"].Committed
			if tk.Ops["a"].Committed > 0 && tk.Ops["a"].P95Ms <= 0 {
				t.Errorf("tick without p95 for a: %+v", tk)
			}
		}
	}
	if sumA != a.Committed {
		t.Errorf("ticks count %d committed a, totals %d", sumA, a.Committed)
	}
}
