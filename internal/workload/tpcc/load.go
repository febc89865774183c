package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// Connector opens a connection to the target database.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// LoadOptions are the knobs of `tunebench load tpcc`.
type LoadOptions struct {
	Warehouses int // >= 1; optional with Resume (taken from the interrupted load)
	// Workers is the number of parallel connections (COPY streams, then
	// index builds and ANALYZE); 0 = the number of CPUs.
	Workers   int
	Partition bool   // range-partition the big per-warehouse tables by warehouse
	Drop      bool   // drop existing tpcc tables first (their data is lost)
	Resume    bool   // finish an interrupted load (status and progress tables say what is left)
	Seed      int64  // data generator seed; 0 = from the clock (stored in the meta table)
	Version   string // tunebench version, recorded in the meta table
	// Format is the COPY format: "binary" (default) or "text". Binary saves
	// the server parsing numerics and timestamps: about 10% faster at 4
	// warehouses on 2 cores (see Load).
	Format string
	// Space checks the free space before the data goes in (nil: no check).
	Space *loadspace.Load
	// dirSpace is MariaDB's (load_mariadb.go; nil: no check).
	dirSpace *loadspace.DirLoad

	// afterTask, when set (tests), is called after each finished chunk
	// ("data"), key build ("key") or ANALYZE ("analyze").
	afterTask func(kind, table string)
}

// Validate checks the options and fills defaults; errors are usage errors.
func (o *LoadOptions) Validate() error {
	if o.Resume && o.Drop {
		return errs.Usage("give --resume to finish an interrupted load, or --drop to start over", "--resume and --drop both given")
	}
	if o.Warehouses < 0 || (o.Warehouses == 0 && !o.Resume) {
		return errs.Usage("give --warehouses 1 or more", "invalid warehouses %d", o.Warehouses)
	}
	if o.Workers == 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Workers < 1 {
		return errs.Usage("--jobs takes 1 or more (0: one per CPU of the server)", "invalid load workers %d", o.Workers)
	}
	if o.Format == "" {
		o.Format = FormatBinary
	}
	if o.Format != FormatBinary && o.Format != FormatText {
		return errs.Usage("the COPY format is binary or text", "invalid format %q", o.Format)
	}
	return nil
}

// Load phases reported to the progress callback.
const (
	PhaseCreate  = "create"
	PhaseData    = "data"
	PhaseKeys    = "keys"
	PhaseAnalyze = "analyze"
	PhaseDone    = "done"
)

// LoadProgress is reported while loading (about 4 times a second).
type LoadProgress struct {
	Phase     string
	Rows      int64 // rows copied so far (this run of Load)
	TotalRows int64 // rows this run of Load copies
	Steps     int   // key and ANALYZE steps
	StepsDone int
	// Work and WorkDone weigh the steps by the rows of their tables (an
	// ANALYZE reads a sample: a tenth of a key build), for an ETA.
	Work, WorkDone int64
	Elapsed        time.Duration
}

// LoadStats is the outcome of a load.
type LoadStats struct {
	Warehouses int              `json:"warehouses"`
	Partitions int              `json:"partitions"`
	Workers    int              `json:"workers"`
	Format     string           `json:"format"`
	Seed       int64            `json:"seed"`
	Resumed    bool             `json:"resumed"`
	Complete   bool             `json:"complete"` // nothing was left to do (resume of a finished load)
	Chunks     int              `json:"chunks"`   // chunks copied by this run
	Skipped    int              `json:"chunks_skipped"`
	Rows       int64            `json:"rows"`
	TableRows  map[string]int64 `json:"table_rows"`
	RowsPerSec float64          `json:"rows_per_second"` // Rows / Total
	Total      time.Duration    `json:"total_ns"`
	Prepare    time.Duration    `json:"prepare_ns"` // drop and create
	Data       time.Duration    `json:"data_ns"`    // first COPY start to last COPY commit
	Keys       time.Duration    `json:"keys_ns"`    // first to last key build (after Data)
	Analyze    time.Duration    `json:"analyze_ns"` // first to last ANALYZE (overlaps Keys: a table is analyzed after its keys)
	CPU        time.Duration    `json:"cpu_ns"`     // this process's CPU time (generator, COPY protocol), not the server's
	GCCycles   int64            `json:"gc_cycles"`
	DataMBytes float64          `json:"data_mbytes"` // size of the tables and indexes after the load
}

// Load builds the tpcc schema and data.
//
// The plan (planChunks): one chunk per table, or per partition with
// Partition, each copied in one transaction that truncates its relation,
// COPYs with FREEZE and marks the chunk done in ProgressTable. A chunk is
// therefore all there or not there at all, and needs no VACUUM (frozen,
// all-visible rows). Workers connections take chunks biggest first. When
// all data is in, they build the keys (Keys; one statement at a time per
// table, so two connections build different tables' indexes at once, each
// with the server's parallel maintenance workers) and ANALYZE each table
// after its keys. MetaTable moves from loading to indexing to complete;
// only complete loads are used (ReadInfo).
//
// An interrupted load is finished with Resume: the chunks not marked done
// are copied again (deterministic data: every table and warehouse has its
// own random stream from the seed, and every row carries the load's start
// time from MetaTable), missing keys are built, every table is analyzed.
// Existing tables are replaced only with Drop.
//
// Measured on the 2-core machine (PostgreSQL 15, shared_buffers 2GB,
// binary COPY, 2 connections, median of 3):
//   - keys after the data: 3.7 s for 4 warehouses; created with the tables
//     before the COPY: 4.6 s (the data phase takes 4.3 s instead of 2.3 s);
//   - keys only once all data is in: 3.6 s at 4 warehouses, 8.0 s at 10;
//     starting a table's keys as soon as its own data was in, overlapping
//     the other tables' COPY: 3.8 s and 9.1 s (slower in every pair);
//   - binary COPY: 4.0 s at 4 warehouses; text: 4.5 s;
//   - 2 connections: 2.9 s; 3: 3.0 s; 4: 3.3 s (more streams than cores
//     split stock and order_line into plain-COPY ranges: see planChunks).
func Load(ctx context.Context, connect Connector, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
	if err := o.Validate(); err != nil {
		return LoadStats{}, err
	}
	if progress == nil {
		progress = func(LoadProgress) {}
	}
	start := time.Now()
	cpu0 := metrics.ReadSelf()
	st := LoadStats{Workers: o.Workers, Format: o.Format, Resumed: o.Resume, TableRows: map[string]int64{}}
	report := func(p LoadProgress) {
		p.Elapsed = time.Since(start)
		progress(p)
	}
	report(LoadProgress{Phase: PhaseCreate})

	admin, err := connect(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close(context.Background())

	var info Info
	var pending []chunk
	if o.Resume {
		info, pending, err = prepareResume(ctx, admin, o)
		if err != nil {
			return st, err
		}
		if info.Status == StatusComplete {
			st.Warehouses, st.Partitions, st.Seed, st.Complete = info.Warehouses, info.Partitions, info.Seed, true
			st.Total = time.Since(start)
			report(LoadProgress{Phase: PhaseDone})
			return st, nil
		}
		in := loadspace.RelationBytes(ctx, admin, Tables)
		if err := o.Space.Check(ctx, admin, dataBytes(info.Warehouses)-in); err != nil {
			return st, err
		}
	} else {
		info, pending, err = prepareFresh(ctx, admin, o)
		if err != nil {
			return st, err
		}
	}
	st.Warehouses, st.Partitions, st.Seed = info.Warehouses, info.Partitions, info.Seed
	st.Prepare = time.Since(start)

	total, _ := countChunks(pending)
	st.Chunks = len(pending)
	sc := newScheduler(pending, info.Warehouses, info.Seed)
	// Tables loaded by plain COPY (split over several streams) need a
	// VACUUM to set hint bits and the visibility map; FREEZE chunks do not.
	// (It runs after all data is in: an open COPY transaction would keep it
	// from marking the pages all-visible.)
	vacuum := map[string]bool{}
	if err := func() error {
		rows, err := admin.Query(ctx, "select tbl from "+ProgressTable+" group by tbl having not bool_and(frozen)")
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, n := range names {
			vacuum[n] = true
		}
		return err
	}(); err != nil {
		return st, err
	}
	if o.Resume {
		if err := admin.QueryRow(ctx, "select count(*) from "+ProgressTable+" where done_at is not null").Scan(&st.Skipped); err != nil {
			return st, err
		}
	}
	var rows atomic.Int64
	tableRows := map[string]*atomic.Int64{}
	for _, t := range Tables {
		tableRows[t] = new(atomic.Int64)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopTicker := workload.Every(250*time.Millisecond, func() {
		p := sc.progress()
		p.Rows, p.TotalRows = rows.Load(), total
		report(p)
	})

	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil || (errors.Is(firstErr, context.Canceled) && !errors.Is(err, context.Canceled)) {
			firstErr = err
		}
		errMu.Unlock()
		sc.abort()
		cancel()
	}
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := connect(runCtx)
			if err != nil {
				fail(err)
				return
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(runCtx, "set synchronous_commit = off; set maintenance_work_mem = '512MB'"); err != nil {
				fail(err)
				return
			}
			for {
				t := sc.next()
				if t == nil {
					return
				}
				t0 := time.Now()
				var err error
				switch t.kind {
				case taskData:
					err = copyChunk(runCtx, conn, t.chunk, info, o.Format, &rows, tableRows[t.chunk.Table])
				case taskKey:
					err = buildKey(runCtx, conn, t.key)
				case taskAnalyze:
					if vacuum[t.table] {
						_, err = conn.Exec(runCtx, "vacuum (analyze) "+t.table)
					} else {
						_, err = conn.Exec(runCtx, "analyze "+t.table)
					}
				}
				if err != nil {
					fail(err)
					return
				}
				if sc.finish(t, t0, time.Now()) {
					// The last chunk is in: keys and ANALYZE are all that is left.
					if _, err := conn.Exec(runCtx, "update "+MetaTable+" set status = $1", StatusIndexing); err != nil {
						fail(err)
						return
					}
				}
				if o.afterTask != nil {
					o.afterTask([...]string{"data", "key", "analyze"}[t.kind], t.table)
				}
			}
		}()
	}
	wg.Wait()
	stopTicker()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	st.Data, st.Keys, st.Analyze = sc.spans()
	st.Rows = rows.Load()
	for t, n := range tableRows {
		if v := n.Load(); v > 0 {
			st.TableRows[t] = v
		}
	}
	if firstErr != nil {
		st.Total = time.Since(start)
		return st, firstErr
	}

	// Done: autovacuum back on, status complete, in one transaction.
	err = pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
		for _, rel := range leafRelations(info.Warehouses, info.Partitions) {
			if _, err := tx.Exec(ctx, "alter table "+rel+" reset (autovacuum_enabled)"); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "update "+MetaTable+" set status = $1, loaded_at = now(), load_seconds = $2", StatusComplete, time.Since(start).Seconds())
		return err
	})
	if err != nil {
		return st, fmt.Errorf("marking the load complete: %w", err)
	}
	var bytes int64
	if err := admin.QueryRow(ctx, "select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint from pg_class c where c.relname = any($1) and pg_table_is_visible(c.oid)",
		leafRelations(info.Warehouses, info.Partitions)).Scan(&bytes); err == nil {
		st.DataMBytes = float64(bytes) / (1 << 20)
	}
	st.Total = time.Since(start)
	if st.Total > 0 {
		st.RowsPerSec = float64(st.Rows) / st.Total.Seconds()
	}
	cpu := metrics.ReadSelf().Sub(cpu0)
	st.CPU, st.GCCycles = cpu.CPU, cpu.GCCycles
	report(LoadProgress{Phase: PhaseDone, Rows: st.Rows, TotalRows: total, Steps: sc.steps, StepsDone: sc.steps, Work: sc.work, WorkDone: sc.work})
	return st, nil
}

func countChunks(cs []chunk) (rows int64, n int) {
	for _, c := range cs {
		rows += c.Rows
	}
	return rows, len(cs)
}

// ourRelations are the tables a tpcc load owns.
func ourRelations() []string {
	return append(append([]string{}, Tables...), MetaTable, ProgressTable)
}

// prepareFresh drops (with Drop, then a checkpoint frees their space) or
// refuses existing tables, checks the space, then creates the schema, the
// meta row and the chunk list in one transaction.
func prepareFresh(ctx context.Context, admin *pgx.Conn, o LoadOptions) (Info, []chunk, error) {
	have, err := existingRelations(ctx, admin, ourRelations())
	if err != nil {
		return Info{}, nil, err
	}
	if len(have) > 0 && !o.Drop {
		return Info{}, nil, refuseExisting(have, func() (Info, error) { return readMeta(ctx, admin) })
	}

	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	parts := 0
	if o.Partition {
		parts = partitionCount(o.Warehouses)
	}
	info := Info{
		Warehouses: o.Warehouses, Partitioned: parts > 0, Partitions: parts, Seed: seed, Format: o.Format,
		Version: o.Version, Status: StatusLoading, StartedAt: time.Now().Truncate(time.Second),
		// C-Load for C_LAST (and the other two, unused by the load but kept
		// so runs can report them): drawn from the seed, independently of
		// anything a run draws (clause 2.1.6.1).
		Load: NewConstants(constantsRand(seed)),
	}
	if len(have) > 0 {
		if _, err := admin.Exec(ctx, "drop table if exists "+strings.Join(ourRelations(), ", ")+" cascade"); err != nil {
			return Info{}, nil, fmt.Errorf("dropping the old tables: %w", err)
		}
		o.Space.AfterDrop(ctx, admin) // a CHECKPOINT frees their files and WAL
	}
	if err := o.Space.Check(ctx, admin, dataBytes(o.Warehouses)); err != nil {
		return Info{}, nil, err
	}
	// After the check: the rows of each chunk are counted by drawing the
	// order lines' counts, which for a load far too big takes long.
	chunks := planChunks(o.Warehouses, parts, o.Workers, seed)
	err = pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
		stmts := append(createStatements(o.Warehouses, parts), metaDDL, progressDDL)
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", firstLine(s), err)
			}
		}
		if _, err := tx.Exec(ctx, `insert into `+MetaTable+` (warehouses, partitions, seed, c_last, c_cust_id, c_item_id, format, status, version, started_at)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			info.Warehouses, info.Partitions, info.Seed, info.Load.CLast, info.Load.CCustID, info.Load.CItemID, info.Format, info.Status, info.Version, info.StartedAt); err != nil {
			return err
		}
		rows := make([][]any, len(chunks))
		for i, c := range chunks {
			rows[i] = []any{c.ID, c.Table, c.Rel, c.WLo, c.WHi, c.Freeze, c.Rows}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{ProgressTable}, []string{"chunk", "tbl", "rel", "w_lo", "w_hi", "frozen", "rows"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return Info{}, nil, err
	}
	return info, chunks, nil
}

// refuseExisting is a fresh load's refusal of the tables there (have),
// pointing at --resume when an interrupted load is there (meta reads its
// row); both dialects' loaders share it.
func refuseExisting(have map[string]bool, meta func() (Info, error)) error {
	var names []string
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	hint := "add --drop to replace them (their data is lost), or load into another database"
	if have[MetaTable] {
		if m, err := meta(); err == nil && m.Status != StatusComplete {
			hint = fmt.Sprintf("an interrupted load of %d warehouses is there: finish it with --resume, or add --drop to start over", m.Warehouses)
		}
	}
	return errs.Usage(hint, "the database already has tpcc tables (%s)", strings.Join(names, ", "))
}

// constantsRand is the random source of the load constants.
func constantsRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), streamID("constants", 0, 0)))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// prepareResume reads the interrupted load and the chunks it has left.
func prepareResume(ctx context.Context, admin *pgx.Conn, o LoadOptions) (Info, []chunk, error) {
	have, err := existingRelations(ctx, admin, ourRelations())
	if err != nil {
		return Info{}, nil, err
	}
	if !have[MetaTable] || !have[ProgressTable] {
		return Info{}, nil, errs.Usage(loadHint, "nothing to resume: the database has no tpcc load tunebench started")
	}
	info, err := readMeta(ctx, admin)
	if err != nil {
		return info, nil, err
	}
	if o.Warehouses != 0 && o.Warehouses != info.Warehouses {
		return info, nil, errs.Usage(fmt.Sprintf("resume with --warehouses %d (or without --warehouses), or start over with --drop", info.Warehouses),
			"the interrupted load is of %d warehouses, not %d", info.Warehouses, o.Warehouses)
	}
	if o.Partition && !info.Partitioned {
		return info, nil, errs.Usage("resume without --partition, or start over with --drop", "the interrupted load is not partitioned")
	}
	if info.Status == StatusComplete {
		return info, nil, nil
	}
	for _, t := range Tables {
		if !have[t] {
			return info, nil, errs.Usage("start over with --drop", "cannot resume: table %s is missing", t)
		}
	}
	rows, err := admin.Query(ctx, "select chunk, tbl, rel, w_lo, w_hi, frozen, rows from "+ProgressTable+" where done_at is null order by chunk")
	if err != nil {
		return info, nil, err
	}
	var pending []chunk
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.ID, &c.Table, &c.Rel, &c.WLo, &c.WHi, &c.Freeze, &c.Rows); err != nil {
			rows.Close()
			return info, nil, err
		}
		pending = append(pending, c)
	}
	if err := rows.Err(); err != nil {
		return info, nil, err
	}
	return info, pending, nil
}

// copyChunk loads one chunk in one transaction.
func copyChunk(ctx context.Context, conn *pgx.Conn, c chunk, info Info, format string, rows, tableRows *atomic.Int64) error {
	// Every chunk, also one copied by a resumed load, writes the load's
	// start time: O_ENTRY_D = OL_DELIVERY_D across chunks.
	src := &copySource{g: newGen(c.Table, info.Seed, info.Load, c.WLo, c.WHi), e: newEnc(format, info.StartedAt.Local()), counter: rows}
	opts := "format " + format
	if c.Freeze {
		opts += ", freeze"
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if c.Freeze {
			if _, err := tx.Exec(ctx, "truncate "+c.Rel); err != nil {
				return err
			}
		}
		// rows counts for progress as rows are produced; a failed chunk
		// takes its count back below.
		_, err := conn.PgConn().CopyFrom(ctx, src, "copy "+c.Rel+" from stdin with ("+opts+")")
		if err != nil {
			return err
		}
		if src.rows != c.Rows {
			return fmt.Errorf("generated %d rows, expected %d (a generator bug)", src.rows, c.Rows)
		}
		_, err = tx.Exec(ctx, "update "+ProgressTable+" set done_at = now() where chunk = $1", c.ID)
		return err
	})
	if err != nil {
		rows.Add(-src.rows)
		return fmt.Errorf("loading %s (warehouses %d-%d): %w", c.Rel, c.WLo, c.WHi, err)
	}
	tableRows.Add(src.rows)
	return nil
}

// buildKey runs one key statement unless its index exists (resume).
func buildKey(ctx context.Context, conn *pgx.Conn, k keyStep) error {
	var exists bool
	if err := conn.QueryRow(ctx, "select exists (select 1 from pg_class where relname = $1 and relkind in ('i', 'I') and pg_table_is_visible(oid))", k.Name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, k.SQL); err != nil {
		return fmt.Errorf("%s: %w", k.SQL, err)
	}
	return nil
}

// ---- the scheduler: data chunks, then per table its keys and ANALYZE ----

const (
	taskData = iota
	taskKey
	taskAnalyze
)

type task struct {
	kind  int
	table string
	chunk chunk
	key   keyStep
}

type tableState struct {
	rows     int64 // all rows of the table (for ordering key builds)
	dataLeft int   // chunks not yet finished
	keys     []keyStep
	analyzed bool
	busy     bool // a key build or ANALYZE is running
}

type scheduler struct {
	mu        sync.Mutex
	cond      *sync.Cond
	data      []chunk // pending chunks, biggest first
	tables    map[string]*tableState
	running   int
	aborted   bool
	steps     int
	stepsDone int
	dataLeft  int
	keysBusy  int // key builds running
	work      int64
	workDone  int64
	// spans per task kind: first start, last end
	first, last [3]time.Time
}

func newScheduler(pending []chunk, warehouses int, seed int64) *scheduler {
	s := &scheduler{tables: map[string]*tableState{}}
	s.cond = sync.NewCond(&s.mu)
	s.data = append([]chunk(nil), pending...)
	sortByCost(s.data)
	for _, t := range Tables {
		lo, hi := 1, warehouses
		if t == "item" {
			lo, hi = 0, 0
		}
		s.tables[t] = &tableState{rows: chunkRows(t, seed, lo, hi)}
	}
	for _, c := range pending {
		s.tables[c.Table].dataLeft++
	}
	s.dataLeft = len(pending)
	for _, k := range keySteps() {
		ts := s.tables[k.Table]
		ts.keys = append(ts.keys, k)
	}
	for _, ts := range s.tables {
		s.steps += len(ts.keys) + 1
		s.work += int64(len(ts.keys))*ts.rows + ts.rows/10
	}
	return s
}

// next blocks until a task is ready, or returns nil when all is done or the
// load was aborted.
func (s *scheduler) next() *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.aborted {
			return nil
		}
		if t := s.pick(); t != nil {
			s.running++
			return t
		}
		if s.allDone() {
			return nil
		}
		s.cond.Wait()
	}
}

func (s *scheduler) allDone() bool {
	if len(s.data) > 0 || s.running > 0 {
		return false
	}
	for _, ts := range s.tables {
		if ts.dataLeft > 0 || len(ts.keys) > 0 || !ts.analyzed {
			return false
		}
	}
	return true
}

func (s *scheduler) pick() *task {
	if len(s.data) > 0 {
		c := s.data[0]
		s.data = s.data[1:]
		return &task{kind: taskData, table: c.Table, chunk: c}
	}
	// Keys and ANALYZE start when all data is in (measured: overlapping them
	// with the other tables' COPY was slower, see Load). Then the biggest
	// table that is not busy: its next key, then its ANALYZE.
	if s.dataLeft > 0 {
		return nil
	}
	var best string
	var bestRows int64 = -1
	for name, ts := range s.tables {
		if ts.dataLeft > 0 || ts.busy || (len(ts.keys) == 0 && ts.analyzed) {
			continue
		}
		if ts.rows > bestRows || (ts.rows == bestRows && name < best) {
			best, bestRows = name, ts.rows
		}
	}
	if best == "" {
		return nil
	}
	ts := s.tables[best]
	ts.busy = true
	if len(ts.keys) > 0 {
		k := ts.keys[0]
		ts.keys = ts.keys[1:]
		s.keysBusy++
		return &task{kind: taskKey, table: best, key: k}
	}
	return &task{kind: taskAnalyze, table: best}
}

// finish records a finished task; it reports whether it was the last data
// chunk.
func (s *scheduler) finish(t *task, start, end time.Time) (lastData bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	ts := s.tables[t.table]
	switch t.kind {
	case taskData:
		ts.dataLeft--
		s.dataLeft--
		lastData = s.dataLeft == 0
	case taskKey:
		ts.busy = false
		s.keysBusy--
		s.stepsDone++
		s.workDone += ts.rows
	case taskAnalyze:
		ts.busy = false
		ts.analyzed = true
		s.stepsDone++
		s.workDone += ts.rows / 10
	}
	if s.first[t.kind].IsZero() || start.Before(s.first[t.kind]) {
		s.first[t.kind] = start
	}
	if end.After(s.last[t.kind]) {
		s.last[t.kind] = end
	}
	s.cond.Broadcast()
	return lastData
}

func (s *scheduler) abort() {
	s.mu.Lock()
	s.aborted = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// progress says what the load is busy with.
func (s *scheduler) progress() LoadProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := LoadProgress{Phase: PhaseAnalyze, Steps: s.steps, StepsDone: s.stepsDone, Work: s.work, WorkDone: s.workDone}
	if s.dataLeft > 0 {
		p.Phase = PhaseData
		return p
	}
	if s.keysBusy > 0 {
		p.Phase = PhaseKeys
		return p
	}
	for _, ts := range s.tables {
		if len(ts.keys) > 0 {
			p.Phase = PhaseKeys
		}
	}
	return p
}

func (s *scheduler) spans() (data, keys, analyze time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	span := func(k int) time.Duration {
		if s.first[k].IsZero() {
			return 0
		}
		return s.last[k].Sub(s.first[k])
	}
	return span(taskData), span(taskKey), span(taskAnalyze)
}
