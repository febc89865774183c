package script

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/step"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/testutil"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// pg is the server of the tests that run scripts; each test has its own
// database.
var pg testutil.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// scriptDB is a new database on the shared server, a superuser connection
// to it, and its sessions.
type scriptDB struct {
	srv  *server.Server
	name string
	conn *pgx.Conn
	ss   pgt.Sessions
}

func newScriptDB(t *testing.T) *scriptDB {
	t.Helper()
	srv := pg.Server(t)
	name := testutil.CreateDB(t, srv)
	return &scriptDB{srv: srv, name: name, conn: testutil.ConnectDB(t, srv, name),
		ss: pgt.Sessions{Connect: func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, name) }}}
}

func (d *scriptDB) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := d.conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (d *scriptDB) int(t *testing.T, sql string) int64 {
	t.Helper()
	var n int64
	if err := d.conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// pgbench runs this machine's pgbench on the database (skipping the test
// without it).
func (d *scriptDB) pgbench(t *testing.T, args ...string) {
	t.Helper()
	bin := testutil.Pgbench(t, d.srv.Binaries())
	cmd := exec.Command(bin, append(args, d.name)...)
	cmd.Env = append(os.Environ(), d.srv.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeFiles writes the scripts into a temporary directory and returns
// their paths, in order.
func writeFiles(t *testing.T, texts ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for i, s := range texts {
		p := filepath.Join(dir, fmt.Sprintf("s%d.sql", i+1))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// program compiles files for a run of clients.
func testProgram(t *testing.T, files []FileSpec, defs []Define, scale int64, seed int64, clients, maxTries int) *program {
	t.Helper()
	p, err := loadProgram(files, defs, false)
	if err != nil {
		t.Fatal(err)
	}
	p.start(scale, seed, clients, maxTries)
	p.measuring.Store(true)
	return p
}

// workers makes the run's workers, closed at cleanup.
func (d *scriptDB) workers(t *testing.T, p *program) []*Worker {
	t.Helper()
	ws := make([]*Worker, len(p.clients))
	for i := range ws {
		w, err := newWorker(context.Background(), d.ss, p, i)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		ws[i] = w
	}
	return ws
}

// stepAll runs n transactions on each worker, the workers concurrently,
// and returns the outcomes by class; a script error fails the test.
func stepAll(t *testing.T, ws []*Worker, n int) map[step.OutcomeClass]int {
	t.Helper()
	var mu sync.Mutex
	classes := map[step.OutcomeClass]int{}
	var wg sync.WaitGroup
	errc := make(chan error, len(ws))
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				o, err := w.Step(context.Background())
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				classes[o.Class]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	return classes
}

// TestBuiltinScriptsKeepBalances: pgbench's three built-in scripts, as
// files (examples/scripts), run by 4 concurrent clients with weights,
// leave the database as pgbench's own do: every branch, teller and
// account balance change is in the history, and the history has a row per
// writing transaction committed.
func TestBuiltinScriptsKeepBalances(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.pgbench(t, "-i", "-q", "-s", "1")
	root := testutil.RepoRoot(t)
	ex := func(n string) string { return filepath.Join(root, "examples", "scripts", n+".sql") }
	files := []FileSpec{{ex("tpcb-like"), 5}, {ex("simple-update"), 3}, {ex("select-only"), 2}}
	p := testProgram(t, files, nil, 1, 7, 4, 3)
	ws := d.workers(t, p)
	classes := stepAll(t, ws, 150)
	if classes[step.ClassOK]+classes[step.ClassRetriedOK] != 600 {
		t.Fatalf("outcomes %v, want 600 committed", classes)
	}
	var committed [3]int64
	for _, w := range ws {
		for si := range w.stats {
			if info := p.info[si]; w.p.stmts[si].SQL == "END" {
				committed[info.Script] += w.stats[si].count
			}
		}
	}
	// select-only has no END: its transactions are its one statement.
	for si, info := range p.info {
		if info.Script == 2 {
			for _, w := range ws {
				committed[2] += w.stats[si].count
			}
		}
	}
	if committed[0] == 0 || committed[1] == 0 || committed[2] == 0 {
		t.Fatalf("some script never ran: %v", committed)
	}
	hist := d.int(t, "SELECT count(*) FROM pgbench_history")
	if hist != committed[0]+committed[1] {
		t.Fatalf("pgbench_history has %d rows, want %d (tpcb-like %d + simple-update %d)", hist, committed[0]+committed[1], committed[0], committed[1])
	}
	delta := d.int(t, "SELECT coalesce(sum(delta), 0) FROM pgbench_history")
	a := d.int(t, "SELECT sum(abalance) FROM pgbench_accounts")
	if a != delta {
		t.Fatalf("sum(abalance) %d, sum(delta) %d", a, delta)
	}
	// Tellers and branches change together (tpcb-like), accounts with
	// every writing script.
	tb, bb := d.int(t, "SELECT sum(tbalance) FROM pgbench_tellers"), d.int(t, "SELECT sum(bbalance) FROM pgbench_branches")
	if tb != bb {
		t.Fatalf("sum(tbalance) %d, sum(bbalance) %d", tb, bb)
	}
	// The weights: 5:3:2 of 600, within 5 standard deviations.
	for i, w := range []float64{0.5, 0.3, 0.2} {
		mean, sd := 600*w, math.Sqrt(600*w*(1-w))
		if math.Abs(float64(committed[i])-mean) > 5*sd {
			t.Errorf("script %d ran %d times, want about %.0f", i, committed[i], mean)
		}
	}
}

// TestWorkersDrawAsPgbench: the same script, run by pgbench and by
// tunebench's workers with the same seed, inserts the same values for
// every client in the same order.
func TestWorkersDrawAsPgbench(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.exec(t, `CREATE TABLE draws (n bigserial, client int, r bigint, e bigint, g bigint, z bigint, z2 bigint,
		p bigint, p2 bigint, h bigint, f bigint, big bigint, odd bigint)`)
	files := writeFiles(t, drawScript)
	const seed, clients, txs = 99, 3, 40
	d.pgbench(t, "-n", "-c", fmt.Sprint(clients), "-j", "1", "-t", fmt.Sprint(txs), "--random-seed", fmt.Sprint(seed), "-f", files[0])
	read := func() map[int][]string {
		rows, err := d.conn.Query(context.Background(), "SELECT client, concat_ws(' ', r, e, g, z, z2, p, p2, h, f, big, odd) FROM draws ORDER BY client, n")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int][]string{}
		for rows.Next() {
			var c int
			var s string
			if err := rows.Scan(&c, &s); err != nil {
				t.Fatal(err)
			}
			out[c] = append(out[c], s)
		}
		return out
	}
	theirs := read()
	d.exec(t, "TRUNCATE draws")
	p := testProgram(t, []FileSpec{{files[0], 1}}, nil, 1, seed, clients, 1)
	stepAll(t, d.workers(t, p), txs)
	ours := read()
	for c := 0; c < clients; c++ {
		if len(theirs[c]) != txs || len(ours[c]) != txs {
			t.Fatalf("client %d: pgbench %d rows, tunebench %d, want %d", c, len(theirs[c]), len(ours[c]), txs)
		}
		for i := range ours[c] {
			if ours[c][i] != theirs[c][i] {
				t.Fatalf("client %d transaction %d: tunebench %s, pgbench %s", c, i, ours[c][i], theirs[c][i])
			}
		}
	}
}

// TestZipfianAccessHistogram: the keys a random_zipfian script sends, as
// the server counts them, follow the distribution (chi-square, 19 degrees
// of freedom, at the 0.001 level; the seed is fixed, so the test does not
// flake).
func TestZipfianAccessHistogram(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.exec(t, "CREATE TABLE hits (k int)")
	const n, keys, s = 4000, 20, 1.5
	files := writeFiles(t, fmt.Sprintf("\\set k random_zipfian(1, %d, %g)\nINSERT INTO hits VALUES (:k);\n", keys, s))
	p := testProgram(t, []FileSpec{{files[0], 1}}, nil, 1, 12345, 2, 1)
	stepAll(t, d.workers(t, p), n/2)
	rows, err := d.conn.Query(context.Background(), "SELECT k, count(*) FROM hits GROUP BY k")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, keys+1)
	for rows.Next() {
		var k int
		var c int64
		if err := rows.Scan(&k, &c); err != nil {
			t.Fatal(err)
		}
		if k < 1 || k > keys {
			t.Fatalf("key %d out of [1, %d]", k, keys)
		}
		got[k] = float64(c)
	}
	var norm float64
	for k := 1; k <= keys; k++ {
		norm += math.Pow(float64(k), -s)
	}
	chi := 0.0
	for k := 1; k <= keys; k++ {
		want := n * math.Pow(float64(k), -s) / norm
		chi += (got[k] - want) * (got[k] - want) / want
	}
	if chi > 43.82 { // chi-square(19) at 0.999
		t.Fatalf("chi-square %.1f over 43.8: counts %v", chi, got[1:])
	}
	t.Logf("chi-square %.2f (19 df)", chi)
}

// TestGsetBranchesPipelineRetry: \gset and \aset store a row's columns
// (with a prefix; a NULL as the empty string, \aset's last row), \if/\elif/\else take
// the right branch (a number is true when not zero), a pipeline sends its
// statements in one round trip, and a serialization failure runs the
// script again with the same draws.
func TestGsetBranchesPipelineRetry(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.exec(t, "CREATE TABLE out (client int, v bigint, r int, n bigint, nothing text, tries bigint)")
	d.exec(t, "CREATE SEQUENCE tries")
	// fail_odd fails every other call with a serialization failure: the
	// first attempt of each transaction fails, the second commits.
	d.exec(t, `CREATE FUNCTION fail_odd() RETURNS bigint LANGUAGE plpgsql AS $$
		DECLARE x bigint := nextval('tries');
		BEGIN IF x % 2 = 1 THEN RAISE EXCEPTION 'try again' USING ERRCODE = '40001'; END IF; RETURN x; END $$`)
	files := writeFiles(t, `\set v random(1, 1000000)
SELECT 7 AS seven, NULL::int AS nothing \gset p_
SELECT 1 AS one WHERE false \aset
SELECT g AS last FROM generate_series(1, 3) g \aset
\if :p_seven = 6
\set r 1
\elif :p_seven - :last - 4
\set r 3
\elif :p_seven = 7
\set r 2
\else
\set r 4
\endif
BEGIN;
SELECT fail_odd() AS tries \gset
SELECT count(*) AS n FROM out \gset
\startpipeline
INSERT INTO out VALUES (:client_id, :v, :r, :n, :p_nothing, :tries);
SELECT 1;
\endpipeline
END;
`)
	p := testProgram(t, []FileSpec{{files[0], 1}}, nil, 1, 5, 1, 2)
	ws := d.workers(t, p)
	classes := stepAll(t, ws, 10)
	if classes[step.ClassRetriedOK] != 10 {
		t.Fatalf("outcomes %v, want 10 retried_ok", classes)
	}
	if r := d.int(t, "SELECT count(*) FROM out WHERE r = 2"); r != 10 {
		t.Fatalf("%d rows took the \\elif branch, want 10", r)
	}
	// pgbench stores a NULL column as the empty string, and \aset the
	// last row.
	if e := d.int(t, "SELECT count(*) FROM out WHERE nothing = ''"); e != 10 {
		t.Fatalf("%d rows stored the NULL column as '', want 10", e)
	}
	// The pipeline's count saw the rows before the insert: 0..9.
	if s := d.int(t, "SELECT sum(n) FROM out"); s != 45 {
		t.Fatalf("sum of the pipelined counts %d, want 45", s)
	}
	if even := d.int(t, "SELECT count(*) FROM out WHERE tries % 2 = 0"); even != 10 {
		t.Fatalf("%d rows stored an even try, want 10", even)
	}
	// The retried attempts drew the same v: the values are the first
	// 10 draws of client 0's generator.
	gens, _ := gen.Seeds(5, 1)
	g := gens[0]
	rows, err := d.conn.Query(context.Background(), "SELECT v FROM out ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; rows.Next(); i++ {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		want, _ := random(g, fnRandom, []Value{Int(1), Int(1000000)})
		if v != want.I {
			t.Fatalf("transaction %d stored v %d, want the %d-th draw %d", i, v, i, want.I)
		}
	}
	st := ws[0].stats
	fails := int64(0)
	for si := range st {
		fails += st[si].errors["40001"]
	}
	if fails != 10 {
		t.Fatalf("per-statement errors: %d serialization failures, want 10", fails)
	}
}

// TestScriptErrorsNameTheCommand: an expression that fails, a \gset
// without its one row and a script ending inside a transaction stop the
// worker with an error naming the file, the line and the command.
func TestScriptErrorsNameTheCommand(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	for _, c := range []struct{ script, want string }{
		{"\\set x 1\n\\set y 10 / (:x - 1)\nSELECT :y;\n", `s1.sql:2: \set y 10 / (:x - 1): division by zero`},
		{"SELECT 1 AS a WHERE false \\gset\n", `s1.sql:1: SELECT 1 AS a WHERE false: \gset expected one row, got 0`},
		{"SELECT 1 AS a UNION ALL SELECT 2 \\gset\n", `\gset expected one row, got 2`},
		{"BEGIN;\nSELECT 1;\n", "the script ended inside a transaction block"},
	} {
		files := writeFiles(t, c.script)
		p := testProgram(t, []FileSpec{{files[0], 1}}, nil, 1, 1, 1, 1)
		w := d.workers(t, p)[0]
		_, err := w.Step(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.script, err, c.want)
		}
	}
}

// TestStepTimesStatements: the per-statement results count each
// statement's round trips while measuring, and only then. A statement sent
// straight after a reply starts at that reply (one clock reading); one
// sent after a \sleep starts when it is sent, not before the sleep.
func TestStepTimesStatements(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	files := writeFiles(t, "SELECT pg_sleep(0.002);\n\\sleep 30 ms\nSELECT 1;\n\\set a 1\nSELECT :a;\n")
	p := testProgram(t, []FileSpec{{files[0], 1}}, nil, 1, 1, 1, 1)
	ws := d.workers(t, p)
	stepAll(t, ws, 5)
	p.measuring.Store(false)
	stepAll(t, ws, 3)
	st := ws[0].stats
	if st[0].count != 5 || st[1].count != 5 || st[2].count != 5 {
		t.Fatalf("counts %d, %d, %d; want 5 each", st[0].count, st[1].count, st[2].count)
	}
	p50 := func(i int) float64 {
		h := metrics.NewHist()
		h.MergeSparse(st[i].lat)
		return h.PercentileMs(50)
	}
	if ms := p50(0); ms < 2 || ms > 1000 {
		t.Fatalf("pg_sleep(0.002) p50 %.3f ms", ms)
	}
	for i := 1; i <= 2; i++ {
		if ms := p50(i); ms >= 25 {
			t.Errorf("statement %d p50 %.3f ms: it took in the \\sleep 30 ms", i, ms)
		}
	}
}

// TestStoreAndShellOnManyClients: several clients store columns no script
// reads (\gset of a new name: no shared state changes while they run, as
// -race checks), and \setshell runs a shell command line and takes the
// first line of its output.
func TestStoreAndShellOnManyClients(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.exec(t, "CREATE TABLE seen (client int, x bigint)")
	files := writeFiles(t, `SELECT 1 AS never_read, :client_id AS me \gset
\setshell x echo $((40 + 2)); echo 7
INSERT INTO seen VALUES (:me, :x);
`)
	p, err := loadProgram([]FileSpec{{files[0], 1}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	p.start(1, 3, 3, 1)
	p.measuring.Store(true)
	stepAll(t, d.workers(t, p), 20)
	if n := d.int(t, "SELECT count(*) FROM seen WHERE x = 42"); n != 60 {
		t.Fatalf("%d rows with x = 42, want 60", n)
	}
	if n := d.int(t, "SELECT count(DISTINCT client) FROM seen"); n != 3 {
		t.Fatalf("%d clients stored their :me, want 3", n)
	}
}

// TestStepAllocations: a warm worker's transaction of the built-in
// scripts allocates (almost) nothing: the interpreter, the parameters and
// the per-statement timing reuse their memory.
func TestStepAllocations(t *testing.T) {
	d := newScriptDB(t)
	d.pgbench(t, "-i", "-q", "-s", "1")
	root := testutil.RepoRoot(t)
	for _, name := range []string{"select-only", "tpcb-like"} {
		p := testProgram(t, []FileSpec{{filepath.Join(root, "examples", "scripts", name+".sql"), 1}}, nil, 1, 9, 1, 1)
		w := d.workers(t, p)[0]
		ctx := context.Background()
		for range 50 {
			if _, err := w.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := w.Step(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0.5 {
			t.Errorf("%s: %.1f allocations per transaction, want 0", name, allocs)
		}
	}
}

// TestShellOutputAndStoredVariables: a variable that only a \gset sets
// can be a \shell word; \shell's output goes to the run's stdout and
// stderr; a command that leaves a child in the background holding its
// output ends when its shell ends, as pgbench's system() and popen()
// do; and a statement sends a variable that nothing set as NULL, saying
// so once on stderr.
func TestShellOutputAndStoredVariables(t *testing.T) {
	t.Parallel()
	d := newScriptDB(t)
	d.exec(t, "CREATE TABLE got (y bigint, z int)")
	files := writeFiles(t, `SELECT 40 + 2 AS x \gset
SELECT 1 AS never WHERE false \aset
\shell echo got :x ; echo on-stderr 1>&2
\shell sleep 3 &
\setshell y echo :x ; sleep 3 &
INSERT INTO got VALUES (:y, :never);
`)
	p, err := loadProgram([]FileSpec{{files[0], 1}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut testutil.Buffer
	p.stdout, p.stderr = &out, &errOut
	p.start(1, 3, 1, 1)
	p.measuring.Store(true)
	start := time.Now()
	stepAll(t, d.workers(t, p), 2)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("two transactions took %v: the commands waited for their background children", el)
	}
	if n := d.int(t, "SELECT count(*) FROM got WHERE y = 42 AND z IS NULL"); n != 2 {
		t.Errorf("%d rows with y = 42 and a NULL z, want 2", n)
	}
	if strings.Count(out.String(), "got 42\n") != 2 || strings.Count(errOut.String(), "on-stderr\n") != 2 {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
	if n := strings.Count(errOut.String(), ":never was not set"); n != 1 {
		t.Errorf("the NULL noted %d times, want once:\n%s", n, errOut.String())
	}
}
