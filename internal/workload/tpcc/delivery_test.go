package tpcc

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDeliveryWaitsForRolledBackHolder: at serializable, a Delivery that
// meets the oldest orders locked by a concurrent Delivery waits for it, and
// when that one rolls back (as a transaction out of serialization retries
// does), delivers those oldest orders itself: new_order keeps no gap
// (consistency condition 3). With SKIP LOCKED it would have taken the next
// orders and left the rolled-back ones behind them. At read committed the
// second Delivery does not wait: it takes the next undelivered orders.
func TestDeliveryWaitsForRolledBackHolder(t *testing.T) {
	db := loadedDB(t, 1)
	if err := InstallProcs(ctxT(t, time.Minute), testConn(t, db)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, isolation string
		procs, waits    bool
	}{
		{"sql/serializable", "SERIALIZABLE", false, true},
		{"procs/serializable", "SERIALIZABLE", true, true},
		{"procs/repeatable-read", "REPEATABLE READ", true, true},
		{"sql/read-committed", "READ COMMITTED", false, false},
		{"procs/read-committed", "READ COMMITTED", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, check := testConn(t, db), testConn(t, db), testConn(t, db)
			oldest := func() int64 {
				return qInt(t, check, "select min(no_o_id) from new_order where no_w_id = 1 and no_d_id = 1")
			}
			before := oldest()
			sql, args := "SELECT tpcc_delivery($1, $2)", []any{1, 1}
			if !tc.procs {
				st := newStmt("x", deliverySQL(tc.isolation))
				sql, args = st.sql, make([]any, len(st.params))
				for i := range args {
					args[i] = 1 // warehouse 1, carrier 1
				}
			}
			deliver := func(c *pgx.Conn) (int64, error) {
				var n int64
				err := c.QueryRow(context.Background(), sql, args...).Scan(&n)
				return n, err
			}
			ctx := ctxT(t, time.Minute)
			if _, err := a.Exec(ctx, "BEGIN ISOLATION LEVEL "+tc.isolation); err != nil {
				t.Fatal(err)
			}
			if n, err := deliver(a); err != nil || n != DistrictsPerWarehouse {
				t.Fatalf("first Delivery: %d districts, %v", n, err)
			}
			if _, err := b.Exec(ctx, "BEGIN ISOLATION LEVEL "+tc.isolation); err != nil {
				t.Fatal(err)
			}
			type result struct {
				n   int64
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := deliver(b)
				done <- result{n, err}
			}()
			var r result
			select {
			case r = <-done:
				if tc.waits {
					t.Fatalf("second Delivery did not wait for the first: %d districts, %v", r.n, r.err)
				}
			case <-time.After(300 * time.Millisecond):
				if !tc.waits {
					t.Fatal("second Delivery waited for the first at read committed")
				}
			}
			if _, err := a.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			if tc.waits {
				r = <-done
			}
			if r.err != nil || r.n != DistrictsPerWarehouse {
				t.Fatalf("second Delivery: %d districts, %v", r.n, r.err)
			}
			if _, err := b.Exec(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			after := oldest()
			want := before + 1 // the rolled-back one's order, delivered by the second
			if !tc.waits {
				want = before // the second took the next order; the first's stays
			}
			if after != want {
				t.Errorf("oldest undelivered order of district 1: %d, want %d (was %d)", after, want, before)
			}
			if tc.waits {
				gaps := qInt(t, check, `select count(*) from (select no_d_id from new_order where no_w_id = 1
					group by no_d_id having max(no_o_id) - min(no_o_id) + 1 <> count(*)) g`)
				if gaps != 0 {
					t.Errorf("%d districts with a gap in new_order", gaps)
				}
			}
		})
	}
}
