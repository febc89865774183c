package cli

import (
	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/report"
)

func newCompareCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var includeErrors bool
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs: throughput, latency per transaction type, ratio B/A",
		Long: `Print run B against run A: throughput, latency percentiles overall and per
transaction type, and the ratio B/A of each. When both runs belong to
experiments, the repetitions of their configurations (same x value, warm-up
runs left out) are compared too: the ratio of their medians with a bootstrap
95% confidence interval, "within noise" when the interval contains 1.0.
Repetitions with status errors for an outage, checks that could not run or no
transactions are left out unless --include-errors is given; interrupted and failed
runs never count.`,
		Example: `  tunebench compare 12 17`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := parseRunID(args[0])
			if err != nil {
				return err
			}
			b, err := parseRunID(args[1])
			if err != nil {
				return err
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			c, err := report.CompareRuns(cmd.Context(), st, s.Registry, a, b, report.CompareOptions{IncludeErrors: includeErrors})
			if err != nil {
				return err
			}
			return c.WriteText(s.Stdout)
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().BoolVar(&includeErrors, "include-errors", false, "count the repetitions with status errors for an outage, checks that could not run or no transactions")
	return cmd
}
