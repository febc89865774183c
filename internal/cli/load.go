package cli

import (
	"runtime"

	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

func newLoadCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load WORKLOAD",
		Short: "Build a workload's schema and data",
	}
	cmd.AddCommand(newLoadTPCBCmd(s))
	cmd.AddCommand(newLoadTPCCCmd(s))
	return cmd
}

func newLoadTPCBCmd(s *State) *cobra.Command {
	var cf connFlags
	o := tpcb.LoadOptions{Workers: runtime.NumCPU()}
	cmd := &cobra.Command{
		Use:   "tpcb --scale N [--fillfactor F] [--partitions P] [--load-workers K] [--drop]",
		Short: "Load the pgbench-compatible TPC-B-like tables (100,000 accounts per scale unit)",
		Long: `Creates pgbench_branches, pgbench_tellers, pgbench_accounts and pgbench_history
with pgbench's columns and sizes, loads them with COPY (accounts over several
parallel streams), runs VACUUM ANALYZE and builds the primary keys after the data,
as pgbench -i does. Existing tables are only replaced with --drop.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			t, _, err := cf.target(s)
			if err != nil {
				return err
			}
			bar := newLoadBar(s)
			s.eprintf("loading tpcb scale %d into %s with %d COPY streams\n", o.Scale, t.Describe(), o.Workers)
			st, err := tpcb.Load(cmd.Context(), connector(t), o, func(p tpcb.LoadProgress) {
				bar.update(p.Phase, p.Rows, p.TotalRows, p.Elapsed, p.Phase == "done")
			})
			if err != nil {
				if cmd.Context().Err() != nil {
					return errs.Wrap(errs.KindInterrupted, err, "load again with --drop", "load interrupted; the tables are incomplete and marked so")
				}
				return err
			}
			s.printf("done in %.2f s (drop %.2f s, create %.2f s, generate %.2f s, vacuum %.2f s, primary keys %.2f s); %d rows, %s rows/s\n",
				st.Total.Seconds(), st.Drop.Seconds(), st.Create.Seconds(), st.Generate.Seconds(), st.Vacuum.Seconds(), st.PrimaryKeys.Seconds(),
				st.Rows, human(float64(st.Rows)/st.Total.Seconds()))
			return nil
		},
	}
	f := cmd.Flags()
	cf.add(f)
	f.IntVarP(&o.Scale, "scale", "s", 1, "scale factor: 100,000 accounts, 10 tellers, 1 branch per unit")
	f.IntVar(&o.Fillfactor, "fillfactor", 100, "fill factor of accounts, tellers and branches (10-100)")
	f.IntVar(&o.Partitions, "partitions", 0, "partition pgbench_accounts into this many partitions (0 = none)")
	f.StringVar(&o.Method, "partition-method", "range", "partition method: range or hash")
	f.IntVar(&o.Workers, "load-workers", o.Workers, "parallel COPY streams for pgbench_accounts")
	f.BoolVar(&o.Drop, "drop", false, "drop existing pgbench tables first (their data is lost)")
	return cmd
}
