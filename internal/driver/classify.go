// Package driver holds what every database adapter shares: classification of
// errors into outcome classes, and the retry rule.
package driver

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/step"
)

// SQLSTATE codes the executor treats specially.
const (
	SerializationFailure = "40001"
	DeadlockDetected     = "40P01"
)

// Retryable reports whether a transaction that failed with this SQLSTATE may
// be retried with the same parameters (PostgreSQL docs 13.5).
func Retryable(sqlstate string) bool {
	return sqlstate == SerializationFailure || sqlstate == DeadlockDetected
}

// SQLState extracts the server's SQLSTATE from err, "" if none.
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsConnError reports whether err means the connection is gone or could not
// be made: SQLSTATE class 08, 57P01..57P03, network errors, EOF, a closed
// connection. An error the server reported with severity ERROR leaves the
// session as it was, whatever its code: a protocol violation (08P01) that
// a statement's text causes, such as a NUL byte, is the statement's error,
// not a lost connection (nor an outage).
func IsConnError(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		sev := pe.SeverityUnlocalized // a server in another language localizes Severity
		if sev == "" {
			sev = pe.Severity
		}
		if sev == "ERROR" {
			return false
		}
	}
	if code := SQLState(err); code != "" {
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var cf interface{ ConnectFailure() bool }
	if errors.As(err, &cf) && cf.ConnectFailure() {
		return true
	}
	var cl interface{ ConnectionLost() bool }
	if errors.As(err, &cl) && cl.ConnectionLost() {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// pgconn reports use of a connection that died earlier with this text.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "conn busy") && strings.Contains(msg, "closed")
}

// Classify maps the final error of a transaction to its outcome class and
// SQLSTATE. inCommit says whether the error came from the COMMIT (or from a
// single autocommit write), where a lost connection leaves the outcome unknown.
// attempts > 1 with a retryable SQLSTATE means the retry budget ran out.
func Classify(err error, inCommit bool, attempts int) (step.OutcomeClass, string) {
	if err == nil {
		if attempts > 1 {
			return step.ClassRetriedOK, ""
		}
		return step.ClassOK, ""
	}
	code := SQLState(err)
	switch {
	case IsConnError(err):
		if inCommit {
			return step.ClassAmbiguousCommit, code
		}
		return step.ClassConnError, code
	case Retryable(code):
		return step.ClassFailedRetryExhausted, code
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return step.ClassFailedError, "client:canceled"
	default:
		if code == "" {
			code = "client"
		}
		return step.ClassFailedError, code
	}
}
