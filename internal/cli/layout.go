package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/storage/layout"
)

func newLayoutCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Storage layouts: filesystems made on devices or loop files (docs/storage-lab.md)",
	}
	var dryRun bool
	var workDir string
	check := &cobra.Command{
		Use:   "check FILE [--dry-run]",
		Short: "Check the layouts of a file without touching anything; --dry-run prints every command they would run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkLayouts(cmd.Context(), s, args[0], dryRun, workDir)
		},
	}
	check.Flags().BoolVar(&dryRun, "dry-run", false, "print the commands provisioning and teardown would run")
	check.Flags().StringVar(&workDir, "work-dir", "WORKDIR", "the directory of loop files and mount points in the printed commands")
	cmd.AddCommand(check)
	return cmd
}

func checkLayouts(ctx context.Context, s *State, path string, dryRun bool, workDir string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "check the path", "reading %s", path)
	}
	f, err := layout.Parse(path, src)
	if err != nil {
		return err
	}
	var problems []error
	seen := map[string]bool{}
	// A problem counts once: the dry run's plan meets the ones the
	// machine check found.
	problem := func(err error) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			problems = append(problems, err)
		}
	}
	for _, name := range f.Names() {
		l := f.Layouts[name]
		s.printf("%s: %s\n", name, l.Describe())
		if l.WAL != nil {
			s.printf("  wal: %s\n", l.WAL.Describe())
		}
		for _, c := range layout.MachineCheck(l) {
			if c.Err != nil {
				problem(c.Err)
				s.printf("  %s: %s (fix: %s)\n", c.What, c.Err, errs.HintOf(c.Err))
			} else {
				s.printf("  %s\n", c.What)
			}
		}
		if dryRun {
			cmds, err := layout.Plan(ctx, l, layout.Options{WorkDir: workDir})
			for _, c := range cmds {
				s.printf("  $ %s\n", c)
			}
			if err != nil {
				problem(err)
			}
		}
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindOf(problems[0]), problems[0], "", "%d problem(s) in %s", len(problems), path)
	}
	s.printf("%d layout(s) in %s are valid\n", len(f.Layouts), path)
	return nil
}
