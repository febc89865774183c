package tpch

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// RefreshRun is one execution of a refresh function.
type RefreshRun struct {
	Function string  `json:"function"` // RF1 or RF2
	Set      int64   `json:"set"`      // the update set
	Stream   int     `json:"stream"`   // 0: the power test; -1: the throughput test's refresh stream
	Seconds  float64 `json:"seconds"`
	Orders   int64   `json:"orders"`
	Lines    int64   `json:"lines"`
	Error    string  `json:"error,omitempty"`
}

// rf1 is the New Sales refresh function (clause 2.6): it inserts the next
// update set's orders and their lineitems, as dbgen -U generates them, in
// one transaction, and records the set as inserted.
//
// The rows are generated before the function's time starts (the
// specification allows the data to be staged), for the set that is next
// when it starts; should another session have taken that set meanwhile,
// they are generated again under the lock.
func rf1(ctx context.Context, conn *pgx.Conn, gen *dbgen.Generator) (RefreshRun, error) {
	r := RefreshRun{Function: "RF1"}
	n := dbgen.RefreshOrders(gen.Scale())
	var staged int64
	if err := conn.QueryRow(ctx, "select next_update from "+MetaTable).Scan(&staged); err != nil {
		return r, err
	}
	orders, no := gen.AppendUpdate(nil, dbgen.Orders, staged, 0, n)
	lines, nl := gen.AppendUpdate(nil, dbgen.Lineitem, staged, 0, n)
	t0 := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	// The refresh functions are not queries: --query-timeout does not apply.
	if _, err := tx.Exec(ctx, "set local statement_timeout = 0"); err != nil {
		return r, err
	}
	if err := tx.QueryRow(ctx, "select next_update from "+MetaTable+" for update").Scan(&r.Set); err != nil {
		return r, err
	}
	if r.Set != staged {
		orders, no = gen.AppendUpdate(orders[:0], dbgen.Orders, r.Set, 0, n)
		lines, nl = gen.AppendUpdate(lines[:0], dbgen.Lineitem, r.Set, 0, n)
	}
	for _, c := range []struct {
		t    dbgen.Table
		data []byte
	}{{dbgen.Orders, orders}, {dbgen.Lineitem, lines}} {
		if _, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(c.data), copySQL(c.t, false)); err != nil {
			return r, fmt.Errorf("RF1 set %d, %s: %w", r.Set, c.t, err)
		}
	}
	if _, err := tx.Exec(ctx, "update "+MetaTable+" set next_update = next_update + 1, orders_rows = orders_rows + $1, lineitem_rows = lineitem_rows + $2", no, nl); err != nil {
		return r, err
	}
	if err := tx.Commit(ctx); err != nil {
		return r, err
	}
	r.Orders, r.Lines, r.Seconds = no, nl, time.Since(t0).Seconds()
	return r, nil
}

// rf2 is the Old Sales refresh function (clause 2.7): it deletes the next
// delete set's orders and their lineitems in one transaction.
func rf2(ctx context.Context, conn *pgx.Conn, sf float64) (RefreshRun, error) {
	r := RefreshRun{Function: "RF2"}
	t0 := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if _, err := tx.Exec(ctx, "set local statement_timeout = 0"); err != nil {
		return r, err
	}
	if err := tx.QueryRow(ctx, "select next_delete from "+MetaTable+" for update").Scan(&r.Set); err != nil {
		return r, err
	}
	keys := dbgen.DeleteKeys(sf, r.Set)
	tag, err := tx.Exec(ctx, "delete from lineitem where l_orderkey = any($1)", keys)
	if err != nil {
		return r, fmt.Errorf("RF2 set %d, lineitem: %w", r.Set, err)
	}
	r.Lines = tag.RowsAffected()
	tag, err = tx.Exec(ctx, "delete from orders where o_orderkey = any($1)", keys)
	if err != nil {
		return r, fmt.Errorf("RF2 set %d, orders: %w", r.Set, err)
	}
	r.Orders = tag.RowsAffected()
	if _, err := tx.Exec(ctx, "update "+MetaTable+" set next_delete = next_delete + 1, orders_rows = orders_rows - $1, lineitem_rows = lineitem_rows - $2", r.Orders, r.Lines); err != nil {
		return r, err
	}
	if err := tx.Commit(ctx); err != nil {
		return r, err
	}
	r.Seconds = time.Since(t0).Seconds()
	return r, nil
}
