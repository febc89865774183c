package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

type tpccSummaryJSON struct {
	Status         string  `json:"status"`
	Workload       string  `json:"workload"`
	Mode           string  `json:"mode"`
	VUsers         int     `json:"vusers"`
	Warehouses     int     `json:"warehouses"`
	NOPM           float64 `json:"nopm"`
	NOPMDatabase   float64 `json:"nopm_database"`
	TPM            float64 `json:"tpm"`
	DurationS      float64 `json:"duration_s"`
	PerTransaction []struct {
		Op    string  `json:"op"`
		Count int64   `json:"count"`
		P50Ms float64 `json:"p50_ms"`
		P90Ms float64 `json:"p90_ms"`
		P95Ms float64 `json:"p95_ms"`
		P99Ms float64 `json:"p99_ms"`
		MaxMs float64 `json:"max_ms"`
	} `json:"per_transaction"`
	NOPMCheck struct {
		DriverCommitted int64 `json:"driver_committed"`
		DatabaseGrowth  int64 `json:"database_growth"`
		Ambiguous       int64 `json:"ambiguous"`
		Passed          bool  `json:"passed"`
	} `json:"nopm_check"`
	Check struct {
		Passed     bool `json:"passed"`
		Conditions []struct {
			Number int  `json:"number"`
			Passed bool `json:"passed"`
		} `json:"conditions"`
	} `json:"check"`
	Audits []struct {
		Name string `json:"name"`
	} `json:"audits"`
}

// TestRunTPCCModes runs each mode on a loaded database through the CLI and
// checks the NOPM cross-check, the consistency conditions 1-10 and 12, the
// per-transaction table and the JSON summary.
func TestRunTPCCModes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	conn := []string{"--server-dir", srv.Dir(), "-d", db}
	target := append(conn[:3:3], db, "--results", tempPath(t, "results.db"))
	h.must(0, append([]string{"load", "tpcc", "--warehouses", "2"}, conn...)...)
	dur := "3s"
	for _, mode := range []string{"procs", "sql"} {
		js := tempPath(t, mode+".json")
		r := h.must(0, append([]string{"run", "tpcc", "--mode", mode, "--vusers", "3", "--rampup", "1s", "--duration", dur,
			"--expensive-checks", "--json", js}, target...)...)
		for _, want := range []string{"NOPM", "TPM", "new_order", "stock_level", "p99 ms", "NOPM cross-check", "audits", "all passed", "stored as run"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: output lacks %q:\n%s", mode, want, r)
			}
		}
		if !strings.Contains(r.stderr, "progress:") || !strings.Contains(r.stderr, "NOPM") {
			t.Errorf("%s: no progress lines:\n%s", mode, r.stderr)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var s tpccSummaryJSON
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if s.Workload != "tpcc" || s.Mode != mode || s.VUsers != 3 || s.Warehouses != 2 || s.Status != "ok" {
			t.Errorf("%s: summary header %+v", mode, s)
		}
		if s.NOPM <= 0 || s.TPM <= s.NOPM || s.NOPMDatabase <= 0 {
			t.Errorf("%s: nopm %v tpm %v nopm_database %v", mode, s.NOPM, s.TPM, s.NOPMDatabase)
		}
		// HammerDB's NOPM (district growth over the window) and ours
		// (committed New-Orders in the window) measure the same thing.
		if !near(s.NOPM, s.NOPMDatabase, 0.15) {
			t.Errorf("%s: driver NOPM %v vs database NOPM %v", mode, s.NOPM, s.NOPMDatabase)
		}
		xc := s.NOPMCheck
		if !xc.Passed || xc.DriverCommitted == 0 || xc.DatabaseGrowth != xc.DriverCommitted || xc.Ambiguous != 0 {
			t.Errorf("%s: NOPM cross-check %+v", mode, xc)
		}
		if len(s.PerTransaction) != 5 {
			t.Fatalf("%s: per_transaction %+v", mode, s.PerTransaction)
		}
		for _, p := range s.PerTransaction {
			if p.Count == 0 || !(p.P50Ms <= p.P90Ms && p.P90Ms <= p.P95Ms && p.P95Ms <= p.P99Ms && p.P99Ms <= p.MaxMs) {
				t.Errorf("%s: %s stats %+v", mode, p.Op, p)
			}
		}
		got := map[int]bool{}
		for _, c := range s.Check.Conditions {
			got[c.Number] = c.Passed
		}
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12} {
			if !got[n] {
				t.Errorf("%s: condition %d missing or failed: %+v", mode, n, s.Check)
			}
		}
		if len(s.Audits) < 5 {
			t.Errorf("%s: audits %+v", mode, s.Audits)
		}
	}
	// Bad input is refused before anything runs.
	r := h.must(2, append([]string{"run", "tpcc", "--mode", "magic", "--duration", "1s"}, target...)...)
	if !strings.Contains(r.stderr, "--mode procs") {
		t.Errorf("bad mode:\n%s", r)
	}
	h.must(2, append([]string{"run", "tpcc", "--vusers", "0", "--duration", "1s"}, target...)...)
	h.must(2, append([]string{"run", "tpcc", "--isolation", "snapshot", "--duration", "1s"}, target...)...)
	// An empty database says how to load it.
	empty := testutil.CreateDB(t, srv)
	r = h.must(2, "run", "tpcc", "--server-dir", srv.Dir(), "-d", empty, "--duration", "1s", "--results", tempPath(t, "r2.db"))
	if !strings.Contains(r.stderr, "load tpcc") {
		t.Errorf("unloaded database:\n%s", r)
	}
}
