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
// first use, in the round trip that first runs each one (a Parse before
// its Bind: no extra round trip, and ParseComplete is a reply Replies
// already passes over). The first MaxPrepared statements keep a name of
// their own once prepared; the others go through the unnamed statement,
// parsed again each time they run, as pgbench's extended mode sends every
// statement: the server keeps at most MaxPrepared of a session's
// statements, and a script run in order prepares its first ones once
// rather than missing every one. A round trip that fails may have skipped
// its Parses (the server ignores what follows an error up to Sync), so a
// named statement it parsed is unknown afterwards, and is closed before
// it is parsed again (closing a statement that does not exist is not an
// error). Statements whose result columns are read (Stmt.Columns) are
// prepared at connect, as every statement of a smaller session is.
type lazyStmts struct {
	named   []lazyStmt        // statement i < MaxPrepared
	unnamed lazyStmt          // the one being sent of the others
	pinned  map[int]*lazyStmt // Stmt.Columns ones
	pending []*lazyStmt       // named ones parsed in the round trip in flight
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
	l := &lazyStmts{named: make([]lazyStmt, target.MaxPrepared), pinned: map[int]*lazyStmt{}, unnamed: lazyStmt{stmt: -1}}
	for k := range l.named {
		l.named[k] = lazyStmt{stmt: -1, name: "tbc_" + strconv.Itoa(k)}
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
	for k := range l.named {
		l.named[k].stmt, l.named[k].state = -1, lazyNone
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
	switch {
	case e != nil:
	case i < len(l.named):
		e = &l.named[i]
		if e.state != lazyParsed && e.state != lazyPending {
			if e.state == lazyUnknown {
				s.fe.SendClose(&pgproto3.Close{ObjectType: 'S', Name: e.name})
			}
			s.set(e, i)
			s.fe.SendParse(&e.parse)
			e.state = lazyPending
			l.pending = append(l.pending, e)
		}
	default:
		// The unnamed statement: parsed each time (its Bind follows at
		// once, so a later Parse of another does not disturb it).
		e = &l.unnamed
		if e.stmt != i {
			s.set(e, i)
		}
		s.fe.SendParse(&e.parse)
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
