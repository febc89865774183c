package answers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// oracle returns the oracle environment's Python and the answer script
// (testutil.Oracle skips or fails when the environment is missing).
func oracle(t *testing.T) (python, script string) {
	t.Helper()
	dir := testutil.Oracle(t)
	return filepath.Join(dir, "bin", "python"), filepath.Join(testutil.RepoRoot(t), "scripts", "tpch-answers.py")
}

// compute runs scripts/tpch-answers.py at scale sf and parses its output.
func compute(t *testing.T, sf string, timeout time.Duration) []Answer {
	t.Helper()
	python, script := oracle(t)
	out := filepath.Join(t.TempDir(), "sf"+sf+".txt")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, "--sf", sf, "--out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s --sf %s: %v\n%s", script, sf, err, msg)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	answers, err := parse(string(text))
	if err != nil {
		t.Fatalf("answers computed at SF %s: %v", sf, err)
	}
	return answers
}

// TestOracleMatchesEmbedded recomputes the SF 0.01 answers (tpchgen-cli and
// DuckDB, a few seconds) and requires the embedded ones to be the same text.
func TestOracleMatchesEmbedded(t *testing.T) {
	fresh := compute(t, "0.01", 2*time.Minute)
	for q := 1; q <= Queries; q++ {
		stored, _ := Reference(0.01, q)
		now := fresh[q-1]
		if !slices.Equal(stored.Columns, now.Columns) {
			t.Errorf("Q%d columns: embedded %v, recomputed %v", q, stored.Columns, now.Columns)
			continue
		}
		if len(stored.Rows) != len(now.Rows) {
			t.Errorf("Q%d: embedded %d rows, recomputed %d", q, len(stored.Rows), len(now.Rows))
			continue
		}
		for i := range stored.Rows {
			if !slices.Equal(stored.Rows[i], now.Rows[i]) {
				t.Errorf("Q%d row %d: embedded %v, recomputed %v", q, i+1, stored.Rows[i], now.Rows[i])
				break
			}
		}
	}
}

// TestOracleMatchesOfficialSF1 is the proof that the pipeline computing
// the SF 0.01 and 0.1 answers is right: at SF 1 its answers must pass
// Compare against the TPC's. It takes about half a minute and 1 GB in the
// temporary directory, so it runs only with TUNEBENCH_ORACLE_SF1=1.
func TestOracleMatchesOfficialSF1(t *testing.T) {
	if os.Getenv("TUNEBENCH_ORACLE_SF1") != "1" {
		t.Skip("set TUNEBENCH_ORACLE_SF1=1 to compute the SF 1 answers and compare them with the TPC's")
	}
	fresh := compute(t, "1", 10*time.Minute)
	for q := 1; q <= Queries; q++ {
		official, _ := Reference(1, q)
		if err := Compare(q, official, fresh[q-1].Rows); err != nil {
			t.Errorf("against the TPC's answer: %v", err)
			continue
		}
		differ := 0
		for i := range official.Rows {
			for k := range official.Rows[i] {
				if official.Rows[i][k] != fresh[q-1].Rows[i][k] {
					differ++
					t.Logf("Q%d row %d column %s: TPC %s, computed %s (within tolerance)",
						q, i+1, official.Columns[k], official.Rows[i][k], fresh[q-1].Rows[i][k])
				}
			}
		}
		if differ == 0 {
			t.Logf("Q%d: %d rows, identical", q, len(official.Rows))
		}
	}
}
