// Package errs defines tunebench's error classes and the process exit code
// each one maps to. Every error a user can see should be an *Error with a
// hint that names the fix.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error; each kind has its own exit code.
type Kind int

const (
	// KindInternal is anything unexpected (a bug, an I/O failure).
	KindInternal Kind = iota
	// KindUsage is bad command-line usage or bad configuration.
	KindUsage
	// KindConnect means the database could not be reached or the server could not be started.
	KindConnect
	// KindRunErrors means a run finished but its errors exceeded the threshold.
	KindRunErrors
	// KindCheckFailed means a consistency check found violations.
	KindCheckFailed
	// KindEnvironment means something the machine lacks (a missing binary, a missing user).
	KindEnvironment
	// KindInterrupted means the user interrupted the work (SIGINT/SIGTERM).
	KindInterrupted
)

// Exit codes, documented in docs/cli.md.
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitUsage       = 2
	ExitConnect     = 3
	ExitRunErrors   = 4
	ExitCheckFailed = 5
	ExitEnvironment = 6
	ExitInterrupted = 130
)

func (k Kind) String() string {
	switch k {
	case KindUsage:
		return "usage"
	case KindConnect:
		return "connect"
	case KindRunErrors:
		return "run-errors"
	case KindCheckFailed:
		return "check-failed"
	case KindEnvironment:
		return "environment"
	case KindInterrupted:
		return "interrupted"
	default:
		return "internal"
	}
}

// ExitCode is the process exit code of the kind.
func (k Kind) ExitCode() int {
	switch k {
	case KindUsage:
		return ExitUsage
	case KindConnect:
		return ExitConnect
	case KindRunErrors:
		return ExitRunErrors
	case KindCheckFailed:
		return ExitCheckFailed
	case KindEnvironment:
		return ExitEnvironment
	case KindInterrupted:
		return ExitInterrupted
	default:
		return ExitInternal
	}
}

// Error is a classified error with an optional hint that tells the user the fix.
type Error struct {
	Kind Kind
	Msg  string
	Hint string
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	default:
		return e.Kind.String() + " error"
	}
}

func (e *Error) Unwrap() error { return e.Err }

// New makes a classified error.
func New(kind Kind, hint, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Wrap classifies err with a message and hint. A nil err gives nil.
func Wrap(kind Kind, err error, hint, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Hint: hint, Err: err}
}

// Usage is shorthand for a KindUsage error.
func Usage(hint, format string, args ...any) *Error { return New(KindUsage, hint, format, args...) }

// KindOf finds the outermost classified error in the chain; unclassified errors are internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// HintOf returns the first non-empty hint in the chain.
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}

// ExitCode maps an error to the process exit code (0 for nil).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	return KindOf(err).ExitCode()
}

// Brief renders err in one short line for status lines and summaries: the
// outermost classified message and, in parentheses, the last clause of the
// innermost cause ("cannot connect to ... (connection refused)") instead of
// every layer's text.
func Brief(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) || e.Msg == "" || e.Err == nil {
		return err.Error()
	}
	inner := error(e)
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	text := inner.Error()
	if i := strings.LastIndex(text, ": "); i >= 0 {
		text = text[i+2:]
	}
	if text == "" || text == e.Msg {
		return e.Msg
	}
	return e.Msg + " (" + text + ")"
}
