package tpch

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

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

// splitRows is the size from which a table is loaded in parts when more
// than one job loads: below it, one COPY FREEZE is as quick and leaves
// nothing to vacuum.
const splitRows = 50_000

// partsOf is how many parts table t is loaded in by jobs connections: the
// chunks are dealt round-robin to the parts, so that parts loaded side by
// side fill the heap in nearly key order.
func partsOf(t dbgen.Table, scale float64, jobs int) int {
	units := dbgen.Units(t, scale)
	chunks := (units + chunkUnits(t) - 1) / chunkUnits(t)
	if jobs <= 1 || float64(units)*dbgen.RowsPerUnit(t) < splitRows {
		return 1
	}
	return int(min(int64(jobs), chunks))
}

// partName is how a finished part is recorded in the meta row's
// tables_done: "lineitem:2/3" is the second of three.
func partName(t dbgen.Table, k, parts int) string { return fmt.Sprintf("%s:%d/%d", t, k+1, parts) }

// progressOf reads tables_done: the tables finished, and for the others
// the parts finished and of how many.
type progressOf struct {
	tables map[string]bool
	parts  map[string]map[int]bool // table -> finished parts (0-based)
	of     map[string]int          // table -> its number of parts
}

func readDone(entries []string) progressOf {
	p := progressOf{tables: map[string]bool{}, parts: map[string]map[int]bool{}, of: map[string]int{}}
	for _, e := range entries {
		name, part, ok := strings.Cut(e, ":")
		if !ok {
			p.tables[e] = true
			continue
		}
		var k, n int
		if _, err := fmt.Sscanf(part, "%d/%d", &k, &n); err != nil || k < 1 || k > n {
			continue
		}
		if p.parts[name] == nil {
			p.parts[name] = map[int]bool{}
		}
		p.parts[name][k-1] = true
		p.of[name] = n
	}
	for name, done := range p.parts {
		if len(done) == p.of[name] {
			p.tables[name] = true
		}
	}
	return p
}

// started lists the tables with data kept from an interrupted load: done,
// or with some parts done.
func (p progressOf) started() []string {
	var out []string
	for _, t := range loadOrder {
		if p.tables[t.String()] || len(p.parts[t.String()]) > 0 {
			out = append(out, t.String())
		}
	}
	return out
}

// tableLoad is one table in flight, over its parts.
type tableLoad struct {
	t       dbgen.Table
	parts   int
	total   int64 // expected rows (of the parts to load)
	left    atomic.Int64
	rows    atomic.Int64
	started atomic.Int64 // unix ns of the first part; 0 = waiting
	ended   atomic.Int64 // unix ns of the last part
	cpu     atomic.Int64
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

// copyPart loads part k of l's table in one transaction and records it
// done in the same transaction. A table loaded whole is truncated first and
// copied with FREEZE (no hint-bit rewrite later, nothing to vacuum); the
// parts of a split table go in beside each other without it, and the
// table is vacuumed once they are all in.
func copyPart(ctx context.Context, conn *pgx.Conn, gen *dbgen.Generator, l *tableLoad, k int, generators int, hook func(dbgen.Table, int, bool) error) error {
	l.started.CompareAndSwap(0, time.Now().UnixNano())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	whole := l.parts == 1
	if whole {
		if _, err := tx.Exec(ctx, "truncate "+l.t.String()); err != nil {
			return err
		}
	}
	src := newChunkReader(ctx, gen, l, k, generators)
	defer src.close()
	tag, err := conn.PgConn().CopyFrom(ctx, src, copyBinarySQL(l.t, whole))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("copy %s: %w", l.t, err)
	}
	if hook != nil {
		if err := hook(l.t, k, false); err != nil {
			return err
		}
	}
	entry, extra := l.t.String(), ""
	if !whole {
		entry = partName(l.t, k, l.parts)
	}
	switch l.t {
	case dbgen.Lineitem:
		extra = fmt.Sprintf(", lineitem_rows = lineitem_rows + %d", tag.RowsAffected())
	case dbgen.Orders:
		extra = fmt.Sprintf(", orders_rows = orders_rows + %d", tag.RowsAffected())
	}
	if _, err := tx.Exec(ctx, "update "+MetaTable+" set tables_done = array_append(tables_done, $1)"+extra, entry); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if hook != nil {
		if err := hook(l.t, k, true); err != nil {
			return err
		}
	}
	if l.left.Add(-1) == 0 {
		l.ended.Store(time.Now().UnixNano())
	}
	return nil
}

// chunkReader feeds COPY with the binary rows of part k of a table:
// chunks k, k+parts, k+2·parts, ..., generated ahead by a few goroutines
// and read in order, between the binary header and trailer.
type chunkReader struct {
	ctx     context.Context
	cancel  context.CancelFunc
	chunks  chan chan chunk
	cur     []byte
	trailer bool // the trailer is written
	l       *tableLoad
	wg      sync.WaitGroup
}

func newChunkReader(ctx context.Context, gen *dbgen.Generator, l *tableLoad, k, generators int) *chunkReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &chunkReader{ctx: ctx, cancel: cancel, chunks: make(chan chan chunk, 2*generators+2), l: l, cur: dbgen.BinaryHeader}
	units, size := dbgen.Units(l.t, gen.Scale()), chunkUnits(l.t)
	stride := size * int64(l.parts)
	jobs := make(chan job, 2*generators+2)
	// The dispatcher hands out chunks in order and queues each result slot
	// in the same order.
	go func() {
		defer close(jobs)
		defer close(r.chunks)
		for first := int64(k) * size; first < units; first += stride {
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
		if r.trailer {
			return 0, io.EOF
		}
		slot, ok := <-r.chunks
		if ok {
			c, ok := <-slot
			if ok {
				r.cur = c.data
				r.l.rows.Add(c.rows)
				continue
			}
		}
		if err := r.ctx.Err(); err != nil {
			return 0, err // never end a COPY short
		}
		r.cur, r.trailer = dbgen.BinaryTrailer, true
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
