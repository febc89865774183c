package tpcb

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/tunebench/tunebench/internal/driver"
	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// RunOptions configure the workers of `tunebench run tpcb`.
type RunOptions struct {
	Script   string
	Scale    int      // from the loaded database
	Dist     gen.Dist // for the account id, as pgbench's random_* functions
	MaxTries int      // >= 1; serialization failures and deadlocks are retried up to this many tries
	Pipeline bool     // send each transaction's statements in one round trip
	Seed     int64
}

// Validate checks the options.
func (o *RunOptions) Validate() error {
	if err := ValidScript(o.Script); err != nil {
		return errs.Usage("use --script tpcb-like, simple-update or select-only", "%v", err)
	}
	if o.MaxTries < 1 {
		return errs.Usage("--max-tries takes 1 (no retry) or more", "invalid max tries %d", o.MaxTries)
	}
	if o.Scale < 1 {
		return errs.Usage("load the database first: tunebench load tpcb --scale N", "invalid scale %d", o.Scale)
	}
	return o.Dist.Validate()
}

// The statements of pgbench's built-in scripts, in order; a transaction is a
// sequence of steps, each one prepared statement.
const (
	sqlBegin      = "BEGIN"
	sqlEnd        = "END"
	sqlUpdAccount = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
	sqlSelAccount = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
	sqlUpdTeller  = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
	sqlUpdBranch  = "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"
	sqlInsHistory = "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
)

// param slots of the per-transaction values.
const (
	pAid = iota
	pBid
	pTid
	pDelta
	nParams
)

type stmt struct {
	name   string
	sql    string
	oids   []uint32
	params []int // indexes into the worker's encoded params
}

func scriptSteps(script string, aidOID uint32) []stmt {
	const int4 = 23
	begin := stmt{name: "tb_begin", sql: sqlBegin}
	end := stmt{name: "tb_end", sql: sqlEnd}
	updA := stmt{name: "tb_upd_a", sql: sqlUpdAccount, oids: []uint32{int4, aidOID}, params: []int{pDelta, pAid}}
	selA := stmt{name: "tb_sel_a", sql: sqlSelAccount, oids: []uint32{aidOID}, params: []int{pAid}}
	updT := stmt{name: "tb_upd_t", sql: sqlUpdTeller, oids: []uint32{int4, int4}, params: []int{pDelta, pTid}}
	updB := stmt{name: "tb_upd_b", sql: sqlUpdBranch, oids: []uint32{int4, int4}, params: []int{pDelta, pBid}}
	ins := stmt{name: "tb_ins_h", sql: sqlInsHistory, oids: []uint32{int4, int4, aidOID, int4}, params: []int{pTid, pBid, pAid, pDelta}}
	switch script {
	case ScriptSelectOnly:
		return []stmt{selA}
	case ScriptSimpleUpdate:
		return []stmt{begin, updA, selA, ins, end}
	default:
		return []stmt{begin, updA, selA, updT, updB, ins, end}
	}
}

// Worker runs one client's transactions on its own connection.
type Worker struct {
	o       RunOptions
	connect Connector
	// Session: the connection, its cancellation watch, the thread discipline.
	pgdrv.Session
	sds    []*pgconn.StatementDescription // per step, of conn
	rng    *rand.Rand
	steps  []stmt
	bigAid bool

	// the step in progress
	out workload.Outcome
	cur int // statement in flight (not used in a pipeline)

	// encoded parameter values, reused for every transaction
	buf    [nParams][8]byte
	enc    [nParams][]byte
	args   [][][]byte // per step: its parameter values
	binary []int16    // one binary format code, for params and results
	// protocol messages, built once (the binds hold args)
	binds    []pgproto3.Bind
	describe pgproto3.Describe
	execute  pgproto3.Execute
	sync     pgproto3.Sync
	// ROLLBACK after an error, and the replies reader
	rollbackQ pgproto3.Query
	replies   pgdrv.Replies
}

// NewWorker makes a worker and connects it, so set-up failures surface as
// errors here.
func NewWorker(ctx context.Context, connect Connector, o RunOptions, id int) (*Worker, error) {
	var aidOID uint32 = 23
	big := o.Scale >= BigintScale
	if big {
		aidOID = 20
	}
	w := &Worker{
		o: o, connect: connect, rng: gen.NewRand(o.Seed, uint64(id)+1),
		steps: scriptSteps(o.Script, aidOID), bigAid: big, binary: []int16{1},
	}
	for i := range w.enc {
		w.enc[i] = w.buf[i][:4]
	}
	if big {
		w.enc[pAid] = w.buf[pAid][:8]
	}
	w.args = make([][][]byte, len(w.steps))
	for i, s := range w.steps {
		a := make([][]byte, len(s.params))
		for j, p := range s.params {
			a[j] = w.enc[p]
		}
		w.args[i] = a
	}
	w.sds = make([]*pgconn.StatementDescription, len(w.steps))
	w.describe = pgproto3.Describe{ObjectType: 'P'}
	w.rollbackQ = pgproto3.Query{String: "ROLLBACK"}
	w.binds = make([]pgproto3.Bind, len(w.steps))
	for i, s := range w.steps {
		w.binds[i] = pgproto3.Bind{PreparedStatement: s.name, ParameterFormatCodes: w.binary, Parameters: w.args[i], ResultFormatCodes: w.binary}
	}
	if err := w.reconnect(ctx); err != nil {
		return nil, err
	}
	if w.Direct {
		// Workers are made one after the other with ids 0..n-1.
		pgdrv.EnsureProcs(id + 1)
	}
	return w, nil
}

func (w *Worker) reconnect(ctx context.Context) error {
	w.Drop()
	conn, err := w.connect(ctx)
	if err != nil {
		return err
	}
	for i, s := range w.steps {
		sd, err := conn.PgConn().Prepare(ctx, s.name, s.sql, s.oids)
		if err != nil {
			_ = conn.Close(context.Background())
			return fmt.Errorf("prepare %s: %w", s.sql, err)
		}
		w.sds[i] = sd
	}
	// From here on the worker reads the connection itself (Replies):
	// pgconn must have nothing buffered and no read in progress (a slow
	// Prepare write starts its background reader, which may still be
	// waiting in a read).
	if err := conn.PgConn().SyncConn(ctx); err != nil {
		_ = conn.Close(context.Background())
		return fmt.Errorf("sync connection: %w", err)
	}
	w.Use(conn)
	w.replies.Reset()
	return nil
}

// Step runs one transaction of the script, retrying serialization failures
// and deadlocks with the same values up to MaxTries. It is Begin, then
// Continue (blocking in the read of each reply) until the step ends.
func (w *Worker) Step(ctx context.Context) (workload.Outcome, error) {
	o, pending, err := w.Begin(ctx)
	for pending {
		o, pending, err = w.next(ctx)
	}
	return o, err
}

// Multiplex makes the worker one of several driven from one thread by the
// executor (workload.Multiplexed); only a direct connection can be polled.
func (w *Worker) Multiplex(on bool) bool {
	if on && !w.Direct {
		return false
	}
	w.Shared = on
	return true
}

// Begin draws the transaction's values and sends its first round trip.
func (w *Worker) Begin(ctx context.Context) (workload.Outcome, bool, error) {
	w.out = workload.Outcome{Op: w.o.Script, Attempts: 1}
	if !w.Ready(ctx, &w.out, w.reconnect) {
		return w.out, false, nil
	}
	w.draw()
	return w.start(ctx)
}

// start sends the first round trip of an attempt: the first statement, or
// the whole transaction in a pipeline.
func (w *Worker) start(ctx context.Context) (workload.Outcome, bool, error) {
	w.cur = 0
	if err := w.send(); err != nil {
		return w.failed(ctx, err)
	}
	return w.out, true, nil
}

// Continue reads the reply of the round trip in flight, then sends the
// next statement or ends the step.
//
// The statements are sent through pgconn's Frontend and their replies read
// with pgdrv.Replies (which closes the connection on a FATAL error, as
// pgconn does): the same messages as PgConn.ExecStatement (Bind, a Describe for statements without result
// columns, Execute, Sync; or one Sync for the whole transaction in a
// pipeline) without its per-statement set-up: the busy lock, the result
// reader, the slow-write timer (two timer updates per statement) and a
// command tag string. The messages are built once per worker: the
// parameter slices they hold are the ones draw fills. Everything is
// small enough to fit the socket buffers, so the write cannot dead-lock
// against an unread reply, which is what pgconn's slow-write timer guards
// against.
func (w *Worker) Continue(ctx context.Context) (workload.Outcome, bool, error) {
	// The executor calls it when the socket is readable: the first read
	// need not block (Session.Readable).
	w.Session.Readable()
	return w.next(ctx)
}

// next is Continue for a step driven by its own goroutine (Step), whose
// read waits for the reply.
func (w *Worker) next(ctx context.Context) (workload.Outcome, bool, error) {
	if err := w.receive(); err != nil {
		return w.failed(ctx, err)
	}
	if !w.o.Pipeline && w.cur < len(w.steps)-1 {
		w.cur++
		if err := w.send(); err != nil {
			return w.failed(ctx, err)
		}
		return w.out, true, nil
	}
	w.out.Class, _ = driver.Classify(nil, false, w.out.Attempts)
	return w.out, false, nil
}

// Fd is the descriptor of the worker's connection (workload.Multiplexed).
func (w *Worker) Fd() int { return w.Session.Fd() }

// failed handles an error of the round trip in flight: a lost connection
// ends the step; otherwise the aborted transaction is rolled back and a
// serialization failure or deadlock is retried with the same values.
func (w *Worker) failed(ctx context.Context, err error) (workload.Outcome, bool, error) {
	if w.Lost(ctx, err, w.inCommit(), &w.out) {
		return w.out, false, nil
	}
	code := driver.SQLState(err)
	if w.o.Script != ScriptSelectOnly {
		// Leave the aborted transaction before anything else.
		if rerr := w.rollback(); rerr != nil {
			w.out.Class, w.out.SQLState, w.out.Err = workload.ClassConnError, driver.SQLState(rerr), rerr
			return w.out, false, nil
		}
	}
	if driver.Retryable(code) && w.out.Attempts < w.o.MaxTries && ctx.Err() == nil {
		w.out.Attempts++
		return w.start(ctx)
	}
	w.out.Class, w.out.SQLState = driver.Classify(err, false, w.out.Attempts)
	if !driver.Retryable(code) {
		w.out.Class = workload.ClassFailedError
	}
	w.out.Err = err
	return w.out, false, nil
}

// inCommit reports whether the round trip in flight holds the commit, where
// a lost connection makes the outcome unknown: the END statement, or in a
// pipeline the whole writing transaction.
func (w *Worker) inCommit() bool {
	if w.o.Pipeline {
		return w.o.Script != ScriptSelectOnly
	}
	return w.cur == len(w.steps)-1 && w.steps[w.cur].sql == sqlEnd
}

// draw picks the transaction's values as pgbench's scripts do: aid with the
// chosen distribution, bid and tid uniform, delta uniform in [-5000, 5000].
func (w *Worker) draw() {
	scale := int64(w.o.Scale)
	aid := w.o.Dist.Int(w.rng, 1, AccountsPerScale*scale)
	bid := gen.UniformInt(w.rng, 1, BranchesPerScale*scale)
	tid := gen.UniformInt(w.rng, 1, TellersPerScale*scale)
	delta := gen.UniformInt(w.rng, -5000, 5000)
	if w.bigAid {
		binary.BigEndian.PutUint64(w.enc[pAid], uint64(aid))
	} else {
		binary.BigEndian.PutUint32(w.enc[pAid], uint32(int32(aid)))
	}
	binary.BigEndian.PutUint32(w.enc[pBid], uint32(int32(bid)))
	binary.BigEndian.PutUint32(w.enc[pTid], uint32(int32(tid)))
	binary.BigEndian.PutUint32(w.enc[pDelta], uint32(int32(delta)))
}

// send sends the round trip of statement cur (all statements in a
// pipeline) with its Sync.
func (w *Worker) send() error {
	fe := w.Conn.PgConn().Frontend()
	if w.o.Pipeline {
		for i := range w.steps {
			w.queue(fe, i)
		}
	} else {
		w.queue(fe, w.cur)
	}
	fe.SendSync(&w.sync)
	return fe.Flush()
}

// queue buffers the messages of step i.
func (w *Worker) queue(fe *pgproto3.Frontend, i int) {
	fe.SendBind(&w.binds[i])
	if len(w.sds[i].Fields) == 0 {
		fe.SendDescribe(&w.describe)
	}
	fe.SendExecute(&w.execute)
}

// receive reads the replies of the round trip in flight up to
// ReadyForQuery (pgdrv.Replies). It returns the first error the server
// reported, else a connection error.
func (w *Worker) receive() error {
	return w.replies.UntilReady(w.Conn.PgConn())
}

// rollback leaves an aborted transaction. It is sent and read like the
// statements (pgconn must not read from the connection: see
// pgdrv.Replies); the watch set up by Step interrupts it if the Step
// context is cancelled.
func (w *Worker) rollback() error {
	fe := w.Conn.PgConn().Frontend()
	fe.SendQuery(&w.rollbackQ)
	err := fe.Flush()
	if err == nil {
		err = w.receive()
	}
	if err != nil && (driver.IsConnError(err) || w.Conn.IsClosed()) {
		w.Drop()
		return err
	}
	return nil
}

// Close closes the connection.
func (w *Worker) Close() error {
	w.Unwatch()
	if w.Conn == nil {
		return nil
	}
	err := w.Conn.Close(context.Background())
	w.Conn = nil
	return err
}

// Describe says how the transaction is sent, for the summary.
func (o RunOptions) Describe() string {
	p := "prepared"
	if o.Pipeline {
		p = "prepared+pipeline"
	}
	return o.Script + " (" + p + ", aid " + o.Dist.String() + ", max tries " + strconv.Itoa(o.MaxTries) + ")"
}
