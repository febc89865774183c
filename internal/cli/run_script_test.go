package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// TestRunScriptFiles runs pgbench script files through the CLI: two files
// with weights in a closed loop, then the open loop; the summary has each
// script's and each statement's results, the balances still agree (`check
// tpcb`), the report shows the statements, and a syntax error names the
// file, line and column with exit code 2.
func TestRunScriptFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	results := tempPath(t, "results.db")
	tpcb, err := filepath.Abs("../../examples/scripts/tpcb-like.sql")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.sql")
	if err := os.WriteFile(mine, []byte("\\set aid random(1, :limit)\nSELECT abalance AS bal FROM pgbench_accounts WHERE aid = :aid \\gset\n\\if :bal IS NULL\nSELECT 1/0;\n\\endif\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonPath := tempPath(t, "summary.json")
	first := h.must(0, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", results, "-f", tpcb+"@3", "-f", mine+"@1",
		"-D", "limit=100000", "-c", "2", "-T", "2s", "--seed", "7", "--json", jsonPath)
	for _, want := range []string{"per script:", "statements of tpcb-like.sql", "statements of mine.sql", "scale 1"} {
		if !strings.Contains(first.stdout+first.stderr, want) {
			t.Errorf("output lacks %q:\n%s", want, first)
		}
	}
	var s struct {
		Workload     string `json:"workload"`
		Status       string `json:"status"`
		Script       string `json:"script"`
		Transactions int64  `json:"transactions"`
		Scripts      []struct {
			Name         string `json:"name"`
			Weight       int    `json:"weight"`
			Transactions int64  `json:"transactions"`
			Statements   []struct {
				Line      int    `json:"line"`
				Command   string `json:"command"`
				Count     int64  `json:"count"`
				LatencyMs struct {
					P99 float64 `json:"p99"`
				} `json:"latency_ms"`
			} `json:"statements"`
		} `json:"scripts"`
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Workload != "script" || s.Status != "ok" || s.Script != "tpcb-like.sql@3+mine.sql@1" || len(s.Scripts) != 2 {
		t.Fatalf("summary: %s", b)
	}
	tp, mn := s.Scripts[0], s.Scripts[1]
	if tp.Transactions+mn.Transactions != s.Transactions || tp.Transactions < 2*mn.Transactions || mn.Transactions == 0 {
		t.Errorf("transactions: tpcb-like %d, mine %d, run %d (weights 3:1)", tp.Transactions, mn.Transactions, s.Transactions)
	}
	if len(tp.Statements) != 7 || len(mn.Statements) != 2 || mn.Statements[1].Line != 4 || mn.Statements[1].Count != 0 {
		t.Errorf("statements: %+v / %+v", tp.Statements, mn.Statements)
	}
	// Statements count for the transactions that end while the run
	// measures, as the collector sees the window's edges: within a few
	// transactions of the executor's count.
	for _, st := range tp.Statements {
		if d := st.Count - tp.Transactions; d < -4 || d > 4 || st.LatencyMs.P99 <= 0 {
			t.Errorf("statement line %d: count %d (transactions %d), p99 %v", st.Line, st.Count, tp.Transactions, st.LatencyMs.P99)
		}
	}
	h.must(0, "check", "tpcb", "--server-dir", srv.Dir(), "-d", db)

	// The open loop, with latency from the schedule; -D scale wins over
	// the rows of pgbench_branches, and the summary records its number.
	js2 := tempPath(t, "open.json")
	r := h.must(0, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", results, "-f", tpcb, "-c", "2", "-R", "100", "-T", "1s",
		"-D", "scale=3", "--json", js2)
	if !strings.Contains(r.stdout, "open loop: target 100.0 tps") {
		t.Errorf("open loop:\n%s", r)
	}
	var open struct {
		Scale     int    `json:"scale"`
		ScaleFrom string `json:"scale_from"`
	}
	if b, err := os.ReadFile(js2); err != nil || json.Unmarshal(b, &open) != nil || open.Scale != 3 || open.ScaleFrom != "define" {
		t.Errorf("-D scale=3: the summary has scale %d from %q (%v)", open.Scale, open.ScaleFrom, err)
	}

	// load script runs an init file's statements one by one (VACUUM
	// cannot run in a transaction block) and refuses a meta-command.
	initf := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(initf, []byte("CREATE TABLE kv (k int PRIMARY KEY, v int);\nINSERT INTO kv SELECT g, 0 FROM generate_series(1, 50) g;\nVACUUM ANALYZE kv;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.must(0, "load", "script", "--server-dir", srv.Dir(), "-d", db, "--init-file", initf)
	var kv int
	if err := connectDB(t, srv, db).QueryRow(context.Background(), "SELECT count(*) FROM kv").Scan(&kv); err != nil || kv != 50 {
		t.Errorf("the init file loaded %d rows (%v), want 50", kv, err)
	}
	if err := os.WriteFile(initf, []byte("\\set x 1\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.must(2, "load", "script", "--server-dir", srv.Dir(), "-d", db, "--init-file", initf); !strings.Contains(r.stderr, "init.sql:1: \\set x 1 in an init file") {
		t.Errorf("meta-command in an init file:\n%s", r)
	}
	html := tempPath(t, "report.html")
	var ids []string
	for _, m := range regexp.MustCompile(`stored as run (\d+)`).FindAllStringSubmatch(first.stdout+r.stdout, -1) {
		ids = append(ids, m[1])
	}
	h.must(0, append([]string{"report", "-o", html, "--results", results}, ids...)...)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "statements of mine.sql") {
		t.Errorf("report lacks the statements of mine.sql")
	}

	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("\\set x random(1, \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.must(2, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", results, "-f", bad, "-T", "1s")
	if !strings.Contains(r.stderr, bad+":1:") {
		t.Errorf("syntax error:\n%s", r)
	}
}

// TestScriptOutputRedacted: what a script prints (\shell, debug()) goes
// through the redactor line by line, an unfinished last line included,
// before the run's own summary.
func TestScriptOutputRedacted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	f := filepath.Join(t.TempDir(), "out.sql")
	// (The stored script itself may hold no password-shaped text.)
	if err := os.WriteFile(f, []byte("\\shell printf 'dsn host=x %s=%s port=5\\npartial line' password hunter22\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.must(0, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", tempPath(t, "results.db"), "-f", f, "-t", "1", "--allow-shell")
	if strings.Contains(r.stdout, "hunter22") || !strings.Contains(r.stdout, "dsn host=x password=xxxxx port=5\n") {
		t.Errorf("the password in the script's output was not masked:\n%s", r)
	}
	if p, s := strings.Index(r.stdout, "partial line"), strings.Index(r.stdout, "stored as run"); p < 0 || p > s {
		t.Errorf("the unfinished line is missing or after the summary:\n%s", r)
	}
}

// TestRunScriptLong: a script of more statements than a session keeps
// prepared (2,500 SELECTs and a \gset) runs at once, each statement
// prepared when it first runs, with the transactions' figures and no
// per-statement table; a script whose one transaction outlasts the run
// and the wait after it ends with status errors and exit 4, never ok.
func TestRunScriptLong(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	results := tempPath(t, "results.db")
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("SELECT 42 AS answer \\gset\n")
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&b, "SELECT %d + :answer;\n", i)
	}
	b.WriteString("\\if :answer != 42\nSELECT 1/0;\n\\endif\n")
	long := filepath.Join(dir, "long.sql")
	if err := os.WriteFile(long, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonPath := tempPath(t, "long.json")
	r := h.must(0, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", results, "-f", long, "-c", "2", "-t", "2", "-P", "0", "--json", jsonPath)
	if !strings.Contains(r.stdout, "not kept: the scripts have more than 1000 SQL commands (this one 2502)") {
		t.Errorf("no word of the statements not kept:\n%s", r)
	}
	var s struct {
		Status       string `json:"status"`
		Transactions int64  `json:"transactions"`
		Scripts      []struct {
			Statements []json.RawMessage `json:"statements"`
			NotKept    int               `json:"statements_not_kept"`
		} `json:"scripts"`
	}
	readJSON(t, jsonPath, &s)
	if s.Status != "ok" || s.Transactions != 4 || len(s.Scripts) != 1 || s.Scripts[0].NotKept != 2502 || len(s.Scripts[0].Statements) != 0 {
		t.Errorf("summary: %+v", s)
	}

	// One transaction longer than the run and the wait for it after.
	slow := filepath.Join(dir, "slow.sql")
	if err := os.WriteFile(slow, []byte("SELECT pg_sleep(60);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r = h.must(4, "run", "script", "--server-dir", srv.Dir(), "-d", db, "--results", results, "-f", slow, "-c", "1", "-T", "1s", "-P", "0", "--json", jsonPath)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %s: its second and the 10 s wait after it", took)
	}
	if !strings.Contains(r.stderr, "status errors: no transaction ended in the 1.0 s measured: 1 were still running and were cancelled after the wait of 10s") ||
		!strings.Contains(r.stderr, "more time than one transaction takes (--duration)") {
		t.Errorf("the exit does not say why:\n%s", r)
	}
	readJSON(t, jsonPath, &s)
	if s.Status != "errors" || s.Transactions != 0 {
		t.Errorf("summary of a run without transactions: %+v", s)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
