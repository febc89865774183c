package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
)

// CommandRestarter restarts a server tunebench does not manage (one on
// another machine) with a command the user gave (`--restart-command`,
// `restart_command:`), e.g. `ssh db1 sudo systemctl restart postgresql`.
// It runs the command with sh -c, waits until the server accepts
// connections again, and checks that it did restart.
type CommandRestarter struct {
	Command string
	Connect Connector
	Log     io.Writer
	// Timeout bounds the command and the wait after it (0: RestartTimeout).
	Timeout time.Duration
}

// RestartTimeout is how long a restart command and the server's return
// may take together by default (target.DefaultRestartTimeout).
const RestartTimeout = 5 * time.Minute

// Restart runs the command (mode is the managed server's pg_ctl mode and
// does not apply: the command says how) and waits for the server.
func (c *CommandRestarter) Restart(ctx context.Context, _ string) error {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = RestartTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	before, err := c.startTime(ctx)
	if err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "reading the server's start time before its restart")
	}
	if c.Log != nil {
		fmt.Fprintf(c.Log, "restarting the server (at most %s): %s\n", timeout, c.Command)
	}
	var out bytes.Buffer
	// On timeout or interrupt the shell and what it started end.
	cmd := proc.Shell(ctx, c.Command)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second
	started := time.Now()
	stop := c.showWait(started, timeout)
	err = cmd.Run()
	stop()
	if err != nil {
		took := time.Since(started).Round(100 * time.Millisecond)
		switch {
		case errors.Is(parent.Err(), context.Canceled):
			return errs.Wrap(errs.KindInterrupted, parent.Err(), "", "interrupted while the restart command ran (%s): %s", took, c.Command)
		case parent.Err() != nil:
			return errs.New(errs.KindEnvironment, "run the command by hand to see how long it takes; the restore of the settings waits "+RestoreBudget(c).String()+" for it",
				"gave up the restart command after %s (the time for the whole restore ran out): %s%s", took, c.Command, outputLines(out.String()))
		case ctx.Err() != nil:
			return errs.New(errs.KindEnvironment,
				fmt.Sprintf("the command itself hung: run it by hand and see where it waits (a password or host-key prompt: use ssh -o BatchMode=yes and a key); if a restart really takes longer, raise --restart-timeout (target.restart_timeout in an experiment), now %s", timeout),
				"the restart command did not return within %s and was stopped (timed out): %s%s", timeout, c.Command, outputLines(out.String()))
		}
		return errs.Wrap(errs.KindEnvironment, err, "run the command by hand to see what it needs; it must restart the server and return",
			"the restart command failed after %s: %s%s", took, c.Command, outputLines(out.String()))
	}
	var last error
	for {
		after, err := c.startTime(ctx)
		switch {
		case err == nil && after.After(before):
			return nil
		case err == nil:
			last = fmt.Errorf("the server still runs since %s", before.Format(time.RFC3339))
		default:
			last = err
		}
		select {
		case <-ctx.Done():
			if errors.Is(parent.Err(), context.Canceled) {
				return errs.Wrap(errs.KindInterrupted, parent.Err(), "", "interrupted while waiting for the server after the restart command %q", c.Command)
			}
			return errs.Wrap(errs.KindConnect, last, "check the command: it must restart the server this target connects to (pg_postmaster_start_time() changes)",
				"the server did not come back restarted within %s of the restart command %q", timeout, c.Command)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RestoreBudget is how long a restore of settings may take that restarts
// the server with r: its restart's own limit and a minute for the rest,
// at least 2 minutes.
func RestoreBudget(r Restarter) time.Duration {
	budget := 2 * time.Minute
	if c, ok := r.(*CommandRestarter); ok {
		t := c.Timeout
		if t == 0 {
			t = RestartTimeout
		}
		budget = max(budget, t+time.Minute)
	}
	return budget
}

// outputLines is the command's last lines of output on lines of their
// own ("" for none).
func outputLines(out string) string {
	if l := strings.TrimSpace(lastLines(out, 10)); l != "" {
		return "\n" + l
	}
	return ""
}

// restartWaitEvery is how often a restart command that has not returned
// is said to be waited for.
var restartWaitEvery = 10 * time.Second

// showWait says, every restartWaitEvery until stop is called, how long
// the command has run and when it will be given up.
func (c *CommandRestarter) showWait(started time.Time, timeout time.Duration) (stop func()) {
	if c.Log == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(restartWaitEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(c.Log, "restarting the server: the command has run %s, given up at %s: %s\n",
					time.Since(started).Round(time.Second), timeout, c.Command)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// startTime reads pg_postmaster_start_time() on a new connection.
func (c *CommandRestarter) startTime(ctx context.Context) (time.Time, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := c.Connect(cctx)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var t time.Time
	err = conn.QueryRow(cctx, "SELECT pg_postmaster_start_time()").Scan(&t)
	return t, err
}

// ValidRestartCommand checks a restart command's syntax (not empty, one line).
func ValidRestartCommand(cmd string) error {
	if strings.TrimSpace(cmd) == "" || strings.ContainsAny(cmd, "\n\r") {
		return errs.Usage("give one shell command line that restarts the server, e.g. --restart-command 'ssh db1 sudo systemctl restart postgresql'",
			"bad restart command %q", cmd)
	}
	return nil
}
