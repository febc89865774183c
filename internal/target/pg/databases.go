package pg

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// Databases makes and copies databases on the server; markers are
// database comments.
func (t *Target) Databases() target.Databases { return databases{t} }

type databases struct{ t *Target }

// admin connects to the target's own database (not the benchmark one).
func (d databases) admin(ctx context.Context) (*pgx.Conn, error) {
	return d.t.conn.ConnectStd(ctx)
}

// State reports whether db exists and its comment.
func (d databases) State(ctx context.Context, db string) (bool, string, error) {
	conn, err := d.admin(ctx)
	if err != nil {
		return false, "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return dbState(ctx, conn, db)
}

func dbState(ctx context.Context, conn *pgx.Conn, name string) (exists bool, comment string, err error) {
	var c *string
	err = conn.QueryRow(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, name).Scan(&c)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", errs.Wrap(errs.KindConnect, err, "", "looking up database %s", name)
	}
	if c != nil {
		comment = *c
	}
	return true, comment, nil
}

// Create makes an empty database and marks it.
func (d databases) Create(ctx context.Context, db, marker string) error {
	conn, err := d.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return errs.Wrap(errs.KindConnect, err, "the experiment needs a superuser (or CREATEDB)", "creating database %s", db)
	}
	return comment(ctx, conn, db, marker)
}

// Mark sets db's comment.
func (d databases) Mark(ctx context.Context, db, marker string) error {
	conn, err := d.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return comment(ctx, conn, db, marker)
}

func comment(ctx context.Context, conn *pgx.Conn, db, text string) error {
	q := "COMMENT ON DATABASE " + pgx.Identifier{db}.Sanitize() + " IS " + quoteLiteral(text)
	if _, err := conn.Exec(ctx, q); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "marking database %s", db)
	}
	return nil
}

// quoteLiteral quotes a string constant (standard_conforming_strings on).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DropOwn drops a database tunebench made (its comment starts with own);
// anything else of that name is left alone and refused.
func (d databases) DropOwn(ctx context.Context, db, own string) error {
	conn, err := d.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	exists, c, err := dbState(ctx, conn, db)
	if err != nil || !exists {
		return err
	}
	if !strings.HasPrefix(c, own) {
		return errs.Usage("set target.database to another name, or drop the database yourself if it is disposable",
			"database %s exists and was not made by a tunebench experiment; tunebench does not drop it", db)
	}
	version, err := d.t.serverVersion(ctx, conn)
	if err != nil {
		return err
	}
	id := pgx.Identifier{db}.Sanitize()
	// A DROP DATABASE cut short (an interrupt during a reset) leaves the
	// database invalid (datconnlimit -2, PostgreSQL 15.4+): it can only be
	// dropped, not altered.
	var invalid bool
	if err := conn.QueryRow(ctx, "SELECT datconnlimit = -2 FROM pg_database WHERE datname = $1", db).Scan(&invalid); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "looking up database %s", db)
	}
	if !invalid {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" ALLOW_CONNECTIONS true"); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "preparing to drop %s", db)
		}
	}
	stmt := "DROP DATABASE " + id
	if version >= 130000 {
		stmt += " WITH (FORCE)"
	} else if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "ending sessions on %s", db)
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "dropping database %s", db)
	}
	return nil
}

// Seal closes db to connections: CREATE DATABASE ... TEMPLATE needs the
// template idle.
func (d databases) Seal(ctx context.Context, db string) error {
	conn, err := d.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS false"); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "closing the template %s", db)
	}
	return nil
}

// Copy makes db from template; FILE_COPY (PostgreSQL 15+) copies files
// instead of WAL-logging every block.
func (d databases) Copy(ctx context.Context, db, template string) error {
	conn, err := d.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	version, err := d.t.serverVersion(ctx, conn)
	if err != nil {
		return err
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{db}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	if version >= 150000 {
		stmt += " STRATEGY FILE_COPY"
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		if ctx.Err() != nil {
			return errs.Wrap(errs.KindInterrupted, err, "", "reset interrupted")
		}
		return errs.Wrap(errs.KindConnect, err, "", "recreating %s from its template", db)
	}
	return nil
}
