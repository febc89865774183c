package cli

import (
	"context"
	"errors"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload"
)

// Main runs the CLI and returns the process exit code.
func Main(s *State, args []string) int {
	root := newRoot(s)
	root.SetArgs(args)
	ctx, stop := s.interruptible(context.Background())
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var fe *flagError
	if errors.As(err, &fe) {
		err = errs.Usage("see --help for the flags", "%s", fe.msg)
	} else if errs.KindOf(err) == errs.KindInternal && isCobraUsage(err) {
		err = errs.Usage("see `tunebench --help`", "%s", err.Error())
	}
	s.printError(err)
	return errs.ExitCode(err)
}

type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

// isCobraUsage recognizes cobra's own argument errors.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires exactly", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

func (s *State) printError(err error) {
	kind := errs.KindOf(err)
	prefix := "error"
	if kind == errs.KindInterrupted {
		prefix = "interrupted"
	}
	s.eprintf("%s: %s\n", prefix, err.Error())
	if h := errs.HintOf(err); h != "" {
		s.eprintf("  fix: %s\n", h)
	}
}

func newRoot(s *State) *cobra.Command {
	root := &cobra.Command{
		Use:   "tunebench",
		Short: "A database and storage benchmarking lab in one binary",
		Long: `tunebench loads, runs, measures and checks database benchmarks, stores every
result with its environment, and reports on them.

Start with:
  tunebench quickstart                    the main job on a managed PostgreSQL it starts itself
  tunebench server start --dir D          a managed PostgreSQL in directory D
  tunebench load tpcb --scale 10          pgbench-compatible TPC-B-like schema and data
  tunebench run tpcb --clients 4 --duration 30s
  tunebench results list

Connections: --dsn "host=... port=... dbname=...", or --server-dir D for a managed
server, or the PG* environment variables and ~/.pgpass. Passwords are never taken
from the command line: use PGPASSWORD, a .pgpass file, or $TUNEBENCH_DSN.

Exit codes: 0 ok, 1 internal error, 2 bad usage or configuration, 3 cannot connect
or start the server, 4 run finished with errors over the threshold, 5 consistency
check failed, 6 missing dependency (binary, user), 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			restoreKernelLeftovers(s, cmd)
		},
	}
	root.SetOut(s.Stdout)
	root.SetErr(s.Stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &flagError{msg: c.CommandPath() + ": " + err.Error()}
	})
	root.AddCommand(
		newVersionCmd(s),
		newServerCmd(s),
		newLoadCmd(s),
		newRunCmd(s),
		newCheckCmd(s),
		newResultsCmd(s),
		newQuickstartCmd(s),
		newWorkloadsCmd(s),
		newExperimentCmd(s),
		newReportCmd(s), newCompareCmd(s),
		newKubeCmd(s),
	)
	root.AddCommand(workloadCommands(s)...)
	return root
}

func newVersionCmd(s *State) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s.printf("tunebench %s %s/%s\n", buildVersion(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

func newWorkloadsCmd(s *State) *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "workloads [NAME]",
		Short: "List the workloads and what each can do, or one workload's options",
		Long: `Without a name: each workload, what it can do (load, run, check, its own report
section) and what it is. With a name: its options, per command, as flags and as
experiment keys (docs/options.md has the same tables).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if markdown {
				s.printf("%s", optionsDoc(s.Registry))
				return nil
			}
			if len(args) == 1 {
				w, ok := s.Registry.Get(args[0])
				if !ok {
					return errs.Usage("`tunebench workloads` lists them", "no workload %q", args[0])
				}
				s.printf("%s", optionsMarkdown(w))
				return nil
			}
			t := newLeftTable(s)
			t.row("NAME", "CAN", "DESCRIPTION")
			for _, w := range s.Registry.All() {
				t.row(w.Meta().Name, strings.Join(workload.Capabilities(w), ", "), w.Meta().Description)
			}
			t.flush()
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print docs/options.md: every workload's options")
	_ = cmd.Flags().MarkHidden("markdown")
	return cmd
}
