package cli

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/report"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
)

func newReportCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var out, baseline string
	var maxRuns int
	var includeErrors bool
	cmd := &cobra.Command{
		Use:   "report EXPERIMENT|RUN_ID... [-o report.html]",
		Short: "Write a self-contained HTML report of an experiment or of runs",
		Long: `Write one HTML file that works offline (styles and charts inside, nothing
fetched): the experiment and environment tables, throughput against the number
of clients or virtual users (one line per configuration: the median over the
repetitions, with a min-max band), latency percentiles per transaction type,
a comparison with a baseline configuration (median ratio and bootstrap 95%
confidence interval), and per-run time series (throughput with checkpoints,
latency, CPU, disk, WAL, wait events, outages shaded).

Runs whose status is not ok are marked. Those with status errors for an
outage, checks that could not run or no transactions are left out of the medians and
comparisons unless --include-errors is given; interrupted and failed runs
never count.

Give an experiment name, or one or more run ids (tunebench results list);
without either, the most recent experiment of the store is reported.
docs/report.md explains how to read each section.`,
		Example: `  tunebench report sweep -o sweep.html
  tunebench report 12 13 14 -o runs.html --baseline "shared_buffers=128MB"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			if len(args) == 0 {
				name, err := latestExperiment(cmd, st)
				if err != nil {
					return err
				}
				s.eprintf("reporting the most recent experiment, %s (give an experiment name or run ids to choose another)\n", name)
				args = []string{name}
			}
			o := report.Options{Baseline: baseline, MaxSeriesRuns: maxRuns, IncludeErrors: includeErrors, Version: buildVersion(), Registry: s.Registry, Charts: target.ChartsOf(s.drivers())}
			if err := reportTarget(cmd, st, args, &o); err != nil {
				return err
			}
			r, err := report.Build(cmd.Context(), st, o)
			if err != nil {
				return err
			}
			if out == "-" {
				return r.WriteHTML(s.Stdout)
			}
			if err := writeReportFile(out, r); err != nil {
				return err
			}
			s.printf("report: %s (%d charts)\n", out, r.ChartCount())
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "report.html", "HTML file to write (- for standard output)")
	cmd.Flags().StringVar(&baseline, "baseline", "", "configuration label to compare against (default: the experiment's baseline, else the first configuration)")
	cmd.Flags().IntVar(&maxRuns, "max-series-runs", 30, "draw the time series of at most this many runs")
	cmd.Flags().BoolVar(&includeErrors, "include-errors", false, "count the runs with status errors for an outage, checks that could not run or no transactions in the medians and comparisons")
	return cmd
}

// reportTarget decides what the arguments name: one argument is an
// experiment if the store has one by that name, else a run id; several
// arguments are run ids.
// latestExperiment is the name of the store's most recent experiment.
func latestExperiment(cmd *cobra.Command, st *store.Store) (string, error) {
	exps, err := st.ListExperiments(cmd.Context())
	if err != nil {
		return "", err
	}
	if len(exps) == 0 {
		return "", errs.Usage("give run ids (`tunebench results list` shows them), or run an experiment first (`tunebench experiment run FILE`)",
			"the results store %s holds no experiment to report", st.Path())
	}
	return exps[0].Name, nil
}

func reportTarget(cmd *cobra.Command, st *store.Store, args []string, o *report.Options) error {
	if len(args) == 1 {
		_, expErr := st.GetExperiment(cmd.Context(), args[0])
		if expErr == nil {
			o.Experiment = args[0]
			return nil
		}
		if _, numErr := strconv.ParseInt(args[0], 10, 64); numErr != nil || errs.KindOf(expErr) != errs.KindUsage {
			return expErr
		}
	}
	for _, a := range args {
		id, err := parseRunID(a)
		if err != nil {
			return errs.Usage("give one experiment name, or run ids (`tunebench results list` shows them)", "invalid run id %q", a)
		}
		o.RunIDs = append(o.RunIDs, id)
	}
	return nil
}

// writeReportFile writes the report next to its destination and renames it
// into place, so a failed write never leaves half a report.
func writeReportFile(path string, r *report.Report) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tunebench-report-*.html")
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "choose a writable path for -o", "cannot write %s", path)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := r.WriteHTML(f); err != nil {
		f.Close()
		return errs.Wrap(errs.KindInternal, err, "", "write report %s", path)
	}
	if err := f.Close(); err != nil {
		return errs.Wrap(errs.KindUsage, err, "choose a writable path for -o", "cannot write %s", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errs.Wrap(errs.KindUsage, err, "choose a writable path for -o", "cannot write %s", path)
	}
	return nil
}
