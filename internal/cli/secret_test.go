package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"

	_ "modernc.org/sqlite" // to read every column of the results store
)

// TestPasswordNeverShown runs a managed server whose superuser password is a
// sentinel, drives load, run, check and results show/export through the CLI
// (with --server-dir, and with the password in $TUNEBENCH_DSN in both
// key=value and URL form), then looks for the sentinel in everything
// tunebench wrote: stdout, stderr, the --json files, the exports, every
// column of every table of the results store and its raw file bytes, the
// server log and state file. A wrong password in $TUNEBENCH_DSN must fail
// with exit 3 without echoing it.
func TestPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const sentinel = "Sentinel-Pw-7f3a9"
	const wrong = "Wrong-Pw-91c2e"
	srv := testutil.StartServer(t, func(o *server.Options) { o.Password = sentinel })
	if srv.Password() != sentinel {
		t.Fatalf("the server did not take the password option")
	}
	h := newHarness(t)
	db := loadedDB(h, srv)
	dir := t.TempDir()
	results := filepath.Join(dir, "results.db")
	sd := srv.Dir()
	files := []string{}
	file := func(name string) string {
		p := filepath.Join(dir, name)
		files = append(files, p)
		return p
	}

	// shared_buffers needs a restart: applied and restored through the managed server.
	sbBefore := showSetting(t, srv, db, "shared_buffers")
	r1 := h.must(0, "run", "tpcb", "--server-dir", sd, "-d", db, "--results", results, "--duration", "2s", "--clients", "2",
		"--set", "shared_buffers=64MB", "--set", "work_mem=8MB", "--json", file("run1.json"))
	if s := readSummary(t, filepath.Join(dir, "run1.json")); s.Settings["shared_buffers"] != "64MB" {
		t.Errorf("settings_applied %v", s.Settings)
	}
	if got := showSetting(t, srv, db, "shared_buffers"); got != sbBefore {
		t.Errorf("shared_buffers %s after the run, want it restored to %s:\n%s", got, sbBefore, r1)
	}
	h.must(0, "check", "tpcb", "--server-dir", sd, "-d", db)
	h.must(0, "server", "status", "--dir", sd)
	h.must(0, "server", "env", "--dir", sd)

	// The password in $TUNEBENCH_DSN: conninfo form, then URL form.
	h.env["TUNEBENCH_DSN"] = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable password=%s", srv.Port(), db, sentinel)
	h.must(0, "run", "tpcb", "--results", results, "--duration", "2s", "--clients", "2", "--json", file("run2.json"))
	h.must(0, "check", "tpcb")
	h.must(0, "load", "tpcb", "--scale", "1", "--drop")
	h.env["TUNEBENCH_DSN"] = fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", sentinel, srv.Port(), db)
	h.must(0, "run", "tpcb", "--results", results, "--transactions", "20", "--script", "select-only", "--json", file("run3.json"))

	// A wrong password: exit 3, an authentication hint, no echo.
	for _, dsn := range []string{
		fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable password=%s", srv.Port(), db, wrong),
		fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", wrong, srv.Port(), db),
	} {
		h.env["TUNEBENCH_DSN"] = dsn
		r := h.run("run", "tpcb", "--results", results, "--duration", "2s")
		if r.code != 3 || !strings.Contains(r.stderr, "authentication") {
			t.Errorf("wrong password: want exit 3 and an authentication hint:\n%s", r)
		}
		if strings.Contains(r.stdout+r.stderr, wrong) {
			t.Errorf("the wrong password is echoed:\n%s", r)
		}
		if r := h.run("check", "tpcb"); r.code != 3 || strings.Contains(r.stdout+r.stderr, wrong) {
			t.Errorf("check with a wrong password:\n%s", r)
		}
	}
	// With sslmode left at prefer, the message is the server's answer
	// alone, not the TLS attempt before it (issue 16, item 17).
	h.env["TUNEBENCH_DSN"] = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s password=%s", srv.Port(), db, wrong)
	if r := h.run("check", "tpcb"); r.code != 3 || !strings.Contains(r.stderr, "password authentication failed") || strings.Contains(r.stderr, "tls error") {
		t.Errorf("a wrong password with sslmode prefer:\n%s", r)
	}
	// An unknown parameter in a URL: the hint names it, not the server's
	// state.
	h.env["TUNEBENCH_DSN"] = fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable&shared_bufers=1", sentinel, srv.Port(), db)
	if r := h.run("check", "tpcb"); r.code != 3 || !strings.Contains(r.stderr, "shared_bufers") || !strings.Contains(r.stderr, "does not accept") {
		t.Errorf("an unknown URL parameter:\n%s", r)
	}
	delete(h.env, "TUNEBENCH_DSN")

	runs := listRuns(t, results)
	if len(runs) != 3 {
		t.Fatalf("want 3 stored runs, got %d", len(runs))
	}
	h.must(0, "results", "list", "--results", results)
	for _, r := range runs {
		id := fmt.Sprint(r.ID)
		h.must(0, "results", "show", id, "--results", results)
		h.must(0, "results", "export", id, "--format", "json", "--results", results, "-o", file("export"+id+".json"))
		h.must(0, "results", "export", id, "--format", "csv", "--results", results, "-o", file("export"+id+".csv"))
		h.must(0, "results", "export", id, "--format", "json", "--results", results)
	}

	// The scan must be able to find the sentinel: it is in the pgpass file.
	if b, err := os.ReadFile(srv.PassFile()); err != nil || !bytes.Contains(b, []byte(sentinel)) {
		t.Fatalf("sanity: the sentinel is not in %s (%v): the scan below would prove nothing", srv.PassFile(), err)
	}

	leaks := func(where string, b []byte) {
		t.Helper()
		for _, s := range []string{sentinel, wrong} {
			if bytes.Contains(b, []byte(s)) {
				i := bytes.Index(b, []byte(s))
				lo, hi := max(0, i-120), min(len(b), i+len(s)+40)
				t.Errorf("%s contains the password %q: ...%q...", where, s, b[lo:hi])
			}
		}
	}
	h.mu.Lock()
	for i, o := range h.outputs {
		leaks(fmt.Sprintf("command output #%d", i), []byte(o))
	}
	h.mu.Unlock()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", f)
		}
		leaks(f, b)
	}

	// Every column of every table in the store.
	sdb, err := sql.Open("sqlite", "file:"+results+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	tables := queryStrings(t, sdb, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if len(tables) < 4 {
		t.Fatalf("store tables %v", tables)
	}
	cells := 0
	for _, tbl := range tables {
		rows, err := sdb.QueryContext(context.Background(), `SELECT * FROM "`+tbl+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				cells++
				switch x := v.(type) {
				case string:
					leaks(fmt.Sprintf("store %s.%s", tbl, cols[i]), []byte(x))
				case []byte:
					leaks(fmt.Sprintf("store %s.%s", tbl, cols[i]), x)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	if cells < 100 {
		t.Errorf("only %d cells in the store: the scan proves little", cells)
	}
	sdb.Close()
	for _, f := range []string{results, results + "-wal", results + "-shm"} {
		if b, err := os.ReadFile(f); err == nil {
			leaks(f, b)
		}
	}

	// The server's own files (not the pgpass file, which is where the password belongs).
	for _, f := range []string{srv.LogPath(), filepath.Join(sd, "server.json")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("reading %s: %v", f, err)
			continue
		}
		leaks(f, b)
	}
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
