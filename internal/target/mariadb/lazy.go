package mariadb

import (
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// A session of more than target.MaxPrepared statements prepares them at
// first use, as PostgreSQL's does (target/pg/lazy.go): statement i has
// place i mod MaxPrepared in a cache of prepared statements. MariaDB
// gives a statement its id in the reply to COM_STMT_PREPARE, so a
// statement that is not the one its place holds is prepared in a round
// trip of its own before it is executed (pgbench prepares a command that
// way when it first runs), and the place's previous statement is closed
// first (COM_STMT_CLOSE has no reply). Statements whose result columns
// are read (Stmt.Columns) are prepared at connect, as all are in a
// smaller session.
type lazyStmts struct {
	cache  []lazyStmt
	pinned map[int]*prepared
}

type lazyStmt struct {
	stmt int // the statement it holds, -1 none
	p    prepared
	ok   bool  // prepared on the current connection
	err  error // the statement cannot be written as MariaDB's (prepared fails)
}

func newLazy(spec *target.SessionSpec) *lazyStmts {
	l := &lazyStmts{cache: make([]lazyStmt, target.MaxPrepared), pinned: map[int]*prepared{}}
	for k := range l.cache {
		l.cache[k].stmt = -1
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

// place makes statement i's place hold it, closing the statement it held.
func (s *worker) place(i int) *lazyStmt {
	e := &s.lazy.cache[i%len(s.lazy.cache)]
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
	for k := range s.lazy.cache {
		s.lazy.cache[k].ok = false
	}
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
