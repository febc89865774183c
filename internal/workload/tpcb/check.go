package tpcb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Condition is one consistency condition's result.
type Condition struct {
	Name    string  `json:"name"`
	Passed  bool    `json:"passed"`
	Skipped bool    `json:"skipped,omitempty"`
	Detail  string  `json:"detail"`
	Seconds float64 `json:"seconds"`
}

// CheckReport lists every condition; Passed is true when none failed.
type CheckReport struct {
	Passed     bool        `json:"passed"`
	Conditions []Condition `json:"conditions"`
}

// RunRecord is what a run leaves in the meta table so a later `check tpcb`
// can verify the history growth: rows before the run, committed writing
// transactions, and ambiguous commits (whose outcome is unknown).
type RunRecord struct {
	HistoryBefore int64
	Committed     int64
	Ambiguous     int64
	// HistoryAfter and HistoryNode are measured by RecordRun when it
	// records the run: the rows of pgbench_history and its file node then.
	// A check that finds other values knows the table was changed outside
	// tunebench since (pgbench without -n truncates it), and says so
	// instead of failing. Unknown (false) in records made before they were
	// kept.
	HistoryAfter int64
	HistoryNode  int64
	HasAfter     bool
}

// HistoryCount counts pgbench_history rows.
func HistoryCount(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n int64
	err := conn.QueryRow(ctx, "select count(*) from pgbench_history").Scan(&n)
	return n, err
}

// RecordRun stores r in the meta table (tunebench-loaded databases only).
// A nil r clears the record: done before a run starts, so a run whose
// bookkeeping fails afterwards leaves "no run recorded", never stale numbers.
func RecordRun(ctx context.Context, conn *pgx.Conn, r *RunRecord) error {
	if _, err := conn.Exec(ctx, "alter table "+MetaTable+" add column if not exists last_history_before bigint, add column if not exists last_committed bigint, add column if not exists last_ambiguous bigint, "+
		"add column if not exists last_history_after bigint, add column if not exists last_history_node bigint"); err != nil {
		return err
	}
	if r == nil {
		_, err := conn.Exec(ctx, "update "+MetaTable+" set last_history_before = null, last_committed = null, last_ambiguous = null, last_history_after = null, last_history_node = null")
		return err
	}
	_, err := conn.Exec(ctx, "update "+MetaTable+" set last_history_before = $1, last_committed = $2, last_ambiguous = $3, "+
		"last_history_after = (select count(*) from pgbench_history), last_history_node = pg_relation_filenode('pgbench_history')",
		r.HistoryBefore, r.Committed, r.Ambiguous)
	return err
}

func lastRun(ctx context.Context, tx pgx.Tx) (*RunRecord, error) {
	var has bool
	if err := tx.QueryRow(ctx, `select exists (select 1 from information_schema.columns
		where table_name = $1 and column_name = 'last_committed' and table_schema = any(current_schemas(false)))`, MetaTable).Scan(&has); err != nil {
		return nil, err
	}
	if !has {
		return nil, nil
	}
	if cur, err := metaCurrent(ctx, tx); err != nil || !cur {
		return nil, err
	}
	var b, c, a, after, node *int64
	q := "select last_history_before, last_committed, last_ambiguous, null::bigint, null::bigint from " + MetaTable
	var hasAfter bool
	if err := tx.QueryRow(ctx, `select exists (select 1 from information_schema.columns
		where table_name = $1 and column_name = 'last_history_node' and table_schema = any(current_schemas(false)))`, MetaTable).Scan(&hasAfter); err != nil {
		return nil, err
	}
	if hasAfter {
		q = "select last_history_before, last_committed, last_ambiguous, last_history_after, last_history_node from " + MetaTable
	}
	if err := tx.QueryRow(ctx, q).Scan(&b, &c, &a, &after, &node); err != nil {
		return nil, err
	}
	if b == nil || c == nil || a == nil {
		return nil, nil
	}
	r := &RunRecord{HistoryBefore: *b, Committed: *c, Ambiguous: *a}
	if after != nil && node != nil {
		r.HistoryAfter, r.HistoryNode, r.HasAfter = *after, *node, true
	}
	return r, nil
}

// Check verifies, in one repeatable-read snapshot:
//   - balances: sum(abalance) = sum(history.delta) and sum(tbalance) =
//     sum(bbalance), which every committed transaction of every script keeps
//     true (after tpcb-like runs only, all four sums are equal);
//   - history growth: rows added since the last tunebench run started equal its
//     committed writing transactions, up to its ambiguous commits (skipped when
//     no run was recorded).
func Check(ctx context.Context, conn *pgx.Conn) (CheckReport, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return CheckReport{}, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()

	t0 := time.Now()
	var a, t, b, h int64
	var hist int64
	err = tx.QueryRow(ctx, `select
		(select coalesce(sum(abalance), 0) from pgbench_accounts),
		(select coalesce(sum(tbalance), 0) from pgbench_tellers),
		(select coalesce(sum(bbalance), 0) from pgbench_branches),
		(select coalesce(sum(delta), 0) from pgbench_history),
		(select count(*) from pgbench_history)`).Scan(&a, &t, &b, &h, &hist)
	if err != nil {
		return CheckReport{}, fmt.Errorf("balance sums: %w", err)
	}
	lr, err := lastRun(ctx, tx)
	if err != nil {
		return CheckReport{}, fmt.Errorf("reading last run: %w", err)
	}
	var node int64
	if lr != nil && lr.HasAfter {
		if err := tx.QueryRow(ctx, "select pg_relation_filenode('pgbench_history')::bigint").Scan(&node); err != nil {
			return CheckReport{}, err
		}
	}
	return conditions(sums{a, t, b, h, hist}, lr, node, t0), nil
}

// sums are the check's sums of balances and deltas and the history's rows,
// read in one snapshot.
type sums struct{ a, t, b, h, hist int64 }

// conditions judges the sums against the last run's record; node is the
// history table's storage identity now (a file node, a table id), which a
// truncation changes.
func conditions(s sums, lr *RunRecord, node int64, t0 time.Time) CheckReport {
	a, t, b, h, hist := s.a, s.t, s.b, s.h, s.hist
	rep := CheckReport{Passed: true}
	// Was pgbench_history changed outside tunebench since its last run
	// (rewritten: truncated; or rows added or removed)?
	rewritten, changed := false, false
	if lr != nil && lr.HasAfter {
		rewritten = node != lr.HistoryNode
		changed = rewritten || hist != lr.HistoryAfter
	}

	// Every writing script adds delta to one account and logs it in history;
	// tpcb-like also adds it to one teller and one branch (simple-update does
	// not), so accounts match history and tellers match branches.
	bal := Condition{Name: "balances", Passed: a == h && t == b,
		Detail:  fmt.Sprintf("sum(abalance)=%d sum(history.delta)=%d; sum(tbalance)=%d sum(bbalance)=%d", a, h, t, b),
		Seconds: time.Since(t0).Seconds()}
	if a != h && t == b && rewritten {
		bal.Passed, bal.Skipped = true, true
		bal.Detail = fmt.Sprintf("not applicable: pgbench_history was emptied or rewritten outside tunebench since its last run (pgbench without -n truncates it), so sum(history.delta)=%d no longer matches sum(abalance)=%d; "+
			"tellers and branches still agree (%d); load again with --drop to check the accounts", h, a, t)
	}
	rep.Conditions = append(rep.Conditions, bal)

	t0 = time.Now()
	hc := Condition{Name: "history growth"}
	switch {
	case lr == nil:
		hc.Passed, hc.Skipped = true, true
		hc.Detail = "no tunebench run recorded for this database"
	case changed:
		hc.Passed, hc.Skipped = true, true
		hc.Detail = fmt.Sprintf("not applicable: pgbench_history changed outside tunebench since its last run (%d rows now, %d when the run was recorded%s); the next run takes a new baseline",
			hist, lr.HistoryAfter, map[bool]string{true: "; the table was rewritten", false: ""}[rewritten])
	default:
		grown := hist - lr.HistoryBefore
		hc.Passed = grown >= lr.Committed && grown <= lr.Committed+lr.Ambiguous
		hc.Detail = fmt.Sprintf("history grew by %d rows; last run committed %d writing transactions (+ up to %d ambiguous commits)", grown, lr.Committed, lr.Ambiguous)
	}
	hc.Seconds = time.Since(t0).Seconds()
	rep.Conditions = append(rep.Conditions, hc)
	for _, c := range rep.Conditions {
		rep.Passed = rep.Passed && c.Passed
	}
	return rep
}
