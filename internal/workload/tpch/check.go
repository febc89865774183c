package tpch

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// Condition is one checked condition.
type Condition struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// CheckReport is the outcome of the checks.
type CheckReport struct {
	Passed     bool        `json:"passed"`
	Conditions []Condition `json:"conditions"`
}

func (r *CheckReport) add(name string, ok bool, format string, a ...any) {
	r.Conditions = append(r.Conditions, Condition{Name: name, Passed: ok, Detail: fmt.Sprintf(format, a...)})
	if !ok {
		r.Passed = false
	}
}

// errNotLoaded says the database holds no complete load.
var errNotLoaded = errors.New("no complete TPC-H-like load")

// Check runs the conditions on the loaded data, in one repeatable-read
// snapshot: the row count of every table for the scale (orders and
// lineitem as the refresh functions left them), unique keys, and the order
// totals of clause 3.3.2.1: every O_TOTALPRICE equals the sum over its
// lineitems of trunc(trunc(L_EXTENDEDPRICE·(1 − L_DISCOUNT), 2)·(1 +
// L_TAX), 2), and every order has lineitems.
func Check(ctx context.Context, conn *pgx.Conn) (*CheckReport, error) {
	m, ok, err := readMeta(ctx, conn)
	if err != nil {
		return nil, err
	}
	if !ok || m.Status != statusComplete {
		return nil, errNotLoaded
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	rep := &CheckReport{Passed: true}
	if err := tx.QueryRow(ctx, "select orders_rows, lineitem_rows, next_update, next_delete from "+MetaTable).
		Scan(&m.OrdersRows, &m.LineitemRows, &m.NextUpdate, &m.NextDelete); err != nil {
		return nil, err
	}
	for _, t := range dbgen.Tables() {
		var got int64
		if err := tx.QueryRow(ctx, "select count(*) from "+t.String()).Scan(&got); err != nil {
			return nil, err
		}
		rowsCondition(rep, m, t, got)
	}
	for _, k := range uniqueKeys {
		var pk bool
		if err := tx.QueryRow(ctx, "select exists (select 1 from pg_constraint where conrelid = $1::regclass and contype = 'p' and convalidated)", k.table).Scan(&pk); err != nil {
			return nil, err
		}
		if pk {
			rep.add("unique "+k.table, true, "(%s) is the primary key", k.key)
			continue
		}
		var dups int64
		if err := tx.QueryRow(ctx, fmt.Sprintf("select count(*) from (select 1 from %s group by %s having count(*) > 1) d", k.table, k.key)).Scan(&dups); err != nil {
			return nil, err
		}
		rep.add("unique "+k.table, dups == 0, "no primary key; %d duplicated (%s)", dups, k.key)
	}
	var bad, empty int64
	var example *int64
	err = tx.QueryRow(ctx, `with l as (
	select l_orderkey, sum(trunc(trunc(l_extendedprice * (1 - l_discount), 2) * (1 + l_tax), 2)) as total
	from lineitem group by l_orderkey)
select count(*) filter (where l.total is null),
	count(*) filter (where l.total <> o.o_totalprice),
	min(o.o_orderkey) filter (where l.total is null or l.total <> o.o_totalprice)
from orders o left join l on l.l_orderkey = o.o_orderkey`).Scan(&empty, &bad, &example)
	if err != nil {
		return nil, err
	}
	totalsCondition(rep, bad, empty, example)
	var orphans int64
	if err := tx.QueryRow(ctx, "select count(*) from lineitem l where not exists (select 1 from orders o where o.o_orderkey = l.l_orderkey)").Scan(&orphans); err != nil {
		return nil, err
	}
	rep.add("lineitem orders", orphans == 0, "%d lineitems without their order", orphans)
	return rep, nil
}

// rowsCondition: table t has got rows, as many as the scale has (orders
// and lineitem: as many as the refresh functions left).
func rowsCondition(rep *CheckReport, m meta, t dbgen.Table, got int64) {
	want := dbgen.Units(t, m.Scale) * int64(dbgen.RowsPerUnit(t))
	what := "for the scale"
	switch t {
	case dbgen.Orders:
		want, what = m.OrdersRows, fmt.Sprintf("after %d RF1 and %d RF2", m.NextUpdate-1, m.NextDelete-1)
	case dbgen.Lineitem:
		want, what = m.LineitemRows, fmt.Sprintf("after %d RF1 and %d RF2", m.NextUpdate-1, m.NextDelete-1)
	}
	rep.add("rows "+t.String(), got == want, "%d rows, expected %d %s", got, want, what)
}

// uniqueKeys are the tables' keys.
var uniqueKeys = []struct{ table, key string }{
	{"region", "r_regionkey"}, {"nation", "n_nationkey"}, {"supplier", "s_suppkey"}, {"part", "p_partkey"},
	{"partsupp", "ps_partkey, ps_suppkey"}, {"customer", "c_custkey"}, {"orders", "o_orderkey"},
	{"lineitem", "l_orderkey, l_linenumber"},
}

// totalsCondition: no order's total differs from its lineitems' (bad),
// and none has no lineitems (empty); example is the first such order.
func totalsCondition(rep *CheckReport, bad, empty int64, example *int64) {
	detail := "every order's total is the sum of its lineitems (clause 3.3.2.1)"
	if bad+empty > 0 {
		detail = fmt.Sprintf("%d orders whose total is not the sum of their lineitems, %d without lineitems (first: o_orderkey %d)", bad, empty, *example)
	}
	rep.add("order totals", bad+empty == 0, "%s", detail)
}
