package tpcc

import (
	"context"
	"testing"
	"time"

	pgt "github.com/tunebench/tunebench/internal/target/pg"

	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/workload"
)

// TestSerializableStress runs 16 virtual users on one warehouse at
// serializable: conflicts are frequent, retried, and whatever still fails is
// counted by SQLSTATE; no worker stops, and the database stays consistent
// with the driver's count of committed New-Orders.
func TestSerializableStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	for _, mode := range []string{ModeSQL, ModeProcs} {
		t.Run(mode, func(t *testing.T) {
			db := loadedDB(t, 1)
			conn := testConn(t, db)
			if mode == ModeProcs {
				if err := InstallProcs(ctxT(t, time.Minute), conn); err != nil {
					t.Fatal(err)
				}
			}
			before := qInt(t, conn, "select sum(d_next_o_id) from district")
			o := runOpts(1, mode)
			o.VUsers, o.Isolation, o.MaxTries = 16, "serializable", 3
			a := NewAudit()
			connect := testConnector(t, db)
			res, err := run.Execute(ctxT(t, time.Minute), run.Config{Workers: o.VUsers, Duration: 3 * time.Second, Seed: 1},
				func(ctx context.Context, id int) (workload.Worker, error) {
					return NewWorker(ctx, pgt.Sessions{Connect: pgt.Connector(connect)}, o, id, a)
				})
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			var errors int64
			for code, n := range res.SQLStates {
				errors += n
				if code == run.NoSQLState {
					t.Errorf("%d errors without a SQLSTATE", n)
				}
			}
			if errors != res.Errors {
				t.Errorf("errors by SQLSTATE sum to %d, errors %d", errors, res.Errors)
			}
			t.Logf("%s: committed %d, totals %v, by SQLSTATE %v", mode, res.Committed, res.Totals, res.SQLStates)
			if res.Totals[workload.ClassRetriedOK] == 0 {
				t.Error("no transaction was retried: the stress did not conflict")
			}
			for i, s := range a.shards {
				var n int64
				for _, c := range []counter{cNewOrders, cPayments, cOrderStatus, cDeliveries, cStockLevels} {
					n += s.c[c].Load()
				}
				if n == 0 {
					t.Errorf("worker %d completed nothing", i)
				}
			}
			no := res.AllByOp[OpNewOrder]
			if grown := qInt(t, conn, "select sum(d_next_o_id) from district") - before; grown != no.Committed || no.Ambiguous != 0 {
				t.Errorf("sum(d_next_o_id) grew by %d; committed New-Orders %d (ambiguous %d)", grown, no.Committed, no.Ambiguous)
			}
			rep, err := Check(ctxT(t, time.Minute), conn, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Passed {
				t.Errorf("conditions failed: %v", rep.Failed())
			}
		})
	}
}
