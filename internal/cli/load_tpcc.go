package cli

import (
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
)

func newLoadTPCCCmd(s *State) *cobra.Command {
	var cf connFlags
	o := tpcc.LoadOptions{Workers: runtime.NumCPU(), Format: tpcc.FormatBinary}
	cmd := &cobra.Command{
		Use:   "tpcc --warehouses W [--load-workers K] [--partition] [--drop | --resume]",
		Short: "Load the TPC-C-like tables (nine tables, about 500,000 rows per warehouse)",
		Long: `Creates warehouse, district, customer, history, new_order, orders, order_line,
item and stock with exact numeric money columns, and fills them per the TPC-C
population rules (clause 4.3.3.1): 100,000 items; per warehouse 100,000 stock
rows, 10 districts, 30,000 customers (the first 1,000 last names per district in
order, the rest NURand with the load-time C), one history row per customer, 3,000
orders per district with the last 900 undelivered, 5 to 15 lines per order.

The data goes in over --load-workers connections with COPY (one transaction per
table, or per partition with --partition, that truncates it and copies with
FREEZE, so no VACUUM is needed); then the same connections build the primary keys
and indexes (different tables at once) and ANALYZE. The load constants (C-Load) and
the status are stored in tunebench_tpcc_meta: runs and checks refuse a load that
did not finish. An interrupted load is finished with --resume (the tables done
stay, the rest is redone); existing tables are only replaced with --drop.

--partition range-partitions customer, history, new_order, orders, order_line and
stock by warehouse: one partition per warehouse up to 64, then ranges of
warehouses.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Version = Version
			t, _, err := cf.target(s)
			if err != nil {
				return err
			}
			bar := newLoadBar(s)
			what := "loading tpcc"
			if o.Resume {
				what = "resuming the tpcc load"
			} else {
				what += " " + tpccPlural(o.Warehouses, "warehouse")
				if o.Partition {
					what += " (partitioned)"
				}
			}
			s.eprintf("%s into %s with %d connections\n", what, t.Describe(), o.Workers)
			var dataStart time.Duration = -1
			st, err := tpcc.Load(cmd.Context(), connector(t), o, func(p tpcc.LoadProgress) {
				if p.Phase == tpcc.PhaseData && dataStart < 0 {
					dataStart = p.Elapsed
				}
				what := p.Phase
				if p.Phase == tpcc.PhaseKeys || p.Phase == tpcc.PhaseAnalyze {
					what = fmt.Sprintf("%s, step %d of %d", p.Phase, p.StepsDone+1, p.Steps)
				}
				bar.updateFrac(what, p.Rows, loadFraction(p), p.Elapsed, loadETA(p, dataStart), p.Phase == tpcc.PhaseDone)
			})
			if err != nil {
				if cmd.Context().Err() != nil {
					return errs.Wrap(errs.KindInterrupted, err, "finish it with `tunebench load tpcc --resume`, or start over with --drop",
						"load interrupted; the finished tables are kept and the load is marked incomplete")
				}
				return err
			}
			if st.Complete {
				s.printf("the tpcc load of %s is already complete: nothing to resume\n", tpccPlural(st.Warehouses, "warehouse"))
				return nil
			}
			printTPCCLoad(s, st)
			return nil
		},
	}
	f := cmd.Flags()
	cf.add(f)
	f.IntVarP(&o.Warehouses, "warehouses", "w", 0, "warehouses to load (each about 500,000 rows, 100 MB with indexes)")
	f.IntVar(&o.Workers, "load-workers", o.Workers, "parallel connections for COPY, index builds and ANALYZE")
	f.BoolVar(&o.Partition, "partition", false, "range-partition the big per-warehouse tables by warehouse")
	f.BoolVar(&o.Drop, "drop", false, "drop existing tpcc tables first (their data is lost)")
	f.BoolVar(&o.Resume, "resume", false, "finish an interrupted load")
	f.Int64Var(&o.Seed, "seed", 0, "data generator seed (0 = from the clock; stored in tunebench_tpcc_meta)")
	f.StringVar(&o.Format, "copy-format", o.Format, "COPY format: binary or text")
	_ = f.MarkHidden("copy-format")
	return cmd
}

// tpccTailFactor estimates the keys and ANALYZE that follow the last COPY as
// a fraction of the data time (measured on 2 cores: 0.6 at 4 warehouses,
// 0.5 at 10).
const tpccTailFactor = 0.5

// loadFraction weighs the rows copied and the key and ANALYZE work done by
// their expected share of the time.
func loadFraction(p tpcc.LoadProgress) float64 {
	if p.Phase == tpcc.PhaseDone {
		return 1
	}
	var data, steps float64
	if p.TotalRows > 0 {
		data = float64(p.Rows) / float64(p.TotalRows)
	}
	if p.Work > 0 {
		steps = float64(p.WorkDone) / float64(p.Work)
	}
	return (data + tpccTailFactor*steps) / (1 + tpccTailFactor)
}

// loadETA estimates the time left: from the row rate while data is copied,
// then from the weighted key and ANALYZE steps. -1 when unknown.
func loadETA(p tpcc.LoadProgress, dataStart time.Duration) time.Duration {
	switch p.Phase {
	case tpcc.PhaseData:
		if p.Rows == 0 || dataStart < 0 || p.Elapsed <= dataStart {
			return -1
		}
		spent := p.Elapsed - dataStart
		dataTotal := time.Duration(float64(spent) * float64(p.TotalRows) / float64(p.Rows))
		return dataTotal - spent + time.Duration(tpccTailFactor*float64(dataTotal))
	case tpcc.PhaseKeys, tpcc.PhaseAnalyze:
		if p.Work == 0 || p.WorkDone == 0 || dataStart < 0 {
			return -1
		}
		dataTotal := p.Elapsed - dataStart
		left := time.Duration(tpccTailFactor*float64(dataTotal)) * time.Duration(p.Work-p.WorkDone) / time.Duration(p.Work)
		return left
	}
	return -1
}

func tpccPlural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func printTPCCLoad(s *State, st tpcc.LoadStats) {
	resumed := ""
	if st.Resumed {
		resumed = fmt.Sprintf(" (resumed: %d chunks were already in, %d copied now)", st.Skipped, st.Chunks)
	}
	s.printf("done in %.2f s%s: data %.2f s, keys %.2f s, analyze %.2f s (analyze overlaps keys)\n",
		st.Total.Seconds(), resumed, st.Data.Seconds(), st.Keys.Seconds(), st.Analyze.Seconds())
	tables := make([]string, 0, len(st.TableRows))
	for t := range st.TableRows {
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool { return st.TableRows[tables[i]] > st.TableRows[tables[j]] })
	line := "  rows:"
	for i, t := range tables {
		if i > 0 {
			line += ","
		}
		line += fmt.Sprintf(" %s %d", t, st.TableRows[t])
	}
	s.printf("%s\n", line)
	s.printf("%d rows in %.2f s = %s rows/s; %.0f MB on disk; tunebench CPU %.2f s (generator and COPY protocol)\n",
		st.Rows, st.Total.Seconds(), human(st.RowsPerSec), st.DataMBytes, st.CPU.Seconds())
}
