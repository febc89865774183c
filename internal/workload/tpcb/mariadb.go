package tpcb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// tpcb on MariaDB: pgbench's tables and scripts in MariaDB's SQL, loaded
// with LOAD DATA LOCAL INFILE through the target's admin connections
// (target.Admin), and the same check. The PostgreSQL path (load.go,
// schema.go, check.go) keeps pgx and COPY.

// DialectMariaDB is the dialect name of MariaDB targets.
const DialectMariaDB = "mariadb"

// stCommit ends a MariaDB transaction (MariaDB has no END); it keeps
// stEnd's name, by which the worker knows the commit.
var stCommit = target.Stmt{Name: stEnd.Name, SQL: "COMMIT"}

// inDialect gives the script's statements in the target's dialect.
func inDialect(stmts []target.Stmt, dialect string) []target.Stmt {
	if dialect != DialectMariaDB {
		return stmts
	}
	out := make([]target.Stmt, len(stmts))
	for i, st := range stmts {
		if st.Name == stEnd.Name {
			st = stCommit
		}
		out[i] = st
	}
	return out
}

// mariaTables are pgbench's tables in MariaDB (InnoDB): the columns and
// widths of createStatements, the primary keys made with the tables (an
// InnoDB table is its primary key's index: rows loaded in key order go in
// at the end of it, and building the key afterwards would copy the table).
func mariaTables(scale int) []string {
	aidType := "INT"
	if scale >= BigintScale {
		aidType = "BIGINT"
	}
	return []string{
		"CREATE TABLE pgbench_history (tid INT, bid INT, aid " + aidType + ", delta INT, mtime DATETIME(6), filler CHAR(22)) ENGINE=InnoDB",
		"CREATE TABLE pgbench_tellers (tid INT NOT NULL PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84)) ENGINE=InnoDB",
		"CREATE TABLE pgbench_branches (bid INT NOT NULL PRIMARY KEY, bbalance INT, filler CHAR(88)) ENGINE=InnoDB",
		"CREATE TABLE pgbench_accounts (aid " + aidType + " NOT NULL PRIMARY KEY, bid INT, abalance INT, filler CHAR(84)) ENGINE=InnoDB",
		"CREATE TABLE " + MetaTable + " (scale INT NOT NULL, partitions INT NOT NULL, method VARCHAR(16) NOT NULL, fillfactor INT NOT NULL, " +
			"status VARCHAR(16) NOT NULL, loaded_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), accounts_id BIGINT NOT NULL, " +
			"last_history_before BIGINT, last_committed BIGINT, last_ambiguous BIGINT, last_history_after BIGINT, last_history_node BIGINT) ENGINE=InnoDB",
	}
}

// mariaTableID is a table's InnoDB id, which a drop and create or a
// TRUNCATE changes (PostgreSQL's OID and file node, in one number).
const mariaTableID = "(SELECT TABLE_ID FROM information_schema.INNODB_SYS_TABLES WHERE NAME = CONCAT(DATABASE(), '/', ?))"

// refuseOnMariaDB says which load options MariaDB does not take.
func refuseOnMariaDB(o LoadOptions) error {
	if o.Partitions > 0 {
		return errs.Usage("leave --partitions out on MariaDB", "tpcb on MariaDB loads pgbench_accounts unpartitioned")
	}
	if o.Fillfactor != 100 {
		return errs.Usage("leave --fillfactor out on MariaDB (InnoDB has no fill factor per table; innodb_fill_factor is a server setting)",
			"--fillfactor %d is PostgreSQL's", o.Fillfactor)
	}
	return nil
}

// mariaExisting lists which pgbench tables exist in the target's database.
func mariaExisting(ctx context.Context, a target.Admin) ([]string, error) {
	rows, err := a.Query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?, ?, ?, ?) ORDER BY 1",
		tableNames[0], tableNames[1], tableNames[2], tableNames[3], MetaTable)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// seqRows is a bulk load's rows id = next..end-1 (of one table).
type seqRows struct {
	next, end int64
	vals      []any
	row       func(vals []any, id int64)
	counter   *atomic.Int64
	pending   int64 // rows not yet added to counter
}

func (s *seqRows) Next() bool {
	if s.next >= s.end {
		return false
	}
	s.row(s.vals, s.next)
	s.next++
	if s.pending++; s.pending == 1024 || s.next == s.end {
		s.counter.Add(s.pending)
		s.pending = 0
	}
	return true
}

func (s *seqRows) Values() ([]any, error) { return s.vals, nil }
func (s *seqRows) Err() error             { return nil }

// loadMariaDB builds the tables and data on MariaDB: the tables with their
// keys, branches and tellers, accounts one scale unit per LOAD DATA over
// o.Workers connections, ANALYZE TABLE; the meta table says "complete" at
// the very end, as on PostgreSQL.
func loadMariaDB(ctx context.Context, admins target.Admins, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
	if err := o.Validate(); err != nil {
		return LoadStats{}, err
	}
	if err := refuseOnMariaDB(o); err != nil {
		return LoadStats{}, err
	}
	if progress == nil {
		progress = func(LoadProgress) {}
	}
	start := time.Now()
	st := LoadStats{Scale: o.Scale}
	total := int64(o.Scale) * (AccountsPerScale + BranchesPerScale + TellersPerScale)
	report := func(phase string, rows int64) {
		progress(LoadProgress{Phase: phase, Rows: rows, TotalRows: total, Elapsed: time.Since(start)})
	}
	admin, err := admins.Admin(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close()

	t0 := time.Now()
	have, err := mariaExisting(ctx, admin)
	if err != nil {
		return st, err
	}
	if len(have) > 0 {
		if !o.Drop {
			return st, errs.Usage("add --drop to replace them (their data is lost), or load into another database",
				"the database already has %s", strings.Join(have, ", "))
		}
		if _, err := admin.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(append(append([]string{}, tableNames...), MetaTable), ", ")); err != nil {
			return st, fmt.Errorf("dropping old tables: %w", err)
		}
	}
	st.Drop = time.Since(t0)

	t0 = time.Now()
	report("create", 0)
	for _, q := range mariaTables(o.Scale) {
		if _, err := admin.Exec(ctx, q); err != nil {
			return st, fmt.Errorf("%s: %w", q, err)
		}
	}
	if _, err := admin.Exec(ctx, "INSERT INTO "+MetaTable+" (scale, partitions, method, fillfactor, status, accounts_id) VALUES (?, 0, 'range', 100, 'loading', "+mariaTableID+")",
		o.Scale, "pgbench_accounts"); err != nil {
		return st, err
	}
	st.Create = time.Since(t0)

	t0 = time.Now()
	var rows atomic.Int64
	report("generate", 0)
	small := []struct {
		table string
		cols  []string
		n     int64
		row   func([]any, int64)
	}{
		{"pgbench_branches", []string{"bid", "bbalance", "filler"}, int64(o.Scale * BranchesPerScale), func(v []any, id int64) { v[0], v[1], v[2] = id, 0, nil }},
		{"pgbench_tellers", []string{"tid", "bid", "tbalance", "filler"}, int64(o.Scale * TellersPerScale), func(v []any, id int64) {
			v[0], v[1], v[2], v[3] = id, (id-1)/TellersPerScale+1, 0, nil
		}},
	}
	for _, t := range small {
		src := &seqRows{next: 1, end: t.n + 1, vals: make([]any, len(t.cols)), row: t.row, counter: &rows}
		if _, err := admin.BulkLoad(ctx, t.table, t.cols, src); err != nil {
			return st, err
		}
	}
	var nextChunk atomic.Int64
	workers := min(o.Workers, o.Scale)
	stop := workload.Every(250*time.Millisecond, func() { report("generate", rows.Load()) })
	err = inParallel(ctx, workers, func(ctx context.Context) error {
		return loadAccounts(ctx, admins, &nextChunk, int64(o.Scale), &rows)
	})
	stop()
	if err != nil {
		return st, err
	}
	st.Rows = rows.Load()
	st.Generate = time.Since(t0)

	t0 = time.Now()
	report("analyze", st.Rows)
	if _, err := admin.Exec(ctx, "ANALYZE TABLE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history"); err != nil {
		return st, err
	}
	st.Vacuum = time.Since(t0)
	if _, err := admin.Exec(ctx, "UPDATE "+MetaTable+" SET status = 'complete', loaded_at = CURRENT_TIMESTAMP(6)"); err != nil {
		return st, err
	}
	st.Total = time.Since(start)
	report("done", st.Rows)
	return st, nil
}

// loadAccounts loads scale units of pgbench_accounts, one LOAD DATA per
// unit (a transaction of 100,000 rows), taking units from next.
func loadAccounts(ctx context.Context, admins target.Admins, next *atomic.Int64, chunks int64, rows *atomic.Int64) error {
	a, err := admins.Admin(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	// The rows of a unit come in key order into an empty key range: no
	// unique check can fail that the primary key would not catch anyway.
	if _, err := a.Exec(ctx, "SET SESSION unique_checks = 0"); err != nil {
		return err
	}
	src := &seqRows{vals: make([]any, 4), counter: rows, row: func(v []any, id int64) {
		v[0], v[1], v[2], v[3] = id, (id-1)/AccountsPerScale+1, 0, ""
	}}
	for {
		c := next.Add(1) - 1
		if c >= chunks {
			return nil
		}
		src.next, src.end = c*AccountsPerScale+1, (c+1)*AccountsPerScale+1
		if _, err := a.BulkLoad(ctx, "pgbench_accounts", []string{"aid", "bid", "abalance", "filler"}, src); err != nil {
			return err
		}
	}
}

// mariaInfo reads the loaded database's scale (from the meta table, or
// as pgbench does from pgbench_branches).
func mariaInfo(ctx context.Context, a target.Admin) (Info, error) {
	have, err := mariaExisting(ctx, a)
	if err != nil {
		return Info{}, err
	}
	set, err := present(have)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if set[MetaTable] {
		var status string
		var current bool
		err := a.QueryRow(ctx, "SELECT scale, partitions, method, status, accounts_id = "+mariaTableID+" AND scale * ? = (SELECT COUNT(*) FROM pgbench_branches) FROM "+MetaTable,
			"pgbench_accounts", BranchesPerScale).Scan(&info.Scale, &info.Partitions, &info.Method, &status, &current)
		if err != nil {
			return Info{}, fmt.Errorf("reading %s: %w", MetaTable, err)
		}
		if status != "complete" {
			return Info{}, fmt.Errorf("the load did not finish (status %q): load again with --drop", status)
		}
		if current {
			info.LoadedBy = "tunebench"
			return info, nil
		}
		info = Info{}
	}
	var n int64
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM pgbench_branches").Scan(&n); err != nil {
		return Info{}, err
	}
	if n == 0 {
		return Info{}, fmt.Errorf("pgbench_branches is empty")
	}
	info.Scale, info.LoadedBy = int(n), "other"
	return info, nil
}

func mariaHistoryCount(ctx context.Context, a target.Admin) (int64, error) {
	var n int64
	err := a.QueryRow(ctx, "SELECT COUNT(*) FROM pgbench_history").Scan(&n)
	return n, err
}

// mariaRecordRun stores r in the meta table (nil clears the record).
func mariaRecordRun(ctx context.Context, a target.Admin, r *RunRecord) error {
	if r == nil {
		_, err := a.Exec(ctx, "UPDATE "+MetaTable+" SET last_history_before = NULL, last_committed = NULL, last_ambiguous = NULL, last_history_after = NULL, last_history_node = NULL")
		return err
	}
	_, err := a.Exec(ctx, "UPDATE "+MetaTable+" SET last_history_before = ?, last_committed = ?, last_ambiguous = ?, "+
		"last_history_after = (SELECT COUNT(*) FROM pgbench_history), last_history_node = "+mariaTableID,
		r.HistoryBefore, r.Committed, r.Ambiguous, "pgbench_history")
	return err
}

// mariaCheck runs check.go's conditions on sums read in one consistent
// snapshot.
func mariaCheck(ctx context.Context, a target.Admin) (CheckReport, error) {
	var rep CheckReport
	err := a.Tx(ctx, target.TxOptions{ReadOnly: true, Snapshot: true}, func(tx target.Admin) error {
		t0 := time.Now()
		var s sums
		err := tx.QueryRow(ctx, `SELECT
			(SELECT COALESCE(SUM(abalance), 0) FROM pgbench_accounts),
			(SELECT COALESCE(SUM(tbalance), 0) FROM pgbench_tellers),
			(SELECT COALESCE(SUM(bbalance), 0) FROM pgbench_branches),
			(SELECT COALESCE(SUM(delta), 0) FROM pgbench_history),
			(SELECT COUNT(*) FROM pgbench_history)`).Scan(&s.a, &s.t, &s.b, &s.h, &s.hist)
		if err != nil {
			return fmt.Errorf("balance sums: %w", err)
		}
		var lr *RunRecord
		var before, committed, ambiguous, after, node, nodeNow *int64
		err = tx.QueryRow(ctx, "SELECT last_history_before, last_committed, last_ambiguous, last_history_after, last_history_node, "+mariaTableID+" FROM "+MetaTable,
			"pgbench_history").Scan(&before, &committed, &ambiguous, &after, &node, &nodeNow)
		if err != nil && !errors.Is(err, target.ErrNoRows) {
			return fmt.Errorf("reading last run: %w", err)
		}
		var now int64
		if before != nil && committed != nil && ambiguous != nil {
			lr = &RunRecord{HistoryBefore: *before, Committed: *committed, Ambiguous: *ambiguous}
			if after != nil && node != nil && nodeNow != nil {
				lr.HistoryAfter, lr.HistoryNode, lr.HasAfter = *after, *node, true
				now = *nodeNow
			}
		}
		rep = conditions(s, lr, now, t0)
		return nil
	})
	return rep, err
}
