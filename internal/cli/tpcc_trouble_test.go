package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// tpccTroubleJSON is what these tests read of a tpcc summary; pointers are
// figures that may be unknown (null).
type tpccTroubleJSON struct {
	Status        string `json:"status"`
	StatusReasons []struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"status_reasons"`
	NOPM            float64           `json:"nopm"`
	NOPMDatabase    *float64          `json:"nopm_database"`
	TPM             *float64          `json:"tpm"`
	Unknown         map[string]string `json:"unknown"`
	Retries         int64             `json:"retries"`
	AttemptFailures map[string]int64  `json:"attempt_failures"`
	Outcomes        map[string]int64  `json:"outcomes"`
	NOPMCheck       struct {
		Passed bool   `json:"passed"`
		NotRun bool   `json:"not_run"`
		Detail string `json:"detail"`
	} `json:"nopm_check"`
	Check *struct {
		Passed bool `json:"passed"`
	} `json:"check"`
	Raw map[string]json.RawMessage `json:"-"`
}

func readTroubleSummary(t *testing.T, path string) tpccTroubleJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--json file: %v", err)
	}
	var s tpccTroubleJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, &s.Raw); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s tpccTroubleJSON) codes() string {
	var c []string
	for _, r := range s.StatusReasons {
		c = append(c, r.Code)
	}
	return strings.Join(c, ",")
}

// TestTPCCServerTrouble runs the TPC-C-like workload on a server of its
// own (one warehouse, loaded once) through three kinds of trouble:
//
//   - retries: serializable isolation with 4 virtual users on one
//     warehouse makes serialization failures; the retried attempts are
//     counted (retries, attempt_failures by SQLSTATE) and printed;
//   - restart: the server restarts mid-window; the window's end counters
//     are read on a new connection, so HammerDB's NOPM is measured, and
//     TPM, whose pg_stat_database counts a restart may lose, is stored as
//     null and printed as unknown, never 0;
//   - outage: the server stops (-m immediate) mid-run and stays down; the
//     outage covers most of the window, the NOPM cross-check and the
//     consistency checks cannot run: status errors, exit 4, and the
//     message names the outage and the checks.
func TestTPCCServerTrouble(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t) // its own: it is restarted and stopped
	h := newHarness(t)
	db := testutil.CreateDB(t, srv)
	conn := []string{"--server-dir", srv.Dir(), "-d", db}
	h.must(0, append([]string{"load", "tpcc", "--warehouses", "1", "--load-workers", "2"}, conn...)...)
	run := func(js string, args ...string) []string {
		return append(append([]string{"run", "tpcc", "--results", tempPath(t, "results.db"), "--json", js}, conn...), args...)
	}

	t.Run("retries", func(t *testing.T) {
		js := tempPath(t, "retries.json")
		r := h.run(run(js, "--vusers", "4", "--isolation", "serializable", "--duration", "2s", "--max-errors-pct", "100")...)
		if r.code != 0 {
			t.Fatalf("serializable run: want exit 0:\n%s", r)
		}
		s := readTroubleSummary(t, js)
		var sum int64
		for _, n := range s.AttemptFailures {
			sum += n
		}
		if s.Retries == 0 || s.AttemptFailures["40001"] == 0 || sum != s.Retries {
			t.Errorf("retries %d, attempt_failures %v (outcomes %v): want the retried serialization failures counted", s.Retries, s.AttemptFailures, s.Outcomes)
		}
		if s.Outcomes["retried_ok"] == 0 || s.Retries < s.Outcomes["retried_ok"] {
			t.Errorf("retries %d below retried_ok %d", s.Retries, s.Outcomes["retried_ok"])
		}
		if !strings.Contains(r.stdout, "retries: ") || !strings.Contains(r.stdout, "40001 ") {
			t.Errorf("the output should show the retried attempts by SQLSTATE:\n%s", r.stdout)
		}
	})

	t.Run("restart", func(t *testing.T) {
		js := tempPath(t, "restart.json")
		rn := h.start(nil, run(js, "--vusers", "2", "--duration", "6s", "--max-errors-pct", "100", "--max-outage-pct", "100")...)
		rn.waitStderr(t, "progress:", 30*time.Second)
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := srv.Restart(ctx, "fast")
		cancel()
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		r := rn.wait(t, 2*time.Minute)
		t.Logf("%s", r)
		if r.code != 0 {
			t.Fatalf("run through a restart with --max-errors-pct 100 --max-outage-pct 100: want exit 0:\n%s", r)
		}
		s := readTroubleSummary(t, js)
		if raw, ok := s.Raw["tpm"]; !ok || string(raw) != "null" || !strings.Contains(s.Unknown["tpm"], "restarted") {
			t.Errorf("tpm %s (unknown: %v): want null, and why", raw, s.Unknown)
		}
		if s.NOPMDatabase == nil || *s.NOPMDatabase <= 0 || !near(*s.NOPMDatabase, s.NOPM, 0.25) {
			t.Errorf("nopm_database %v, driver NOPM %v: want a figure read on a new connection", s.NOPMDatabase, s.NOPM)
		}
		if !strings.Contains(r.stdout, "TPM unknown") || !strings.Contains(r.stdout, "tpm unknown: the server restarted") {
			t.Errorf("the output should say TPM is unknown, and why:\n%s", r.stdout)
		}
		if !s.NOPMCheck.Passed || s.Check == nil || !s.Check.Passed {
			t.Errorf("after a restart the cross-check and the checks run and pass: %+v, check %+v", s.NOPMCheck, s.Check)
		}
	})

	// A backend killed -9: the postmaster ends every session and resets the
	// statistics without restarting itself (its start time stays), so only
	// the lost counters' session shows TPM cannot be measured.
	t.Run("backend crash", func(t *testing.T) {
		js := tempPath(t, "crash.json")
		rn := h.start(nil, run(js, "--vusers", "2", "--duration", "6s", "--max-errors-pct", "100", "--max-outage-pct", "100")...)
		rn.waitStderr(t, "progress:", 30*time.Second)
		time.Sleep(time.Second)
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := srv.ConnectDB(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			// Any session of the run will do (idle between transactions too):
			// the crash of one ends them all.
			var pid int
			for try := 0; ; try++ {
				err := c.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
					AND pid <> pg_backend_pid() AND backend_type = 'client backend' LIMIT 1`).Scan(&pid)
				if err == nil {
					break
				}
				if try == 50 {
					t.Fatalf("finding a session of the run: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}()
		r := rn.wait(t, 2*time.Minute)
		// The test server runs with synchronous_commit=off: the crash may
		// lose the last acknowledged New-Orders. Then the cross-check does
		// not apply (exit 4, said), never a "driver bug" failure (exit 5).
		lost := strings.Contains(r.stderr, "the NOPM cross-check does not apply: the server crashed during the run with synchronous_commit=off")
		if r.code != 0 && !(r.code == 4 && lost) {
			t.Fatalf("run through a backend crash with --max-errors-pct 100 --max-outage-pct 100: want exit 0, or 4 for lost commits:\n%s", r)
		}
		s := readTroubleSummary(t, js)
		if raw, ok := s.Raw["tpm"]; !ok || string(raw) != "null" || !strings.Contains(s.Unknown["tpm"], "session was lost") {
			t.Errorf("tpm %s (unknown: %v): want null after a backend crash, and why", raw, s.Unknown)
		}
	})

	t.Run("outage", func(t *testing.T) {
		js := tempPath(t, "outage.json")
		rn := h.start(nil, run(js, "--vusers", "2", "--duration", "4s")...)
		rn.waitStderr(t, "progress:", 30*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := srv.Stop(ctx, "immediate")
		cancel()
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
		r := rn.wait(t, 2*time.Minute)
		t.Logf("%s", r)
		if r.code != 4 {
			t.Fatalf("a run whose server went down and stayed down: want exit 4:\n%s", r)
		}
		for _, want := range []string{"status errors", "server was unreachable for", "--max-outage-pct", "NOPM cross-check could not run", "consistency conditions could not be checked"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the exit message lacks %q:\n%s", want, r.stderr)
			}
		}
		s := readTroubleSummary(t, js)
		if s.Status != "errors" || !strings.Contains(s.codes(), "outage") || !strings.Contains(s.codes(), "not_checked") {
			t.Errorf("status %s, reasons %+v: want errors for the outage and the checks", s.Status, s.StatusReasons)
		}
		if !s.NOPMCheck.NotRun || s.NOPMCheck.Passed || !strings.Contains(s.NOPMCheck.Detail, "NOT RUN") {
			t.Errorf("nopm_check %+v: want not_run", s.NOPMCheck)
		}
		if s.TPM != nil || s.NOPMDatabase != nil || s.Unknown["tpm"] == "" {
			t.Errorf("tpm %v, nopm_database %v, unknown %v: want null figures, and why", s.TPM, s.NOPMDatabase, s.Unknown)
		}
		if !strings.Contains(r.stdout, "status errors: the server was unreachable") || !strings.Contains(r.stdout, "TPM unknown") {
			t.Errorf("the result should say why its status is errors, and TPM unknown:\n%s", r.stdout)
		}
	})
}
