package driver

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tunebench/tunebench/internal/workload"
)

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		name     string
		err      error
		inCommit bool
		attempts int
		class    workload.OutcomeClass
		state    string
	}{
		{"ok", nil, false, 1, workload.ClassOK, ""},
		{"retried ok", nil, false, 3, workload.ClassRetriedOK, ""},
		{"serialization exhausted", pg("40001"), false, 3, workload.ClassFailedRetryExhausted, "40001"},
		{"deadlock exhausted", pg("40P01"), false, 1, workload.ClassFailedRetryExhausted, "40P01"},
		{"unique violation", pg("23505"), false, 1, workload.ClassFailedError, "23505"},
		{"admin shutdown", pg("57P01"), false, 1, workload.ClassConnError, "57P01"},
		{"admin shutdown in commit", pg("57P01"), true, 1, workload.ClassAmbiguousCommit, "57P01"},
		{"cannot connect now", pg("57P03"), false, 1, workload.ClassConnError, "57P03"},
		{"connection failure", pg("08006"), false, 1, workload.ClassConnError, "08006"},
		{"eof", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false, 1, workload.ClassConnError, ""},
		{"eof in commit", io.EOF, true, 1, workload.ClassAmbiguousCommit, ""},
		{"client error", errors.New("boom"), false, 1, workload.ClassFailedError, "client"},
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
