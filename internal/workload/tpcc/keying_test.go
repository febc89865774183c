package tpcc

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestKeyingAndThinkTables(t *testing.T) {
	want := map[string][2]time.Duration{
		OpNewOrder:    {18 * time.Second, 12 * time.Second},
		OpPayment:     {3 * time.Second, 12 * time.Second},
		OpOrderStatus: {2 * time.Second, 10 * time.Second},
		OpDelivery:    {2 * time.Second, 5 * time.Second},
		OpStockLevel:  {2 * time.Second, 5 * time.Second},
	}
	for op, kt := range want {
		if KeyingTime(op) != kt[0] || ThinkMean(op) != kt[1] {
			t.Errorf("%s: keying %v think %v, want %v %v", op, KeyingTime(op), ThinkMean(op), kt[0], kt[1])
		}
	}
	if KeyingTime("x") != 0 || ThinkMean("x") != 0 {
		t.Error("unknown op has times")
	}
}

func TestThinkTimeTruncation(t *testing.T) {
	mean := 12 * time.Second
	if d := thinkFromR(1, mean); d != 0 {
		t.Errorf("r=1: %v, want 0", d)
	}
	if d := thinkFromR(math.Exp(-1), mean); d < mean-time.Microsecond || d > mean+time.Microsecond {
		t.Errorf("r=1/e: %v, want the mean", d)
	}
	// -ln(r) > 10 for r < e^-10: truncated at 10 * mean.
	for _, r := range []float64{math.Exp(-10.5), 1e-300, math.SmallestNonzeroFloat64} {
		if d := thinkFromR(r, mean); d != 10*mean {
			t.Errorf("r=%g: %v, want %v", r, d, 10*mean)
		}
	}
	// Over many draws: never above 10 * mean, mean close to
	// mean * (1 - e^-10), exponential shape (P(T > mean) = 1/e).
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 200000
	var sum time.Duration
	above := 0
	for i := 0; i < n; i++ {
		d := ThinkTime(rng, mean)
		if d < 0 || d > 10*mean {
			t.Fatalf("think time %v", d)
		}
		sum += d
		if d > mean {
			above++
		}
	}
	avg := float64(sum) / n / float64(mean)
	if math.Abs(avg-(1-math.Exp(-10))) > 0.01 {
		t.Errorf("mean think %.4f * mean, want %.4f", avg, 1-math.Exp(-10))
	}
	if p := float64(above) / n; math.Abs(p-math.Exp(-1)) > 0.005 {
		t.Errorf("P(think > mean) = %.4f, want %.4f", p, math.Exp(-1))
	}
}

func TestPauseIsThinkPlusNextKeying(t *testing.T) {
	a, b := rand.New(rand.NewPCG(2, 2)), rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 100; i++ {
		done, next := txnType(i%int(numTxnTypes)), txnType((i/5)%int(numTxnTypes))
		got := pause(a, done, next)
		want := ThinkTime(b, thinkMeans[done]) + keyingTimes[next]
		if got != want {
			t.Fatalf("pause(%v, %v) = %v, want %v", done, next, got, want)
		}
	}
}
