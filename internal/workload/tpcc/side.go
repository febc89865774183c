package tpcc

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
)

// DialectMariaDB is the dialect name of MariaDB targets.
const DialectMariaDB = "mariadb"

// side is the loaded database as a run and a check see it, in the
// target's dialect: what was loaded, the functions or procedures of
// --mode procs, the counters read around the run, the consistency
// conditions. PostgreSQL's keeps pgx (the hand-tuned path: info.go,
// counters.go, checks.go, procs.go); MariaDB's goes through the target's
// admin connections (mariadb.go).
type side interface {
	info(ctx context.Context) (Info, error)
	installProcs(ctx context.Context) error
	// counters reads the counters, again on a new connection while the
	// connection is lost (a server restarting), as long as the time since
	// from stays within budget.
	counters(ctx context.Context, from time.Time, budget time.Duration) dbCounters
	check(ctx context.Context, o CheckOptions) (CheckReport, error)
	// lossy names the settings that let a crash lose acknowledged
	// commits, "" when none is set or they cannot be read.
	lossy(ctx context.Context) string
	close()
}

// openSide opens a connection to the target's database in its dialect;
// std asks PostgreSQL for a connection with Go's standard network I/O
// (the window reader's, which runs beside the load generators).
func openSide(ctx context.Context, t target.Target, std bool) (side, error) {
	if t.Dialect() == DialectMariaDB {
		admins, ok := t.(target.Admins)
		if !ok {
			return nil, errs.New(errs.KindInternal, "", "the MariaDB target has no admin connections")
		}
		a, err := admins.Admin(ctx)
		if err != nil {
			return nil, err
		}
		s := &mariaSide{admins: admins, a: a}
		s.lost, _ = t.(target.LostChecker)
		return s, nil
	}
	p, err := pgt.From(t)
	if err != nil {
		return nil, err
	}
	dial := p.Connect
	if std {
		dial = p.ConnectStd
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return &pgSide{conn: conn, dial: dial}, nil
}

// pgSide is PostgreSQL's, on pgx.
type pgSide struct {
	conn *pgx.Conn
	dial connect
}

func (s *pgSide) info(ctx context.Context) (Info, error) { return ReadInfo(ctx, s.conn) }
func (s *pgSide) installProcs(ctx context.Context) error { return InstallProcs(ctx, s.conn) }
func (s *pgSide) counters(ctx context.Context, from time.Time, budget time.Duration) dbCounters {
	return readRetry(ctx, &s.conn, s.dial, from, budget)
}
func (s *pgSide) check(ctx context.Context, o CheckOptions) (CheckReport, error) {
	if s.conn == nil {
		return CheckReport{}, errs.New(errs.KindConnect, "", "no connection to the database")
	}
	return Check(ctx, s.conn, o)
}
func (s *pgSide) lossy(ctx context.Context) string { return asyncCommit(ctx, s.conn) }
func (s *pgSide) close() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
}
