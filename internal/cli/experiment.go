package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/live"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

func newExperimentCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Run a whole benchmark study from one YAML file (docs/experiments.md)",
	}
	cmd.AddCommand(newExperimentRunCmd(s), newExperimentListCmd(s), newExperimentShowCmd(s))
	return cmd
}

func newExperimentRunCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var lf liveFlags
	var dryRun, resume, allowDestroy bool
	progress := 5 * time.Second
	cmd := &cobra.Command{
		Use:   "run FILE [--results DB] [--dry-run] [--resume] [--allow-destroy]",
		Short: "Run an experiment: a matrix of settings, clients and options, repeated, stored",
		Long: `Reads an experiment file (YAML; docs/experiments.md describes every key), expands
its matrix into runs and runs them: on a managed PostgreSQL it starts itself (one
server per data_dir value) or on a server given by DSN. The data is loaded once
into a template database and the benchmark database is recreated from it before
every run (reset: template), so every run starts from the same data. Settings are
applied per configuration (reload, or restart when the setting needs one),
verified before measuring, and restored at the end, also after Ctrl-C. Every run
is stored with its place in the plan.

The order is randomised by default (seeded; configurations that need a restart
to switch are kept together). Typos and impossible values are reported with their
line before anything starts. --dry-run prints the plan and a time estimate, then
makes the checks the run makes before it starts that touch nothing (devices,
tools, cgroups, kernel keys; these need root, as the run does) and fails as
the run would.
Ctrl-C stops after saving the current run as interrupted; --resume continues the
experiment of the same name, skipping the runs that completed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExperiment(cmd, s, &rf, &lf, args[0], dryRun, resume, allowDestroy, progress)
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the expanded plan and a time estimate, and make the checks that touch nothing; run nothing")
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the experiment of the same name in the store, skipping completed runs")
	cmd.Flags().Var(option.SecondsFlag{P: &progress}, "progress", "progress line interval within each run, e.g. 5s (a bare number is seconds; 0 = none)")
	cmd.Flags().BoolVar(&allowDestroy, "allow-destroy", false, "let storage layouts make filesystems on the real devices they name, erasing them")
	lf.add(cmd.Flags())
	return cmd
}

// readExperiment parses a file against the registry's catalog.
func readExperiment(path string, cat experiment.Catalog, drivers []target.Driver) (*experiment.Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give the path of an experiment file (examples/ has some)", "cannot read %s", path)
	}
	spec, err := experiment.Parse(path, src, cat, experiment.WithDrivers(drivers))
	if err != nil {
		var se *experiment.SpecError
		if errors.As(err, &se) {
			return nil, &errs.Error{Kind: errs.KindUsage, Msg: se.Error(), Hint: "fix the file; docs/experiments.md describes every key"}
		}
		return nil, err
	}
	return spec, nil
}

func runExperiment(cmd *cobra.Command, s *State, rf *resultsFlag, lf *liveFlags, path string, dryRun, resume, allowDestroy bool, progress time.Duration) error {
	ctx := cmd.Context()
	spec, err := readExperiment(path, experiment.CatalogOf(s.Registry), s.drivers())
	if err != nil {
		return err
	}
	// A DSN target is checked (syntax, no password, the host) before
	// anything else.
	for _, dsn := range spec.DSNs() {
		if err := target.Check(s.drivers(), target.Spec{DSN: dsn, Redactor: s.Redactor}); err != nil {
			return err
		}
	}

	// The seed: the file's, else the stored plan's on resume, else a new one.
	var st *store.Store
	seed := time.Now().UnixNano() & math.MaxInt32
	if resume || !dryRun {
		if st, err = openStore(cmd, s, rf); err != nil {
			return err
		}
		defer st.Close()
		if err := st.Check(ctx); err != nil {
			return err
		}
	}
	var stored *experiment.Plan
	if resume {
		e, err := st.GetExperiment(ctx, spec.Name)
		if err != nil {
			return errs.Wrap(errs.KindUsage, err, "run it without --resume to start it", "cannot resume experiment %q", spec.Name)
		}
		if stored, err = experiment.DecodePlan(e.Plan); err != nil {
			return errs.Wrap(errs.KindUsage, err, "run it as a new experiment under another name", "cannot resume experiment %q", spec.Name)
		}
		seed = stored.Seed
	}
	plan, err := experiment.NewPlan(spec, seed)
	if err != nil {
		var se *experiment.SpecError
		if errors.As(err, &se) {
			return &errs.Error{Kind: errs.KindUsage, Msg: se.Error(), Hint: "fix the file; docs/experiments.md describes every key"}
		}
		return err
	}

	if dryRun {
		var todo func(int) bool
		var note string
		if resume {
			e, _ := st.GetExperiment(ctx, spec.Name)
			// As the resume itself decides (options added since the plan
			// was made, at their defaults, do not change the runs).
			if d := stored.Differences(plan); len(d) > 0 && !plan.SameRunsAs(stored) {
				return errs.Usage("put the file back as it was, or run it as a new experiment under another name",
					"experiment %q changed since it started: %s", plan.Name, strings.Join(d, "; "))
			}
			links, err := st.PlanLinks(ctx, e.ID)
			if err != nil {
				return err
			}
			left, done, err := plan.Remaining(links)
			if err != nil {
				return errs.Wrap(errs.KindUsage, err, "", "cannot resume experiment %q", plan.Name)
			}
			todo = func(i int) bool { return left[i] }
			note = fmt.Sprintf("resume: %d completed runs are kept; the rest is below", done)
		}
		printPlan(s, plan, todo, !spec.SeedSet && !resume, note)
		if !plan.WorkloadSpec().Runnable {
			s.printf("\nnote: %s runs are not available in experiments in this build yet; the file is valid\n", plan.Workload)
			return nil
		}
		// Every check the run makes before it starts that touches
		// nothing: the layouts' devices and tools, --allow-destroy, the
		// envelopes' cgroups, the kernel keys, the shards.
		lab := &experiment.Lab{Registry: s.Registry, Drivers: s.drivers(), Spec: spec, Plan: plan, AllowDestroy: allowDestroy,
			Getenv: s.Getenv, LookupEnv: s.LookupEnv, Redactor: s.Redactor, KernelJournal: kernel.JournalPath(s.Getenv)}
		if err := lab.Preflight(ctx, plan); err != nil {
			return err
		}
		s.printf("\nthis machine passes the checks a run makes before it starts (nothing was touched)\n")
		return nil
	}

	lv, err := s.startLive(lf)
	if err != nil {
		return err
	}
	defer lv.stop(ctx)
	var kept []int
	if resume && lv != nil {
		kept = keptRuns(ctx, st, plan)
	}
	liveObs := lv.experimentObserver(plan, kept)
	lv.noteTick(progress)
	w, _ := s.Registry.Get(plan.Workload)
	obs := s.runObserver(w)
	runOut, runErrOut, flush := s.runOutput()
	defer flush()
	lab := &experiment.Lab{Registry: s.Registry, Drivers: s.drivers(), Spec: spec, Plan: plan, Store: st, Version: Version,
		Progress: progress, Getenv: s.Getenv, LookupEnv: s.LookupEnv, Redactor: s.Redactor, Log: s.Stderr, Stdout: runOut, Stderr: runErrOut,
		Observe: obs.observe, LoadProgress: newLoadBar(s).update, LoadNote: func(string, ...any) {}, AllowDestroy: allowDestroy,
		KernelJournal: kernel.JournalPath(s.Getenv)}
	if lv != nil {
		lab.Live = func(w workload.Workload, planRun int, planLabel string) *live.Run {
			return lv.newRun(w, plan.Name, planRun, planLabel, workload.Shard{})
		}
	}
	r := &experiment.Runner{Store: st, Env: lab, Observe: func(ev experiment.Event) {
		observeExperiment(s, plan, ev)
		liveObs(ev)
	}}
	if s.Environ != nil {
		r.Environ = s.Environ()
	}
	if !spec.SeedSet && !resume {
		s.eprintf("random order with seed %d (add `seed: %d` to the file to repeat this order)\n", plan.Seed, plan.Seed)
	}
	out, runErr := r.Execute(ctx, plan, resume)
	flush()
	if out.ExperimentID != 0 {
		s.printf("\n")
		how := fmt.Sprintf("`tunebench experiment show %s --include-errors`", plan.Name)
		if err := printExperimentResults(context.WithoutCancel(ctx), s, st, plan.Name, false, how); err != nil && runErr == nil {
			runErr = err
		}
		if err := printHooks(context.WithoutCancel(ctx), s, st, out.ExperimentID, false, "`tunebench experiment show "+plan.Name+" --hooks`"); err != nil && runErr == nil {
			runErr = err
		}
		s.printf("experiment %s: %s (%d runs in this attempt, %d kept from before) in %s\n", plan.Name, out.Status, out.Ran, out.Skipped, st.Path())
		if out.Status == store.ExpInterrupted || out.Status == store.ExpFailed {
			s.printf("continue it: tunebench experiment run %s --resume --results %s\n", path, st.Path())
		}
		if c, _, err := cmd.Root().Find([]string{"report"}); err == nil && c != cmd.Root() {
			extra := ""
			if c.Flags().Lookup("results") != nil {
				extra = " --results " + st.Path()
			}
			s.printf("report:      tunebench report %s -o report.html%s\n", plan.Name, extra)
		}
	}
	return runErr
}

// observeExperiment prints the orchestrator's progress.
func observeExperiment(s *State, p *experiment.Plan, ev experiment.Event) {
	switch ev.Kind {
	case experiment.EventBegin:
		verb := "starting"
		if ev.Resumed {
			verb = fmt.Sprintf("resuming (%d completed runs kept)", ev.Skipped)
		}
		s.eprintf("== experiment %s %s: %d runs, estimated %s\n", p.Name, verb, ev.Total, ev.ETA)
	case experiment.EventStep:
		switch ev.Step.Kind {
		case experiment.StepRun:
			s.eprintf("== run %d/%d %s (plan #%d, ETA %s)\n", ev.Ordinal, ev.Total, p.DescribeRun(ev.Step.Run), ev.Step.Run+1, ev.ETA)
		case experiment.StepReset, experiment.StepCooldown:
		case experiment.StepHook:
			if !ev.Step.PerRun { // the hooks around each run say only a failure
				s.eprintf("== %s\n", brief(p.DescribeStep(ev.Step), 100))
			}
		default:
			s.eprintf("== %s\n", p.DescribeStep(ev.Step))
		}
	case experiment.EventStepDone:
		took := ev.Elapsed.Round(100 * time.Millisecond)
		switch ev.Step.Kind {
		case experiment.StepRun:
			res := ev.Result
			switch {
			case ev.SkippedBy != "":
				s.eprintf("   run %d/%d skipped: %s\n", ev.Ordinal, ev.Total, ev.SkippedBy)
			case res != nil && res.RunID != 0:
				s.eprintf("   run %d/%d: %s (run %d, %s) in %s\n", ev.Ordinal, ev.Total, res.Brief, res.RunID, res.Status, took)
			case res != nil && res.Status != "" && rescued(ev.Err):
				path, _ := store.RescuedTo(ev.Err)
				s.eprintf("   run %d/%d: %s (%s, NOT stored: the result is in %s) in %s\n", ev.Ordinal, ev.Total, res.Brief, res.Status, path, took)
			case ev.Err != nil:
				s.eprintf("   run %d/%d failed: %v\n", ev.Ordinal, ev.Total, ev.Err)
			}
		case experiment.StepLoad:
			if ev.Err == nil {
				if ev.Loaded {
					s.eprintf("   loaded in %s\n", took)
				} else {
					s.eprintf("   the data is there already (loaded by an earlier attempt)\n")
				}
			}
		case experiment.StepApply:
			if ev.Err == nil {
				how := "reload"
				if ev.Restarted {
					how = "restart"
				}
				s.eprintf("   applied and verified (%s) in %s\n", how, took)
			}
		case experiment.StepClose, experiment.StepRestore:
			if ev.Err == nil {
				s.eprintf("   settings restored\n")
			}
		case experiment.StepKernel:
			if ev.Err == nil {
				s.eprintf("   set and read back in %s\n", took)
			}
		case experiment.StepHook:
			if h := ev.Hook; h != nil && !h.OK() {
				s.eprintf("   %s\n", experiment.HookFailure(h))
			} else if h != nil && !ev.Step.PerRun {
				s.eprintf("   done in %s\n", took)
			}
		}
	}
}

func newExperimentListCmd(s *State) *cobra.Command {
	var rf resultsFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the experiments in the store, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ListExperiments(cmd.Context())
			if err != nil {
				return err
			}
			if len(list) == 0 {
				s.printf("no experiments in %s\n", st.Path())
				return nil
			}
			t := newTable(s)
			t.row("NAME", "WORKLOAD", "STATUS", "RUNS", "STARTED", "TOOK")
			for _, e := range list {
				full, err := st.GetExperiment(cmd.Context(), e.Name)
				if err != nil {
					return err
				}
				wl, runs := "-", "-"
				if p, err := experiment.DecodePlan(full.Plan); err == nil {
					links, err := st.PlanLinks(cmd.Context(), e.ID)
					if err != nil {
						return err
					}
					done := 0
					for _, l := range links {
						if !l.Warmup && experiment.Completed(l.Status) {
							done++
						}
					}
					wl, runs = p.Workload, fmt.Sprintf("%d/%d", done, p.Counted())
				}
				took := "-"
				if !e.EndedAt.IsZero() {
					took = e.EndedAt.Sub(e.StartedAt).Round(time.Second).String()
				}
				t.row(e.Name, wl, e.Status, runs, e.StartedAt.Local().Format("2006-01-02 15:04"), took)
			}
			t.flush()
			return nil
		},
	}
	rf.add(cmd.Flags())
	return cmd
}

func newExperimentShowCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var runs, includeErrors, hooks bool
	cmd := &cobra.Command{
		Use:   "show NAME [--runs] [--include-errors] [--hooks]",
		Short: "Show an experiment: its plan, progress and results per configuration (--runs: and every run)",
		Long: `Show an experiment: its status, and per configuration and x value the runs
counted out of those planned and the median, min and max of the workload's
metric over them. Runs are counted as in the report (docs/report.md, "Which
runs count"): runs with status ok, and runs with status errors unless their
figures are in doubt (an outage over the run's max_outage_pct, checks that
could not run); those are named under the table and left out unless
--include-errors is given. Warm-up, interrupted and failed runs never count.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			e, err := st.GetExperiment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ended := "-"
			if !e.EndedAt.IsZero() {
				ended = e.EndedAt.Local().Format("2006-01-02 15:04:05")
			}
			s.printf("experiment %s: %s, started %s, ended %s\n", e.Name, e.Status, e.StartedAt.Local().Format("2006-01-02 15:04:05"), ended)
			if err := printExperimentResults(cmd.Context(), s, st, e.Name, includeErrors, "--include-errors"); err != nil {
				return err
			}
			if err := printHooks(cmd.Context(), s, st, e.ID, hooks, "--hooks"); err != nil || !runs {
				return err
			}
			list, err := st.ListRuns(cmd.Context(), store.ListFilter{Experiment: e.Name})
			if err != nil || len(list) == 0 {
				return err
			}
			header, t := experimentRunTable(s.Registry, list)
			s.printf("\nevery run (%s):\n", header)
			s.printBlocks([]results.Block{results.TableBlock(t)})
			return nil
		},
	}
	cmd.Flags().BoolVar(&runs, "runs", false, "also list every run in the workload's own columns")
	cmd.Flags().BoolVar(&hooks, "hooks", false, "list every hook the experiment ran, with its output")
	cmd.Flags().BoolVar(&includeErrors, "include-errors", false, "count the runs with status errors for an outage, checks that could not run or no transactions in the medians")
	rf.add(cmd.Flags())
	return cmd
}

// printExperimentResults prints one row per configuration and x value: the
// counted runs done, and the median, min and max of the workload's metric.
// The runs counted are those the report counts: stored runs with status ok
// or errors (experiment.Completed), less those whose figures are in doubt
// (results.StoredDoubts) unless includeErrors. The runs in doubt are named
// under the table, with how to count them (how: "--include-errors") when
// they are left out.
func printExperimentResults(ctx context.Context, s *State, st *store.Store, name string, includeErrors bool, how string) error {
	e, err := st.GetExperiment(ctx, name)
	if err != nil {
		return err
	}
	p, err := experiment.DecodePlan(e.Plan)
	if err != nil {
		return err
	}
	links, err := st.PlanLinks(ctx, e.ID)
	if err != nil {
		return err
	}
	runs, err := st.ListRuns(ctx, store.ListFilter{Experiment: name})
	if err != nil {
		return err
	}
	metricOf := map[int64]float64{}
	doubtsOf := map[int64][]results.Reason{}
	for _, r := range runs {
		if sum := results.DecodeInfo(r, s.Registry.Extras()); sum != nil {
			if v, ok := sum.Metric(p.Metric); ok {
				metricOf[r.ID] = v
			}
		}
		if ds := results.StoredDoubts(r.Status, r.Summary); len(ds) > 0 {
			doubtsOf[r.ID] = ds
		}
	}
	rows, doubtful := experiment.Medians(p, links, metricOf, doubtsOf, includeErrors)
	s.printf("%s vs %s, median (min-max) over repetitions; baseline %s\n", p.Metric, orDash(p.XAxis), p.Baseline)
	t := newTable(s)
	t.row("CONFIGURATION", strings.ToUpper(orDash(p.XAxis)), "RUNS", strings.ToUpper(p.Metric), "MIN", "MAX")
	for _, r := range rows {
		runsText := fmt.Sprintf("%d/%d", r.Runs, r.Planned)
		if r.Runs == 0 {
			t.row(r.Label, p.FormatX(r.X), runsText, "-", "-", "-")
			continue
		}
		t.row(r.Label, p.FormatX(r.X), runsText, fmt.Sprintf("%.1f", r.Median), fmt.Sprintf("%.1f", r.Min), fmt.Sprintf("%.1f", r.Max))
	}
	t.flush()
	if len(doubtful) > 0 {
		runs, is, it := "1 run", "is", "it"
		if len(doubtful) > 1 {
			runs, is, it = fmt.Sprintf("%d runs", len(doubtful)), "are", "them"
		}
		runs += " with status errors for an outage, checks that could not run or no transactions"
		if includeErrors {
			s.printf("%s %s counted in the medians (--include-errors):\n", runs, is)
		} else {
			s.printf("%s %s left out of the medians (%s counts %s):\n", runs, is, how, it)
		}
		for _, d := range doubtful {
			l := d.Link
			s.printf("  run %d (%s, %s %s, repetition %d): status errors: %s\n",
				l.RunID, l.Config, orDash(l.XName), p.FormatX(l.XValue), l.Repetition, doubtText(d.Reasons))
		}
	}
	return nil
}

// doubtText says what puts a run's figures in doubt: its reasons' details
// (their codes when they have none).
func doubtText(rs []results.Reason) string {
	ts := make([]string, len(rs))
	for i, r := range rs {
		ts[i] = r.Detail
		if ts[i] == "" {
			ts[i] = r.Code
		}
	}
	return strings.Join(ts, "; ")
}

// rescued reports whether err is a failed save whose run went to a rescue
// file.
func rescued(err error) bool {
	_, ok := store.RescuedTo(err)
	return ok
}
