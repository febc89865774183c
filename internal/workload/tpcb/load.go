package tpcb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"

	"github.com/jackc/pgx/v5"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// Connector opens a connection to the target database.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// LoadOptions are the knobs of `tunebench load tpcb`.
type LoadOptions struct {
	Scale      int    // >= 1; 100,000 accounts per unit
	Fillfactor int    // 10..100, pgbench's --fillfactor
	Partitions int    // 0 = not partitioned
	Method     string // "range" (default) or "hash"
	Workers    int    // parallel COPY streams for pgbench_accounts
	Drop       bool   // drop existing pgbench tables first
	// Space checks the free space before the data goes in (nil: no check).
	Space *loadspace.Load
}

// Validate checks the options; errors are usage errors.
func (o *LoadOptions) Validate() error {
	if o.Scale < 1 {
		return errs.Usage("give --scale 1 or more (100,000 accounts per unit)", "invalid scale %d", o.Scale)
	}
	if o.Fillfactor == 0 {
		o.Fillfactor = 100
	}
	if o.Fillfactor < 10 || o.Fillfactor > 100 {
		return errs.Usage("--fillfactor takes 10 to 100, as in pgbench", "invalid fillfactor %d", o.Fillfactor)
	}
	if o.Partitions < 0 {
		return errs.Usage("--partitions takes 0 (none) or more", "invalid partitions %d", o.Partitions)
	}
	if o.Method == "" {
		o.Method = "range"
	}
	if o.Method != "range" && o.Method != "hash" {
		return errs.Usage("--partition-method is range or hash", "invalid partition method %q", o.Method)
	}
	if o.Workers < 1 {
		return errs.Usage("--jobs takes 1 or more (0: one per CPU of the server)", "invalid load workers %d", o.Workers)
	}
	return nil
}

// LoadProgress is reported while loading.
type LoadProgress struct {
	Phase     string // "create", "generate", "vacuum", "primary keys", "done"
	Rows      int64  // rows written so far
	TotalRows int64
	Elapsed   time.Duration
}

// LoadStats is the outcome of a load, with per-phase times like pgbench -i prints.
type LoadStats struct {
	Scale       int           `json:"scale"`
	Rows        int64         `json:"rows"`
	Total       time.Duration `json:"total_ns"`
	Drop        time.Duration `json:"drop_ns"`
	Create      time.Duration `json:"create_ns"`
	Generate    time.Duration `json:"generate_ns"`
	Vacuum      time.Duration `json:"vacuum_ns"`
	PrimaryKeys time.Duration `json:"primary_keys_ns"`
}

// Load builds the schema and data: create tables, COPY branches and tellers,
// COPY accounts over o.Workers parallel streams, VACUUM ANALYZE, then primary
// keys (as pgbench -i does, data before keys). A meta table marks the load as
// complete only at the very end, so a half-done load is never used.
func Load(ctx context.Context, connect Connector, o LoadOptions, progress func(LoadProgress)) (LoadStats, error) {
	if err := o.Validate(); err != nil {
		return LoadStats{}, err
	}
	if progress == nil {
		progress = func(LoadProgress) {}
	}
	start := time.Now()
	st := LoadStats{Scale: o.Scale}
	naccounts := int64(o.Scale) * AccountsPerScale
	total := naccounts + int64(o.Scale)*(BranchesPerScale+TellersPerScale)
	report := func(phase string, rows int64) {
		progress(LoadProgress{Phase: phase, Rows: rows, TotalRows: total, Elapsed: time.Since(start)})
	}

	connect = pgt.LoadSessions(connect)
	admin, err := connect(ctx)
	if err != nil {
		return st, err
	}
	defer admin.Close(context.Background())

	// Drop or refuse.
	t0 := time.Now()
	have, err := existingTables(ctx, admin)
	if err != nil {
		return st, err
	}
	if len(have) > 0 {
		if !o.Drop {
			return st, errs.Usage("add --drop to replace them (their data is lost), or load into another database",
				"the database already has %s", strings.Join(have, ", "))
		}
		if _, err := admin.Exec(ctx, "drop table if exists "+strings.Join(append(append([]string{}, tableNames...), MetaTable), ", ")+" cascade"); err != nil {
			return st, fmt.Errorf("dropping old tables: %w", err)
		}
		o.Space.AfterDrop(ctx, admin) // a CHECKPOINT frees their files and WAL
	}
	st.Drop = time.Since(t0)
	if err := o.Space.Check(ctx, admin, dataBytes(o.Scale, o.Fillfactor)); err != nil {
		return st, err
	}

	// Create.
	t0 = time.Now()
	report("create", 0)
	tx, err := admin.Begin(ctx)
	if err != nil {
		return st, err
	}
	stmts := createStatements(o.Scale, o.Fillfactor, o.Partitions, o.Method)
	stmts = append(stmts, "create table "+MetaTable+" (scale int not null, partitions int not null, method text not null, fillfactor int not null, status text not null, loaded_at timestamptz not null default now(), accounts_oid oid not null)")
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			_ = tx.Rollback(ctx)
			return st, fmt.Errorf("%s: %w", s, err)
		}
	}
	if _, err := tx.Exec(ctx, "insert into "+MetaTable+" (scale, partitions, method, fillfactor, status, accounts_oid) values ($1, $2, $3, $4, 'loading', 'pgbench_accounts'::regclass::oid)",
		o.Scale, o.Partitions, o.Method, o.Fillfactor); err != nil {
		_ = tx.Rollback(ctx)
		return st, err
	}
	if err := tx.Commit(ctx); err != nil {
		return st, err
	}
	st.Create = time.Since(t0)

	// Generate: small tables on the admin connection, accounts in parallel.
	t0 = time.Now()
	var rows atomic.Int64
	report("generate", 0)
	if err := copyRows(ctx, admin, "pgbench_branches", &rangeRows{next: 1, end: int64(o.Scale*BranchesPerScale) + 1, format: branchRow}, &rows); err != nil {
		return st, err
	}
	if err := copyRows(ctx, admin, "pgbench_tellers", &rangeRows{next: 1, end: int64(o.Scale*TellersPerScale) + 1, format: tellerRow}, &rows); err != nil {
		return st, err
	}
	// Accounts: workers take chunks of one scale unit from a shared counter.
	var nextChunk atomic.Int64
	chunks := int64(o.Scale)
	workers := o.Workers
	if int64(workers) > chunks {
		workers = int(chunks)
	}
	stop := workload.Every(250*time.Millisecond, func() { report("generate", rows.Load()) })
	err = inParallel(ctx, workers, func(ctx context.Context) error {
		conn, err := connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		return copyRows(ctx, conn, "pgbench_accounts", &chunkRows{next: &nextChunk, chunks: chunks}, &rows)
	})
	stop()
	if err != nil {
		return st, err
	}
	st.Rows = rows.Load()
	st.Generate = time.Since(t0)
	report("generate", st.Rows)

	// Vacuum analyze, the big table on its own connection.
	t0 = time.Now()
	report("vacuum", st.Rows)
	if err := parallelExec(ctx, connect, admin,
		[]string{"vacuum analyze pgbench_accounts"},
		[]string{"vacuum analyze pgbench_branches", "vacuum analyze pgbench_tellers", "vacuum analyze pgbench_history"}); err != nil {
		return st, err
	}
	st.Vacuum = time.Since(t0)

	// Primary keys, the big one on its own connection with more maintenance memory.
	t0 = time.Now()
	report("primary keys", st.Rows)
	if err := parallelExec(ctx, connect, admin,
		[]string{"set maintenance_work_mem = '1GB'", primaryKeys[2]},
		[]string{primaryKeys[0], primaryKeys[1]}); err != nil {
		return st, err
	}
	st.PrimaryKeys = time.Since(t0)

	if _, err := admin.Exec(ctx, "update "+MetaTable+" set status = 'complete', loaded_at = now()"); err != nil {
		return st, err
	}
	st.Total = time.Since(start)
	report("done", st.Rows)
	return st, nil
}

// inParallel runs job on n goroutines at once; the first error cancels the
// others' context and is returned (ctx's error when it ended them).
func inParallel(ctx context.Context, n int, job func(context.Context) error) error {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := job(jctx); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errc)
	return firstError(errc, ctx)
}

func firstError(errc <-chan error, ctx context.Context) error {
	var first error
	for err := range errc {
		if first == nil || errors.Is(first, context.Canceled) {
			first = err
		}
	}
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// parallelExec runs list a on a new connection and list b on admin, at once.
func parallelExec(ctx context.Context, connect Connector, admin *pgx.Conn, a, b []string) error {
	errc := make(chan error, 1)
	go func() {
		conn, err := connect(ctx)
		if err != nil {
			errc <- err
			return
		}
		defer conn.Close(context.Background())
		errc <- execAll(ctx, conn, a)
	}()
	errB := execAll(ctx, admin, b)
	errA := <-errc
	if errA != nil {
		return errA
	}
	return errB
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// rowSource fills p with whole text-format COPY rows.
type rowSource interface {
	fill(p []byte) (n int, rows int64, done bool)
}

// copyRows streams a text COPY into table from src.
func copyRows(ctx context.Context, conn *pgx.Conn, table string, src rowSource, counter *atomic.Int64) error {
	r := &copyReader{src: src, counter: counter}
	_, err := conn.PgConn().CopyFrom(ctx, r, "copy "+table+" from stdin")
	if err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}

type copyReader struct {
	src     rowSource
	counter *atomic.Int64
	done    bool
}

// maxRow is the longest row any source writes.
const maxRow = 64

func (r *copyReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if len(p) < maxRow {
		return 0, io.ErrShortBuffer
	}
	n, rows, done := r.src.fill(p)
	r.counter.Add(rows)
	if done {
		r.done = true
		if n == 0 {
			return 0, io.EOF
		}
	}
	return n, nil
}

// rangeRows writes rows next..end-1 with format.
type rangeRows struct {
	next, end int64
	format    func(b []byte, id int64) []byte
}

func (s *rangeRows) fill(p []byte) (int, int64, bool) {
	b := p[:0]
	var rows int64
	for s.next < s.end && len(p)-len(b) >= maxRow {
		b = s.format(b, s.next)
		s.next++
		rows++
	}
	return len(b), rows, s.next >= s.end
}

// chunkRows writes account rows, one scale unit at a time, taking units from a
// counter shared by the load workers.
type chunkRows struct {
	next      *atomic.Int64
	chunks    int64
	cur, end  int64
	exhausted bool
}

func (s *chunkRows) fill(p []byte) (int, int64, bool) {
	b := p[:0]
	var rows int64
	for len(p)-len(b) >= maxRow {
		if s.cur >= s.end {
			c := s.next.Add(1) - 1
			if c >= s.chunks {
				s.exhausted = true
				break
			}
			s.cur = c*AccountsPerScale + 1
			s.end = s.cur + AccountsPerScale
		}
		b = accountRow(b, s.cur)
		s.cur++
		rows++
	}
	return len(b), rows, s.exhausted
}

// Row formats: text COPY, as pgbench -i writes them: branches and tellers
// with a NULL filler, accounts with an empty one (stored blank-padded).
func branchRow(b []byte, bid int64) []byte {
	b = strconv.AppendInt(b, bid, 10)
	return append(b, "\t0\t\\N\n"...)
}

func tellerRow(b []byte, tid int64) []byte {
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, (tid-1)/TellersPerScale+1, 10)
	return append(b, "\t0\t\\N\n"...)
}

func accountRow(b []byte, aid int64) []byte {
	b = strconv.AppendInt(b, aid, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, (aid-1)/AccountsPerScale+1, 10)
	return append(b, "\t0\t\n"...)
}
