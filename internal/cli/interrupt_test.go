package cli_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

func showSetting(t *testing.T, srv *server.Server, db, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := srv.ConnectDB(ctx, db) // a new session sees reloaded settings
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInterrupt sends SIGINT (os.Interrupt on the State's Signals) 2 s into a
// 60 s run with --set work_mem=77MB: Main must return 130 within 10 s, the
// partial run must be stored with status interrupted (and --json written),
// and work_mem must be back to its earlier value. Then a second interrupt
// must exit at once (State.Exit(130)).
func TestInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "summary.json")
	before := showSetting(t, srv, db, "work_mem")
	if before == "77MB" {
		t.Fatalf("work_mem is already 77MB")
	}

	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "2", "--duration", "60s", "--set", "work_mem=77MB", "--json", jsonPath)
	rn.waitStderr(t, "progress:", 30*time.Second) // measuring for 1 s
	if got := showSetting(t, srv, db, "work_mem"); got != "77MB" {
		t.Errorf("during the run work_mem = %s, want 77MB (--set)", got)
	}
	time.Sleep(time.Second)
	sig <- os.Interrupt
	t0 := time.Now()
	r := rn.wait(t, 20*time.Second)
	took := time.Since(t0)
	if took > 10*time.Second {
		t.Errorf("Main returned %v after the interrupt, want within 10 s", took)
	}
	if r.code != 130 {
		t.Fatalf("want exit 130 after an interrupt:\n%s", r)
	}
	if !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", r.stderr)
	}
	runs := listRuns(t, results)
	if len(runs) != 1 || runs[0].Status != "interrupted" {
		t.Fatalf("store after an interrupt: %+v, want one run with status interrupted", runs)
	}
	s := readSummary(t, jsonPath)
	if s.RunID != runs[0].ID || !s.Interrupted || s.Status != "interrupted" {
		t.Errorf("--json after an interrupt: run_id %d (store %d) interrupted %v status %q", s.RunID, runs[0].ID, s.Interrupted, s.Status)
	}
	if s.DurationS < 1 || s.DurationS > 10 || s.Transactions == 0 {
		t.Errorf("interrupted summary: duration_s %v transactions %d, want the ~2 s measured", s.DurationS, s.Transactions)
	}
	if s.Check != nil {
		t.Errorf("no check after an interrupt (the database is mid-run), got %+v", s.Check)
	}
	if s.Settings["work_mem"] != "77MB" {
		t.Errorf("summary settings_applied %v, want work_mem=77MB", s.Settings)
	}
	if got := showSetting(t, srv, db, "work_mem"); got != before {
		t.Errorf("after the interrupted run work_mem = %s, want it restored to %s", got, before)
	}
	if !strings.Contains(r.stderr, "settings restored") {
		t.Errorf("stderr does not say the settings were restored:\n%s", r.stderr)
	}
	// The partial run still left the database consistent.
	if c := h.run("check", "tpcb", "--server-dir", srv.Dir(), "-d", db); c.code != 0 {
		t.Errorf("check after an interrupted run:\n%s", c)
	}

	// A second interrupt exits at once.
	sig2 := make(chan os.Signal, 2)
	rn = h.start(sig2, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "2", "--duration", "60s")
	rn.waitStderr(t, "progress:", 30*time.Second)
	sig2 <- os.Interrupt
	sig2 <- os.Interrupt
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		exits := append([]int(nil), h.exits...)
		h.mu.Unlock()
		if len(exits) > 0 {
			if len(exits) != 1 || exits[0] != 130 {
				t.Errorf("State.Exit called with %v, want [130]", exits)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second interrupt did not call State.Exit:\n%s", rn.errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	rn.wait(t, 20*time.Second) // in the test Exit returns; let the run end
}

// TestInterruptLoad interrupts `load tpcb` while it copies rows: exit 130,
// a message that names the fix (--drop), and a database that run refuses
// until it is loaded again with --drop.
func TestInterruptLoad(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "load", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--scale", "20", "--load-workers", "1")
	// Interrupt while rows are being copied: once the server shows the
	// COPY in progress (a fixed sleep after the start could fall before
	// the tables exist on a busy machine, and nothing would be half-loaded).
	rn.waitStderr(t, "loading tpcb", 30*time.Second)
	admin := testutil.Connect(t, srv)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var copying bool
		if err := admin.QueryRow(context.Background(), "select exists (select 1 from pg_stat_progress_copy where datname = $1)", db).Scan(&copying); err != nil {
			t.Fatal(err)
		}
		if copying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no COPY into the database within 30 s")
		}
	}
	sig <- os.Interrupt
	r := rn.wait(t, 20*time.Second)
	if r.code != 130 || !strings.Contains(r.stderr, "--drop") {
		t.Fatalf("interrupted load: want exit 130 and the fix (--drop):\n%s", r)
	}
	results := tempPath(t, "results.db")
	if r := h.run("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results, "--duration", "1s"); r.code != 2 || !strings.Contains(r.stderr, "--drop") {
		t.Errorf("run on a half-loaded database: want exit 2 naming --drop:\n%s", r)
	}
	if n := len(listRuns(t, results)); n != 0 {
		t.Errorf("%d runs stored for a refused run", n)
	}
	h.must(2, "load", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--scale", "1")
	h.must(0, "load", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--scale", "1", "--drop")
	h.must(0, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results, "--transactions", "10")
}
