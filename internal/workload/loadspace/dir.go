package loadspace

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/machine"
	"github.com/tunebench/tunebench/internal/target"
)

// DirLoad is the space check and the guard of a load on a target that
// says only where its data directory is (target.DataDirer): MariaDB's.
// The estimate is the workload's; the reserve is kept free as Load keeps
// it for PostgreSQL's WAL, here for InnoDB's redo, undo and temporary
// files. A MariaDB whose disk is full does not fail the statement: it
// waits for space ("Waiting for someone to free space"), so without the
// guard a load that does not fit would hang, not end. A nil DirLoad, or
// one whose target does not know its directory, checks nothing.
type DirLoad struct {
	Target target.Target
	// What names the load in messages, Smaller says how to ask for less
	// (Load's).
	What, Smaller string
	Force         bool

	dir     string
	why     string
	tripped atomic.Pointer[driver.Space]
}

// dirReserve is what a DirLoad keeps free.
const dirReserve = Reserve

func (l *DirLoad) locate(ctx context.Context) string {
	if l == nil || l.Target == nil {
		return ""
	}
	if l.dir == "" && l.why == "" {
		d, ok := l.Target.(target.DataDirer)
		if !ok {
			l.why = "the target does not say where its data is"
			return ""
		}
		l.dir, l.why = d.LocalDataDir(ctx)
	}
	return l.dir
}

// Check refuses, unless Force, a load of need bytes that does not fit in
// the free space of the data directory's filesystem with the reserve;
// even Force cannot take the reserve.
func (l *DirLoad) Check(ctx context.Context, need int64) error {
	dir := l.locate(ctx)
	if dir == "" {
		return nil
	}
	sp := driver.SpaceAt(dir)
	if !sp.Known {
		return nil
	}
	if l.Force {
		if sp.Free < dirReserve {
			return errs.New(errs.KindEnvironment, fmt.Sprintf("free space on %s (or give the server a larger filesystem)", sp.Where()),
				"no room for %s: %s, less than the %s tunebench keeps free for the server", l.What, sp, human.Bytes(dirReserve))
		}
		return nil
	}
	if need+dirReserve <= sp.Free {
		return nil
	}
	return errs.New(errs.KindEnvironment, fmt.Sprintf("free space on %s, load %s, or add --force to load anyway", sp.Where(), l.Smaller),
		"not enough space for %s: it needs about %s, and tunebench keeps %s free for the server; %s", l.What, human.Bytes(need), human.Bytes(dirReserve), sp)
}

// Guard watches the free space while the load writes (once Check located
// the directory) and cancels the context it returns when less than the
// reserve is left, Force or not; Error then says so.
func (l *DirLoad) Guard(ctx context.Context) (context.Context, func()) {
	dir := l.locate(ctx)
	if dir == "" {
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
			if free, ok := machine.FreeBytes(dir); ok && free < dirReserve {
				sp := driver.SpaceAt(dir)
				l.tripped.Store(&sp)
				cancel()
				return
			}
		}
	}()
	return gctx, func() { close(done); <-finished; cancel() }
}

// Error turns the error of a load the guard stopped into one that says so
// and how to go on (next); other errors are returned as they are.
func (l *DirLoad) Error(err error, next string) error {
	if l == nil || err == nil {
		return err
	}
	if sp := l.tripped.Load(); sp != nil {
		return &errs.Error{Kind: errs.KindEnvironment,
			Msg: fmt.Sprintf("the %s load is incomplete: tunebench stopped it with %s free on %s, keeping %s for the server (a MariaDB whose disk is full waits for space instead of failing)",
				l.What, human.Bytes(sp.Free), sp.Where(), human.Bytes(dirReserve)),
			Hint: "free space on " + sp.Where() + " (or give the server a larger filesystem), then " + next, Err: err}
	}
	return err
}
