// Package store is tunebench's results store: one SQLite file that holds every
// run with its full configuration, its environment snapshot, its summary, its
// consistency-check report, its per-second time series and its encoded latency
// histograms. It also exports a stored run as JSON or CSV.
//
// # Location
//
// DefaultPath picks the file, first match wins:
//
//  1. $TUNEBENCH_RESULTS, used as given;
//  2. on Windows, %LOCALAPPDATA%\tunebench\results.db (whatever the shell:
//     Git Bash and MSYS2 set HOME too);
//  3. $XDG_DATA_HOME/tunebench/results.db, when XDG_DATA_HOME is an absolute
//     path (the XDG base directory specification says relative values are
//     invalid and must be ignored);
//  4. $HOME/.local/share/tunebench/results.db.
//
// # File and schema
//
// Open creates a missing parent directory with mode 0700 and a missing file
// with mode 0600 (SQLite gives its -wal and -shm files the mode of the main
// file). Existing files and directories keep their modes. The database runs in
// WAL journal mode with foreign keys enforced and a busy timeout, so several
// tunebench processes may share one file.
//
// The schema is versioned by the schema_migrations table. Migrations are
// applied in order, each in its own transaction, when a store is opened; a file
// written by a newer tunebench (a higher version than this binary knows) is
// refused rather than guessed at.
//
// Timestamps are stored as integer nanoseconds since the Unix epoch (UTC), so
// they sort correctly and round-trip exactly; they come back in UTC.
//
// # Secrets
//
// Callers redact before saving. As a last guard SaveRun refuses, with an
// internal error, any run whose text still contains a password-shaped
// connection string (password=..., scheme://user:secret@host, PGPASSWORD=...).
package store

import (
	"runtime"

	"github.com/tunebench/tunebench/internal/machine"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// EnvResults names the environment variable that overrides the store location.
const EnvResults = "TUNEBENCH_RESULTS"

// busyTimeout is how long a connection waits for another writer's lock.
const busyTimeout = 10 * time.Second

// DefaultPathFrom returns the results store location from the environment
// getenv reads (the CLI's state object); see the package documentation for
// the rules.
func DefaultPathFrom(getenv func(string) string) (string, error) {
	if p := getenv(EnvResults); p != "" {
		return p, nil
	}
	if a := getenv("LOCALAPPDATA"); a != "" && runtime.GOOS == "windows" {
		// First on Windows: Git Bash, MSYS2 and Cygwin set HOME, and a
		// store that moved with the shell would split the results.
		return filepath.Join(a, "tunebench", "results.db"), nil
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "tunebench", "results.db"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "tunebench", "results.db"), nil
	}
	return "", errs.New(errs.KindEnvironment,
		"set "+EnvResults+" to the results file to use (or set HOME)",
		"cannot choose a results store location: neither %s, XDG_DATA_HOME nor HOME is set", EnvResults)
}

// Store is an open results store. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string

	// version is the schema version of a store opened read-only (which
	// is not migrated); 0 for one opened to write (at SchemaVersion).
	version int

	// afterPointBatch, when set (tests only), runs after each batch of series
	// points is inserted by SaveRun, inside its transaction.
	afterPointBatch func(inserted int)
}

// Path is the file the store was opened from.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	return s.db.Close()
}

// Open opens (creating if needed) the results store at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errs.New(errs.KindUsage, "set "+EnvResults+" or pass a results file", "no results store path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "results store %s", path)
	}
	if err := prepareFile(abs); err != nil {
		return nil, err
	}

	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "open results store %s", abs)
	}
	s := &Store{db: db, path: abs}
	if err := retryBusy(ctx, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, notAStore(abs, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// ErrNotAStore is OpenReadOnly's error for an SQLite file that holds no
// results store.
var ErrNotAStore = errors.New("not a tunebench results store")

// OpenReadOnly opens an existing store to read: it is not created,
// migrated, or changed (a shard's results on a volume, merged elsewhere).
// SQLite still makes the -shm and -wal files beside a store in WAL mode
// when they are missing, and needs the directory writable for that. A
// store of a newer schema than this binary's is refused.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "results store %s", path)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give the path of a results store (results.db)", "cannot read results store %s", abs)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Set("mode", "ro")
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "open results store %s", abs)
	}
	s := &Store{db: db, path: abs}
	v, err := s.schemaVersion(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if v > len(migrations()) {
		db.Close()
		return nil, errs.New(errs.KindUsage, "upgrade tunebench to read this file",
			"results store %s has schema version %d, newer than the %d this tunebench knows", abs, v, len(migrations()))
	}
	if v == 0 {
		db.Close()
		return nil, errs.Wrap(errs.KindUsage, ErrNotAStore, "give the path of a results store (results.db)", "%s is an SQLite file without tunebench's schema", abs)
	}
	s.version = v
	return s, nil
}

// dsn builds the driver's URI for an absolute path. Every pooled connection
// applies the pragmas; transactions start with BEGIN IMMEDIATE so that a writer
// waits for the lock (busy_timeout) instead of failing when it upgrades.
func dsn(abs string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/dir/results.db (SQLite's URI form)
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// prepareFile creates the parent directory (0700) and the file (0600) when
// they are missing.
func prepareFile(abs string) error {
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Wrap(errs.KindEnvironment, err,
			"create the directory yourself or set "+EnvResults+" to a writable location",
			"cannot create results directory %s", dir)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err,
			"check the file's permissions or set "+EnvResults+" to a writable location",
			"cannot open results store %s", abs)
	}
	return f.Close()
}

// Check verifies the store's file (SQLite's quick_check) so that a damaged
// store is found before a benchmark runs, not when its result is saved.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return damaged(s.path, err.Error())
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return damaged(s.path, err.Error())
		}
		// A row may hold several lines, and a header naming the schema.
		for _, line := range strings.Split(text, "\n") {
			if line = strings.TrimSpace(line); line != "" && line != "ok" && !strings.HasPrefix(line, "***") {
				problems = append(problems, line)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return damaged(s.path, err.Error())
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) > 1 {
			more = fmt.Sprintf(" (and %d more problems)", len(problems)-1)
		}
		return damaged(s.path, problems[0]+more)
	}
	return nil
}

func damaged(path, what string) error {
	return errs.New(errs.KindUsage,
		"give another file with --results (or "+EnvResults+"); restore this one from a backup, and `tunebench results export` what it can still read",
		"the results store %s is damaged (%s): a run would be lost when saving, so nothing was run", path, what)
}

func notAStore(path string, err error) error {
	if free, ok := machine.FreeBytes(filepath.Dir(path)); ok && (free < 1<<20 || strings.Contains(err.Error(), "disk is full")) {
		return errs.Wrap(errs.KindUsage, err,
			"free space on that filesystem, or set "+EnvResults+" (or --results) to a file on another one",
			"cannot use results store %s: its filesystem is full (%d bytes free)", path, free)
	}
	return errs.Wrap(errs.KindUsage, err,
		"check that the file is a tunebench results store, or set "+EnvResults+" to another file",
		"cannot read results store %s", path)
}

// migrations returns the schema migrations in order: element i brings the
// schema from version i to version i+1. To change the schema, append one
// element; never edit or reorder an element that has been released.
func migrations() []string {
	return []string{
		schemaV1,
		schemaV2,
		schemaV3,
		schemaV4,
		schemaV5,
	}
}

// schemaV4 keeps the histograms of single intervals (a shard's, which the
// merge of a split run needs: interval percentiles cannot be added).
const schemaV4 = `
CREATE TABLE interval_histograms (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind    TEXT    NOT NULL CHECK (kind IN ('latency', 'lag')),
    t       REAL    NOT NULL,        -- the interval's end, as the series' t
    encoded BLOB    NOT NULL,        -- HdrHistogram V2 compressed encoding
    PRIMARY KEY (run_id, kind, t)
) WITHOUT ROWID;
`

// schemaV3 records the version of the summary's schema (package results)
// with each run; NULL for the runs stored before it (version 1).
const schemaV3 = `
ALTER TABLE runs ADD COLUMN summary_schema INTEGER;
`

// schemaV1 is the initial schema.
const schemaV1 = `
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    experiment   TEXT    NOT NULL DEFAULT '',
    workload     TEXT    NOT NULL,
    variant      TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL CHECK (status IN ('ok', 'errors', 'interrupted', 'failed')),
    started_at   INTEGER,            -- unix nanoseconds, UTC; NULL if unknown
    ended_at     INTEGER,            -- unix nanoseconds, UTC; NULL if unknown
    params       TEXT,               -- JSON: the full run configuration
    env          TEXT,               -- JSON: envinfo.Snapshot
    summary      TEXT,               -- JSON: the run summary (as --json writes it)
    check_report TEXT                -- JSON: consistency check report, NULL if none
);
CREATE INDEX runs_started ON runs (started_at, id);
CREATE INDEX runs_workload ON runs (workload, started_at);
CREATE INDEX runs_experiment ON runs (experiment, started_at);

CREATE TABLE series (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name   TEXT    NOT NULL,
    UNIQUE (run_id, name)
);

CREATE TABLE series_points (
    series_id INTEGER NOT NULL REFERENCES series (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,      -- position within the series as saved
    t         REAL    NOT NULL,      -- seconds since measurement start
    v         REAL,                  -- NULL stands for NaN
    PRIMARY KEY (series_id, seq)
) WITHOUT ROWID;

CREATE TABLE histograms (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    op      TEXT    NOT NULL,
    class   TEXT    NOT NULL,
    kind    TEXT    NOT NULL CHECK (kind IN ('latency', 'service', 'lag')),
    encoded BLOB    NOT NULL,        -- HdrHistogram V2 compressed encoding
    PRIMARY KEY (run_id, op, class, kind)
);
`

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int { return len(migrations()) }

func (s *Store) migrate(ctx context.Context) error {
	ms := migrations()
	cur, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if cur > len(ms) {
		return errs.New(errs.KindUsage,
			"upgrade tunebench to read this file, or set "+EnvResults+" to another file",
			"results store %s has schema version %d, newer than the %d this tunebench knows", s.path, cur, len(ms))
	}
	if cur == len(ms) {
		return nil
	}
	return s.applyMigrations(ctx, ms)
}

// retryBusy runs f again while it fails with SQLITE_BUSY, up to the busy
// timeout. A connection's pragmas run as it opens, and journal_mode(WAL)
// on a file another process is creating (or a read during that switch)
// fails at once instead of waiting for busy_timeout: two tunebench
// processes opening a new store together (TestConcurrentOpenAndSave).
func retryBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := f()
		var se interface{ Code() int }
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sqliteBusy is SQLITE_BUSY (its extended codes share the low byte).
const sqliteBusy = 5

// schemaVersion reads the current version; 0 for a new file.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var n int
	err := retryBusy(ctx, func() error {
		return s.db.QueryRowContext(ctx,
			`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	})
	if err != nil {
		return 0, notAStore(s.path, err)
	}
	if n == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, notAStore(s.path, err)
	}
	return int(v.Int64), nil
}

// applyMigrations brings the schema to the last version in one
// transaction: another process opening the file read-only (a merge waiting
// for a shard's store) sees no schema or the whole of it, never a store
// half made.
func (s *Store) applyMigrations(ctx context.Context, ms []string) error {
	fail := func(v int, err error) error {
		return errs.Wrap(errs.KindInternal, err, "", "results store %s: schema migration %d", s.path, v)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(len(ms), err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)`); err != nil {
		return fail(len(ms), err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&have); err != nil {
		return fail(len(ms), err)
	}
	// Versions another process applied since we looked are skipped.
	for v := int(have.Int64) + 1; v <= len(ms); v++ {
		for _, stmt := range splitStatements(ms[v-1]) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fail(v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			v, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fail(v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(len(ms), err)
	}
	return nil
}

// splitStatements splits a migration script on semicolons that end a line.
// Migrations are our own text: no semicolons inside literals at line ends.
func splitStatements(script string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(stripComment(line)), ";") {
			if st := strings.TrimSpace(cur.String()); st != "" {
				out = append(out, st)
			}
			cur.Reset()
		}
	}
	if st := strings.TrimSpace(cur.String()); st != "" {
		out = append(out, st)
	}
	return out
}

func stripComment(line string) string {
	if i := strings.Index(line, "--"); i >= 0 {
		return line[:i]
	}
	return line
}

// isNoRows reports whether err is sql.ErrNoRows.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
