package tpcb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
)

// book is a run's and a check's bookkeeping in the loaded database, in
// the target's dialect: the scale, the history's rows, the run record
// and the check.
type book interface {
	info(ctx context.Context) (Info, error)
	historyCount(ctx context.Context) (int64, error)
	recordRun(ctx context.Context, r *RunRecord) error
	check(ctx context.Context) (CheckReport, error)
	// mark marks a writing run that starts, and started reads the count
	// of runs started since (overlap.go).
	mark(ctx context.Context) (runMark, error)
	started(ctx context.Context) (int64, error)
	// afterRun runs do, again on a new connection while the connection
	// is lost (a server restarting), within driver.AfterRunBudget.
	afterRun(ctx context.Context, do func() error) error
	close()
}

// openBook opens the bookkeeping connection.
func openBook(ctx context.Context, t target.Target) (book, error) {
	if t.Dialect() == DialectMariaDB {
		admins, ok := t.(target.Admins)
		if !ok {
			return nil, errs.New(errs.KindInternal, "", "the MariaDB target has no admin connections")
		}
		a, err := admins.Admin(ctx)
		if err != nil {
			return nil, err
		}
		b := &adminBook{admins: admins, a: a, db: t.Database()}
		b.lost, _ = t.(target.LostChecker)
		return b, nil
	}
	p, err := pgt.From(t)
	if err != nil {
		return nil, err
	}
	conn, err := p.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgBook{t: p, conn: conn}, nil
}

// pgBook is PostgreSQL's, on pgx (schema.go, check.go).
type pgBook struct {
	t    *pgt.Target
	conn *pgx.Conn
}

func (b *pgBook) info(ctx context.Context) (Info, error)          { return ReadInfo(ctx, b.conn) }
func (b *pgBook) historyCount(ctx context.Context) (int64, error) { return HistoryCount(ctx, b.conn) }
func (b *pgBook) recordRun(ctx context.Context, r *RunRecord) error {
	return RecordRun(ctx, b.conn, r)
}
func (b *pgBook) check(ctx context.Context) (CheckReport, error) { return Check(ctx, b.conn) }
func (b *pgBook) mark(ctx context.Context) (runMark, error)      { return pgMark(ctx, b.conn) }
func (b *pgBook) started(ctx context.Context) (int64, error)     { return pgStarted(ctx, b.conn) }

// afterRun: the admin connection may have died during the run (a server
// restart) without pgx having noticed yet, and a server in crash recovery
// refuses connections for a moment.
func (b *pgBook) afterRun(ctx context.Context, do func() error) error {
	return driver.RetryLost(ctx, &b.conn, b.t.Connect, time.Now(), driver.AfterRunBudget, func(*pgx.Conn) error { return do() })
}

func (b *pgBook) close() {
	if b.conn != nil {
		b.conn.Close(context.Background())
	}
}

// adminBook is any other dialect's, on the target's admin connections
// (mariadb.go).
type adminBook struct {
	admins target.Admins
	a      target.Admin
	lost   target.LostChecker
	db     string // the database's name (mark's lock names)
}

func (b *adminBook) info(ctx context.Context) (Info, error) { return mariaInfo(ctx, b.a) }
func (b *adminBook) historyCount(ctx context.Context) (int64, error) {
	return mariaHistoryCount(ctx, b.a)
}
func (b *adminBook) recordRun(ctx context.Context, r *RunRecord) error {
	return mariaRecordRun(ctx, b.a, r)
}
func (b *adminBook) check(ctx context.Context) (CheckReport, error) { return mariaCheck(ctx, b.a) }
func (b *adminBook) mark(ctx context.Context) (runMark, error) {
	return mariaMark(ctx, b.a, b.db)
}
func (b *adminBook) started(ctx context.Context) (int64, error) { return mariaStarted(ctx, b.a) }

func (b *adminBook) afterRun(ctx context.Context, do func() error) error {
	from, pause := time.Now(), driver.RetryPause
	for {
		err := do()
		if err == nil || b.lost == nil || !b.lost.ConnLost(err) || time.Since(from)+pause > driver.AfterRunBudget || ctx.Err() != nil {
			return err
		}
		time.Sleep(pause)
		pause *= 2
		if a, aerr := b.admins.Admin(ctx); aerr == nil {
			_ = b.a.Close()
			b.a = a
		}
	}
}

func (b *adminBook) close() { _ = b.a.Close() }
