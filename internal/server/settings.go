package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

// Setting is one server parameter to set, as name=value.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s Setting) String() string { return s.Name + "=" + s.Value }

var settingNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// ValidName reports whether name is an acceptable setting name: lower case
// letters, digits and underscores, with at most one dot (extension settings).
func ValidName(name string) bool { return settingNameRe.MatchString(name) }

// ParseSetting parses "name=value". Setting names are case-insensitive in
// PostgreSQL, so the name is lowered; surrounding spaces are trimmed.
func ParseSetting(s string) (Setting, error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	value = strings.TrimSpace(value)
	if !ok || name == "" {
		return Setting{}, errs.Usage("write settings as name=value, e.g. work_mem=64MB",
			"bad setting %q: expected name=value", s)
	}
	if !ValidName(name) {
		return Setting{}, errs.Usage("setting names are letters, digits and underscores (one dot for extension settings), e.g. shared_buffers",
			"bad setting name %q", name)
	}
	if strings.ContainsAny(value, "\x00\n\r") {
		return Setting{}, errs.Usage("remove the control character from the value", "bad value for setting %s: contains a NUL or newline", name)
	}
	return Setting{Name: name, Value: value}, nil
}

// Restarter restarts a server, waiting until it accepts connections again.
type Restarter interface {
	Restart(ctx context.Context, mode string) error
}

// Connector opens a new superuser connection to the target.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// Applied records one setting changed with ALTER SYSTEM and how to undo it.
type Applied struct {
	Name          string `json:"name"`
	Previous      string `json:"previous"`                // current_setting() before the change
	Value         string `json:"value"`                   // the value asked for
	Effective     string `json:"effective"`               // current_setting() after the change
	Context       string `json:"context"`                 // pg_settings.context
	NeededRestart bool   `json:"needed_restart"`          // a restart was needed to make it effective
	HadAuto       bool   `json:"had_auto"`                // postgresql.auto.conf held a value before
	AutoPrevious  string `json:"auto_previous,omitempty"` // that value, restored instead of RESET
	// Holder is the process that restores it when it ends; nil: the
	// server's lifetime (restored when the server stops).
	Holder *Holder `json:"holder,omitempty"`
}

// Apply changes server settings with ALTER SYSTEM: it validates all settings
// first (name, type, enum, range, context), then sets each, reloads, restarts
// through r if any needs it, and verifies each one took effect. If anything
// fails midway it restores what it already changed. r may be nil when the
// target cannot be restarted; settings that need a restart are then refused.
func Apply(ctx context.Context, connect Connector, r Restarter, settings []Setting) ([]Applied, error) {
	return apply(ctx, connect, r, settings, applyOpts{})
}

// Check validates settings as Apply does before it changes anything (name,
// type, unit, range, enum, context) and, when mem > 0, the shared memory
// they need against mem bytes (the machine's memory). It changes nothing.
func Check(ctx context.Context, connect Connector, r Restarter, settings []Setting, mem int64) error {
	if len(settings) == 0 {
		return nil
	}
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	all, err := loadSettings(ctx, conn)
	if err != nil {
		return err
	}
	if _, err := validate(all, settings, r); err != nil {
		return err
	}
	return checkMemory(all, settings, mem)
}

// applyOpts are apply's options beyond the settings.
type applyOpts struct {
	// record is called with the changes so far before each one is made
	// and after all are verified, so that a caller can journal them
	// durably before anything else can fail.
	record func([]Applied) error
	mem    int64   // the machine's memory in bytes for checkMemory (0: unknown)
	holder *Holder // recorded in each Applied
}

// apply is Apply with options.
func apply(ctx context.Context, connect Connector, r Restarter, settings []Setting, o applyOpts) ([]Applied, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	record := o.record
	conn, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	closeConn := func() {
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Close(cctx)
			cancel()
			conn = nil
		}
	}
	defer closeConn()

	all, err := loadSettings(ctx, conn)
	if err != nil {
		return nil, err
	}
	infos, err := validate(all, settings, r)
	if err != nil {
		return nil, err
	}
	if err := checkMemory(all, settings, o.mem); err != nil {
		return nil, err
	}

	var done []Applied
	fail := func(cause error) ([]Applied, error) {
		closeConn()
		if len(done) == 0 {
			return nil, cause
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RestoreBudget(r))
		defer cancel()
		if rerr := Restore(rctx, connect, r, done); rerr != nil {
			return done, errors.Join(cause, errs.Wrap(errs.KindConnect, rerr,
				"check postgresql.auto.conf in the data directory", "restoring the settings already changed also failed"))
		}
		return nil, cause
	}

	for i, s := range settings {
		si := infos[i]
		a := Applied{Name: s.Name, Value: s.Value, Context: si.Context, Holder: o.holder}
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", s.Name).Scan(&a.Previous); err != nil {
			return fail(errs.Wrap(errs.KindConnect, err, "", "reading %s", s.Name))
		}
		if a.AutoPrevious, a.HadAuto, err = autoValue(ctx, conn, s.Name); err != nil {
			return fail(err)
		}
		stmt, err := alterSystemSQL(ctx, conn, s.Name, s.Value)
		if err != nil {
			return fail(err)
		}
		// Journal the change before making it: a process killed right
		// after the ALTER SYSTEM leaves a record to restore from (restoring
		// a change that was not made is harmless: it writes what is there).
		done = append(done, a)
		if record != nil {
			if err := record(done); err != nil {
				return fail(err)
			}
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return fail(errs.New(errs.KindUsage, "check the value against the PostgreSQL documentation for "+s.Name,
					"cannot set %s to %q: %s", s.Name, redact.SettingValue(s.Name, s.Value), scrub(s.Name, s.Value, pgMessage(err))))
			}
			return fail(errs.Wrap(errs.KindConnect, err, "", "ALTER SYSTEM SET %s", s.Name))
		}
	}

	if err := reload(ctx, conn); err != nil {
		return fail(err)
	}
	names := make([]string, len(settings))
	for i, s := range settings {
		names[i] = s.Name
	}
	pending, err := pendingRestart(ctx, conn, names)
	if err != nil {
		return fail(err)
	}
	needRestart := len(pending) > 0
	for _, si := range infos {
		if si.Context == "postmaster" {
			needRestart = true
		}
	}
	if needRestart {
		if r == nil {
			return fail(errs.Usage("give the command that restarts this server with --restart-command (restart_command: in an experiment's target), or restart it yourself",
				"settings %s need a server restart, which tunebench cannot do for this target", strings.Join(pending, ", ")))
		}
		pendingSet := map[string]bool{}
		for _, p := range pending {
			pendingSet[p] = true
		}
		for i := range done {
			if pendingSet[done[i].Name] || done[i].Context == "postmaster" {
				done[i].NeededRestart = true
			}
		}
		closeConn()
		if err := r.Restart(ctx, "fast"); err != nil {
			return fail(restartError(err, "restarting the server to apply %s", strings.Join(names, ", ")))
		}
	}

	// Verify on a new session: backend-context settings only show there.
	closeConn()
	if conn, err = connect(ctx); err != nil {
		return fail(err)
	}
	if err := verify(ctx, conn, done); err != nil {
		return fail(err)
	}
	if record != nil {
		if err := record(done); err != nil {
			return fail(err)
		}
	}
	return done, nil
}

// verify checks that each applied setting is in effect: its postgresql.auto.conf
// entry is applied without error, no restart is pending, and it records the
// effective value in Effective.
func verify(ctx context.Context, conn *pgx.Conn, done []Applied) error {
	for i := range done {
		a := &done[i]
		var applied bool
		var fileErr *string
		err := conn.QueryRow(ctx, `SELECT applied, error FROM pg_file_settings
			WHERE lower(name) = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, a.Name).Scan(&applied, &fileErr)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.KindConnect, "check that nothing else rewrites postgresql.auto.conf",
				"setting %s is missing from postgresql.auto.conf after ALTER SYSTEM", a.Name)
		}
		if err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "verifying %s", a.Name)
		}
		var pending bool
		if err := conn.QueryRow(ctx, `SELECT current_setting($1), pending_restart FROM pg_settings WHERE lower(name) = $1`, a.Name).Scan(&a.Effective, &pending); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "verifying %s", a.Name)
		}
		if fileErr != nil {
			return errs.New(errs.KindUsage, "check the value", "setting %s=%s was not applied: %s", a.Name, a.Value, *fileErr)
		}
		if pending {
			return errs.New(errs.KindConnect, "restart the server", "setting %s=%s still waits for a server restart", a.Name, a.Value)
		}
		if !applied {
			return errs.New(errs.KindUsage, "a command-line option (-c) or another source may override postgresql.auto.conf",
				"setting %s=%s is written but not in effect (current value %s)", a.Name, a.Value, a.Effective)
		}
	}
	return nil
}

// Restore undoes applied settings: each goes back to its earlier
// postgresql.auto.conf value, or is RESET when there was none. It reloads and,
// when a restored setting needs it, restarts through r.
func Restore(ctx context.Context, connect Connector, r Restarter, applied []Applied) error {
	return restore(ctx, connect, r, applied, true)
}

// restore is Restore; with restart false it only rewrites and reloads
// (used right before stopping the server, which makes everything effective).
func restore(ctx context.Context, connect Connector, r Restarter, applied []Applied, restart bool) error {
	if len(applied) == 0 {
		return nil
	}
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	var problems []error
	names := make([]string, 0, len(applied))
	for i := len(applied) - 1; i >= 0; i-- {
		a := applied[i]
		names = append(names, a.Name)
		var stmt string
		if a.HadAuto {
			stmt, err = alterSystemSQL(ctx, conn, a.Name, a.AutoPrevious)
		} else {
			stmt, err = resetSQL(ctx, conn, a.Name)
		}
		if err == nil {
			_, err = conn.Exec(ctx, stmt)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %s", a.Name, pgMessage(err)))
		}
	}
	if err := reload(ctx, conn); err != nil {
		return errors.Join(append(problems, err)...)
	}
	if !restart {
		return errors.Join(problems...)
	}
	pending, err := pendingRestart(ctx, conn, names)
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	if len(pending) > 0 {
		if r == nil {
			return errors.Join(append(problems, errs.Usage("restart the server yourself",
				"restoring %s needs a server restart, which tunebench cannot do for this target", strings.Join(pending, ", ")))...)
		}
		_ = conn.Close(ctx)
		conn = nil
		if err := r.Restart(ctx, "fast"); err != nil {
			return errors.Join(append(problems, restartError(err, "restarting to restore %s", strings.Join(pending, ", ")))...)
		}
		if conn, err = connect(ctx); err != nil {
			return errors.Join(append(problems, err)...)
		}
		if pending, err = pendingRestart(ctx, conn, names); err != nil {
			return errors.Join(append(problems, err)...)
		}
		if len(pending) > 0 {
			problems = append(problems, errs.New(errs.KindConnect, "check the server log", "%s still wait for a restart after restoring", strings.Join(pending, ", ")))
		}
	}
	return errors.Join(problems...)
}

// restartError is a failed restart: the restarter's own kind and fix when
// it has them (a restart command that hung, an interrupt), else a
// connection error whose fix is the server's log.
func restartError(err error, format string, a ...any) error {
	kind, hint := errs.KindOf(err), errs.HintOf(err)
	if kind == errs.KindInternal {
		kind = errs.KindConnect
	}
	if hint == "" && kind == errs.KindConnect {
		hint = "check the server log"
	}
	return errs.Wrap(kind, err, hint, format, a...)
}
