package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/target"
)

// Admin opens an admin connection to the target's database: one
// connection (a pool of one), so that a transaction and the session
// variables a workload sets stay on it.
func (t *Target) Admin(ctx context.Context) (target.Admin, error) {
	c := t.cfg.Clone()
	c.ParseTime = true
	cn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(cn)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, connError(err, "connect to "+t.Describe())
	}
	return &admin{db: db, q: conn}, nil
}

type admin struct {
	db   *sql.DB
	q    *sql.Conn
	inTx bool
}

func (a *admin) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	r, err := a.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w", target.ErrNoRows)
	}
	return err
}

func (a *admin) QueryRow(ctx context.Context, q string, args ...any) target.Row {
	return row{a.q.QueryRowContext(ctx, q, args...)}
}

func (a *admin) Query(ctx context.Context, q string, args ...any) (target.Rows, error) {
	return a.q.QueryContext(ctx, q, args...)
}

// Tx runs fn in a transaction on the admin's connection; with Snapshot,
// a repeatable-read one whose snapshot is taken as it starts (START
// TRANSACTION WITH CONSISTENT SNAPSHOT), not at its first read.
func (a *admin) Tx(ctx context.Context, o target.TxOptions, fn func(target.Admin) error) error {
	if a.inTx {
		return fn(a)
	}
	start := "START TRANSACTION"
	if o.Snapshot {
		if _, err := a.q.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return err
		}
		start += " WITH CONSISTENT SNAPSHOT"
		if o.ReadOnly {
			start += ","
		}
	}
	if o.ReadOnly {
		start += " READ ONLY"
	}
	if _, err := a.q.ExecContext(ctx, start); err != nil {
		return err
	}
	a.inTx = true
	err := fn(a)
	a.inTx = false
	if err != nil {
		_, _ = a.q.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	_, err = a.q.ExecContext(ctx, "COMMIT")
	return err
}

// Transactions reads Com_commit + Com_rollback of the server (the
// statements COMMIT and ROLLBACK, as HammerDB counts MariaDB's TPM: a
// statement run with autocommit is not counted).
func (a *admin) Transactions(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	err := a.q.QueryRowContext(ctx, "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('COM_COMMIT', 'COM_ROLLBACK')").Scan(&n)
	return n.Int64, err
}

func (a *admin) Close() error {
	_ = a.q.Close()
	return a.db.Close()
}

var readerSeq atomic.Int64

// BulkLoad streams src into table with LOAD DATA LOCAL INFILE: the rows
// are written as the statement's default text format (tab-separated,
// backslash escapes, \N for NULL) into a reader the driver sends as the
// file, so nothing touches the disk of either side. The server must allow
// local_infile (MariaDB's default).
func (a *admin) BulkLoad(ctx context.Context, table string, columns []string, src target.RowSource) (int64, error) {
	enc := &rowEncoder{src: src}
	n, err := a.loadData(ctx, table, columns, '\t', enc)
	if enc.err != nil {
		return n, enc.err
	}
	return n, err
}

// BulkLoadText streams r, rows in LOAD DATA's default text format, into
// table (target.TextLoader).
func (a *admin) BulkLoadText(ctx context.Context, table string, columns []string, delim byte, r io.Reader) (int64, error) {
	return a.loadData(ctx, table, columns, delim, r)
}

// loadData runs LOAD DATA LOCAL INFILE from r, read by the driver as the
// file (columns nil: all of the table's, in its order).
func (a *admin) loadData(ctx context.Context, table string, columns []string, delim byte, r io.Reader) (int64, error) {
	if delim == 0 || delim == '\n' || delim == '\\' || delim == '\'' {
		return 0, fmt.Errorf("LOAD DATA into %s: %q cannot separate fields", table, delim)
	}
	name := "tunebench-" + strconv.FormatInt(readerSeq.Add(1), 10)
	mysql.RegisterReaderHandler(name, func() io.Reader { return r })
	defer mysql.DeregisterReaderHandler(name)
	q := "LOAD DATA LOCAL INFILE 'Reader::" + name + "' INTO TABLE " + quoteIdent(table) + " CHARACTER SET utf8mb4"
	if delim != '\t' {
		q += " FIELDS TERMINATED BY '" + string(delim) + "'"
	}
	if len(columns) > 0 {
		cols := make([]string, len(columns))
		for i, c := range columns {
			cols[i] = quoteIdent(c)
		}
		q += " (" + strings.Join(cols, ", ") + ")"
	}
	n, err := a.Exec(ctx, q)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1148 || me.Number == 3948) {
			return n, fmt.Errorf("LOAD DATA LOCAL INFILE into %s: %w (set local_infile=ON on the server)", table, err)
		}
		return n, fmt.Errorf("LOAD DATA LOCAL INFILE into %s: %w", table, err)
	}
	return n, nil
}

// rowEncoder is an io.Reader of src's rows in LOAD DATA's text format.
type rowEncoder struct {
	src  target.RowSource
	buf  []byte
	off  int
	done bool
	err  error
}

func (e *rowEncoder) Read(p []byte) (int, error) {
	for e.off >= len(e.buf) {
		if e.done {
			return 0, io.EOF
		}
		e.buf, e.off = e.buf[:0], 0
		for len(e.buf) < 64<<10 {
			if !e.src.Next() {
				e.done = true
				if err := e.src.Err(); err != nil {
					e.err = err
					return 0, err
				}
				break
			}
			vals, err := e.src.Values()
			if err != nil {
				e.err, e.done = err, true
				return 0, err
			}
			for i, v := range vals {
				if i > 0 {
					e.buf = append(e.buf, '\t')
				}
				if e.buf, err = appendField(e.buf, v); err != nil {
					e.err, e.done = err, true
					return 0, err
				}
			}
			e.buf = append(e.buf, '\n')
		}
	}
	n := copy(p, e.buf[e.off:])
	e.off += n
	return n, nil
}

// appendField writes one value in LOAD DATA's default format.
func appendField(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, `\N`...), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, fmt.Errorf("%v cannot be loaded into MariaDB", v)
		}
		return strconv.AppendFloat(b, v, 'f', -1, 64), nil
	case bool:
		if v {
			return append(b, '1'), nil
		}
		return append(b, '0'), nil
	case string:
		return appendEscaped(b, v), nil
	case []byte:
		return appendEscaped(b, string(v)), nil
	case time.Time:
		return v.AppendFormat(b, "2006-01-02 15:04:05.999999"), nil
	}
	return b, fmt.Errorf("a bulk load cannot write %T", v)
}

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case 0:
			b = append(b, `\0`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// ErrorCode is an error's code as runs record it (target.ErrorCoder):
// MariaDB's error number, or Code's client codes.
func (t *Target) ErrorCode(err error) string { return Code(err) }

// ConnLost reports an error of a lost connection (target.LostChecker).
func (t *Target) ConnLost(err error) bool {
	// database/sql ends a connection whose driver reported it bad, and
	// every later call on it says sql.ErrConnDone: lost too.
	return isConnError(err) || errors.Is(err, sql.ErrConnDone) || Code(err) == strconv.Itoa(ErrCantConnect)
}
