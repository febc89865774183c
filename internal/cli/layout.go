package cli

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
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
	for _, name := range f.Names() {
		l := f.Layouts[name]
		s.printf("%s: %s\n", name, describeLayout(l))
		for w := l.WAL; w != nil; w = nil {
			s.printf("  wal: %s\n", describeLayout(w))
		}
		for _, each := range []*layout.Layout{l, l.WAL} {
			if each == nil {
				continue
			}
			if err := layout.Installed(each); err != nil {
				problems = append(problems, err)
				s.printf("  NOT READY: %s (fix: %s)\n", err, errs.HintOf(err))
			}
			for _, d := range each.Devices {
				if err := layout.SafeDevice(d); err != nil {
					problems = append(problems, err)
					s.printf("  REFUSED: %s (fix: %s)\n", err, errs.HintOf(err))
				} else {
					s.printf("  %s: a block device not in use (erased only with --allow-destroy)\n", d)
				}
			}
		}
		if dryRun {
			cmds, err := layout.Plan(ctx, l, layout.Options{WorkDir: workDir})
			for _, c := range cmds {
				s.printf("  $ %s\n", c)
			}
			if err != nil {
				problems = append(problems, err)
			}
		}
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindOf(problems[0]), problems[0], "", "%d problem(s) in %s", len(problems), path)
	}
	s.printf("%d layout(s) in %s are valid\n", len(f.Layouts), path)
	return nil
}

// describeLayout says what a layout makes, in one line.
func describeLayout(l *layout.Layout) string {
	var b strings.Builder
	b.WriteString(l.Filesystem)
	if len(l.Devices) > 0 {
		b.WriteString(" on " + strings.Join(l.Devices, " + "))
	} else {
		b.WriteString(" on a " + human.Bytes(l.LoopSize) + " loop file")
	}
	if len(l.Mkfs) > 0 {
		b.WriteString(", mkfs " + strings.Join(l.Mkfs, " "))
	}
	if len(l.Mount) > 0 {
		b.WriteString(", mount " + strings.Join(l.Mount, ","))
	}
	if l.Readahead > 0 {
		b.WriteString(", readahead " + human.Bytes(l.Readahead))
	}
	if l.Scheduler != "" {
		b.WriteString(", scheduler " + l.Scheduler)
	}
	if l.Reuse {
		b.WriteString(", reused across a configuration's runs")
	}
	return b.String()
}
