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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// chunkUnits is how many units a generated chunk holds: about a megabyte
// at SF 1 and above; below, a table has as many chunks as at SF 1 (so a
// small load is split the same way).
func chunkUnits(t dbgen.Table, scale float64) int64 {
	base := int64(5000)
	switch t {
	case dbgen.Lineitem:
		base = 1000
	case dbgen.Orders, dbgen.PartSupp:
		base = 2500
	}
	return max(1, int64(float64(base)*min(1, scale)))
}

// chunksPerPart is the fewest chunks a part of a split table takes. The
// parts take the table's chunks from one counter, in turn, so parts copied
// side by side fill the heap in near key order however they are started;
// the chunks in flight are out of order among themselves, which matters
// only when they are a fair share of the table: lineitem's and orders'
// key correlation stays above 0.99 at SF 1 with 2 parts, customer's (30
// chunks) fell to 0.77.
const chunksPerPart = 50

// partsOf is how many parts table t is loaded in by jobs connections: 1
// (whole, with COPY FREEZE) when one job loads or the table has fewer than
// 2·chunksPerPart chunks.
func partsOf(t dbgen.Table, scale float64, jobs int) int {
	size := chunkUnits(t, scale)
	chunks := (dbgen.Units(t, scale) + size - 1) / size
	return int(max(1, min(int64(jobs), chunks/chunksPerPart)))
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
	next    atomic.Int64 // the next chunk a part takes
	copied  atomic.Int64 // rows committed by its parts
	// horizon is the next transaction id after its parts' commits: the
	// VACUUM that follows them waits until no transaction older is open.
	horizon atomic.Uint64
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

// copyPart loads part k of l's table in one transaction. A table loaded
// whole is truncated first, copied with FREEZE (no hint-bit rewrite later,
// nothing to vacuum) and recorded done in the same transaction; the parts
// of a split table go in side by side without FREEZE, and the table is
// recorded done (doneTask) and vacuumed once they are all in. An
// interrupted load redoes a split table that was not recorded done.
func copyPart(ctx context.Context, conn *pgx.Conn, gen *dbgen.Generator, l *tableLoad, k int, generators int, hook func(dbgen.Table, int, string) error) error {
	if hook != nil {
		if err := hook(l.t, k, "start"); err != nil {
			return err
		}
	}
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
	src := newChunkReader(ctx, gen, l, generators)
	defer src.close()
	tag, err := conn.PgConn().CopyFrom(ctx, src, copyBinarySQL(l.t, whole))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("copy %s: %w", l.t, err)
	}
	if hook != nil {
		if err := hook(l.t, k, "copied"); err != nil {
			return err
		}
	}
	if whole {
		if err := recordDone(ctx, tx, l.t, tag.RowsAffected()); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	l.copied.Add(tag.RowsAffected())
	if !whole {
		var next uint64
		if err := conn.QueryRow(ctx, "select pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&next); err != nil {
			return err
		}
		for cur := l.horizon.Load(); next > cur && !l.horizon.CompareAndSwap(cur, next); cur = l.horizon.Load() {
		}
	}
	if hook != nil {
		if err := hook(l.t, k, "committed"); err != nil {
			return err
		}
	}
	if l.left.Add(-1) == 0 {
		l.ended.Store(time.Now().UnixNano())
	}
	return nil
}

// recordDone records table t done in the meta row, with its row count
// for orders and lineitem.
func recordDone(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, t dbgen.Table, rows int64) error {
	set := "tables_done = array_append(tables_done, $1)"
	switch t {
	case dbgen.Lineitem:
		set += fmt.Sprintf(", lineitem_rows = %d", rows)
	case dbgen.Orders:
		set += fmt.Sprintf(", orders_rows = %d", rows)
	}
	_, err := q.Exec(ctx, "update "+MetaTable+" set "+set, t.String())
	return err
}

// doneTask records a table loaded in parts done, once they are all in.
func doneTask(l *tableLoad) *task {
	return &task{name: "record " + l.t.String(), run: func(ctx context.Context, conn *pgx.Conn) error {
		return recordDone(ctx, conn, l.t, l.copied.Load())
	}}
}

// chunkReader feeds COPY with the binary rows of a part: the chunks it
// takes from the table's counter, generated ahead by a few goroutines and
// read in the order taken, between the binary header and trailer.
type chunkReader struct {
	ctx     context.Context
	cancel  context.CancelFunc
	chunks  chan chan chunk
	cur     []byte
	trailer bool // the trailer is written
	l       *tableLoad
	wg      sync.WaitGroup
}

func newChunkReader(ctx context.Context, gen *dbgen.Generator, l *tableLoad, generators int) *chunkReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &chunkReader{ctx: ctx, cancel: cancel, chunks: make(chan chan chunk, 2*generators+2), l: l, cur: dbgen.BinaryHeader}
	units, size := dbgen.Units(l.t, gen.Scale()), chunkUnits(l.t, gen.Scale())
	jobs := make(chan job, 2*generators+2)
	// The dispatcher hands out chunks in order and queues each result slot
	// in the same order.
	go func() {
		defer close(jobs)
		defer close(r.chunks)
		for {
			first := (l.next.Add(1) - 1) * size
			if first >= units {
				return
			}
			slot := make(chan chunk, 1)
			select {
			case r.chunks <- slot:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{first: first, n: min(size, units-first), slot: slot}:
			case <-ctx.Done():
				close(slot) // a reader waiting on it ends
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
		data, ok, err := r.next()
		if err != nil {
			return 0, err // never end a COPY short
		}
		if ok {
			r.cur = data
			continue
		}
		r.cur, r.trailer = dbgen.BinaryTrailer, true
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// next is the next chunk's rows in the order taken; ok is false when
// the table has no chunk left, err set when the load was cancelled.
func (r *chunkReader) next() (data []byte, ok bool, err error) {
	slot, ok := <-r.chunks
	if ok {
		c, ok := <-slot
		if ok {
			r.l.rows.Add(c.rows)
			return c.data, true, nil
		}
	}
	return nil, false, r.ctx.Err()
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
