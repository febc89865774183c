package tpcc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	pgt "github.com/tunebench/tunebench/internal/target/pg"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/workload"
)

// runOpts are the worker options of the integration tests.
func runOpts(w int, mode string) RunOptions {
	return RunOptions{Warehouses: w, VUsers: 1, Mode: mode, Isolation: "read-committed", MaxTries: 10,
		Constants: Constants{CLast: 200, CCustID: 300, CItemID: 4000}, Seed: 7}
}

// newTestWorker makes a worker on db, installing the functions for procs.
func newTestWorker(t testing.TB, db string, o RunOptions, id int, a *Audit) *Worker {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	if o.Mode == ModeProcs {
		conn := testConn(t, db)
		if err := InstallProcs(ctx, conn); err != nil {
			t.Fatalf("InstallProcs: %v", err)
		}
	}
	w, err := NewWorker(ctx, pgt.Sessions{Connect: pgt.Connector(testConnector(t, db))}, o, id, a)
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// stepN runs n steps and counts the outcomes per op and class; any error
// class fails the test.
func stepN(t testing.TB, w *Worker, n int) map[string]map[workload.OutcomeClass]int {
	t.Helper()
	got := map[string]map[workload.OutcomeClass]int{}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		o, err := w.Step(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if o.Class.IsError() {
			t.Fatalf("step %d (%s): %s %s: %v", i, o.Op, o.Class, o.SQLState, o.Err)
		}
		if got[o.Op] == nil {
			got[o.Op] = map[workload.OutcomeClass]int{}
		}
		got[o.Op][o.Class]++
	}
	return got
}

func TestTransactionsBothModes(t *testing.T) {
	for _, mode := range []string{ModeProcs, ModeSQL} {
		t.Run(mode, func(t *testing.T) {
			db := loadedDB(t, 2)
			conn := testConn(t, db)
			before := qInt(t, conn, "select sum(d_next_o_id) from district")
			a := NewAudit()
			w := newTestWorker(t, db, runOpts(2, mode), 0, a)
			got := stepN(t, w, 20*DeckSize)
			t.Logf("%s: %v", mode, got)
			for _, op := range Ops() {
				if len(got[op]) == 0 {
					t.Errorf("no %s ran", op)
				}
			}
			c := a.Counts()
			grown := qInt(t, conn, "select sum(d_next_o_id) from district") - before
			if want := c.NewOrders - c.Rollbacks; grown != want {
				t.Errorf("sum(d_next_o_id) grew by %d, committed New-Orders %d", grown, want)
			}
			if n := qInt(t, conn, "select count(*) from history") - 2*DistrictsPerWarehouse*CustomersPerDistrict; n != c.Payments {
				t.Errorf("history grew by %d, Payments %d", n, c.Payments)
			}
			rep, err := Check(ctxT(t, time.Minute), conn, CheckOptions{Conditions: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}})
			if err != nil {
				t.Fatal(err)
			}
			for _, cr := range rep.Conditions {
				if !cr.Passed {
					t.Errorf("condition %d (%s): %d %s %v %s", cr.Number, cr.Name, cr.Violations, cr.Unit, cr.Examples, cr.Error)
				}
			}
		})
	}
}

// tableDigest is an order-independent digest of a table's rows without
// their timestamps (kept only as null or not null): a sum of row hashes and
// the row count.
func tableDigest(t testing.TB, conn *pgx.Conn, table string) string {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `select column_name, data_type from information_schema.columns
		where table_name = $1 and table_schema = current_schema() order by ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(typ, "timestamp") {
			name = "(" + name + " is null)"
		}
		cols = append(cols, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var sum, n int64
	q := "select coalesce(sum(hashtext(row(" + strings.Join(cols, ", ") + ")::text)::bigint), 0), count(*) from " + table
	if err := conn.QueryRow(ctx, q).Scan(&sum, &n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return fmt.Sprintf("%d rows, hash %d", n, sum)
}

// TestModesSameEffects drives the same inputs (same seed and worker ids)
// through procs workers on one copy of the database and sql workers on
// another, then compares every table except the timestamps.
func TestModesSameEffects(t *testing.T) {
	const wh = 2
	dbs := map[string]string{ModeProcs: loadedDB(t, wh), ModeSQL: loadedDB(t, wh)}
	counts := map[string]AuditCounts{}
	for _, mode := range []string{ModeProcs, ModeSQL} {
		a := NewAudit()
		o := runOpts(wh, mode)
		o.VUsers = 2
		w0 := newTestWorker(t, dbs[mode], o, 0, a)
		w1 := newTestWorker(t, dbs[mode], o, 1, a)
		for i := 0; i < 8*DeckSize; i++ {
			stepN(t, w0, 1)
			stepN(t, w1, 1)
		}
		counts[mode] = a.Counts()
	}
	if counts[ModeProcs] != counts[ModeSQL] {
		t.Errorf("audit counts differ:\nprocs %+v\nsql   %+v", counts[ModeProcs], counts[ModeSQL])
	}
	if c := counts[ModeSQL]; c.Rollbacks == 0 || c.RemoteLines == 0 || c.RemotePayments == 0 || c.PaymentsByName == 0 || c.OrderStatusByName == 0 {
		t.Errorf("the inputs do not cover every path: %+v", c)
	}
	cp, cs := testConn(t, dbs[ModeProcs]), testConn(t, dbs[ModeSQL])
	for _, table := range Tables {
		dp, ds := tableDigest(t, cp, table), tableDigest(t, cs, table)
		if dp != ds {
			t.Errorf("%s differs: procs %s, sql %s", table, dp, ds)
		}
	}
}

// TestRollbackLeavesNoTrace forces the 1% case (an unused item on the last
// line) and checks that nothing of the New-Order remains.
func TestRollbackLeavesNoTrace(t *testing.T) {
	db := loadedDB(t, 1)
	conn := testConn(t, db)
	state := func() string {
		var s string
		q := `select format('%s %s %s %s %s %s',
			(select sum(d_next_o_id) from district), (select count(*) from orders), (select count(*) from new_order),
			(select count(*) from order_line), (select sum(s_ytd) from stock), (select sum(s_order_cnt) from stock))`
		if err := conn.QueryRow(context.Background(), q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, mode := range []string{ModeProcs, ModeSQL} {
		t.Run(mode, func(t *testing.T) {
			w := newTestWorker(t, db, runOpts(1, mode), 0, nil)
			before := state()
			for i := 0; i < 3; i++ {
				w.draw(txNewOrder)
				in := &w.no
				in.items[in.n-1] = UnusedItemID // the largest number: the lines stay sorted
				in.rollback = true
				abort, err, _ := w.attempt(txNewOrder)
				if err != nil || !abort {
					t.Fatalf("attempt: abort %v, err %v; want a rollback", abort, err)
				}
				if w.sess.InTx() {
					t.Fatalf("still in a transaction after the rollback")
				}
			}
			if after := state(); after != before {
				t.Errorf("the rolled back New-Orders left a trace: before %s, after %s", before, after)
			}
			// And a normal one still commits.
			w.draw(txNewOrder)
			w.no.rollback = false
			if abort, err, _ := w.attempt(txNewOrder); abort || err != nil {
				t.Fatalf("normal New-Order: abort %v, err %v", abort, err)
			}
			if state() == before {
				t.Error("the committed New-Order changed nothing")
			}
		})
	}
}

// TestCustomerByNameMiddle checks the by-name selection of the SQL against
// MiddleIndex over the customers of a few names, ordered by first name.
func TestCustomerByNameMiddle(t *testing.T) {
	db := loadedDB(t, 1)
	conn := testConn(t, db)
	ctx := context.Background()
	sel, params := positional("SELECT " + customerByName("{cw}", "{cd}"))
	if len(params) != 3 || params[0] != pCW || params[1] != pCD || params[2] != pCLast {
		t.Fatalf("parameters %v", params)
	}
	seen := map[int]bool{}
	for num := 0; num < 1000; num += 37 {
		name := LastName(num)
		for d := 1; d <= 2; d++ {
			rows, err := conn.Query(ctx, "select c_id from customer where c_w_id = 1 and c_d_id = $1 and c_last = $2 order by c_first, c_id", d, name)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) == 0 {
				t.Fatalf("no customer named %s in district %d", name, d)
			}
			var got int32
			if err := conn.QueryRow(ctx, sel, 1, d, name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := ids[MiddleIndex(len(ids))]; got != want {
				t.Errorf("%s in district %d (%d customers %v): got %d, want %d", name, d, len(ids), ids, got, want)
			}
			seen[len(ids)] = true
		}
	}
	t.Logf("customers per name seen: %v", seen)
	even, odd := false, false
	for n := range seen {
		even = even || n%2 == 0
		odd = odd || n%2 == 1 && n > 1
	}
	if !even || !odd {
		t.Errorf("want even and odd numbers of customers (> 1) per name among the cases, saw %v", seen)
	}
}

// TestStepAllocations: a Step allocates (almost) nothing in either mode.
func TestStepAllocations(t *testing.T) {
	db := loadedDB(t, 1)
	for _, mode := range []string{ModeProcs, ModeSQL} {
		w := newTestWorker(t, db, runOpts(1, mode), 0, NewAudit())
		stepN(t, w, DeckSize) // warm up: first use of buffers
		ctx := context.Background()
		allocs := testing.AllocsPerRun(4*DeckSize, func() {
			if o, err := w.Step(ctx); err != nil || o.Class.IsError() {
				t.Fatalf("%v %v", o, err)
			}
		})
		t.Logf("%s: %.2f allocations per transaction", mode, allocs)
		if allocs > 1 {
			t.Errorf("%s: %.2f allocations per transaction, want at most 1", mode, allocs)
		}
	}
}

// pgConn is the worker's connection (nil when it has none).
func pgConn(w *Worker) *pgconn.PgConn {
	return w.sess.(interface{ PgConn() *pgconn.PgConn }).PgConn()
}

// TestReconnect kills the worker's backend: the next Step reports a
// connection error (or an ambiguous commit), the one after reconnects.
func TestReconnect(t *testing.T) {
	db := loadedDB(t, 1)
	admin := testConn(t, db)
	for _, mode := range []string{ModeProcs, ModeSQL} {
		w := newTestWorker(t, db, runOpts(1, mode), 0, nil)
		stepN(t, w, 3)
		pid := pgConn(w).PID()
		qExec(t, admin, "select pg_terminate_backend($1)", pid)
		time.Sleep(50 * time.Millisecond)
		o, err := w.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if o.Class != workload.ClassConnError && o.Class != workload.ClassAmbiguousCommit {
			t.Fatalf("%s: after the kill: %s %v", mode, o.Class, o.Err)
		}
		if pgConn(w) != nil {
			t.Fatalf("%s: the dead connection is kept", mode)
		}
		stepN(t, w, 2*DeckSize)
		if pgConn(w).PID() == pid {
			t.Fatalf("%s: same backend after reconnect", mode)
		}
	}
}

// TestPartitionedDatabase runs every transaction of both modes on a
// database loaded with --partition.
func TestPartitionedDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a database")
	}
	db := emptyDB(t)
	if _, err := Load(ctxT(t, 5*time.Minute), testConnector(t, db), LoadOptions{Warehouses: 2, Workers: 2, Partition: true, Seed: 5}, nil); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{ModeProcs, ModeSQL} {
		o := runOpts(2, mode)
		o.VUsers = 2
		w0, w1 := newTestWorker(t, db, o, 0, nil), newTestWorker(t, db, o, 1, nil)
		for i := 0; i < 2*DeckSize; i++ {
			stepN(t, w0, 1)
			stepN(t, w1, 1)
		}
	}
	rep, err := Check(ctxT(t, time.Minute), testConn(t, db), CheckOptions{Expensive: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed {
		t.Errorf("conditions failed: %v", rep.Failed())
	}
}

// TestStepThink: with --keying-think a Step returns the think time of its
// transaction plus the keying time of the next as Outcome.Think (and never
// sleeps); without, no think time.
func TestStepThink(t *testing.T) {
	db := loadedDB(t, 1)
	o := runOpts(1, ModeSQL)
	o.KeyingThink = true
	w := newTestWorker(t, db, o, 0, nil)
	plain := newTestWorker(t, db, runOpts(1, ModeSQL), 1, nil)
	ctx := context.Background()
	for i := 0; i < DeckSize; i++ {
		next := w.deck.peek()
		start := time.Now()
		out, err := w.Step(ctx)
		if err != nil || out.Class.IsError() {
			t.Fatalf("%v %v", out, err)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("Step took %v: it must not sleep", el)
		}
		done := next
		if lo, hi := keyingTimes[w.deck.peek()], 10*thinkMeans[done]+keyingTimes[w.deck.peek()]; out.Think < lo || out.Think > hi {
			t.Errorf("%s: think %v outside [%v, %v]", out.Op, out.Think, lo, hi)
		}
		if out2, _ := plain.Step(ctx); out2.Think != 0 {
			t.Errorf("think %v without --keying-think", out2.Think)
		}
	}
}
