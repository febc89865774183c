package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload/gen"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
)

// experimentAdapter connects a workload to experiments: the options an
// experiment file may give it (experiment.Workload), how to load its data
// into a database, and how to do one run and store it with its plan link.
// A nil run means the workload's files parse and dry-run, but cannot run yet.
type experimentAdapter struct {
	spec experiment.Workload
	// load builds the workload's schema and data in the database t names
	// (an empty database created for it).
	load func(ctx context.Context, s *State, t *pg.Target, o experiment.Options) error
	// run does one run on the database t names, stores it with req.Link in
	// the same transaction and returns its summary (also when interrupted or
	// with errors, then with an error that carries the exit code).
	run func(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, req experimentRun) (*summary, error)
	// brief picks the throughput (spec.Metric) and a one-line result.
	brief func(sum *summary) (float64, string)
}

// experimentRun is one planned run for an adapter.
type experimentRun struct {
	Experiment string
	Options    experiment.Options // run options, x axis included
	Load       experiment.Options // the load options of the data
	Seed       int64
	Link       *store.PlanLink
	Progress   time.Duration // progress line interval (0 = none)
}

// experimentAdapters is the registry of workloads experiments can use.
func experimentAdapters() map[string]*experimentAdapter {
	return map[string]*experimentAdapter{
		"tpcb":    tpcbAdapter(),
		"tpcc":    tpccAdapter(),
		"storage": storageAdapter(),
		"fsblog":  fsblogAdapter(),
	}
}

func experimentCatalog(adapters map[string]*experimentAdapter) experiment.Catalog {
	cat := experiment.Catalog{}
	for name, a := range adapters {
		w := a.spec
		w.Runnable = a.run != nil && a.load != nil
		cat[name] = &w
	}
	return cat
}

func tpcbAdapter() *experimentAdapter {
	w := experiment.Workload{
		Name: "tpcb", Description: tpcb.Workload{}.Meta().Description, XAxis: "clients", Metric: "tps",
		Options: []experiment.Option{
			{Name: "scale", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true, Load: true, Doc: "scale factor: 100,000 accounts per unit"},
			{Name: "fillfactor", Kind: experiment.KindInt, Default: "100", Min: 10, HasMin: true, Max: 100, HasMax: true, Load: true},
			{Name: "partitions", Kind: experiment.KindInt, Default: "0", HasMin: true, Load: true},
			{Name: "partition_method", Kind: experiment.KindString, Default: "range", Enum: []string{"range", "hash"}, Load: true},
			{Name: "script", Kind: experiment.KindString, Default: tpcb.ScriptTPCB, Enum: tpcb.Scripts()},
			{Name: "clients", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true, Max: 10000, HasMax: true},
			{Name: "threads", Kind: experiment.KindInt, Default: "0", HasMin: true, Doc: "driver threads serving the clients, as pgbench -j; 0 = one per core, at most one per client"},
			{Name: "follow_server", Kind: experiment.KindString, Default: "auto", Enum: []string{"auto", "on", "off"}, Doc: "pin the driver threads one per CPU and serve each connection from the thread on its server process's CPU; auto: on for select-only"},
			{Name: "duration", Kind: experiment.KindDuration, Default: "60s"},
			{Name: "transactions", Kind: experiment.KindInt, HasMin: true},
			{Name: "warmup", Kind: experiment.KindDuration, Doc: "warm-up inside each run, not counted"},
			{Name: "rate", Kind: experiment.KindFloat, HasMin: true},
			{Name: "latency_limit", Kind: experiment.KindDuration},
			{Name: "max_tries", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true},
			{Name: "distribution", Kind: experiment.KindString, Default: "uniform"},
			{Name: "pipeline", Kind: experiment.KindBool, Default: "false"},
			{Name: "no_check", Kind: experiment.KindBool, Default: "false"},
			{Name: "max_errors_pct", Kind: experiment.KindFloat, Default: "1", HasMin: true, Max: 100, HasMax: true},
		},
		RunTime: func(o experiment.Options) (time.Duration, bool) {
			if o.Int("transactions") > 0 {
				return o.Duration("warmup"), false
			}
			return o.Duration("duration") + o.Duration("warmup"), true
		},
		LoadTime: func(o experiment.Options) time.Duration {
			return time.Second + time.Duration(o.Int("scale"))*1500*time.Millisecond
		},
		DataBytes: func(o experiment.Options) int64 { return o.Int("scale") * 16_000_000 },
		Check: func(o experiment.Options) error {
			if _, err := gen.ParseDist(o.String("distribution")); err != nil {
				return fmt.Errorf("distribution: %v (uniform, zipfian:S, gaussian:T or exponential:T)", err)
			}
			if o.Int("transactions") > 0 && o.Float("rate") > 0 {
				return errors.New("transactions cannot be combined with rate: an open-loop run needs a duration")
			}
			if o.Duration("latency_limit") > 0 && o.Float("rate") == 0 {
				return errors.New("latency_limit needs rate (open loop), as in pgbench")
			}
			if o.Duration("duration") == 0 && o.Int("transactions") == 0 {
				return errors.New("nothing to run: give duration or transactions")
			}
			return nil
		},
	}
	return &experimentAdapter{
		spec: w,
		load: func(ctx context.Context, s *State, t *pg.Target, o experiment.Options) error {
			lo := tpcb.LoadOptions{Scale: int(o.Int("scale")), Fillfactor: int(o.Int("fillfactor")), Partitions: int(o.Int("partitions")),
				Method: o.String("partition_method"), Workers: runtime.NumCPU(), Drop: true}
			bar := newLoadBar(s)
			_, err := tpcb.Load(ctx, t.Connect, lo, func(p tpcb.LoadProgress) {
				bar.update(p.Phase, p.Rows, p.TotalRows, p.Elapsed, p.Phase == "done")
			})
			return err
		},
		run: func(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, req experimentRun) (*summary, error) {
			o := req.Options
			p := tpcbParams{
				Script: o.String("script"), Clients: int(o.Int("clients")), Threads: int(o.Int("threads")), FollowServer: o.String("follow_server"), Duration: o.Duration("duration"),
				Transactions: o.Int("transactions"), Warmup: o.Duration("warmup"), Rate: o.Float("rate"),
				LatencyLimit: o.Duration("latency_limit"), MaxTries: int(o.Int("max_tries")), Distribution: o.String("distribution"),
				Pipeline: o.Bool("pipeline"), Seed: req.Seed, Progress: req.Progress, NoCheck: o.Bool("no_check"),
				MaxErrorsPct: o.Float("max_errors_pct"), Experiment: req.Experiment, Link: req.Link,
			}
			if p.Transactions > 0 {
				p.Duration = 0
			}
			// The run's own header and progress lines go to stderr; its
			// summary table is replaced by the experiment's one-line result.
			quiet := *s
			quiet.Stdout = io.Discard
			return runTPCB(ctx, &quiet, t, srv, st, p, true)
		},
		brief: func(sum *summary) (float64, string) {
			return sum.TPS, fmt.Sprintf("%.1f tps, p95 %.3f ms, %d errors", sum.TPS, sum.LatencyMs.P95, sum.Errors)
		},
	}
}

// tpccAdapter is the TPC-C-like workload in experiments: load through
// tpcc.Load, runs through runTPCC with the plan link.
func tpccAdapter() *experimentAdapter {
	w := experiment.Workload{
		Name: "tpcc", Description: "TPC-C-like OLTP (HammerDB TPROC-C style)", XAxis: "vusers", Metric: "nopm",
		Options: []experiment.Option{
			{Name: "warehouses", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true, Load: true},
			{Name: "partition", Kind: experiment.KindBool, Default: "false", Load: true, Doc: "range-partition the big tables by warehouse"},
			{Name: "vusers", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true, Max: 10000, HasMax: true},
			{Name: "duration", Kind: experiment.KindDuration, Default: "2m"},
			{Name: "iterations", Kind: experiment.KindInt, HasMin: true},
			{Name: "rampup", Kind: experiment.KindDuration, Default: "0"},
			{Name: "mode", Kind: experiment.KindString, Default: "procs", Enum: []string{"procs", "sql"}},
			{Name: "all_warehouses", Kind: experiment.KindBool, Default: "false"},
			{Name: "keying_think", Kind: experiment.KindBool, Default: "false"},
			{Name: "isolation", Kind: experiment.KindString, Default: "read-committed", Enum: []string{"read-committed", "repeatable-read", "serializable"}},
			{Name: "rate", Kind: experiment.KindFloat, HasMin: true},
			{Name: "max_tries", Kind: experiment.KindInt, Default: "10", Min: 1, HasMin: true},
			{Name: "no_check", Kind: experiment.KindBool, Default: "false"},
			{Name: "expensive_checks", Kind: experiment.KindBool, Default: "false"},
			{Name: "max_errors_pct", Kind: experiment.KindFloat, Default: "1", HasMin: true, Max: 100, HasMax: true},
		},
		RunTime: func(o experiment.Options) (time.Duration, bool) {
			if o.Int("iterations") > 0 {
				return o.Duration("rampup"), false
			}
			return o.Duration("duration") + o.Duration("rampup"), true
		},
		LoadTime: func(o experiment.Options) time.Duration {
			return 5*time.Second + time.Duration(o.Int("warehouses"))*8*time.Second
		},
		DataBytes: func(o experiment.Options) int64 { return o.Int("warehouses") * 100_000_000 },
		Check: func(o experiment.Options) error {
			if o.Int("iterations") > 0 && o.Float("rate") > 0 {
				return errors.New("iterations cannot be combined with rate: an open-loop run needs a duration")
			}
			if o.Duration("duration") == 0 && o.Int("iterations") == 0 {
				return errors.New("nothing to run: give duration or iterations")
			}
			return nil
		},
	}
	return &experimentAdapter{
		spec: w,
		load: func(ctx context.Context, s *State, t *pg.Target, o experiment.Options) error {
			lo := tpcc.LoadOptions{Warehouses: int(o.Int("warehouses")), Partition: o.Bool("partition"), Drop: true, Version: Version}
			bar := newLoadBar(s)
			_, err := tpcc.Load(ctx, connector(t), lo, func(p tpcc.LoadProgress) {
				bar.updateFrac(p.Phase, p.Rows, loadFraction(p), p.Elapsed, -1, p.Phase == tpcc.PhaseDone)
			})
			return err
		},
		run: func(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, req experimentRun) (*summary, error) {
			o := req.Options
			p := defaultTPCCParams()
			p.VUsers, p.Duration, p.Iterations, p.Rampup = int(o.Int("vusers")), o.Duration("duration"), o.Int("iterations"), o.Duration("rampup")
			p.Mode, p.AllWarehouses, p.KeyingThink, p.Isolation = o.String("mode"), o.Bool("all_warehouses"), o.Bool("keying_think"), o.String("isolation")
			p.Rate, p.MaxTries, p.NoCheck, p.ExpensiveChecks = o.Float("rate"), int(o.Int("max_tries")), o.Bool("no_check"), o.Bool("expensive_checks")
			p.MaxErrorsPct, p.Seed, p.Progress, p.Experiment, p.Link = o.Float("max_errors_pct"), req.Seed, req.Progress, req.Experiment, req.Link
			if p.Iterations > 0 {
				p.Duration = 0
			}
			quiet := *s
			quiet.Stdout = io.Discard
			return runTPCC(ctx, &quiet, t, srv, st, p, true)
		},
		brief: func(sum *summary) (float64, string) {
			if sum.TPCCSummary == nil {
				return sum.TPS, fmt.Sprintf("%.1f tps, %d errors", sum.TPS, sum.Errors)
			}
			return sum.NOPM, fmt.Sprintf("%.0f NOPM, %.0f TPM, %d errors", sum.NOPM, sum.TPM, sum.Errors)
		},
	}
}

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
	var dryRun, resume bool
	var progress time.Duration
	cmd := &cobra.Command{
		Use:   "run FILE [--results DB] [--dry-run] [--resume]",
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
line before anything starts. --dry-run prints the plan and a time estimate.
Ctrl-C stops after saving the current run as interrupted; --resume continues the
experiment of the same name, skipping the runs that completed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExperiment(cmd, s, &rf, args[0], dryRun, resume, progress)
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the expanded plan and a time estimate; run nothing")
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the experiment of the same name in the store, skipping completed runs")
	cmd.Flags().DurationVar(&progress, "progress", 5*time.Second, "progress line interval within each run (0 = none)")
	return cmd
}

// readExperiment parses a file against the adapters' catalog.
func readExperiment(path string, adapters map[string]*experimentAdapter) (*experiment.Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give the path of an experiment file (examples/ has some)", "cannot read %s", path)
	}
	spec, err := experiment.Parse(path, src, experimentCatalog(adapters))
	if err != nil {
		var se *experiment.SpecError
		if errors.As(err, &se) {
			return nil, &errs.Error{Kind: errs.KindUsage, Msg: se.Error(), Hint: "fix the file; docs/experiments.md describes every key"}
		}
		return nil, err
	}
	return spec, nil
}

func runExperiment(cmd *cobra.Command, s *State, rf *resultsFlag, path string, dryRun, resume bool, progress time.Duration) error {
	ctx := cmd.Context()
	adapters := experimentAdapters()
	spec, err := readExperiment(path, adapters)
	if err != nil {
		return err
	}
	if progress < 0 {
		return errs.Usage("--progress takes a duration like 5s, or 0 for none", "negative --progress")
	}
	// A DSN target is checked (loopback, no password) before anything else.
	if spec.Target.DSN != "" {
		if _, err := pg.ParseTarget(spec.Target.DSN, "", s.Redactor); err != nil {
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
	adapter := adapters[plan.Workload]

	if dryRun {
		var todo func(int) bool
		var note string
		if resume {
			e, _ := st.GetExperiment(ctx, spec.Name)
			if d := stored.Differences(plan); len(d) > 0 {
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
		}
		return nil
	}

	env := &expEnv{s: s, spec: spec, plan: plan, adapter: adapter, st: st, progress: progress}
	r := &experiment.Runner{Store: st, Env: env, Observe: env.observe}
	if !spec.SeedSet && !resume {
		s.eprintf("random order with seed %d (add `seed: %d` to the file to repeat this order)\n", plan.Seed, plan.Seed)
	}
	out, runErr := r.Execute(ctx, plan, resume)
	if out.ExperimentID != 0 {
		s.printf("\n")
		if err := printExperimentResults(context.WithoutCancel(ctx), s, st, plan.Name); err != nil && runErr == nil {
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

// printPlan is the dry run: the schedule as a table and the estimate.
func printPlan(s *State, p *experiment.Plan, todo func(int) bool, seedChosen bool, note string) {
	spec := p.Spec()
	nx := len(p.XValues)
	counted := p.Counted()
	s.printf("experiment %s: workload %s, %d configuration(s) x %d %s value(s) x %d repetition(s) = %d runs",
		p.Name, p.Workload, len(p.Configs), nx, orDash(p.XAxis), p.Repetitions, counted)
	if w := len(p.Runs) - counted; w > 0 {
		s.printf(" + %d warm-up runs", w)
	}
	s.printf("\n")
	if p.Description != "" {
		s.printf("  %s\n", p.Description)
	}
	switch {
	case spec.Target.DSN != "":
		s.printf("target: %s, database %s\n", spec.Target.DSN, p.Database)
	case spec.Target.Managed.Dir != "":
		s.printf("target: managed server in %s, database %s\n", spec.Target.Managed.Dir, p.Database)
	case len(p.Configs) > 0 && p.Configs[0].DataDir != "":
		s.printf("target: a managed server per data_dir value, database %s\n", p.Database)
	default:
		s.printf("target: a managed server in a temporary directory, database %s\n", p.Database)
	}
	if len(p.BaseSettings) > 0 {
		s.printf("base settings: %s\n", experiment.SettingsText(p.BaseSettings))
	}
	order := p.Order
	if p.Order != experiment.OrderSequential {
		order += fmt.Sprintf(" (seed %d)", p.Seed)
	}
	reset := "none (runs share the data)"
	if p.Reset == experiment.ResetTemplate {
		reset = "template copy before every run"
		if p.ResetEvery == experiment.ResetEveryConfiguration {
			reset = "template copy before each configuration's first run"
		}
	}
	s.printf("order: %s; reset: %s; cool-down: %s\n", order, reset, time.Duration(p.CooldownS*float64(time.Second)))
	s.printf("baseline: %s\n", p.Baseline)
	if note != "" {
		s.printf("%s\n", note)
	}
	s.printf("\n")

	// Runs as a table; the other steps as notes between them.
	steps := p.Schedule(todo)
	type line struct {
		note  string
		cells [5]string
	}
	var lines []line
	for _, st := range steps {
		switch st.Kind {
		case experiment.StepRun:
			r := p.Runs[st.Run]
			kind := fmt.Sprintf("rep %d", r.Repetition)
			if r.Warmup {
				kind = fmt.Sprintf("warm-up %d", r.Repetition)
			}
			est := st.Estimate.Round(time.Second).String()
			if st.Unknown {
				est = ">" + est
			}
			lines = append(lines, line{cells: [5]string{strconv.Itoa(st.Run + 1), r.Label, p.FormatX(r.X), kind, est}})
		case experiment.StepReset, experiment.StepCooldown:
		default:
			lines = append(lines, line{note: fmt.Sprintf("-- %s (%s)", p.DescribeStep(st), st.Estimate.Round(time.Second))})
		}
	}
	head := [5]string{"#", "CONFIGURATION", strings.ToUpper(orDash(p.XAxis)), "RUN", "EST"}
	var w [5]int
	for _, l := range append([]line{{cells: head}}, lines...) {
		for i, c := range l.cells {
			w[i] = max(w[i], len(c))
		}
	}
	row := func(c [5]string) {
		s.printf("%*s  %-*s  %*s  %-*s  %*s\n", w[0], c[0], w[1], c[1], w[2], c[2], w[3], c[3], w[4], c[4])
	}
	row(head)
	for _, l := range lines {
		if l.note != "" {
			s.printf("%*s  %s\n", w[0], "", l.note)
			continue
		}
		row(l.cells)
	}
	e := p.EstimateFor(todo)
	bound := ""
	if e.LowerBound {
		bound = "at least "
	}
	s.printf("\nestimate: %s%s = runs %s (%d) + warm-up runs %s (%d) + cool-downs %s (%d) + resets %s (%d) + loads %s (%d) + settings %s (%d restarts, %d reloads) + servers %s\n",
		bound, e.Total(), secs(e.RunsS), e.Runs, secs(e.WarmupRunsS), e.WarmupRuns, secs(e.CooldownS), e.Cooldowns,
		secs(e.ResetsS), e.Resets, secs(e.LoadsS), e.Loads, secs(e.SettingsS), e.Restarts, e.Reloads, secs(e.ServersS))
	if seedChosen && p.Order != experiment.OrderSequential {
		s.printf("the file has no seed: a run picks a new one (add `seed: %d` to run this order)\n", p.Seed)
	}
}

func secs(v float64) string {
	return time.Duration(v * float64(time.Second)).Round(time.Second).String()
}

// observe prints the orchestrator's progress.
func (e *expEnv) observe(ev experiment.Event) {
	s, p := e.s, e.plan
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
		default:
			s.eprintf("== %s\n", p.DescribeStep(ev.Step))
		}
	case experiment.EventStepDone:
		took := ev.Elapsed.Round(100 * time.Millisecond)
		switch ev.Step.Kind {
		case experiment.StepRun:
			res := ev.Result
			switch {
			case res != nil && res.RunID != 0:
				s.eprintf("   run %d/%d: %s (run %d, %s) in %s\n", ev.Ordinal, ev.Total, res.Brief, res.RunID, res.Status, took)
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
		case experiment.StepClose:
			if ev.Err == nil {
				s.eprintf("   settings restored\n")
			}
		}
	}
}

// expEnv opens targets for the orchestrator.
type expEnv struct {
	s        *State
	spec     *experiment.Spec
	plan     *experiment.Plan
	adapter  *experimentAdapter
	st       *store.Store
	progress time.Duration
}

// expTarget is one server for the orchestrator.
type expTarget struct {
	env     *expEnv
	srv     *server.Server // managed; nil for a DSN target
	started bool           // tunebench started srv (and stops it at the end)
	tempDir string         // removed at the end
	admin   *pg.Target     // connections for administration (not the benchmark database)
	applied []server.Applied
	version int // server_version_num
}

const tbMarker = "tunebench experiment"

// Open starts (or attaches to) the server of a data directory.
func (e *expEnv) Open(ctx context.Context, dataDir string) (experiment.Target, error) {
	t := &expTarget{env: e}
	spec := e.spec
	base := make([]server.Setting, 0, len(spec.Target.Settings))
	for _, b := range spec.Target.Settings {
		base = append(base, server.Setting{Name: b.Name, Value: b.Value})
	}
	if spec.Target.Managed == nil {
		var err error
		if t.admin, err = pg.ParseTarget(spec.Target.DSN, "", e.s.Redactor); err != nil {
			return nil, err
		}
		db := t.admin.Config.Database
		if db == spec.Target.Database || db == spec.Target.Database+"_template" {
			return nil, errs.Usage("point the dsn at another database (e.g. dbname=postgres) or change target.database",
				"the dsn's database %s is the experiment's benchmark database; tunebench recreates that one", db)
		}
		if len(base) > 0 {
			if t.applied, err = server.Apply(ctx, t.admin.Connect, nil, base); err != nil {
				return nil, err
			}
		}
	} else {
		m := spec.Target.Managed
		dir := dataDir
		if dir == "" {
			d, err := os.MkdirTemp("", "tunebench-experiment-")
			if err != nil {
				return nil, errs.Wrap(errs.KindEnvironment, err, "set TMPDIR to a writable directory or give target.managed.dir", "cannot make a temporary directory")
			}
			// The server runs as an unprivileged user when we are root: it must enter it.
			if err := os.Chmod(d, 0o755); err != nil {
				os.RemoveAll(d)
				return nil, err
			}
			t.tempDir, dir = d, filepath.Join(d, "server")
		}
		if srv, err := server.Open(dir); err == nil {
			if stt, err := srv.Status(ctx); err == nil && stt.Running {
				if len(srv.AppliedSettings()) > 0 {
					return nil, errs.Usage("stop it first (tunebench server stop --dir "+dir+" restores them), then run the experiment",
						"the server in %s is running with settings tunebench changed and has not restored", dir)
				}
				t.srv = srv
			}
		}
		if t.srv != nil {
			e.s.Redactor.AddSecret(t.srv.Password())
			t.srv.SetLog(e.s.Stderr)
			if len(base) > 0 {
				if _, err := t.srv.Apply(ctx, base); err != nil {
					return nil, err
				}
			}
		} else {
			srv, err := server.Start(ctx, server.Options{Dir: dir, Port: m.Port, PGBin: m.PGBin, RunAs: m.RunAs, Config: base, Log: e.s.Stderr})
			if err != nil {
				if t.tempDir != "" {
					os.RemoveAll(t.tempDir)
				}
				return nil, err
			}
			t.srv, t.started = srv, true
			e.s.Redactor.AddSecret(srv.Password())
		}
		var err error
		if t.admin, err = pg.ParseTarget(t.srv.DSN(), "", e.s.Redactor); err != nil {
			t.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	conn, err := t.admin.ConnectStd(ctx)
	if err != nil {
		t.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&t.version); err != nil {
		t.Close(context.WithoutCancel(ctx))
		return nil, errs.Wrap(errs.KindConnect, err, "", "reading the server version")
	}
	return t, nil
}

// Apply applies settings: on a managed server through it (recorded in its
// dir, restored by Close or the next start after a crash), on a DSN target
// directly (reload only).
func (t *expTarget) Apply(ctx context.Context, settings []experiment.Setting) (bool, error) {
	list := make([]server.Setting, len(settings))
	for i, s := range settings {
		list[i] = server.Setting{Name: s.Name, Value: s.Value}
	}
	var done []server.Applied
	var err error
	if t.srv != nil {
		done, err = t.srv.Apply(ctx, list)
	} else {
		done, err = server.Apply(ctx, t.admin.Connect, nil, list)
		t.applied = mergeFirst(t.applied, done)
	}
	restarted := false
	for _, a := range done {
		restarted = restarted || a.NeededRestart
	}
	return restarted, err
}

// mergeFirst adds done to old, keeping the first previous value of a setting
// applied twice (that is the one to restore).
func mergeFirst(old, done []server.Applied) []server.Applied {
	for _, d := range done {
		found := false
		for _, o := range old {
			found = found || o.Name == d.Name
		}
		if !found {
			old = append(old, d)
		}
	}
	return old
}

// Close restores the settings and stops a server it started.
func (t *expTarget) Close(ctx context.Context) error {
	var err error
	switch {
	case t.srv != nil && t.started:
		err = t.srv.Stop(ctx, "fast") // restores what Apply changed
	case t.srv != nil:
		err = t.srv.Restore(ctx)
	case len(t.applied) > 0:
		err = server.Restore(ctx, t.admin.Connect, nil, t.applied)
	}
	if t.tempDir != "" {
		if t.srv == nil || !t.started || err == nil {
			os.RemoveAll(t.tempDir)
		}
	}
	return err
}

// dbState reads whether a database exists and its comment.
func (t *expTarget) dbState(ctx context.Context, conn *pgx.Conn, name string) (exists bool, comment string, err error) {
	var c *string
	err = conn.QueryRow(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, name).Scan(&c)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", errs.Wrap(errs.KindConnect, err, "", "looking up database %s", name)
	}
	if c != nil {
		comment = *c
	}
	return true, comment, nil
}

// dropOwn drops a database tunebench made (its comment says so); anything
// else of that name is left alone and refused.
func (t *expTarget) dropOwn(ctx context.Context, conn *pgx.Conn, name string) error {
	exists, comment, err := t.dbState(ctx, conn, name)
	if err != nil || !exists {
		return err
	}
	if !strings.HasPrefix(comment, tbMarker) {
		return errs.Usage("set target.database to another name, or drop the database yourself if it is disposable",
			"database %s exists and was not made by a tunebench experiment; tunebench does not drop it", name)
	}
	id := pgx.Identifier{name}.Sanitize()
	// A DROP DATABASE cut short (an interrupt during a reset) leaves the
	// database invalid (datconnlimit -2, PostgreSQL 15.4+): it can only be
	// dropped, not altered.
	var invalid bool
	if err := conn.QueryRow(ctx, "SELECT datconnlimit = -2 FROM pg_database WHERE datname = $1", name).Scan(&invalid); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "looking up database %s", name)
	}
	if !invalid {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" ALLOW_CONNECTIONS true"); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "preparing to drop %s", name)
		}
	}
	stmt := "DROP DATABASE " + id
	if t.version >= 130000 {
		stmt += " WITH (FORCE)"
	} else if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "ending sessions on %s", name)
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "dropping database %s", name)
	}
	return nil
}

func comment(ctx context.Context, conn *pgx.Conn, db, text string) error {
	q := "COMMENT ON DATABASE " + pgx.Identifier{db}.Sanitize() + " IS " + quoteLiteral(text)
	_, err := conn.Exec(ctx, q)
	return err
}

// quoteLiteral quotes a string constant (standard_conforming_strings on).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// loadMarker identifies loaded data: the workload and its load options.
func (t *expTarget) loadMarker(cfg *experiment.Config) string {
	b, _ := json.Marshal(cfg.Load) // map keys are sorted
	return tbMarker + " data: " + t.env.plan.Workload + " " + string(b)
}

// Load loads cfg's data into the template database (reset: template) or the
// benchmark database (reset: none), unless a complete load of the same data
// is there (its comment says so: the load marker is set only at the end).
func (t *expTarget) Load(ctx context.Context, cfg *experiment.Config) (bool, error) {
	p := t.env.plan
	db := p.Database
	if p.Reset == experiment.ResetTemplate {
		db += "_template"
	}
	marker := t.loadMarker(cfg)
	conn, err := t.admin.ConnectStd(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if exists, c, err := t.dbState(ctx, conn, db); err != nil {
		return false, err
	} else if exists && c == marker {
		return false, nil
	}
	if p.Reset == experiment.ResetTemplate {
		// The old copy belongs to other data.
		if err := t.dropOwn(ctx, conn, p.Database); err != nil {
			return false, err
		}
	}
	if err := t.dropOwn(ctx, conn, db); err != nil {
		return false, err
	}
	id := pgx.Identifier{db}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+id); err != nil {
		return false, errs.Wrap(errs.KindConnect, err, "the experiment needs a superuser (or CREATEDB)", "creating database %s", db)
	}
	if err := comment(ctx, conn, db, tbMarker+" (loading)"); err != nil {
		return false, err
	}
	if err := t.env.adapter.load(ctx, t.env.s, t.admin.WithDatabase(db), cfg.Load); err != nil {
		if ctx.Err() != nil {
			return false, errs.Wrap(errs.KindInterrupted, err, "", "load interrupted")
		}
		return false, err
	}
	if p.Reset == experiment.ResetTemplate {
		// Nobody connects to the template: CREATE DATABASE ... TEMPLATE
		// needs it idle.
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" ALLOW_CONNECTIONS false"); err != nil {
			return false, errs.Wrap(errs.KindConnect, err, "", "closing the template %s", db)
		}
	}
	if err := comment(ctx, conn, db, marker); err != nil {
		return false, err
	}
	return true, nil
}

// Reset recreates the benchmark database from the template; FILE_COPY
// (PostgreSQL 15+) copies files instead of WAL-logging every block.
func (t *expTarget) Reset(ctx context.Context) error {
	p := t.env.plan
	conn, err := t.admin.ConnectStd(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := t.dropOwn(ctx, conn, p.Database); err != nil {
		return err
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{p.Database}.Sanitize() + " TEMPLATE " + pgx.Identifier{p.Database + "_template"}.Sanitize()
	if t.version >= 150000 {
		stmt += " STRATEGY FILE_COPY"
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		if ctx.Err() != nil {
			return errs.Wrap(errs.KindInterrupted, err, "", "reset interrupted")
		}
		return errs.Wrap(errs.KindConnect, err, "", "recreating %s from its template", p.Database)
	}
	return comment(ctx, conn, p.Database, tbMarker+" copy")
}

// Run does one run through the workload's adapter.
func (t *expTarget) Run(ctx context.Context, req experiment.RunRequest) (experiment.RunResult, error) {
	link := req.Link
	sum, err := t.env.adapter.run(ctx, t.env.s, t.admin.WithDatabase(t.env.plan.Database), t.srv, t.env.st, experimentRun{
		Experiment: req.Experiment, Options: req.Options, Load: req.Config.Load, Seed: req.Seed, Link: &link, Progress: t.env.progress,
	})
	var res experiment.RunResult
	if sum != nil {
		res.RunID, res.Status = sum.RunID, sum.Status
		res.Metric, res.Brief = t.env.adapter.brief(sum)
	}
	return res, err
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
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an experiment: its plan, progress and results per configuration",
		Args:  cobra.ExactArgs(1),
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
			return printExperimentResults(cmd.Context(), s, st, e.Name)
		},
	}
	rf.add(cmd.Flags())
	return cmd
}

// printExperimentResults prints one row per configuration and x value: the
// counted runs done, and the median, min and max of the workload's metric.
func printExperimentResults(ctx context.Context, s *State, st *store.Store, name string) error {
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
	for _, r := range runs {
		var m map[string]any
		if json.Unmarshal(r.Summary, &m) == nil {
			if v, ok := m[p.Metric].(float64); ok {
				metricOf[r.ID] = v
			}
		}
	}
	type key struct {
		label string
		x     float64
	}
	vals := map[key][]float64{}
	planned := map[key]int{}
	var keys []key
	for _, r := range p.Runs {
		if r.Warmup {
			continue
		}
		k := key{r.Label, r.X}
		if planned[k] == 0 {
			keys = append(keys, k)
		}
		planned[k]++
	}
	for _, l := range links {
		if l.Warmup || !experiment.Completed(l.Status) {
			continue
		}
		if v, ok := metricOf[l.RunID]; ok {
			k := key{l.Config, l.XValue}
			vals[k] = append(vals[k], v)
		}
	}
	configOrder := map[string]int{}
	for _, c := range p.Configs {
		configOrder[c.Label] = c.Index
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].label != keys[j].label {
			return configOrder[keys[i].label] < configOrder[keys[j].label]
		}
		return keys[i].x < keys[j].x
	})
	s.printf("%s vs %s, median (min-max) over repetitions; baseline %s\n", p.Metric, orDash(p.XAxis), p.Baseline)
	t := newTable(s)
	t.row("CONFIGURATION", strings.ToUpper(orDash(p.XAxis)), "RUNS", strings.ToUpper(p.Metric), "MIN", "MAX")
	for _, k := range keys {
		v := vals[k]
		runsText := fmt.Sprintf("%d/%d", len(v), planned[k])
		if len(v) == 0 {
			t.row(k.label, p.FormatX(k.x), runsText, "-", "-", "-")
			continue
		}
		sort.Float64s(v)
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		t.row(k.label, p.FormatX(k.x), runsText, fmt.Sprintf("%.1f", med), fmt.Sprintf("%.1f", v[0]), fmt.Sprintf("%.1f", v[len(v)-1]))
	}
	t.flush()
	return nil
}
