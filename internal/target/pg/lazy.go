package pg

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tunebench/tunebench/internal/target"
)

// A session of more than target.MaxPrepared statements prepares them at
// first use: each statement has a place in a direct-mapped cache of
// MaxPrepared prepared statements (statement i in place i mod
// MaxPrepared, each place a statement name of its own). Queueing a
// statement that is not the one its place holds sends, in the same round
// trip and before its Bind, a Close of the place's statement and a Parse
// of the new one: no extra round trip, and the replies (CloseComplete,
// ParseComplete) are ones Replies already passes over. A round trip that
// fails may have skipped its Close and Parse (the server ignores what
// follows an error up to Sync), so the places it parsed are unknown
// afterwards and are closed before their next Parse (closing a statement
// that does not exist is not an error). Statements whose result columns
// are read (Stmt.Columns) are prepared at connect and keep their own
// names, as every statement of a smaller session does.
type lazyStmts struct {
	cache   []lazyStmt
	pinned  map[int]*lazyStmt
	pending []*lazyStmt // places parsed in the round trip in flight
}

// lazyStmt is one place: the statement it holds and its messages.
type lazyStmt struct {
	stmt    int // -1: none
	state   uint8
	name    string
	parse   pgproto3.Parse
	bind    pgproto3.Bind
	fmts    []int16
	args    [][]byte
	columns []string // of a pinned statement
}

const (
	lazyNone    = iota // nothing prepared under the place's name
	lazyPending        // parsed in the round trip in flight
	lazyParsed         // prepared: the statement it holds
	lazyUnknown        // a round trip that parsed it failed
)

func newLazy(spec *target.SessionSpec) *lazyStmts {
	l := &lazyStmts{cache: make([]lazyStmt, target.MaxPrepared), pinned: map[int]*lazyStmt{}}
	for k := range l.cache {
		l.cache[k] = lazyStmt{stmt: -1, name: "tbc_" + strconv.Itoa(k)}
	}
	for i, st := range spec.Stmts {
		if st.Columns {
			l.pinned[i] = &lazyStmt{stmt: -1, name: st.Name}
		}
	}
	return l
}

// set makes e hold statement i (its messages; not yet parsed).
func (s *session) set(e *lazyStmt, i int) {
	st := &s.spec.Stmts[i]
	e.stmt = i
	oids := make([]uint32, len(st.Params))
	e.fmts = e.fmts[:0]
	for j, p := range st.Params {
		oids[j] = slotOID[s.spec.Slots[p]]
		e.fmts = append(e.fmts, slotFormat[s.spec.Slots[p]])
	}
	if cap(e.args) < len(st.Params) {
		e.args = make([][]byte, len(st.Params))
	}
	e.args = e.args[:len(st.Params)]
	e.parse = pgproto3.Parse{Name: e.name, Query: st.SQL, ParameterOIDs: oids}
	e.bind = pgproto3.Bind{PreparedStatement: e.name, ParameterFormatCodes: e.fmts, Parameters: e.args, ResultFormatCodes: s.resultFmt}
}

// reconnectLazy is a new connection's start: nothing in the cache, the
// pinned statements prepared (pgconn reads their replies: the session
// takes the connection over afterwards).
func (s *session) reconnectLazy(ctx context.Context, conn *pgx.Conn) error {
	l := s.lazy
	for k := range l.cache {
		l.cache[k].stmt, l.cache[k].state = -1, lazyNone
	}
	l.pending = l.pending[:0]
	for i, e := range l.pinned {
		s.set(e, i)
		d, err := conn.PgConn().Prepare(ctx, e.name, e.parse.Query, e.parse.ParameterOIDs)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", e.name, err)
		}
		e.state = lazyParsed
		e.columns = e.columns[:0]
		for _, f := range d.Fields {
			e.columns = append(e.columns, f.Name)
		}
	}
	return nil
}

// queueLazy is Queue for a lazy session.
func (s *session) queueLazy(i int) {
	l := s.lazy
	e := l.pinned[i]
	if e == nil {
		e = &l.cache[i%len(l.cache)]
		if e.stmt != i || (e.state != lazyParsed && e.state != lazyPending) {
			if e.state != lazyNone {
				s.fe.SendClose(&pgproto3.Close{ObjectType: 'S', Name: e.name})
			}
			s.set(e, i)
			s.fe.SendParse(&e.parse)
			e.state = lazyPending
			l.pending = append(l.pending, e)
		}
	}
	for j, p := range s.spec.Stmts[i].Params {
		e.args[j] = s.slots[p]
	}
	s.fe.SendBind(&e.bind)
	s.fe.SendExecute(&s.execute)
	s.queued++
}

// settle records how the round trip's Parses went.
func (l *lazyStmts) settle(ok bool) {
	for _, e := range l.pending {
		if e.state == lazyPending {
			e.state = lazyParsed
			if !ok {
				e.state = lazyUnknown
			}
		}
	}
	l.pending = l.pending[:0]
}

// columnsOf is a pinned statement's columns (none for the others).
func (l *lazyStmts) columnsOf(i int) []string {
	if e := l.pinned[i]; e != nil {
		return e.columns
	}
	return nil
}
