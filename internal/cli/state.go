// Package cli holds the cobra commands. It is the only package that prints;
// everything that touches the OS is reached through State.
package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "dev"

// State is everything the commands use from the outside world.
type State struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	LookupEnv      func(string) (string, bool)
	// Environ is the whole environment, for the commands tunebench runs
	// for the user (an experiment's hooks); nil: none.
	Environ   func() []string
	StderrTTY bool
	Redactor  *redact.Redactor
	// Registry holds the workloads; the commands for load, run and check
	// are made from it.
	Registry *workload.Registry
	// Drivers open the database targets.
	Drivers []target.Driver
	// Signals delivers interrupts (SIGINT, SIGTERM); nil means none.
	Signals <-chan os.Signal
	// Exit ends the process at once (second interrupt).
	Exit func(code int)
}

// NewOSState wires State to the real process, with the workloads and
// database targets main registers.
func NewOSState(reg *workload.Registry, drivers []target.Driver) *State {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	return &State{
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Getenv:    os.Getenv,
		LookupEnv: os.LookupEnv,
		Environ:   os.Environ,
		StderrTTY: isatty.IsTerminal(os.Stderr.Fd()),
		Redactor:  redact.New(),
		Registry:  reg,
		Drivers:   drivers,
		Signals:   sig,
		Exit:      os.Exit,
	}
}

// interruptible returns a context cancelled by the first interrupt; a second
// interrupt exits the process at once with the interrupted exit code.
func (s *State) interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	if s.Signals == nil {
		return ctx, cancel
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-s.Signals:
		case <-done:
			return
		}
		s.eprintf("\ninterrupted: stopping, finishing in-flight work and saving results (press Ctrl-C again to exit at once)\n")
		cancel()
		select {
		case <-s.Signals:
			s.eprintf("second interrupt: exiting now\n")
			s.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

func (s *State) printf(format string, a ...any) {
	fmt.Fprint(s.Stdout, s.Redactor.String(fmt.Sprintf(format, a...)))
}

func (s *State) eprintf(format string, a ...any) {
	fmt.Fprint(s.Stderr, s.Redactor.String(fmt.Sprintf(format, a...)))
}

// runOutput is where a run's own output goes (workload.RunEnv's Stdout
// and Stderr: a pgbench script's debug() and \shell output): stdout and
// stderr, a whole line per write, through the redactor. flush writes what
// is left of an unfinished line.
func (s *State) runOutput() (stdout, stderr io.Writer, flush func()) {
	o := &lineWriter{w: s.Stdout, r: s.Redactor}
	e := &lineWriter{w: s.Stderr, r: s.Redactor}
	return o, e, func() { o.flush(); e.flush() }
}

// lineWriter writes whole lines to w, redacted, for writers on several
// goroutines (the clients of a run).
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	r   *redact.Redactor
	buf []byte
}

// lineWriterMax is the longest line kept whole: a longer one is written
// in pieces.
const lineWriterMax = 64 << 10

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) < lineWriterMax {
				return len(p), nil
			}
			i = len(l.buf) - 1
		}
		_, err := io.WriteString(l.w, l.r.String(string(l.buf[:i+1])))
		l.buf = l.buf[:copy(l.buf, l.buf[i+1:])]
		if err != nil {
			return len(p), err
		}
	}
}

func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		_, _ = io.WriteString(l.w, l.r.String(string(l.buf)))
		l.buf = l.buf[:0]
	}
}

// note writes one line on stderr.
func (s *State) note(format string, a ...any) { s.eprintf(format+"\n", a...) }

// drivers are the target drivers.
func (s *State) drivers() []target.Driver { return s.Drivers }

func buildVersion() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		v += " (" + bi.GoVersion + ")"
	}
	return v
}
