package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
)

func newCheckTPCCCmd(s *State) *cobra.Command {
	var cf connFlags
	var o tpcc.CheckOptions
	cmd := &cobra.Command{
		Use:   "tpcc [--expensive | --all | --conditions 1,2,...]",
		Short: "Check the TPC-C consistency conditions (clause 3.3.2)",
		Long: `Evaluates the TPC-C consistency conditions in one repeatable-read snapshot and
prints one line per condition with the number of violations and the first keys.
Every condition is evaluated even when an earlier one fails.

By default conditions 1-5 and 7-9 (cheap: per warehouse and district sums, new
orders and delivery dates); --expensive adds 6, 10 and 12 (per order and per
customer joins over order_line); --all checks all twelve, including 11 (orders
minus new orders = 2,100 per district), which only holds right after a load: the
first Delivery breaks it. Exit code 5 when a condition fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := o.Selected(); err != nil {
				return err
			}
			t, _, err := cf.target(s)
			if err != nil {
				return err
			}
			conn, err := t.Connect(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close(cmd.Context())
			info, err := tpcc.ReadInfo(cmd.Context(), conn)
			if err != nil {
				return err
			}
			s.eprintf("checking tpcc (%s) in %s\n", tpccPlural(info.Warehouses, "warehouse"), t.Describe())
			rep, err := tpcc.Check(cmd.Context(), conn, o)
			if err != nil {
				return err
			}
			printTPCCCheck(s, rep)
			if !rep.Passed {
				return errs.New(errs.KindCheckFailed, "look for errors in the runs since the load, or reload with `tunebench load tpcc --drop`",
					"tpcc consistency check failed: condition %s", tpccJoinInts(rep.Failed()))
			}
			return nil
		},
	}
	f := cmd.Flags()
	cf.add(f)
	f.BoolVar(&o.Expensive, "expensive", false, "also check conditions 6, 10 and 12")
	f.BoolVar(&o.All, "all", false, "check all twelve conditions (11 holds only right after a load)")
	f.IntSliceVar(&o.Conditions, "conditions", nil, "check exactly these conditions (1-12)")
	return cmd
}

// printTPCCCheck prints one line per condition, then the total.
func printTPCCCheck(s *State, rep tpcc.CheckReport) {
	for _, c := range rep.Conditions {
		mark := "PASS"
		if !c.Passed {
			mark = "FAIL"
		}
		detail := ""
		switch {
		case c.Error != "":
			detail = "  error: " + c.Error
		case c.Violations > 0:
			detail = fmt.Sprintf("  %d %s violate it, e.g. %s", c.Violations, c.Unit, strings.Join(c.Examples, "; "))
		}
		s.printf("  %s %2d %-10s %-66s %6.2f s%s\n", mark, c.Number, "("+c.Clause+")", c.Name, c.Seconds, detail)
	}
	verdict := "all passed"
	if !rep.Passed {
		verdict = "FAILED: condition " + tpccJoinInts(rep.Failed())
	}
	s.printf("  %d conditions in %.2f s: %s\n", len(rep.Conditions), rep.Seconds, verdict)
}

func tpccJoinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
