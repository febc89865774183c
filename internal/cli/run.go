package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

func newRunCmd(s *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run WORKLOAD",
		Short: "Run a workload and store the result",
	}
	cmd.AddCommand(newRunTPCBCmd(s), newRunTPCCCmd(s))
	return cmd
}

// tpcbParams are the parameters of one tpcb run; stored with the run.
type tpcbParams struct {
	Script       string        `json:"script"`
	Clients      int           `json:"clients"`
	Threads      int           `json:"threads,omitempty"`
	FollowServer string        `json:"follow_server,omitempty"` // auto, on or off
	Duration     time.Duration `json:"duration_ns"`
	Transactions int64         `json:"transactions_per_client"`
	Warmup       time.Duration `json:"warmup_ns"`
	Rate         float64       `json:"rate_tps"`
	LatencyLimit time.Duration `json:"latency_limit_ns"`
	MaxTries     int           `json:"max_tries"`
	Distribution string        `json:"distribution"`
	Pipeline     bool          `json:"pipeline"`
	Seed         int64         `json:"seed"`
	Progress     time.Duration `json:"progress_ns"`
	NoCheck      bool          `json:"no_check"`
	NoSamplers   bool          `json:"no_samplers,omitempty"`
	MaxErrorsPct float64       `json:"max_errors_pct"`
	Settings     []string      `json:"settings"`
	Target       string        `json:"target"`
	Experiment   string        `json:"experiment,omitempty"`
	// Link ties the run to an experiment's plan entry (saved with the run).
	Link *store.PlanLink `json:"-"`
}

func newRunTPCBCmd(s *State) *cobra.Command {
	var cf connFlags
	var rf resultsFlag
	var jsonPath, dist, cpuProfile string
	p := tpcbParams{Script: tpcb.ScriptTPCB, Clients: 1, FollowServer: "auto", MaxTries: 1, Progress: time.Second, MaxErrorsPct: 1}
	cmd := &cobra.Command{
		Use:   "tpcb --script S --clients N (--duration D | --transactions T) [--rate R [--latency-limit L]]",
		Short: "Run a pgbench-compatible TPC-B-like script and store the result",
		Long: `Runs pgbench's built-in scripts (tpcb-like, simple-update, select-only) with the
same statements, one statement per round trip with prepared statements (pgbench -M
prepared), or one round trip per transaction with --pipeline. Each client has its
own connection. tps = committed transactions / measured seconds (connection set-up
excluded), as pgbench reports it.

Closed loop by default. With --rate R the run is open loop: transactions start on a
seeded Poisson schedule at R per second in total, latency is measured from the
scheduled start, and schedule lag and service time are reported separately;
--latency-limit L skips transactions already later than L when a client gets to them
and counts completed ones over L as late (pgbench -R/-L semantics).

After the run, the balance check runs (unless --no-check). The exit code is 4 when
errors exceed --max-errors-pct of all transactions, 5 when the check fails, 130 when
interrupted (the partial result is saved, marked interrupted).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := gen.ParseDist(dist)
			if err != nil {
				return errs.Usage("--distribution is uniform, zipfian:S (1.001-1000), gaussian:T (>= 2) or exponential:T (> 0)", "%v", err)
			}
			p.Distribution = d.String()
			if cmd.Flags().Changed("duration") && cmd.Flags().Changed("transactions") {
				return errs.Usage("give --duration or --transactions, not both", "--duration and --transactions both given")
			}
			if !cmd.Flags().Changed("duration") && p.Transactions == 0 && p.Duration == 0 {
				p.Duration = 60 * time.Second
			}
			if p.Transactions > 0 {
				p.Duration = 0
			}
			return runMeasured(cmd, s, &cf, &rf, cpuProfile, jsonPath, func(ctx context.Context, t *pg.Target, srv *server.Server, st *store.Store) (*summary, error) {
				return runTPCB(ctx, s, t, srv, st, p, true)
			})
		},
	}
	f := cmd.Flags()
	cf.add(f)
	rf.add(f)
	f.StringVarP(&p.Script, "script", "b", p.Script, "tpcb-like, simple-update or select-only")
	f.IntVarP(&p.Clients, "clients", "c", p.Clients, "concurrent clients, each with its own connection")
	f.IntVarP(&p.Threads, "threads", "j", p.Threads, "driver threads serving the clients, as pgbench -j (closed loop; 0 = one per core, at most one per client)")
	f.StringVar(&p.FollowServer, "follow-server", p.FollowServer, "auto, on or off: with fewer threads than clients and one per CPU, pin each thread to a CPU and serve each connection from the thread on its server process's CPU (auto: on for select-only)")
	f.DurationVarP(&p.Duration, "duration", "T", 0, "measured duration (default 1m unless --transactions)")
	f.Int64VarP(&p.Transactions, "transactions", "t", 0, "transactions per client (like pgbench -t), instead of --duration")
	f.DurationVar(&p.Warmup, "warmup", 0, "warm-up before measuring (run, not counted)")
	f.Float64VarP(&p.Rate, "rate", "R", 0, "open loop: target transactions per second in total (Poisson schedule)")
	f.DurationVarP(&p.LatencyLimit, "latency-limit", "L", 0, "with --rate: skip transactions later than this, count completed ones over it as late")
	f.IntVar(&p.MaxTries, "max-tries", p.MaxTries, "tries per transaction for serialization failures and deadlocks (1 = no retry)")
	f.StringVar(&dist, "distribution", "uniform", "account choice: uniform, zipfian:S, gaussian:T or exponential:T (pgbench's definitions)")
	f.BoolVar(&p.Pipeline, "pipeline", false, "send each transaction's statements in one round trip (pgbench \\startpipeline)")
	f.Int64Var(&p.Seed, "seed", 0, "random seed (0 = from the clock; stored with the run)")
	f.DurationVarP(&p.Progress, "progress", "P", p.Progress, "progress line interval (0 = none)")
	f.BoolVar(&p.NoCheck, "no-check", false, "skip the consistency check after the run")
	f.BoolVar(&p.NoSamplers, "no-samplers", false, "do not record system, PostgreSQL and driver metrics (docs/metrics.md)")
	f.Float64Var(&p.MaxErrorsPct, "max-errors-pct", p.MaxErrorsPct, "exit with code 4 when errors exceed this percentage of transactions")
	f.StringArrayVar(&p.Settings, "set", nil, "server setting name=value for this run, applied with ALTER SYSTEM, verified, restored afterwards (repeatable; needs superuser)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the driver to this file (for tuning tunebench itself)")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&jsonPath, "json", "", "write the run summary as JSON to this file (see docs/json-summary.md)")
	return cmd
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		return errs.Wrap(errs.KindUsage, err, "choose a writable path for --json", "cannot write %s", path)
	}
	return os.Rename(path+".tmp", path)
}

// validate checks the run parameters before anything touches the database.
func (p *tpcbParams) validate() error {
	if err := tpcb.ValidScript(p.Script); err != nil {
		return errs.Usage("use --script tpcb-like, simple-update or select-only", "%v", err)
	}
	if p.Clients < 1 {
		return errs.Usage("give --clients 1 or more", "invalid --clients %d", p.Clients)
	}
	if p.Threads < 0 {
		return errs.Usage("give --threads 1 or more, or 0 for one per client", "invalid --threads %d", p.Threads)
	}
	if p.Threads > 0 && p.Threads < p.Clients && p.Rate > 0 {
		return errs.Usage("leave --threads out with --rate: the open loop gives each client its own thread",
			"--threads %d with %d clients applies to the closed loop only", p.Threads, p.Clients)
	}
	if p.Duration < 0 || p.Transactions < 0 || p.Warmup < 0 || p.LatencyLimit < 0 || p.Rate < 0 {
		return errs.Usage("durations, counts and rates must not be negative", "negative value in run parameters")
	}
	if p.Duration == 0 && p.Transactions == 0 {
		return errs.Usage("give --duration D or --transactions T", "nothing to run: duration and transactions are both 0")
	}
	if p.Transactions > 0 && p.Rate > 0 {
		return errs.Usage("with --rate, give --duration", "--transactions cannot be combined with --rate")
	}
	if p.LatencyLimit > 0 && p.Rate == 0 {
		return errs.Usage("--latency-limit needs --rate (open loop), as in pgbench", "--latency-limit without --rate")
	}
	if p.MaxTries < 1 {
		return errs.Usage("--max-tries takes 1 (no retry) or more", "invalid --max-tries %d", p.MaxTries)
	}
	switch p.FollowServer {
	case "", "auto", "on", "off":
	default:
		return errs.Usage("--follow-server takes auto, on or off", "invalid --follow-server %q", p.FollowServer)
	}
	if p.MaxErrorsPct < 0 || p.MaxErrorsPct > 100 {
		return errs.Usage("--max-errors-pct takes 0 to 100", "invalid --max-errors-pct %g", p.MaxErrorsPct)
	}
	return nil
}

// followServer resolves --follow-server. auto turns it on for select-only
// only: there each server process keeps to one CPU, and a driver thread
// pinned next to its connections' server processes wakes them without
// inter-processor interrupts. In the writing scripts the server processes
// wait on row locks and WAL flushes and move between CPUs, and pinned
// driver threads were measured slower (docs/benchmarks.md).
func followServer(mode, script string) bool {
	switch mode {
	case "on":
		return true
	case "off":
		return false
	}
	return script == tpcb.ScriptSelectOnly
}

// runThreads is the executor's thread count for --threads n (0: one per
// core, at most one per client; the open loop always has one per client).
func runThreads(n, clients int, rate float64) int {
	if rate > 0 {
		return 0
	}
	if n == 0 {
		n = min(runtime.NumCPU(), clients)
	}
	return n
}

// runTPCB runs one tpcb measurement end to end and saves it. It returns the
// summary (also when the run was interrupted or had errors) and an error that
// carries the exit code.
func runTPCB(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, p tpcbParams, verbose bool) (*summary, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	for _, kv := range p.Settings { // bad --set values fail before any connection
		if _, err := server.ParseSetting(kv); err != nil {
			return nil, err
		}
	}
	if p.Seed == 0 {
		p.Seed = time.Now().UnixNano()
	}
	p.Target = t.Describe()
	dist, _ := gen.ParseDist(p.Distribution)

	admin, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { admin.Close(context.Background()) }()
	info, err := tpcb.ReadInfo(ctx, admin)
	if err != nil {
		return nil, errs.Usage("load it first: tunebench load tpcb --scale N", "database %s: %v", t.Describe(), err)
	}
	ro := tpcb.RunOptions{Script: p.Script, Scale: info.Scale, Dist: dist, MaxTries: p.MaxTries, Pipeline: p.Pipeline, Seed: p.Seed}
	if err := ro.Validate(); err != nil {
		return nil, err
	}

	// Settings for this run: applied and verified now, restored at the end
	// whatever happens (a cancelled ctx must not stop the restore).
	applied, restore, err := applyRunSettings(ctx, s, t, srv, p.Settings, verbose)
	if err != nil {
		return nil, err
	}
	defer restore()
	if len(applied) > 0 {
		admin.Close(context.Background())
		if admin, err = t.Connect(ctx); err != nil {
			return nil, err
		}
	}

	env := envinfo.Take(ctx, envinfo.Options{Conn: admin, Version: Version})
	writes := p.Script != tpcb.ScriptSelectOnly
	histBefore, err := tpcb.HistoryCount(ctx, admin)
	if err != nil {
		return nil, err
	}

	if verbose {
		mode := "closed loop"
		if p.Rate > 0 {
			mode = fmt.Sprintf("open loop at %.1f tps", p.Rate)
		}
		length := p.Duration.String()
		if p.Transactions > 0 {
			length = fmt.Sprintf("%d transactions per client", p.Transactions)
		}
		threads := runThreads(p.Threads, p.Clients, p.Rate)
		if threads == 0 || threads > p.Clients {
			threads = p.Clients
		}
		s.eprintf("tpcb %s: scale %d, %d clients on %d threads, %s, %s, %s\n", ro.Describe(), info.Scale, p.Clients, threads, length, mode, t.Describe())
	}

	if writes && info.LoadedBy == "tunebench" {
		if err := tpcb.RecordRun(ctx, admin, nil); err != nil {
			return nil, err
		}
	}

	cfg := run.Config{
		Workers: p.Clients, Threads: runThreads(p.Threads, p.Clients, p.Rate), FollowServer: followServer(p.FollowServer, p.Script), Duration: p.Duration, Transactions: p.Transactions, Warmup: p.Warmup,
		Rate: p.Rate, LatencyLimit: p.LatencyLimit, Seed: p.Seed, Tick: time.Second,
		NewThread: func() workload.Thread { return &pg.Thread{} },
	}
	errLog := newErrorLog(s, 5)
	cfg.OnError = errLog.log
	if verbose && p.Progress > 0 {
		cfg.Tick = p.Progress
		cfg.OnTick = func(tk run.Tick) { printTick(s, tk) }
	}
	smp := startSampling(ctx, s, t, srv, p.NoSamplers, verbose)
	smp.attach(&cfg)
	res, execErr := run.Execute(ctx, cfg, func(ctx context.Context, id int) (workload.Worker, error) {
		return tpcb.NewWorker(ctx, t.Connect, ro, id)
	})
	sampled := smp.stop(res, p.Warmup)
	if res == nil {
		if execErr != nil {
			return nil, execErr
		}
		return nil, errs.New(errs.KindInternal, "", "executor returned no result")
	}

	// From here on, work must finish even after an interrupt.
	bg, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum := buildSummary(res)
	sum.Workload, sum.Script, sum.Scale, sum.WarmupS = "tpcb", p.Script, info.Scale, p.Warmup.Seconds()
	sum.Protocol = "prepared"
	if p.Pipeline {
		sum.Protocol = "prepared+pipeline"
	}
	if len(applied) > 0 {
		sum.Settings = map[string]string{}
		for _, a := range applied {
			sum.Settings[a.Name] = a.Value
		}
	}

	// History bookkeeping for the check: committed writing transactions over
	// warm-up and measurement (the history grows in both), plus drain.
	var check *tpcb.CheckReport
	// The admin connection may have died during the run (a server restart)
	// without pgx having noticed yet: reconnect if it does not answer.
	if admin.IsClosed() || admin.Ping(bg) != nil {
		admin.Close(bg)
		var c *pgx.Conn
		if c, err = t.Connect(bg); err == nil {
			admin = c
		}
	}
	// Only tunebench-loaded databases have the meta table (not pgbench -i ones).
	if err == nil && writes && info.LoadedBy == "tunebench" {
		err = tpcb.RecordRun(bg, admin, &tpcb.RunRecord{HistoryBefore: histBefore, Committed: res.CommittedAll, Ambiguous: res.AmbiguousAll})
	}
	if err == nil && !p.NoCheck && !res.Interrupted {
		var rep tpcb.CheckReport
		rep, err = tpcb.Check(bg, admin)
		if err == nil {
			check = &rep
			sum.Check = rep
		}
	}
	if err != nil {
		s.eprintf("warning: after the run: %v\n", err)
	}

	status := "ok"
	switch {
	case res.Interrupted:
		status = "interrupted"
	case res.Errors > 0:
		status = "errors"
	}
	if check != nil && !check.Passed {
		status = "failed"
	}
	sum.Status = status
	saved, err := saveRunLinked(bg, st, p.Experiment, "tpcb", p.Script, status, p, env, &sum, check, res, p.Link, append(seriesPoints(res), sampled...))
	if err != nil {
		return &sum, err
	}
	sum.RunID = saved
	if verbose {
		s.printf("\n")
		printSummaryTable(s, []summary{sum})
		printOutcomes(s, sum)
		if check != nil {
			s.printf("check:\n")
			printCheck(s, *check)
		}
		s.printf("stored as run %d in %s\n", saved, st.Path())
	}
	switch {
	case execErr != nil:
		return &sum, execErr
	case res.Interrupted:
		return &sum, errs.New(errs.KindInterrupted, "", "run interrupted; partial result saved as run %d (status interrupted)", saved)
	case check != nil && !check.Passed:
		return &sum, errs.New(errs.KindCheckFailed, "see the check lines above", "consistency check failed after run %d", saved)
	case sum.ErrorsPct > p.MaxErrorsPct:
		return &sum, errs.New(errs.KindRunErrors, "see the errors by SQLSTATE above; raise --max-errors-pct to accept them",
			"run %d finished with %.2f%% errors (threshold %.2f%%)", saved, sum.ErrorsPct, p.MaxErrorsPct)
	}
	return &sum, nil
}
