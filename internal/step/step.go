// Package step is the contract between the executor and a workload's
// workers: a Worker does one unit of work per Step and returns an Outcome
// (what happened, in exactly one OutcomeClass); the executor times it. The
// optional Multiplexed, Thread, PinnedThread, PacedThread, KernelBound
// and Placed interfaces let one driver thread serve several workers
// (pgbench -j). It has no dependencies, so the executor, the metrics and
// the database targets can all use it.
package step

import (
	"context"
	"fmt"
	"time"
)

// OutcomeClass says how one transaction ended. Every transaction lands in
// exactly one class (docs/measurement.md).
type OutcomeClass uint8

const (
	ClassOK                   OutcomeClass = iota // committed on the first try
	ClassUserAbort                                // rolled back on purpose by the workload (TPC-C 1%)
	ClassRetriedOK                                // committed after one or more retries
	ClassFailedRetryExhausted                     // 40001/40P01 still failing after max tries
	ClassFailedError                              // any other SQLSTATE
	ClassConnError                                // connection lost or refused (08xxx, 57P01..57P03, network)
	ClassAmbiguousCommit                          // connection lost during COMMIT: unknown outcome
	ClassSkippedLate                              // open loop only: not sent because already later than --latency-limit
	NumClasses
)

var classNames = [NumClasses]string{
	"ok", "user_abort", "retried_ok", "failed_retry_exhausted", "failed_error",
	"conn_error", "ambiguous_commit", "skipped_late",
}

func (c OutcomeClass) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ParseClass is the inverse of String.
func ParseClass(s string) (OutcomeClass, bool) {
	for i, n := range classNames {
		if n == s {
			return OutcomeClass(i), true
		}
	}
	return 0, false
}

// Committed reports whether the transaction's work is in the database.
func (c OutcomeClass) Committed() bool { return c == ClassOK || c == ClassRetriedOK }

// Completed reports whether the transaction ran to its intended end
// (committed, or rolled back on purpose).
func (c OutcomeClass) Completed() bool { return c.Committed() || c == ClassUserAbort }

// IsError reports whether the class counts as an error.
func (c OutcomeClass) IsError() bool {
	switch c {
	case ClassFailedRetryExhausted, ClassFailedError, ClassConnError, ClassAmbiguousCommit:
		return true
	}
	return false
}

// Outcome is what one Step did. The executor times the step; think time is
// returned as data and slept by the executor outside the timed region.
type Outcome struct {
	Op       string        // transaction type, e.g. "tpcb-like"
	Class    OutcomeClass  // how it ended
	Attempts int           // tries made (>= 1); latency covers all of them
	SQLState string        // SQLSTATE of the last error, "" when none or not from the server
	Err      error         // last error, for the first-N error log; nil on success
	Think    time.Duration // time to wait after this step before the next (closed loop)
	// Retried is the SQLSTATE of each failed attempt that was tried again
	// (Attempts-1 of them; "" for an error without one). The worker may
	// reuse the slice's array in its next Step: the executor counts it
	// before asking for another.
	Retried []string
}

// Worker does one unit of work per Step on its own connection. A worker
// survives errors: a Step after a connection error reconnects. Step returns a
// non-nil error only when the worker cannot go on at all (the run stops);
// the step's outcome then counts only when the error is an *Aborted.
type Worker interface {
	Step(ctx context.Context) (Outcome, error)
	Close() error
}

// Aborted is the error of a step that ended and counts, with its Outcome,
// after which its worker cannot go on: the executor records the outcome
// as any other, then stops the run with Err. pgbench counts a transaction
// whose script ended with its transaction block still open, then aborts
// the client (a script run returns it then).
type Aborted struct{ Err error }

func (a *Aborted) Error() string { return a.Err.Error() }
func (a *Aborted) Unwrap() error { return a.Err }

// Multiplexed is a Worker whose step can also be driven in pieces, so that
// one executor thread serves several workers (pgbench -j): Begin sends the
// first request and returns; when the descriptor from Fd is readable,
// Continue reads the reply and sends the next request or ends the step.
// Step must behave as Begin followed by Continue until not pending (a
// blocking Continue then simply waits for the reply).
type Multiplexed interface {
	Worker
	// Multiplex(true) switches the worker to being driven with others from
	// one thread that the executor manages (the worker then leaves its
	// goroutine's thread alone). It reports false, changing nothing, when
	// the worker cannot be polled (e.g. its connection is not a plain
	// socket); the executor then gives every worker its own goroutine, and
	// switches back with Multiplex(false) the ones that had accepted.
	Multiplex(on bool) bool
	// Begin starts a step. pending false means the step already ended
	// (o is its outcome, e.g. it could not connect); err as Step's.
	Begin(ctx context.Context) (o Outcome, pending bool, err error)
	// Continue goes on with a pending step; it is called when Fd is
	// readable (or after ctx was cancelled, to let the step fail fast).
	Continue(ctx context.Context) (o Outcome, pending bool, err error)
	// Fd is the descriptor the pending step waits on.
	Fd() int
}

// Thread is the scheduling discipline of a goroutine that drives
// multiplexed workers: Tick before each round of work, Stop when done.
type Thread interface {
	Tick()
	Stop()
}

// Yielder is a Thread that gives its goroutine's OS thread back to the
// runtime now and then (in Tick); NextYield is when Tick will next do so.
// A driver that keeps the runtime's processor while it waits (a raw
// system call) waits no longer than that.
type Yielder interface {
	NextYield() time.Time
}

// PinnedThread is a Thread that can keep its goroutine on one CPU. Pin is
// called on the goroutine before its first Tick; it reports false if the
// thread cannot be pinned there (nothing is changed then). Stop restores
// the thread's CPU affinity.
type PinnedThread interface {
	Thread
	Pin(cpu int) bool
}

// PacedThread is a Thread that serves an open loop: besides replies, its
// goroutine wakes for intended starts, which must run when they are due.
// Paced is called on the goroutine before its first Tick; the discipline
// then leaves out what would let the woken thread wait for its CPU (a
// batch scheduling policy).
type PacedThread interface {
	Thread
	Paced()
}

// pacedKey marks an open loop's step context (WithPaced).
type pacedKey struct{}

// WithPaced marks ctx as the step context of an open loop. A worker not
// driven by a multiplexed thread keeps its own thread discipline, which
// the executor does not see; that discipline reads the mark (IsPaced)
// before its thread starts and then behaves as a PacedThread's.
func WithPaced(ctx context.Context) context.Context {
	return context.WithValue(ctx, pacedKey{}, true)
}

// IsPaced reports whether ctx comes from WithPaced.
func IsPaced(ctx context.Context) bool {
	paced, _ := ctx.Value(pacedKey{}).(bool)
	return paced
}

// KernelBound is a Thread whose multiplexed workers wait only on the
// kernel: their replies come from sockets, never from another goroutine of
// the process. The executor may then leave the runtime no more processors
// (GOMAXPROCS) than an open loop's threads for the run.
type KernelBound interface {
	Thread
	KernelBound()
}

// Placed is a Multiplexed worker that can tell on which CPU the server's
// side of its connection last sent to it (Linux: SO_INCOMING_CPU; on a
// loopback connection the server process's CPU), or -1 if unknown.
type Placed interface {
	ServerCPU() int
}
