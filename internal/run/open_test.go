package run

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	stp "github.com/tunebench/tunebench/internal/step"
)

func TestScheduleStatistics(t *testing.T) {
	const n = 100_000
	const rate = 1000.0
	s := NewSchedule(rate, 42)
	gaps := make([]float64, n)
	prev := time.Duration(0)
	for i := range gaps {
		at := s.Next()
		if at < prev {
			t.Fatal("schedule went backwards")
		}
		gaps[i] = (at - prev).Seconds()
		prev = at
	}
	mean := 1 / rate
	var sum, sq float64
	for _, g := range gaps {
		sum += g
		sq += g * g
	}
	m := sum / n
	sd := math.Sqrt(sq/n - m*m)
	// Standard error of the mean is mean/sqrt(n) = 0.3%; allow 1%.
	within(t, "mean gap", m, mean*0.99, mean*1.01)
	// Exponential: standard deviation equals the mean.
	within(t, "cv", sd/m, 0.98, 1.02)
	exponentialKS(t, gaps, mean)
	// The total over n draws is n/rate seconds, never reset.
	within(t, "cumulative", prev.Seconds(), n/rate*0.99, n/rate*1.01)

	// Deterministic per seed.
	a, b, c := NewSchedule(rate, 7), NewSchedule(rate, 7), NewSchedule(rate, 8)
	same, diff := true, false
	for i := 0; i < 100; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Errorf("seeding: same seed equal %v, different seed differs %v", same, diff)
	}
}

// exponentialKS checks that the gaps (sorted in place) are exponential
// with the mean: a Kolmogorov-Smirnov test against 1-exp(-x/mean), whose
// critical value at alpha=0.01 is 1.63/sqrt(n).
func exponentialKS(t *testing.T, gaps []float64, mean float64) {
	t.Helper()
	sort.Float64s(gaps)
	n := float64(len(gaps))
	var d float64
	for i, g := range gaps {
		f := 1 - math.Exp(-g/mean)
		d = math.Max(d, math.Max(math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n)))
	}
	if crit := 1.63 / math.Sqrt(n); d > crit {
		t.Errorf("KS statistic %v > %v: gaps are not exponential with mean %v", d, crit, mean)
	}
}

// accounted checks that every intended start in the measurement ended up
// as an outcome, a skip or unfinished.
func accounted(t *testing.T, res *Result) {
	t.Helper()
	if got := sumTotals(res, true) + res.Unfinished; got != res.Scheduled || res.Scheduled == 0 {
		t.Errorf("outcomes+skipped+unfinished = %d (totals %v, unfinished %d), scheduled %d",
			got, res.Totals, res.Unfinished, res.Scheduled)
	}
	if res.Skipped != res.Totals[stp.ClassSkippedLate] {
		t.Errorf("skipped %d vs totals %d", res.Skipped, res.Totals[stp.ClassSkippedLate])
	}
}

// These open-loop tests run in synctest bubbles (a goroutine per worker,
// waiting on timers and channels; the multiplexed open loop's tests are in
// muxopen_test.go, on the real clock), so the fake steps and the seeded schedule play out on a fake
// clock that a loaded machine cannot stretch; what the schedule implies is
// computed from the same seeded schedule.

// schedulePoints returns the intended starts of the seeded schedule in
// [from, to).
func schedulePoints(rate float64, seed int64, from, to time.Duration) []time.Duration {
	var out []time.Duration
	s := NewSchedule(rate, seed)
	for at := s.Next(); at < to; at = s.Next() {
		if at >= from {
			out = append(out, at)
		}
	}
	return out
}

// fifoStarts is when one worker whose steps take service starts the
// intended starts tks, served in order: each at its intended start, or
// when the worker is done with the one before if that is later.
func fifoStarts(tks []time.Duration, service time.Duration) []time.Duration {
	out := make([]time.Duration, len(tks))
	var free time.Duration
	for i, tk := range tks {
		out[i] = max(tk, free)
		free = out[i] + service
	}
	return out
}

func TestOpenLoopAchievesRate(t *testing.T) { synctest.Test(t, openLoopAchievesRate) }

func openLoopAchievesRate(t *testing.T) {
	const step = time.Millisecond
	ff := &fakeFleet{step: sleepStep(step)}
	const rate, dur = 500.0, 2 * time.Second
	res, err := Execute(context.Background(), Config{Workers: 4, Rate: rate, Duration: dur, Seed: 1, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	if want := len(schedulePoints(rate, 1, 0, dur)); res.Scheduled != int64(want) {
		t.Errorf("scheduled %d, want %d from the seeded schedule", res.Scheduled, want)
	}
	// Poisson count over 2 s: 1000 +- 32 (1 sd).
	within(t, "scheduled", float64(res.Scheduled), 900, 1100)
	if res.Committed != res.Scheduled || res.Unfinished != 0 || res.Skipped != 0 {
		t.Errorf("committed %d of %d scheduled", res.Committed, res.Scheduled)
	}
	if res.MeasuredSeconds != dur.Seconds() {
		t.Errorf("measured %v, want %v", res.MeasuredSeconds, dur.Seconds())
	}
	within(t, "tps/target", res.TPS/rate, 0.9, 1.1)
	if !res.OpenLoop || res.TargetRate != rate || res.Service == nil || res.Lag == nil {
		t.Fatalf("open-loop fields missing")
	}
	if res.Lag.Count() != res.Committed || res.Service.Count() != res.Committed {
		t.Errorf("lag/service counts %d/%d", res.Lag.Count(), res.Service.Count())
	}
	// Service time is the step; on an idle pool every transaction starts
	// at its intended time (no lag: the histograms' floor is 1 µs), so its
	// latency is its service time.
	sameMs(t, "service min", res.Service.MinMs(), ms(step))
	sameMs(t, "service max", res.Service.MaxMs(), ms(step))
	if res.Lag.MaxMs() > 0.001 {
		t.Errorf("lag max %v ms on an idle pool", res.Lag.MaxMs())
	}
	sameMs(t, "latency max", res.Latency.MaxMs(), ms(step))
	for _, tk := range res.Series {
		if tk.Phase == PhaseMeasure {
			within(t, "tick tps/target", tk.TPS/rate, 0.5, 1.6)
		}
	}
	if len(res.Ops) != 1 || res.Ops[0].Service == nil || res.Ops[0].Lag == nil {
		t.Errorf("ops %+v", res.Ops)
	}
}

func TestOpenLoopWarmupSharesSchedule(t *testing.T) { synctest.Test(t, openLoopWarmupSharesSchedule) }

func openLoopWarmupSharesSchedule(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(200 * time.Microsecond)}
	const warmup, dur = 500 * time.Millisecond, time.Second
	res, err := Execute(context.Background(), Config{Workers: 2, Rate: 400, Warmup: warmup, Duration: dur, Seed: 9, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	// One seeded schedule from the warm-up's start: the warm-up serves
	// its points in [0, 0.5 s), the measurement those in [0.5 s, 1.5 s).
	warm, measured := schedulePoints(400, 9, 0, warmup), schedulePoints(400, 9, warmup, warmup+dur)
	if res.Scheduled != int64(len(measured)) || res.Committed != int64(len(measured)) {
		t.Errorf("scheduled %d, committed %d, want %d from the same seeded schedule", res.Scheduled, res.Committed, len(measured))
	}
	if got := ff.steps.Load() - res.Committed; got != int64(len(warm)) {
		t.Errorf("%d warm-up steps, want %d", got, len(warm))
	}
	// About a third in warm-up.
	within(t, "warm-up share", float64(len(warm))/float64(ff.steps.Load()), 0.2, 0.45)
}

// The stall test of MEASUREMENT.md section 3.6: an in-process fake whose
// steps all block for S = 1 s once, during an open-loop run at R = 200/s
// over T = 6 s. Arrivals during the stall wait until it ends, so latency
// exceeds x for a fraction (S-x)/T of all transactions, giving
// p(q) = S - (1-q/100)*T: p99 = 0.94 s, p95 = 0.70 s, p90 = 0.40 s, and a
// max of about S. Nothing may be dropped.
func TestOpenLoopStallShowsInPercentiles(t *testing.T) {
	synctest.Test(t, openLoopStallShowsInPercentiles)
}

func openLoopStallShowsInPercentiles(t *testing.T) {
	const (
		rate     = 200.0
		dur      = 6 * time.Second
		stallLen = time.Second
	)
	st := &stall{from: 2 * time.Second, to: 2*time.Second + stallLen}
	ff := &fakeFleet{step: st.wrap(time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 8, Rate: rate, Duration: dur, Seed: 5, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	if res.Unfinished != 0 || res.Skipped != 0 || res.Committed != res.Scheduled {
		t.Fatalf("dropped work: committed %d scheduled %d unfinished %d skipped %d", res.Committed, res.Scheduled, res.Unfinished, res.Skipped)
	}
	T, S := res.MeasuredSeconds, stallLen.Seconds()
	expect := func(p float64) float64 { return S - (1-p/100)*T }
	l := res.Latency
	// The first step caught waits out the whole stall after its 1 ms.
	if l.MaxMs() < S*1000 || l.MaxMs() > (S*1000+1)*1.001 {
		t.Errorf("max latency %v ms, want the stall's %v ms and at most the step's 1 ms more", l.MaxMs(), S*1000)
	}
	// Tolerance: Poisson noise in the number of arrivals (~14 in the
	// stall) shifts each percentile by roughly 0.1 s (the seeded schedule
	// and the fake clock make the values themselves exact).
	for _, p := range []float64{90, 95, 99} {
		want := expect(p) * 1000
		t.Logf("p%v: measured %.1f ms, formula %.1f ms", p, l.PercentileMs(p), want)
		within(t, fmt.Sprintf("p%v ms", p), l.PercentileMs(p), want-120, want+120)
	}
	if l.PercentileMs(50) > 50 {
		t.Errorf("p50 %v ms: the stall should not reach the median", l.PercentileMs(50))
	}
	// Service time stays short for all but the in-flight steps; lag
	// carries the stall.
	if res.Service.PercentileMs(95) > 50 || res.Lag.PercentileMs(99) < 0.8*expect(99)*1000 {
		t.Errorf("service p95 %v ms, lag p99 %v ms", res.Service.PercentileMs(95), res.Lag.PercentileMs(99))
	}
	if res.MaxQueueDepth < 150 {
		t.Errorf("max queue depth %d, want the stall's backlog (~190)", res.MaxQueueDepth)
	}
	var peak float64
	for _, tk := range res.Series {
		peak = math.Max(peak, tk.MaxMs)
	}
	if peak < 900 {
		t.Errorf("stall not visible in the per-tick max: %v ms", peak)
	}
}

// The same stall in a closed loop is mostly hidden from the percentiles
// (coordinated omission): only the in-flight steps see it. The max shows it.
func TestClosedLoopStallIsCoordinatedOmission(t *testing.T) {
	synctest.Test(t, closedLoopStallIsCoordinatedOmission)
}

func closedLoopStallIsCoordinatedOmission(t *testing.T) {
	st := &stall{from: 1 * time.Second, to: 2 * time.Second}
	ff := &fakeFleet{step: st.wrap(time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 8, Duration: 3 * time.Second, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	// The 8 steps that start at 999 ms wait out the stall: 1001 ms.
	sameMs(t, "max", res.Latency.MaxMs(), 1001)
	// Every other step takes its 1 ms.
	sameMs(t, "closed-loop p99 (the stall hidden)", res.Latency.PercentileMs(99), 1)
}

func TestOpenLoopLatencyLimitSkips(t *testing.T) { synctest.Test(t, openLoopLatencyLimitSkips) }

func openLoopLatencyLimitSkips(t *testing.T) {
	const (
		rate  = 200.0
		seed  = 11
		step  = time.Millisecond
		limit = 50 * time.Millisecond
	)
	st := &stall{from: time.Second, to: 1500 * time.Millisecond}
	ff := &fakeFleet{step: st.wrap(step)}
	start := time.Now()
	res, err := Execute(context.Background(), Config{Workers: 2, Rate: rate, Duration: 3 * time.Second, LatencyLimit: limit, Seed: seed, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	// A step that starts within 1 ms before the stall or during it waits
	// until its end: the first two such arrivals hold both workers, the
	// ones after them queue. When the workers come free, those already
	// more than the limit late are skipped; of the others (served 1 ms
	// each) some may tip over the limit while waiting their turn.
	origin := st.origin.Sub(start)
	caught := schedulePoints(rate, seed, origin+st.from-step, origin+st.to-step)
	if len(caught) < 3 {
		t.Fatalf("%d arrivals in the stall", len(caught))
	}
	stale := 0
	for _, tk := range caught[2:] {
		if tk < origin+st.to-limit {
			stale++
		}
	}
	if res.Skipped < int64(stale) || res.Skipped > int64(len(caught)-2) {
		t.Errorf("skipped %d, want from the %d arrivals more than %v late at the stall's end to the %d queued in it", res.Skipped, stale, limit, len(caught)-2)
	}
	// ~100 arrivals in the stall; those more than 50 ms late when a worker
	// frees up are skipped.
	within(t, "skipped", float64(res.Skipped), 50, 130)
	// The two steps caught in the stall completed late.
	if res.Late < 2 {
		t.Errorf("late %d, want >= 2", res.Late)
	}
	var found bool
	for _, o := range res.Ops {
		if o.Op == SkippedOp && o.Class == stp.ClassSkippedLate {
			found = true
			if o.Latency != nil || o.Count != res.Skipped {
				t.Errorf("skipped entry %+v", o)
			}
		}
	}
	if !found {
		t.Errorf("no skipped entry in %+v", res.Ops)
	}
	// Skipped transactions have no latency: the committed max is the stall.
	if res.Latency.Count() != res.Committed {
		t.Errorf("latency count %d vs committed %d", res.Latency.Count(), res.Committed)
	}
}

func TestOpenLoopTransactions(t *testing.T) { synctest.Test(t, openLoopTransactions) }

// openLoopTransactions: a count with a rate (pgbench -t with -R) serves
// exactly clients x count measured intended starts of the schedule, from
// the end of the warm-up; the window ends with the last one's end.
func openLoopTransactions(t *testing.T) {
	const (
		rate = 300.0
		seed = 21
		step = time.Millisecond
	)
	warm := 200 * time.Millisecond
	ff := &fakeFleet{step: sleepStep(step)}
	res, err := Execute(context.Background(), Config{Workers: 3, Rate: rate, Transactions: 20, Warmup: warm, Seed: seed}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	warmups := len(schedulePoints(rate, seed, 0, warm))
	measured := schedulePoints(rate, seed, warm, time.Hour)[:60]
	if res.Scheduled != 60 || res.Committed != 60 || ff.steps.Load() != int64(warmups+60) {
		t.Errorf("scheduled %d committed %d steps %d, want 60, 60 and %d with the warm-up's", res.Scheduled, res.Committed, ff.steps.Load(), warmups+60)
	}
	// At 300/s three workers keep up with 1 ms steps: the last measured
	// start ends 1 ms after it is due.
	if want := (measured[59] + step - warm).Seconds(); res.MeasuredSeconds != want {
		t.Errorf("measured %v s, want %v (the 60th intended start's end)", res.MeasuredSeconds, want)
	}
}

func TestOpenLoopTransactionsSkipLate(t *testing.T) { synctest.Test(t, openLoopTransactionsSkipLate) }

// openLoopTransactionsSkipLate: pgbench's "late throttling": at a rate
// far above what one client does, with a 1 ms limit and 2 ms steps, the
// first start runs and the others of the client's 10 are skipped, and
// the run ends once all 10 are accounted for.
func openLoopTransactionsSkipLate(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(2 * time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 1, Rate: 100000, Transactions: 10, LatencyLimit: time.Millisecond, Seed: 4}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	if res.Scheduled != 10 || res.Committed != 1 || res.Skipped != 9 || res.Late != 1 || ff.steps.Load() != 1 {
		t.Errorf("scheduled %d committed %d skipped %d late %d steps %d, want 10, 1, 9, 1 and 1",
			res.Scheduled, res.Committed, res.Skipped, res.Late, ff.steps.Load())
	}
}

func TestOpenLoopInterruptAccountsForQueue(t *testing.T) {
	synctest.Test(t, openLoopInterruptAccountsForQueue)
}

func openLoopInterruptAccountsForQueue(t *testing.T) {
	// One slow worker at 300/s builds a backlog; the interrupt abandons it.
	const (
		rate, seed = 300.0, 2
		step       = 20 * time.Millisecond
		interrupt  = time.Second
	)
	ff := &fakeFleet{step: sleepStep(step)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(interrupt)
		cancel()
	}()
	start := time.Now()
	res, err := Execute(ctx, Config{Workers: 1, Rate: rate, Duration: time.Minute, Seed: seed}, ff.factory())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// The worker serves the schedule in order, back to back: the
	// transactions it started before the interrupt are measured, and the
	// run returns when the one in flight ends.
	starts := fifoStarts(schedulePoints(rate, seed, 0, interrupt), step)
	var begun int64
	var last time.Duration
	for _, s := range starts {
		if s < interrupt {
			begun++
			last = s
		}
	}
	if took != last+step {
		t.Errorf("returned %v after the start, want %v (the end of the step in flight at the interrupt)", took, last+step)
	}
	if !res.Interrupted || res.Unfinished < 100 {
		t.Errorf("interrupted %v unfinished %d", res.Interrupted, res.Unfinished)
	}
	accounted(t, res)
	if res.MeasuredSeconds != interrupt.Seconds() {
		t.Errorf("measured %v, want %v", res.MeasuredSeconds, interrupt.Seconds())
	}
	// The one worker did 50 steps/s, whatever the target.
	if res.Committed != begun || res.TPS != float64(begun)/interrupt.Seconds() {
		t.Errorf("committed %d tps %v, want %d", res.Committed, res.TPS, begun)
	}
	within(t, "tps", res.TPS, 49, 51)
	ff.checkClosed(t)
}

func TestOpenLoopDrainServesBacklogAndExtendsWindow(t *testing.T) {
	synctest.Test(t, openLoopDrainServesBacklogAndExtendsWindow)
}

func openLoopDrainServesBacklogAndExtendsWindow(t *testing.T) {
	// 100/s for 1 s on one worker doing 15 ms steps: ~1.5 s of work, so the
	// drain serves the backlog and the measured window covers it.
	const (
		rate, seed = 100.0, 4
		step       = 15 * time.Millisecond
		dur        = time.Second
	)
	ff := &fakeFleet{step: sleepStep(step)}
	res, err := Execute(context.Background(), Config{Workers: 1, Rate: rate, Duration: dur, Seed: seed, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	if res.Unfinished != 0 || res.Committed != res.Scheduled {
		t.Fatalf("committed %d scheduled %d unfinished %d", res.Committed, res.Scheduled, res.Unfinished)
	}
	// The window extends to the actual start of the last measured
	// transaction.
	starts := fifoStarts(schedulePoints(rate, seed, 0, dur), step)
	if want := starts[len(starts)-1].Seconds(); want <= 1.1 || res.MeasuredSeconds != want {
		t.Errorf("measured %v, want %v: the backlog served in the drain must extend the window", res.MeasuredSeconds, want)
	}
	// The schedule lag is queueing (one busy worker), not the driver: with
	// exact timers (the bubble's) the driver's own dispatch delay is zero
	// for every start (the histograms' floor, metrics.MinMicros), while
	// the lag grows to hundreds of ms.
	if res.Dispatch == nil || res.Dispatch.Count() != res.Committed || res.Dispatch.MaxMicros() > metrics.MinMicros {
		t.Errorf("dispatch delay: %d samples (committed %d), max %d µs; want one per start, all 0", res.Dispatch.Count(), res.Committed, res.Dispatch.MaxMicros())
	}
	if p := res.Lag.PercentileMs(99); p < 100 {
		t.Errorf("schedule lag p99 %.1f ms: the backlog should show there", p)
	}
	// Capacity is ~60/s; the reported tps must not claim the target.
	within(t, "tps", res.TPS, 40, 75)
	var drain bool
	for _, tk := range res.Series {
		drain = drain || (tk.Phase == PhaseDrain && tk.Committed > 0)
	}
	if !drain {
		t.Error("no drain tick with work")
	}
}

// TestStepContextPaced: the step context of an open loop carries
// step.WithPaced (a worker with a thread of its own then keeps it out of
// the batch policy), and a closed loop's does not.
func TestStepContextPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, rate := range []float64{0, 200} {
			var paced, unpaced atomic.Int64
			ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
				if stp.IsPaced(ctx) {
					paced.Add(1)
				} else {
					unpaced.Add(1)
				}
				time.Sleep(time.Millisecond)
				return ok("op"), nil
			}}
			cfg := Config{Workers: 2, Rate: rate, Duration: time.Second, Seed: 1, Tick: 250 * time.Millisecond}
			if _, err := Execute(context.Background(), cfg, ff.factory()); err != nil {
				t.Fatal(err)
			}
			ff.checkClosed(t)
			open := rate > 0
			if p, u := paced.Load(), unpaced.Load(); p+u == 0 || (open && u > 0) || (!open && p > 0) {
				t.Errorf("rate %v: %d steps with a paced context, %d without", rate, p, u)
			}
		}
	})
}
