package tpcb

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/testutil"
)

// testDB is a fresh database on the package's server: a connector for Load
// and one open connection for assertions.
func testDB(t *testing.T) (Connector, *pgx.Conn) {
	t.Helper()
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	conn := testutil.ConnectDB(t, srv, db)
	return func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, db) }, conn
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func metaStatus(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), "select status from "+MetaTable).Scan(&s); err != nil {
		t.Fatalf("reading %s: %v", MetaTable, err)
	}
	return s
}

// tpcbTx does what one committed tpcb-like transaction does, in plain SQL.
func tpcbTx(t *testing.T, conn *pgx.Conn, aid, tid, bid, delta int) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"update pgbench_accounts set abalance = abalance + $1 where aid = $2", []any{delta, aid}},
			{"update pgbench_tellers set tbalance = tbalance + $1 where tid = $2", []any{delta, tid}},
			{"update pgbench_branches set bbalance = bbalance + $1 where bid = $2", []any{delta, bid}},
			{"insert into pgbench_history (tid, bid, aid, delta, mtime) values ($1, $2, $3, $4, now())", []any{tid, bid, aid, delta}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func condition(t *testing.T, rep CheckReport, name string) Condition {
	t.Helper()
	for _, c := range rep.Conditions {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("check report has no condition %q: %+v", name, rep)
	return Condition{}
}

func mustCheck(t *testing.T, conn *pgx.Conn) CheckReport {
	t.Helper()
	rep, err := Check(context.Background(), conn)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// TestLoadScale1 loads scale 1 and checks the tables against pgbench's
// definition, the meta table, ReadInfo and both check conditions, then that
// each condition does fail when its invariant is broken.
func TestLoadScale1(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)

	var mu sync.Mutex
	var phases []string
	var last LoadProgress
	st, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2}, func(p LoadProgress) {
		mu.Lock()
		defer mu.Unlock()
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		last = p
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if st.Scale != 1 || st.Rows != 100011 {
		t.Errorf("stats: scale %d rows %d, want 1 and 100011", st.Scale, st.Rows)
	}
	if got := strings.Join(phases, ","); got != "create,generate,vacuum,primary keys,done" {
		t.Errorf("progress phases %q", got)
	}
	if last.Phase != "done" || last.Rows != last.TotalRows || last.TotalRows != 100011 {
		t.Errorf("last progress %+v, want done with all 100011 rows", last)
	}

	for table, want := range map[string]int64{"pgbench_branches": 1, "pgbench_tellers": 10, "pgbench_accounts": 100000, "pgbench_history": 0} {
		if n := queryInt(t, conn, "select count(*) from "+table); n != want {
			t.Errorf("%s has %d rows, want %d", table, n, want)
		}
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_accounts where aid between 1 and 100000 and bid = 1 and abalance = 0"); n != 100000 {
		t.Errorf("%d accounts have aid in 1..100000, bid 1, balance 0; want all 100000", n)
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_tellers where tid between 1 and 10 and bid = 1 and tbalance = 0"); n != 10 {
		t.Errorf("%d tellers look right, want 10", n)
	}
	if n := queryInt(t, conn, `select count(*) from pg_constraint where contype = 'p'
		and conrelid in ('pgbench_branches'::regclass, 'pgbench_tellers'::regclass, 'pgbench_accounts'::regclass)`); n != 3 {
		t.Errorf("%d primary keys, want 3", n)
	}
	if n := queryInt(t, conn, "select count(*) from pg_stat_user_tables where relname like 'pgbench_%' and last_analyze is null and last_autoanalyze is null"); n != 0 {
		t.Errorf("%d pgbench tables were never analyzed (load runs VACUUM ANALYZE)", n)
	}
	if s := metaStatus(t, conn); s != "complete" {
		t.Errorf("meta status %q, want complete", s)
	}

	info, err := ReadInfo(ctx, conn)
	if err != nil {
		t.Fatalf("ReadInfo: %v", err)
	}
	if info != (Info{Scale: 1, Partitions: 0, Method: "range", LoadedBy: "tunebench"}) {
		t.Errorf("ReadInfo = %+v", info)
	}

	rep := mustCheck(t, conn)
	if !rep.Passed || len(rep.Conditions) != 2 {
		t.Fatalf("check after load: %+v", rep)
	}
	if c := condition(t, rep, "balances"); !c.Passed || c.Skipped {
		t.Errorf("balances: %+v", c)
	}
	if c := condition(t, rep, "history growth"); !c.Passed || !c.Skipped {
		t.Errorf("history growth before any run should be skipped: %+v", c)
	}

	// A "run" of 5 transactions, recorded as a run would record it.
	before, err := HistoryCount(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		tpcbTx(t, conn, 1+i*997, 1+i, 1, 100*i-150)
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: before, Committed: 5}); err != nil {
		t.Fatal(err)
	}
	rep = mustCheck(t, conn)
	if c := condition(t, rep, "history growth"); !rep.Passed || !c.Passed || c.Skipped {
		t.Errorf("after a recorded run of 5: %+v", rep)
	}

	// Clearing the record (what a run does before it starts) makes the
	// history condition skip rather than judge against stale numbers.
	if err := RecordRun(ctx, conn, nil); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, mustCheck(t, conn), "history growth"); !c.Skipped {
		t.Errorf("after clearing the record the history condition ran: %+v", c)
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: before, Committed: 5}); err != nil {
		t.Fatal(err)
	}

	// History growth fails when the run claims fewer (or more) commits than
	// the history shows, unless ambiguous commits explain the difference.
	for _, tc := range []struct {
		r    RunRecord
		pass bool
	}{
		{RunRecord{HistoryBefore: before, Committed: 4}, false},
		{RunRecord{HistoryBefore: before, Committed: 6}, false},
		{RunRecord{HistoryBefore: before, Committed: 4, Ambiguous: 1}, true},
		{RunRecord{HistoryBefore: before, Committed: 3, Ambiguous: 1}, false},
	} {
		if err := RecordRun(ctx, conn, &tc.r); err != nil {
			t.Fatal(err)
		}
		rep = mustCheck(t, conn)
		if c := condition(t, rep, "history growth"); c.Passed != tc.pass || rep.Passed != tc.pass {
			t.Errorf("record %+v: history growth passed=%v report passed=%v, want %v (%s)", tc.r, c.Passed, rep.Passed, tc.pass, c.Detail)
		}
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: before, Committed: 5}); err != nil {
		t.Fatal(err)
	}

	// Balances fail when one table is off.
	exec(t, conn, "update pgbench_accounts set abalance = abalance + 1 where aid = 42")
	rep = mustCheck(t, conn)
	if c := condition(t, rep, "balances"); rep.Passed || c.Passed {
		t.Errorf("an account changed alone must fail the balance check: %+v", rep)
	}
}

// TestLoadPartitions loads scale 1 into 3 range and 3 hash partitions.
func TestLoadPartitions(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"range", "hash"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			connect, conn := testDB(t)
			ctx := ctxT(t, 2*time.Minute)
			o := LoadOptions{Scale: 1, Partitions: 3, Method: method, Workers: 2}
			if method == "range" {
				o.Fillfactor = 90 // storage parameters on the partitions, not the parent
			}
			if _, err := Load(ctx, connect, o, nil); err != nil {
				t.Fatalf("Load: %v", err)
			}
			if n := queryInt(t, conn, "select count(*) from pg_inherits where inhparent = 'pgbench_accounts'::regclass"); n != 3 {
				t.Fatalf("pgbench_accounts has %d partitions, want 3", n)
			}
			rows, err := conn.Query(ctx, "select tableoid::regclass::text, count(*) from pgbench_accounts group by 1 order by 1")
			if err != nil {
				t.Fatal(err)
			}
			type part struct {
				Name string
				N    int64
			}
			parts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[part])
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, p := range parts {
				total += p.N
			}
			if len(parts) != 3 || total != 100000 {
				t.Fatalf("accounts per partition %+v: want 3 non-empty partitions holding 100000", parts)
			}
			if method == "range" {
				want := []part{{"pgbench_accounts_1", 33334}, {"pgbench_accounts_2", 33334}, {"pgbench_accounts_3", 33332}}
				for i := range want {
					if parts[i] != want[i] {
						t.Errorf("range partitions %+v, want %+v", parts, want)
						break
					}
				}
				if n := queryInt(t, conn, "select count(*) from pg_class where relname like 'pgbench_accounts_%' and 'fillfactor=90' = any(reloptions)"); n != 3 {
					t.Errorf("%d partitions have fillfactor=90, want 3", n)
				}
			}
			if n := queryInt(t, conn, "select count(distinct aid) from pgbench_accounts where aid between 1 and 100000"); n != 100000 {
				t.Errorf("%d distinct aids in 1..100000", n)
			}
			info, err := ReadInfo(ctx, conn)
			if err != nil {
				t.Fatalf("ReadInfo: %v", err)
			}
			if info.Scale != 1 || info.Partitions != 3 || info.Method != method {
				t.Errorf("ReadInfo = %+v", info)
			}
			if rep := mustCheck(t, conn); !rep.Passed {
				t.Errorf("check: %+v", rep)
			}
		})
	}
}

// TestLoadTwice: a second load without Drop is refused as a usage error and
// leaves the data alone; with Drop it replaces the tables.
func TestLoadTwice(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2}, nil); err != nil {
		t.Fatalf("first load: %v", err)
	}
	tpcbTx(t, conn, 7, 3, 1, 500) // data the refused load must keep

	_, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2}, nil)
	if err == nil {
		t.Fatal("second load without Drop succeeded")
	}
	if errs.KindOf(err) != errs.KindUsage {
		t.Errorf("second load: kind %v, want usage: %v", errs.KindOf(err), err)
	}
	if !strings.Contains(err.Error(), "pgbench_accounts") || !strings.Contains(errs.HintOf(err), "--drop") {
		t.Errorf("error should name the tables and the fix (--drop): %v / hint %q", err, errs.HintOf(err))
	}
	if n := queryInt(t, conn, "select abalance from pgbench_accounts where aid = 7"); n != 500 {
		t.Errorf("refused load changed the data: abalance %d, want 500", n)
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_history"); n != 1 {
		t.Errorf("refused load changed the history: %d rows", n)
	}

	if _, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2, Drop: true, Partitions: 2, Method: "hash"}, nil); err != nil {
		t.Fatalf("load with Drop: %v", err)
	}
	info, err := ReadInfo(ctx, conn)
	if err != nil || info.Partitions != 2 || info.Method != "hash" {
		t.Errorf("after load with Drop: %+v, %v", info, err)
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_history"); n != 0 {
		t.Errorf("history has %d rows after a fresh load", n)
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_accounts where abalance <> 0"); n != 0 {
		t.Errorf("%d accounts kept old balances", n)
	}
	if rep := mustCheck(t, conn); !rep.Passed {
		t.Errorf("check: %+v", rep)
	}
}

// TestLoadRefusesForeignTables: tables of the same names (e.g. from pgbench -i
// or an application) are never dropped without Drop.
func TestLoadRefusesForeignTables(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	exec(t, conn, "create table pgbench_history (note text)")
	exec(t, conn, "insert into pgbench_history values ('keep me')")
	_, err := Load(ctxT(t, time.Minute), connect, LoadOptions{Scale: 1, Workers: 1}, nil)
	if errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("load over an existing pgbench_history: %v (kind %v), want a usage error", err, errs.KindOf(err))
	}
	if n := queryInt(t, conn, "select count(*) from pgbench_history where note = 'keep me'"); n != 1 {
		t.Error("existing table was changed")
	}
	// ReadInfo refuses a database with only some of the tables.
	if _, err := ReadInfo(context.Background(), conn); err == nil || !strings.Contains(err.Error(), "pgbench_accounts") {
		t.Errorf("ReadInfo on a partial schema: %v", err)
	}
}

// TestLoadInterrupted cancels the load while the accounts are generated: the
// meta table must say 'loading', ReadInfo must refuse the database, a load
// without Drop must refuse it too, and a load with Drop must repair it.
func TestLoadInterrupted(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	var mu sync.Mutex
	var cancelledAt LoadProgress
	_, err := Load(ctx, connect, LoadOptions{Scale: 10, Workers: 1}, func(p LoadProgress) {
		mu.Lock()
		defer mu.Unlock()
		if cancelledAt.Phase == "" && p.Phase != "create" && (p.Phase != "generate" || p.Rows > 0) {
			cancelledAt = p
			cancel()
		}
	})
	mu.Lock()
	at := cancelledAt
	mu.Unlock()
	if err == nil {
		t.Fatalf("Load returned no error after cancel at %+v", at)
	}
	t.Logf("cancelled at %+v: %v", at, err)
	if at.Phase != "generate" || at.Rows >= at.TotalRows {
		t.Errorf("cancelled at %+v; the test wants the cancel while rows are generated", at)
	}
	if !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		t.Errorf("error does not come from the cancellation: %v", err)
	}
	if s := metaStatus(t, conn); s != "loading" {
		t.Errorf("meta status after an interrupted load %q, want loading", s)
	}
	n := queryInt(t, conn, "select count(*) from pgbench_accounts")
	if n >= 1000000 {
		t.Errorf("all %d accounts loaded although cancelled", n)
	}
	_, err = ReadInfo(context.Background(), conn)
	if err == nil {
		t.Fatal("ReadInfo accepted a half-loaded database")
	}
	if !strings.Contains(err.Error(), "did not finish") || !strings.Contains(err.Error(), "--drop") {
		t.Errorf("ReadInfo error should say the load did not finish and name --drop: %v", err)
	}
	if _, err := Load(ctxT(t, time.Minute), connect, LoadOptions{Scale: 1, Workers: 1}, nil); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("load over a half-loaded database without Drop: %v, want a usage error", err)
	}
	if _, err := Load(ctxT(t, time.Minute), connect, LoadOptions{Scale: 1, Workers: 2, Drop: true}, nil); err != nil {
		t.Fatalf("reload with Drop: %v", err)
	}
	if s := metaStatus(t, conn); s != "complete" {
		t.Errorf("meta status after reload %q", s)
	}
	if info, err := ReadInfo(context.Background(), conn); err != nil || info.Scale != 1 {
		t.Errorf("ReadInfo after reload: %+v, %v", info, err)
	}
}

func TestLoadOptionsValidate(t *testing.T) {
	for _, o := range []LoadOptions{
		{Scale: 0, Workers: 1},
		{Scale: 1, Workers: 0},
		{Scale: 1, Workers: 1, Fillfactor: 9},
		{Scale: 1, Workers: 1, Fillfactor: 101},
		{Scale: 1, Workers: 1, Partitions: -1},
		{Scale: 1, Workers: 1, Partitions: 2, Method: "list"},
	} {
		o := o
		if err := o.Validate(); errs.KindOf(err) != errs.KindUsage || errs.HintOf(err) == "" {
			t.Errorf("%+v: %v, want a usage error with a hint", o, err)
		}
	}
	o := LoadOptions{Scale: 1, Workers: 1}
	if err := o.Validate(); err != nil || o.Fillfactor != 100 || o.Method != "range" {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

// TestCheckAfterSimpleUpdate: pgbench's simple-update script updates the
// account and inserts history, but leaves tellers and branches alone. A
// database after a correct simple-update run is consistent, so the check
// must pass (sum(abalance) = sum(history.delta) still holds; tellers and
// branches keep their own equality).
func TestCheckAfterSimpleUpdate(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 1, Workers: 2}, nil); err != nil {
		t.Fatalf("Load: %v", err)
	}
	before, err := HistoryCount(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	tpcbTx(t, conn, 11, 2, 1, 300) // one tpcb-like transaction first
	for i := 0; i < 3; i++ {       // then simple-update transactions
		aid, delta := 100+i, 40*i-70
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "update pgbench_accounts set abalance = abalance + $1 where aid = $2", delta, aid); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "insert into pgbench_history (tid, bid, aid, delta, mtime) values ($1, $2, $3, $4, now())", 1+i, 1, aid, delta)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: before, Committed: 4}); err != nil {
		t.Fatal(err)
	}
	rep := mustCheck(t, conn)
	if !rep.Passed {
		t.Errorf("check after simple-update transactions fails a consistent database: %+v", rep)
	}
	// ... and still catches a teller changed alone.
	exec(t, conn, "update pgbench_tellers set tbalance = tbalance + 1 where tid = 1")
	if rep := mustCheck(t, conn); rep.Passed {
		t.Errorf("a teller changed alone must fail the balance check: %+v", rep)
	}
}
