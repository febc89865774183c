package mariadb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/target"
)

// A MariaDB session runs a worker's statements over one connection that
// go-sql-driver/mysql opens (the handshake, authentication, the session's
// set-up) and then hands over: the statements are prepared on the server
// and executed in the binary protocol, transaction control and compound
// commands go as text, all through the session's own reads and writes on
// the socket (wire.go). A round trip of several queued statements runs
// them one after the other and stops at the first error: MariaDB would
// run (and with autocommit, commit) any statement sent after it, which is
// why nothing is sent past an error. The socket is a direct one
// (internal/netio): blocking reads, a descriptor to poll, so that one
// thread can drive several sessions; a cancelled step interrupts a
// statement in flight by a deadline on it.

// connNet is the network name of the sessions' dial function.
const (
	connNetTCP  = "tunebench-tcp"
	connNetUnix = "tunebench-unix"
)

type connKey struct{}

func init() {
	dial := func(network string) mysql.DialContextFunc {
		return func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			c, _ = netio.NewDirectConn(c)
			if p, ok := ctx.Value(connKey{}).(*net.Conn); ok {
				*p = c
			}
			return c, nil
		}
	}
	mysql.RegisterDialContext(connNetTCP, dial("tcp"))
	mysql.RegisterDialContext(connNetUnix, dial("unix"))
}

// NewSession connects a worker's session and prepares its statements.
func (t *Target) NewSession(ctx context.Context, spec *target.SessionSpec) (target.Session, error) {
	return newSession(ctx, t.cfg, spec)
}

// FollowsServer: no (target.ServerFollower). mariadbd serves each
// connection from a thread that moves between CPUs; following them cost
// 2.5 us of client CPU per point select on 2 cores (docs/benchmarks.md).
func (t *Target) FollowsServer() bool { return false }

// DriverThreads (target.DriverThreader): for a server on this machine,
// one driver thread per 4 cores, at least one; for a remote one, one per
// core. The driver and mariadbd share a local machine's cores, and one
// thread multiplexing the connections was measured to serve them as fast
// as two at less client CPU: point select on 2 cores, 4, 8 and 16
// connections, 1 thread 0-8% more tps and 8-23% less CPU per transaction
// than 2; tpcb-like the same throughput at 8-13% less (docs/benchmarks.md,
// "MariaDB"). One thread drives about 40,000 point selects a second on a
// core of its own, so a quarter of the cores keeps the driver well ahead
// of what the rest serve.
func (t *Target) DriverThreads(clients int) int {
	if t.Remote() {
		return runtime.NumCPU()
	}
	return max(1, runtime.NumCPU()/4)
}

// NewThread is the discipline of a driver thread of direct connections.
func (t *Target) NewThread() step.Thread { return &netio.Thread{} }

type prepared struct {
	sql   string // with ? placeholders
	slots []int  // the slot of each ?
	text  bool   // sent as text (transaction control)
	st    serverStmt
}

// worker is a worker's session: a target.Session.
type worker struct {
	cfg   *mysql.Config
	spec  *target.SessionSpec
	conn  driver.Conn // the driver's connection, for its Close
	nc    net.Conn    // its socket
	w     *wire
	stmts []prepared
	// lazy: the statements are prepared at first use (more than
	// target.MaxPrepared of them; lazy.go); nil: all at connect.
	lazy   *lazyStmts
	thread netio.Thread
	direct bool
	shared bool // driven with others by one thread (Multiplex)

	vals    []any // each slot's value: nil, int64 or []byte
	stopCtx func() bool
	watched context.Context

	queued [target.MaxQueued]int
	nq     int // queued statements
	// qargs are each queued statement's parameters, bound at Queue (a
	// later Set does not change a statement already queued); qbufs hold
	// their text values.
	qargs [target.MaxQueued][]any
	qbufs [target.MaxQueued][][]byte
	isQ   bool // the round trip in flight is a SendQuery
	qlast bool // the last one received was
	res   []reply
	nres  int
	inTx  bool
}

func newSession(ctx context.Context, cfg *mysql.Config, spec *target.SessionSpec) (*worker, error) {
	c := cfg.Clone()
	switch c.Net {
	case "tcp", "":
		c.Net = connNetTCP
	case "unix":
		c.Net = connNetUnix
	}
	c.MultiStatements = true // SendQuery: a compound command in one round trip
	c.InterpolateParams = false
	// The driver would log a failed COM_QUIT of a connection dropped
	// after an error (to stderr, in the middle of the progress lines);
	// the error itself is the step's.
	c.Logger = &mysql.NopLogger{}
	s := &worker{cfg: c, spec: spec, vals: make([]any, len(spec.Slots)), res: make([]reply, target.MaxQueued)}
	for i, typ := range spec.Slots {
		if typ == target.Int4Array {
			return nil, errs.New(errs.KindUsage, "run this workload on PostgreSQL", "slot %d is an integer array, which MariaDB has no type for", i)
		}
	}
	if spec.Lazy() {
		s.lazy = newLazy(spec)
	} else {
		s.stmts = make([]prepared, len(spec.Stmts))
		for i := range spec.Stmts {
			p, err := s.compile(i)
			if err != nil {
				return nil, err
			}
			s.stmts[i] = p
		}
	}
	if err := s.reconnect(ctx); err != nil {
		return nil, err
	}
	if s.direct {
		netio.EnsureProcs(spec.ID + 1)
	}
	return s, nil
}

// reconnect opens a connection, runs the set-up, takes over the socket
// and prepares the statements.
func (s *worker) reconnect(ctx context.Context) error {
	s.drop()
	var nc net.Conn
	cn, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "", "MariaDB connection")
	}
	conn, err := cn.Connect(context.WithValue(ctx, connKey{}, &nc))
	if err != nil {
		return connError(err, "connect a worker's session")
	}
	s.conn, s.nc = conn, nc
	ex := conn.(driver.ExecerContext)
	for _, q := range s.spec.Setup {
		if _, err := ex.ExecContext(ctx, q, nil); err != nil {
			s.drop()
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if s.w, err = newWire(conn, nc); err != nil {
		s.drop()
		return err
	}
	// The driver watches ctx while it works, not after: the session's own
	// watch interrupts what it sends.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	for i := range s.stmts {
		p := &s.stmts[i]
		if p.text {
			continue
		}
		if err := s.prepareOne(p, i); err != nil {
			s.drop()
			return err
		}
	}
	if s.lazy != nil {
		if err := s.reconnectLazy(); err != nil {
			s.drop()
			return err
		}
	}
	s.direct = netio.IsDirect(nc)
	s.inTx, s.nq, s.isQ, s.qlast, s.nres = false, 0, false, false, 0
	return nil
}

// prepareOne prepares statement i (p) on the connection.
func (s *worker) prepareOne(p *prepared, i int) error {
	var err error
	if p.st, err = s.w.prepare(p.sql); err != nil {
		return fmt.Errorf("prepare %s: %w", s.spec.Stmts[i].Name, err)
	}
	if p.st.nparams != len(p.slots) {
		return errs.New(errs.KindInternal, "", "statement %s: the server counts %d parameters, the statement has %d", s.spec.Stmts[i].Name, p.st.nparams, len(p.slots))
	}
	return nil
}

func (s *worker) drop() {
	s.unwatch()
	if s.conn != nil {
		// The driver's Close sends COM_QUIT on the socket and closes it.
		_ = s.conn.Close()
	}
	s.conn, s.nc, s.w = nil, nil, nil
}

// watch makes a cancelled ctx interrupt what the session is waiting for:
// a deadline in the past on its socket fails the read or write in flight
// (the connection is then dropped by Lost).
func (s *worker) watch(ctx context.Context) {
	if ctx == s.watched || ctx.Done() == nil {
		return
	}
	s.unwatch()
	nc := s.nc
	s.stopCtx = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	s.watched = ctx
}

func (s *worker) unwatch() {
	if s.stopCtx != nil {
		s.stopCtx()
		s.stopCtx = nil
	}
	s.watched = nil
}

func (s *worker) Ready(ctx context.Context, out *step.Outcome) bool {
	if s.direct && !s.shared {
		s.thread.PaceFor(ctx)
		s.thread.Tick()
	}
	if err := ctx.Err(); err != nil {
		out.Class, out.SQLState = Classify(err, false, 1)
		out.Err = err
		return false
	}
	if s.conn == nil {
		if err := s.reconnect(ctx); err != nil {
			out.Class, out.SQLState = Classify(err, false, 1)
			if isConnError(err) || errs.KindOf(err) == errs.KindConnect {
				out.Class = step.ClassConnError
			}
			out.Err = err
			return false
		}
	}
	s.watch(ctx)
	return true
}

func (s *worker) Lost(ctx context.Context, err error, inCommit bool, out *step.Outcome) bool {
	if cerr := ctx.Err(); cerr != nil {
		err = cerr
	} else if s.w != nil && s.w.broken == nil && !isConnError(err) {
		return false
	}
	s.drop()
	out.Class, out.SQLState = Classify(err, inCommit, out.Attempts)
	if out.Class == step.ClassFailedError {
		out.Class = step.ClassConnError
	}
	out.Err = err
	return true
}

func (s *worker) Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string) {
	return Classify(err, inCommit, attempts)
}

func (s *worker) Retryable(code string) bool { return Retryable(code) }

func (s *worker) SetInt(slot int, v int64) { s.vals[slot] = v }

// SetText sets a text value, sent as a string parameter (MariaDB converts
// it where the statement needs a number, as PostgreSQL infers an untyped
// parameter's type); the slot keeps its own copy.
func (s *worker) SetText(slot int, b []byte) {
	if old, ok := s.vals[slot].([]byte); ok {
		s.vals[slot] = append(old[:0], b...)
		return
	}
	s.vals[slot] = append([]byte{}, b...)
}

func (s *worker) SetNull(slot int) { s.vals[slot] = nil }

// SetIntArray: integer arrays are refused by newSession.
func (s *worker) SetIntArray(int, []int32) {}

// Queue adds statement i to the round trip with its parameters' values
// now.
func (s *worker) Queue(i int) {
	k := s.nq
	if k >= len(s.queued) {
		return
	}
	s.queued[k] = i
	s.nq++
	p := s.stmtOf(i)
	if cap(s.qargs[k]) < len(p.slots) {
		s.qargs[k] = make([]any, len(p.slots))
		s.qbufs[k] = make([][]byte, len(p.slots))
	}
	args := s.qargs[k][:len(p.slots)]
	for j, slot := range p.slots {
		v := s.vals[slot]
		if b, ok := v.([]byte); ok {
			s.qbufs[k][j] = append(s.qbufs[k][j][:0], b...)
			v = s.qbufs[k][j]
		}
		args[j] = v
	}
	s.qargs[k] = args
}

// Send writes the first queued statement; Receive reads its reply and
// writes the next one, if any, after it (see the package comment).
func (s *worker) Send() error {
	if s.w == nil {
		return driver.ErrBadConn
	}
	s.nres = 0
	if s.nq == 0 {
		return nil
	}
	if err := s.sendStmt(0); err != nil {
		// Nothing is in flight (a statement that could not be prepared,
		// or a lost connection): the round trip is over.
		s.nq = 0
		return err
	}
	return nil
}

// sendStmt sends the k-th queued statement.
func (s *worker) sendStmt(k int) error {
	p, err := s.ready(s.queued[k])
	if err != nil {
		return s.failed(err)
	}
	if p.text {
		s.w.begin(0x03)
		s.w.wbuf = append(s.w.wbuf, p.sql...)
		return s.w.send()
	}
	return s.w.sendExecute(&p.st, s.qargs[k])
}

func (s *worker) SendQuery(q []byte) error {
	if s.w == nil {
		return driver.ErrBadConn
	}
	s.isQ, s.nres = true, 0
	s.w.begin(0x03)
	s.w.wbuf = append(s.w.wbuf, q...)
	return s.w.send()
}

// Receive reads the round trip's replies: the queued statements' (each
// sent after the previous one's reply, none after an error), or the
// SendQuery's results.
func (s *worker) Receive() error {
	s.qlast = s.isQ
	if s.isQ {
		s.isQ = false
		return s.receiveQuery()
	}
	n := s.nq
	s.nq = 0
	for k := 0; k < n; k++ {
		if k > 0 {
			if err := s.sendStmt(k); err != nil {
				return s.failed(err)
			}
		}
		p := s.stmtOf(s.queued[k])
		var err error
		if p.text {
			err = s.w.result(nil, false, &s.res[k], false)
		} else {
			err = s.w.result(&p.st, true, &s.res[k], s.spec.Results)
		}
		if err == nil && s.res[k].more {
			// A CALL's final OK, or what followed a text statement.
			err = s.w.drain(&s.res[k], !p.text)
		}
		if err != nil {
			return s.failed(err)
		}
		s.nres++
		s.inTx = s.w.status&statusInTrans != 0
	}
	return nil
}

// receiveQuery reads every result of a SendQuery (MariaDB stops at the
// first statement that fails).
func (s *worker) receiveQuery() error {
	for k := 0; ; k++ {
		if k >= len(s.res) {
			s.res = append(s.res, reply{})
		}
		if err := s.w.result(nil, false, &s.res[k], true); err != nil {
			return s.failed(err)
		}
		s.nres++
		s.inTx = s.w.status&statusInTrans != 0
		if !s.res[k].more {
			return nil
		}
	}
}

// failed notes that after an error a transaction may be open (a lock wait
// timeout fails only its statement), so the worker rolls back before it
// sends anything else.
func (s *worker) failed(err error) error {
	s.inTx = true
	return err
}

func (s *worker) Results() int         { return s.nres }
func (s *worker) Rows(k int) int       { return s.res[k].rows }
func (s *worker) Int(k, col int) int32 { return s.res[k].ints[col] }
func (s *worker) Row(k int) [][]byte   { return s.res[k].row }

// Columns are statement i's result columns (from its preparation).
func (s *worker) Columns(i int) []string {
	var out []string
	var cols []column
	if s.lazy == nil {
		cols = s.stmts[i].st.cols
	} else if p := s.lazy.pinned[i]; p != nil {
		cols = p.st.cols
	}
	for _, c := range cols {
		out = append(out, c.name)
	}
	return out
}

func (s *worker) Fields(k int) []string {
	if !s.qlast || k >= s.nres {
		return nil
	}
	return s.res[k].fields
}

func (s *worker) InTx() bool { return s.w != nil && s.inTx }

// Rollback ends the transaction (also one a failed statement left open).
func (s *worker) Rollback() error {
	if s.w == nil {
		return driver.ErrBadConn
	}
	var r reply
	err := s.w.query("ROLLBACK", &r, false)
	if err != nil {
		if s.w.broken != nil || isConnError(err) {
			s.drop()
		}
		return err
	}
	s.inTx = s.w.status&statusInTrans != 0
	return nil
}

func (s *worker) Close() error {
	s.drop()
	return nil
}

// Multiplex lets one thread drive the session with others; only a direct
// socket can be polled.
func (s *worker) Multiplex(on bool) bool {
	if on && !s.direct {
		return false
	}
	s.shared = on
	return true
}

// Fd is the socket's descriptor, for poll(2).
func (s *worker) Fd() int {
	if s.nc == nil {
		return -1
	}
	fd, _ := netio.DirectFd(s.nc)
	return fd
}

// Readable tells the socket that poll found it readable.
func (s *worker) Readable() {
	if s.nc != nil {
		netio.MarkReadable(s.nc)
	}
}

// ServerCPU is where the server's thread last sent from (-1 unknown).
func (s *worker) ServerCPU() int {
	if s.nc == nil {
		return -1
	}
	return netio.IncomingCPU(s.nc)
}
