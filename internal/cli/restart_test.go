package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// TestServerRestartMidRun restarts the server (pg_ctl restart -m fast) while
// a tpcb-like run with 2 clients is measuring. The run must ride it out:
// workers reconnect, the errors are counted by class and SQLSTATE (57P01
// admin shutdown), the outage window is reported, the run finishes at its
// duration and is saved, and the balance check passes with the history
// growth inside the ambiguous-commit bound (--max-outage-pct 100 accepts
// the restart's outage, however long it takes). A second, shorter run with
// --max-errors-pct 0 must exit 4 and still be saved. The first run has its
// two clients multiplexed on one thread, the second one thread per client.
func TestServerRestartMidRun(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t) // its own: the restart must not disturb other tests
	h := newHarness(t)
	db := loadedDB(h, srv)
	results := tempPath(t, "results.db")

	restartAfter := func(rn *running, d time.Duration) time.Duration {
		t.Helper()
		rn.waitStderr(t, "progress:", 30*time.Second) // measuring, first tick at 1 s
		time.Sleep(d)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		if err := srv.Restart(ctx, "fast"); err != nil {
			t.Fatalf("restart: %v", err)
		}
		return time.Since(t0)
	}

	jsonPath := tempPath(t, "summary.json")
	rn := h.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "2", "--threads", "1", "--duration", "8s", "--max-errors-pct", "100", "--max-outage-pct", "100", "--json", jsonPath)
	took := restartAfter(rn, 2*time.Second)
	t.Logf("restart took %v", took)
	r := rn.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("run through a restart with --max-errors-pct 100 --max-outage-pct 100: want exit 0:\n%s", r)
	}
	s := readSummary(t, jsonPath)
	checkSummaryShape(t, s)
	if s.Threads != 1 {
		t.Errorf("threads %d, want 1 (--threads 1)", s.Threads)
	}
	t.Logf("outcomes %v, SQLSTATEs %v, outages %+v", s.Outcomes, s.BySQLState, s.Outages)
	if s.DurationS != 8 {
		t.Errorf("duration_s %v, want 8: the run must go on to its end", s.DurationS)
	}
	lost := s.Outcomes["conn_error"] + s.Outcomes["ambiguous_commit"]
	if lost == 0 || s.Errors < lost {
		t.Errorf("no conn_error/ambiguous_commit outcomes counted: outcomes %v errors %d", s.Outcomes, s.Errors)
	}
	if s.BySQLState["57P01"] == 0 {
		t.Errorf("errors by SQLSTATE %v: want 57P01 (terminating connection due to administrator command)", s.BySQLState)
	}
	// A restart causes connection errors only: failed reconnects are
	// conn_error too (SQLSTATE 57P03 or none for a refused connection), and
	// they are spaced by the back-off, not retried in a tight loop.
	if s.Outcomes["failed_error"] != 0 || s.BySQLState["client"] != 0 {
		t.Errorf("a server restart produced %d failed_error outcomes (SQLSTATEs %v): failed reconnects must count as conn_error",
			s.Outcomes["failed_error"], s.BySQLState)
	}
	if s.Errors > 100 {
		t.Errorf("%d errors for a %v restart with 2 clients: reconnect attempts are not backed off", s.Errors, took)
	}
	var bySQLState int64
	for _, n := range s.BySQLState {
		bySQLState += n
	}
	if bySQLState != s.Errors {
		t.Errorf("errors_by_sqlstate sums to %d, errors = %d", bySQLState, s.Errors)
	}
	if len(s.Outages) == 0 {
		t.Fatalf("no outage window reported")
	}
	// A transaction in flight when the server went down may still commit
	// between the first errors and the rest, which by definition closes a
	// window: judge the span from the first outage's start to the last one's end.
	first, last := s.Outages[0], s.Outages[len(s.Outages)-1]
	var outageErrors int64
	for _, o := range s.Outages {
		outageErrors += o.Errors
		if o.EndS < o.StartS {
			t.Errorf("outage %+v ends before it starts", o)
		}
	}
	if outageErrors < 1 || first.StartS < 1 || last.EndS > 7 {
		t.Errorf("outages %+v: want errors and windows inside the run (restart ~3 s in)", s.Outages)
	}
	// took is the whole Restart call (stop, start, and its own polling
	// for readiness), longer than the server's unavailability, the more
	// so on a loaded machine (a make test run: 54 ms of outage for a
	// 238 ms call, failed reconnects included); a window without the
	// failed reconnects is a single instant.
	if last.EndS-first.StartS < took.Seconds()/8 {
		t.Errorf("outages %.3f s .. %.3f s are much shorter than the %v restart: failed reconnects are not part of them", first.StartS, last.EndS, took)
	}
	if !strings.Contains(r.stdout, "outage:") || !strings.Contains(r.stdout, "57P01") {
		t.Errorf("the terminal summary should show the outage and the SQLSTATE:\n%s", r.stdout)
	}

	// The run recovered: transactions committed after the outage.
	run := getRun(t, results, s.RunID)
	var after float64
	for _, p := range run.Series {
		if p.Series == "committed" && p.T > last.EndS+0.5 {
			after += p.V
		}
	}
	if after == 0 {
		t.Errorf("nothing committed after the outage ended at %.1f s: the workers did not reconnect", last.EndS)
	}
	if run.Status != "errors" && run.Status != "ok" {
		t.Errorf("stored status %q", run.Status)
	}
	if s.Check == nil || !s.Check.Passed {
		t.Errorf("check after the restart: %+v", s.Check)
	}
	c := h.run("check", "tpcb", "--server-dir", srv.Dir(), "-d", db)
	if c.code != 0 || !strings.Contains(c.stdout, "PASS history growth") {
		t.Errorf("check tpcb after a restart mid-run:\n%s", c)
	}

	// The same with no error budget: exit 4, still saved.
	jsonPath = tempPath(t, "summary2.json")
	rn = h.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "2", "--threads", "2", "--duration", "4s", "--max-errors-pct", "0", "--json", jsonPath)
	restartAfter(rn, 500*time.Millisecond)
	r = rn.wait(t, 60*time.Second)
	if r.code != 4 {
		t.Errorf("run through a restart with --max-errors-pct 0: want exit 4:\n%s", r)
	}
	if !strings.Contains(r.stderr, "max-errors-pct") {
		t.Errorf("exit 4 should say how to accept the errors (--max-errors-pct):\n%s", r.stderr)
	}
	s2 := readSummary(t, jsonPath)
	if runs := listRuns(t, results); len(runs) != 2 || runs[0].ID != s2.RunID || runs[0].Status != "errors" {
		t.Errorf("second run not saved with status errors: %+v", runs)
	}
	if s2.Check == nil || !s2.Check.Passed {
		t.Errorf("check after the second restart: %+v", s2.Check)
	}
}
