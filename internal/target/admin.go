package target

import (
	"context"
	"errors"
	"io"
)

// Admin is a plain connection for a workload's set-up, checks and
// bookkeeping (not its measured statements, which go through a Session):
// statements in the target's dialect, results scanned into Go values, a
// transaction helper and a bulk load. Each workload keeps its SQL for
// such work in one file per dialect (load_<dialect>.go and the like) and
// picks it by Target.Dialect; a PostgreSQL path tuned by hand may still
// use pgx through the pg package's escape hatch.
type Admin interface {
	// Exec runs a statement and returns the rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// QueryRow runs a query whose first row is scanned by Row.Scan (an
	// error when it has none: ErrNoRows).
	QueryRow(ctx context.Context, sql string, args ...any) Row
	// Query runs a query; the caller closes its Rows.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// Tx runs fn in a transaction, committed when fn returns nil and
	// rolled back otherwise.
	Tx(ctx context.Context, o TxOptions, fn func(Admin) error) error
	// BulkLoad appends src's rows to table's columns in the database's
	// fastest way in (COPY, LOAD DATA LOCAL INFILE) and returns how many
	// went in.
	BulkLoad(ctx context.Context, table string, columns []string, src RowSource) (int64, error)
	// Transactions is the database side's count of transactions ended
	// (commits and rollbacks), the counter a workload's cross-check of its
	// own count reads before and after a run (TPM as HammerDB reads it):
	// PostgreSQL's xact_commit + xact_rollback of the database,
	// MariaDB's Com_commit + Com_rollback of the server. Only its growth
	// means something.
	Transactions(ctx context.Context) (int64, error)
	Close() error
}

// Row is a query's first row.
type Row interface{ Scan(dest ...any) error }

// Rows are a query's rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// TxOptions: a read-only transaction on one snapshot (repeatable read)
// for checks that must see one state of several tables.
type TxOptions struct {
	ReadOnly bool
	Snapshot bool
}

// RowSource gives a bulk load its rows, in the shape of pgx's
// CopyFromSource: Next advances, Values is the current row (its slice may
// be reused by the next Next), Err is the error that ended it. Values are
// nil, integers, floats, strings, []byte or time.Time.
type RowSource interface {
	Next() bool
	Values() ([]any, error)
	Err() error
}

// TextLoader is an Admin that also takes rows already written as text in
// the format PostgreSQL's COPY (FORMAT text) and MariaDB's LOAD DATA
// share: fields separated by one delimiter byte (a tab by default in
// both), each row ended by a newline, \N for NULL, backslash escapes,
// timestamps as 2006-01-02 15:04:05. A generator that writes that format
// straight into its buffers skips the conversion to Go values and back
// (RowSource).
type TextLoader interface {
	// BulkLoadText appends the rows r yields to table (all its columns,
	// in the table's order, when columns is nil), fields separated by
	// delim, and returns how many went in.
	BulkLoadText(ctx context.Context, table string, columns []string, delim byte, r io.Reader) (int64, error)
}

// Admins is a target that opens admin connections to its database.
type Admins interface {
	Admin(ctx context.Context) (Admin, error)
}

// ErrNoRows is QueryRow's error for a query without rows (errors.Is).
var ErrNoRows = errors.New("no rows in result set")

// LostChecker is a target that tells an error of a lost connection (the
// server restarted or went away) from an error of a statement, so that
// the reads after a run can open a new connection and try again.
type LostChecker interface {
	ConnLost(err error) bool
}

// DataDirer is a target that knows where its server keeps its data on
// this machine (a managed server, or one on this host whose data
// directory this process can see), so that a load can check the free
// space before it writes and watch it while it does.
type DataDirer interface {
	// LocalDataDir is the data directory, or "" and why it is not known.
	LocalDataDir(ctx context.Context) (dir, why string)
}

// ErrorCoder is a target that gives the code of an error of its admin
// connections as runs record them (MariaDB's error number, "1969"), for
// a workload that tells such errors apart, such as a statement that
// reached its time limit.
type ErrorCoder interface {
	ErrorCode(err error) string
}
