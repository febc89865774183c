package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/report"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// quickstartSpecs returns the two experiment files quickstart runs: a small
// HammerDB-style TPC-C-like sweep (two shared_buffers configurations x 1, 2
// and 4 virtual users) and the pgbench-style TPC-B-like pair (select-only and
// tpcb-like at 1, 2 and 4 clients), both on one managed server.
func quickstartSpecs(stamp, dir, pgBin, runAs string, warehouses, scale int, dur time.Duration) (tpccYAML, tpcbYAML string) {
	managed := "{dir: " + strconv.Quote(dir)
	if pgBin != "" {
		managed += ", pg_bin: " + strconv.Quote(pgBin)
	}
	if runAs != "" {
		managed += ", run_as: " + strconv.Quote(runAs)
	}
	managed += "}"
	tpccYAML = fmt.Sprintf(`name: quickstart-tpcc-%s
description: quickstart, TPC-C-like virtual users sweep x shared_buffers
target:
  managed: %s
  settings: {max_wal_size: 4GB, checkpoint_timeout: 15min}
workload:
  name: tpcc
  options: {warehouses: %d, mode: procs, rampup: 3s, duration: %s}
matrix:
  settings: {shared_buffers: [128MB, 1GB]}
  vusers: [1, 2, 4]
repetitions: 1
seed: 1
baseline: {shared_buffers: 128MB}
`, stamp, managed, warehouses, dur)
	tb := dur * 2 / 3
	tpcbYAML = fmt.Sprintf(`name: quickstart-tpcb-%s
description: quickstart, pgbench-compatible TPC-B-like scripts x clients
target:
  managed: %s
  settings: {shared_buffers: 512MB, max_wal_size: 4GB}
workload:
  name: tpcb
  options: {scale: %d, warmup: 2s, duration: %s}
matrix:
  script: [select-only, tpcb-like]
  clients: [1, 2, 4]
repetitions: 1
seed: 1
`, stamp, managed, scale, tb)
	return tpccYAML, tpcbYAML
}

func newQuickstartCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var dir, pgBin, runAs, out string
	var scale, warehouses int
	dur := 12 * time.Second
	var keep bool
	cmd := &cobra.Command{
		Use:   "quickstart",
		Short: "The main job: a managed PostgreSQL, a small TPC-C-like sweep and TPC-B-like runs, report.html",
		Long: `Starts a managed PostgreSQL in a temporary directory and runs two small
experiments on it (docs/experiments.md):
  - TPC-C-like, 2 warehouses, procs mode: shared_buffers 128MB and 1GB x 1, 2 and 4
    virtual users (3 s ramp-up, 12 s measured), the data reset from a template
    before every run, consistency conditions checked after each;
  - TPC-B-like (pgbench-compatible), scale 10: select-only and tpcb-like at 1, 2
    and 4 clients.
Samplers record CPU, disk, PostgreSQL statistics and wait events during every run.
Everything goes into the results store; the HTML reports (report.html for the
TPC-C-like sweep, report-tpcb.html for TPC-B-like) are written to --out. The
server is stopped and its directory removed at the end. About four minutes on 2
cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			start := time.Now()
			if err := s.postgresSupported(); err != nil {
				return errs.New(errs.KindUsage, "on Windows, point tunebench at a PostgreSQL you run: tunebench load tpcb --dsn postgres://USER@HOST:PORT/DB --scale 10, then tunebench run tpcb --dsn ... (README: Windows and macOS)",
					"quickstart runs the main job on a managed PostgreSQL, which needs Linux or macOS")
			}
			storePath, err := rf.resolve(s.Getenv)
			if err != nil {
				return err
			}
			if warehouses < 1 || scale < 1 || dur < time.Second {
				return errs.Usage("give --warehouses and --scale of 1 or more and --duration of 1s or more", "invalid quickstart size")
			}
			outDir, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return errs.Wrap(errs.KindUsage, err, "give --out a writable directory", "cannot create %s", outDir)
			}
			d, err := os.MkdirTemp("", "tunebench-quickstart-")
			if err != nil {
				return errs.Wrap(errs.KindEnvironment, err, "set TMPDIR to a writable directory", "cannot make a temporary directory")
			}
			// The server runs as an unprivileged user when we are root: it must enter the directory.
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(d)
			}
			if dir == "" {
				dir = filepath.Join(d, "server")
			}
			stamp := time.Now().UTC().Format("20060102-150405")
			tpccYAML, tpcbYAML := quickstartSpecs(stamp, dir, pgBin, runAs, warehouses, scale, dur)
			files := []struct{ name, text, report string }{
				{"tpcc.yaml", tpccYAML, "report.html"},
				{"tpcb.yaml", tpcbYAML, "report-tpcb.html"},
			}
			var firstErr error
			var written []string
			for i, f := range files {
				path := filepath.Join(d, f.name)
				if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
					return err
				}
				s.eprintf("\n== experiment %d of 2: %s\n", i+1, f.name)
				err := runExperiment(cmd, s, &rf, &liveFlags{}, path, false, false, false, 5*time.Second)
				if err != nil {
					if errs.KindOf(err) == errs.KindInterrupted || ctx.Err() != nil {
						return err
					}
					s.eprintf("warning: %v\n", err)
					if firstErr == nil {
						firstErr = err
					}
				}
				name := experimentName(f.text)
				rp := filepath.Join(outDir, f.report)
				if err := writeExperimentReport(context.WithoutCancel(ctx), cmd, s, &rf, name, rp); err != nil {
					s.eprintf("warning: report for %s: %v\n", name, err)
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				written = append(written, rp)
				printExperimentRunTable(context.WithoutCancel(ctx), cmd, s, &rf, name)
			}
			s.printf("\nall runs are stored in %s\n", storePath)
			for _, w := range written {
				s.printf("report:       %s\n", w)
			}
			s.printf("list them:    tunebench experiment list; tunebench results list\n")
			s.printf("compare two:  tunebench compare RUN_A RUN_B\n")
			if keep {
				s.printf("kept:         %s (server stopped; start it with tunebench server start --dir %s)\n", d, dir)
			}
			s.printf("finished in %s\n", time.Since(start).Round(time.Second))
			return firstErr
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.StringVar(&dir, "dir", "", "server directory (default: a temporary one, removed at the end)")
	f.StringVar(&pgBin, "pg-bin", "", "directory with the PostgreSQL binaries")
	f.StringVar(&runAs, "run-as", "", "OS user for PostgreSQL when running as root (default: postgres)")
	f.IntVar(&warehouses, "warehouses", 2, "tpcc warehouses")
	f.IntVar(&scale, "scale", 10, "tpcb scale factor")
	f.Var(option.DurationFlag{P: &dur}, "duration", "measured time per TPC-C-like run (TPC-B-like runs get two thirds of it)")
	f.StringVarP(&out, "out", "o", ".", "directory for report.html and report-tpcb.html")
	f.BoolVar(&keep, "keep", false, "keep the temporary directory (experiment files, server data)")
	return cmd
}

// experimentName reads the name line of a generated experiment file.
func experimentName(yaml string) string {
	var name string
	fmt.Sscanf(yaml, "name: %s", &name)
	return name
}

// writeExperimentReport builds the HTML report of an experiment into path.
func writeExperimentReport(ctx context.Context, cmd *cobra.Command, s *State, rf *resultsFlag, name, path string) error {
	st, err := openStore(cmd, s, rf)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.GetExperiment(ctx, name); err != nil {
		return err
	}
	r, err := report.Build(ctx, st, report.Options{Experiment: name, Version: Version, Registry: s.Registry, Charts: target.ChartsOf(s.drivers())})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "give --out a writable directory", "cannot write %s", path)
	}
	if err := r.WriteHTML(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printExperimentRunTable prints one summary row per run of an experiment,
// in the workload's own terms (experimentRunTable).
func printExperimentRunTable(ctx context.Context, cmd *cobra.Command, s *State, rf *resultsFlag, name string) {
	st, err := openStore(cmd, s, rf)
	if err != nil {
		return
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.ListFilter{Experiment: name})
	if err != nil || len(runs) == 0 {
		return
	}
	header, t := experimentRunTable(s.Registry, runs)
	s.printf("\n%s, every run (%s):\n", name, header)
	s.printBlocks([]results.Block{results.TableBlock(t)})
}

// experimentRunTable is a row per run, oldest first. Runs plotted against
// clients (tpcb) get the executor's columns (script, clients, tps, latency);
// others get their own x axis and headline metric (tpcc: vusers and NOPM),
// with the latency p95 and errors when the executor measured them.
func experimentRunTable(reg *workload.Registry, runs []store.RunInfo) (string, *results.Table) {
	var h workload.Headline
	if w, ok := reg.Get(runs[0].Workload); ok {
		if r, ok := w.(workload.Runner); ok {
			h = r.Headline()
		}
	}
	var sums []*results.Summary
	var raws []map[string]any
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		sum := results.DecodeInfo(runs[i], reg.Extras())
		if sum == nil {
			continue
		}
		var raw map[string]any
		_ = json.Unmarshal(runs[i].Summary, &raw) //nolint:errcheck // decoded above
		sums, raws = append(sums, sum), append(raws, raw)
	}
	if h.XAxis == "" || h.XAxis == "clients" {
		for i, sum := range sums {
			if sum.Measured == nil {
				sum.Measured = &results.Measured{}
			}
			if sum.Script == "" {
				sum.Script = runs[len(runs)-1-i].Variant
			}
		}
		return "tps = committed transactions per second; latency in ms", results.RunTable(sums)
	}
	measured := false
	for _, sum := range sums {
		measured = measured || sum.Measured != nil
	}
	t := &results.Table{Columns: []string{"run", h.XAxis, h.Label}}
	header := h.Unit
	if measured {
		t.Columns = append(t.Columns, "p95 ms", "errors")
		header += "; p95 of all transactions in ms"
	}
	t.Columns = append(t.Columns, "status")
	for i, sum := range sums {
		x, metric := "-", "-"
		if v, ok := results.Number(raws[i], h.XAxis); ok {
			x = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if v, ok := sum.Metric(h.Metric); ok {
			metric = strconv.FormatFloat(v, 'f', 0, 64)
		}
		row := []string{strconv.FormatInt(sum.RunID, 10), x, metric}
		if measured {
			p95, errors := "-", "-"
			if m := sum.Measured; m != nil {
				p95, errors = results.F3(m.LatencyMs.P95), strconv.FormatInt(m.Errors, 10)
			}
			row = append(row, p95, errors)
		}
		t.Row(append(row, sum.Status)...)
	}
	return header, t
}
