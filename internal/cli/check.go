package cli

import (
	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

func newCheckCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check WORKLOAD",
		Short: "Run a workload's consistency checks",
	}
	cmd.AddCommand(newCheckTPCBCmd(s))
	cmd.AddCommand(newCheckTPCCCmd(s))
	return cmd
}

func newCheckTPCBCmd(s *State) *cobra.Command {
	var cf connFlags
	cmd := &cobra.Command{
		Use:   "tpcb",
		Short: "Check balances and the history growth of the last run",
		Long: `In one repeatable-read snapshot: sum(abalance) = sum(tbalance) = sum(bbalance)
= sum(pgbench_history.delta), and the rows added to pgbench_history since the last
tunebench run started equal the writing transactions it committed (up to its
ambiguous commits). Exit code 5 when a condition fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, _, err := cf.target(s)
			if err != nil {
				return err
			}
			conn, err := t.Connect(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close(cmd.Context())
			if _, err := tpcb.ReadInfo(cmd.Context(), conn); err != nil {
				return errs.Usage("load it with `tunebench load tpcb --scale N`", "database %s: %v", t.Describe(), err)
			}
			rep, err := tpcb.Check(cmd.Context(), conn)
			if err != nil {
				return err
			}
			printCheck(s, rep)
			if !rep.Passed {
				return errs.New(errs.KindCheckFailed, "look for errors in the run, or reload with `tunebench load tpcb --drop`", "tpcb consistency check failed")
			}
			return nil
		},
	}
	cf.add(cmd.Flags())
	return cmd
}

func printCheck(s *State, rep tpcb.CheckReport) {
	for _, c := range rep.Conditions {
		mark := "PASS"
		switch {
		case c.Skipped:
			mark = "SKIP"
		case !c.Passed:
			mark = "FAIL"
		}
		s.printf("  %-4s %-15s %s (%.2f s)\n", mark, c.Name, c.Detail, c.Seconds)
	}
}
