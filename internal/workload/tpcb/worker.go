package tpcb

import (
	"context"
	"strconv"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
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
	// Dialect is the target's ("" or "postgres": PostgreSQL's statements).
	Dialect string
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

// Parameter slots of the per-transaction values.
const (
	pAid = iota
	pBid
	pTid
	pDelta
	nParams
)

// The statements of the scripts.
var (
	stBegin      = target.Stmt{Name: "tb_begin", SQL: sqlBegin}
	stEnd        = target.Stmt{Name: "tb_end", SQL: sqlEnd}
	stUpdAccount = target.Stmt{Name: "tb_upd_a", SQL: sqlUpdAccount, Params: []int{pDelta, pAid}}
	stSelAccount = target.Stmt{Name: "tb_sel_a", SQL: sqlSelAccount, Params: []int{pAid}}
	stUpdTeller  = target.Stmt{Name: "tb_upd_t", SQL: sqlUpdTeller, Params: []int{pDelta, pTid}}
	stUpdBranch  = target.Stmt{Name: "tb_upd_b", SQL: sqlUpdBranch, Params: []int{pDelta, pBid}}
	stInsHistory = target.Stmt{Name: "tb_ins_h", SQL: sqlInsHistory, Params: []int{pTid, pBid, pAid, pDelta}}
)

// scriptSteps are the statements of a script, in order.
func scriptSteps(script string) []target.Stmt {
	switch script {
	case ScriptSelectOnly:
		return []target.Stmt{stSelAccount}
	case ScriptSimpleUpdate:
		return []target.Stmt{stBegin, stUpdAccount, stSelAccount, stInsHistory, stEnd}
	default:
		return []target.Stmt{stBegin, stUpdAccount, stSelAccount, stUpdTeller, stUpdBranch, stInsHistory, stEnd}
	}
}

// sessionSpec declares the slots and the script's statements (the
// session's statement i is the script's step i); aid is a bigint from
// BigintScale on, as in pgbench.
func sessionSpec(id int, script string, big bool, dialect string) *target.SessionSpec {
	aid := target.Int4
	if big {
		aid = target.Int8
	}
	return &target.SessionSpec{
		ID:    id,
		Slots: []target.ParamType{pAid: aid, pBid: target.Int4, pTid: target.Int4, pDelta: target.Int4},
		Stmts: inDialect(scriptSteps(script), dialect),
	}
}

// Worker runs one client's transactions: it draws the values as pgbench
// does and runs the script's statements through its session (the
// target's protocol), retrying serialization failures and deadlocks.
type Worker struct {
	o     RunOptions
	sess  target.Session
	rng   *gen.PRNG
	steps int  // statements of the script
	end   bool // its last statement commits (END)

	// the step in progress
	out     workload.Outcome
	cur     int      // statement in flight (not used in a pipeline)
	retried []string // SQLSTATEs of its retried attempts (Outcome.Retried)
}

// NewWorker makes a worker and connects its session, so set-up failures
// surface as errors here.
func NewWorker(ctx context.Context, ss target.Sessions, o RunOptions, id int) (*Worker, error) {
	spec := sessionSpec(id, o.Script, o.Scale >= BigintScale, o.Dialect)
	w := &Worker{o: o, rng: gen.ClientPRNG(uint64(o.Seed), id), steps: len(spec.Stmts), end: spec.Stmts[len(spec.Stmts)-1].Name == stEnd.Name}
	sess, err := ss.NewSession(ctx, spec)
	if err != nil {
		return nil, err
	}
	w.sess = sess
	return w, nil
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
// executor (workload.Multiplexed), when its session can be polled.
func (w *Worker) Multiplex(on bool) bool { return w.sess.Multiplex(on) }

// Begin draws the transaction's values and sends its first round trip.
func (w *Worker) Begin(ctx context.Context) (workload.Outcome, bool, error) {
	w.out = workload.Outcome{Op: w.o.Script, Attempts: 1}
	if !w.sess.Ready(ctx, &w.out) {
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
// next statement or ends the step. The executor calls it when the
// session's descriptor is readable: the first read need not block.
func (w *Worker) Continue(ctx context.Context) (workload.Outcome, bool, error) {
	w.sess.Readable()
	return w.next(ctx)
}

// next is Continue for a step driven by its own goroutine (Step), whose
// read waits for the reply.
func (w *Worker) next(ctx context.Context) (workload.Outcome, bool, error) {
	if err := w.sess.Receive(); err != nil {
		return w.failed(ctx, err)
	}
	if !w.o.Pipeline && w.cur < w.steps-1 {
		w.cur++
		if err := w.send(); err != nil {
			return w.failed(ctx, err)
		}
		return w.out, true, nil
	}
	w.out.Class = workload.ClassOK
	if w.out.Attempts > 1 {
		w.out.Class = workload.ClassRetriedOK
	}
	return w.out, false, nil
}

// Fd is the descriptor of the worker's session (workload.Multiplexed).
func (w *Worker) Fd() int { return w.sess.Fd() }

// ServerCPU is where the server side of the session last ran
// (workload.Placed).
func (w *Worker) ServerCPU() int { return w.sess.ServerCPU() }

// failed handles an error of the round trip in flight: a lost connection
// ends the step; otherwise the aborted transaction is rolled back and a
// serialization failure or deadlock is retried with the same values.
func (w *Worker) failed(ctx context.Context, err error) (workload.Outcome, bool, error) {
	if w.sess.Lost(ctx, err, w.inCommit(), &w.out) {
		return w.out, false, nil
	}
	_, code := w.sess.Classify(err, false, w.out.Attempts)
	if w.o.Script != ScriptSelectOnly {
		// Leave the aborted transaction before anything else.
		if rerr := w.sess.Rollback(); rerr != nil {
			_, rcode := w.sess.Classify(rerr, false, w.out.Attempts)
			w.out.Class, w.out.SQLState, w.out.Err = workload.ClassConnError, rcode, rerr
			return w.out, false, nil
		}
	}
	if target.Retry(ctx, w.sess, err, code, w.o.MaxTries, &w.out, &w.retried) {
		return w.start(ctx)
	}
	return w.out, false, nil
}

// inCommit reports whether the round trip in flight holds the commit, where
// a lost connection makes the outcome unknown: the END statement, or in a
// pipeline the whole writing transaction.
func (w *Worker) inCommit() bool {
	if w.o.Pipeline {
		return w.o.Script != ScriptSelectOnly
	}
	return w.cur == w.steps-1 && w.end
}

// draw picks the transaction's values as pgbench's built-in scripts do,
// with its generator and in its order: aid with the chosen distribution,
// then (not in select-only) bid and tid uniform and delta uniform in
// [-5000, 5000]. With the same seed, client id draws what pgbench's client
// id draws (TestDrawsAsPgbenchBuiltin).
func (w *Worker) draw() {
	scale := int64(w.o.Scale)
	w.sess.SetInt(pAid, w.o.Dist.Int(w.rng, 1, AccountsPerScale*scale))
	if w.o.Script == ScriptSelectOnly {
		return
	}
	w.sess.SetInt(pBid, w.rng.Random(1, BranchesPerScale*scale))
	w.sess.SetInt(pTid, w.rng.Random(1, TellersPerScale*scale))
	w.sess.SetInt(pDelta, w.rng.Random(-5000, 5000))
}

// send sends the round trip of statement cur (all statements in a
// pipeline).
func (w *Worker) send() error {
	if w.o.Pipeline {
		for i := 0; i < w.steps; i++ {
			w.sess.Queue(i)
		}
	} else {
		w.sess.Queue(w.cur)
	}
	return w.sess.Send()
}

// Close closes the session.
func (w *Worker) Close() error { return w.sess.Close() }

// Describe says how the transaction is sent, for the summary.
func (o RunOptions) Describe() string {
	p := "prepared"
	if o.Pipeline {
		p = "prepared+pipeline"
	}
	return o.Script + " (" + p + ", aid " + o.Dist.String() + ", max tries " + strconv.Itoa(o.MaxTries) + ")"
}
