package cli

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

func newServerCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Manage a PostgreSQL or MariaDB server that tunebench runs itself",
		Long: `A managed server lives in one directory: its data, log, state and a password
file. It listens on 127.0.0.1 (a managed PostgreSQL also on --listen ADDR). When
tunebench runs as root, the server runs as an unprivileged user (postgres or mysql,
or --run-as USER). --engine chooses the database when the directory is made; the
other commands find it from the directory.`,
	}
	cmd.AddCommand(newServerStartCmd(s), newServerStopCmd(s), newServerStatusCmd(s), newServerEnvCmd(s))
	return cmd
}

// engines are the drivers that manage servers, by name.
func (s *State) engines() map[string]target.ServerManager {
	m := map[string]target.ServerManager{}
	for _, d := range s.drivers() {
		if sm, ok := d.(target.ServerManager); ok {
			m[sm.Name()] = sm
		}
	}
	return m
}

func engineNames(m map[string]target.ServerManager) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// managerOf is the manager of the server in dir.
func (s *State) managerOf(dir string) (target.ServerManager, error) {
	if dir == "" {
		return nil, errs.Usage("give the server directory with --dir", "--dir is required")
	}
	if m := target.ServerManagerFor(s.drivers(), dir); m != nil {
		return m, nil
	}
	abs, _ := filepath.Abs(dir)
	return nil, errs.Usage("create one with `tunebench server start --dir "+abs+"` (--engine mariadb for MariaDB), or give the directory used with server start",
		"%s is not a managed server's directory", abs)
}

func newServerStartCmd(s *State) *cobra.Command {
	var o target.ServerOptions
	var engine, pgBin string
	cmd := &cobra.Command{
		Use:   "start --dir D [--engine postgres|mariadb] [--port P] [--bin DIR] [--set name=value ...]",
		Short: "Create if needed and start a managed PostgreSQL (initdb) or MariaDB (mariadb-install-db)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Dir == "" {
				return errs.Usage("give the server directory with --dir", "--dir is required")
			}
			engines := s.engines()
			m := engines[engine]
			if m == nil {
				return errs.Usage("give --engine "+engineNames(engines), "unknown --engine %q", engine)
			}
			// An existing directory keeps its database; --engine names
			// the database of a new one.
			if have := target.ServerManagerFor(s.drivers(), o.Dir); have != nil {
				if have.Name() != m.Name() && cmd.Flags().Changed("engine") {
					return errs.Usage("leave --engine out, or give another --dir for a new "+m.Product(),
						"%s holds a managed %s, not %s", o.Dir, have.Product(), m.Product())
				}
				m = have
			} else if c, ok := m.(target.ManagedChecker); ok {
				if err := c.ManagedSupported(); err != nil {
					return err
				}
			}
			if pgBin != "" {
				o.Bin = pgBin
			}
			o.Log = s.Stderr
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			in, err := m.StartServer(ctx, o)
			if err != nil {
				return err
			}
			s.Redactor.AddSecret(in.Secret)
			if in.Restored != "" {
				s.printf("restored %s (left by a tunebench process that ended)\n", in.Restored)
			}
			s.printf("%s %s running on 127.0.0.1:%d (data %s)\n", m.Product(), in.Version, in.Port, in.Dir)
			s.printf("DSN: %s\n", in.DSN)
			s.printf("use it: tunebench load tpcb --server-dir %s --scale 10, or eval \"$(tunebench server env --dir %s)\"\n", o.Dir, o.Dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "server directory (created if missing)")
	f.StringVar(&engine, "engine", "postgres", "the database of a new server: postgres or mariadb")
	f.IntVar(&o.Port, "port", 0, "TCP port on 127.0.0.1 (default: a free one)")
	f.StringVar(&o.Listen, "listen", "", "PostgreSQL: an IP address of this machine to listen on too, for drivers on other machines (pg_hba: samenet, password)")
	f.StringVar(&o.Bin, "bin", "", "directory of the server's programs (PostgreSQL: initdb, pg_ctl, postgres; MariaDB: mariadbd, mariadb-install-db)")
	f.StringVar(&pgBin, "pg-bin", "", "the same as --bin, for PostgreSQL")
	f.StringVar(&o.RunAs, "run-as", "", "OS user to run the server as when tunebench runs as root (default: postgres, mysql)")
	f.StringArrayVar(&o.Settings, "set", nil, "PostgreSQL: server setting name=value, applied with ALTER SYSTEM and verified (repeatable)")
	return cmd
}

func newServerStopCmd(s *State) *cobra.Command {
	var dir, mode string
	cmd := &cobra.Command{
		Use:   "stop --dir D [--mode fast]",
		Short: "Stop a managed server (restoring settings tunebench applied)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := s.managerOf(dir)
			if err != nil {
				return err
			}
			restored, err := m.StopServer(cmd.Context(), dir, mode)
			if err != nil {
				return err
			}
			if restored != "" {
				s.printf("restored %s\n", restored)
			}
			s.printf("stopped %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "server directory")
	cmd.Flags().StringVar(&mode, "mode", "fast", "PostgreSQL's shutdown mode: smart, fast or immediate")
	return cmd
}

func newServerStatusCmd(s *State) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status --dir D",
		Short: "Show whether a managed server is running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := s.managerOf(dir)
			if err != nil {
				return err
			}
			st, err := m.ServerStatus(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if !st.Running {
				s.printf("stopped (data %s)\n", st.Dir)
				return errs.New(errs.KindConnect, "start it with `tunebench server start --dir "+dir+"`", "server in %s is not running", dir)
			}
			s.printf("running: %s %s, pid %d, 127.0.0.1:%d, data %s\nDSN: %s\n", m.Product(), st.Version, st.PID, st.Port, st.Dir, st.DSN)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "server directory")
	return cmd
}

func newServerEnvCmd(s *State) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "env --dir D",
		Short: "Print export lines for the database's client tools (eval \"$(tunebench server env --dir D)\")",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := s.managerOf(dir)
			if err != nil {
				return err
			}
			env, err := m.ServerEnv(dir)
			if err != nil {
				return err
			}
			s.printf("export %s\n", strings.Join(shellQuoteAll(env), " "))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "server directory")
	return cmd
}

// shellQuoteAll quotes the values of NAME=value pairs for a POSIX shell.
func shellQuoteAll(kvs []string) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(v, " \t'\"$`\\;&|<>()*?[]#~") {
			v = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		}
		out[i] = k + "=" + v
	}
	return out
}

// postgresSupported says whether a managed PostgreSQL can run here.
func (s *State) postgresSupported() error {
	if c, ok := s.engines()["postgres"].(target.ManagedChecker); ok {
		return c.ManagedSupported()
	}
	return errs.New(errs.KindInternal, "", "no PostgreSQL driver is registered")
}
