package run

import (
	"context"
	"testing"

	"github.com/tunebench/tunebench/internal/workload"
)

type noopWorker struct{}

func (noopWorker) Step(context.Context) (workload.Outcome, error) {
	return workload.Outcome{Op: "noop", Class: workload.ClassOK, Attempts: 1}, nil
}
func (noopWorker) Close() error { return nil }

// BenchmarkClosedLoopOverhead is the executor's own cost per transaction
// (a Step that does nothing), including timing and recording.
func BenchmarkClosedLoopOverhead(b *testing.B) {
	b.ReportAllocs()
	res, err := Execute(context.Background(), Config{Workers: 1, Transactions: int64(b.N)},
		func(context.Context, int) (workload.Worker, error) { return noopWorker{}, nil })
	if err != nil {
		b.Fatal(err)
	}
	if res.Committed != int64(b.N) {
		b.Fatalf("committed %d, want %d", res.Committed, b.N)
	}
}
