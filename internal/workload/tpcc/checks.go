package tpcc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
)

// The twelve consistency conditions of clause 3.3.2. Each is a query that
// returns one text key per violation (a warehouse, district, order, order
// line or customer), so a failure names where it is. All money columns are
// numeric and compared exactly in SQL, never as floats.

// Condition tiers.
const (
	TierDefault   = "default"   // cheap enough after every run: 1-5, 7, 8, 9
	TierExpensive = "expensive" // 6, 10, 12: per-order and per-customer joins over order_line
	TierLoadOnly  = "load-only" // 11: holds right after a load, broken by the first Delivery
)

// ConditionInfo describes one condition.
type ConditionInfo struct {
	Number int    `json:"number"`
	Clause string `json:"clause"`
	Name   string `json:"name"`
	Tier   string `json:"tier"`
	Unit   string `json:"unit"` // what a violation counts
	sql    string
}

var conditions = []ConditionInfo{
	{Number: 1, Name: "W_YTD = sum(D_YTD) per warehouse", Tier: TierDefault, Unit: "warehouses", sql: `
select format('w=%s', w.w_id) as k
from warehouse w
left join (select d_w_id, sum(d_ytd) as s from district group by d_w_id) d on d.d_w_id = w.w_id
where w.w_ytd is distinct from d.s`},
	// max(O_ID) and max(NO_O_ID) per district from the primary keys (one
	// index probe each). The NEW-ORDER part applies only to districts that
	// have NEW-ORDER rows.
	{Number: 2, Name: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district", Tier: TierDefault, Unit: "districts", sql: `
select format('w=%s d=%s', d.d_w_id, d.d_id) as k
from district d,
  lateral (select max(o_id) as m from orders where o_w_id = d.d_w_id and o_d_id = d.d_id) o,
  lateral (select max(no_o_id) as m from new_order where no_w_id = d.d_w_id and no_d_id = d.d_id) n
where d.d_next_o_id - 1 is distinct from o.m or (n.m is not null and n.m <> d.d_next_o_id - 1)`},
	{Number: 3, Name: "max(NO_O_ID) - min(NO_O_ID) + 1 = NEW-ORDER rows per district", Tier: TierDefault, Unit: "districts", sql: `
select format('w=%s d=%s', no_w_id, no_d_id) as k
from new_order
group by no_w_id, no_d_id
having max(no_o_id) - min(no_o_id) + 1 <> count(*)`},
	{Number: 4, Name: "sum(O_OL_CNT) = ORDER-LINE rows per district", Tier: TierDefault, Unit: "districts", sql: `
select format('w=%s d=%s', coalesce(o.w, l.w), coalesce(o.d, l.d)) as k
from (select o_w_id as w, o_d_id as d, sum(o_ol_cnt) as s from orders group by 1, 2) o
full join (select ol_w_id as w, ol_d_id as d, count(*) as c from order_line group by 1, 2) l
  on l.w = o.w and l.d = o.d
where o.s is distinct from l.c`},
	{Number: 5, Name: "O_CARRIER_ID is null iff a NEW-ORDER row exists", Tier: TierDefault, Unit: "orders", sql: `
select format('w=%s d=%s o=%s', coalesce(o.o_w_id, n.no_w_id), coalesce(o.o_d_id, n.no_d_id), coalesce(o.o_id, n.no_o_id)) as k
from orders o
full join new_order n on n.no_w_id = o.o_w_id and n.no_d_id = o.o_d_id and n.no_o_id = o.o_id
where o.o_id is null or (o.o_carrier_id is null) <> (n.no_o_id is not null)`},
	{Number: 6, Name: "O_OL_CNT = ORDER-LINE rows per order", Tier: TierExpensive, Unit: "orders", sql: `
select format('w=%s d=%s o=%s', coalesce(o.o_w_id, l.w), coalesce(o.o_d_id, l.d), coalesce(o.o_id, l.o)) as k
from orders o
full join (select ol_w_id as w, ol_d_id as d, ol_o_id as o, count(*) as c from order_line group by 1, 2, 3) l
  on l.w = o.o_w_id and l.d = o.o_d_id and l.o = o.o_id
where o.o_ol_cnt is distinct from l.c`},
	{Number: 7, Name: "OL_DELIVERY_D is null iff O_CARRIER_ID is null", Tier: TierDefault, Unit: "order lines", sql: `
select format('w=%s d=%s o=%s ol=%s', ol.ol_w_id, ol.ol_d_id, ol.ol_o_id, ol.ol_number) as k
from order_line ol
join orders o on o.o_w_id = ol.ol_w_id and o.o_d_id = ol.ol_d_id and o.o_id = ol.ol_o_id
where (ol.ol_delivery_d is null) <> (o.o_carrier_id is null)`},
	{Number: 8, Name: "W_YTD = sum(H_AMOUNT) per warehouse", Tier: TierDefault, Unit: "warehouses", sql: `
select format('w=%s', w.w_id) as k
from warehouse w
left join (select h_w_id, sum(h_amount) as s from history group by h_w_id) h on h.h_w_id = w.w_id
where w.w_ytd is distinct from h.s`},
	{Number: 9, Name: "D_YTD = sum(H_AMOUNT) per district", Tier: TierDefault, Unit: "districts", sql: `
select format('w=%s d=%s', d.d_w_id, d.d_id) as k
from district d
left join (select h_w_id, h_d_id, sum(h_amount) as s from history group by h_w_id, h_d_id) h
  on h.h_w_id = d.d_w_id and h.h_d_id = d.d_id
where d.d_ytd is distinct from h.s`},
	{Number: 10, Name: "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) per customer", Tier: TierExpensive, Unit: "customers", sql: `
select format('w=%s d=%s c=%s', c.c_w_id, c.c_d_id, c.c_id) as k
from customer c
left join (select o.o_w_id as w, o.o_d_id as d, o.o_c_id as c, sum(ol.ol_amount) as s
           from orders o
           join order_line ol on ol.ol_w_id = o.o_w_id and ol.ol_d_id = o.o_d_id and ol.ol_o_id = o.o_id
           where ol.ol_delivery_d is not null
           group by 1, 2, 3) a on a.w = c.c_w_id and a.d = c.c_d_id and a.c = c.c_id
left join (select h_c_w_id as w, h_c_d_id as d, h_c_id as c, sum(h_amount) as s
           from history group by 1, 2, 3) h on h.w = c.c_w_id and h.d = c.c_d_id and h.c = c.c_id
where c.c_balance is distinct from coalesce(a.s, 0) - coalesce(h.s, 0)`},
	{Number: 11, Name: "ORDER rows - NEW-ORDER rows = 2100 per district", Tier: TierLoadOnly, Unit: "districts", sql: `
select format('w=%s d=%s', d.d_w_id, d.d_id) as k
from district d
left join (select o_w_id as w, o_d_id as d, count(*) as n from orders group by 1, 2) o on o.w = d.d_w_id and o.d = d.d_id
left join (select no_w_id as w, no_d_id as d, count(*) as n from new_order group by 1, 2) n on n.w = d.d_w_id and n.d = d.d_id
where coalesce(o.n, 0) - coalesce(n.n, 0) <> ` + fmt.Sprint(FirstUndelivered-1)},
	{Number: 12, Name: "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) per customer", Tier: TierExpensive, Unit: "customers", sql: `
select format('w=%s d=%s c=%s', c.c_w_id, c.c_d_id, c.c_id) as k
from customer c
left join (select o.o_w_id as w, o.o_d_id as d, o.o_c_id as c, sum(ol.ol_amount) as s
           from orders o
           join order_line ol on ol.ol_w_id = o.o_w_id and ol.ol_d_id = o.o_d_id and ol.ol_o_id = o.o_id
           where ol.ol_delivery_d is not null
           group by 1, 2, 3) a on a.w = c.c_w_id and a.d = c.c_d_id and a.c = c.c_id
where c.c_balance + c.c_ytd_payment is distinct from coalesce(a.s, 0)`},
}

func init() {
	for i := range conditions {
		conditions[i].Clause = fmt.Sprintf("3.3.2.%d", conditions[i].Number)
	}
}

// Conditions lists the twelve conditions in order.
func Conditions() []ConditionInfo { return append([]ConditionInfo(nil), conditions...) }

// MaxExamples is how many violating keys a condition reports.
const MaxExamples = 10

// CheckOptions selects the conditions. Conditions, when given, is the exact
// list; otherwise the default tier (1-5, 7, 8, 9), plus 6, 10 and 12 with
// Expensive, or all twelve with All (11 only holds right after a load).
type CheckOptions struct {
	Conditions []int
	Expensive  bool
	All        bool
}

// Selected returns the condition numbers o selects, in order.
func (o CheckOptions) Selected() ([]int, error) {
	if len(o.Conditions) > 0 {
		seen := map[int]bool{}
		var out []int
		for _, n := range o.Conditions {
			if n < 1 || n > len(conditions) {
				return nil, errs.Usage("conditions are numbered 1 to 12 (clause 3.3.2.1 to 3.3.2.12)", "no consistency condition %d", n)
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		sort.Ints(out)
		return out, nil
	}
	var out []int
	for _, c := range conditions {
		switch {
		case o.All,
			c.Tier == TierDefault,
			c.Tier == TierExpensive && o.Expensive:
			out = append(out, c.Number)
		}
	}
	return out, nil
}

// ConditionResult is one condition's outcome.
type ConditionResult struct {
	Number     int      `json:"number"`
	Clause     string   `json:"clause"`
	Name       string   `json:"name"`
	Tier       string   `json:"tier"`
	Passed     bool     `json:"passed"`
	Violations int64    `json:"violations"`
	Unit       string   `json:"unit"`
	Examples   []string `json:"examples,omitempty"` // up to MaxExamples violating keys
	Error      string   `json:"error,omitempty"`    // the query failed (the condition counts as failed)
	Seconds    float64  `json:"seconds"`
}

// CheckReport is the outcome of Check; it is stored with runs.
type CheckReport struct {
	Passed     bool              `json:"passed"`
	Conditions []ConditionResult `json:"conditions"`
	Seconds    float64           `json:"seconds"`
}

// Failed lists the numbers of the conditions that did not pass.
func (r CheckReport) Failed() []int {
	var out []int
	for _, c := range r.Conditions {
		if !c.Passed {
			out = append(out, c.Number)
		}
	}
	return out
}

// Check evaluates the selected conditions in one REPEATABLE READ READ ONLY
// transaction, so they see one snapshot (consistent with each other even
// while a workload runs). Every selected condition is evaluated: a violation
// or a failing query does not stop the others. The error is for what
// prevents checking at all (no connection, no tables, cancelled).
func Check(ctx context.Context, conn *pgx.Conn, o CheckOptions) (CheckReport, error) {
	nums, err := o.Selected()
	if err != nil {
		return CheckReport{}, err
	}
	start := time.Now()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return CheckReport{}, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	rep, err := checkIn(ctx, tx, nums)
	if err != nil {
		return rep, err
	}
	if err := tx.Commit(ctx); err != nil {
		return rep, err
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// checkIn evaluates conditions nums inside tx.
func checkIn(ctx context.Context, tx pgx.Tx, nums []int) (CheckReport, error) {
	start := time.Now()
	have, err := existingRelations(ctx, tx, Tables)
	if err != nil {
		return CheckReport{}, err
	}
	for _, t := range Tables {
		if !have[t] {
			return CheckReport{}, errs.Usage(loadHint, "cannot check: table %s does not exist", t)
		}
	}
	rep := CheckReport{Passed: true}
	for _, n := range nums {
		c := conditions[n-1]
		r := ConditionResult{Number: c.Number, Clause: c.Clause, Name: c.Name, Tier: c.Tier, Unit: c.Unit}
		t0 := time.Now()
		r.Violations, r.Examples, err = evalCondition(ctx, tx, c.sql)
		r.Seconds = time.Since(t0).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			r.Error = err.Error()
		}
		r.Passed = err == nil && r.Violations == 0
		rep.Passed = rep.Passed && r.Passed
		rep.Conditions = append(rep.Conditions, r)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// evalCondition counts the violations of one condition and collects the
// first keys, in a savepoint so a failing query leaves the snapshot usable.
func evalCondition(ctx context.Context, tx pgx.Tx, sql string) (int64, []string, error) {
	sub, err := tx.Begin(ctx)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	var keys []string
	err = sub.QueryRow(ctx, `with v as materialized (`+sql+`)
select (select count(*) from v),
       coalesce((select array_agg(k order by k) from (select k from v order by k limit `+fmt.Sprint(MaxExamples)+`) e), '{}')`).Scan(&n, &keys)
	if err != nil {
		_ = sub.Rollback(ctx)
		var pe interface{ SQLState() string }
		if errors.As(err, &pe) {
			return 0, nil, fmt.Errorf("query failed: %w", err)
		}
		return 0, nil, err
	}
	if err := sub.Commit(ctx); err != nil {
		return 0, nil, err
	}
	if len(keys) == 0 {
		keys = nil
	}
	return n, keys, nil
}
