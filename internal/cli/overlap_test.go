package cli_test

import (
	"strings"
	"testing"
	"time"
)

// overlappingRuns runs two writing tpcb runs on one database at once (conn
// names it): neither fails its history growth, each says another run
// wrote during it, and a later check finds no run recorded.
func overlappingRuns(t *testing.T, h *harness, conn ...string) {
	t.Helper()
	long := h.start(nil, append([]string{"run", "tpcb", "-c", "2", "-T", "5s", "-P", "1s", "--results", tempPath(t, "a.db")}, conn...)...)
	long.waitStderr(t, "progress:", 90*time.Second)
	short := h.run(append([]string{"run", "tpcb", "-c", "2", "-T", "1s", "--results", tempPath(t, "b.db")}, conn...)...)
	first := long.wait(t, 2*time.Minute)
	for name, r := range map[string]result{"the run that started first": first, "the run that started second": short} {
		if r.code != 0 || !strings.Contains(r.stdout, "PASS balances") || !strings.Contains(r.stdout, "history growth") ||
			!strings.Contains(r.stdout, "changed outside this run") {
			t.Errorf("%s (exit %d):\n%s", name, r.code, r)
		}
	}
	if !strings.Contains(first.stdout, "1 other run(s) started on it while this one ran") ||
		!strings.Contains(short.stdout, "1 other tunebench run(s) were writing to this database when this one started") {
		t.Errorf("the runs do not say how they overlapped:\n%s\n%s", first, short)
	}
	r := h.must(0, append([]string{"check", "tpcb"}, conn...)...)
	if !strings.Contains(r.stdout, "no tunebench run recorded") {
		t.Errorf("check after two overlapping runs:\n%s", r)
	}
	// Alone again: the history growth is checked.
	r = h.must(0, append([]string{"run", "tpcb", "-c", "2", "-T", "1s", "--results", tempPath(t, "c.db")}, conn...)...)
	if !strings.Contains(r.stdout, "PASS history growth") {
		t.Errorf("a run alone after them:\n%s", r)
	}
}

// TestOverlappingRuns: two tpcb runs at once on one PostgreSQL database
// (issue 42 item 4).
func TestOverlappingRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	overlappingRuns(t, h, "--server-dir", srv.Dir(), "-d", db)

	// A run without its check says so on its own.
	conn := []string{"--server-dir", srv.Dir(), "-d", db}
	long := h.start(nil, append([]string{"run", "tpcb", "-c", "1", "-T", "3s", "-P", "1s", "--results", tempPath(t, "d.db")}, conn...)...)
	long.waitStderr(t, "progress:", 90*time.Second)
	r := h.must(0, append([]string{"run", "tpcb", "-c", "1", "-T", "1s", "--no-check", "--results", tempPath(t, "e.db")}, conn...)...)
	long.wait(t, time.Minute)
	if !strings.Contains(r.stderr, "another tunebench run wrote to this database during this one (1 other tunebench run(s) were writing") {
		t.Errorf("an overlapped run without its check:\n%s", r)
	}
}

// TestResultsListSeconds: `results list` shows the measured window, with
// the warm-up apart, not the whole run's wall time (issue 41 item 5).
func TestResultsListSeconds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	results := tempPath(t, "results.db")
	h.must(0, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "2", "-T", "1s", "--warmup", "1s", "-P", "0", "--results", results)
	r := h.must(0, "results", "list", "--results", results)
	if !strings.Contains(r.stdout, " 1.0 (+1.0 warm-up) ") {
		t.Errorf("results list:\n%s", r)
	}
}
