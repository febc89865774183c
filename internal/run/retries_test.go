package run

import (
	"context"
	"maps"
	"testing"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
)

// TestRetriesCounted: the failed attempts a step tried again are counted
// (Result.Retries) and split by SQLSTATE (Result.Retried), apart from the
// final outcomes and their SQLSTATEs; an attempt the worker did not name
// counts as NoSQLState, and warm-up steps count nowhere.
func TestRetriesCounted(t *testing.T) { inBubble(t, retriesCounted) }

func retriesCounted(t *testing.T, m runMode) {
	ff := &fakeFleet{step: func(ctx context.Context, id int, n int64) (stp.Outcome, error) {
		time.Sleep(time.Millisecond)
		switch n % 4 {
		case 1: // committed on the third try
			return stp.Outcome{Op: "op", Class: stp.ClassRetriedOK, Attempts: 3, Retried: []string{"40001", "40P01"}}, nil
		case 2: // tried twice, the first failure not named
			return stp.Outcome{Op: "op", Class: stp.ClassRetriedOK, Attempts: 2}, nil
		case 3: // out of tries: the last failure is the outcome's
			return stp.Outcome{Op: "op", Class: stp.ClassFailedRetryExhausted, Attempts: 2, SQLState: "40001", Retried: []string{"40001"}}, nil
		}
		return ok("op"), nil
	}}
	// 10 ms of warm-up (steps 0..9 of each worker, not counted), then
	// 100 ms: steps 10..109, of which 25 of each kind per worker.
	res, err := m.execute(context.Background(), Config{Workers: 2, Warmup: 10 * time.Millisecond, Duration: 100 * time.Millisecond}, ff)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retries != 2*(25*2+25+25) {
		t.Errorf("retries %d, want %d", res.Retries, 2*(25*2+25+25))
	}
	want := map[string]int64{"40001": 2 * (25 + 25), "40P01": 2 * 25, NoSQLState: 2 * 25}
	if !maps.Equal(res.Retried, want) {
		t.Errorf("retried attempts by SQLSTATE %v, want %v", res.Retried, want)
	}
	if got := res.SQLStates; !maps.Equal(got, map[string]int64{"40001": 2 * 25}) {
		t.Errorf("errors by SQLSTATE %v: want only the 50 final failures", got)
	}
	// The outcome totals come from the snapshot at the window's end: a step
	// that ends at that very instant (one per worker at most) may land
	// after it, while the counters above count by the phase a step began in.
	if n := res.Totals[stp.ClassRetriedOK]; n < 2*50-2*2 || n > 2*50 {
		t.Errorf("retried_ok %d, want 96..100", n)
	}
}
