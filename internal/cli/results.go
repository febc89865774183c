package cli

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// resultsFlag is the --results flag shared by commands that use the store.
type resultsFlag struct{ path string }

func (f *resultsFlag) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "results", "", "results store (SQLite) path; default $TUNEBENCH_RESULTS, else $XDG_DATA_HOME/tunebench/results.db, else ~/.local/share/tunebench/results.db (Windows: %LOCALAPPDATA%\\tunebench\\results.db)")
}

// resolve picks the store path: --results, else the default from the
// State's environment (getenv), never the process environment directly.
func (f *resultsFlag) resolve(getenv func(string) string) (string, error) {
	if f.path != "" {
		return f.path, nil
	}
	p, err := store.DefaultPathFrom(getenv)
	if err != nil {
		return "", errs.Wrap(errs.KindUsage, err, "give --results PATH or set TUNEBENCH_RESULTS", "cannot find the default results store path")
	}
	return p, nil
}

func newResultsCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "results",
		Short: "List, show, export, import and merge stored runs",
	}
	cmd.AddCommand(newResultsListCmd(s), newResultsShowCmd(s), newResultsExportCmd(s), newResultsImportCmd(s), newResultsMergeCmd(s))
	return cmd
}

func openStore(cmd *cobra.Command, s *State, rf *resultsFlag) (*store.Store, error) {
	p, err := rf.resolve(s.Getenv)
	if err != nil {
		return nil, err
	}
	return store.Open(cmd.Context(), p)
}

func newResultsListCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var f store.ListFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.ListRuns(cmd.Context(), f)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				s.printf("no runs in %s\n", st.Path())
				return nil
			}
			tw := tabwriter.NewWriter(s.Stdout, 0, 0, 2, ' ', 0)
			io.WriteString(tw, "ID\tSTARTED\tWORKLOAD\tVARIANT\tSTATUS\tSECONDS\tSUMMARY\n")
			for _, r := range runs {
				if t := envinfo.TargetOf(r.Env); t != "" { // an experiment's named target
					r.Variant += " on " + t
				}
				io.WriteString(tw, strconv.FormatInt(r.ID, 10)+"\t"+r.StartedAt.Local().Format("2006-01-02 15:04:05")+"\t"+r.Workload+"\t"+r.Variant+"\t"+r.Status+"\t"+
					s.listSeconds(r.Summary, r.EndedAt.Sub(r.StartedAt))+"\t"+s.oneLineSummary(r.Workload, r.Summary)+"\n")
			}
			return tw.Flush()
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVar(&f.Workload, "workload", "", "only this workload")
	cmd.Flags().StringVar(&f.Experiment, "experiment", "", "only runs of this experiment (quickstart runs are \"quickstart\")")
	cmd.Flags().IntVar(&f.Limit, "limit", 50, "at most this many runs (0 = all)")
	return cmd
}

// listSeconds is a run's length for `results list`: the measured window
// its figures cover, with the warm-up (tpcc's ramp-up) before it apart;
// the whole run's wall time for a run the executor did not measure.
func (s *State) listSeconds(raw json.RawMessage, wall time.Duration) string {
	if len(raw) > 0 {
		if sum, err := results.Decode(raw, s.Registry.Extras()); err == nil && sum.Measured != nil && sum.DurationS > 0 {
			out := strconv.FormatFloat(sum.DurationS, 'f', 1, 64)
			if sum.WarmupS > 0 {
				out += " (+" + strconv.FormatFloat(sum.WarmupS, 'f', 1, 64) + " warm-up)"
			}
			return out
		}
	}
	return strconv.FormatFloat(wall.Seconds(), 'f', 1, 64)
}

// oneLineSummary is a stored run's one-line result, from its workload's
// view (the executor's figures for a workload this build does not have).
func (s *State) oneLineSummary(workloadName string, raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	sum, err := results.Decode(raw, s.Registry.Extras())
	if err != nil {
		return ""
	}
	if v, ok := s.Registry.Get(workloadName); ok {
		if v, ok := v.(workload.Viewer); ok {
			return v.Brief(sum)
		}
	}
	return results.BriefTPS(sum) // a workload this build does not have
}

func parseRunID(arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, errs.Usage("run ids are the numbers `tunebench results list` shows", "invalid run id %q", arg)
	}
	return id, nil
}

func newResultsShowCmd(s *State) *cobra.Command {
	var rf resultsFlag
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run: its summary, parameters and environment",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseRunID(args[0])
			if err != nil {
				return err
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := st.GetRun(cmd.Context(), id)
			if err != nil {
				return err
			}
			s.printf("run %d: %s %s, status %s, %s .. %s\n", r.ID, r.Workload, r.Variant, r.Status,
				r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.EndedAt.Local().Format("15:04:05"))
			if w, ok := s.Registry.Get(r.Workload); ok && len(r.Summary) > 0 {
				if sum, err := results.Decode(r.Summary, s.Registry.Extras()); err == nil {
					if sum.RunKey != "" {
						s.printf("run key: %s (the run label of its live series, --listen)\n", sum.RunKey)
					}
					s.printBlocks(showBlocks(w, sum, false))
				}
			}
			s.printEnv(r.Env)
			for _, part := range []struct {
				name string
				raw  json.RawMessage
			}{{"parameters", r.Params}, {"environment", r.Env}, {"check", r.Check}} {
				if len(part.raw) == 0 || string(part.raw) == "null" {
					continue
				}
				var v any
				if json.Unmarshal(part.raw, &v) != nil {
					continue
				}
				b, _ := json.MarshalIndent(v, "  ", "  ")
				s.printf("%s:\n  %s\n", part.name, b)
			}
			s.printf("series: %d points; histograms: %d (export with `tunebench results export %d --format json`)\n", len(r.Series), len(r.Histograms), r.ID)
			return nil
		},
	}
	rf.add(cmd.Flags())
	return cmd
}

// printEnv prints where the run's server was and what lies under its data
// directory, as the report's environment table shows them.
func (s *State) printEnv(raw json.RawMessage) {
	var env envinfo.Snapshot
	if len(raw) > 0 && json.Unmarshal(raw, &env) == nil {
		for _, l := range env.ShowLines() {
			s.printf("%s\n", l)
		}
	}
}

func newResultsExportCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var format, out string
	cmd := &cobra.Command{
		Use:   "export ID --format csv|json [-o FILE]",
		Short: "Export a run: json (everything) or csv (the per-second series)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseRunID(args[0])
			if err != nil {
				return err
			}
			if format != "csv" && format != "json" {
				return errs.Usage("--format is csv or json", "invalid format %q", format)
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := st.GetRun(cmd.Context(), id)
			if err != nil {
				return err
			}
			w := s.Stdout
			var f *os.File
			if out != "" && out != "-" {
				f, err = os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
				if err != nil {
					return errs.Wrap(errs.KindUsage, err, "choose a writable path for -o", "cannot write %s", out)
				}
				defer f.Close()
				w = f
			}
			if format == "csv" {
				err = store.ExportCSV(w, r)
			} else {
				err = store.ExportJSON(w, r)
			}
			if err != nil {
				return err
			}
			if f != nil {
				return f.Close()
			}
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", "json", "csv or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

// newResultsImportCmd brings in a run that a failed save wrote to a rescue
// file. The file is left in place: until the store holding the run is known
// to be good (it has just failed once), the file is the other copy, and a
// second import of it is refused, so keeping it is harmless.
func newResultsImportCmd(s *State) *cobra.Command {
	var rf resultsFlag
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Store a run that a failed save wrote to a rescue file",
		Long: `Store a run that could not be saved when it ended (a damaged or full results
store): the run command wrote everything it would have stored to a rescue
file and printed this command. The run is saved in one transaction, like a
run that has just ended; a run already in the store is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rescued, err := store.ReadRescue(args[0])
			if err != nil {
				return err
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Check(ctx); err != nil {
				return err
			}
			id, notes, err := results.Import(ctx, st, rescued)
			if err != nil {
				return err
			}
			for _, n := range notes {
				s.eprintf("note: %s\n", n)
			}
			r := rescued.Run
			brief := s.oneLineSummary(r.Workload, r.Summary)
			if brief != "" {
				brief = ": " + brief
			}
			s.printf("imported as run %d in %s (%s, status %s%s)\n", id, st.Path(), r.Workload, r.Status, brief)
			s.printf("%s may be removed now\n", args[0])
			return nil
		},
	}
	rf.add(cmd.Flags())
	return cmd
}
