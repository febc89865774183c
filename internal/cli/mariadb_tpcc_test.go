package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target/mariadb"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
)

// TestMariaDBTPCC: tpcc on a managed MariaDB through the commands a user
// types. A load that does not fit in the data directory's filesystem is
// refused before it writes; a load interrupted while its rows go in is
// refused by a run and finished by --resume, and then passes all twelve
// consistency conditions; a run in each
// mode at each isolation level is ok with its NOPM cross-check exact, and
// the conditions pass after them; a run through a SIGKILL of mariadbd and a
// restart survives, with TPM unknown and why, and the database still
// passes the conditions, which do catch a changed D_YTD.
func TestMariaDBTPCC(t *testing.T) {
	t.Parallel()
	_, srv := mariadbtest.StartMariaDB(t)
	h := newHarness(t)
	dir := srv.Dir()
	conn := []string{"--server-dir", dir}
	results := tempPath(t, "results.db")
	if r := h.must(6, "load", "tpcc", "--server-dir", dir, "--warehouses", "100000"); !strings.Contains(r.stderr, "not enough space for tpcc 100000 warehouses") {
		t.Errorf("a load that does not fit:\n%s", r)
	}
	// The load, interrupted while its rows go in (one job: order_line's
	// chunk first), refused by a run, finished by --resume; then all
	// twelve conditions hold.
	sig := make(chan os.Signal, 1)
	rn := h.start(sig, "load", "tpcc", "--server-dir", dir, "--warehouses", "1", "--jobs", "1")
	rn.waitStderr(t, "(data)", 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	sig <- os.Interrupt
	if r := rn.wait(t, time.Minute); r.code != 130 || !strings.Contains(r.stderr, "--resume") {
		t.Fatalf("interrupted load: want exit 130 and the way on:\n%s", r)
	}
	if r := h.must(2, "run", "tpcc", "--server-dir", dir, "--iterations", "1", "--results", results); !strings.Contains(r.stderr, "did not finish") {
		t.Errorf("a run on an interrupted load:\n%s", r)
	}
	r := h.must(0, "load", "tpcc", "--server-dir", dir, "--resume", "--jobs", "2")
	if !strings.Contains(r.stdout, "resumed:") || !strings.Contains(r.stdout, "rows:") {
		t.Errorf("resumed load:\n%s", r)
	}
	if r := h.must(0, "check", "tpcc", "--server-dir", dir, "--all"); !strings.Contains(r.stdout, "12 conditions") || !strings.Contains(r.stdout, "all passed") {
		t.Errorf("check after the load:\n%s", r)
	}
	h.must(2, "load", "tpcc", "--server-dir", dir, "--warehouses", "1", "--partition", "--drop")

	for _, mode := range []string{"procs", "sql"} {
		for _, iso := range []string{"read-committed", "repeatable-read", "serializable"} {
			js := tempPath(t, mode+iso+".json")
			r := h.run(append([]string{"run", "tpcc", "--mode", mode, "--isolation", iso, "--vusers", "2", "--rampup", "0s", "--iterations", "40",
				"--max-tries", "10", "--no-check", "--results", results, "--json", js}, conn...)...)
			if r.code != 0 {
				t.Errorf("%s %s: exit %d:\n%s", mode, iso, r.code, r)
				continue
			}
			s := readTroubleSummary(t, js)
			if s.Status != "ok" || !s.NOPMCheck.Passed || s.NOPM <= 0 || s.TPM == nil || *s.TPM <= 0 {
				t.Errorf("%s %s: status %s, cross-check %+v, NOPM %v, TPM %v", mode, iso, s.Status, s.NOPMCheck, s.NOPM, s.TPM)
			}
			if !strings.Contains(s.NOPMCheck.Detail, "sum(d_next_o_id) grew by") {
				t.Errorf("%s %s: cross-check detail %q", mode, iso, s.NOPMCheck.Detail)
			}
		}
	}
	// The conditions after the six runs (each run's own check is left out
	// to keep the test short: a run that broke one would leave it broken).
	if r := h.must(0, "check", "tpcc", "--server-dir", dir, "--expensive"); !strings.Contains(r.stdout, "11 conditions") || !strings.Contains(r.stdout, "all passed") {
		t.Errorf("check after the runs in each mode at each isolation level:\n%s", r)
	}

	// SIGKILL of mariadbd mid-run, then a restart of the managed server.
	js := tempPath(t, "crash.json")
	rn = h.start(nil, append([]string{"run", "tpcc", "--vusers", "2", "--rampup", "0s", "--duration", "4s", "--max-errors-pct", "100",
		"--max-outage-pct", "100", "--results", results, "--json", js}, conn...)...)
	rn.waitStderr(t, "progress:", 30*time.Second)
	time.Sleep(time.Second)
	b, err := os.ReadFile(filepath.Join(dir, "run", "mariadbd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	// The server stays down a moment: the reads after the run (and, on a
	// slow machine, at the window's end) find their connections dead and
	// must open new ones once it is back.
	time.Sleep(500 * time.Millisecond)
	h.must(0, "server", "start", "--dir", dir)
	r = rn.wait(t, 2*time.Minute)
	if r.code != 0 {
		t.Fatalf("run through a crash with --max-errors-pct 100 --max-outage-pct 100: want exit 0:\n%s", r)
	}
	s := readTroubleSummary(t, js)
	// TPM is unknown: the server restarted within the window, or (on a
	// slow machine) was still down at its end.
	if raw, ok := s.Raw["tpm"]; !ok || string(raw) != "null" ||
		!strings.Contains(s.Unknown["tpm"], "restarted") && !strings.Contains(s.Unknown["tpm"], "at the measurement window's end") {
		t.Errorf("tpm %s (unknown: %v): want null after a crash, and why", raw, s.Unknown)
	}
	if !s.NOPMCheck.Passed || s.Check == nil || !s.Check.Passed {
		t.Errorf("after the crash the cross-check and the checks run and pass: %+v, check %+v", s.NOPMCheck, s.Check)
	}
	if r := h.must(0, "check", "tpcc", "--server-dir", dir); !strings.Contains(r.stdout, "all passed") {
		t.Errorf("check after the crash:\n%s", r)
	}

	// The conditions catch a broken database: one district's D_YTD off
	// by a cent fails conditions 1 and 9 (exit 5).
	db, err := srv.Open(mariadb.DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE district SET d_ytd = d_ytd + 0.01 WHERE d_w_id = 1 AND d_id = 3"); err != nil {
		t.Fatal(err)
	}
	r = h.must(5, "check", "tpcc", "--server-dir", dir)
	if !strings.Contains(r.stdout, "FAIL  1 ") || !strings.Contains(r.stdout, "FAIL  9 ") || strings.Count(r.stdout, "FAIL ") != 2 {
		t.Errorf("check of a changed D_YTD: want conditions 1 and 9 failed:\n%s", r)
	}
}
