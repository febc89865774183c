package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/errs"
)

// Databases makes, marks, drops and copies the databases of an experiment
// on a MariaDB server (target.Databases). The marker is the database's
// comment, which MariaDB 10.5 and later keep per schema
// (information_schema.SCHEMATA.SCHEMA_COMMENT).
type Databases struct {
	// Open is a connection pool as a user with all privileges; Databases
	// opens it with no default database ("") and closes it after each call.
	Open func(db string) (*sql.DB, error)
}

// maxComment is the longest database comment MariaDB keeps (characters);
// a longer one is refused (error 4160).
const maxComment = 1024

// copyingSuffix marks a copy while Copy fills it (the caller's Mark
// replaces it).
const copyingSuffix = " (copying)"

var dbNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

// checkName refuses a database name tunebench does not make: lower case
// (the same on every lower_case_table_names), no quoting needed, at most
// MariaDB's 64 characters.
func checkName(db string) error {
	if !dbNameRe.MatchString(db) {
		return errs.Usage("use lower-case letters, digits and '_' (at most 64, not starting with a digit)", "bad database name %q", db)
	}
	return nil
}

// checkMarker refuses a marker MariaDB would not keep as it is: a comment
// holds at most 1024 characters of utf8mb3 (characters outside the Basic
// Multilingual Plane become '?', and State would never see the marker
// again).
func checkMarker(marker string) error {
	const hint = "MariaDB keeps at most 1024 characters in a database comment, none outside the Basic Multilingual Plane (such as emoji): shorten the load options or leave such characters out"
	if !utf8.ValidString(marker) || strings.ContainsRune(marker, 0) {
		return errs.Usage(hint, "the marker %q is not text MariaDB can keep", marker)
	}
	if n := utf8.RuneCountInString(marker); n > maxComment {
		return errs.Usage(hint, "the marker is %d characters long: MariaDB keeps at most %d in a database comment", n, maxComment)
	}
	for _, r := range marker {
		if r > 0xFFFF {
			return errs.Usage(hint, "the marker has %q, which MariaDB cannot keep in a database comment", r)
		}
	}
	return nil
}

// quoteIdent quotes a name with backticks (any name: a backtick is doubled).
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString quotes a string constant; noBackslash is the session's
// NO_BACKSLASH_ESCAPES (a backslash is then an ordinary character).
func quoteString(s string, noBackslash bool) string {
	if !noBackslash {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// serverError classifies an error of a statement: an interrupt, a server
// that cannot be reached (connError: with the fix), or a statement the
// server refused.
func serverError(ctx context.Context, err error, format string, a ...any) error {
	what := fmt.Sprintf(format, a...)
	if ctx.Err() != nil {
		return errs.Wrap(errs.KindInterrupted, err, "", "%s: interrupted", what)
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return errs.Wrap(errs.KindConnect, err, "", "%s", what)
	}
	return connError(err, what)
}

func mysqlErrno(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// session is one connection (session settings hold) from a pool of its own.
type session struct {
	pool *sql.DB
	conn *sql.Conn
}

func (d Databases) session(ctx context.Context, what string) (*session, error) {
	pool, err := d.Open("")
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "%s", what)
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, serverError(ctx, err, "%s", what)
	}
	return &session{pool: pool, conn: conn}, nil
}

func (s *session) close() {
	s.conn.Close()
	s.pool.Close()
}

// noBackslash reports whether the session's sql_mode has
// NO_BACKSLASH_ESCAPES (a server tunebench does not manage may).
func (s *session) noBackslash(ctx context.Context) (bool, error) {
	var mode string
	if err := s.conn.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
		return false, err
	}
	return strings.Contains(strings.ToUpper(mode), "NO_BACKSLASH_ESCAPES"), nil
}

// comment runs stmt (a CREATE or ALTER DATABASE) with "COMMENT 'marker'"
// appended, quoted for the session's sql_mode.
func (s *session) comment(ctx context.Context, stmt, marker string) error {
	nb, err := s.noBackslash(ctx)
	if err != nil {
		return err
	}
	_, err = s.conn.ExecContext(ctx, stmt+" COMMENT "+quoteString(marker, nb))
	return err
}

type schema struct {
	exists           bool
	comment          string
	charset, collate string
}

// schemaOf reads db's row of information_schema.SCHEMATA. The name is
// compared exactly here: the view compares names case-insensitively, the
// server (lower_case_table_names=0) does not.
func schemaOf(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, db string) (schema, error) {
	rows, err := q.QueryContext(ctx, `SELECT SCHEMA_NAME, SCHEMA_COMMENT, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME
		FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, db)
	if err != nil {
		if mysqlErrno(err) == 1054 { // unknown column SCHEMA_COMMENT
			return schema{}, errs.Wrap(errs.KindEnvironment, err, "use MariaDB 10.5 or later: tunebench marks its databases with schema comments, which older servers (and MySQL) do not keep",
				"reading database %s", db)
		}
		return schema{}, serverError(ctx, err, "reading database %s", db)
	}
	defer rows.Close()
	var out schema
	for rows.Next() {
		var name string
		var comment sql.NullString
		var cs, co string
		if err := rows.Scan(&name, &comment, &cs, &co); err != nil {
			return schema{}, serverError(ctx, err, "reading database %s", db)
		}
		if name == db {
			out = schema{exists: true, comment: comment.String, charset: cs, collate: co}
		}
	}
	if err := rows.Err(); err != nil {
		return schema{}, serverError(ctx, err, "reading database %s", db)
	}
	return out, nil
}

// State reports whether db exists and its comment.
func (d Databases) State(ctx context.Context, db string) (bool, string, error) {
	pool, err := d.Open("")
	if err != nil {
		return false, "", errs.Wrap(errs.KindConnect, err, "", "reading database %s", db)
	}
	defer pool.Close()
	sc, err := schemaOf(ctx, pool, db)
	return sc.exists, sc.comment, err
}

// Create makes an empty database with marker as its comment.
func (d Databases) Create(ctx context.Context, db, marker string) error {
	if err := checkName(db); err != nil {
		return err
	}
	if err := checkMarker(marker); err != nil {
		return err
	}
	s, err := d.session(ctx, "creating database "+db)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.comment(ctx, "CREATE DATABASE "+quoteIdent(db), marker); err != nil {
		if mysqlErrno(err) == 1007 {
			return errs.Usage("drop it, or name another database", "database %s exists", db)
		}
		return serverError(ctx, err, "creating database %s", db)
	}
	return nil
}

// Mark replaces db's comment.
func (d Databases) Mark(ctx context.Context, db, marker string) error {
	if err := checkName(db); err != nil {
		return err
	}
	if err := checkMarker(marker); err != nil {
		return err
	}
	s, err := d.session(ctx, "marking database "+db)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.comment(ctx, "ALTER DATABASE "+quoteIdent(db), marker); err != nil {
		return serverError(ctx, err, "marking database %s", db)
	}
	return nil
}

// dropWait bounds how long a DROP DATABASE waits for the tables' metadata
// locks (held by a session DropOwn did not end: another user's, or one in
// another current database with a transaction on db's tables), instead of
// the server's lock_wait_timeout (a day), in seconds.
const dropWait = 300

// DropOwn drops db when its comment starts with own; one tunebench did
// not make is refused, and one that does not exist is fine. Sessions whose
// current database is db are ended first, as PostgreSQL's DROP DATABASE
// ... WITH (FORCE) does: a session in a transaction on db's tables would
// hold the DROP.
func (d Databases) DropOwn(ctx context.Context, db, own string) error {
	if own == "" {
		return errs.New(errs.KindInternal, "", "DropOwn of %s without tunebench's marker would drop any database", db)
	}
	s, err := d.session(ctx, "dropping database "+db)
	if err != nil {
		return err
	}
	defer s.close()
	sc, err := schemaOf(ctx, s.conn, db)
	if err != nil || !sc.exists {
		return err
	}
	if !strings.HasPrefix(sc.comment, own) {
		return errs.Usage("set target.database to another name, or drop the database yourself if it is disposable",
			"database %s exists and tunebench did not make it (its comment is %q); tunebench does not drop it", db, sc.comment)
	}
	if err := s.endSessions(ctx, db); err != nil {
		return err
	}
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", dropWait)); err != nil {
		return serverError(ctx, err, "dropping database %s", db)
	}
	if _, err := s.conn.ExecContext(ctx, "DROP DATABASE "+quoteIdent(db)); err != nil {
		switch mysqlErrno(err) {
		case 1008: // gone meanwhile
			return nil
		case 1205:
			return errs.Wrap(errs.KindConnect, err, "end the session that uses it (SHOW PROCESSLIST; KILL id) and run again",
				"dropping database %s: a session still uses it", db)
		}
		return serverError(ctx, err, "dropping database %s", db)
	}
	return nil
}

// endSessions kills the other sessions whose current database is db. A
// session tunebench's user may not kill (another user's, without the
// privilege) is left: the DROP then waits for it.
func (s *session) endSessions(ctx context.Context, db string) error {
	rows, err := s.conn.QueryContext(ctx, "SELECT ID, DB FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", db)
	if err != nil {
		return serverError(ctx, err, "listing the sessions on %s", db)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return serverError(ctx, err, "listing the sessions on %s", db)
		}
		if name == db {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return serverError(ctx, err, "listing the sessions on %s", db)
	}
	for _, id := range ids {
		if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && ctx.Err() != nil {
			return serverError(ctx, err, "ending the sessions on %s", db)
		}
	}
	return nil
}

// Seal does nothing on MariaDB. PostgreSQL needs it because CREATE
// DATABASE ... TEMPLATE refuses a template with connections; Copy here
// reads the template's tables with ordinary statements (CREATE TABLE ...
// LIKE, INSERT ... SELECT), which other sessions do not stop. The template
// must still not change while a copy is made, which tunebench's load
// ensures (nothing connects to it after its load).
func (Databases) Seal(context.Context, string) error { return nil }

// table is one of a template's tables to copy.
type table struct {
	name    string
	typ     string        // BASE TABLE, SEQUENCE
	autoinc sql.NullInt64 // the next AUTO_INCREMENT value
	columns []string      // the stored columns, generated ones left out
}

// foreignKey is one of a template's foreign keys.
type foreignKey struct {
	table, name        string
	cols, refCols      []string
	refSchema, refName string
	onUpdate, onDelete string
}

// rules are the foreign key actions a constraint may have.
var rules = map[string]bool{"CASCADE": true, "SET NULL": true, "SET DEFAULT": true, "NO ACTION": true, "RESTRICT": true}

// Copy makes db a copy of template: a database of the template's
// character set and collation, each base table and sequence made LIKE the
// template's (columns, indexes, engine, partitions, checks) and filled
// with INSERT ... SELECT of its stored columns (generated ones are
// computed again; invisible ones are copied), foreign keys added (CREATE
// TABLE ... LIKE leaves them out; one to a table of the template points to
// the copy's, one to another database stays) and AUTO_INCREMENT counters
// set as the template's, then the base tables analysed (statistics as of
// the copy, not of a background recalculation during a run). A sequence
// goes on from the template's next value not cached, as after a restart.
// Foreign key and unique checks are off in the copying session, so the
// table order does not matter and InnoDB bulk-loads each empty table. A
// template with views, triggers, routines, events or system-versioned
// tables is refused before anything is made: they are not copied.
//
// db must not exist. While it is filled its comment is the template's with
// " (copying)" after it, so that a copy cut short (the process killed) is
// still tunebench's to drop; the caller's Mark replaces it. On failure the
// half-made copy is dropped, after killing the copying session when the
// context ended (the driver only closes the connection, and the server
// would go on with a long INSERT ... SELECT, holding the DROP).
func (d Databases) Copy(ctx context.Context, db, template string) error {
	if err := checkName(db); err != nil {
		return err
	}
	s, err := d.session(ctx, "copying "+template)
	if err != nil {
		return err
	}
	defer s.close()
	if sc, err := schemaOf(ctx, s.conn, db); err != nil {
		return err
	} else if sc.exists {
		return errs.Usage("drop it first", "database %s exists: a copy needs a new one", db)
	}
	tsc, err := schemaOf(ctx, s.conn, template)
	if err != nil {
		return err
	}
	if !tsc.exists {
		return errs.Usage("load the template first", "no template database %s to copy", template)
	}
	tables, fks, err := s.templateObjects(ctx, template)
	if err != nil {
		return err
	}
	var id int64
	if err := s.conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		return serverError(ctx, err, "copying %s", template)
	}

	mark := ""
	if tsc.comment != "" {
		mark = copyingMarker(tsc.comment)
	}
	create := "CREATE DATABASE " + quoteIdent(db) + " CHARACTER SET " + quoteIdent(tsc.charset) + " COLLATE " + quoteIdent(tsc.collate)
	if err := s.comment(ctx, create, mark); err != nil {
		if mysqlErrno(err) == 1007 {
			return errs.Usage("drop it first", "database %s exists: a copy needs a new one", db)
		}
		return serverError(ctx, err, "creating database %s", db)
	}
	fail := func(err error, format string, a ...any) error {
		return s.dropHalfMade(ctx, id, db, serverError(ctx, err, "copying %s to %s: %s", template, db, fmt.Sprintf(format, a...)))
	}
	if _, err := s.conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0, unique_checks = 0, "+
		"sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'NO_AUTO_VALUE_ON_ZERO')"); err != nil {
		return fail(err, "session settings")
	}
	for _, t := range tables {
		if _, err := s.conn.ExecContext(ctx, "CREATE TABLE "+quoteIdent(db)+"."+quoteIdent(t.name)+" LIKE "+quoteIdent(template)+"."+quoteIdent(t.name)); err != nil {
			return fail(err, "table %s", t.name)
		}
	}
	for _, fk := range fks {
		ref := fk.refSchema
		if ref == template {
			ref = db
		}
		q := "ALTER TABLE " + quoteIdent(db) + "." + quoteIdent(fk.table) + " ADD CONSTRAINT " + quoteIdent(fk.name) +
			" FOREIGN KEY (" + identList(fk.cols) + ") REFERENCES " + quoteIdent(ref) + "." + quoteIdent(fk.refName) +
			" (" + identList(fk.refCols) + ") ON DELETE " + fk.onDelete + " ON UPDATE " + fk.onUpdate
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fail(err, "foreign key %s of %s", fk.name, fk.table)
		}
	}
	for _, t := range tables {
		cols := identList(t.columns)
		q := "INSERT INTO " + quoteIdent(db) + "." + quoteIdent(t.name) + " (" + cols + ") SELECT " + cols + " FROM " + quoteIdent(template) + "." + quoteIdent(t.name)
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fail(err, "rows of %s", t.name)
		}
		if t.autoinc.Valid && t.autoinc.Int64 > 1 {
			q := fmt.Sprintf("ALTER TABLE %s.%s AUTO_INCREMENT = %d", quoteIdent(db), quoteIdent(t.name), t.autoinc.Int64)
			if _, err := s.conn.ExecContext(ctx, q); err != nil {
				return fail(err, "AUTO_INCREMENT of %s", t.name)
			}
		}
	}
	var names []string
	for _, t := range tables {
		if t.typ == "BASE TABLE" {
			names = append(names, quoteIdent(db)+"."+quoteIdent(t.name))
		}
	}
	if len(names) > 0 {
		if err := s.analyze(ctx, names); err != nil {
			return fail(err, "analysing the tables")
		}
	}
	return nil
}

// copyingMarker is the comment of a copy being filled: the template's,
// cut to leave room for " (copying)".
func copyingMarker(c string) string {
	r := []rune(c)
	if n := maxComment - utf8.RuneCountInString(copyingSuffix); len(r) > n {
		r = r[:n]
	}
	return string(r) + copyingSuffix
}

func identList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// templateObjects lists what Copy copies of template (tables and
// sequences sorted by name, their stored columns, foreign keys), and
// refuses what it does not copy.
func (s *session) templateObjects(ctx context.Context, template string) ([]table, []foreignKey, error) {
	var tables []table
	var refused []string
	err := s.each(ctx, func(r *sql.Rows) error {
		var t table
		if err := r.Scan(&t.name, &t.typ, &t.autoinc); err != nil {
			return err
		}
		switch t.typ {
		case "BASE TABLE", "SEQUENCE":
			tables = append(tables, t)
		default: // VIEW, SYSTEM VERSIONED (its history would be lost)
			refused = append(refused, strings.ToLower(t.typ)+" "+t.name)
		}
		return nil
	}, "SELECT TABLE_NAME, TABLE_TYPE, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", template)
	if err != nil {
		return nil, nil, serverError(ctx, err, "listing the tables of %s", template)
	}
	for _, o := range []struct{ kind, q string }{
		{"trigger", "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?"},
		{"routine", "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?"},
		{"event", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?"},
	} {
		err := s.each(ctx, func(r *sql.Rows) error {
			var name string
			if err := r.Scan(&name); err != nil {
				return err
			}
			refused = append(refused, o.kind+" "+name)
			return nil
		}, o.q, template)
		if err != nil {
			return nil, nil, serverError(ctx, err, "listing the %ss of %s", o.kind, template)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, nil, errs.Usage("make the workload's schema of base tables (and sequences) only, or reset by reloading",
			"the template %s has %s, which a MariaDB copy does not copy", template, strings.Join(refused, ", "))
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].name < tables[j].name })

	cols := map[string][]string{}
	err = s.each(ctx, func(r *sql.Rows) error {
		var t, c string
		if err := r.Scan(&t, &c); err != nil {
			return err
		}
		cols[t] = append(cols[t], c)
		return nil
	}, "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND IS_GENERATED = 'NEVER' ORDER BY TABLE_NAME, ORDINAL_POSITION", template)
	if err != nil {
		return nil, nil, serverError(ctx, err, "listing the columns of %s", template)
	}
	for i := range tables {
		tables[i].columns = cols[tables[i].name]
		if len(tables[i].columns) == 0 {
			return nil, nil, errs.New(errs.KindInternal, "", "no stored columns of %s.%s", template, tables[i].name)
		}
	}

	var fks []foreignKey
	err = s.each(ctx, func(r *sql.Rows) error {
		var t, name, col, rs, rt, rc, upd, del string
		if err := r.Scan(&t, &name, &col, &rs, &rt, &rc, &upd, &del); err != nil {
			return err
		}
		if !rules[upd] || !rules[del] {
			return fmt.Errorf("foreign key %s of %s: unknown rule %q/%q", name, t, upd, del)
		}
		if n := len(fks); n > 0 && fks[n-1].table == t && fks[n-1].name == name {
			fks[n-1].cols = append(fks[n-1].cols, col)
			fks[n-1].refCols = append(fks[n-1].refCols, rc)
			return nil
		}
		fks = append(fks, foreignKey{table: t, name: name, cols: []string{col}, refCols: []string{rc},
			refSchema: rs, refName: rt, onUpdate: upd, onDelete: del})
		return nil
	}, `SELECT k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME,
			k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE, r.DELETE_RULE
		FROM information_schema.KEY_COLUMN_USAGE k
		JOIN information_schema.REFERENTIAL_CONSTRAINTS r
			ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.TABLE_NAME = k.TABLE_NAME AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME
		WHERE k.CONSTRAINT_SCHEMA = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL
		ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`, template)
	if err != nil {
		return nil, nil, serverError(ctx, err, "listing the foreign keys of %s", template)
	}
	return tables, fks, nil
}

// each runs a query on the session and calls f for each row.
func (s *session) each(ctx context.Context, f func(*sql.Rows) error, q string, args ...any) error {
	rows, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// analyze runs ANALYZE TABLE, whose failures come back as rows.
func (s *session) analyze(ctx context.Context, tables []string) error {
	var problems []string
	err := s.each(ctx, func(r *sql.Rows) error {
		var table, op, typ, text string
		if err := r.Scan(&table, &op, &typ, &text); err != nil {
			return err
		}
		if strings.EqualFold(typ, "error") {
			problems = append(problems, table+": "+text)
		}
		return nil
	}, "ANALYZE TABLE "+strings.Join(tables, ", "))
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// dropHalfMade drops a copy that failed. When the context ended, the
// driver has only closed the copying connection, and the server would go
// on with its statement (holding the copy's tables, so the DROP would
// wait for it): that connection is killed first.
func (s *session) dropHalfMade(ctx context.Context, id int64, db string, cause error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if ctx.Err() != nil {
		_, _ = s.pool.ExecContext(cctx, fmt.Sprintf("KILL CONNECTION %d", id)) // gone already: error 1094
	}
	if _, err := s.pool.ExecContext(cctx, "DROP DATABASE IF EXISTS "+quoteIdent(db)); err != nil {
		return errors.Join(cause, errs.Wrap(errs.KindConnect, err, "drop it yourself: DROP DATABASE "+quoteIdent(db),
			"dropping the half-made copy %s", db))
	}
	return cause
}
