package tpch

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

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

// An interrupted load is never used, is resumed by the same command
// (keeping the finished tables), and is refused with a hint by another.
func TestInterruptedLoadResumes(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	o := LoadOptions{Scale: 0.01, Workers: 1}
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	var once atomic.Bool
	_, err := Load(ctx, connect, o, func(p LoadProgress) {
		// Stop when the first table (lineitem) is committed.
		if len(p.Done) > 0 && once.CompareAndSwap(false, true) {
			cancel()
		}
	})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("the load was not interrupted: %v", err)
	}
	m, ok, err := readMeta(ctxT(t, time.Minute), conn)
	if err != nil || !ok {
		t.Fatalf("meta after the interrupt: %v %v", ok, err)
	}
	if m.Status != statusLoading || len(m.TablesDone) == 0 || len(m.TablesDone) == 8 {
		t.Fatalf("after the interrupt: status %s, tables done %v; want loading with some tables done", m.Status, m.TablesDone)
	}
	if _, err := Check(ctxT(t, time.Minute), conn); !errors.Is(err, errNotLoaded) {
		t.Fatalf("check of an interrupted load: %v, want it refused", err)
	}
	other := o
	other.Scale = 0.02
	_, err = Load(ctxT(t, time.Minute), connect, other, nil)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--scale 0.01") {
		t.Fatalf("load of another scale over an interrupted one: %v (hint %q), want a usage error naming the resume command", err, errs.HintOf(err))
	}
	st, err := Load(ctxT(t, 2*time.Minute), connect, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resumed) != len(m.TablesDone) {
		t.Errorf("resumed load kept %v, want %v", st.Resumed, m.TablesDone)
	}
	rep, err := Check(ctxT(t, time.Minute), conn)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed {
		t.Fatalf("check after the resumed load: %+v", rep.Conditions)
	}
	_, err = Load(ctxT(t, time.Minute), connect, o, nil)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--drop") {
		t.Fatalf("load over a complete load: %v, want a usage error pointing to --drop", err)
	}
}

// The check finds an order whose total is not the sum of its lineitems,
// and a missing row.
func TestCheckFindsInconsistencies(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 0.01, Workers: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "update lineitem set l_tax = l_tax + 0.01 where l_orderkey = 7 and l_linenumber = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "delete from customer where c_custkey = 5"); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, c := range rep.Conditions {
		if !c.Passed {
			failed[c.Name] = c.Detail
		}
	}
	if rep.Passed || len(failed) != 2 || !strings.Contains(failed["order totals"], "o_orderkey 7") || !strings.Contains(failed["rows customer"], "1499 rows, expected 1500") {
		t.Fatalf("failed conditions %v, want order totals (o_orderkey 7) and rows customer", failed)
	}
}

func TestPlanShape(t *testing.T) {
	a := `Sort  (cost=10.0..11.0 rows=5 width=8) (actual time=0.1..0.2 rows=5 loops=1)
  Sort Key: x
  Buffers: shared hit=3
  ->  Hash Join  (cost=1..9 rows=5 width=8) (actual time=0.05..0.1 rows=5 loops=1)
        Hash Cond: (a.k = b.k)
        ->  Seq Scan on a  (cost=0..4 rows=100 width=4) (actual time=0.01..0.02 rows=100 loops=1)
        ->  Hash  (cost=1..1 rows=5 width=4) (actual time=0.01..0.01 rows=5 loops=1)
              ->  Index Scan using b_pkey on b  (cost=0..1 rows=5 width=4) (actual time=0.01..0.01 rows=5 loops=1)
Planning Time: 0.1 ms
Execution Time: 0.3 ms`
	b := strings.NewReplacer("10.0..11.0", "99..100", "actual time=0.05..0.1", "actual time=5..9", "hit=3", "hit=3 read=9").Replace(a)
	if PlanShape(a) != PlanShape(b) {
		t.Errorf("costs and times changed the shape:\n%s\n---\n%s", PlanShape(a), PlanShape(b))
	}
	c := strings.Replace(a, "Hash Join", "Merge Join", 1)
	if PlanShape(a) == PlanShape(c) {
		t.Error("a different join has the same shape")
	}
	want := "0:Sort\n2:Hash Join\n8:Seq Scan on a\n8:Hash\n14:Index Scan using b_pkey on b"
	if got := PlanShape(a); got != want {
		t.Errorf("shape:\n%s\nwant\n%s", got, want)
	}
}

// With foreign keys the refresh functions still work (RF1 inserts orders
// before their lineitems, RF2 deletes lineitems before their orders), and
// the check passes after them.
func TestForeignKeysAndRefresh(t *testing.T) {
	t.Parallel()
	connect, conn := testDB(t)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 0.01, Workers: 2, ForeignKeys: true}, nil); err != nil {
		t.Fatal(err)
	}
	var fks int
	if err := conn.QueryRow(ctx, "select count(*) from pg_constraint where contype = 'f' and conname like '%_fk'").Scan(&fks); err != nil {
		t.Fatal(err)
	}
	if fks != len(foreignKeyDDL) {
		t.Fatalf("%d foreign keys, want %d", fks, len(foreignKeyDDL))
	}
	gen := dbgen.New(0.01, dbgen.COPY)
	for range 2 {
		r1, err := rf1(ctx, conn, gen)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := rf2(ctx, conn, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if r1.Orders != 10 || r2.Orders != 10 || r1.Lines == 0 || r2.Lines == 0 || r1.Set != r2.Set {
			t.Fatalf("RF1 %+v, RF2 %+v", r1, r2)
		}
	}
	rep, err := Check(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed {
		t.Fatalf("check after two refresh pairs: %+v", rep.Conditions)
	}
	m, _, err := readMeta(ctx, conn)
	if err != nil || m.NextUpdate != 3 || m.NextDelete != 3 || !m.Refreshed() {
		t.Fatalf("meta after two pairs: %+v %v", m, err)
	}
}
