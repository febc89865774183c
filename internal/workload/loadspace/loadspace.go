// Package loadspace is the disk space of a PostgreSQL load. Before the data
// goes in, the load's estimate — its tables and indexes, and the WAL it
// writes up to the server's max_wal_size — is checked against the free
// space of the data directory's filesystem, when that is known here (a
// managed server, or a server on this host whose data_directory this
// process can read and see). A load that runs out of space ends with an
// error that names the filesystem and its free space, says the load is
// incomplete and how to go on. A drop of an earlier load is followed by a
// CHECKPOINT, so that the space it held (files and WAL) is free for the
// next load. The loaders of tpcb, tpcc and tpch use it.
package loadspace

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/machine"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
)

// walSegment is PostgreSQL's default WAL segment size: with less free
// space the server cannot make its next segment, and stops (PANIC).
const walSegment = 16 << 20

// Load is one load's space check and disk-full error. The zero Target
// (tests of a loader alone) checks nothing.
type Load struct {
	Target *pgt.Target
	// What names the load in messages: "tpcb scale 5".
	What string
	// Force loads even when the estimate does not fit.
	Force bool
	// Smaller says how to ask for less: "a smaller --scale".
	Smaller string

	space   driver.Space // the data directory's, once located
	why     string       // why it could not be located
	found   bool         // locate ran
	dropped bool         // the load dropped an earlier one (AfterDrop)

	// The guard's: the directories it watches (the data directory's; set
	// once located), the
	// free space it keeps (two WAL segments), and the space it found
	// under it (Guard).
	dirs    atomic.Pointer[[]string]
	reserve atomic.Int64
	tripped atomic.Pointer[driver.Space]
}

// Reserve is the free space a load leaves on the data directory's
// filesystem (and pg_wal's) with the default WAL segment size: two
// segments (ReserveFor). PostgreSQL stops (PANIC) when it cannot make its
// next WAL segment, and its crash recovery needs one to start again, so a
// load that took the last of the space left the server unable to start
// until space was freed by hand. The guard reads the free space every
// guardEvery: a load writing its data and WAL at 200 MB/s takes 10 MB
// between two reads, which leaves at least a segment.
const Reserve = 2 * walSegment

// ReserveFor is the reserve for a server's WAL segment size.
func ReserveFor(segment int64) int64 {
	if segment <= 0 {
		segment = walSegment
	}
	return 2 * segment
}

var guardEvery = 50 * time.Millisecond

// Guard watches the free space of the data directory's filesystem while
// the load writes (once Check located it) and cancels the context it
// returns when less than Reserve is left, --force or not; Error then says
// so. stop ends the watch.
func (l *Load) Guard(ctx context.Context) (_ context.Context, stop func()) {
	if l == nil || l.Target == nil {
		return ctx, func() {}
	}
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(guardEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-gctx.Done():
				return
			case <-t.C:
			}
			dirs := l.dirs.Load()
			if dirs == nil {
				continue
			}
			for _, dir := range *dirs {
				if free, ok := machine.FreeBytes(dir); ok && free < l.reserve.Load() {
					sp := driver.SpaceAt(dir)
					l.tripped.Store(&sp)
					cancel()
					// The load's connections go with the context, but a
					// statement the server runs without reading from
					// them (CREATE INDEX, VACUUM) goes on: cancel it.
					l.cancelBackends()
					return
				}
			}
		}
	}()
	return gctx, func() { close(done); <-finished; cancel() }
}

// Need is a load's estimate of the space it takes.
type Need struct {
	Tables int64 // tables and indexes still to be written
	WAL    int64 // WAL beyond what pg_wal holds for reuse
	MaxWAL int64 // the server's max_wal_size (0: unknown, no cap)
	Reuse  int64 // bytes of recycled WAL segments the load's WAL fills first
}

// NeedFor estimates the space of a load that writes tables bytes of tables
// and indexes: a load writes about as much WAL as data (measured: 0.82 to
// 0.87 times, full_page_writes on), which the server recycles at its
// checkpoints once it reaches max_wal_size; the segments pg_wal already
// holds ahead of the current one are filled first.
func NeedFor(tables, maxWAL, reuse int64) Need {
	if tables < 0 {
		tables = 0
	}
	wal := tables
	if maxWAL > 0 && wal > maxWAL {
		wal = maxWAL
	}
	wal -= reuse
	if wal < 0 {
		wal = 0
	}
	return Need{Tables: tables, WAL: wal, MaxWAL: maxWAL, Reuse: reuse}
}

// Total is the bytes the load needs.
func (n Need) Total() int64 { return n.Tables + n.WAL }

// String details the estimate: "150.0 MiB: 75.0 MiB of tables and
// indexes and 75.0 MiB of WAL (as much as the data, at most max_wal_size
// 1.0 GiB)".
func (n Need) String() string {
	wal := "as much as the data"
	if n.MaxWAL > 0 {
		wal += ", at most max_wal_size " + human.Bytes(n.MaxWAL)
	}
	if n.Reuse > 0 {
		wal += ", less the " + human.Bytes(n.Reuse) + " of recycled segments pg_wal holds"
	}
	return fmt.Sprintf("%s: %s of tables and indexes and %s of WAL (%s)", human.Bytes(n.Total()), human.Bytes(n.Tables), human.Bytes(n.WAL), wal)
}

// Check runs once an existing load the new one replaces is dropped, before
// the data goes in; tables is the estimate of the tables and indexes the
// load still writes (the workload's DataBytes, less what a resumed load
// finds in place). When the free space of the data directory's filesystem
// is known and less than the estimate with its WAL, it refuses (unless
// Force) with the estimate, the free space and the fix. Unknown free space
// checks nothing.
func (l *Load) Check(ctx context.Context, conn *pgx.Conn, tables int64) error {
	if l == nil || l.Target == nil {
		return nil
	}
	l.locate(ctx, conn)
	if !l.space.Known {
		return nil
	}
	reserve := l.reserve.Load()
	if l.Force {
		// Even --force cannot take the reserve: the guard would stop the
		// load at once.
		if sp := driver.SpaceAt(l.space.Dir); sp.Known && sp.Free < reserve {
			return errs.New(errs.KindEnvironment, fmt.Sprintf("free space on %s (or give the server a larger filesystem)", sp.Where()),
				"no room for %s: %s, less than the %s tunebench keeps free for the server's WAL (it needs room to go on, and to recover after a crash)",
				l.What, sp, human.Bytes(reserve))
		}
		return nil
	}
	// A checkpoint lets the server remove or recycle the WAL segments it
	// no longer needs (a failed load's), before the free space is read.
	_ = Checkpoint(ctx, conn)
	sp := driver.SpaceAt(l.space.Dir)
	if !sp.Known {
		return nil
	}
	l.space = sp
	maxWAL, reuse := walFigures(ctx, conn)
	n := NeedFor(tables, maxWAL, reuse)
	if n.Total()+reserve <= sp.Free {
		return nil
	}
	after := ""
	if l.dropped {
		after = " after the drop of the old tables"
	}
	hint := fmt.Sprintf("free space on %s, load %s, or add --force to load anyway", sp.Where(), l.Smaller)
	if reuse >= reserve {
		// After a load that failed, pg_wal keeps the segments its
		// checkpoints recycled: the next load's WAL fills them first
		// (counted above), its tables cannot have them. PostgreSQL
		// removes them only once its WAL has moved past them: lowering
		// min_wal_size and a CHECKPOINT did not shrink them (measured on
		// PostgreSQL 15: 160 MB before and after), so the way out is a
		// smaller load, which reuses them, or more space.
		after += fmt.Sprintf("; pg_wal keeps %s of WAL segments an earlier load's checkpoints recycled, which this load's WAL fills first but its tables cannot use (PostgreSQL removes them only once its WAL has moved past them)", human.Bytes(reuse))
	}
	return errs.New(errs.KindEnvironment, hint, "not enough space for %s: it needs about %s, and tunebench keeps %s free for the server's WAL; %s%s", l.What, n, human.Bytes(reserve), sp, after)
}

// walFigures reads max_wal_size and the bytes of the WAL segments pg_wal
// holds ahead of the current one (recycled, to be filled next; reading
// pg_wal needs superuser or pg_monitor: 0 without).
func walFigures(ctx context.Context, conn *pgx.Conn) (maxWAL, reuse int64) {
	if err := conn.QueryRow(ctx, "select pg_size_bytes(current_setting('max_wal_size'))").Scan(&maxWAL); err != nil {
		maxWAL = 0
	}
	if err := conn.QueryRow(ctx, `select coalesce(sum(size), 0)::bigint from pg_ls_waldir()
		where name ~ '^[0-9A-F]{24}$' and name > pg_walfile_name(pg_current_wal_lsn())`).Scan(&reuse); err != nil {
		reuse = 0
	}
	return maxWAL, reuse
}

// AfterDrop runs after the loader dropped an earlier load's tables: a
// CHECKPOINT frees their space (see Checkpoint; its error is ignored: the
// server's next checkpoint does it then). A nil Load checkpoints too.
func (l *Load) AfterDrop(ctx context.Context, conn *pgx.Conn) {
	_ = Checkpoint(ctx, conn)
	if l != nil {
		l.dropped = true
	}
}

// Checkpoint runs CHECKPOINT: after a drop, the dropped tables' files go
// and pg_wal shrinks to what the server keeps for reuse, so that a smaller
// load fits afterwards, and a crash does not replay the dropped data. It
// needs superuser or pg_checkpoint (PostgreSQL 15+); without them the
// server's next checkpoint does it later.
func Checkpoint(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "checkpoint")
	return err
}

// RelationBytes is what the named tables take with their indexes, TOAST
// and partitions (before PostgreSQL 12, without partitions); tables that
// do not exist count 0, and so does everything when it cannot be read.
func RelationBytes(ctx context.Context, conn *pgx.Conn, tables []string) int64 {
	var n int64
	if err := conn.QueryRow(ctx, `select coalesce(sum(pg_total_relation_size(p.relid)), 0)::bigint
		from unnest($1::text[]) t, pg_partition_tree(to_regclass(t)) p`, tables).Scan(&n); err == nil {
		return n
	}
	if err := conn.QueryRow(ctx, `select coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)::bigint
		from unnest($1::text[]) t`, tables).Scan(&n); err == nil {
		return n
	}
	return 0
}

// locate finds the data directory on this machine (the target's
// LocalDataDir); conn may be nil.
func (l *Load) locate(ctx context.Context, conn *pgx.Conn) {
	if l.found {
		return
	}
	l.found = true
	dir, why := l.Target.LocalDataDir(ctx, conn)
	if dir == "" {
		l.why = why
		return
	}
	l.space = driver.SpaceAt(dir)
	if l.space.Known {
		// The data directory's filesystem only: a separate WAL device is
		// small by design and lives with little free space (its segments
		// are preallocated and recycled), and watching it against the
		// same reserve stopped loads that fit.
		dirs := []string{l.space.Dir}
		l.dirs.Store(&dirs)
	}
	if l.reserve.Load() == 0 {
		l.reserve.Store(Reserve)
	}
	if conn != nil {
		var seg int64
		if err := conn.QueryRow(ctx, "select pg_size_bytes(current_setting('wal_segment_size'))").Scan(&seg); err == nil {
			l.reserve.Store(ReserveFor(seg))
		}
	}
}

// cancelBackends cancels what the server runs for this load's database on
// tunebench's connections (application_name tunebench), on a connection
// of its own.
func (l *Load) cancelBackends() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := l.Target.Connect(ctx)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	_, _ = conn.Exec(ctx, `select pg_cancel_backend(pid) from pg_stat_activity
		where datname = current_database() and pid <> pg_backend_pid() and application_name = 'tunebench' and state <> 'idle'`)
}

// Error turns a disk-full error of the load into one of kind environment
// that names the filesystem and its free space and says the load is
// incomplete; next says how to go on once there is room ("load again with
// --drop"). A lost connection with less than a WAL segment left counts as
// disk full too: PostgreSQL stops when it cannot write its WAL. Other
// errors are returned as they are.
func (l *Load) Error(ctx context.Context, err error, next string) error {
	if l == nil || l.Target == nil || err == nil {
		return err
	}
	if sp := l.tripped.Load(); sp != nil {
		return &errs.Error{Kind: errs.KindEnvironment,
			Msg: fmt.Sprintf("the %s load is incomplete: tunebench stopped it with %s free on %s, keeping %s for the server's WAL (it needs room to go on, and to recover after a crash)",
				l.What, human.Bytes(sp.Free), sp.Where(), human.Bytes(l.reserve.Load())),
			Hint: "free space on " + sp.Where() + " (or give the server a larger filesystem), then " + next}
	}
	if !driver.IsDiskFull(err) && !connLost(err) {
		return err
	}
	l.locate(ctx, nil)
	sp := l.space
	if sp.Dir != "" {
		sp = driver.SpaceAt(sp.Dir)
	} else {
		sp.Why = l.why
	}
	return fullError(err, sp, l.What, next)
}

// fullError is Error once the space is read: err is disk full, or a lost
// connection, which counts as disk full when less than a WAL segment is
// left.
func fullError(err error, sp driver.Space, what, next string) error {
	crashed := false
	if !driver.IsDiskFull(err) {
		if !connLost(err) || !sp.Known || sp.Free >= walSegment {
			return err
		}
		crashed = true
	}
	msg := "disk full"
	where := sp.Where()
	if sp.Known {
		msg += fmt.Sprintf(" on %s (%s free)", where, human.Bytes(sp.Free))
	} else {
		msg += " (" + sp.String() + ")"
		where = "the filesystem of the server's data directory"
	}
	if crashed {
		msg += ": PostgreSQL lost the connections, as it does when it cannot write its WAL"
	}
	msg += "; the " + what + " load is incomplete"
	hint := "free space on " + where + ", then " + next
	if crashed {
		hint += "; if the server stopped, start it again once there is room"
	}
	return &errs.Error{Kind: errs.KindEnvironment, Msg: msg, Hint: hint, Err: err}
}

// connLost reports whether err is a connection the server ended while the
// load was using it (not one it refused: a server that is down now is
// reported as such, whatever the disk): what a load sees of a PANIC.
func connLost(err error) bool {
	var ce *pgconn.ConnectError
	var cf interface{ ConnectFailure() bool }
	if !driver.IsConnError(err) || errors.As(err, &ce) || errors.As(err, &cf) && cf.ConnectFailure() {
		return false
	}
	switch driver.SQLState(err) {
	case "", "57P01", "57P02":
		return true
	}
	return false
}
