package target

import (
	"context"
	"runtime"

	"github.com/tunebench/tunebench/internal/step"
)

// A worker's statements run through a Session: the workload keeps the
// transaction logic (its inputs, decisions, retries, audits) and says what
// to send; the target's session sends it in its dialect's protocol. A
// step's statements go out in round trips: Queue one or more, Send,
// Receive. Parameters live in slots that the statements name; a worker
// sets them before queueing.

// ParamType is the type of a parameter slot.
type ParamType uint8

const (
	Int4      ParamType = iota + 1 // 32-bit integer
	Int8                           // 64-bit integer
	Numeric                        // exact decimal, set as text ("1234.05")
	Text                           // text
	Int4Array                      // one-dimensional array of 32-bit integers
	// Unknown is text whose type the server infers from the statement,
	// as pgbench sends a script's variables.
	Unknown
)

// Stmt is a statement prepared on every connection of a session.
type Stmt struct {
	Name string
	// SQL has PostgreSQL-style placeholders $1..$n; a target of another
	// dialect rewrites them.
	SQL string
	// Params lists the slots that hold $1..$n.
	Params []int
	// Columns: the caller reads the statement's result columns
	// (Session.Columns), so it is prepared when the session connects even
	// when the session prepares the others at first use (MaxPrepared).
	Columns bool
}

// MaxPrepared bounds the statements a session prepares when it connects
// and keeps prepared. A session of more statements prepares each one when
// it is first queued, in the round trip that runs it (as pgbench 15 and
// later prepare a command when it first runs), and keeps at most
// MaxPrepared of them prepared at a time: a script of a million
// statements then starts at once, and what each session holds does not
// grow with the script.
const MaxPrepared = 1000

// Lazy reports whether a session of spec prepares its statements at first
// use (more than MaxPrepared of them).
func (spec *SessionSpec) Lazy() bool { return len(spec.Stmts) > MaxPrepared }

// SessionSpec describes a worker's session.
type SessionSpec struct {
	// ID is the worker's id (0-based, made in order).
	ID    int
	Slots []ParamType
	Stmts []Stmt
	// Setup runs once on every connection, before the statements are
	// prepared (e.g. the session's default isolation level).
	Setup []string
	// Results: the worker reads Rows, Int and Row (otherwise a session
	// need not record them).
	Results bool
	// TextResults: the statements' results come as text (Row), not in
	// binary (Int).
	TextResults bool
}

// MaxQueued bounds the statements of one round trip.
const MaxQueued = 16

// Session is one worker's connection and its prepared statements. It is
// used by one goroutine at a time.
type Session interface {
	// Ready prepares a step: it ticks the thread discipline, and when ctx
	// is done, or there is no connection and connecting fails, it fills
	// out with the outcome of a step that could not start and returns
	// false. A lost connection is made again here, with its statements.
	Ready(ctx context.Context, out *step.Outcome) bool
	// Lost handles a failed round trip: when ctx was cancelled, the
	// connection is gone or the error is a connection error, it drops the
	// connection, fills out and returns true.
	Lost(ctx context.Context, err error, inCommit bool, out *step.Outcome) bool
	// Classify puts an error in its outcome class, with its error code;
	// Retryable says whether a code is a serialization failure or a
	// deadlock, worth another try.
	Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string)
	Retryable(code string) bool

	// SetInt, SetText, SetNull and SetIntArray set a slot's value.
	SetInt(slot int, v int64)
	SetText(slot int, b []byte)
	SetNull(slot int)
	SetIntArray(slot int, vs []int32)

	// Queue adds statement i (of the spec) to the round trip.
	Queue(i int)
	// Send sends the queued statements (and the end of the round trip).
	Send() error
	// SendQuery sends sql, text without parameters that may hold several
	// statements, as a round trip of its own with nothing queued (the
	// simple query protocol of PostgreSQL, as pgbench sends a compound
	// command, its statements joined with \;): one string, run as one
	// implicit transaction outside a transaction block.
	SendQuery(sql []byte) error
	// Receive reads the replies of the round trip sent, and returns the
	// first error the server reported, else a connection error.
	Receive() error
	// Results is the number of statements whose results the last round
	// trip brought: the statements queued, or those of a SendQuery that
	// ran (up to an error).
	Results() int
	// Rows and Int are the results of the round trip's k-th statement:
	// its row count, and a column (0 or 1) of its first row when that is
	// a 32-bit integer (else 0); with SessionSpec.Results only.
	Rows(k int) int
	Int(k, col int) int32
	// Row is the last row of the round trip's k-th statement, a value
	// per column (nil: NULL), valid until the next round trip; with
	// SessionSpec.Results only. Columns are statement i's result column
	// names (of a lazy session, only those of a Stmt.Columns); Fields are those of the k-th statement of a SendQuery round
	// trip (none for one without rows).
	Row(k int) [][]byte
	Columns(i int) []string
	Fields(k int) []string
	// InTx reports whether the connection is inside a transaction (one
	// left open by a failed round trip must be rolled back).
	InTx() bool
	// Rollback ends the transaction.
	Rollback() error
	Close() error

	// Multiplexing (step.Multiplexed): one thread may drive several
	// sessions; Fd is the descriptor to poll, Readable says it was
	// found readable, ServerCPU is where the server side last ran (-1
	// when unknown).
	Multiplex(on bool) bool
	Fd() int
	Readable()
	ServerCPU() int
}

// Sessions is a target that runs statement sessions.
type Sessions interface {
	NewSession(ctx context.Context, spec *SessionSpec) (Session, error)
	// NewThread is the scheduling discipline of a driver thread that
	// drives sessions.
	NewThread() step.Thread
}

// Retry settles an attempt of a step that failed with err (code: its
// error code from Classify), once the worker has handled a lost connection
// and left the aborted transaction. It reports true, counting the attempt
// in out (retried keeps the codes, reused between steps), when the error
// is a serialization failure or a deadlock with tries left and ctx is not
// done: the worker then runs the step again. Otherwise it fills out with
// the error's outcome and reports false.
func Retry(ctx context.Context, s Session, err error, code string, maxTries int, out *step.Outcome, retried *[]string) bool {
	if s.Retryable(code) && out.Attempts < maxTries && ctx.Err() == nil {
		if out.Attempts == 1 {
			*retried = (*retried)[:0]
		}
		*retried = append(*retried, code)
		out.Retried = *retried
		out.Attempts++
		return true
	}
	out.Class, out.SQLState = s.Classify(err, false, out.Attempts)
	if !s.Retryable(code) {
		out.Class = step.ClassFailedError
	}
	out.Err = err
	return false
}

// ServerFollower is a Sessions that says whether its driver threads gain
// from following the server's processes (a workload's --follow-server
// auto). Without it they do: PostgreSQL's backends are processes that keep
// to their CPU. MariaDB's connection threads move between CPUs, and
// following them was measured to cost client CPU (docs/benchmarks.md).
type ServerFollower interface {
	FollowsServer() bool
}

// FollowsServer reports whether ss's threads gain from following the
// server (true unless it says otherwise).
func FollowsServer(ss Sessions) bool {
	if f, ok := ss.(ServerFollower); ok {
		return f.FollowsServer()
	}
	return true
}

// DriverThreader is a Sessions that chooses the driver thread count a
// workload runs with when the user gives none (--threads 0). Without it:
// one per core (the measured choice on PostgreSQL, docs/benchmarks.md
// section 5), at most one per client.
type DriverThreader interface {
	// DriverThreads is the count for clients connections (at least 1).
	DriverThreads(clients int) int
}

// DriverThreads is the driver thread count for --threads n: n when given,
// else ss's default (DriverThreader) or one per core, at most one per
// client.
func DriverThreads(ss Sessions, n, clients int) int {
	if n > 0 {
		return n
	}
	if d, ok := ss.(DriverThreader); ok {
		if k := d.DriverThreads(clients); k > 0 {
			return min(k, max(clients, 1))
		}
	}
	return min(runtime.NumCPU(), max(clients, 1))
}
