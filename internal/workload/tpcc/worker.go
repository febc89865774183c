package tpcc

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// Modes of `tunebench run tpcc --mode`.
const (
	ModeProcs = "procs" // server-side PL/pgSQL functions, one round trip per transaction
	ModeSQL   = "sql"   // statements sent by the client, pipelined
)

// DefaultMaxTries is the default bound on tries of a transaction that fails
// with a serialization failure or a deadlock.
const DefaultMaxTries = 10

// RunOptions configure the workers of `tunebench run tpcc`.
type RunOptions struct {
	Warehouses int // of the loaded database (Info.Warehouses)
	VUsers     int // virtual users in the run (for --all-warehouses dealing)
	// FirstVUser and AllVUsers place a shard's virtual users in the whole
	// run (workload.Shard): its vuser 0 is the run's FirstVUser, of
	// AllVUsers (0: not a shard).
	FirstVUser, AllVUsers int
	Mode                  string    // ModeProcs or ModeSQL
	AllWarehouses         bool      // each transaction picks one of the warehouses dealt to the virtual user
	KeyingThink           bool      // return the spec's keying and think times as Outcome.Think
	Isolation             string    // read-committed, repeatable-read or serializable
	MaxTries              int       // >= 1; 40001 and 40P01 are retried up to this many tries (0: DefaultMaxTries)
	Constants             Constants // the run's NURand constants: NewRunConstants(r, Info.Load)
	Seed                  int64     // inputs are a function of (Seed, worker id)
	// Dialect is the target's (Target.Dialect): "" or PostgreSQL's, or
	// DialectMariaDB.
	Dialect string
}

// Validate checks the options and fills MaxTries' default; errors are usage
// errors.
func (o *RunOptions) Validate() error {
	if o.Warehouses < 1 {
		return errs.Usage(loadHint, "invalid warehouses %d", o.Warehouses)
	}
	if o.VUsers < 1 {
		return errs.Usage("give --vusers 1 or more", "invalid virtual users %d", o.VUsers)
	}
	if o.Mode != ModeProcs && o.Mode != ModeSQL {
		return errs.Usage("use --mode procs or --mode sql", "unknown mode %q", o.Mode)
	}
	if _, ok := isolationSQL[o.Isolation]; !ok {
		return errs.Usage("use --isolation read-committed, repeatable-read or serializable", "unknown isolation %q", o.Isolation)
	}
	if o.MaxTries == 0 {
		o.MaxTries = DefaultMaxTries
	}
	if o.MaxTries < 1 {
		return errs.Usage("--max-tries takes 1 (no retry) or more", "invalid max tries %d", o.MaxTries)
	}
	c := o.Constants
	if c.CLast < 0 || c.CLast > ALast || c.CCustID < 0 || c.CCustID > ACustID || c.CItemID < 0 || c.CItemID > AItemID {
		return errs.Usage("draw the run constants with NewRunConstants", "run constants out of range: %+v", c)
	}
	return nil
}

// Describe says how the transactions are sent, for the summary.
func (o RunOptions) Describe() string {
	s := o.Mode + " mode, " + o.Isolation + ", max tries " + strconv.Itoa(o.MaxTries)
	if o.AllWarehouses {
		s += ", all warehouses"
	}
	if o.KeyingThink {
		s += ", keying and think times"
	}
	return s
}

// Worker is one virtual user: its own session (connection and prepared
// statements, in the target's protocol), deck, home warehouse and random
// streams. It implements workload.Worker.
type Worker struct {
	o     RunOptions
	id    int
	sess  target.Session
	audit *auditShard
	term  *terminal
	deck  *deck
	aux   *rand.Rand // retry jitter and think times: not the inputs' stream

	// the current transaction's inputs
	no  newOrderInput
	pay paymentInput
	os  orderStatusInput
	dl  deliveryInput
	sl  stockLevelInput

	st       stmts
	prepared []*stmt // all of st, prepared on every connection
	text     []byte  // scratch for text parameters

	delivered int // districts delivered by the last Delivery

	retried []string // SQLSTATEs of the current step's retried attempts (Outcome.Retried)

	maria bool   // the target is MariaDB (mariadb_run.go)
	batch []byte // MariaDB's sql mode: the round trip's statements, as text

	timer *time.Timer
}

// stmts are the prepared statements of the worker's mode.
type stmts struct {
	begin, commit, rollback *stmt
	// sql mode
	noDistrict, noCustomer, noItems, noOrder, noLines *stmt
	payByID, payByName                                *stmt
	osByID, osByName                                  *stmt
	delivery, stockLevel                              *stmt
	// procs mode
	procNO, procPay, procOS, procDelivery, procSL *stmt
}

// NewWorker makes the worker of virtual user id (0-based, the executor's
// worker id) and connects its session, so set-up failures surface here.
// audit may be nil. With --mode procs the functions must be installed
// (InstallProcs).
func NewWorker(ctx context.Context, ss target.Sessions, o RunOptions, id int, audit *Audit) (*Worker, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	inputs := gen.NewRand(o.Seed, uint64(id)+1)
	w := &Worker{
		o: o, id: id,
		audit: audit.shard(o.Warehouses),
		maria: o.Dialect == DialectMariaDB,
		term:  newTerminal(o, id, inputs),
		deck:  newDeck(gen.NewRand(o.Seed, uint64(id)+1+1<<32)),
		aux:   gen.NewRand(o.Seed, uint64(id)+1+2<<32),
		text:  make([]byte, 0, 32),
	}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	w.buildStmts()
	sess, err := ss.NewSession(ctx, w.sessionSpec())
	if err != nil {
		var coded interface{ SQLState() string }
		if w.o.Mode == ModeProcs && !w.maria && errors.As(err, &coded) && coded.SQLState() == "42883" { // undefined function
			return nil, errs.Wrap(errs.KindUsage, err, "the functions are installed by `tunebench run tpcc --mode procs` (InstallProcs)",
				"the tpcc PL/pgSQL functions are missing")
		}
		return nil, err
	}
	w.sess = sess
	return w, nil
}

// slotTypes are the session's slot types of the parameter kinds.
var slotTypes = [...]target.ParamType{kInt: target.Int4, kIntArray: target.Int4Array, kNumeric: target.Numeric, kText: target.Text}

// sessionSpec declares the parameters (one slot each) and the statements;
// every connection starts at the run's isolation level (autocommit calls,
// Order-Status and Stock-Level run at the session's default; sql mode's
// BEGIN names it too).
func (w *Worker) sessionSpec() *target.SessionSpec {
	spec := &target.SessionSpec{ID: w.id, Slots: make([]target.ParamType, numParams), Results: true,
		Setup: []string{"SET default_transaction_isolation = '" + isolationSQL[w.o.Isolation] + "'"}}
	if w.maria {
		spec.Setup = []string{"SET SESSION TRANSACTION ISOLATION LEVEL " + isolationSQL[w.o.Isolation]}
	}
	for p, d := range paramDefs {
		spec.Slots[p] = slotTypes[d.kind]
		if w.maria && d.kind == kIntArray {
			spec.Slots[p] = target.Text // MariaDB has no arrays: pLines carries the lines
		}
	}
	for i, st := range w.prepared {
		st.idx = i
		ts := target.Stmt{Name: st.name, SQL: st.sql}
		for _, p := range st.params {
			ts.Params = append(ts.Params, int(p))
		}
		spec.Stmts = append(spec.Stmts, ts)
	}
	return spec
}

func (w *Worker) buildStmts() {
	if w.maria {
		w.buildMariaStmts()
		return
	}
	s := &w.st
	s.begin = plainStmt("tc_begin", "BEGIN ISOLATION LEVEL "+isolationSQL[w.o.Isolation])
	s.commit = plainStmt("tc_commit", "COMMIT")
	s.rollback = plainStmt("tc_rollback", "ROLLBACK")
	all := []*stmt{s.begin, s.commit, s.rollback}
	if w.o.Mode == ModeSQL {
		s.noDistrict = newStmt("tc_no_district", noDistrict)
		s.noCustomer = newStmt("tc_no_customer", noCustomer)
		s.noItems = newStmt("tc_no_items", noItems)
		s.noOrder = newStmt("tc_no_order", noOrder)
		s.noLines = newStmt("tc_no_lines", noLines)
		s.payByID = newStmt("tc_pay_id", paymentByID)
		s.payByName = newStmt("tc_pay_name", paymentByName)
		s.osByID = newStmt("tc_os_id", orderStatusByID)
		s.osByName = newStmt("tc_os_name", orderStatusByName)
		s.delivery = newStmt("tc_delivery", deliverySQL(isolationSQL[w.o.Isolation]))
		s.stockLevel = newStmt("tc_stock_level", stockLevelTmpl)
		all = append(all, s.noDistrict, s.noCustomer, s.noItems, s.noOrder, s.noLines, s.payByID, s.payByName,
			s.osByID, s.osByName, s.delivery, s.stockLevel)
	} else {
		s.procNO = newStmt("tc_p_new_order", procNewOrder)
		s.procPay = newStmt("tc_p_payment", procPayment)
		s.procOS = newStmt("tc_p_order_status", procOrderStatus)
		s.procDelivery = newStmt("tc_p_delivery", procDelivery)
		s.procSL = newStmt("tc_p_stock_level", procStockLevel)
		all = append(all, s.procNO, s.procPay, s.procOS, s.procDelivery, s.procSL)
	}
	w.prepared = all
}

// Step runs the next transaction of the deck. Serialization failures and
// deadlocks are retried with the same inputs, after a short jittered pause,
// up to MaxTries.
func (w *Worker) Step(ctx context.Context) (workload.Outcome, error) {
	out := workload.Outcome{Op: w.deck.peek().String(), Attempts: 1}
	if !w.sess.Ready(ctx, &out) {
		return out, nil
	}
	// Deal the card only now: a transaction that could not even start
	// (no connection) does not use up its card.
	t := w.deck.next()
	w.draw(t)
	if w.o.KeyingThink {
		out.Think = pause(w.aux, t, w.deck.peek())
	}
	for {
		abort, err, inCommit := w.attempt(t)
		if err == nil {
			out.Class, _ = w.sess.Classify(nil, false, out.Attempts)
			if abort {
				out.Class = workload.ClassUserAbort
			}
			w.record(t, out.Class)
			return out, nil
		}
		if w.sess.Lost(ctx, err, inCommit, &out) {
			return out, nil
		}
		_, code := w.sess.Classify(err, false, out.Attempts)
		// Leave an aborted transaction before anything else.
		if rerr := w.leaveTx(); rerr != nil {
			_, rcode := w.sess.Classify(rerr, false, out.Attempts)
			out.Class, out.SQLState, out.Err = workload.ClassConnError, rcode, rerr
			return out, nil
		}
		if target.Retry(ctx, w.sess, err, code, w.o.MaxTries, &out, &w.retried) {
			w.backoff(ctx, out.Attempts-1)
			continue
		}
		return out, nil
	}
}

// backoff pauses before try number tries+1: a uniform random time up to
// 2^(tries-1) ms, at most 64 ms, so the transactions that conflicted do not
// meet again at once. Cancellation of ctx cuts it short.
func (w *Worker) backoff(ctx context.Context, tries int) {
	limit := time.Millisecond << min(tries-1, 6)
	d := time.Duration(w.aux.Int64N(int64(limit))) + 50*time.Microsecond
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
	case <-ctx.Done():
		w.timer.Stop()
	}
}

// leaveTx rolls back the transaction left open by a failed attempt, if any.
func (w *Worker) leaveTx() error {
	if !w.sess.InTx() {
		return nil
	}
	if w.maria && w.o.Mode == ModeProcs {
		// The procedure's exit handler rolled back before the error came
		// out (procs_mariadb.go): a ROLLBACK more would count twice in
		// Com_rollback. A lost connection is handled before this.
		return nil
	}
	return w.sess.Rollback()
}

// draw picks the inputs of a transaction of type t.
func (w *Worker) draw(t txnType) {
	wh := w.term.warehouse()
	switch t {
	case txNewOrder:
		w.term.drawNewOrder(&w.no, wh)
	case txPayment:
		w.term.drawPayment(&w.pay, wh)
	case txOrderStatus:
		w.term.drawOrderStatus(&w.os, wh)
	case txDelivery:
		w.term.drawDelivery(&w.dl, wh)
	case txStockLevel:
		w.term.drawStockLevel(&w.sl, wh)
	}
}

// attempt runs the drawn transaction once. abort reports a New-Order rolled
// back because an item does not exist; inCommit that err came from the
// round trip that carried the COMMIT (or from an autocommit call that
// writes), where a lost connection leaves the outcome unknown.
func (w *Worker) attempt(t txnType) (abort bool, err error, inCommit bool) {
	if w.o.Mode == ModeProcs {
		return w.procsAttempt(t)
	}
	if w.maria {
		return w.mariaSQLAttempt(t)
	}
	return w.sqlAttempt(t)
}

// record counts a completed transaction in the audit.
func (w *Worker) record(t txnType, class workload.OutcomeClass) {
	a := w.audit
	if a == nil || !class.Completed() {
		return
	}
	switch t {
	case txNewOrder:
		a.add(cNewOrders, 1)
		a.add(cOrderLines, int64(w.no.n))
		a.add(cRemoteLines, int64(w.no.remote))
		if class == workload.ClassUserAbort {
			a.add(cRollbacks, 1)
		}
	case txPayment:
		a.add(cPayments, 1)
		if w.pay.remote {
			a.add(cRemotePayments, 1)
		}
		if w.pay.byName {
			a.add(cPaymentsByName, 1)
		}
	case txOrderStatus:
		a.add(cOrderStatus, 1)
		if w.os.byName {
			a.add(cOrderStatusByName, 1)
		}
	case txDelivery:
		a.add(cDeliveries, 1)
		a.add(cSkippedDistricts, int64(DistrictsPerWarehouse-w.delivered))
	case txStockLevel:
		a.add(cStockLevels, 1)
	}
}

// Parameters: one session slot per param; the session encodes them.

func (w *Worker) setInt(p param, v int) { w.sess.SetInt(int(p), int64(v)) }

func (w *Worker) setIntArray(p param, vs []int32) { w.sess.SetIntArray(int(p), vs) }

// setCents sets an amount in cents as numeric text ("1234.05").
func (w *Worker) setCents(p param, cents int) {
	b := strconv.AppendInt(w.text[:0], int64(cents/100), 10)
	b = append(b, '.', byte('0'+cents%100/10), byte('0'+cents%10))
	w.text = b
	w.sess.SetText(int(p), b)
}

// setLastName sets the last name of number num, or NULL when !byName.
func (w *Worker) setLastName(byName bool, num int) {
	if !byName {
		w.sess.SetNull(int(pCLast))
		return
	}
	w.text = AppendLastName(w.text[:0], num)
	w.sess.SetText(int(pCLast), w.text)
}

// queue adds s to the round trip.
func (w *Worker) queue(s *stmt) { w.sess.Queue(s.idx) }

// roundTrip sends the queued statements and reads their replies; rows and
// val then give each statement's result. It returns the first error the
// server reported, else a connection error.
func (w *Worker) roundTrip() error {
	if err := w.sess.Send(); err != nil {
		return err
	}
	return w.sess.Receive()
}

// rows is the row count of statement i of the last round trip.
func (w *Worker) rows(i int) int { return w.sess.Rows(i) }

// val is column col (0 or 1) of the first row of statement i of the last
// round trip, when an int4.
func (w *Worker) val(i, col int) int32 { return w.sess.Int(i, col) }

// errUnexpected reports a reply that does not fit the data (a database not
// loaded by tunebench, or changed since).
var errUnexpected = errors.New("unexpected reply")

// Close closes the session.
func (w *Worker) Close() error { return w.sess.Close() }
