package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target/mariadb"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
)

// TestMariaDB: a managed MariaDB through every command a user types. The
// server commands on a directory made with --engine mariadb; tpcb loaded,
// run (settings applied for the run and restored) and checked; a script
// file with an init file; a run killed with its setting in force, which
// the next command puts back; and one clear error each for a server that
// is down, a wrong password and a variable MariaDB does not have.
func TestMariaDB(t *testing.T) {
	t.Parallel()
	if err := (mariadb.Driver{}).ManagedSupported(); err != nil {
		mariadbtest.StartMariaDB(t) // skips, or fails under CI
	}
	h := newHarness(t)
	results := tempPath(t, "results.db")
	base, err := os.MkdirTemp("", "tunebench-cli-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "srv")
	t.Cleanup(func() { h.run("server", "stop", "--dir", dir) })

	r := h.must(0, "server", "start", "--engine", "mariadb", "--dir", dir)
	if !strings.Contains(r.stdout, "MariaDB 10.") || !strings.Contains(r.stdout, "DSN: mariadb://tunebench@127.0.0.1:") {
		t.Errorf("start:\n%s", r)
	}
	if r := h.must(0, "server", "status", "--dir", dir); !strings.Contains(r.stdout, "running: MariaDB") {
		t.Errorf("status:\n%s", r)
	}
	if r := h.must(0, "server", "env", "--dir", dir); !strings.Contains(r.stdout, "MYSQL_TCP_PORT=") {
		t.Errorf("env:\n%s", r)
	}
	if r := h.must(2, "server", "start", "--engine", "postgres", "--dir", dir); !strings.Contains(r.stderr, "holds a managed MariaDB") {
		t.Errorf("another engine on the same directory:\n%s", r)
	}

	// tpcb: load, a run with a setting for the run, the check.
	h.must(0, "load", "tpcb", "--server-dir", dir, "--scale", "1", "--jobs", "2")
	before := variable(t, dir, "innodb_io_capacity")
	r = h.must(0, "run", "tpcb", "--server-dir", dir, "--results", results, "-c", "2", "-T", "2s", "--set", "innodb_io_capacity=1234")
	for _, want := range []string{"PASS balances", "PASS history growth", "tpcb-like"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run lacks %q:\n%s", want, r)
		}
	}
	if got := variable(t, dir, "innodb_io_capacity"); got != before {
		t.Errorf("innodb_io_capacity %s after the run, was %s", got, before)
	}
	h.must(0, "check", "tpcb", "--server-dir", dir)
	// Two writing runs at once (issue 42 item 4).
	overlappingRuns(t, h, "--server-dir", dir)
	if r := h.must(0, "results", "list", "--results", results); !strings.Contains(r.stdout, "tpcb") {
		t.Errorf("results list:\n%s", r)
	}
	report := tempPath(t, "report.html")
	h.must(0, "report", "1", "--results", results, "-o", report)
	if b, _ := os.ReadFile(report); !strings.Contains(string(b), "MariaDB 10.") || !strings.Contains(string(b), "Buffer pool") || !strings.Contains(string(b), "MariaDB settings that are not at their defaults") {
		t.Errorf("the report lacks the server's version or MariaDB's charts")
	}

	// A script file, its table made by an init file.
	sdir := t.TempDir()
	initFile, script := filepath.Join(sdir, "init.sql"), filepath.Join(sdir, "point.sql")
	os.WriteFile(initFile, []byte("CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO kv SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000;\n"), 0o644)
	os.WriteFile(script, []byte("\\set id random(1, 1000)\nSELECT v, id * 2 AS twice FROM kv WHERE id = :id \\gset\n\\if :twice != 2 * :id\n\\set id debug(:twice)\n\\endif\nBEGIN;\nUPDATE kv SET v = :v WHERE id = :id;\nCOMMIT;\n"), 0o644)
	h.must(0, "load", "script", "--server-dir", dir, "--init-file", initFile)
	r = h.must(0, "run", "script", "--server-dir", dir, "--results", results, "-f", script, "-c", "2", "-T", "2s")
	if !strings.Contains(r.stdout, "UPDATE kv SET v = :v WHERE id = :id") || !strings.Contains(r.stdout, "point.sql") {
		t.Errorf("script run:\n%s", r)
	}

	// A run killed with its setting in force: the next command restores it.
	sp := h.spawn("run", "tpcb", "--server-dir", dir, "--results", results, "-c", "1", "-T", "60s", "--set", "innodb_io_capacity=777", "--no-check")
	sp.waitStderr(t, "progress:", time.Minute)
	if got := variable(t, dir, "innodb_io_capacity"); got != "777" {
		t.Fatalf("innodb_io_capacity %s during the run", got)
	}
	sp.cmd.Process.Signal(syscall.SIGKILL)
	<-sp.done
	h.must(0, "check", "tpcb", "--server-dir", dir)
	if got := variable(t, dir, "innodb_io_capacity"); got != before {
		t.Errorf("innodb_io_capacity %s after the next command, was %s", got, before)
	}

	// One clear error each.
	if r := h.must(2, "run", "tpcb", "--server-dir", dir, "--results", results, "-T", "1s", "--set", "no_such_variable=1"); !strings.Contains(r.stderr, "no_such_variable") {
		t.Errorf("an unknown variable:\n%s", r)
	}
	port := strings.TrimPrefix(strings.Fields(strings.SplitAfter(h.must(0, "server", "env", "--dir", dir).stdout, "MYSQL_TCP_PORT=")[1])[0], "")
	// The same server by connection string, the password from $MYSQL_PWD.
	pw, err := os.ReadFile(filepath.Join(dir, "tunebench.pass"))
	if err != nil {
		t.Fatal(err)
	}
	h.env["MYSQL_PWD"] = strings.TrimSpace(string(pw))
	r = h.must(0, "run", "tpcb", "--dsn", "mariadb://tunebench@127.0.0.1:"+port+"/tunebench", "--results", results, "-c", "2", "-T", "1s")
	if !strings.Contains(r.stdout, "PASS balances") || strings.Contains(r.stdout+r.stderr, h.env["MYSQL_PWD"]) {
		t.Errorf("a run by connection string:\n%s", r)
	}
	h.env["MYSQL_PWD"] = "wrong"
	if r := h.run("run", "tpcb", "--dsn", "mariadb://tunebench@127.0.0.1:"+port+"/tunebench", "--results", results, "-T", "1s"); r.code == 0 ||
		!strings.Contains(r.stderr, "MariaDB refused the login") || strings.Count(r.stderr, "error:") != 1 {
		t.Errorf("a wrong password:\n%s", r)
	}
	h.must(0, "server", "stop", "--dir", dir)
	if r := h.run("run", "tpcb", "--server-dir", dir, "--results", results, "-T", "1s"); r.code == 0 || !strings.Contains(r.stderr, "is not running") || !strings.Contains(r.stderr, "server start") {
		t.Errorf("a server that is down:\n%s", r)
	}
}

// variable reads a global variable of the managed server in dir.
func variable(t *testing.T, dir, name string) string {
	t.Helper()
	srv, err := mariadb.Attach(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(context.Background(), "SELECT @@GLOBAL."+name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMariaDBExperiment: an experiment on a managed MariaDB it starts in a
// temporary directory: the template loaded once and copied before every
// run, a settings matrix applied and restored, the runs compared and
// reported as PostgreSQL's are, and the server stopped and removed at the
// end.
func TestMariaDBExperiment(t *testing.T) {
	t.Parallel()
	if err := (mariadb.Driver{}).ManagedSupported(); err != nil {
		mariadbtest.StartMariaDB(t) // skips, or fails under CI
	}
	h := newHarness(t)
	results := tempPath(t, "results.db")
	exp := writeExperiment(t, `name: mdb
target:
  managed: {engine: mariadb}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, clients: 2}
matrix:
  settings:
    innodb_flush_log_at_trx_commit: [1, 2]
repetitions: 1
seed: 3
`)
	before, _ := filepath.Glob("/var/tmp/tunebench-mariadb-*")
	r := h.must(0, "experiment", "run", exp, "--results", results)
	for _, want := range []string{"load tpcb", "innodb_flush_log_at_trx_commit=2", "settings restored", "experiment mdb: done (2 runs"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("experiment output lacks %q:\n%s", want, r)
		}
	}
	if after, _ := filepath.Glob("/var/tmp/tunebench-mariadb-*"); len(after) > len(before) {
		t.Errorf("the temporary server directory is left: %v", after)
	}
	if r := h.must(0, "compare", "1", "2", "--results", results); !strings.Contains(r.stdout, "tpcb-like") {
		t.Errorf("compare:\n%s", r)
	}
	report := tempPath(t, "report.html")
	h.must(0, "report", "mdb", "--results", results, "-o", report)
	if b, _ := os.ReadFile(report); !strings.Contains(string(b), "innodb_flush_log_at_trx_commit") || !strings.Contains(string(b), "Redo log writes") {
		t.Errorf("the report lacks the matrix or MariaDB's charts")
	}
}
