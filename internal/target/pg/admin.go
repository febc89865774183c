package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/target"
)

// Admin opens an admin connection (target.Admins) on pgx.
func (t *Target) Admin(ctx context.Context) (target.Admin, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &admin{conn: conn, q: conn}, nil
}

// pgxQueryer is what a connection and a transaction share.
type pgxQueryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

type admin struct {
	conn *pgx.Conn
	q    pgxQueryer
	tx   pgx.Tx
}

func (a *admin) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := a.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w", target.ErrNoRows)
	}
	return err
}

func (a *admin) QueryRow(ctx context.Context, sql string, args ...any) target.Row {
	return row{a.q.QueryRow(ctx, sql, args...)}
}

type rows struct{ pgx.Rows }

func (r rows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

func (a *admin) Query(ctx context.Context, sql string, args ...any) (target.Rows, error) {
	r, err := a.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (a *admin) Tx(ctx context.Context, o target.TxOptions, fn func(target.Admin) error) error {
	if a.tx != nil {
		return fn(a)
	}
	opts := pgx.TxOptions{}
	if o.Snapshot {
		opts.IsoLevel = pgx.RepeatableRead
	}
	if o.ReadOnly {
		opts.AccessMode = pgx.ReadOnly
	}
	tx, err := a.conn.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	in := &admin{conn: a.conn, q: tx, tx: tx}
	if err := fn(in); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}

// BulkLoad is COPY FROM STDIN in the binary format.
func (a *admin) BulkLoad(ctx context.Context, table string, columns []string, src target.RowSource) (int64, error) {
	return a.q.CopyFrom(ctx, pgx.Identifier{table}, columns, src)
}

// Transactions reads xact_commit + xact_rollback of the database, fresh
// (pg_stat_clear_snapshot). Other sessions report theirs when they end and
// at most a second after their transactions otherwise.
func (a *admin) Transactions(ctx context.Context) (int64, error) {
	var n int64
	if _, err := a.q.Exec(ctx, "select pg_stat_clear_snapshot()"); err != nil {
		return 0, err
	}
	err := a.q.QueryRow(ctx, "select (xact_commit + xact_rollback)::bigint from pg_stat_database where datname = current_database()").Scan(&n)
	return n, err
}

func (a *admin) Close() error { return a.conn.Close(context.Background()) }
