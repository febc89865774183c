package run

import (
	"context"
	"runtime"
	"testing"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
)

type noopWorker struct{}

func (noopWorker) Step(context.Context) (stp.Outcome, error) {
	return stp.Outcome{Op: "noop", Class: stp.ClassOK, Attempts: 1}, nil
}
func (noopWorker) Close() error { return nil }

// BenchmarkClosedLoopOverhead is the executor's own cost per transaction
// (a Step that does nothing), including timing and recording.
func BenchmarkClosedLoopOverhead(b *testing.B) {
	b.ReportAllocs()
	res, err := Execute(context.Background(), Config{Workers: 1, Transactions: int64(b.N)},
		func(context.Context, int) (stp.Worker, error) { return noopWorker{}, nil })
	if err != nil {
		b.Fatal(err)
	}
	if res.Committed != int64(b.N) {
		b.Fatalf("committed %d, want %d", res.Committed, b.N)
	}
}

// TestClosedLoopAllocations: the executor allocates nothing per
// transaction (a Step that does nothing, recorded and timed): what a run
// allocates is its set-up and its ticks, the same for 20,000 transactions
// as for 200,000.
func TestClosedLoopAllocations(t *testing.T) {
	mallocs := func(n int64) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := Execute(context.Background(), Config{Workers: 1, Transactions: n, Tick: time.Hour},
			func(context.Context, int) (stp.Worker, error) { return noopWorker{}, nil })
		runtime.ReadMemStats(&after)
		if err != nil || res.Committed != n {
			t.Fatalf("committed %d of %d: %v", res.Committed, n, err)
		}
		return after.Mallocs - before.Mallocs
	}
	mallocs(1000) // warm: the first run's lazy set-up
	small, large := mallocs(20_000), mallocs(200_000)
	if per := float64(int64(large)-int64(small)) / 180_000; per > 0.001 {
		t.Errorf("%d allocations for 20,000 transactions, %d for 200,000: %.4f per transaction, want 0", small, large, per)
	}
}
