package tpcb

import (
	"strings"
	"testing"
	"time"
)

// Changes made outside tunebench since its last run (another client's
// rows, pgbench's TRUNCATE of pgbench_history) make the conditions that
// depend on the history not applicable, not failed (issue 16, item 13:
// "history grew by -608322 rows", exit 5).
func TestCheckAfterOutsideChanges(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2}, nil); err != nil {
		t.Fatal(err)
	}
	before, err := HistoryCount(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		tpcbTx(t, conn, 1+i*997, 1+i, 1, 100*i+150)
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: before, Committed: 5}); err != nil {
		t.Fatal(err)
	}
	if rep := mustCheck(t, conn); !rep.Passed || condition(t, rep, "history growth").Skipped {
		t.Fatalf("right after the run: %+v", rep)
	}

	// Another client's transaction (balances kept): the growth no longer
	// tells anything about the run.
	tpcbTx(t, conn, 7, 2, 1, 40)
	rep := mustCheck(t, conn)
	hc := condition(t, rep, "history growth")
	if !rep.Passed || !hc.Skipped || !strings.Contains(hc.Detail, "outside tunebench") || condition(t, rep, "balances").Skipped {
		t.Fatalf("after another client's transaction: %+v", rep)
	}

	// pgbench without -n truncates the history: the accounts no longer
	// match it, through no fault of the data.
	exec(t, conn, "truncate pgbench_history")
	rep = mustCheck(t, conn)
	bal, hc := condition(t, rep, "balances"), condition(t, rep, "history growth")
	if !rep.Passed || !bal.Skipped || !strings.Contains(bal.Detail, "rewritten outside tunebench") || !hc.Skipped {
		t.Fatalf("after TRUNCATE pgbench_history: %+v", rep)
	}

	// A real inconsistency still fails: tellers and branches disagree.
	exec(t, conn, "update pgbench_tellers set tbalance = tbalance + 1 where tid = 3")
	if rep := mustCheck(t, conn); rep.Passed || condition(t, rep, "balances").Passed {
		t.Fatalf("tellers off by one after the truncate: %+v", rep)
	}
}
