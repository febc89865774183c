package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// TestBadInput: each mistake gets one short paragraph on stderr ("error:
// ..." and "  fix: ..."), nothing on stdout, the exit code of its class, and
// no run in the results store.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	empty := testutil.CreateDB(t, srv)
	before := showSetting(t, srv, db, "work_mem")
	sd := srv.Dir()
	run := func(extra ...string) []string {
		return append([]string{"run", "tpcb", "--server-dir", sd, "-d", db, "--duration", "1s"}, extra...)
	}
	const secret = "Hunter2-in-argv"
	noSrv := filepath.Join(t.TempDir(), "srv")

	// A store with one run in it: no bad command may add to it.
	results := tempPath(t, "results.db")
	h.must(0, "run", "tpcb", "--server-dir", sd, "-d", db, "--results", results, "--transactions", "1")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // substrings of stderr (error or fix)
		not  []string // must not appear anywhere in the output
	}{
		{name: "unknown script", args: run("--script", "tpcb-lite"), code: 2,
			want: []string{"tpcb-lite", "tpcb-like", "simple-update", "select-only"}},
		// -P takes a bare number as seconds (pgbench's -P 5); the other
		// durations keep their unit.
		{name: "duration without a unit", args: run("-T", "60"), code: 2,
			want: []string{"--duration must be a duration with a unit, like 60s, not a bare number"}},
		{name: "progress not a duration", args: run("-P", "often"), code: 2,
			want: []string{"often", "--progress", "must be a duration like 5s", "see --help"}},
		{name: "negative progress", args: run("-P", "-5s"), code: 2,
			want: []string{"--progress", "must not be negative"}},
		{name: "zero clients", args: run("--clients", "0"), code: 2,
			want: []string{"--clients"}},
		{name: "negative threads", args: run("--threads", "-1"), code: 2,
			want: []string{"--threads"}},
		{name: "unknown follow-server mode", args: run("--follow-server", "maybe"), code: 2,
			want: []string{"--follow-server", "auto, on or off"}},
		{name: "unknown setting", args: run("--set", "shard_buffers=1GB"), code: 2,
			want: []string{"shard_buffers", "shared_buffers"}},
		{name: "bad setting value", args: run("--set", "work_mem=banana"), code: 2,
			want: []string{"work_mem", "banana"}},
		{name: "setting without value", args: run("--set", "work_mem"), code: 2,
			want: []string{"name=value"}},
		{name: "unreachable server", args: []string{"run", "tpcb", "--dsn", "host=127.0.0.1 port=1 user=postgres dbname=x", "--duration", "1s"}, code: 3,
			want: []string{"127.0.0.1:1", "running"}},
		{name: "password in --dsn", args: []string{"run", "tpcb", "--dsn", "host=127.0.0.1 port=5432 user=postgres password=" + secret, "--duration", "1s"}, code: 2,
			want: []string{"PGPASSWORD", "TUNEBENCH_DSN"}, not: []string{secret}},
		{name: "password in --dsn URL", args: []string{"load", "tpcb", "--dsn", "postgres://postgres:" + secret + "@127.0.0.1:5432/x"}, code: 2,
			want: []string{"password"}, not: []string{secret}},
		{name: "restart setting on an unmanaged server", args: []string{"run", "tpcb", "--dsn", srv.DSNFor(db), "--duration", "1s", "--set", "shared_buffers=64MB"}, code: 2,
			want: []string{"shared_buffers", "restart"}},
		{name: "not loaded", args: []string{"run", "tpcb", "--server-dir", sd, "-d", empty, "--duration", "1s"}, code: 2,
			want: []string{"load tpcb"}},
		{name: "check not loaded", args: []string{"check", "tpcb", "--server-dir", sd, "-d", empty}, code: 2,
			want: []string{"load tpcb"}},
		{name: "no such database", args: run("-d", "no_such_db_here"), code: 3,
			want: []string{"no_such_db_here", "does not exist"}},
		{name: "duration and transactions", args: run("--transactions", "5"), code: 2,
			want: []string{"--duration", "--transactions"}},
		{name: "timer slack without rate", args: []string{"run", "tpcb", "--server-dir", sd, "-d", db, "--timer-slack", "5us", "--transactions", "5"}, code: 2,
			want: []string{"--timer-slack", "--rate"}},
		{name: "latency limit without rate", args: run("--latency-limit", "10ms"), code: 2,
			want: []string{"--rate"}},
		{name: "timer slack without rate", args: run("--timer-slack", "5us"), code: 2,
			want: []string{"--timer-slack", "--rate"}},
		{name: "timer slack out of range", args: run("--rate", "10", "--timer-slack", "2ms"), code: 2,
			want: []string{"--timer-slack", "1ns to 1ms"}},
		{name: "timer slack without unit", args: run("--rate", "10", "--timer-slack", "10"), code: 2,
			want: []string{"like 10us", "like 25us"}},
		{name: "timer slack malformed", args: run("--rate", "10", "--timer-slack", "fast"), code: 2,
			want: []string{"like 25us", `"fast"`}, not: []string{"30s"}},
		{name: "bad distribution", args: run("--distribution", "zipfian:0.5"), code: 2,
			want: []string{"zipfian"}},
		{name: "unknown flag", args: run("--clientz", "2"), code: 2,
			want: []string{"--clientz", "--help"}},
		{name: "not a server dir", args: []string{"run", "tpcb", "--server-dir", t.TempDir(), "--duration", "1s"}, code: 2,
			want: []string{"server start"}},
		{name: "dsn and server dir", args: run("--dsn", "host=127.0.0.1"), code: 2,
			want: []string{"--dsn", "--server-dir"}},
		{name: "load scale 0", args: []string{"load", "tpcb", "--server-dir", sd, "-d", empty, "--scale", "0"}, code: 2,
			want: []string{"--scale"}},
		{name: "load over loaded", args: []string{"load", "tpcb", "--server-dir", sd, "-d", db}, code: 2,
			want: []string{"--drop"}},
		{name: "missing binaries", args: []string{"server", "start", "--dir", noSrv, "--pg-bin", "/nonexistent"}, code: 6,
			want: []string{"/nonexistent"}},
		{name: "results show unknown", args: []string{"results", "show", "999"}, code: 2,
			want: []string{"999", "results list"}},
		{name: "results export bad format", args: []string{"results", "export", "1", "--format", "xml"}, code: 2,
			want: []string{"csv", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args[0] == "run" || args[0] == "results" {
				args = append(append([]string{}, args...), "--results", results)
			}
			jsonPath := tempPath(t, "summary.json")
			if args[0] == "run" {
				args = append(args, "--json", jsonPath)
			}
			n0 := len(listRuns(t, results))
			r := h.run(args...)
			if r.code != tc.code {
				t.Errorf("want exit %d:\n%s", tc.code, r)
			}
			if r.stdout != "" {
				t.Errorf("an error should print nothing on stdout:\n%s", r)
			}
			// Progress lines may come first; the error is the last paragraph.
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			for i, l := range lines {
				if strings.HasPrefix(l, "error: ") {
					lines = lines[i:]
					break
				}
			}
			if !strings.HasPrefix(lines[0], "error: ") {
				t.Errorf("stderr has no \"error: \" line:\n%s", r)
			}
			fix := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "  fix: ") && len(l) > len("  fix: ")+10 {
					fix++
				}
				if strings.TrimSpace(l) == "" {
					t.Errorf("the error should be one paragraph (blank line):\n%s", r)
				}
			}
			if fix != 1 {
				t.Errorf("want exactly one \"  fix: ...\" line naming the fix:\n%s", r)
			}
			// pgx may add one line per address tried.
			if len(lines) > 5 || len(strings.Join(lines, "\n")) > 800 {
				t.Errorf("the error should be one short paragraph (%d lines, %d bytes):\n%s", len(lines), len(r.stderr), r)
			}
			for _, bad := range []string{"Usage:", "panic", "goroutine ", "Flags:"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr contains %q:\n%s", bad, r)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, r)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(r.stdout+r.stderr, n) {
					t.Errorf("output shows %q:\n%s", n, r)
				}
			}
			if _, err := os.Stat(jsonPath); !os.IsNotExist(err) {
				t.Errorf("a failed command wrote the --json file (%v)", err)
			}
			if n := len(listRuns(t, results)); n != n0 {
				t.Errorf("the store has %d runs after the failed command, %d before", n, n0)
			}
		})
	}
	if got := showSetting(t, srv, db, "work_mem"); got != before {
		t.Errorf("work_mem is %s after the bad --set commands, want %s", got, before)
	}
	// The missing-binaries case must not leave a half-made server dir behind.
	if _, err := os.Stat(noSrv); !os.IsNotExist(err) {
		t.Errorf("server start without binaries left %s behind (%v)", noSrv, err)
	}
}
