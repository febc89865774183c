package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
)

func newServerCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Manage a PostgreSQL server that tunebench runs itself",
		Long: `A managed PostgreSQL lives in one directory: its data, log, state and a
password file. It listens on 127.0.0.1 (and --listen ADDR). When tunebench runs as root, the
server runs as an unprivileged user (postgres, or --run-as USER).`,
	}
	cmd.AddCommand(newServerStartCmd(s), newServerStopCmd(s), newServerStatusCmd(s), newServerEnvCmd(s))
	return cmd
}

func newServerStartCmd(s *State) *cobra.Command {
	var o server.Options
	var sets []string
	cmd := &cobra.Command{
		Use:   "start --dir D [--port P] [--pg-bin DIR] [--set name=value ...]",
		Short: "Create (initdb) if needed and start a managed PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Dir == "" {
				return errs.Usage("give the server directory with --dir", "--dir is required")
			}
			for _, kv := range sets {
				st, err := server.ParseSetting(kv)
				if err != nil {
					return err
				}
				o.Settings = append(o.Settings, st)
			}
			o.Log = s.Stderr
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			srv, err := server.Start(ctx, o)
			if err != nil {
				return err
			}
			s.Redactor.AddSecret(srv.Password())
			s.printf("PostgreSQL %s running on 127.0.0.1:%d (data %s)\n", srv.Binaries().Version, srv.Port(), srv.Dir())
			s.printf("DSN: %s\n", srv.DSN())
			s.printf("use it: tunebench load tpcb --server-dir %s --scale 10, or eval \"$(tunebench server env --dir %s)\"\n", srv.Dir(), srv.Dir())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "server directory (created if missing)")
	f.IntVar(&o.Port, "port", 0, "TCP port on 127.0.0.1 (default: a free one)")
	f.StringVar(&o.Listen, "listen", "", "an IP address of this machine to listen on too, for drivers on other machines (pg_hba: samenet, password)")
	f.StringVar(&o.PGBin, "pg-bin", "", "directory with initdb, pg_ctl and postgres (default: pg_config, PATH, /usr/lib/postgresql/*/bin)")
	f.StringVar(&o.RunAs, "run-as", "", "OS user to run PostgreSQL as when tunebench runs as root (default: postgres)")
	f.StringArrayVar(&sets, "set", nil, "server setting name=value, applied with ALTER SYSTEM and verified (repeatable)")
	return cmd
}

func newServerStopCmd(s *State) *cobra.Command {
	var dir, mode string
	cmd := &cobra.Command{
		Use:   "stop --dir D [--mode fast]",
		Short: "Stop a managed PostgreSQL (restoring settings tunebench applied)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mode != "smart" && mode != "fast" && mode != "immediate" {
				return errs.Usage("--mode is smart, fast or immediate", "invalid mode %q", mode)
			}
			srv, err := openManaged(dir)
			if err != nil {
				return err
			}
			held := srv.AppliedSettings()
			if err := srv.Stop(cmd.Context(), mode); err != nil {
				return err
			}
			if mode != "immediate" && len(held) > 0 {
				s.printf("restored %s\n", server.Describe(held))
			}
			s.printf("stopped %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "server directory")
	cmd.Flags().StringVar(&mode, "mode", "fast", "shutdown mode: smart, fast or immediate")
	return cmd
}

func newServerStatusCmd(s *State) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status --dir D",
		Short: "Show whether a managed PostgreSQL is running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := openManaged(dir)
			if err != nil {
				return err
			}
			st, err := srv.Status(cmd.Context())
			if err != nil {
				return err
			}
			if !st.Running {
				s.printf("stopped (data %s)\n", st.DataDir)
				return errs.New(errs.KindConnect, "start it with `tunebench server start --dir "+dir+"`", "server in %s is not running", dir)
			}
			s.printf("running: PostgreSQL %s, pid %d, 127.0.0.1:%d, data %s\nDSN: %s\n", st.Version, st.PID, st.Port, st.DataDir, st.DSN)
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
		Short: "Print export lines for psql, pgbench and tunebench (eval \"$(tunebench server env --dir D)\")",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := openManaged(dir)
			if err != nil {
				return err
			}
			s.printf("export %s\n", strings.Join(shellQuoteAll(srv.Env()), " "))
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

// openManaged opens the managed server directory given with --dir.
func openManaged(dir string) (*server.Server, error) {
	if dir == "" {
		return nil, errs.Usage("give the server directory with --dir", "--dir is required")
	}
	return server.Open(dir)
}
