package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// The load, run and check commands are made from the registry: one
// subcommand per workload with the capability, its flags from the
// workload's options. Nothing here knows a workload.

func newLoadCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{Use: "load WORKLOAD", Short: "Build a workload's schema and data"}
	for _, w := range s.Registry.All() {
		if l, ok := w.(workload.Loader); ok {
			cmd.AddCommand(loadCommand(s, l))
		}
	}
	return cmd
}

func newRunCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{Use: "run WORKLOAD", Short: "Run a workload and store the result"}
	for _, w := range s.Registry.All() {
		if r, ok := w.(workload.Runner); ok {
			cmd.AddCommand(runCommand(s, r, w.Meta().Name))
		}
	}
	return cmd
}

func newCheckCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{Use: "check WORKLOAD", Short: "Run a workload's consistency checks"}
	for _, w := range s.Registry.All() {
		if c, ok := w.(workload.Checker); ok {
			cmd.AddCommand(checkCommand(s, c))
		}
	}
	return cmd
}

// workloadCommands are the workloads' own top-level commands
// (`tunebench storage` runs the storage workload).
func workloadCommands(s *State) []*cobra.Command {
	var out []*cobra.Command
	for _, w := range s.Registry.All() {
		if r, ok := w.(workload.Runner); ok && w.Meta().Command != "" {
			cmd := runCommand(s, r, w.Meta().Command)
			if w.Meta().Layouts {
				cmd.AddCommand(newLayoutCmd(s))
			}
			out = append(out, cmd)
		}
	}
	return out
}

func helpCommand(name string, h workload.Help) *cobra.Command {
	use := name
	if h.Use != "" {
		use += " " + h.Use
	}
	return &cobra.Command{Use: use, Short: h.Short, Long: h.Long, Example: h.Example, Args: cobra.NoArgs}
}

// openTarget opens the database a command's connection flags name (no
// connection is made yet) and checks the workload speaks its dialect.
func (s *State) openTarget(ctx context.Context, w workload.Workload, cf *connFlags) (target.Target, error) {
	t, err := target.Open(ctx, s.drivers(), target.Spec{DSN: cf.dsn, ServerDir: cf.serverDir, Database: cf.database,
		RestartCommand: cf.restartCommand, RestartTimeout: cf.restartTimeout, Getenv: s.Getenv, Redactor: s.Redactor, Log: s.Stderr})
	if err != nil {
		return nil, err
	}
	if d := w.Meta().Dialects; !target.Speaks(d, t) {
		return nil, errs.Usage("run it on a target of one of those databases", "workload %s speaks %v; %s is %s", w.Meta().Name, d, t.Describe(), t.Dialect())
	}
	return t, nil
}

func loadCommand(s *State, l workload.Loader) *cobra.Command {
	var cf connFlags
	cmd := helpCommand(l.Meta().Name, l.LoadHelp())
	cf.add(cmd.Flags())
	of := bindOptions(cmd.Flags(), l, option.PhaseLoad)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, given, err := of.values()
		if err != nil {
			return err
		}
		t, err := s.openTarget(cmd.Context(), l, &cf)
		if err != nil {
			return err
		}
		bar := newLoadBar(s)
		rep, err := l.Load(cmd.Context(), &workload.LoadEnv{Target: t, Options: v, Given: given, Version: Version,
			Progress: bar.update, Note: s.note})
		if err != nil {
			return err
		}
		s.printBlocks(rep.Blocks)
		return nil
	}
	return cmd
}

func checkCommand(s *State, c workload.Checker) *cobra.Command {
	var cf connFlags
	cmd := helpCommand(c.Meta().Name, c.CheckHelp())
	cf.add(cmd.Flags())
	of := bindOptions(cmd.Flags(), c, option.PhaseCheck)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, _, err := of.values()
		if err != nil {
			return err
		}
		t, err := s.openTarget(cmd.Context(), c, &cf)
		if err != nil {
			return err
		}
		rep, err := c.Check(cmd.Context(), &workload.CheckEnv{Target: t, Options: v, Note: s.note})
		if err != nil {
			return err
		}
		s.printBlocks(rep.Blocks)
		if f := rep.Failed; f != nil {
			msg := f.What + " failed"
			if f.Detail != "" {
				msg += ": " + f.Detail
			}
			return errs.New(errs.KindCheckFailed, f.Hint, "%s", msg)
		}
		return nil
	}
	return cmd
}

func runCommand(s *State, r workload.Runner, name string) *cobra.Command {
	var rf runFlags
	cmd := helpCommand(name, r.RunHelp())
	addRunFlags(cmd, r, &rf)
	of := bindOptions(cmd.Flags(), r, option.PhaseRun)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, _, err := of.values()
		if err != nil {
			return err
		}
		return s.runWorkload(cmd, r, v, &rf)
	}
	return cmd
}
