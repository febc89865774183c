package tpch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// Connector opens a connection to the target database.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// LoadOptions are the knobs of `tunebench load tpch`.
type LoadOptions struct {
	Scale       float64
	ForeignKeys bool
	Workers     int  // parallel COPY streams (and index builds)
	Drop        bool // replace what is there
	// Space checks the free space before the data goes in (nil: no check).
	Space *loadspace.Load
	// dirSpace is MariaDB's (load_mariadb.go; nil: no check).
	dirSpace *loadspace.DirLoad
	// partHook, for tests, is called before a part's COPY ("start"), after
	// it ("copied") and after its commit ("committed"), with the table and
	// the part; an error aborts the part.
	partHook func(t dbgen.Table, k int, phase string) error
}

// MinScale and MaxScale bound the scale factor: below 0.01 some tables
// would be nearly empty, and past 10,000 part and customer keys overflow
// integer.
const (
	MinScale = 0.01
	MaxScale = 10_000
)

// Validate checks the options; errors are usage errors.
func (o *LoadOptions) Validate() error {
	if o.Scale < MinScale || o.Scale > MaxScale {
		return errs.Usage("give --scale from 0.01 to 10000 (1 is about 1 GB of data)", "invalid scale %g", o.Scale)
	}
	if o.Workers < 1 {
		return errs.Usage("--jobs takes 1 or more (0: one per CPU of the server)", "invalid load workers %d", o.Workers)
	}
	return nil
}

// LoadProgress is reported while loading.
type LoadProgress struct {
	Phase     string   // "generate", "keys" (after the last COPY), "done"
	Detail    string   // the tables in flight: rows, rate and time left
	Done      []string // the tables loaded (committed) by this load
	Rows      int64
	TotalRows int64
	Frac      float64 // of the phase; negative: Rows / TotalRows
	ETA       time.Duration
	Elapsed   time.Duration
}

// TableStats is one table's load.
type TableStats struct {
	Table   string        `json:"table"`
	Parts   int           `json:"parts"` // parts loaded side by side (1: whole, with FREEZE)
	Rows    int64         `json:"rows"`
	Seconds float64       `json:"seconds"`
	GenCPU  time.Duration `json:"generator_cpu_ns"`
}

// LoadStats is the outcome of a load.
type LoadStats struct {
	Scale    float64       `json:"scale"`
	Rows     int64         `json:"rows"`
	Jobs     int           `json:"jobs"`
	Resumed  []string      `json:"resumed_skipped,omitempty"` // tables a resumed load kept (whole or some parts)
	Tables   []TableStats  `json:"tables"`
	Total    time.Duration `json:"total_ns"`
	Generate time.Duration `json:"generate_ns"` // generation and COPY, overlapped, until the last COPY
	// GeneratorCPU is the CPU time of the generator's threads, summed.
	GeneratorCPU time.Duration `json:"generator_cpu_ns"`
	// TextPool is the time to build the generator's text pool (the
	// comments are cut from it), beside the drop, the checks and the
	// schema.
	TextPool time.Duration `json:"text_pool_ns"`
	// Keys is the time after the last COPY: the statistics and indexes of
	// the last tables, the primary and foreign keys (those of tables
	// loaded earlier are built beside the COPY of the others).
	Keys time.Duration `json:"keys_ns"`
}

// loadOrder is the order tables are loaded in: biggest first, so the
// small ones fill in beside lineitem.
var loadOrder = []dbgen.Table{dbgen.Lineitem, dbgen.Orders, dbgen.PartSupp, dbgen.Part, dbgen.Customer, dbgen.Supplier, dbgen.Nation, dbgen.Region}

// generatorName is stored with the load: the data of a load is that of
// this generator.
const generatorName = "dbgen-compatible tunebench 1"

// Load builds the schema and data: the meta row first (status loading),
// then every table over o.Workers connections. A table is generated in
// chunks and streamed into binary COPY: whole, in one transaction that
// truncates it and copies with FREEZE, or, when it is big and more than one
// job loads, in parts that take its chunks in turn, each in its own
// transaction that records the part as done, followed by one VACUUM. Each
// table's statistics and indexes follow as soon as its data is in, beside
// the COPY of the others; then the primary keys, the foreign keys if asked,
// and status complete. An interrupted load is resumed by running it again
// with the same scale: finished tables and parts are kept, the rest redone.
func Load(ctx context.Context, connect Connector, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
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
	// The generator's text pool is built beside the drop and the checks.
	type built struct {
		gen  *dbgen.Generator
		took time.Duration
	}
	pool := make(chan built, 1)
	go func() {
		t0 := time.Now()
		g := dbgen.New(o.Scale, dbgen.Binary)
		pool <- built{g, time.Since(t0)}
	}()
	connect = pgt.LoadSessions(connect)
	admin, err := connect(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close(context.WithoutCancel(ctx))

	entries, err := prepare(ctx, admin, o)
	if err != nil {
		return st, err
	}
	done := map[string]bool{}
	for _, t := range entries {
		done[t] = true
	}
	st.Resumed = entries
	// A resumed load may have stopped while building keys, and a table not
	// recorded done may hold the parts an interrupted load committed (on
	// new tables this costs nothing).
	stmts := dropKeysDDL()
	for _, t := range loadOrder {
		if !done[t.String()] {
			stmts = append(stmts, "truncate "+t.String())
		}
	}
	if err := execSerial(ctx, admin, stmts); err != nil {
		return st, err
	}

	t0 := time.Now()
	b := <-pool
	gen := b.gen
	st.TextPool = b.took
	tasks, loads, total := loadTasks(gen, o, done)
	stop := workload.Every(200*time.Millisecond, func() {
		p := copyProgress(loads, total)
		p.Elapsed = time.Since(start)
		progress(p)
	})
	var copiedAt atomic.Int64 // unix ns of the last COPY's end
	err = runPipeline(ctx, connect, o.Workers, tasks, func(t *task, n, all int) {
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
	if _, err := admin.Exec(ctx, "update "+MetaTable+" set status = $1, loaded_at = now()", statusComplete); err != nil {
		return st, fmt.Errorf("marking the load complete: %w", err)
	}
	st.Total = time.Since(start)
	progress(LoadProgress{Phase: "done", Rows: st.Rows, TotalRows: st.Rows, Frac: 1, ETA: 0, Elapsed: st.Total})
	return st, nil
}

// loadTasks is the load's work: per table, the COPY of its parts not yet
// done, then its VACUUM (a table loaded in parts) with ANALYZE, or ANALYZE
// alone, then its indexes side by side, then its primary key; the foreign
// keys last, one after another. Weights are about the work (rows times
// bytes), so the big tables go first and the small ones fill in.
func loadTasks(gen *dbgen.Generator, o LoadOptions, done map[string]bool) (tasks []*task, loads []*tableLoad, total int64) {
	keys := keysByTable()
	var pkeys []*task
	for _, t := range loadOrder {
		name := t.String()
		rows := float64(dbgen.Units(t, o.Scale)) * dbgen.RowsPerUnit(t)
		weight := rows * rowBytes[t]
		parts := partsOf(t, o.Scale, o.Workers)
		var copies []*task
		var l *tableLoad
		if !done[name] {
			l = &tableLoad{t: t, parts: parts}
			for k := range parts {
				l.left.Add(1)
				l.total += int64(rows) / int64(parts)
				copies = append(copies, &task{name: "copy " + name, weight: weight / float64(parts), copy: true,
					run: func(ctx context.Context, conn *pgx.Conn) error {
						return copyPart(ctx, conn, gen, l, k, 2, o.partHook)
					}})
			}
			loads = append(loads, l)
			total += l.total
		}
		tasks = append(tasks, copies...)
		var stats *task
		switch {
		case parts > 1 || done[name]:
			// A table loaded in parts (or by an interrupted load, perhaps
			// in parts) is recorded done once they are all in, and has its
			// hint bits and visibility map set here, not by the first query
			// to read it.
			stats = vacuumTask(weight/5, name, l)
			if l != nil {
				record := doneTask(l).after(copies...)
				tasks = append(tasks, record)
				stats.after(record)
			}
		default:
			stats = sqlTask(weight/20, "analyze "+name).after(copies...)
		}
		tasks = append(tasks, stats)
		var indexes []*task
		for _, ddl := range keys[name].indexes {
			indexes = append(indexes, sqlTask(weight/2, ddl).after(stats))
		}
		tasks = append(tasks, indexes...)
		if len(keys[name].pkeys) > 0 {
			pk := sqlTask(weight/100, keys[name].pkeys...).after(indexes...)
			tasks = append(tasks, pk)
			pkeys = append(pkeys, pk)
		}
	}
	if o.ForeignKeys {
		prev := pkeys
		for _, ddl := range foreignKeyDDL {
			fk := sqlTask(0, ddl).after(prev...)
			tasks = append(tasks, fk)
			prev = []*task{fk}
		}
	}
	return tasks, loads, total
}

// raiseMaintenanceMem sets the session's maintenance_work_mem to size
// unless it is already more.
func raiseMaintenanceMem(size string) string {
	return fmt.Sprintf("select set_config('maintenance_work_mem', '%[1]s', false) where pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('%[1]s')", size)
}

// rowBytes is about the size of a row of each table in a binary COPY.
var rowBytes = map[dbgen.Table]float64{
	dbgen.Lineitem: 200, dbgen.Orders: 160, dbgen.PartSupp: 170, dbgen.Part: 170,
	dbgen.Customer: 210, dbgen.Supplier: 190, dbgen.Nation: 140, dbgen.Region: 130,
}

// meta is the meta row.
type meta struct {
	Scale        float64
	ForeignKeys  bool
	Status       string
	TablesDone   []string
	OrdersRows   int64
	LineitemRows int64
	NextUpdate   int64
	NextDelete   int64
	Generator    string
}

// Refreshed reports whether refresh functions have changed the data since
// the load.
func (m meta) Refreshed() bool { return m.NextUpdate > 1 || m.NextDelete > 1 }

// readMeta reads the meta row; ok is false when there is none.
func readMeta(ctx context.Context, conn *pgx.Conn) (m meta, ok bool, err error) {
	var exists bool
	if err := conn.QueryRow(ctx, "select to_regclass($1) is not null", MetaTable).Scan(&exists); err != nil {
		return m, false, err
	}
	if !exists {
		return m, false, nil
	}
	err = conn.QueryRow(ctx, "select scale, foreign_keys, status, tables_done, orders_rows, lineitem_rows, next_update, next_delete, generator from "+MetaTable).
		Scan(&m.Scale, &m.ForeignKeys, &m.Status, &m.TablesDone, &m.OrdersRows, &m.LineitemRows, &m.NextUpdate, &m.NextDelete, &m.Generator)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	return m, err == nil, err
}

// existingTables lists the workload's tables that exist.
func existingTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	var have []string
	for _, t := range dbgen.Tables() {
		var ok bool
		if err := conn.QueryRow(ctx, "select to_regclass($1) is not null", t.String()).Scan(&ok); err != nil {
			return nil, err
		}
		if ok {
			have = append(have, t.String())
		}
	}
	return have, nil
}

// resumeOrReplace says what a load does with what the database holds (its
// meta row m when ok, the workload's tables have): resume an interrupted
// load of the same scale, or (resume false) replace them or make them,
// or refuse without --drop (a usage error).
func resumeOrReplace(m meta, ok bool, have []string, o LoadOptions) (resume bool, err error) {
	if o.Drop {
		return false, nil
	}
	switch {
	case ok && m.Status == statusComplete:
		return false, errs.Usage("add --drop to load it again (the data is replaced), or load into another database",
			"TPC-H-like data of scale %g is already loaded here", m.Scale)
	case ok && (m.Scale != o.Scale || m.ForeignKeys != o.ForeignKeys):
		return false, errs.Usage(fmt.Sprintf("run `tunebench load tpch --scale %g` to resume it, or add --drop to start over", m.Scale),
			"an interrupted load of scale %g (foreign keys %v) is here", m.Scale, m.ForeignKeys)
	case ok:
		return true, nil
	case len(have) > 0:
		return false, errs.Usage("add --drop to replace them (their data is lost), or load into another database",
			"the database already has %s", strings.Join(have, ", "))
	}
	return false, nil
}

// prepare drops (then a checkpoint frees their space), refuses, resumes or
// creates, after checking the space; it returns what an interrupted load of
// the same scale already finished (its tables_done).
func prepare(ctx context.Context, conn *pgx.Conn, o LoadOptions) ([]string, error) {
	m, ok, err := readMeta(ctx, conn)
	if err != nil {
		return nil, err
	}
	have, err := existingTables(ctx, conn)
	if err != nil {
		return nil, err
	}
	resume, err := resumeOrReplace(m, ok, have, o)
	if err != nil {
		return nil, err
	}
	if resume {
		in := loadspace.RelationBytes(ctx, conn, m.TablesDone)
		return m.TablesDone, o.Space.Check(ctx, conn, dataBytes(o.Scale)-in)
	}
	if ok || len(have) > 0 {
		if _, err := conn.Exec(ctx, dropDDL()); err != nil {
			return nil, fmt.Errorf("dropping the old tables: %w", err)
		}
		o.Space.AfterDrop(ctx, conn) // a CHECKPOINT frees their files and WAL
	}
	if err := o.Space.Check(ctx, conn, dataBytes(o.Scale)); err != nil {
		return nil, err
	}
	stmts := []string{dropDDL(), metaDDL}
	for _, t := range loadOrder {
		stmts = append(stmts, tableDDL[t])
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("creating the tables: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, "insert into "+MetaTable+" (scale, foreign_keys, status, generator) values ($1, $2, $3, $4)",
		o.Scale, o.ForeignKeys, statusLoading, generatorName); err != nil {
		return nil, err
	}
	return nil, tx.Commit(ctx)
}
