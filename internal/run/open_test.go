package run

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/workload"
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
	// Kolmogorov-Smirnov against 1-exp(-x/mean); critical value at
	// alpha=0.01 is 1.63/sqrt(n).
	sort.Float64s(gaps)
	var d float64
	for i, g := range gaps {
		f := 1 - math.Exp(-g/mean)
		d = math.Max(d, math.Max(math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n)))
	}
	if crit := 1.63 / math.Sqrt(n); d > crit {
		t.Errorf("KS statistic %v > %v: gaps are not exponential", d, crit)
	}
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

// accounted checks that every intended start in the measurement ended up
// as an outcome, a skip or unfinished.
func accounted(t *testing.T, res *Result) {
	t.Helper()
	if got := sumTotals(res, true) + res.Unfinished; got != res.Scheduled || res.Scheduled == 0 {
		t.Errorf("outcomes+skipped+unfinished = %d (totals %v, unfinished %d), scheduled %d",
			got, res.Totals, res.Unfinished, res.Scheduled)
	}
	if res.Skipped != res.Totals[workload.ClassSkippedLate] {
		t.Errorf("skipped %d vs totals %d", res.Skipped, res.Totals[workload.ClassSkippedLate])
	}
}

func TestOpenLoopAchievesRate(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	const rate, dur = 500.0, 2 * time.Second
	res, err := Execute(context.Background(), Config{Workers: 4, Rate: rate, Duration: dur, Seed: 1, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	accounted(t, res)
	// Poisson count over 2 s: 1000 +- 32 (1 sd).
	within(t, "scheduled", float64(res.Scheduled), 900, 1100)
	if res.Committed != res.Scheduled || res.Unfinished != 0 || res.Skipped != 0 {
		t.Errorf("committed %d of %d scheduled", res.Committed, res.Scheduled)
	}
	within(t, "measured", res.MeasuredSeconds, 2, 2.05)
	within(t, "tps/target", res.TPS/rate, 0.9, 1.1)
	if !res.OpenLoop || res.TargetRate != rate || res.Service == nil || res.Lag == nil {
		t.Fatalf("open-loop fields missing")
	}
	if res.Lag.Count() != res.Committed || res.Service.Count() != res.Committed {
		t.Errorf("lag/service counts %d/%d", res.Lag.Count(), res.Service.Count())
	}
	// Latency from the intended start is at least the service time.
	if res.Latency.PercentileMs(50) < res.Service.PercentileMs(50) {
		t.Errorf("p50 latency %v < service %v", res.Latency.PercentileMs(50), res.Service.PercentileMs(50))
	}
	within(t, "service p50 ms", res.Service.PercentileMs(50), 1, 10)
	if res.Lag.PercentileMs(50) > 5 {
		t.Errorf("lag p50 %v ms on an idle pool", res.Lag.PercentileMs(50))
	}
	for _, tk := range res.Series {
		if tk.Phase == PhaseMeasure {
			within(t, "tick tps/target", tk.TPS/rate, 0.5, 1.6)
		}
	}
	if len(res.Ops) != 1 || res.Ops[0].Service == nil || res.Ops[0].Lag == nil {
		t.Errorf("ops %+v", res.Ops)
	}
}

func TestOpenLoopWarmupSharesSchedule(t *testing.T) {
	ff := &fakeFleet{step: sleepStep(200 * time.Microsecond)}
	res, err := Execute(context.Background(), Config{Workers: 2, Rate: 400, Warmup: 500 * time.Millisecond, Duration: time.Second, Seed: 9, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	// Steps = warm-up + measured; about a third in warm-up.
	warm := ff.steps.Load() - res.Committed
	within(t, "warm-up share", float64(warm)/float64(ff.steps.Load()), 0.2, 0.45)
	// The measured count equals the number of schedule points in
	// [0.5 s, 1.5 s) of the seeded schedule started at the warm-up start.
	s := NewSchedule(400, 9)
	var want int64
	for at := s.Next(); at < 1500*time.Millisecond; at = s.Next() {
		if at >= 500*time.Millisecond {
			want++
		}
	}
	if res.Scheduled != want {
		t.Errorf("scheduled %d, want %d from the same seeded schedule", res.Scheduled, want)
	}
}

// The stall test of MEASUREMENT.md section 3.6: an in-process fake whose
// steps all block for S = 1 s once, during an open-loop run at R = 200/s
// over T = 6 s. Arrivals during the stall wait until it ends, so latency
// exceeds x for a fraction (S-x)/T of all transactions, giving
// p(q) = S - (1-q/100)*T: p99 = 0.94 s, p95 = 0.70 s, p90 = 0.40 s, and a
// max of about S. Nothing may be dropped.
func TestOpenLoopStallShowsInPercentiles(t *testing.T) {
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
	if l.MaxMs() < 0.95*S*1000 {
		t.Errorf("max latency %v ms < stall", l.MaxMs())
	}
	// Tolerance: Poisson noise in the number of arrivals (~14 in the
	// stall) shifts each percentile by roughly 0.1 s.
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
	st := &stall{from: 1 * time.Second, to: 2 * time.Second}
	ff := &fakeFleet{step: st.wrap(time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 8, Duration: 3 * time.Second, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	if res.Latency.MaxMs() < 900 {
		t.Errorf("max %v ms misses the stall", res.Latency.MaxMs())
	}
	if res.Latency.PercentileMs(99) > 100 {
		t.Errorf("closed-loop p99 %v ms; expected the stall to be hidden", res.Latency.PercentileMs(99))
	}
}

func TestOpenLoopLatencyLimitSkips(t *testing.T) {
	st := &stall{from: time.Second, to: 1500 * time.Millisecond}
	ff := &fakeFleet{step: st.wrap(time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 2, Rate: 200, Duration: 3 * time.Second, LatencyLimit: 50 * time.Millisecond, Seed: 11, Tick: 250 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	// ~100 arrivals in the stall; those more than 50 ms late when a worker
	// frees up are skipped.
	within(t, "skipped", float64(res.Skipped), 50, 130)
	// The two steps caught in the stall completed late.
	if res.Late < 2 {
		t.Errorf("late %d, want >= 2", res.Late)
	}
	var found bool
	for _, o := range res.Ops {
		if o.Op == SkippedOp && o.Class == workload.ClassSkippedLate {
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

func TestOpenLoopInterruptAccountsForQueue(t *testing.T) {
	// One slow worker at 300/s builds a backlog; the interrupt abandons it.
	ff := &fakeFleet{step: sleepStep(20 * time.Millisecond)}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelledAt time.Time
	go func() {
		time.Sleep(time.Second)
		cancelledAt = time.Now()
		cancel()
	}()
	res, err := Execute(ctx, Config{Workers: 1, Rate: 300, Duration: time.Minute, Seed: 2}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(cancelledAt); el > time.Second {
		t.Errorf("returned %v after the interrupt", el)
	}
	if !res.Interrupted || res.Unfinished < 100 {
		t.Errorf("interrupted %v unfinished %d", res.Interrupted, res.Unfinished)
	}
	accounted(t, res)
	within(t, "measured", res.MeasuredSeconds, 0.9, 1.2)
	// The one worker did ~50 steps/s, whatever the target.
	within(t, "tps", res.TPS, 30, 55)
	ff.checkClosed(t)
}

func TestOpenLoopDrainServesBacklogAndExtendsWindow(t *testing.T) {
	// 100/s for 1 s on one worker doing 15 ms steps: ~1.5 s of work, so the
	// drain serves the backlog and the measured window covers it.
	ff := &fakeFleet{step: sleepStep(15 * time.Millisecond)}
	res, err := Execute(context.Background(), Config{Workers: 1, Rate: 100, Duration: time.Second, Seed: 4, Tick: 100 * time.Millisecond}, ff.factory())
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, res)
	if res.Unfinished != 0 || res.Committed != res.Scheduled {
		t.Fatalf("committed %d scheduled %d unfinished %d", res.Committed, res.Scheduled, res.Unfinished)
	}
	if res.MeasuredSeconds <= 1.1 {
		t.Errorf("measured %v: the backlog served in the drain must extend the window", res.MeasuredSeconds)
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
