package run

import (
	"context"
	"testing"

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
