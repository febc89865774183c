package mariadb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	errcodes "github.com/tunebench/tunebench/internal/driver"
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

// Error numbers the session classifies (MariaDB's, not SQLSTATEs).
const (
	ErrDeadlock      = 1213 // ER_LOCK_DEADLOCK: the transaction was rolled back
	ErrRecordChanged = 1020 // ER_CHECKREAD: a write conflict under snapshot isolation, rolled back
	ErrLockWait      = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement failed, the transaction is still open
	ErrGoneAway      = 2006 // CR_SERVER_GONE_ERROR (client side): the connection was gone before the statement
	ErrLostConn      = 2013 // CR_SERVER_LOST (client side): the connection was lost during the statement
	ErrCantConnect   = 2003 // CR_CONN_HOST_ERROR (client side): no connection could be made
)

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
	cfg    *mysql.Config
	spec   *target.SessionSpec
	conn   driver.Conn // the driver's connection, for its Close
	nc     net.Conn    // its socket
	w      *wire
	stmts  []prepared
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
	s.stmts = make([]prepared, len(spec.Stmts))
	for i, st := range spec.Stmts {
		q, order, err := Placeholders(st.SQL)
		if err != nil {
			return nil, errs.Usage("write the statement's parameters as $1..$n", "statement %s: %v", st.Name, err)
		}
		p := prepared{sql: q, text: txControl(q)}
		for _, n := range order {
			if n > len(st.Params) {
				return nil, errs.New(errs.KindInternal, "", "statement %s uses $%d, it has %d parameters", st.Name, n, len(st.Params))
			}
			p.slots = append(p.slots, st.Params[n-1])
		}
		s.stmts[i] = p
	}
	if err := s.reconnect(ctx); err != nil {
		return nil, err
	}
	if s.direct {
		netio.EnsureProcs(spec.ID + 1)
	}
	return s, nil
}

// Placeholders rewrites PostgreSQL's $1..$n into MariaDB's positional ?,
// returning for each ? the number it had. Text in quotes (', ", `) and
// comments is left alone.
func Placeholders(q string) (string, []int, error) {
	if !strings.Contains(q, "$") {
		return q, nil, nil
	}
	var b strings.Builder
	var order []int
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				return "", nil, fmt.Errorf("unterminated %c quote", c)
			}
			b.WriteString(q[i : j+1])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] == ' ' || q[i+2] == '\t' || q[i+2] == '\n' || q[i+2] == '\r'), c == '#':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return "", nil, fmt.Errorf("unterminated comment")
			}
			b.WriteString(q[i : i+j+4])
			i += j + 3
		case c == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' && (i == 0 || !identChar(q[i-1])):
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(q[i+1 : j])
			if err != nil || n < 1 {
				return "", nil, fmt.Errorf("bad parameter %s", q[i:j])
			}
			order = append(order, n)
			b.WriteByte('?')
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), order, nil
}

// identChar reports a character of an unquoted identifier ($ included:
// t$1 is a name, not a parameter).
func identChar(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// txControl reports BEGIN, START TRANSACTION, COMMIT and ROLLBACK, which
// go as text (the status of every reply says whether a transaction is
// open).
func txControl(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	end := strings.IndexAny(q, " \t\r\n;")
	if end < 0 {
		end = len(q)
	}
	switch strings.ToUpper(q[:end]) {
	case "BEGIN", "START", "COMMIT", "ROLLBACK":
		return true
	}
	return false
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
		if p.st, err = s.w.prepare(p.sql); err != nil {
			s.drop()
			return fmt.Errorf("prepare %s: %w", s.spec.Stmts[i].Name, err)
		}
		if p.st.nparams != len(p.slots) {
			s.drop()
			return errs.New(errs.KindInternal, "", "statement %s: the server counts %d parameters, the statement has %d", s.spec.Stmts[i].Name, p.st.nparams, len(p.slots))
		}
	}
	s.direct = netio.IsDirect(nc)
	s.inTx, s.nq, s.isQ, s.qlast, s.nres = false, 0, false, false, 0
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
	p := &s.stmts[i]
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
	return s.sendStmt(0)
}

// sendStmt sends the k-th queued statement.
func (s *worker) sendStmt(k int) error {
	p := &s.stmts[s.queued[k]]
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
		p := &s.stmts[s.queued[k]]
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
	for _, c := range s.stmts[i].st.cols {
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

// isConnError reports an error of the connection rather than of a
// statement: the driver's bad or invalid connection, a network error, the
// server ending the connection (shutdown, KILL).
func isConnError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1077, 1152, 1153, 1158, 1159, 1160, 1161, 1927, 4031: // shutdown, aborted, net errors, killed, idle timeout
			return true
		}
	}
	return false
}

// Code is an error's code as runs record it: MariaDB's error number
// ("1213"), 2013 or 2006 for a lost connection (the client library's
// numbers), "client:canceled", or "client".
func Code(err error) string {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &me):
		if me.Number == 1927 || me.Number == 1053 {
			return strconv.Itoa(ErrLostConn)
		}
		return strconv.Itoa(int(me.Number))
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "client:canceled"
	case errors.Is(err, driver.ErrBadConn) || errors.Is(err, net.ErrClosed):
		return strconv.Itoa(ErrGoneAway)
	case errors.Is(err, syscall.ECONNREFUSED) || errs.KindOf(err) == errs.KindConnect:
		return strconv.Itoa(ErrCantConnect)
	case isConnError(err):
		return strconv.Itoa(ErrLostConn)
	}
	return "client"
}

// Classify puts a MariaDB error in its outcome class.
func Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string) {
	if err == nil {
		if attempts > 1 {
			return step.ClassRetriedOK, ""
		}
		return step.ClassOK, ""
	}
	code := Code(err)
	switch {
	case code == "client:canceled" && inCommit:
		// The COMMIT may have run: its outcome is unknown.
		return step.ClassAmbiguousCommit, code
	case code == "client:canceled":
		return step.ClassFailedError, code
	case isConnError(err) || code == "2003":
		if inCommit {
			return step.ClassAmbiguousCommit, code
		}
		return step.ClassConnError, code
	case Retryable(code):
		return step.ClassFailedRetryExhausted, code
	}
	return step.ClassFailedError, code
}

// Retryable: a deadlock (1213) and a write conflict (1020) roll the
// transaction back and are worth another try; a lock wait timeout (1205)
// is not (as PostgreSQL's lock_timeout is not).
func Retryable(code string) bool {
	return code == "1213" || code == "1020"
}

// ErrorsHint names the fix of a run whose errors were mostly one MariaDB
// error (target.ErrorsHinter).
func (t *Target) ErrorsHint(byCode map[string]int64) string {
	code := errcodes.Dominant(byCode)
	switch code {
	case "1213", "1020":
		return "most errors are " + map[string]string{"1213": "deadlocks (1213)", "1020": "write conflicts (1020)"}[code] +
			": MariaDB rolled the transactions back; give --max-tries 3 to retry them, or raise --max-errors-pct to accept them"
	case "1205":
		return "most errors are lock wait timeouts (1205): run fewer clients, or raise innodb_lock_wait_timeout (--set innodb_lock_wait_timeout=N)"
	case "1040":
		return "most errors are too many connections (1040): run fewer clients, or raise max_connections (--set max_connections=N)"
	case "1021", "1114":
		return "most errors are a full disk or table (" + code + "): free space on the filesystem of the server's data directory, then run again"
	case "1041", "1037", "1038":
		return "most errors are the server out of memory (" + code + "): run fewer clients, or give the server more memory"
	case "2013", "2006", "2003":
		return "most errors are lost connections (" + code + "): see the server's error log (a crash, a restart, wait_timeout)"
	case "":
		return ""
	}
	return "see the errors by MariaDB error number above; raise --max-errors-pct to accept them"
}
