package mariadb

import (
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// A session of more than target.MaxPrepared statements prepares them at
// first use, as PostgreSQL's does (target/pg/lazy.go): the first
// MaxPrepared statements are kept once prepared, the others are prepared
// each time they run and closed before the next one is (COM_STMT_CLOSE
// has no reply), so the server holds at most MaxPrepared + 1 of a
// session's statements. MariaDB gives a statement its id in the reply to
// COM_STMT_PREPARE, so a statement is prepared in a round trip of its own
// before it is executed (pgbench prepares a command that way when it
// first runs). Statements whose result columns are read (Stmt.Columns)
// are prepared at connect, as all are in a smaller session.
type lazyStmts struct {
	named   []lazyStmt
	scratch lazyStmt // the one being run of the others
	pinned  map[int]*prepared
}

type lazyStmt struct {
	stmt int // the statement it holds, -1 none
	p    prepared
	ok   bool  // prepared on the current connection
	err  error // the statement cannot be written as MariaDB's (prepared fails)
}

func newLazy(spec *target.SessionSpec) *lazyStmts {
	l := &lazyStmts{named: make([]lazyStmt, target.MaxPrepared), pinned: map[int]*prepared{}, scratch: lazyStmt{stmt: -1}}
	for k := range l.named {
		l.named[k].stmt = -1
	}
	return l
}

// stmtOf is statement i's place (its SQL rewritten and its slots), not
// necessarily prepared.
func (s *worker) stmtOf(i int) *prepared {
	if s.lazy == nil {
		return &s.stmts[i]
	}
	if p := s.lazy.pinned[i]; p != nil {
		return p
	}
	return &s.place(i).p
}

// place is statement i's place, made to hold it: its own among the first
// MaxPrepared, else the scratch one, whose previous statement is closed.
func (s *worker) place(i int) *lazyStmt {
	e := &s.lazy.scratch
	if i < len(s.lazy.named) {
		e = &s.lazy.named[i]
	}
	if e.stmt == i {
		return e
	}
	if e.ok && s.w != nil {
		s.w.closeStmt(e.p.st.id)
	}
	e.stmt, e.ok = i, false
	e.p, e.err = s.compile(i)
	return e
}

// ready prepares statement i on the connection when it is not.
func (s *worker) ready(i int) (*prepared, error) {
	if s.lazy == nil {
		return &s.stmts[i], nil
	}
	if p := s.lazy.pinned[i]; p != nil {
		return p, nil
	}
	e := s.place(i)
	if e.err != nil {
		return nil, e.err
	}
	if !e.ok && !e.p.text {
		if err := s.prepareOne(&e.p, i); err != nil {
			return nil, err
		}
		e.ok = true
	}
	return &e.p, nil
}

// reconnectLazy is a new connection's start: nothing in the cache
// prepared, the pinned statements prepared.
func (s *worker) reconnectLazy() error {
	for k := range s.lazy.named {
		s.lazy.named[k].ok = false
	}
	s.lazy.scratch.ok = false
	for i, st := range s.spec.Stmts {
		if !st.Columns {
			continue
		}
		p, err := s.compile(i)
		if err != nil {
			return err
		}
		if !p.text {
			if err := s.prepareOne(&p, i); err != nil {
				return err
			}
		}
		s.lazy.pinned[i] = &p
	}
	return nil
}

// compile rewrites statement i's placeholders for MariaDB.
func (s *worker) compile(i int) (prepared, error) {
	st := s.spec.Stmts[i]
	q, order, err := Placeholders(st.SQL)
	if err != nil {
		return prepared{}, errs.Usage("write the statement's parameters as $1..$n", "statement %s: %v", st.Name, err)
	}
	p := prepared{sql: q, text: txControl(q)}
	for _, n := range order {
		if n > len(st.Params) {
			return prepared{}, errs.New(errs.KindInternal, "", "statement %s uses $%d, it has %d parameters", st.Name, n, len(st.Params))
		}
		p.slots = append(p.slots, st.Params[n-1])
	}
	return p, nil
}
