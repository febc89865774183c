package cli_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/metrics"
)

// TestRunScripts loads tpcb scale 1 (accounts hash-partitioned, and a plain
// database for simple-update) through the CLI and runs every script in
// a closed loop, and tpcb-like once pipelined, each for 2 s with 2 clients;
// then a --transactions run. After each run: exit 0, the store holds the run
// (status ok, series, histograms that agree with the summary), the --json
// summary has the documented fields and matches the store, and `check tpcb`
// passes (its history growth condition included).
func TestRunScripts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	// Accounts in 3 partitions: runs must work on partitioned tables too.
	db := loadedDB(h, srv, "--partitions", "3", "--partition-method", "hash")
	results := tempPath(t, "results.db")
	conn := connectDB(t, srv, db)

	// simple-update gets a database of its own: it leaves tellers and
	// branches alone, so what it does to the balances must not hide or cause
	// a problem in the other runs' checks.
	db2 := loadedDB(h, srv)
	type runCase struct {
		script   string
		pipeline bool
		db       string
		threads  int  // --threads; 0: the default, one per core up to one per client
		follow   bool // two clients per core, --follow-server on
	}
	for i, rc := range []runCase{
		{"tpcb-like", false, db, 0, false}, {"select-only", false, db, 1, false}, {"tpcb-like", true, db, 1, false},
		{"simple-update", false, db2, 2, false}, {"tpcb-like", false, db, 1, false}, {"select-only", false, db, 0, true},
	} {
		conn := connectDB(t, srv, rc.db)
		name := rc.script
		if rc.pipeline {
			name += "+pipeline"
		}
		clients := 2
		wantThreads := min(runtime.NumCPU(), 2)
		if rc.follow {
			clients, wantThreads = 2*runtime.NumCPU(), runtime.NumCPU()
			name += "/follow-server"
		}
		if rc.threads > 0 {
			name += fmt.Sprintf("/threads=%d", rc.threads)
			wantThreads = rc.threads
		}
		t.Run(name, func(t *testing.T) {
			var histBefore int64
			if err := conn.QueryRow(context.Background(), "select count(*) from pgbench_history").Scan(&histBefore); err != nil {
				t.Fatal(err)
			}
			jsonPath := tempPath(t, "summary.json")
			args := []string{"run", "tpcb", "--server-dir", srv.Dir(), "-d", rc.db, "--results", results,
				"--script", rc.script, "--clients", fmt.Sprint(clients), "--duration", "2s", "--seed", fmt.Sprint(100 + i), "--json", jsonPath}
			if rc.pipeline {
				args = append(args, "--pipeline")
			}
			if rc.threads > 0 {
				args = append(args, "--threads", fmt.Sprint(rc.threads))
			}
			if rc.follow {
				args = append(args, "--follow-server", "on")
			}
			r := h.run(args...)
			if r.code != 0 {
				t.Errorf("want exit 0:\n%s", r)
			}
			s := readSummary(t, jsonPath)
			checkSummaryShape(t, s)
			if s.Status != "ok" || s.Script != rc.script || s.Clients != clients || s.Scale != 1 || s.Workload != "tpcb" {
				t.Errorf("summary: status %q script %q clients %d scale %d workload %q", s.Status, s.Script, s.Clients, s.Scale, s.Workload)
			}
			wantProto := "prepared"
			if rc.pipeline {
				wantProto = "prepared+pipeline"
			}
			if s.Threads != wantThreads {
				t.Errorf("threads %d, want %d", s.Threads, wantThreads)
			}
			// Following needs a thread per CPU and 2 or more of them.
			if wantFollow := rc.follow && runtime.NumCPU() >= 2; s.FollowServer != wantFollow {
				t.Errorf("follow_server %v, want %v", s.FollowServer, wantFollow)
			}
			if s.Protocol != wantProto {
				t.Errorf("protocol %q, want %q", s.Protocol, wantProto)
			}
			if s.DurationS != 2 {
				t.Errorf("duration_s %v, want 2", s.DurationS)
			}
			if s.Transactions < 20 || s.Errors != 0 || s.Unfinished != 0 {
				t.Errorf("transactions %d errors %d unfinished %d", s.Transactions, s.Errors, s.Unfinished)
			}
			if s.Check == nil || !s.Check.Passed {
				t.Errorf("summary check: %+v", s.Check)
			}
			if !strings.Contains(r.stdout, fmt.Sprintf("stored as run %d", s.RunID)) {
				t.Errorf("stdout does not name run %d:\n%s", s.RunID, r.stdout)
			}

			// The store: the newest run is this one, with its series and histograms.
			runs := listRuns(t, results)
			if len(runs) != i+1 || runs[0].ID != s.RunID {
				t.Fatalf("store has %d runs (newest %v), want %d with the newest = run_id %d", len(runs), runs[0].ID, i+1, s.RunID)
			}
			run := getRun(t, results, s.RunID)
			if run.Status != "ok" || run.Workload != "tpcb" || run.Variant != rc.script {
				t.Errorf("stored run: status %q workload %q variant %q", run.Status, run.Workload, run.Variant)
			}
			if len(run.Series) == 0 || len(run.Histograms) == 0 {
				t.Fatalf("stored run has %d series points and %d histograms", len(run.Series), len(run.Histograms))
			}
			stored := parseSummary(t, run.Summary)
			if stored.RunID != s.RunID || stored.Transactions != s.Transactions || stored.TPS != s.TPS || stored.LatencyMs != s.LatencyMs {
				t.Errorf("stored summary differs from --json: stored %+v / json %+v", stored, s)
			}
			var committedInSeries float64
			seriesNames := map[string]bool{}
			for _, p := range run.Series {
				seriesNames[p.Series] = true
				if p.Series == "committed" && p.T > 0 && p.T <= s.DurationS+1e-9 {
					committedInSeries += p.V
				}
			}
			for _, n := range []string{"tps", "committed", "latency_p99_ms"} {
				if !seriesNames[n] {
					t.Errorf("no %q series (have %v)", n, seriesNames)
				}
			}
			if committedInSeries < float64(s.Transactions)*0.9 {
				t.Errorf("committed series sums to %v in the window, transactions %d", committedInSeries, s.Transactions)
			}
			var histCount int64
			for _, hg := range run.Histograms {
				if hg.Kind != "latency" || hg.Class != "ok" {
					continue
				}
				if hg.Op != rc.script {
					t.Errorf("histogram op %q, want %q", hg.Op, rc.script)
				}
				hd, err := metrics.Decode(hg.Encoded)
				if err != nil {
					t.Fatalf("stored histogram does not decode: %v", err)
				}
				histCount += hd.Count()
				if p := hd.PercentileMs(99); math.Abs(p-s.LatencyMs.P99) > 0.01*s.LatencyMs.P99+0.01 {
					t.Errorf("stored histogram p99 %v, summary p99 %v", p, s.LatencyMs.P99)
				}
			}
			if histCount != s.Outcomes["ok"] {
				t.Errorf("stored ok-latency histograms count %d, outcomes ok %d", histCount, s.Outcomes["ok"])
			}

			// The database: the history grew by exactly the committed writes.
			var histAfter int64
			if err := conn.QueryRow(context.Background(), "select count(*) from pgbench_history").Scan(&histAfter); err != nil {
				t.Fatal(err)
			}
			grown := histAfter - histBefore
			if rc.script == "select-only" {
				if grown != 0 {
					t.Errorf("select-only added %d history rows", grown)
				}
			} else if grown < s.Transactions {
				t.Errorf("history grew by %d, fewer than the %d committed transactions", grown, s.Transactions)
			}

			c := h.run("check", "tpcb", "--server-dir", srv.Dir(), "-d", rc.db)
			if c.code != 0 || !strings.Contains(c.stdout, "PASS") || strings.Contains(c.stdout, "FAIL") {
				t.Errorf("check after the run:\n%s", c)
			}
			if rc.script != "select-only" && !strings.Contains(c.stdout, "PASS history growth") {
				t.Errorf("history growth should be checked (not skipped) after a writing run:\n%s", c.stdout)
			}
		})
	}

	t.Run("transactions", func(t *testing.T) {
		jsonPath := tempPath(t, "summary.json")
		var histBefore int64
		if err := conn.QueryRow(context.Background(), "select count(*) from pgbench_history").Scan(&histBefore); err != nil {
			t.Fatal(err)
		}
		// Through --dsn this time (a password-free conninfo with a passfile).
		r := h.run("run", "tpcb", "--dsn", srv.DSNFor(db), "--results", results,
			"--transactions", "50", "--clients", "2", "--json", jsonPath)
		if r.code != 0 {
			t.Fatalf("run failed:\n%s", r)
		}
		s := readSummary(t, jsonPath)
		checkSummaryShape(t, s)
		if s.Transactions != 100 || s.Outcomes["ok"] != 100 {
			t.Errorf("--transactions 50 --clients 2: transactions %d, outcomes %v; want exactly 100", s.Transactions, s.Outcomes)
		}
		var histAfter int64
		if err := conn.QueryRow(context.Background(), "select count(*) from pgbench_history").Scan(&histAfter); err != nil {
			t.Fatal(err)
		}
		if histAfter-histBefore != 100 {
			t.Errorf("history grew by %d, want 100", histAfter-histBefore)
		}
		if run := getRun(t, results, s.RunID); run.Status != "ok" {
			t.Errorf("stored status %q", run.Status)
		}
	})

	// Warm-up is run but not counted; the history check still accounts for
	// the transactions it committed.
	t.Run("warmup", func(t *testing.T) {
		jsonPath := tempPath(t, "summary.json")
		r := h.run("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
			"--warmup", "1s", "--duration", "1s", "--clients", "2", "--json", jsonPath)
		if r.code != 0 {
			t.Fatalf("run failed:\n%s", r)
		}
		s := readSummary(t, jsonPath)
		checkSummaryShape(t, s)
		if s.DurationS != 1 {
			t.Errorf("duration_s %v, want 1 (warm-up excluded)", s.DurationS)
		}
		if s.Check == nil || !s.Check.Passed {
			t.Errorf("check after a run with warm-up: %+v", s.Check)
		}
		run := getRun(t, results, s.RunID)
		var warm float64
		for _, p := range run.Series {
			if p.Series == "committed" && p.T <= 0 {
				warm += p.V
			}
		}
		if warm == 0 {
			t.Errorf("no committed transactions in the warm-up part of the series")
		}
	})

	// The check is not vacuous: an account changed behind its back fails it
	// with exit code 5.
	t.Run("check detects corruption", func(t *testing.T) {
		if _, err := conn.Exec(context.Background(), "update pgbench_accounts set abalance = abalance + 1 where aid = 1"); err != nil {
			t.Fatal(err)
		}
		c := h.run("check", "tpcb", "--server-dir", srv.Dir(), "-d", db)
		if c.code != 5 || !strings.Contains(c.stdout, "FAIL balances") {
			t.Errorf("check of a corrupted database: want exit 5 and FAIL balances:\n%s", c)
		}
	})
}

// TestRunPgbenchLoaded runs against a database initialised by pgbench -i
// (simulated: tunebench's meta table dropped). ReadInfo takes the scale from
// pgbench_branches; the run must work and its check must run, without
// warnings about tunebench's own bookkeeping.
func TestRunPgbenchLoaded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	conn := connectDB(t, srv, db)
	if _, err := conn.Exec(context.Background(), "drop table tunebench_tpcb_meta"); err != nil {
		t.Fatal(err)
	}
	jsonPath := tempPath(t, "summary.json")
	r := h.run("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", tempPath(t, "results.db"),
		"--transactions", "20", "--clients", "2", "--json", jsonPath)
	if r.code != 0 {
		t.Fatalf("run on a pgbench-loaded database:\n%s", r)
	}
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("warnings on a pgbench-loaded database:\n%s", r.stderr)
	}
	s := readSummary(t, jsonPath)
	if s.Transactions != 40 || s.Scale != 1 {
		t.Errorf("transactions %d scale %d", s.Transactions, s.Scale)
	}
	if s.Check == nil || !s.Check.Passed {
		t.Errorf("the balance check did not run or failed on a pgbench-loaded database: %+v", s.Check)
	}
	if c := h.run("check", "tpcb", "--server-dir", srv.Dir(), "-d", db); c.code != 0 {
		t.Errorf("check tpcb:\n%s", c)
	}
}
