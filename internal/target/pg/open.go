package pg

import (
	"context"
	"os"
	"path/filepath"

	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/target"
)

// Open opens the target a spec names: a connection string (--dsn, else the
// PG* variables and $TUNEBENCH_DSN), a managed server's directory
// (--server-dir), or a managed server to start or attach to (experiments).
func (Driver) Open(ctx context.Context, s target.Spec) (target.Target, error) {
	if err := (Driver{}).Check(s); err != nil {
		return nil, err
	}
	t, err := open(ctx, s)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Check parses a connection string given on the command line or in an
// experiment file: syntax, no password; and a restart command's.
func (Driver) Check(s target.Spec) error {
	switch {
	case s.RestartTimeout < 0:
		return errs.Usage("give --restart-timeout a positive duration, e.g. 10m", "--restart-timeout %s is negative", s.RestartTimeout)
	case s.RestartTimeout > 0 && s.RestartCommand == "":
		return errs.Usage("give --restart-command too, or drop --restart-timeout", "--restart-timeout bounds --restart-command, and there is none")
	}
	if s.RestartCommand != "" {
		if s.Managed != nil || s.ServerDir != "" {
			return errs.Usage("drop the restart command: tunebench restarts its managed server itself",
				"a restart command is for a server given by connection string, not a managed server")
		}
		if err := server.ValidRestartCommand(s.RestartCommand); err != nil {
			return err
		}
	}
	if s.DSN == "" || s.Managed != nil {
		return nil
	}
	_, err := pgdrv.ParseTarget(s.DSN, "", s.Redactor)
	return err
}

func open(ctx context.Context, s target.Spec) (*Target, error) {
	if s.Managed != nil {
		return openManaged(ctx, s)
	}
	t := &Target{owned: s.Own}
	dsn := s.DSN
	if s.ServerDir != "" {
		if s.DSN != "" {
			return nil, errs.Usage("give either --dsn or --server-dir", "--dsn and --server-dir both given")
		}
		srv, err := server.Open(s.ServerDir)
		if err != nil {
			return nil, err
		}
		if s.Log != nil {
			srv.SetLog(s.Log)
		}
		// Settings a killed run left changed are restored before anything else.
		if _, err := srv.RestoreLeftovers(ctx); err != nil {
			return nil, err
		}
		s.Redactor.AddSecret(srv.Password())
		t.srv, dsn = srv, srv.DSN()
	}
	envDSN := ""
	if s.Getenv != nil && s.ServerDir == "" {
		envDSN = s.Getenv(EnvDSN)
	}
	conn, err := pgdrv.ParseTarget(dsn, envDSN, s.Redactor)
	if err != nil {
		return nil, err
	}
	conn.StartupWait, conn.Log = pgdrv.DefaultStartupWait, s.Log
	t.conn = conn
	if s.Database != "" {
		t.conn = t.conn.WithDatabase(s.Database)
	}
	if s.RestartCommand != "" {
		t.restarter = &server.CommandRestarter{Command: s.RestartCommand, Connect: conn.ConnectStd, Log: s.Log, Timeout: s.RestartTimeout}
	}
	for _, db := range s.Avoid {
		if t.conn.Config.Database == db {
			return nil, errs.Usage("point the dsn at another database (e.g. dbname=postgres) or change target.database",
				"the dsn's database %s is the experiment's benchmark database; tunebench recreates that one", db)
		}
	}
	if len(s.Base) > 0 {
		if !s.Own {
			return nil, errs.New(errs.KindInternal, "", "base settings need a target that owns its settings")
		}
		if t.pending, err = server.Apply(ctx, t.conn.Connect, t.restarter, serverSettings(s.Base)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// openManaged attaches to the managed server in s.Managed.Dir when it runs,
// else starts it (initdb first when the directory is new); without a
// directory it makes a temporary one, removed by Close.
func openManaged(ctx context.Context, s target.Spec) (*Target, error) {
	m := s.Managed
	t := &Target{owned: true}
	base := serverSettings(s.Base)
	dir := m.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "tunebench-experiment-")
		if err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "set TMPDIR to a writable directory or give target.managed.dir", "cannot make a temporary directory")
		}
		// The server runs as an unprivileged user when we are root: it must enter it.
		if err := os.Chmod(d, 0o755); err != nil {
			os.RemoveAll(d)
			return nil, err
		}
		t.tempDir, dir = d, filepath.Join(d, "server")
	}
	if srv, err := server.Open(dir); err == nil {
		if st, err := srv.Status(ctx); err == nil && st.Running {
			if m.Wrap != nil {
				return nil, errs.Usage("stop it (tunebench server stop --dir "+dir+"): the experiment starts it inside the envelope",
					"the server in %s is running, so it cannot be put in a hardware envelope", dir)
			}
			if s.Log != nil {
				srv.SetLog(s.Log)
			}
			// A killed run or experiment (one being resumed) left these.
			if _, err := srv.RestoreLeftovers(ctx); err != nil {
				return nil, err
			}
			if held := srv.AppliedSettings(); len(held) > 0 {
				hint := "wait for that process to end, or stop the server (tunebench server stop --dir " + dir + " restores them), then run the experiment"
				for _, a := range held {
					if a.Holder == nil {
						hint = "stop the server (tunebench server stop --dir " + dir + " restores them) and let the experiment start it, or put the settings in target.settings"
					}
				}
				return nil, errs.Usage(hint, "the server in %s runs with settings tunebench changed and has not restored: %s", dir, server.Describe(held))
			}
			t.srv = srv
		}
	}
	if t.srv != nil {
		s.Redactor.AddSecret(t.srv.Password())
		if s.Log != nil {
			t.srv.SetLog(s.Log)
		}
		if len(base) > 0 {
			if _, err := t.srv.Apply(ctx, base); err != nil {
				return nil, err
			}
		}
	} else {
		srv, err := server.Start(ctx, server.Options{Dir: dir, Port: m.Port, PGBin: m.PGBin, RunAs: m.RunAs, Config: base, Log: s.Log, WALDir: m.WALDir, Wrap: m.Wrap})
		if err != nil {
			if t.tempDir != "" {
				os.RemoveAll(t.tempDir)
			}
			return nil, err
		}
		t.srv, t.started = srv, true
		s.Redactor.AddSecret(srv.Password())
	}
	conn, err := pgdrv.ParseTarget(t.srv.DSN(), "", s.Redactor)
	if err != nil {
		t.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	conn.StartupWait, conn.Log = pgdrv.DefaultStartupWait, s.Log
	t.conn = conn
	if s.Database != "" {
		t.conn = t.conn.WithDatabase(s.Database)
	}
	return t, nil
}

func serverSettings(in []target.Setting) []server.Setting {
	out := make([]server.Setting, len(in))
	for i, s := range in {
		out[i] = server.Setting{Name: s.Name, Value: s.Value}
	}
	return out
}
