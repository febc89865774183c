package tpch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
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
		return errs.Usage("--load-workers takes 1 or more (0 = one per core)", "invalid load workers %d", o.Workers)
	}
	return nil
}

// LoadProgress is reported while loading.
type LoadProgress struct {
	Phase     string   // "generate", "keys", "analyze", "done"
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
	Rows    int64         `json:"rows"`
	Seconds float64       `json:"seconds"`
	GenCPU  time.Duration `json:"generator_cpu_ns"`
}

// LoadStats is the outcome of a load.
type LoadStats struct {
	Scale    float64       `json:"scale"`
	Rows     int64         `json:"rows"`
	Resumed  []string      `json:"resumed_skipped,omitempty"` // tables a resumed load found done
	Tables   []TableStats  `json:"tables"`
	Total    time.Duration `json:"total_ns"`
	Generate time.Duration `json:"generate_ns"` // generation and COPY, overlapped
	// GeneratorCPU is the CPU time of the generator's threads, summed.
	GeneratorCPU time.Duration `json:"generator_cpu_ns"`
	// TextPool is the time to build the generator's text pool (part of
	// Generate: the comments are cut from it).
	TextPool time.Duration `json:"text_pool_ns"`
	Keys     time.Duration `json:"keys_ns"`
	Analyze  time.Duration `json:"analyze_ns"`
}

// loadOrder is the order tables are loaded in: biggest first, so the
// small ones fill in beside lineitem.
var loadOrder = []dbgen.Table{dbgen.Lineitem, dbgen.Orders, dbgen.PartSupp, dbgen.Part, dbgen.Customer, dbgen.Supplier, dbgen.Nation, dbgen.Region}

// generatorName is stored with the load: the data of a load is that of
// this generator.
const generatorName = "dbgen-compatible tunebench 1"

// Load builds the schema and data: the meta row first (status loading),
// each table generated in parallel chunks and streamed into COPY in its
// own transaction (truncate, COPY FREEZE, record the table as done), then
// the keys, the foreign keys if asked, ANALYZE, and status complete. An
// interrupted load is resumed by running it again with the same scale:
// finished tables are kept, the rest redone.
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
	st := LoadStats{Scale: o.Scale}
	admin, err := connect(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close(context.WithoutCancel(ctx))

	done, err := prepare(ctx, admin, o)
	if err != nil {
		return st, err
	}
	st.Resumed = done
	todo := []dbgen.Table{}
	for _, t := range loadOrder {
		if !contains(done, t.String()) {
			todo = append(todo, t)
		}
	}

	t0 := time.Now()
	gen := dbgen.New(o.Scale, dbgen.COPY)
	st.TextPool = time.Since(t0)
	tables, err := copyTables(ctx, connect, gen, o, todo, func(p LoadProgress) {
		p.Elapsed = time.Since(start)
		progress(p)
	})
	st.Tables = tables
	for _, ts := range tables {
		st.Rows += ts.Rows
		st.GeneratorCPU += ts.GenCPU
	}
	st.Generate = time.Since(t0)
	if err != nil {
		return st, err
	}

	t0 = time.Now()
	stmts := []string{}
	if len(done) > 0 {
		// A resumed load may have stopped while building keys.
		stmts = append(stmts, dropKeysDDL()...)
	}
	if err := execSerial(ctx, admin, stmts); err != nil {
		return st, err
	}
	if err := buildKeys(ctx, connect, o, func(n, total int) {
		progress(LoadProgress{Phase: "keys", Rows: int64(n), TotalRows: int64(total), Frac: float64(n) / float64(total), ETA: -1, Elapsed: time.Since(start)})
	}); err != nil {
		return st, err
	}
	st.Keys = time.Since(t0)

	t0 = time.Now()
	progress(LoadProgress{Phase: "analyze", Frac: 0, ETA: -1, Elapsed: time.Since(start)})
	if err := parallel(ctx, connect, o.Workers, analyzeDDL()); err != nil {
		return st, err
	}
	st.Analyze = time.Since(t0)
	if _, err := admin.Exec(ctx, "update "+MetaTable+" set status = $1, loaded_at = now()", statusComplete); err != nil {
		return st, fmt.Errorf("marking the load complete: %w", err)
	}
	st.Total = time.Since(start)
	progress(LoadProgress{Phase: "done", Rows: st.Rows, TotalRows: st.Rows, Frac: 1, ETA: 0, Elapsed: st.Total})
	return st, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

// prepare drops (then a checkpoint frees their space), refuses, resumes or
// creates, after checking the space; it returns the tables an interrupted
// load of the same scale already finished.
func prepare(ctx context.Context, conn *pgx.Conn, o LoadOptions) ([]string, error) {
	m, ok, err := readMeta(ctx, conn)
	if err != nil {
		return nil, err
	}
	have, err := existingTables(ctx, conn)
	if err != nil {
		return nil, err
	}
	if !o.Drop {
		switch {
		case ok && m.Status == statusComplete:
			return nil, errs.Usage("add --drop to load it again (the data is replaced), or load into another database",
				"TPC-H-like data of scale %g is already loaded here", m.Scale)
		case ok && (m.Scale != o.Scale || m.ForeignKeys != o.ForeignKeys):
			return nil, errs.Usage(fmt.Sprintf("run `tunebench load tpch --scale %g` to resume it, or add --drop to start over", m.Scale),
				"an interrupted load of scale %g (foreign keys %v) is here", m.Scale, m.ForeignKeys)
		case ok:
			in := loadspace.RelationBytes(ctx, conn, m.TablesDone)
			return m.TablesDone, o.Space.Check(ctx, conn, dataBytes(o.Scale)-in)
		case len(have) > 0:
			return nil, errs.Usage("add --drop to replace them (their data is lost), or load into another database",
				"the database already has %s", strings.Join(have, ", "))
		}
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

// chunkUnits is how many units a generated chunk holds (about a megabyte).
func chunkUnits(t dbgen.Table) int64 {
	switch t {
	case dbgen.Lineitem:
		return 1000
	case dbgen.Orders, dbgen.PartSupp:
		return 2500
	default:
		return 5000
	}
}

// tableLoad is one table in flight.
type tableLoad struct {
	t       dbgen.Table
	total   int64 // expected rows
	rows    atomic.Int64
	started atomic.Int64 // unix ns; 0 = waiting
	ended   atomic.Int64
	cpu     atomic.Int64
}

// copyTables loads the tables over o.Workers connections, biggest first.
func copyTables(ctx context.Context, connect Connector, gen *dbgen.Generator, o LoadOptions, todo []dbgen.Table, progress func(LoadProgress)) ([]TableStats, error) {
	if len(todo) == 0 {
		return nil, nil
	}
	loads := make([]*tableLoad, len(todo))
	var total int64
	for i, t := range todo {
		loads[i] = &tableLoad{t: t, total: int64(float64(dbgen.Units(t, o.Scale)) * dbgen.RowsPerUnit(t))}
		total += loads[i].total
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan *tableLoad, len(loads))
	for _, l := range loads {
		queue <- l
	}
	close(queue)
	workers := min(o.Workers, len(loads))
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := connect(ctx)
			if err != nil {
				errc <- err
				cancel()
				return
			}
			defer conn.Close(context.WithoutCancel(ctx))
			for l := range queue {
				if err := ctx.Err(); err != nil {
					errc <- err
					return
				}
				if err := copyTable(ctx, conn, gen, o, l); err != nil {
					errc <- err
					cancel()
					return
				}
				progress(copyProgress(loads, total)) // a table is done
			}
		}()
	}
	stop := make(chan struct{})
	var tick sync.WaitGroup
	tick.Add(1)
	go func() {
		defer tick.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				progress(copyProgress(loads, total))
			}
		}
	}()
	wg.Wait()
	close(stop)
	tick.Wait()
	close(errc)
	var err error
	for e := range errc {
		if err == nil || (errors.Is(err, context.Canceled) && !errors.Is(e, context.Canceled)) {
			err = e
		}
	}
	var out []TableStats
	for _, l := range loads {
		if l.ended.Load() == 0 {
			continue
		}
		out = append(out, TableStats{Table: l.t.String(), Rows: l.rows.Load(),
			Seconds: time.Duration(l.ended.Load() - l.started.Load()).Seconds(), GenCPU: time.Duration(l.cpu.Load())})
	}
	return out, err
}

// copyProgress is the load's progress: all rows, and the tables in flight
// with their rate and time left.
func copyProgress(loads []*tableLoad, total int64) LoadProgress {
	now := time.Now().UnixNano()
	var rows int64
	var detail []string
	eta := time.Duration(0)
	for _, l := range loads {
		n := l.rows.Load()
		rows += n
		s, e := l.started.Load(), l.ended.Load()
		if s == 0 || e != 0 {
			continue
		}
		el := time.Duration(now - s).Seconds()
		rate := float64(n) / max(el, 1e-3)
		left := time.Duration(-1)
		if rate > 0 {
			left = time.Duration(float64(max(l.total-n, 0)) / rate * float64(time.Second))
			eta = max(eta, left)
		}
		detail = append(detail, fmt.Sprintf("%s %d%% %s/s ETA %s", l.t, 100*n/max(l.total, 1), results.Human(rate), left.Round(time.Second)))
	}
	sort.Strings(detail)
	var done []string
	for _, l := range loads {
		if l.ended.Load() != 0 {
			done = append(done, l.t.String())
		}
	}
	return LoadProgress{Phase: "generate", Detail: strings.Join(detail, ", "), Done: done, Rows: rows, TotalRows: total, Frac: -1, ETA: eta}
}

// copyTable loads one table in one transaction: truncate, COPY FREEZE
// from the generator, record it as done.
func copyTable(ctx context.Context, conn *pgx.Conn, gen *dbgen.Generator, o LoadOptions, l *tableLoad) error {
	l.started.Store(time.Now().UnixNano())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if _, err := tx.Exec(ctx, "truncate "+l.t.String()); err != nil {
		return err
	}
	src := newChunkReader(ctx, gen, l, max(1, o.Workers/2))
	defer src.close()
	if _, err := conn.PgConn().CopyFrom(ctx, src, copySQL(l.t, true)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("copy %s: %w", l.t, err)
	}
	extra := ""
	switch l.t {
	case dbgen.Lineitem:
		extra = fmt.Sprintf(", lineitem_rows = %d", l.rows.Load())
	case dbgen.Orders:
		extra = fmt.Sprintf(", orders_rows = %d", l.rows.Load())
	}
	if _, err := tx.Exec(ctx, "update "+MetaTable+" set tables_done = array_append(tables_done, $1)"+extra, l.t.String()); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	l.ended.Store(time.Now().UnixNano())
	return nil
}

// chunkReader feeds COPY with chunks generated ahead by a few goroutines,
// in order.
type chunkReader struct {
	cancel context.CancelFunc
	chunks chan chan chunk
	cur    []byte
	l      *tableLoad
	wg     sync.WaitGroup
}

func newChunkReader(ctx context.Context, gen *dbgen.Generator, l *tableLoad, generators int) *chunkReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &chunkReader{cancel: cancel, chunks: make(chan chan chunk, 2*generators+2), l: l}
	units, size := dbgen.Units(l.t, gen.Scale()), chunkUnits(l.t)
	jobs := make(chan job, 2*generators+2)
	// The dispatcher hands out chunks in order and queues each result slot
	// in the same order.
	go func() {
		defer close(jobs)
		defer close(r.chunks)
		for first := int64(0); first < units; first += size {
			slot := make(chan chunk, 1)
			select {
			case r.chunks <- slot:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{first: first, n: min(size, units-first), slot: slot}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range generators {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var c chunk
			for j := range jobs {
				c0 := threadCPU()
				c.data, c.rows = gen.Append(make([]byte, 0, len(c.data)+len(c.data)/8), l.t, j.first, j.n)
				l.cpu.Add(int64(threadCPU() - c0))
				j.slot <- c
			}
		}()
	}
	return r
}

type job struct {
	first, n int64
	slot     chan chunk
}

// chunk is a generated chunk and its row count.
type chunk struct {
	data []byte
	rows int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		slot, ok := <-r.chunks
		if !ok {
			return 0, io.EOF
		}
		c, ok := <-slot
		if !ok {
			return 0, io.EOF
		}
		r.cur = c.data
		r.l.rows.Add(c.rows)
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *chunkReader) close() {
	r.cancel()
	// Drain so that blocked generators can finish.
	go func() {
		for slot := range r.chunks {
			select {
			case <-slot:
			default:
			}
		}
	}()
	r.wg.Wait()
}

// dropKeysDDL drops every key and index the load builds.
func dropKeysDDL() []string {
	var out []string
	for _, t := range dbgen.Tables() {
		out = append(out, fmt.Sprintf(`do $$ declare c record; begin
	for c in select conname from pg_constraint where conrelid = '%[1]s'::regclass and contype in ('p', 'f') loop
		execute format('alter table %[1]s drop constraint %%I cascade', c.conname);
	end loop;
	for c in select indexrelid::regclass::text as name from pg_index where indrelid = '%[1]s'::regclass loop
		execute format('drop index %%s', c.name);
	end loop;
end $$`, t))
	}
	return out
}

// buildKeys builds the indexes in parallel (CREATE INDEX on one table does
// not block another on it), then turns the unique ones into primary keys,
// then adds the foreign keys if asked.
func buildKeys(ctx context.Context, connect Connector, o LoadOptions, step func(n, total int)) error {
	var indexes, pkeys []string
	for _, s := range keyDDL {
		var table, name, cols string
		if _, err := fmt.Sscanf(s, "alter table %s add constraint %s primary key", &table, &name); err == nil {
			cols = s[strings.Index(s, "("):]
			indexes = append(indexes, fmt.Sprintf("create unique index %s on %s %s", name, table, cols))
			pkeys = append(pkeys, fmt.Sprintf("alter table %s add constraint %s primary key using index %s", table, name, name))
			continue
		}
		indexes = append(indexes, s)
	}
	total := len(indexes) + len(pkeys)
	if o.ForeignKeys {
		total += len(foreignKeyDDL)
	}
	var n atomic.Int64
	count := func() { step(int(n.Add(1)), total) }
	step(0, total)
	if err := parallelCounted(ctx, connect, o.Workers, indexes, count); err != nil {
		return err
	}
	if err := parallelCounted(ctx, connect, 1, pkeys, count); err != nil {
		return err
	}
	if o.ForeignKeys {
		return parallelCounted(ctx, connect, 1, foreignKeyDDL, count)
	}
	return nil
}

func analyzeDDL() []string {
	var out []string
	for _, t := range loadOrder {
		out = append(out, "analyze "+t.String())
	}
	return out
}

func execSerial(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func parallel(ctx context.Context, connect Connector, workers int, stmts []string) error {
	return parallelCounted(ctx, connect, workers, stmts, func() {})
}

// parallelCounted runs statements over up to workers connections, in
// order of the list, each with maintenance_work_mem raised to 256MB for the
// index builds (never lowered).
func parallelCounted(ctx context.Context, connect Connector, workers int, stmts []string, done func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan string, len(stmts))
	for _, s := range stmts {
		queue <- s
	}
	close(queue)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, len(stmts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := connect(ctx)
			if err != nil {
				errc <- err
				cancel()
				return
			}
			defer conn.Close(context.WithoutCancel(ctx))
			if _, err := conn.Exec(ctx, "select set_config('maintenance_work_mem', '256MB', false) where pg_size_bytes(current_setting('maintenance_work_mem')) < 256 * 1024 * 1024"); err != nil {
				errc <- err
				cancel()
				return
			}
			for s := range queue {
				if _, err := conn.Exec(ctx, s); err != nil {
					errc <- fmt.Errorf("%s: %w", firstLine(s), err)
					cancel()
					return
				}
				done()
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}
