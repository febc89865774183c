package driver

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/step"
)

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		name     string
		err      error
		inCommit bool
		attempts int
		class    step.OutcomeClass
		state    string
	}{
		{"ok", nil, false, 1, step.ClassOK, ""},
		{"retried ok", nil, false, 3, step.ClassRetriedOK, ""},
		{"serialization exhausted", pg("40001"), false, 3, step.ClassFailedRetryExhausted, "40001"},
		{"deadlock exhausted", pg("40P01"), false, 1, step.ClassFailedRetryExhausted, "40P01"},
		{"unique violation", pg("23505"), false, 1, step.ClassFailedError, "23505"},
		{"admin shutdown", pg("57P01"), false, 1, step.ClassConnError, "57P01"},
		{"admin shutdown in commit", pg("57P01"), true, 1, step.ClassAmbiguousCommit, "57P01"},
		{"cannot connect now", pg("57P03"), false, 1, step.ClassConnError, "57P03"},
		{"connection failure", pg("08006"), false, 1, step.ClassConnError, "08006"},
		{"connection failure, fatal", &pgconn.PgError{Code: "08006", Severity: "FATAL"}, false, 1, step.ClassConnError, "08006"},
		// A protocol violation the server reports as an ERROR (a NUL byte
		// in a statement) leaves the session alive: the statement failed.
		{"protocol violation, error", fmt.Errorf("prepare: %w", &pgconn.PgError{Code: "08P01", Severity: "ERROR"}), false, 1, step.ClassFailedError, "08P01"},
		{"protocol violation, fatal", &pgconn.PgError{Code: "08P01", Severity: "FATAL"}, false, 1, step.ClassConnError, "08P01"},
		{"protocol violation, error, in German", &pgconn.PgError{Code: "08P01", Severity: "FEHLER", SeverityUnlocalized: "ERROR"}, false, 1, step.ClassFailedError, "08P01"},
		{"eof", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false, 1, step.ClassConnError, ""},
		{"eof in commit", io.EOF, true, 1, step.ClassAmbiguousCommit, ""},
		{"client error", errors.New("boom"), false, 1, step.ClassFailedError, "client"},
	}
	for _, c := range cases {
		class, state := Classify(c.err, c.inCommit, c.attempts)
		if class != c.class || state != c.state {
			t.Errorf("%s: got %v/%q want %v/%q", c.name, class, state, c.class, c.state)
		}
	}
}

func TestRetryable(t *testing.T) {
	for code, want := range map[string]bool{"40001": true, "40P01": true, "23505": false, "": false, "55P03": false} {
		if Retryable(code) != want {
			t.Errorf("Retryable(%q) != %v", code, want)
		}
	}
}
