package tpcc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
)

// tpcc on MariaDB: the same tables, data, transactions and conditions in
// MariaDB's SQL, through the target's admin connections (target.Admin)
// and worker sessions. The load is load_mariadb.go, the procedures
// procs_mariadb.go, the client statements sqlmode_mariadb.go.

// supported refuses a target whose dialect tpcc has no SQL for.
func supported(t target.Target) error {
	switch t.Dialect() {
	case pgt.Dialect, DialectMariaDB:
		return nil
	}
	return errs.Usage("run tpcc on PostgreSQL or MariaDB", "tpcc has no SQL for %s targets", t.Dialect())
}

// mariaSide is MariaDB's side (side.go) on an admin connection.
type mariaSide struct {
	admins target.Admins
	a      target.Admin
	lost   target.LostChecker
}

// retry runs do, again on a new connection while the connection is lost,
// as long as the time since from and the next pause stay within budget.
func (s *mariaSide) retry(ctx context.Context, from time.Time, budget time.Duration, do func() error) error {
	pause := driver.RetryPause
	var dialErr error // why the last new connection could not be made
	for {
		err := do()
		if err == nil || s.lost == nil || !s.lost.ConnLost(err) || time.Since(from)+pause > budget || ctx.Err() != nil {
			if err != nil && dialErr != nil {
				// The old connection's "closed" says less than why no
				// new one could be made (the server is not back).
				return dialErr
			}
			return err
		}
		time.Sleep(pause)
		pause *= 2
		a, aerr := s.admins.Admin(ctx)
		if aerr != nil {
			dialErr = aerr
			continue
		}
		dialErr = nil
		_ = s.a.Close()
		s.a = a
	}
}

func (s *mariaSide) close() { _ = s.a.Close() }

// mariaTables lists which of names exist in the target's database.
func mariaTables(ctx context.Context, a target.Admin, names []string) (map[string]bool, error) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := a.Query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?"+
		strings.Repeat(", ?", len(names)-1)+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// mariaMeta reads the meta row.
func mariaMeta(ctx context.Context, a target.Admin) (Info, error) {
	var info Info
	var loaded *time.Time
	err := a.QueryRow(ctx, `SELECT warehouses, partitions, seed, c_last, c_cust_id, c_item_id, format, status, version, started_at, loaded_at FROM `+MetaTable).
		Scan(&info.Warehouses, &info.Partitions, &info.Seed, &info.Load.CLast, &info.Load.CCustID, &info.Load.CItemID,
			&info.Format, &info.Status, &info.Version, &info.StartedAt, &loaded)
	if errors.Is(err, target.ErrNoRows) {
		return info, errs.Usage("reload with `tunebench load tpcc --warehouses W --drop`", "%s is empty: the tpcc load never got past creating the tables", MetaTable)
	}
	if err != nil {
		return info, fmt.Errorf("reading %s: %w", MetaTable, err)
	}
	if loaded != nil {
		info.LoadedAt = *loaded
	}
	return info, nil
}

func (s *mariaSide) info(ctx context.Context) (Info, error) {
	have, err := mariaTables(ctx, s.a, append(append([]string{}, Tables...), MetaTable))
	if err != nil {
		return Info{}, err
	}
	return judgeLoad(have, func() (Info, error) { return mariaMeta(ctx, s.a) })
}

// mariaCountersSQL: sum(d_next_o_id), the server's Com_commit +
// Com_rollback (HammerDB's TPM on MariaDB: the COMMIT and ROLLBACK
// statements, those inside the procedures included, server-wide: MariaDB
// keeps no count per database), its start time from its uptime (on the
// Unix clock: no time zone in between), and the connection's id (a
// restart ends every connection).
const mariaCountersSQL = `SELECT (SELECT SUM(d_next_o_id) FROM district),
 (SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('COM_COMMIT', 'COM_ROLLBACK')),
 @@timestamp - (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'),
 CONNECTION_ID()`

// mariaCounts names MariaDB's transaction counters in messages.
const mariaCounts = "Com_commit + Com_rollback"

func (s *mariaSide) counters(ctx context.Context, from time.Time, budget time.Duration) dbCounters {
	var c dbCounters
	err := s.retry(ctx, from, budget, func() error {
		c = dbCounters{at: time.Now(), counts: mariaCounts, slack: 2 * time.Second}
		var started float64
		var id int64
		c.err = s.a.QueryRow(ctx, mariaCountersSQL).Scan(&c.nextOID, &c.xacts, &started, &id)
		if c.err == nil {
			c.started = time.Unix(0, int64(started*1e9))
			c.backend = int32(id)
			c.completed = true
		}
		return c.err
	})
	if err != c.err {
		c = dbCounters{at: time.Now(), err: err, counts: mariaCounts}
	}
	return c
}

// lossy: with innodb_flush_log_at_trx_commit other than 1, InnoDB
// acknowledges commits whose redo is not on disk yet.
func (s *mariaSide) lossy(ctx context.Context) string {
	var v string
	if err := s.a.QueryRow(ctx, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").Scan(&v); err != nil || v == "1" {
		return ""
	}
	return "innodb_flush_log_at_trx_commit=" + v
}

// mariaConditions are the consistency conditions of checks.go in
// MariaDB's SQL (no FULL JOIN, no LATERAL, no IS DISTINCT FROM: <=>),
// each a query of the violating keys k.
var mariaConditions = map[int]string{
	1: `SELECT CONCAT('w=', w.w_id) AS k FROM warehouse w
LEFT JOIN (SELECT d_w_id, SUM(d_ytd) AS s FROM district GROUP BY d_w_id) d ON d.d_w_id = w.w_id
WHERE NOT (w.w_ytd <=> d.s)`,
	2: `SELECT CONCAT('w=', d.d_w_id, ' d=', d.d_id) AS k FROM district d
LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS m FROM orders GROUP BY o_w_id, o_d_id) o ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS m FROM new_order GROUP BY no_w_id, no_d_id) n ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
WHERE NOT (d.d_next_o_id - 1 <=> o.m) OR (n.m IS NOT NULL AND n.m <> d.d_next_o_id - 1)`,
	3: `SELECT CONCAT('w=', no_w_id, ' d=', no_d_id) AS k FROM new_order
GROUP BY no_w_id, no_d_id HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)`,
	4: `SELECT CONCAT('w=', k.w, ' d=', k.d) AS k FROM
(SELECT o_w_id AS w, o_d_id AS d FROM orders UNION SELECT ol_w_id, ol_d_id FROM order_line) k
LEFT JOIN (SELECT o_w_id AS w, o_d_id AS d, SUM(o_ol_cnt) AS s FROM orders GROUP BY 1, 2) o ON o.w = k.w AND o.d = k.d
LEFT JOIN (SELECT ol_w_id AS w, ol_d_id AS d, COUNT(*) AS c FROM order_line GROUP BY 1, 2) l ON l.w = k.w AND l.d = k.d
WHERE NOT (o.s <=> l.c)`,
	5: `SELECT CONCAT('w=', o.o_w_id, ' d=', o.o_d_id, ' o=', o.o_id) AS k FROM orders o
LEFT JOIN new_order n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)
UNION ALL
SELECT CONCAT('w=', n.no_w_id, ' d=', n.no_d_id, ' o=', n.no_o_id) FROM new_order n
LEFT JOIN orders o ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
WHERE o.o_id IS NULL`,
	6: `SELECT CONCAT('w=', o.o_w_id, ' d=', o.o_d_id, ' o=', o.o_id) AS k FROM orders o
LEFT JOIN (SELECT ol_w_id AS w, ol_d_id AS d, ol_o_id AS o, COUNT(*) AS c FROM order_line GROUP BY 1, 2, 3) l
  ON l.w = o.o_w_id AND l.d = o.o_d_id AND l.o = o.o_id
WHERE NOT (o.o_ol_cnt <=> l.c)
UNION ALL
SELECT CONCAT('w=', l.ol_w_id, ' d=', l.ol_d_id, ' o=', l.ol_o_id) FROM (SELECT DISTINCT ol_w_id, ol_d_id, ol_o_id FROM order_line) l
LEFT JOIN orders o ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
WHERE o.o_id IS NULL`,
	7: `SELECT CONCAT('w=', ol.ol_w_id, ' d=', ol.ol_d_id, ' o=', ol.ol_o_id, ' ol=', ol.ol_number) AS k FROM order_line ol
JOIN orders o ON o.o_w_id = ol.ol_w_id AND o.o_d_id = ol.ol_d_id AND o.o_id = ol.ol_o_id
WHERE (ol.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)`,
	8: `SELECT CONCAT('w=', w.w_id) AS k FROM warehouse w
LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id) h ON h.h_w_id = w.w_id
WHERE NOT (w.w_ytd <=> h.s)`,
	9: `SELECT CONCAT('w=', d.d_w_id, ' d=', d.d_id) AS k FROM district d
LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h
  ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id
WHERE NOT (d.d_ytd <=> h.s)`,
	10: `SELECT CONCAT('w=', c.c_w_id, ' d=', c.c_d_id, ' c=', c.c_id) AS k FROM customer c
LEFT JOIN (SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS c, SUM(ol.ol_amount) AS s FROM orders o
           JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
           WHERE ol.ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3) a ON a.w = c.c_w_id AND a.d = c.c_d_id AND a.c = c.c_id
LEFT JOIN (SELECT h_c_w_id AS w, h_c_d_id AS d, h_c_id AS c, SUM(h_amount) AS s FROM history GROUP BY 1, 2, 3) h
  ON h.w = c.c_w_id AND h.d = c.c_d_id AND h.c = c.c_id
WHERE NOT (c.c_balance <=> COALESCE(a.s, 0) - COALESCE(h.s, 0))`,
	11: fmt.Sprintf(`SELECT CONCAT('w=', d.d_w_id, ' d=', d.d_id) AS k FROM district d
LEFT JOIN (SELECT o_w_id AS w, o_d_id AS d, COUNT(*) AS n FROM orders GROUP BY 1, 2) o ON o.w = d.d_w_id AND o.d = d.d_id
LEFT JOIN (SELECT no_w_id AS w, no_d_id AS d, COUNT(*) AS n FROM new_order GROUP BY 1, 2) n ON n.w = d.d_w_id AND n.d = d.d_id
WHERE COALESCE(o.n, 0) - COALESCE(n.n, 0) <> %d`, FirstUndelivered-1),
	12: `SELECT CONCAT('w=', c.c_w_id, ' d=', c.c_d_id, ' c=', c.c_id) AS k FROM customer c
LEFT JOIN (SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS c, SUM(ol.ol_amount) AS s FROM orders o
           JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
           WHERE ol.ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3) a ON a.w = c.c_w_id AND a.d = c.c_d_id AND a.c = c.c_id
WHERE NOT (c.c_balance + c.c_ytd_payment <=> COALESCE(a.s, 0))`,
}

// check evaluates the conditions in one consistent snapshot (a read-only
// repeatable-read transaction started WITH CONSISTENT SNAPSHOT).
func (s *mariaSide) check(ctx context.Context, o CheckOptions) (CheckReport, error) {
	nums, err := o.Selected()
	if err != nil {
		return CheckReport{}, err
	}
	start := time.Now()
	have, err := mariaTables(ctx, s.a, Tables)
	if err != nil {
		return CheckReport{}, err
	}
	for _, t := range Tables {
		if !have[t] {
			return CheckReport{}, errs.Usage(loadHint, "cannot check: table %s does not exist", t)
		}
	}
	rep := CheckReport{Passed: true}
	err = s.a.Tx(ctx, target.TxOptions{ReadOnly: true, Snapshot: true}, func(tx target.Admin) error {
		for _, n := range nums {
			c := conditions[n-1]
			r := ConditionResult{Number: c.Number, Clause: c.Clause, Name: c.Name, Tier: c.Tier, Unit: c.Unit}
			t0 := time.Now()
			var qerr error
			r.Violations, r.Examples, qerr = mariaCondition(ctx, tx, mariaConditions[n])
			r.Seconds = time.Since(t0).Seconds()
			if qerr != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if s.lost != nil && s.lost.ConnLost(qerr) {
					return qerr
				}
				r.Error = "query failed: " + qerr.Error()
			}
			r.Passed = qerr == nil && r.Violations == 0
			rep.Passed = rep.Passed && r.Passed
			rep.Conditions = append(rep.Conditions, r)
		}
		return nil
	})
	rep.Seconds = time.Since(start).Seconds()
	return rep, err
}

// mariaCondition counts a condition's violations and gives the first
// MaxExamples keys.
func mariaCondition(ctx context.Context, a target.Admin, q string) (int64, []string, error) {
	rows, err := a.Query(ctx, fmt.Sprintf("SELECT k, COUNT(*) OVER () FROM (%s) v ORDER BY k LIMIT %d", q, MaxExamples))
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var n int64
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k, &n); err != nil {
			return 0, nil, err
		}
		keys = append(keys, k)
	}
	return n, keys, rows.Err()
}
