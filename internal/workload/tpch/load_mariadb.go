package tpch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// The load on MariaDB: the generator's text rows (the same chunks as the
// PostgreSQL load's) streamed into LOAD DATA LOCAL INFILE through the
// target's admin connections (target.Admin.BulkLoad), a table per
// connection over --jobs connections, biggest first. Each table goes in
// in one transaction into the empty table with unique_checks and
// foreign_key_checks off, which InnoDB (MariaDB 10.6 and later) loads in
// bulk: its pages built in key order, one undo record for the table.
// Then its secondary indexes (one ALTER TABLE, built by sorting), its
// statistics (ANALYZE TABLE ... PERSISTENT FOR ALL), and the table is
// recorded done in the meta table, as on PostgreSQL; an interrupted load
// truncates the tables not recorded done and loads them again.

// mariaIndexesFirst makes the secondary indexes with the tables, before
// the data (false: after each table's data, with one ALTER TABLE).
// Measured on lineitem at SF 0.1 (MariaDB 10.11, server CPU seconds):
// the bulk load with lineitem_part_supp in place 11.7 s (the load row by
// row with checks on 7.8 s); without it 4.8 s, and the index after it
// 1.4 s more.
var mariaIndexesFirst = false

// mariaLoad is one table's load on MariaDB, with the stats of tableLoad.
// copyFirst is added to a table's load task's weight, so that the
// pipeline takes every load task before the others.
const copyFirst = 1e18

func mariaLoadTasks(gen *dbgen.Generator, o LoadOptions, done map[string]bool) (tasks []*taskOf[target.Admin], loads []*tableLoad, total int64) {
	var last []*taskOf[target.Admin]
	for _, t := range loadOrder {
		if done[t.String()] {
			continue
		}
		rows := float64(dbgen.Units(t, o.Scale)) * dbgen.RowsPerUnit(t)
		weight := rows * rowBytes[t]
		l := &tableLoad{t: t, parts: 1, total: int64(rows)}
		l.left.Add(1)
		loads = append(loads, l)
		total += l.total
		// Every table's rows before any index or statistics: an ANALYZE
		// of orders or lineitem runs for minutes at SF 1 and, taken
		// first, kept a small table's rows waiting behind it (the load
		// 212 s at SF 1 instead of about 125 s).
		cp := &taskOf[target.Admin]{name: "load " + t.String(), weight: weight + copyFirst, copy: true,
			run: func(ctx context.Context, a target.Admin) error { return mariaCopy(ctx, a, gen, l, o.partHook) }}
		tasks = append(tasks, cp)
		prev := cp
		if ddl := mariaIndexDDL(t); ddl != "" && !mariaIndexesFirst {
			ix := mariaExecTask(weight/2, ddl).after(prev)
			tasks = append(tasks, ix)
			prev = ix
		}
		var stats []*taskOf[target.Admin]
		stmts := mariaAnalyzeStmts(t, o.Workers)
		for _, stmt := range stmts {
			st := &taskOf[target.Admin]{name: firstLine(stmt), weight: weight / 20 / float64(len(stmts)),
				run: func(ctx context.Context, a target.Admin) error { return mariaAnalyze(ctx, a, stmt) }}
			stats = append(stats, st.after(prev))
		}
		tasks = append(tasks, stats...)
		// The record follows the statistics at once (the heaviest weight
		// of the table's steps), so that an interrupted load keeps it.
		fin := &taskOf[target.Admin]{name: "record " + t.String(), weight: weight,
			run: func(ctx context.Context, a target.Admin) error {
				if _, err := a.Exec(ctx, mariaAutoRecalc(t)); err != nil {
					return err
				}
				return mariaRecordDone(ctx, a, t, l.copied.Load())
			}}
		tasks = append(tasks, fin.after(stats...))
		last = append(last, fin)
	}
	if o.ForeignKeys {
		for _, ddl := range mariaForeignKeyDDL {
			fk := mariaExecTask(0, ddl).after(last...)
			tasks = append(tasks, fk)
			last = []*taskOf[target.Admin]{fk}
		}
	}
	return tasks, loads, total
}

func mariaExecTask(weight float64, stmt string) *taskOf[target.Admin] {
	return &taskOf[target.Admin]{name: firstLine(stmt), weight: weight, run: func(ctx context.Context, a target.Admin) error {
		if _, err := a.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", firstLine(stmt), err)
		}
		return nil
	}}
}

// loadMariaDB builds the schema and data on MariaDB: the meta row first
// (status loading), the tables (those of an interrupted load kept), then
// every table's data, statistics and record over o.Workers connections,
// the foreign keys if asked, and status complete.
func loadMariaDB(ctx context.Context, admins target.Admins, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
	if err := o.Validate(); err != nil {
		return LoadStats{}, err
	}
	if progress == nil {
		progress = func(LoadProgress) {}
	}
	var mu sync.Mutex // progress is reported from several goroutines
	inner := progress
	progress = func(p LoadProgress) {
		mu.Lock()
		defer mu.Unlock()
		inner(p)
	}
	start := time.Now()
	st := LoadStats{Scale: o.Scale, Jobs: o.Workers}
	type built struct {
		gen  *dbgen.Generator
		took time.Duration
	}
	pool := make(chan built, 1)
	go func() {
		t0 := time.Now()
		g := dbgen.New(o.Scale, dbgen.COPY)
		pool <- built{g, time.Since(t0)}
	}()
	admin, err := admins.Admin(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close()
	entries, err := mariaPrepare(ctx, admin, o)
	if err != nil {
		return st, err
	}
	done := map[string]bool{}
	for _, t := range entries {
		done[t] = true
	}
	st.Resumed = entries
	// The free space is watched to the end (a MariaDB whose disk is full
	// waits for space instead of failing); mariaPrepare checked it.
	ctx, stopGuard := o.dirSpace.Guard(ctx)
	defer stopGuard()

	t0 := time.Now()
	b := <-pool
	gen := b.gen
	st.TextPool = b.took
	tasks, loads, total := mariaLoadTasks(gen, o, done)
	stop := workload.Every(200*time.Millisecond, func() {
		p := copyProgress(loads, total)
		p.Elapsed = time.Since(start)
		progress(p)
	})
	var copiedAt atomic.Int64
	open := func(ctx context.Context) (target.Admin, error) {
		a, err := admins.Admin(ctx)
		if err != nil {
			return nil, err
		}
		// InnoDB's bulk load into an empty table needs both off; the
		// rows are dbgen's, unique in their keys, and the foreign keys
		// come after them.
		// analyze_sample_percentage 0: the statistics of a sample whose
		// size MariaDB picks, as PostgreSQL's ANALYZE samples, instead of
		// the default full scan and sort of every column (lineitem's and
		// orders' took minutes at SF 1).
		if _, err := a.Exec(ctx, "SET SESSION unique_checks = 0, foreign_key_checks = 0, analyze_sample_percentage = 0"); err != nil {
			_ = a.Close()
			return nil, err
		}
		return a, nil
	}
	err = runTasks(ctx, open, func(a target.Admin) { _ = a.Close() }, o.Workers, tasks, func(t *taskOf[target.Admin], n, all int) {
		if copiedAt.Load() == 0 {
			return
		}
		progress(LoadProgress{Phase: "keys", Detail: t.name, Rows: int64(n), TotalRows: int64(all), Frac: float64(n) / float64(all), ETA: -1, Elapsed: time.Since(start)})
	}, func() {
		copiedAt.Store(time.Now().UnixNano())
		stop()
	})
	stop()
	var copied time.Time
	if ns := copiedAt.Load(); ns != 0 {
		copied = time.Unix(0, ns)
	}
	for _, l := range loads {
		if l.ended.Load() == 0 {
			continue
		}
		ts := TableStats{Table: l.t.String(), Parts: l.parts, Rows: l.rows.Load(),
			Seconds: time.Duration(l.ended.Load() - l.started.Load()).Seconds(), GenCPU: time.Duration(l.cpu.Load())}
		st.Tables = append(st.Tables, ts)
		st.Rows += ts.Rows
		st.GeneratorCPU += ts.GenCPU
	}
	if copied.IsZero() {
		st.Generate = time.Since(t0)
		return st, err
	}
	st.Generate = copied.Sub(t0)
	st.Keys = time.Since(copied)
	if err != nil {
		return st, err
	}
	if _, err := admin.Exec(ctx, "UPDATE "+MetaTable+" SET status = ?, loaded_at = CURRENT_TIMESTAMP(6)", statusComplete); err != nil {
		return st, fmt.Errorf("marking the load complete: %w", err)
	}
	st.Total = time.Since(start)
	progress(LoadProgress{Phase: "done", Rows: st.Rows, TotalRows: st.Rows, Frac: 1, ETA: 0, Elapsed: st.Total})
	return st, nil
}

// mariaPrepare drops, refuses, resumes or creates (as prepare does on
// PostgreSQL, without the space check) and returns the tables an
// interrupted load of the same scale finished. The meta row is made
// first and the tables after it, each if it does not exist: MariaDB's DDL
// is not transactional, and a load interrupted among them resumes. What
// a resumed load redoes is emptied, and the foreign keys (made last) are
// dropped.
func mariaPrepare(ctx context.Context, a target.Admin, o LoadOptions) ([]string, error) {
	m, ok, err := mariaReadMeta(ctx, a)
	if err != nil {
		return nil, err
	}
	have, err := mariaExisting(ctx, a)
	if err != nil {
		return nil, err
	}
	resume, err := resumeOrReplace(m, ok, have, o)
	if err != nil {
		return nil, err
	}
	var stmts []string
	if !resume {
		for _, s := range mariaDropDDL() {
			if _, err := a.Exec(ctx, s); err != nil {
				return nil, fmt.Errorf("dropping the tables: %s: %w", firstLine(s), err)
			}
		}
		stmts = append(stmts, mariaMetaDDL)
	}
	// The space, before anything is made: the estimate less what the
	// tables an interrupted load kept take.
	var in int64
	if resume {
		names := make([]string, 0, len(loadOrder))
		for _, t := range loadOrder {
			names = append(names, t.String())
		}
		_ = a.QueryRow(ctx, "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('"+
			strings.Join(names, "', '")+"')").Scan(&in)
	}
	if err := o.dirSpace.Check(ctx, dataBytes(o.Scale)-in); err != nil {
		return nil, err
	}
	for _, s := range stmts {
		if _, err := a.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("creating the tables: %s: %w", firstLine(s), err)
		}
	}
	if !resume {
		if _, err := a.Exec(ctx, "INSERT INTO "+MetaTable+" (scale, foreign_keys, status, generator) VALUES (?, ?, ?, ?)",
			o.Scale, o.ForeignKeys, statusLoading, generatorName); err != nil {
			return nil, err
		}
		m.TablesDone = nil
	}
	for _, t := range loadOrder {
		if _, err := a.Exec(ctx, mariaCreateDDL(t, mariaIndexesFirst)); err != nil {
			return nil, fmt.Errorf("creating %s: %w", t, err)
		}
	}
	if !resume {
		return nil, nil
	}
	if err := mariaDropForeignKeys(ctx, a); err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, t := range m.TablesDone {
		done[t] = true
	}
	for _, t := range loadOrder {
		if done[t.String()] {
			continue
		}
		if _, err := a.Exec(ctx, "TRUNCATE TABLE "+t.String()); err != nil {
			return nil, err
		}
		if ddl := mariaIndexDDL(t); ddl != "" && !mariaIndexesFirst {
			drop := make([]string, len(mariaIndexes[t]))
			for i, ix := range mariaIndexes[t] {
				drop[i] = "DROP INDEX IF EXISTS " + strings.Fields(ix)[2]
			}
			if _, err := a.Exec(ctx, "ALTER TABLE "+t.String()+" "+strings.Join(drop, ", ")); err != nil {
				return nil, err
			}
		}
	}
	return m.TablesDone, nil
}

// mariaDropForeignKeys drops the foreign keys of the workload's tables.
func mariaDropForeignKeys(ctx context.Context, a target.Admin) error {
	rows, err := a.Query(ctx, "SELECT TABLE_NAME, CONSTRAINT_NAME FROM information_schema.TABLE_CONSTRAINTS "+
		"WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'FOREIGN KEY' AND TABLE_NAME IN ("+mariaTableList()+")")
	if err != nil {
		return err
	}
	var stmts []string
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			_ = rows.Close()
			return err
		}
		stmts = append(stmts, "ALTER TABLE "+t+" DROP FOREIGN KEY "+c)
	}
	_ = rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := a.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// mariaTableList is the workload's table names as SQL strings.
func mariaTableList() string {
	var names []string
	for _, t := range dbgen.Tables() {
		names = append(names, "'"+t.String()+"'")
	}
	return strings.Join(names, ", ")
}

// mariaExisting lists the workload's tables that exist.
func mariaExisting(ctx context.Context, a target.Admin) ([]string, error) {
	rows, err := a.Query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ("+mariaTableList()+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		got[n] = true
	}
	var have []string
	for _, t := range dbgen.Tables() {
		if got[t.String()] {
			have = append(have, t.String())
		}
	}
	return have, rows.Err()
}

// mariaReadMeta reads the meta row; ok is false when there is none.
func mariaReadMeta(ctx context.Context, a target.Admin) (m meta, ok bool, err error) {
	var n int
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", MetaTable).Scan(&n); err != nil {
		return m, false, err
	}
	if n == 0 {
		return m, false, nil
	}
	var done string
	err = a.QueryRow(ctx, "SELECT scale, foreign_keys, status, tables_done, orders_rows, lineitem_rows, next_update, next_delete, generator FROM "+MetaTable).
		Scan(&m.Scale, &m.ForeignKeys, &m.Status, &done, &m.OrdersRows, &m.LineitemRows, &m.NextUpdate, &m.NextDelete, &m.Generator)
	if errors.Is(err, target.ErrNoRows) {
		return m, false, nil
	}
	if done != "" {
		m.TablesDone = strings.Split(done, ",")
	}
	return m, err == nil, err
}

// mariaRecordDone records table t done in the meta row, with its row
// count for orders and lineitem.
func mariaRecordDone(ctx context.Context, a target.Admin, t dbgen.Table, rows int64) error {
	set := "tables_done = CONCAT(tables_done, IF(tables_done = '', '', ','), ?)"
	switch t {
	case dbgen.Lineitem:
		set += fmt.Sprintf(", lineitem_rows = %d", rows)
	case dbgen.Orders:
		set += fmt.Sprintf(", orders_rows = %d", rows)
	}
	_, err := a.Exec(ctx, "UPDATE "+MetaTable+" SET "+set, t.String())
	return err
}

// mariaAnalyzeStmts gather table t's statistics: one statement, or, with
// two or more jobs, for lineitem and orders two, run side by side: half
// the columns each, the first with the indexes. The statistics of a
// column are computed apart from the others' (its histogram sorts its
// values), and the last of a load's steps is lineitem's statistics
// (measured at SF 0.1: 4.9 s of server CPU for the whole table, 2.1 s
// and 1.6 s for the halves).
func mariaAnalyzeStmts(t dbgen.Table, jobs int) []string {
	if jobs < 2 || (t != dbgen.Lineitem && t != dbgen.Orders) {
		return []string{mariaAnalyzeDDL(t)}
	}
	cols := mariaColumns[t]
	h := len(cols) / 2
	indexes := []string{"PRIMARY"}
	for _, ix := range mariaIndexes[t] {
		indexes = append(indexes, strings.Fields(ix)[2])
	}
	return []string{
		fmt.Sprintf("ANALYZE TABLE %s PERSISTENT FOR COLUMNS (%s) INDEXES (%s)", t, strings.Join(cols[:h], ", "), strings.Join(indexes, ", ")),
		fmt.Sprintf("ANALYZE TABLE %s PERSISTENT FOR COLUMNS (%s) INDEXES ()", t, strings.Join(cols[h:], ", ")),
	}
}

// mariaAnalyze runs an ANALYZE TABLE statement, which reports a failure
// as a row of its result, not as an error.
func mariaAnalyze(ctx context.Context, a target.Admin, stmt string) error {
	rows, err := a.Query(ctx, stmt)
	if err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, op, kind, text string
		if err := rows.Scan(&table, &op, &kind, &text); err != nil {
			return err
		}
		if strings.EqualFold(kind, "error") {
			return fmt.Errorf("%s: %s", stmt, text)
		}
	}
	return rows.Err()
}

// mariaCopy loads l's table in one transaction: the generator's chunks,
// in key order, streamed into LOAD DATA.
func mariaCopy(ctx context.Context, a target.Admin, gen *dbgen.Generator, l *tableLoad, hook func(dbgen.Table, int, string) error) error {
	if hook != nil {
		if err := hook(l.t, 0, "start"); err != nil {
			return err
		}
	}
	l.started.CompareAndSwap(0, time.Now().UnixNano())
	src := newChunkReader(ctx, gen, l, 2)
	src.cur = nil // text rows: no binary header
	defer src.close()
	var n int64
	err := a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
		var err error
		if tl, ok := tx.(target.TextLoader); ok {
			// dbgen's text goes as it is: fields separated by '|'.
			n, err = tl.BulkLoadText(ctx, l.t.String(), mariaColumns[l.t], '|', &chunkText{next: src.next})
		} else {
			rows := &textRows{next: src.next, vals: make([]any, len(mariaColumns[l.t])), left: -1}
			n, err = tx.BulkLoad(ctx, l.t.String(), mariaColumns[l.t], rows)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if hook != nil {
			return hook(l.t, 0, "copied")
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.copied.Add(n)
	if hook != nil {
		if err := hook(l.t, 0, "committed"); err != nil {
			return err
		}
	}
	if l.left.Add(-1) == 0 {
		l.ended.Store(time.Now().UnixNano())
	}
	return nil
}

// textRows are the rows of the generator's text chunks ('|' between the
// fields, a line per row) as a bulk load's row source: each field the
// bytes of its text, which LOAD DATA converts to the column's type.
type textRows struct {
	// next gives the next chunk (ok false: no more).
	next func() (data []byte, ok bool, err error)
	data []byte // the rest of the current chunk
	vals []any
	// left is how many more chunks the rows may take (negative: all).
	left int
	err  error
}

func (s *textRows) Next() bool {
	for len(s.data) == 0 {
		if s.left == 0 || s.err != nil {
			return false
		}
		data, ok, err := s.next()
		if err != nil {
			s.err = err
			return false
		}
		if !ok {
			s.left = 0
			return false
		}
		s.data = data
		s.left--
	}
	line := s.data
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line, s.data = line[:i], s.data[i+1:]
	} else {
		s.data = nil
	}
	for k := range s.vals {
		i := bytes.IndexByte(line, '|')
		if i < 0 {
			if k != len(s.vals)-1 {
				s.err = fmt.Errorf("a generated row of %d fields, want %d", k+1, len(s.vals))
				return false
			}
			s.vals[k] = line
			break
		}
		s.vals[k], line = line[:i], line[i+1:]
	}
	return true
}

// textOf are the rows of one chunk.
func textOf(t dbgen.Table, data []byte) *textRows {
	return &textRows{vals: make([]any, len(mariaColumns[t])), left: -1, next: func() ([]byte, bool, error) {
		d := data
		data = nil
		return d, d != nil, nil
	}}
}

func (s *textRows) Values() ([]any, error) { return s.vals, nil }
func (s *textRows) Err() error             { return s.err }

// chunkText is an io.Reader of the generated chunks, one after the other.
type chunkText struct {
	next func() (data []byte, ok bool, err error)
	data []byte
	done bool
}

func (c *chunkText) Read(p []byte) (int, error) {
	for len(c.data) == 0 {
		if c.done {
			return 0, io.EOF
		}
		d, ok, err := c.next()
		if err != nil {
			c.done = true
			return 0, err
		}
		if !ok {
			c.done = true
			return 0, io.EOF
		}
		c.data = d
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}
