package pg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/step"
)

// Session is a workload worker's connection bookkeeping, shared by the
// workers of every workload: the connection, a cancellation watch made once
// per connection rather than per statement, and the OS-thread discipline of
// a direct (blocking I/O) connection. Workers embed it; it adds nothing to a
// step's allocations.
type Session struct {
	Conn   *pgx.Conn
	Direct bool         // Conn does blocking syscalls on the step's OS thread
	Thread netio.Thread // scheduling discipline of that thread
	// Shared: the session is driven with others from one thread that its
	// owner (the executor) manages; Ready leaves the thread alone.
	Shared bool

	watchedDone <-chan struct{}
	stopWatch   func() bool
}

// Use makes conn the session's connection.
func (s *Session) Use(conn *pgx.Conn) {
	s.Conn = conn
	s.Direct = netio.IsDirect(conn.PgConn().Conn())
}

// Fd returns the descriptor of a direct connection, for poll(2), or -1.
func (s *Session) Fd() int {
	if s.Conn == nil {
		return -1
	}
	fd, _ := netio.DirectFd(s.Conn.PgConn().Conn())
	return fd
}

// Readable tells a direct connection that its socket was found readable
// (see MarkReadable): the multiplexed executor calls Continue only then.
func (s *Session) Readable() {
	if s.Conn != nil {
		netio.MarkReadable(s.Conn.PgConn().Conn())
	}
}

// ServerCPU is the CPU where the server side of a direct connection last
// sent to it, or -1 (step.Placed; see IncomingCPU).
func (s *Session) ServerCPU() int {
	if s.Conn == nil {
		return -1
	}
	return netio.IncomingCPU(s.Conn.PgConn().Conn())
}

// Drop closes the connection, if any, and stops watching for its sake.
func (s *Session) Drop() {
	s.Unwatch()
	if s.Conn != nil {
		_ = s.Conn.Close(context.Background())
		s.Conn = nil
	}
}

// Watch makes the cancellation of ctx interrupt the statement in progress
// on the current connection. Statements run with context.Background(): for
// a cancellable context pgconn registers a context.AfterFunc per statement
// (a mutex shared by all workers on the executor's step context, a channel
// allocation, a removal), which was about 9% of the client's CPU time. Here
// the registration is made once per connection; cancellation sets a
// deadline in the past on the socket, which interrupts a blocked read or
// write, and the step then drops the connection, as pgconn does when it
// handles the cancellation itself.
func (s *Session) Watch(ctx context.Context) {
	done := ctx.Done()
	if done == s.watchedDone && (done == nil || s.stopWatch != nil) {
		return
	}
	s.Unwatch()
	if done == nil {
		return // never cancelled
	}
	nc := s.Conn.PgConn().Conn()
	s.watchedDone = done
	s.stopWatch = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
}

// Unwatch removes the watch.
func (s *Session) Unwatch() {
	if s.stopWatch != nil {
		s.stopWatch()
		s.stopWatch = nil
	}
	s.watchedDone = nil
}

// Ready prepares a step: it ticks the thread discipline, and when ctx is
// done, or there is no connection and reconnect fails, it fills out with
// the outcome of a step that could not start and returns false.
func (s *Session) Ready(ctx context.Context, out *step.Outcome, reconnect func(context.Context) error) bool {
	if s.Direct && !s.Shared {
		s.Thread.PaceFor(ctx)
		s.Thread.Tick()
	}
	if err := ctx.Err(); err != nil {
		out.Class, out.SQLState = driver.Classify(err, false, 1)
		out.Err = err
		return false
	}
	if s.Conn == nil {
		if err := reconnect(ctx); err != nil {
			out.Class, out.SQLState = driver.Classify(err, false, 1)
			// A failed connection attempt (its error is flattened by
			// Target.ConnectError) is a connection error: the executor
			// then spaces the next attempts out.
			if driver.IsConnError(err) || errs.KindOf(err) == errs.KindConnect {
				out.Class = step.ClassConnError
			}
			out.Err = err
			return false
		}
	}
	s.Watch(ctx)
	return true
}

// Lost handles a failed attempt: when ctx was cancelled (the watch made the
// connection unusable), the connection is gone, or the error is a
// connection error, it drops the connection, fills out and returns true.
func (s *Session) Lost(ctx context.Context, err error, inCommit bool, out *step.Outcome) bool {
	interrupted := false
	if cerr := ctx.Err(); cerr != nil {
		err, interrupted = cerr, true
	}
	if !interrupted && !driver.IsConnError(err) && !s.Conn.IsClosed() {
		return false
	}
	s.Drop()
	out.Class, out.SQLState = driver.Classify(err, inCommit, out.Attempts)
	if out.Class == step.ClassFailedError {
		out.Class = step.ClassConnError
	}
	out.Err = err
	return true
}
