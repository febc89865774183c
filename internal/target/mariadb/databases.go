package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"sort"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// Databases makes, marks, drops and copies the databases of an experiment
// on a MariaDB server (target.Databases). The marker is the database's
// comment (MariaDB 10.5 and later keep one per schema).
type Databases struct {
	Open func(db string) (*sql.DB, error)
}

var dbNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

func checkName(db string) error {
	if !dbNameRe.MatchString(db) {
		return errs.Usage("use lower-case letters, digits and '_' (at most 64, not starting with a digit)", "bad database name %q", db)
	}
	return nil
}

// ident quotes a name from the catalogue as an identifier.
func ident(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

func (d Databases) admin() (*sql.DB, error) { return d.Open("") }

// State reports whether db exists and its comment.
func (d Databases) State(ctx context.Context, db string) (bool, string, error) {
	a, err := d.admin()
	if err != nil {
		return false, "", err
	}
	defer a.Close()
	var comment string
	err = a.QueryRowContext(ctx, `SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, db).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", connError(err, "reading database "+db)
	}
	return true, comment, nil
}

func (d Databases) exec(ctx context.Context, what string, qs ...string) error {
	a, err := d.admin()
	if err != nil {
		return err
	}
	defer a.Close()
	for _, q := range qs {
		if _, err := a.ExecContext(ctx, q); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "%s", what)
		}
	}
	return nil
}

// Create makes an empty database with marker as its comment.
func (d Databases) Create(ctx context.Context, db, marker string) error {
	if err := checkName(db); err != nil {
		return err
	}
	return d.exec(ctx, "creating database "+db, "CREATE DATABASE `"+db+"` COMMENT "+quoteString(marker))
}

// Mark replaces db's comment.
func (d Databases) Mark(ctx context.Context, db, marker string) error {
	if err := checkName(db); err != nil {
		return err
	}
	return d.exec(ctx, "marking database "+db, "ALTER DATABASE `"+db+"` COMMENT "+quoteString(marker))
}

// DropOwn drops db when its comment starts with own; one tunebench did
// not make is refused, and one that does not exist is fine.
func (d Databases) DropOwn(ctx context.Context, db, own string) error {
	exists, comment, err := d.State(ctx, db)
	if err != nil || !exists {
		return err
	}
	if !strings.HasPrefix(comment, own) {
		return errs.Usage("drop it yourself if it is not needed, or name another database in the experiment (target.database)",
			"database %s exists and tunebench did not make it (its comment is %q)", db, comment)
	}
	return d.exec(ctx, "dropping database "+db, "DROP DATABASE `"+db+"`")
}

// Seal does nothing on MariaDB: a copy reads the template's tables with
// INSERT ... SELECT, which needs no idle template (PostgreSQL's CREATE
// DATABASE ... TEMPLATE does).
func (Databases) Seal(context.Context, string) error { return nil }

// Copy makes db a copy of template, in the template's character set:
// each base table made LIKE the template's (columns, indexes, engine; not
// its foreign keys, which CREATE TABLE ... LIKE leaves out) and filled
// with INSERT ... SELECT, foreign key checks off for the copy. A half-made
// copy is dropped.
func (d Databases) Copy(ctx context.Context, db, template string) error {
	if err := checkName(db); err != nil {
		return err
	}
	if err := checkName(template); err != nil {
		return err
	}
	if exists, _, err := d.State(ctx, db); err != nil {
		return err
	} else if exists {
		return errs.Usage("drop it first", "database %s exists: a copy needs a new one", db)
	}
	a, err := d.admin()
	if err != nil {
		return err
	}
	defer a.Close()
	rows, err := a.QueryContext(ctx, `SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?`, template)
	if err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "listing the tables of %s", template)
	}
	var tables []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return err
		}
		if typ != "BASE TABLE" {
			rows.Close()
			return errs.Usage("copy it by hand, or drop the view: the template copy takes base tables only",
				"%s in %s is a %s, which the template copy does not copy", name, template, strings.ToLower(typ))
		}
		tables = append(tables, name)
	}
	rows.Close()
	sort.Strings(tables)
	conn, err := a.Conn(ctx)
	if err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "copying %s", template)
	}
	defer conn.Close()
	fail := func(err error) error {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS `"+db+"`")
		return errs.Wrap(errs.KindConnect, err, "", "copying %s to %s", template, db)
	}
	var charset, collation string
	if err := conn.QueryRowContext(ctx, `SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`,
		template).Scan(&charset, &collation); err != nil {
		return connError(err, "reading database "+template)
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE `"+db+"` CHARACTER SET "+ident(charset)+" COLLATE "+ident(collation)); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "creating database %s", db)
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
		return fail(err)
	}
	for _, t := range tables {
		for _, q := range []string{
			"CREATE TABLE " + ident(db) + "." + ident(t) + " LIKE " + ident(template) + "." + ident(t),
			"INSERT INTO " + ident(db) + "." + ident(t) + " SELECT * FROM " + ident(template) + "." + ident(t),
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}
