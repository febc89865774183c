package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
)

// TestTPCCLoadCheck drives `load tpcc` and `check tpcc` through the CLI:
// load, all twelve conditions pass, a second load is refused, a violation
// exits 5 and names the condition, an unfinished load is refused by check.
func TestTPCCLoadCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	conn := connectDB(t, srv, db)
	target := []string{"--server-dir", srv.Dir(), "-d", db}
	args := func(a ...string) []string { return append(a, target...) }

	r := h.must(0, args("load", "tpcc", "--warehouses", "1", "--load-workers", "2", "--seed", "11")...)
	for _, want := range []string{"done in", "data", "keys", "analyze", "rows/s", "tunebench CPU", "order_line"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("load output lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "loading tpcc 1 warehouse") || !strings.Contains(r.stderr, "100.0%") {
		t.Errorf("load progress:\n%s", r.stderr)
	}

	r = h.must(0, args("check", "tpcc", "--all")...)
	if n := strings.Count(r.stdout, "PASS"); n != 12 || !strings.Contains(r.stdout, "all passed") {
		t.Errorf("check --all: %d PASS lines:\n%s", n, r)
	}
	r = h.must(0, args("check", "tpcc")...)
	if n := strings.Count(r.stdout, "PASS"); n != 8 {
		t.Errorf("default check: %d PASS lines, want 8:\n%s", n, r)
	}
	r = h.must(0, args("check", "tpcc", "--expensive")...)
	if n := strings.Count(r.stdout, "PASS"); n != 11 {
		t.Errorf("check --expensive: %d PASS lines, want 11:\n%s", n, r)
	}
	h.must(2, args("check", "tpcc", "--conditions", "13")...)

	r = h.must(2, args("load", "tpcc", "--warehouses", "1")...)
	if !strings.Contains(r.stderr, "--drop") {
		t.Errorf("second load without --drop:\n%s", r)
	}
	r = h.must(0, args("load", "tpcc", "--resume")...)
	if !strings.Contains(r.stdout, "already complete") {
		t.Errorf("resume of a complete load:\n%s", r)
	}

	ctx := context.Background()
	if _, err := conn.Exec(ctx, "update district set d_ytd = d_ytd + 0.01 where d_w_id = 1 and d_id = 4"); err != nil {
		t.Fatal(err)
	}
	r = h.must(5, args("check", "tpcc")...)
	for _, want := range []string{"FAIL  1", "FAIL  9", "w=1 d=4", "condition 1, 9"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("failed check output lacks %q:\n%s", want, r)
		}
	}

	if _, err := conn.Exec(ctx, "update "+tpcc.MetaTable+" set status = 'loading'"); err != nil {
		t.Fatal(err)
	}
	r = h.must(2, args("check", "tpcc")...)
	if !strings.Contains(r.stderr, "did not finish") || !strings.Contains(r.stderr, "--resume") {
		t.Errorf("check of an unfinished load:\n%s", r)
	}
	h.must(2, args("load", "tpcc", "--warehouses", "0")...)
}
