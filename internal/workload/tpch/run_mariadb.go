package tpch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
	"github.com/tunebench/tunebench/internal/workload/tpch/qgen"
)

// A run on MariaDB: the queries in MariaDB's SQL (queries_mariadb.go) and
// the refresh functions on the target's admin connections, a query's
// time limit as max_statement_time, its plan as ANALYZE FORMAT=JSON, the
// statistics as ANALYZE TABLE ... PERSISTENT FOR ALL.

// errStatementTimeout is MariaDB's ER_STATEMENT_TIMEOUT: a statement
// that reached max_statement_time.
const errStatementTimeout = "1969"

type mariaRunDB struct {
	admins target.Admins
	coder  target.ErrorCoder // nil: no timeout is told apart
}

func newMariaRunDB(t target.Target) (*mariaRunDB, error) {
	admins, ok := t.(target.Admins)
	if !ok {
		return nil, errs.New(errs.KindInternal, "", "the MariaDB target has no admin connections")
	}
	coder, _ := t.(target.ErrorCoder)
	return &mariaRunDB{admins: admins, coder: coder}, nil
}

func (d *mariaRunDB) readMeta(ctx context.Context) (meta, bool, error) {
	a, err := d.admins.Admin(ctx)
	if err != nil {
		return meta{}, false, err
	}
	defer a.Close()
	return mariaReadMeta(ctx, a)
}

func (d *mariaRunDB) connections(ctx context.Context) (limit, used int, err error) {
	a, err := d.admins.Admin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer a.Close()
	err = a.QueryRow(ctx, "SELECT @@max_connections, (SELECT COUNT(*) FROM information_schema.PROCESSLIST)").Scan(&limit, &used)
	return limit, used, err
}

func (d *mariaRunDB) analyze(ctx context.Context) error {
	a, err := d.admins.Admin(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	return mariaAnalyze(ctx, a, mariaAnalyzeDDL(loadOrder...))
}

func (d *mariaRunDB) conn(ctx context.Context, timeout time.Duration) (queryConn, error) {
	a, err := d.admins.Admin(ctx)
	if err != nil {
		return nil, err
	}
	return &mariaConn{a: a, timeout: timeout, coder: d.coder}, nil
}

// mariaConn is a connection of a run on MariaDB.
type mariaConn struct {
	a       target.Admin
	timeout time.Duration
	coder   target.ErrorCoder
}

// limited is sql with the connection's time limit: SET STATEMENT applies
// it to this statement alone, so the refresh functions on the same
// connection have none (as PostgreSQL's statement_timeout of a query).
func (c *mariaConn) limited(sql string) string {
	if c.timeout <= 0 {
		return sql
	}
	return "SET STATEMENT max_statement_time = " + strconv.FormatFloat(c.timeout.Seconds(), 'f', -1, 64) + " FOR " + sql
}

func (c *mariaConn) query(ctx context.Context, q qgen.Query, collect bool) (n int64, out [][]string, err error) {
	rows, err := c.a.Query(ctx, c.limited(mariaQuery(q).SQL))
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var vals, dest []any
	if collect {
		cs, ok := rows.(interface{ Columns() ([]string, error) })
		if !ok {
			return 0, nil, fmt.Errorf("the MariaDB target's rows do not name their columns")
		}
		cols, err := cs.Columns()
		if err != nil {
			return 0, nil, err
		}
		vals, dest = make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
	}
	for rows.Next() {
		n++
		if !collect {
			continue
		}
		if err := rows.Scan(dest...); err != nil {
			return n, out, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = mariaText(v)
		}
		out = append(out, row)
	}
	return n, out, rows.Err()
}

// mariaText writes a value as the reference answers do: decimals as the
// server sends them in the text protocol, dates as YYYY-MM-DD (the admin
// connection reads dates as times), NULL as "".
func mariaText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case time.Time:
		if v.Hour() == 0 && v.Minute() == 0 && v.Second() == 0 && v.Nanosecond() == 0 {
			return v.Format(time.DateOnly)
		}
		return v.Format(time.DateTime)
	}
	return fmt.Sprint(v)
}

func (c *mariaConn) timedOut(err error) bool {
	return c.coder != nil && c.coder.ErrorCode(err) == errStatementTimeout
}

// explain runs q under ANALYZE FORMAT=JSON: its plan with the rows and
// times of the execution.
func (c *mariaConn) explain(ctx context.Context, q qgen.Query) (string, string, error) {
	var text string
	if err := c.a.QueryRow(ctx, c.limited("ANALYZE FORMAT=JSON "+mariaQuery(q).SQL)).Scan(&text); err != nil {
		return "", "", err
	}
	shape, err := MariaPlanShape(text)
	return text, shape, err
}

// mariaShapeKeys are the scalar members of a JSON plan that are part of
// its shape; the other scalars are estimates, measures or conditions
// (with the query's parameters).
var mariaShapeKeys = map[string]bool{"table_name": true, "access_type": true, "key": true, "join_type": true, "select_id": true}

// mariaShapeSkipped are the objects and arrays of a JSON plan that are
// details of a node (the keys it could use, the columns of its key) or
// only measures (the optimizer's time).
var mariaShapeSkipped = map[string]bool{"possible_keys": true, "used_key_parts": true, "ref": true, "query_optimization": true}

// MariaPlanShape reduces a JSON plan of MariaDB (EXPLAIN or ANALYZE
// FORMAT=JSON) to its nodes and their nesting, as PlanShape does a text
// plan of PostgreSQL: the objects and arrays by their names, the tables
// with their access type and index, without estimates, measures (r_*)
// or conditions.
func MariaPlanShape(text string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var out []string
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", fmt.Errorf("a JSON plan that is not an object")
	}
	if err := shapeOf(dec, d, 0, &out); err != nil {
		return "", err
	}
	return strings.Join(out, "\n"), nil
}

// shapeOf reads the members of the object or array opened by d.
func shapeOf(dec *json.Decoder, d json.Delim, depth int, out *[]string) error {
	for dec.More() {
		key := ""
		if d == '{' {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ = tok.(string)
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case json.Delim:
			if strings.HasPrefix(key, "r_") || mariaShapeSkipped[key] {
				if err := skipJSON(dec); err != nil {
					return err
				}
				continue
			}
			next := depth
			if key != "" {
				*out = append(*out, fmt.Sprintf("%d:%s", depth, key))
				next++
			}
			if err := shapeOf(dec, v, next, out); err != nil {
				return err
			}
		case string:
			if mariaShapeKeys[key] {
				*out = append(*out, fmt.Sprintf("%d:%s=%s", depth, key, v))
			}
		case json.Number:
			if key == "select_id" {
				*out = append(*out, fmt.Sprintf("%d:%s=%s", depth, key, v))
			}
		}
	}
	_, err := dec.Token() // the closing delimiter
	return err
}

// skipJSON skips the rest of an object or array whose opening delimiter
// was read.
func skipJSON(dec *json.Decoder) error {
	for level := 1; level > 0; {
		tok, err := dec.Token()
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				level++
			} else {
				level--
			}
		}
	}
	return nil
}

// unlimited runs fn with the session's max_statement_time off (the
// server's default may be set): the refresh functions are not queries.
func (c *mariaConn) unlimited(ctx context.Context, fn func() error) error {
	if _, err := c.a.Exec(ctx, "SET @tunebench_mst = @@SESSION.max_statement_time, SESSION max_statement_time = 0"); err != nil {
		return err
	}
	err := fn()
	if _, rerr := c.a.Exec(context.WithoutCancel(ctx), "SET SESSION max_statement_time = @tunebench_mst"); err == nil {
		err = rerr
	}
	return err
}

// rf1 is RF1 on MariaDB (refresh.go's rf1): the update set's rows staged
// before its time starts, then in one transaction the set taken from the
// meta row (locked), its orders and lineitems loaded, the set recorded.
func (c *mariaConn) rf1(ctx context.Context, gen *dbgen.Generator) (RefreshRun, error) {
	r := RefreshRun{Function: "RF1"}
	n := dbgen.RefreshOrders(gen.Scale())
	var staged int64
	if err := c.a.QueryRow(ctx, "SELECT next_update FROM "+MetaTable).Scan(&staged); err != nil {
		return r, err
	}
	orders, no := gen.AppendUpdate(nil, dbgen.Orders, staged, 0, n)
	lines, nl := gen.AppendUpdate(nil, dbgen.Lineitem, staged, 0, n)
	t0 := time.Now()
	err := c.unlimited(ctx, func() error {
		return c.a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
			if err := tx.QueryRow(ctx, "SELECT next_update FROM "+MetaTable+" FOR UPDATE").Scan(&r.Set); err != nil {
				return err
			}
			if r.Set != staged {
				orders, no = gen.AppendUpdate(orders[:0], dbgen.Orders, r.Set, 0, n)
				lines, nl = gen.AppendUpdate(lines[:0], dbgen.Lineitem, r.Set, 0, n)
			}
			for _, s := range []struct {
				t    dbgen.Table
				data []byte
			}{{dbgen.Orders, orders}, {dbgen.Lineitem, lines}} {
				if _, err := tx.BulkLoad(ctx, s.t.String(), mariaColumns[s.t], textOf(s.t, s.data)); err != nil {
					return fmt.Errorf("RF1 set %d, %s: %w", r.Set, s.t, err)
				}
			}
			_, err := tx.Exec(ctx, "UPDATE "+MetaTable+" SET next_update = next_update + 1, orders_rows = orders_rows + ?, lineitem_rows = lineitem_rows + ?", no, nl)
			return err
		})
	})
	if err != nil {
		return r, err
	}
	r.Orders, r.Lines, r.Seconds = no, nl, time.Since(t0).Seconds()
	return r, nil
}

// rf2 is RF2 on MariaDB: the delete set's lineitems and orders deleted in
// one transaction.
func (c *mariaConn) rf2(ctx context.Context, sf float64) (RefreshRun, error) {
	r := RefreshRun{Function: "RF2"}
	t0 := time.Now()
	err := c.unlimited(ctx, func() error {
		return c.a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
			if err := tx.QueryRow(ctx, "SELECT next_delete FROM "+MetaTable+" FOR UPDATE").Scan(&r.Set); err != nil {
				return err
			}
			keys := dbgen.DeleteKeys(sf, r.Set)
			list := make([]byte, 0, 12*len(keys))
			for i, k := range keys {
				if i > 0 {
					list = append(list, ',')
				}
				list = strconv.AppendInt(list, k, 10)
			}
			var err error
			if r.Lines, err = tx.Exec(ctx, "DELETE FROM lineitem WHERE l_orderkey IN ("+string(list)+")"); err != nil {
				return fmt.Errorf("RF2 set %d, lineitem: %w", r.Set, err)
			}
			if r.Orders, err = tx.Exec(ctx, "DELETE FROM orders WHERE o_orderkey IN ("+string(list)+")"); err != nil {
				return fmt.Errorf("RF2 set %d, orders: %w", r.Set, err)
			}
			_, err = tx.Exec(ctx, "UPDATE "+MetaTable+" SET next_delete = next_delete + 1, orders_rows = orders_rows - ?, lineitem_rows = lineitem_rows - ?", r.Orders, r.Lines)
			return err
		})
	})
	if err != nil {
		return r, err
	}
	r.Seconds = time.Since(t0).Seconds()
	return r, nil
}

func (c *mariaConn) close(context.Context) { _ = c.a.Close() }

// mariaCheck runs Check's conditions on MariaDB, in one consistent
// snapshot.
func mariaCheck(ctx context.Context, a target.Admin) (*CheckReport, error) {
	m, ok, err := mariaReadMeta(ctx, a)
	if err != nil {
		return nil, err
	}
	if !ok || m.Status != statusComplete {
		return nil, errNotLoaded
	}
	rep := &CheckReport{Passed: true}
	err = a.Tx(ctx, target.TxOptions{ReadOnly: true, Snapshot: true}, func(tx target.Admin) error {
		if err := tx.QueryRow(ctx, "SELECT orders_rows, lineitem_rows, next_update, next_delete FROM "+MetaTable).
			Scan(&m.OrdersRows, &m.LineitemRows, &m.NextUpdate, &m.NextDelete); err != nil {
			return err
		}
		for _, t := range dbgen.Tables() {
			var got int64
			if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM "+t.String()).Scan(&got); err != nil {
				return err
			}
			rowsCondition(rep, m, t, got)
		}
		for _, k := range uniqueKeys {
			var pk int
			if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_TYPE = 'PRIMARY KEY'",
				k.table).Scan(&pk); err != nil {
				return err
			}
			if pk > 0 {
				rep.add("unique "+k.table, true, "(%s) is the primary key", k.key)
				continue
			}
			var dups int64
			if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM (SELECT 1 FROM %s GROUP BY %s HAVING COUNT(*) > 1) d", k.table, k.key)).Scan(&dups); err != nil {
				return err
			}
			rep.add("unique "+k.table, dups == 0, "no primary key; %d duplicated (%s)", dups, k.key)
		}
		var bad, empty int64
		var example *int64
		err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(l.total IS NULL), 0), COALESCE(SUM(l.total <> o.o_totalprice), 0),
	MIN(CASE WHEN l.total IS NULL OR l.total <> o.o_totalprice THEN o.o_orderkey END)
FROM orders o LEFT JOIN (
	SELECT l_orderkey, SUM(TRUNCATE(TRUNCATE(l_extendedprice * (1 - l_discount), 2) * (1 + l_tax), 2)) AS total
	FROM lineitem GROUP BY l_orderkey) l ON l.l_orderkey = o.o_orderkey`).Scan(&empty, &bad, &example)
		if err != nil {
			return err
		}
		totalsCondition(rep, bad, empty, example)
		var orphans int64
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM lineitem l WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_orderkey = l.l_orderkey)").Scan(&orphans); err != nil {
			return err
		}
		rep.add("lineitem orders", orphans == 0, "%d lineitems without their order", orphans)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// checkOnMariaDB is Workload.Check's connection on MariaDB.
func checkOnMariaDB(ctx context.Context, t target.Target) (*CheckReport, error) {
	admins, ok := t.(target.Admins)
	if !ok {
		return nil, errors.New("the MariaDB target has no admin connections")
	}
	a, err := admins.Admin(ctx)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return mariaCheck(ctx, a)
}
