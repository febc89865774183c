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
	"github.com/tunebench/tunebench/internal/workload"
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
		"tx with rate":      {Workers: 1, Transactions: 5, Rate: 10},
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
	}
	for name, c := range bad {
		_, err := Execute(context.Background(), c, func(context.Context, int) (workload.Worker, error) {
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
	res, err := Execute(context.Background(), Config{Workers: 5, Duration: time.Second}, func(ctx context.Context, id int) (workload.Worker, error) {
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

func TestClosedLoopCountsAndTPS(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(2 * time.Millisecond)}
	var ticks []Tick
	cfg := Config{Workers: 4, Duration: time.Second, Tick: 100 * time.Millisecond,
		OnTick: func(t Tick) { ticks = append(ticks, t) }}
	res, err := execute(context.Background(), cfg, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if res.MeasuredSeconds != 1 {
		t.Errorf("measured seconds %v, want exactly the duration", res.MeasuredSeconds)
	}
	if res.Committed != res.Totals[workload.ClassOK] || res.Committed == 0 || res.Errors != 0 {
		t.Fatalf("committed %d totals %v", res.Committed, res.Totals)
	}
	if res.TPS != float64(res.Committed)/res.MeasuredSeconds {
		t.Errorf("tps %v != committed/measured", res.TPS)
	}
	// 4 workers of 2 ms steps: at most 2000 tps; the sleep overshoots a bit.
	within(t, "tps", res.TPS, 2000*0.5, 2000*1.01)
	if res.Latency.Count() != res.Committed || res.Service != nil || res.Lag != nil {
		t.Errorf("latency count %d service %v lag %v", res.Latency.Count(), res.Service, res.Lag)
	}
	within(t, "p50 ms", res.Latency.PercentileMs(50), 2, 20)
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
	if len(ticks) != len(res.Series) || len(res.Series) < 10 {
		t.Errorf("%d ticks via OnTick, %d in series", len(ticks), len(res.Series))
	}
	for i, tk := range res.Series[:10] {
		if want := float64(i+1) * 0.1; math.Abs(tk.T-want) > 1e-9 || tk.Phase != PhaseMeasure {
			t.Errorf("tick %d: T %v phase %s, want %v measure", i, tk.T, tk.Phase, want)
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

func TestTransactionsModeExactCounts(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(200 * time.Microsecond)
		if n%10 == 9 {
			return workload.Outcome{Op: "b", Class: workload.ClassUserAbort, Attempts: 1}, nil
		}
		return ok("a"), nil
	}}
	cfg := Config{Workers: 3, Transactions: 50, Warmup: 100 * time.Millisecond, Tick: 50 * time.Millisecond}
	res, err := execute(context.Background(), cfg, ff.factory())
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
	if res.Totals[workload.ClassUserAbort]+res.Committed != 150 {
		t.Fatalf("totals %v", res.Totals)
	}
	if res.MeasuredSeconds <= 0 || res.MeasuredSeconds > 2 {
		t.Errorf("measured %v", res.MeasuredSeconds)
	}
	if res.TPS != float64(res.Committed)/res.MeasuredSeconds {
		t.Errorf("tps")
	}
	var warm int
	for _, tk := range res.Series {
		if tk.Phase == PhaseWarmup {
			warm++
			if tk.T > 0 {
				t.Errorf("warm-up tick at T=%v", tk.T)
			}
		}
	}
	if warm < 2 {
		t.Errorf("%d warm-up ticks", warm)
	}
}

func TestWarmupExcluded(t *testing.T) {
	// Steps are slow (30 ms) during the warm-up and fast (1 ms) after it,
	// as seen by the worker's own clock; the result must not contain any
	// slow step.
	var origin atomic.Pointer[time.Time]
	const warm = 400 * time.Millisecond
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		now := time.Now()
		origin.CompareAndSwap(nil, &now)
		if time.Since(*origin.Load()) < warm-50*time.Millisecond {
			time.Sleep(30 * time.Millisecond)
			return ok("warm"), nil
		}
		time.Sleep(time.Millisecond)
		return ok("fast"), nil
	}}
	res, err := execute(context.Background(), Config{Workers: 2, Warmup: warm, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Ops {
		if o.Op != "fast" {
			t.Errorf("warm-up op %q in the result", o.Op)
		}
	}
	if res.Latency.MaxMs() >= 30 {
		t.Errorf("max latency %v ms includes warm-up", res.Latency.MaxMs())
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

func TestDrainRecordsInFlightWork(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(400 * time.Millisecond)}
	res, err := execute(context.Background(), Config{Workers: 2, Duration: 500 * time.Millisecond, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	// Steps start at 0 and ~0.4 s (inside the window) and end at ~0.8 s.
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
	if last := res.Series[len(res.Series)-1]; last.Phase != PhaseDrain || drained != 2 {
		t.Errorf("last tick %+v, %d completed in drain ticks; want the 2 drained steps", last, drained)
	}
	ff.checkClosed(t)
}

func TestDrainTimeoutCountsUnfinished(t *testing.T) {
	var cancelled atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		if id == 0 && n == 3 {
			<-ctx.Done() // hangs until the drain deadline
			cancelled.Add(1)
			return workload.Outcome{Op: "op", Class: workload.ClassFailedError, Err: ctx.Err()}, nil
		}
		time.Sleep(10 * time.Millisecond)
		return ok("op"), nil
	}}
	start := time.Now()
	res, err := execute(context.Background(), Config{Workers: 2, Duration: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Tick: 50 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("took %v", el)
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

func TestInterruptReturnsPromptly(t *testing.T) {
	var sawCancel atomic.Int64
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(50 * time.Millisecond)
		if ctx.Err() != nil {
			sawCancel.Add(1)
		}
		return ok("op"), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelledAt time.Time
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancelledAt = time.Now()
		cancel()
	}()
	res, err := execute(ctx, Config{Workers: 4, Duration: time.Minute, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatalf("interrupt returned error %v", err)
	}
	if el := time.Since(cancelledAt); el > 1500*time.Millisecond {
		t.Errorf("returned %v after the interrupt", el)
	}
	if !res.Interrupted {
		t.Error("not marked interrupted")
	}
	within(t, "measured", res.MeasuredSeconds, 0.25, 0.45)
	if sawCancel.Load() != 0 {
		t.Errorf("%d in-flight steps saw their context cancelled by the interrupt", sawCancel.Load())
	}
	if res.Committed != ff.steps.Load() || res.Unfinished != 0 {
		t.Errorf("committed %d steps %d unfinished %d: in-flight work must be drained and recorded", res.Committed, ff.steps.Load(), res.Unfinished)
	}
	ff.checkClosed(t)
}

func TestConnErrorBackoffAndOutage(t *testing.T) {
	var mu sync.Mutex
	var starts, ends []time.Time
	// Steps 0-1 ok, 2-7 conn_error (an outage), then ok; steps 20-22
	// conn_error again (a second outage).
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
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
			return workload.Outcome{Op: "op", Class: workload.ClassConnError, SQLState: "08006", Err: errors.New("connection reset")}, nil
		}
		if n == 25 {
			return workload.Outcome{Op: "op", Class: workload.ClassConnError, Err: errors.New("eof")}, nil
		}
		return ok("op"), nil
	}}
	var onErr atomic.Int64
	res, err := execute(context.Background(), Config{Workers: 1, Duration: 1500 * time.Millisecond, Seed: 3,
		OnError: func(w int, o workload.Outcome) { onErr.Add(1) }}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	const slack = 25 * time.Millisecond
	checkGaps := func(first, count int) {
		d := backoffMin
		for i := first; i < first+count; i++ {
			gap := starts[i+1].Sub(ends[i])
			if gap < d/2 || gap > d+slack {
				t.Errorf("gap after conn_error step %d = %v, want in [%v, %v]", i, gap, d/2, d+slack)
			}
			d *= 2
		}
		// The next step after the successful one is immediate.
		if gap := starts[first+count+1].Sub(ends[first+count]); gap > slack {
			t.Errorf("no reset after success: gap %v", gap)
		}
	}
	checkGaps(2, 6)
	checkGaps(20, 3)
	if len(res.Outages) != 3 {
		t.Fatalf("outages %+v, want 3", res.Outages)
	}
	o := res.Outages[0]
	if o.Errors != 6 || o.End <= o.Start {
		t.Errorf("first outage %+v", o)
	}
	// Gaps between the 6 errors: 10+20+40+80+160 ms, halved at worst.
	within(t, "outage length", o.End-o.Start, 0.155, 0.31+0.2)
	if res.Outages[1].Errors != 3 || res.Outages[2].Errors != 1 || res.Outages[2].Start != res.Outages[2].End {
		t.Errorf("outages %+v", res.Outages)
	}
	if res.Totals[workload.ClassConnError] != 10 || res.Errors != 10 || onErr.Load() != 10 {
		t.Errorf("conn errors %d errors %d callbacks %d", res.Totals[workload.ClassConnError], res.Errors, onErr.Load())
	}
	if res.SQLStates["08006"] != 9 || res.SQLStates[NoSQLState] != 1 {
		t.Errorf("sqlstates %v", res.SQLStates)
	}
}

func TestStepErrorStopsRun(t *testing.T) {
	boom := errors.New("worker broke")
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(5 * time.Millisecond)
		if id == 1 && n == 20 {
			return workload.Outcome{}, boom
		}
		return ok("op"), nil
	}}
	start := time.Now()
	res, err := execute(context.Background(), Config{Workers: 3, Duration: time.Minute}, ff.factory())
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the step error", err)
	}
	if res == nil || res.Committed == 0 || res.Interrupted {
		t.Fatalf("partial result %+v", res)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("run did not stop promptly: %v", time.Since(start))
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

func TestInvalidOutcomeClassStopsRun(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		return workload.Outcome{Op: "x", Class: workload.NumClasses + 3}, nil
	}}
	_, err := execute(context.Background(), Config{Workers: 1, Duration: time.Minute}, ff.factory())
	if err == nil {
		t.Fatal("invalid class accepted")
	}
}

func TestThinkTimeOutsideTimedRegion(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(time.Millisecond)
		o := ok("op")
		o.Think = 20 * time.Millisecond
		return o, nil
	}}
	res, err := execute(context.Background(), Config{Workers: 2, Duration: 500 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	if res.Latency.MaxMs() >= 15 {
		t.Errorf("think time leaked into latency: max %v ms", res.Latency.MaxMs())
	}
	// ~21 ms per cycle: ~24 per worker.
	within(t, "committed", float64(res.Committed), 20, 50)
	if res.ThinkOverrun < 0 || res.ThinkOverrun > 500*time.Millisecond {
		t.Errorf("think overrun %v", res.ThinkOverrun)
	}
}

func TestClosedLoopLatencyLimitCountsLate(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		if n%2 == 0 {
			time.Sleep(30 * time.Millisecond)
		} else {
			time.Sleep(time.Millisecond)
		}
		return ok("op"), nil
	}}
	res, err := execute(context.Background(), Config{Workers: 1, Duration: 300 * time.Millisecond, LatencyLimit: 20 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	if res.Late == 0 || res.Late > res.Committed/2+1 || res.Skipped != 0 {
		t.Errorf("late %d of %d, skipped %d", res.Late, res.Committed, res.Skipped)
	}
}

func TestMeasureHooks(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(time.Millisecond)
		return ok("op"), nil
	}}
	var starts, ends atomic.Int32
	var startAt, endAt atomic.Int64
	t0 := time.Now()
	cfg := Config{Workers: 2, Warmup: 200 * time.Millisecond, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond,
		OnMeasureStart: func() { starts.Add(1); startAt.Store(int64(time.Since(t0))) },
		OnMeasureEnd:   func() { ends.Add(1); endAt.Store(int64(time.Since(t0))) }}
	if _, err := execute(context.Background(), cfg, ff.factory()); err != nil {
		t.Fatal(err)
	}
	if starts.Load() != 1 || ends.Load() != 1 {
		t.Fatalf("hooks called %d/%d times, want 1/1", starts.Load(), ends.Load())
	}
	s, e := time.Duration(startAt.Load()), time.Duration(endAt.Load())
	// The hooks run on the executor's schedule: the start after the
	// warm-up, the end after the measurement (either may be called late on
	// a loaded machine, never early).
	if s < 200*time.Millisecond || s > 350*time.Millisecond || e < 500*time.Millisecond || e-s > 450*time.Millisecond {
		t.Errorf("measure start at %v, end at %v", s, e)
	}
}

func TestPerOpTotalsAndTicks(t *testing.T) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (workload.Outcome, error) {
		time.Sleep(time.Millisecond)
		if n%2 == 0 {
			return ok("a"), nil
		}
		return workload.Outcome{Op: "b", Class: workload.ClassAmbiguousCommit, Attempts: 1}, nil
	}}
	res, err := execute(context.Background(), Config{Workers: 2, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.AllByOp["a"], res.AllByOp["b"]
	if a.Committed != res.CommittedAll || a.Ambiguous != 0 || b.Committed != 0 || b.Ambiguous != res.AmbiguousAll || a.Committed+b.Ambiguous != ff.steps.Load() {
		t.Errorf("by op %+v, committed %d, ambiguous %d, steps %d", res.AllByOp, res.CommittedAll, res.AmbiguousAll, ff.steps.Load())
	}
	var sumA int64
	for _, tk := range res.Series {
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
