package tpcc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// The load on MariaDB: the same generator (load_gen.go) writes the rows in
// the text format LOAD DATA reads by default (the one PostgreSQL's COPY
// text shares), streamed with LOAD DATA LOCAL INFILE (target.TextLoader).
// InnoDB keeps a table in its primary key's order, and the generator
// writes every table in that order, so the primary keys are made with the
// tables and the rows go in at the end of the key; the two secondary
// indexes are built after the data (a sorted build). Each chunk goes in
// one transaction that also marks it done in ProgressTable, so an
// interrupted load resumes where it stopped, as on PostgreSQL.

// mariaBytesSQL is what the tpcc tables take with their indexes.
var mariaBytesSQL = "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('" +
	strings.Join(Tables, "', '") + "')"

// mariaKeys are the primary keys, made with the tables.
var mariaKeys = map[string]string{
	"warehouse":  "w_id",
	"district":   "d_w_id, d_id",
	"customer":   "c_w_id, c_d_id, c_id",
	"new_order":  "no_w_id, no_d_id, no_o_id",
	"orders":     "o_w_id, o_d_id, o_id",
	"order_line": "ol_w_id, ol_d_id, ol_o_id, ol_number",
	"item":       "i_id",
	"stock":      "s_w_id, s_i_id",
}

// mariaIndexes are the secondary indexes (Keys' two), built after the data.
var mariaIndexes = []keyStep{
	{Table: "customer", Name: "customer_name", SQL: "ALTER TABLE customer ADD INDEX customer_name (c_w_id, c_d_id, c_last, c_first)"},
	{Table: "orders", Name: "orders_customer", SQL: "ALTER TABLE orders ADD UNIQUE INDEX orders_customer (o_w_id, o_d_id, o_c_id, o_id)"},
}

// mariaTableDDL is tableDDL's table in MariaDB: DATETIME for the
// timestamps (a TIMESTAMP column would be in the session's time zone),
// the primary key, InnoDB.
func mariaTableDDL(table string) string {
	ddl := strings.ReplaceAll(tableDDL[table], " timestamp,", " datetime,")
	ddl = strings.ReplaceAll(ddl, " timestamp\n", " datetime\n")
	ddl = strings.TrimSuffix(strings.TrimSpace(ddl), ")")
	if k := mariaKeys[table]; k != "" {
		ddl = strings.TrimRight(ddl, "\n ") + ",\n    primary key (" + k + ")\n"
	}
	return ddl + ") ENGINE=InnoDB"
}

const (
	mariaMetaDDL = `CREATE TABLE ` + MetaTable + ` (
    warehouses   INT NOT NULL,
    partitions   INT NOT NULL,
    seed         BIGINT NOT NULL,
    c_last       INT NOT NULL,
    c_cust_id    INT NOT NULL,
    c_item_id    INT NOT NULL,
    format       VARCHAR(16) NOT NULL,
    status       VARCHAR(16) NOT NULL,
    version      VARCHAR(64) NOT NULL DEFAULT '',
    started_at   DATETIME NOT NULL,
    loaded_at    DATETIME(6),
    load_seconds DOUBLE
) ENGINE=InnoDB`
	mariaProgressDDL = `CREATE TABLE ` + ProgressTable + ` (
    chunk   INT PRIMARY KEY,
    tbl     VARCHAR(32) NOT NULL,
    rel     VARCHAR(64) NOT NULL,
    w_lo    INT NOT NULL,
    w_hi    INT NOT NULL,
    frozen  BOOL NOT NULL,
    ` + "`rows`" + `  BIGINT NOT NULL,
    done_at DATETIME(6)
) ENGINE=InnoDB`
)

// refuseOnMariaDB says which load options MariaDB does not take.
func refuseOnMariaDB(o LoadOptions) error {
	if o.Partition {
		return errs.Usage("leave --partition out on MariaDB", "tpcc on MariaDB loads its tables unpartitioned")
	}
	return nil
}

// loadMariaDB is Load on MariaDB (see the file comment).
func loadMariaDB(ctx context.Context, admins target.Admins, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
	o.Format = FormatText
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
	cpu0 := metrics.ReadSelf()
	st := LoadStats{Workers: o.Workers, Format: o.Format, Resumed: o.Resume, TableRows: map[string]int64{}}
	report := func(p LoadProgress) {
		p.Elapsed = time.Since(start)
		progress(p)
	}
	report(LoadProgress{Phase: PhaseCreate})
	admin, err := admins.Admin(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close()
	if _, ok := admin.(target.TextLoader); !ok {
		return st, errs.New(errs.KindInternal, "", "the MariaDB admin connection takes no text rows")
	}
	// Before anything is made: the rows go in by LOAD DATA LOCAL INFILE.
	var local int
	if err := admin.QueryRow(ctx, "SELECT @@GLOBAL.local_infile").Scan(&local); err != nil {
		return st, err
	}
	if local == 0 {
		return st, errs.New(errs.KindEnvironment, "turn it on: SET GLOBAL local_infile = ON (or local_infile = 1 in the server's option file), then load again",
			"the server does not allow LOAD DATA LOCAL INFILE (local_infile is OFF), by which tpcc loads its rows")
	}

	var info Info
	var pending []chunk
	if o.Resume {
		info, pending, err = mariaPrepareResume(ctx, admin, o)
		if err != nil {
			return st, err
		}
		if info.Status == StatusComplete {
			st.Warehouses, st.Seed, st.Complete = info.Warehouses, info.Seed, true
			st.Total = time.Since(start)
			report(LoadProgress{Phase: PhaseDone})
			return st, nil
		}
		if err := admin.QueryRow(ctx, "SELECT COUNT(*) FROM "+ProgressTable+" WHERE done_at IS NOT NULL").Scan(&st.Skipped); err != nil {
			return st, err
		}
		var in int64
		_ = admin.QueryRow(ctx, mariaBytesSQL).Scan(&in)
		if err := o.dirSpace.Check(ctx, dataBytes(info.Warehouses)-in); err != nil {
			return st, err
		}
	} else if info, pending, err = mariaPrepareFresh(ctx, admin, o); err != nil {
		return st, err
	}
	st.Warehouses, st.Seed = info.Warehouses, info.Seed
	st.Prepare = time.Since(start)
	total, _ := countChunks(pending)
	st.Chunks = len(pending)
	sortByCost(pending)

	var rows atomic.Int64
	tableRows := map[string]*atomic.Int64{}
	for _, t := range Tables {
		tableRows[t] = new(atomic.Int64)
	}
	// The keys and ANALYZE steps, weighed by their tables' rows for the
	// ETA (an ANALYZE samples: a tenth of a build).
	steps, work := len(mariaIndexes)+1, int64(0)
	var workDone, stepsDone atomic.Int64
	phase := atomic.Pointer[string]{}
	setPhase := func(p string) { phase.Store(&p) }
	setPhase(PhaseData)
	stopTicker := workload.Every(250*time.Millisecond, func() {
		report(LoadProgress{Phase: *phase.Load(), Rows: rows.Load(), TotalRows: total, Steps: steps, StepsDone: int(stepsDone.Load()),
			Work: work, WorkDone: workDone.Load()})
	})
	defer stopTicker()

	// The free space is watched from here to the end: a MariaDB whose
	// disk is full waits instead of failing.
	ctx, stopGuard := o.dirSpace.Guard(ctx)
	defer stopGuard()
	t0 := time.Now()
	var next atomic.Int64
	err = mariaParallel(ctx, min(o.Workers, max(len(pending), 1)), admins, func(ctx context.Context, a target.Admin) error {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(pending) {
				return nil
			}
			c := pending[i]
			if err := mariaChunk(ctx, a, c, info, &rows, tableRows[c.Table]); err != nil {
				return err
			}
			if o.afterTask != nil {
				o.afterTask("data", c.Table)
			}
		}
	})
	st.Data = time.Since(t0)
	st.Rows = rows.Load()
	for t, n := range tableRows {
		if v := n.Load(); v > 0 {
			st.TableRows[t] = v
		}
	}
	if err != nil {
		st.Total = time.Since(start)
		return st, err
	}
	if _, err := admin.Exec(ctx, "UPDATE "+MetaTable+" SET status = ?", StatusIndexing); err != nil {
		return st, err
	}

	// The secondary indexes, one per connection (different tables), then
	// the statistics of every table.
	t0 = time.Now()
	setPhase(PhaseKeys)
	for _, k := range mariaIndexes {
		work += 10 * chunkRows(k.Table, info.Seed, 1, info.Warehouses)
	}
	for _, t := range Tables {
		work += chunkRows(t, info.Seed, 1, max(info.Warehouses, 1))
	}
	var nextKey atomic.Int64
	err = mariaParallel(ctx, min(o.Workers, len(mariaIndexes)), admins, func(ctx context.Context, a target.Admin) error {
		for {
			i := int(nextKey.Add(1) - 1)
			if i >= len(mariaIndexes) {
				return nil
			}
			k := mariaIndexes[i]
			if err := mariaBuildIndex(ctx, a, k); err != nil {
				return err
			}
			stepsDone.Add(1)
			workDone.Add(10 * chunkRows(k.Table, info.Seed, 1, info.Warehouses))
			if o.afterTask != nil {
				o.afterTask("key", k.Table)
			}
		}
	})
	st.Keys = time.Since(t0)
	if err != nil {
		st.Total = time.Since(start)
		return st, err
	}
	t0 = time.Now()
	setPhase(PhaseAnalyze)
	if _, err := admin.Exec(ctx, "ANALYZE TABLE "+strings.Join(Tables, ", ")); err != nil {
		return st, fmt.Errorf("ANALYZE TABLE: %w", err)
	}
	stepsDone.Add(1)
	st.Analyze = time.Since(t0)
	if _, err := admin.Exec(ctx, "UPDATE "+MetaTable+" SET status = ?, loaded_at = NOW(6), load_seconds = ?", StatusComplete, time.Since(start).Seconds()); err != nil {
		return st, fmt.Errorf("marking the load complete: %w", err)
	}
	var bytes int64
	if err := admin.QueryRow(ctx, mariaBytesSQL).Scan(&bytes); err == nil {
		st.DataMBytes = float64(bytes) / (1 << 20)
	}
	st.Total = time.Since(start)
	if st.Total > 0 {
		st.RowsPerSec = float64(st.Rows) / st.Total.Seconds()
	}
	cpu := metrics.ReadSelf().Sub(cpu0)
	st.CPU, st.GCCycles = cpu.CPU, cpu.GCCycles
	stopTicker()
	report(LoadProgress{Phase: PhaseDone, Rows: st.Rows, TotalRows: total, Steps: steps, StepsDone: steps, Work: work, WorkDone: work})
	return st, nil
}

// mariaChunks splits the load into chunks of one warehouse (item, and
// warehouse and district, are one chunk each): InnoDB writes undo for
// every row of a transaction, keeps it until the commit and rolls an
// interrupted one back row by row, so a chunk stays a transaction of at
// most about 300,000 rows (one warehouse's order lines), whatever the
// warehouses.
func mariaChunks(warehouses int, seed int64) []chunk {
	var out []chunk
	add := func(table string, lo, hi int) {
		out = append(out, chunk{ID: len(out) + 1, Table: table, Rel: table, WLo: lo, WHi: hi, Rows: chunkRows(table, seed, lo, hi)})
	}
	for _, t := range Tables {
		switch t {
		case "item":
			add(t, 0, 0)
		case "warehouse", "district":
			add(t, 1, warehouses)
		default:
			for w := 1; w <= warehouses; w++ {
				add(t, w, w)
			}
		}
	}
	return out
}

// mariaParallel runs do on n admin connections of their own; the first
// error cancels the others.
func mariaParallel(ctx context.Context, n int, admins target.Admins, do func(context.Context, target.Admin) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil || (errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for i := 0; i < max(n, 1); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := admins.Admin(ctx)
			if err != nil {
				fail(err)
				return
			}
			defer a.Close()
			if err := do(ctx, a); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

// mariaChunk loads one chunk and marks it done, in one transaction.
func mariaChunk(ctx context.Context, a target.Admin, c chunk, info Info, rows, tableRows *atomic.Int64) error {
	// Every chunk, also one of a resumed load, writes the load's start
	// time: O_ENTRY_D = OL_DELIVERY_D across chunks.
	src := &copySource{g: newGen(c.Table, info.Seed, info.Load, c.WLo, c.WHi), e: newEnc(FormatText, info.StartedAt.Local()), counter: rows}
	err := a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
		n, err := tx.(target.TextLoader).BulkLoadText(ctx, c.Rel, nil, '\t', src)
		if err != nil {
			return err
		}
		if src.rows != c.Rows {
			return fmt.Errorf("generated %d rows, expected %d (a generator bug)", src.rows, c.Rows)
		}
		// LOAD DATA LOCAL turns a duplicate key or a value it cannot
		// convert into a warning and goes on: every row must have gone in.
		if n != src.rows {
			return fmt.Errorf("the server took %d of the %d rows (LOAD DATA LOCAL skips duplicate keys and bad values with a warning)", n, src.rows)
		}
		_, err = tx.Exec(ctx, "UPDATE "+ProgressTable+" SET done_at = NOW(6) WHERE chunk = ?", c.ID)
		return err
	})
	if err != nil {
		rows.Add(-src.rows)
		return fmt.Errorf("loading %s (warehouses %d-%d): %w", c.Rel, c.WLo, c.WHi, err)
	}
	tableRows.Add(src.rows)
	return nil
}

// mariaBuildIndex builds one index unless it exists (resume).
func mariaBuildIndex(ctx context.Context, a target.Admin, k keyStep) error {
	var n int
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ?",
		k.Table, k.Name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := a.Exec(ctx, k.SQL); err != nil {
		return fmt.Errorf("%s: %w", k.SQL, err)
	}
	return nil
}

// mariaPrepareFresh drops (with Drop) or refuses existing tables, then
// creates the schema, the meta row and the chunk list. MariaDB commits
// each CREATE on its own: the meta row says "loading" until the end.
func mariaPrepareFresh(ctx context.Context, a target.Admin, o LoadOptions) (Info, []chunk, error) {
	have, err := mariaTables(ctx, a, ourRelations())
	if err != nil {
		return Info{}, nil, err
	}
	if len(have) > 0 && !o.Drop {
		return Info{}, nil, refuseExisting(have, func() (Info, error) { return mariaMeta(ctx, a) })
	}
	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	info := Info{
		Warehouses: o.Warehouses, Seed: seed, Format: FormatText, Version: o.Version, Status: StatusLoading,
		StartedAt: time.Now().Truncate(time.Second), Load: NewConstants(constantsRand(seed)),
	}
	if len(have) > 0 {
		if _, err := a.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(ourRelations(), ", ")); err != nil {
			return Info{}, nil, fmt.Errorf("dropping the old tables: %w", err)
		}
	}
	if err := o.dirSpace.Check(ctx, dataBytes(o.Warehouses)); err != nil {
		return Info{}, nil, err
	}
	// After the check: the rows of each chunk are counted by drawing the
	// order lines' counts, which for a load far too big takes long.
	chunks := mariaChunks(o.Warehouses, seed)
	// The meta table first and last: a load stopped in between is seen
	// as incomplete.
	stmts := append([]string{mariaMetaDDL, mariaProgressDDL}, nil...)
	for _, t := range Tables {
		stmts = append(stmts, mariaTableDDL(t))
	}
	for _, s := range stmts {
		if _, err := a.Exec(ctx, s); err != nil {
			return Info{}, nil, fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	err = a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+MetaTable+` (warehouses, partitions, seed, c_last, c_cust_id, c_item_id, format, status, version, started_at)
			VALUES (?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`,
			info.Warehouses, info.Seed, info.Load.CLast, info.Load.CCustID, info.Load.CItemID, info.Format, info.Status, info.Version, info.StartedAt); err != nil {
			return err
		}
		for lo := 0; lo < len(chunks); lo += 500 {
			part := chunks[lo:min(lo+500, len(chunks))]
			q := "INSERT INTO " + ProgressTable + " (chunk, tbl, rel, w_lo, w_hi, frozen, `rows`) VALUES (?, ?, ?, ?, ?, ?, ?)" +
				strings.Repeat(", (?, ?, ?, ?, ?, ?, ?)", len(part)-1)
			args := make([]any, 0, 7*len(part))
			for _, c := range part {
				args = append(args, c.ID, c.Table, c.Rel, c.WLo, c.WHi, c.Freeze, c.Rows)
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Info{}, nil, err
	}
	return info, chunks, nil
}

// mariaPrepareResume reads the interrupted load and the chunks it has left.
func mariaPrepareResume(ctx context.Context, a target.Admin, o LoadOptions) (Info, []chunk, error) {
	have, err := mariaTables(ctx, a, ourRelations())
	if err != nil {
		return Info{}, nil, err
	}
	if !have[MetaTable] || !have[ProgressTable] {
		return Info{}, nil, errs.Usage(loadHint, "nothing to resume: the database has no tpcc load tunebench started")
	}
	info, err := mariaMeta(ctx, a)
	if err != nil {
		return info, nil, err
	}
	if o.Warehouses != 0 && o.Warehouses != info.Warehouses {
		return info, nil, errs.Usage(fmt.Sprintf("resume with --warehouses %d (or without --warehouses), or start over with --drop", info.Warehouses),
			"the interrupted load is of %d warehouses, not %d", info.Warehouses, o.Warehouses)
	}
	if info.Status == StatusComplete {
		return info, nil, nil
	}
	for _, t := range Tables {
		if !have[t] {
			return info, nil, errs.Usage("start over with --drop", "cannot resume: table %s is missing", t)
		}
	}
	rows, err := a.Query(ctx, "SELECT chunk, tbl, rel, w_lo, w_hi, frozen, `rows` FROM "+ProgressTable+" WHERE done_at IS NULL ORDER BY chunk")
	if err != nil {
		return info, nil, err
	}
	defer rows.Close()
	var pending []chunk
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.ID, &c.Table, &c.Rel, &c.WLo, &c.WHi, &c.Freeze, &c.Rows); err != nil {
			return info, nil, err
		}
		pending = append(pending, c)
	}
	return info, pending, rows.Err()
}

// loadOnMariaDB is Workload.Load on a MariaDB target.
func loadOnMariaDB(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	admins, ok := env.Target.(target.Admins)
	if !ok {
		return nil, errs.New(errs.KindInternal, "", "the MariaDB target has no admin connections")
	}
	o := env.Options
	lo := LoadOptions{Warehouses: int(o.Int("warehouses")), Partition: o.Bool("partition"),
		Drop: o.Bool("drop") || env.Fresh, Resume: o.Bool("resume"), Seed: o.Int("seed"), Version: env.Version}
	lo.Workers = workload.Jobs(o)
	why := "--jobs"
	if lo.Workers == 0 {
		lo.Workers, why = runtime.NumCPU(), "this machine's CPUs"
	}
	if lo.Resume && (env.Given == nil || !env.Given("warehouses")) {
		lo.Warehouses = 0 // taken from the interrupted load
	}
	lo.Format = FormatText
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	lo.dirSpace = &loadspace.DirLoad{Target: env.Target, What: "tpcc", Force: o.Bool("force"), Smaller: "fewer --warehouses"}
	if lo.Warehouses > 0 {
		lo.dirSpace.What += " " + plural(lo.Warehouses, "warehouse")
	}
	what := "loading tpcc " + plural(lo.Warehouses, "warehouse")
	if lo.Resume {
		what = "resuming the tpcc load"
	}
	env.Note("%s into %s with %d jobs (%s)", what, env.Target.Describe(), lo.Workers, why)
	var dataStart time.Duration = -1
	st, err := loadMariaDB(ctx, admins, lo, func(p LoadProgress) {
		if p.Phase == PhaseData && dataStart < 0 {
			dataStart = p.Elapsed
		}
		what := p.Phase
		if p.Phase == PhaseKeys || p.Phase == PhaseAnalyze {
			what = fmt.Sprintf("%s, step %d of %d", p.Phase, p.StepsDone+1, p.Steps)
		}
		env.Progress(workload.LoadProgress{What: what, Rows: p.Rows, TotalRows: p.TotalRows, Frac: loadFraction(p),
			ETA: loadETA(p, dataStart), Elapsed: p.Elapsed, Final: p.Phase == PhaseDone})
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.KindInterrupted, err, "finish it with `tunebench load tpcc --resume`, or start over with --drop",
				"load interrupted; the finished chunks are kept and the load is marked incomplete")
		}
		next := "finish it with `tunebench load tpcc --resume` (the finished chunks are kept), or start over with --drop, with fewer --warehouses"
		if errs.KindOf(err) == errs.KindUsage || errs.KindOf(err) == errs.KindEnvironment {
			return nil, lo.dirSpace.Error(err, next)
		}
		return nil, lo.dirSpace.Error(errs.Wrap(errs.KindOf(err), err, next, "the tpcc load failed"), next)
	}
	if st.Complete {
		return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("the tpcc load of %s is already complete: nothing to resume", plural(st.Warehouses, "warehouse")))}}, nil
	}
	return &workload.Report{Blocks: loadBlocks(st)}, nil
}
