package cli_test

import (
	"strings"
	"testing"
)

func TestCompareCommandRepetitions(t *testing.T) {
	h := newHarness(t)
	db := reportStore(t)
	// Run 1: work_mem=4MB at 1 client; run 5: work_mem=64MB at 1 client.
	r := h.must(0, "compare", "1", "5", "--results", db)
	for _, want := range []string{
		"A: run 1 (work_mem=4MB, clients 1, repetition 1)",
		"B: run 5 (work_mem=64MB, clients 1, repetition 1)",
		"B/A", "tps", "1.200", "latency p95 ms",
		"latency per transaction type", "tpcb-like",
		"across repetitions (tps",
		`A: "work_mem=4MB" at clients 1: 2 runs (1, 2)`,
		"median ratio B/A 1.200, 95% CI [",
		": higher",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestCompareCommandSingleRuns(t *testing.T) {
	h := newHarness(t)
	db := reportStore(t)
	r := h.must(0, "compare", "9", "10", "--results", db)
	if !strings.Contains(r.stdout, "1.100") || !strings.Contains(r.stdout, "single runs: no repetitions") {
		t.Errorf("compare of single runs:\n%s", r.stdout)
	}
	h.must(2, "compare", "9", "--results", db)
	h.must(2, "compare", "9", "x", "--results", db)
	h.must(2, "compare", "9", "99", "--results", db)
}
