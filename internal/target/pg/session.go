package pg

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tunebench/tunebench/internal/driver"
	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/target"
)

// A PostgreSQL session speaks the extended query protocol itself: the
// statements are prepared once per connection (pgconn), then every round
// trip is sent through the connection's pgproto3.Frontend and its replies
// read straight from the socket (driver/pg.Replies), without pgconn's
// per-statement set-up: the busy lock, the result reader, the slow-write
// timer and a command tag string. The messages are built once per
// session; a statement whose parameters are all integers keeps its Bind
// message, whose parameter slices are the slots SetInt writes into.
// Everything a round trip sends fits the socket buffers, so the write
// cannot dead-lock against an unread reply, which is what pgconn's
// slow-write timer guards against.

// Type OIDs and wire formats (1 binary, 0 text) of the slot types.
var (
	slotOID    = [...]uint32{target.Int4: 23, target.Int8: 20, target.Numeric: 1700, target.Text: 25, target.Int4Array: 1007, target.Unknown: 0}
	slotFormat = [...]int16{target.Int4: 1, target.Int8: 1, target.Numeric: 0, target.Text: 0, target.Int4Array: 1, target.Unknown: 0}
)

// Connector opens a connection for a session.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// Sessions makes sessions on the connections connect opens (a Target's
// sessions use its Connect; tests bring their own).
type Sessions struct{ Connect Connector }

// NewSession connects a worker's session and prepares its statements, so
// set-up failures surface here.
func (ss Sessions) NewSession(ctx context.Context, spec *target.SessionSpec) (target.Session, error) {
	return newSession(ctx, ss.Connect, spec)
}

// NewThread is the discipline of a driver thread of direct connections.
func (Sessions) NewThread() step.Thread { return &netio.Thread{} }

// session is a worker's connection: a target.Session.
type session struct {
	connect Connector
	spec    *target.SessionSpec
	// Session: the connection, its cancellation watch, the thread discipline.
	pgdrv.Session

	fe    *pgproto3.Frontend // of the current connection
	types []target.ParamType // spec.Slots
	slots [][]byte           // each slot's encoded value (nil = NULL)
	bufs  [][]byte           // the slots' storage
	// fixed: per statement, its parameters are integers whose buffers are
	// written in place, so its Bind is kept; a NULL (or a text) in such a
	// slot makes the statements that use it refill theirs on every Queue.
	fixed []bool
	users [][]int // per slot, the statements that use it

	args      [][][]byte // per statement: its parameters' values
	binds     []pgproto3.Bind
	resultFmt []int16
	execute   pgproto3.Execute
	sync      pgproto3.Sync
	rollbackQ pgproto3.Query
	replies   pgdrv.Replies
	res       [target.MaxQueued]pgdrv.Result
	row       [][]byte   // Row's columns
	columns   [][]string // per statement, its result columns (from Prepare)
	queued    int
	// A SendQuery round trip: its message, its results (as many as its
	// statements) and their columns.
	query   pgproto3.Query
	isQuery bool // SendQuery sent the round trip in flight
	qlast   bool // the last round trip received was a SendQuery's
	qres    []pgdrv.Result
	nres    int
	fields  []string
	// lazy: the statements are prepared at first use (more than
	// target.MaxPrepared of them; lazy.go); nil: all at connect.
	lazy *lazyStmts
}

// NewSession connects a worker's session on the target and prepares its
// statements, so set-up failures surface here.
func (t *Target) NewSession(ctx context.Context, spec *target.SessionSpec) (target.Session, error) {
	return newSession(ctx, t.conn.ConnectNoWait, spec)
}

func newSession(ctx context.Context, connect Connector, spec *target.SessionSpec) (*session, error) {
	s := &session{connect: connect, spec: spec, types: spec.Slots, resultFmt: []int16{1}}
	if spec.TextResults {
		s.resultFmt = []int16{0}
		s.replies.KeepRow = true
	}
	s.rollbackQ = pgproto3.Query{String: "ROLLBACK"}
	s.slots = make([][]byte, len(spec.Slots))
	s.bufs = make([][]byte, len(spec.Slots))
	for i, typ := range spec.Slots {
		switch typ {
		case target.Int4:
			s.bufs[i] = make([]byte, 4)
		case target.Int8:
			s.bufs[i] = make([]byte, 8)
		default:
			s.bufs[i] = make([]byte, 0, 64)
		}
		s.slots[i] = s.bufs[i]
	}
	s.users = make([][]int, len(spec.Slots))
	if spec.Lazy() {
		s.lazy = newLazy(spec)
	} else {
		s.eager()
	}
	if err := s.reconnect(ctx); err != nil {
		return nil, err
	}
	if s.Direct {
		// Workers are made one after the other with ids 0..n-1.
		netio.EnsureProcs(spec.ID + 1)
	}
	return s, nil
}

// eager makes the messages of every statement, all prepared at connect.
func (s *session) eager() {
	spec := s.spec
	s.columns = make([][]string, len(spec.Stmts))
	s.args = make([][][]byte, len(spec.Stmts))
	s.binds = make([]pgproto3.Bind, len(spec.Stmts))
	s.fixed = make([]bool, len(spec.Stmts))
	for i, st := range spec.Stmts {
		fmts := make([]int16, len(st.Params))
		s.fixed[i] = true
		for j, p := range st.Params {
			typ := spec.Slots[p]
			fmts[j] = slotFormat[typ]
			s.fixed[i] = s.fixed[i] && (typ == target.Int4 || typ == target.Int8)
			s.users[p] = append(s.users[p], i)
		}
		s.args[i] = make([][]byte, len(st.Params))
		s.fill(i)
		s.binds[i] = pgproto3.Bind{PreparedStatement: st.Name, ParameterFormatCodes: fmts, Parameters: s.args[i], ResultFormatCodes: s.resultFmt}
	}
}

// NewThread is the discipline of a driver thread of direct connections.
func (t *Target) NewThread() step.Thread { return &netio.Thread{} }

// fill points statement i's parameters at its slots' values.
func (s *session) fill(i int) {
	for j, p := range s.spec.Stmts[i].Params {
		s.args[i][j] = s.slots[p]
	}
}

func (s *session) reconnect(ctx context.Context) error {
	s.Drop()
	conn, err := s.connect(ctx)
	if err != nil {
		return err
	}
	for _, q := range s.spec.Setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			_ = conn.Close(context.Background())
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if s.lazy != nil {
		if err := s.reconnectLazy(ctx, conn); err != nil {
			_ = conn.Close(context.Background())
			return err
		}
	}
	for i, st := range s.spec.Stmts {
		if s.lazy != nil {
			break // reconnectLazy prepared what is prepared at connect
		}
		oids := make([]uint32, len(st.Params))
		for j, p := range st.Params {
			oids[j] = slotOID[s.spec.Slots[p]]
		}
		d, err := conn.PgConn().Prepare(ctx, st.Name, st.SQL, oids)
		if err != nil {
			_ = conn.Close(context.Background())
			return fmt.Errorf("prepare %s: %w", st.Name, err)
		}
		s.columns[i] = s.columns[i][:0]
		for _, f := range d.Fields {
			s.columns[i] = append(s.columns[i], f.Name)
		}
	}
	// From here on the session reads the connection itself (Replies):
	// pgconn must have nothing buffered and no read in progress (a slow
	// Prepare write starts its background reader, which may still be
	// waiting in a read).
	if err := conn.PgConn().SyncConn(ctx); err != nil {
		_ = conn.Close(context.Background())
		return fmt.Errorf("sync connection: %w", err)
	}
	s.Use(conn)
	s.fe = conn.PgConn().Frontend()
	s.replies.Reset()
	s.queued, s.isQuery, s.qlast, s.nres = 0, false, false, 0
	return nil
}

func (s *session) Ready(ctx context.Context, out *step.Outcome) bool {
	return s.Session.Ready(ctx, out, s.reconnect)
}

func (s *session) Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string) {
	return driver.Classify(err, inCommit, attempts)
}

func (s *session) Retryable(code string) bool { return driver.Retryable(code) }

// SetInt writes v into the slot (in place for integer slots).
func (s *session) SetInt(slot int, v int64) {
	b := s.bufs[slot]
	switch s.types[slot] {
	case target.Int4:
		binary.BigEndian.PutUint32(b, uint32(int32(v)))
		s.slots[slot] = b
		return
	case target.Int8:
		binary.BigEndian.PutUint64(b, uint64(v))
	default:
		b = strconv.AppendInt(b[:0], v, 10)
		s.bufs[slot] = b
	}
	s.slots[slot] = b
}

func (s *session) SetText(slot int, v []byte) {
	if t := s.types[slot]; t == target.Int4 || t == target.Int8 {
		s.unfix(slot)
		s.slots[slot] = append([]byte(nil), v...)
		return
	}
	s.bufs[slot] = append(s.bufs[slot][:0], v...)
	s.slots[slot] = s.bufs[slot]
}

func (s *session) SetNull(slot int) {
	s.unfix(slot)
	s.slots[slot] = nil
}

// unfix makes the statements that use an integer slot refill their
// parameters on every Queue (the slot no longer holds its buffer).
func (s *session) unfix(slot int) {
	if t := s.types[slot]; t == target.Int4 || t == target.Int8 {
		for _, i := range s.users[slot] {
			s.fixed[i] = false
		}
	}
}

// SetIntArray encodes a one-dimensional int4[] without NULLs in binary:
// ndim, has-null flag, element type, then length and lower bound, then
// each element as length and value.
func (s *session) SetIntArray(slot int, vs []int32) {
	b := s.bufs[slot][:0]
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, slotOID[target.Int4])
	b = binary.BigEndian.AppendUint32(b, uint32(len(vs)))
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	s.bufs[slot] = b
	s.slots[slot] = b
}

// Queue buffers statement i's Bind and Execute.
func (s *session) Queue(i int) {
	if s.lazy != nil {
		s.queueLazy(i)
		return
	}
	if !s.fixed[i] {
		s.fill(i)
	}
	s.fe.SendBind(&s.binds[i])
	s.fe.SendExecute(&s.execute)
	s.queued++
}

// Send ends the round trip with a Sync and writes it.
func (s *session) Send() error {
	s.fe.SendSync(&s.sync)
	err := s.fe.Flush()
	if err != nil && s.lazy != nil {
		// Nothing of the round trip may have reached the server.
		s.lazy.settle(false)
	}
	return err
}

// SendQuery sends sql as a simple Query message, a round trip of its own.
func (s *session) SendQuery(sql []byte) error {
	s.query.String = string(sql)
	s.isQuery = true
	s.fe.SendQuery(&s.query)
	return s.fe.Flush()
}

// Receive reads the round trip's replies up to ReadyForQuery (recording
// each statement's results when the spec asks for them).
func (s *session) Receive() error {
	s.qlast = s.isQuery
	if s.isQuery {
		s.isQuery = false
		var err error
		s.nres, err = s.replies.CollectAll(s.Conn.PgConn(), &s.qres)
		return err
	}
	n := min(s.queued, len(s.res))
	s.queued = 0
	s.nres = n
	var err error
	if !s.spec.Results {
		err = s.replies.UntilReady(s.Conn.PgConn())
	} else {
		err = s.replies.Collect(s.Conn.PgConn(), s.res[:n])
	}
	if s.lazy != nil {
		s.lazy.settle(err == nil)
	}
	return err
}

// result is the round trip's k-th result: of the query, or of the queued
// statements.
func (s *session) result(k int) *pgdrv.Result {
	if s.qlast {
		return &s.qres[k]
	}
	return &s.res[k]
}

func (s *session) Results() int         { return s.nres }
func (s *session) Rows(k int) int       { return s.result(k).Rows }
func (s *session) Int(k, col int) int32 { return s.result(k).V[col] }

func (s *session) Row(k int) [][]byte {
	s.row = pgdrv.RowValues(s.result(k).Row, s.row[:0])
	return s.row
}

func (s *session) Columns(i int) []string {
	if s.lazy != nil {
		return s.lazy.columnsOf(i)
	}
	return s.columns[i]
}

func (s *session) Fields(k int) []string {
	if !s.qlast {
		return nil
	}
	s.fields = pgdrv.FieldNames(s.qres[k].Desc, s.fields[:0])
	return s.fields
}

// InTx reports the transaction status of the last ReadyForQuery.
func (s *session) InTx() bool { return s.Conn != nil && s.replies.TxStatus() != 'I' }

// Rollback leaves a transaction. It is sent and read like the statements
// (pgconn must not read from the connection: see Replies); a session's
// cancellation watch interrupts it if the step's context is cancelled.
func (s *session) Rollback() error {
	s.fe.SendQuery(&s.rollbackQ)
	err := s.fe.Flush()
	if err == nil {
		err = s.replies.UntilReady(s.Conn.PgConn())
	}
	if err != nil && (driver.IsConnError(err) || s.Conn.IsClosed()) {
		s.Drop()
		return err
	}
	return nil
}

func (s *session) Close() error {
	s.Unwatch()
	if s.Conn == nil {
		return nil
	}
	err := s.Conn.Close(context.Background())
	s.Conn = nil
	return err
}

// Multiplex lets one thread drive the session with others; only a direct
// connection can be polled.
func (s *session) Multiplex(on bool) bool {
	if on && !s.Direct {
		return false
	}
	s.Shared = on
	return true
}

// Multiplexed reports whether the session is driven with others.
func (s *session) Multiplexed() bool { return s.Shared }

// PgConn is the session's connection (nil while it has none), for tests
// and diagnostics; the session reads it itself, nothing else may.
func (s *session) PgConn() *pgconn.PgConn {
	if s.Conn == nil {
		return nil
	}
	return s.Conn.PgConn()
}

// Fd, Readable and ServerCPU come with the embedded pgdrv.Session.
