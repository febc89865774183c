package mariadb

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/go-sql-driver/mysql"

	errcodes "github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/step"
)

// Errors of a MariaDB session by number, as runs record them, and the fix
// of a run that failed on them.

// Error numbers the session classifies (MariaDB's, not SQLSTATEs).
const (
	ErrDeadlock      = 1213 // ER_LOCK_DEADLOCK: the transaction was rolled back
	ErrRecordChanged = 1020 // ER_CHECKREAD: a write conflict under snapshot isolation, rolled back
	ErrLockWait      = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement failed, the transaction is still open
	ErrGoneAway      = 2006 // CR_SERVER_GONE_ERROR (client side): the connection was gone before the statement
	ErrLostConn      = 2013 // CR_SERVER_LOST (client side): the connection was lost during the statement
	ErrCantConnect   = 2003 // CR_CONN_HOST_ERROR (client side): no connection could be made
)

// isConnError reports an error of the connection rather than of a
// statement: the driver's bad or invalid connection, a network error, the
// server ending the connection (shutdown, KILL).
func isConnError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1077, 1152, 1153, 1158, 1159, 1160, 1161, 1927, 4031: // shutdown, aborted, net errors, killed, idle timeout
			return true
		}
	}
	return false
}

// Code is an error's code as runs record it: MariaDB's error number
// ("1213"), 2013 or 2006 for a lost connection (the client library's
// numbers), "client:canceled", or "client".
func Code(err error) string {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &me):
		if me.Number == 1927 || me.Number == 1053 {
			return strconv.Itoa(ErrLostConn)
		}
		return strconv.Itoa(int(me.Number))
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "client:canceled"
	case errors.Is(err, driver.ErrBadConn) || errors.Is(err, net.ErrClosed):
		return strconv.Itoa(ErrGoneAway)
	case errors.Is(err, syscall.ECONNREFUSED) || errs.KindOf(err) == errs.KindConnect:
		return strconv.Itoa(ErrCantConnect)
	case isConnError(err):
		return strconv.Itoa(ErrLostConn)
	}
	return "client"
}

// Classify puts a MariaDB error in its outcome class.
func Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string) {
	if err == nil {
		if attempts > 1 {
			return step.ClassRetriedOK, ""
		}
		return step.ClassOK, ""
	}
	code := Code(err)
	switch {
	case code == "client:canceled" && inCommit:
		// The COMMIT may have run: its outcome is unknown.
		return step.ClassAmbiguousCommit, code
	case code == "client:canceled":
		return step.ClassFailedError, code
	case isConnError(err) || code == "2003":
		if inCommit {
			return step.ClassAmbiguousCommit, code
		}
		return step.ClassConnError, code
	case Retryable(code):
		return step.ClassFailedRetryExhausted, code
	}
	return step.ClassFailedError, code
}

// Retryable: a deadlock (1213) and a write conflict (1020) roll the
// transaction back and are worth another try; a lock wait timeout (1205)
// is not (as PostgreSQL's lock_timeout is not).
func Retryable(code string) bool {
	return code == "1213" || code == "1020"
}

// ErrorsHint names the fix of a run whose errors were mostly one MariaDB
// error (target.ErrorsHinter).
func (t *Target) ErrorsHint(byCode map[string]int64) string {
	code := errcodes.Dominant(byCode)
	switch code {
	case "1213", "1020":
		return "most errors are " + map[string]string{"1213": "deadlocks (1213)", "1020": "write conflicts (1020)"}[code] +
			": MariaDB rolled the transactions back; give --max-tries 3 to retry them, or raise --max-errors-pct to accept them"
	case "1205":
		return "most errors are lock wait timeouts (1205): run fewer clients, or raise innodb_lock_wait_timeout (--set innodb_lock_wait_timeout=N)"
	case "1040":
		return "most errors are too many connections (1040): run fewer clients, or raise max_connections (--set max_connections=N)"
	case "1021", "1114":
		return "most errors are a full disk or table (" + code + "): free space on the filesystem of the server's data directory, then run again"
	case "1041", "1037", "1038":
		return "most errors are the server out of memory (" + code + "): run fewer clients, or give the server more memory"
	case "1461":
		return "most errors are the server's limit of prepared statements (max_prepared_stmt_count, 1461): each client keeps up to 1,000 of a long script's statements prepared; run fewer clients, or raise it (--set max_prepared_stmt_count=N, at most 1048576)"
	case "2013", "2006", "2003":
		return "most errors are lost connections (" + code + "): see the server's error log (a crash, a restart, wait_timeout)"
	case "":
		return ""
	}
	return "see the errors by MariaDB error number above; raise --max-errors-pct to accept them"
}
