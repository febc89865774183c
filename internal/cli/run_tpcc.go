package cli

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
)

// tpccParams are the parameters of one tpcc run; stored with the run.
type tpccParams struct {
	VUsers          int             `json:"vusers"`
	Duration        time.Duration   `json:"duration_ns"`
	Iterations      int64           `json:"iterations_per_vuser"`
	Rampup          time.Duration   `json:"rampup_ns"`
	Mode            string          `json:"mode"`
	AllWarehouses   bool            `json:"all_warehouses"`
	KeyingThink     bool            `json:"keying_think"`
	Isolation       string          `json:"isolation"`
	Rate            float64         `json:"rate_tps"`
	MaxTries        int             `json:"max_tries"`
	Seed            int64           `json:"seed"`
	Progress        time.Duration   `json:"progress_ns"`
	NoCheck         bool            `json:"no_check"`
	NoSamplers      bool            `json:"no_samplers,omitempty"`
	ExpensiveChecks bool            `json:"expensive_checks"`
	MaxErrorsPct    float64         `json:"max_errors_pct"`
	Settings        []string        `json:"settings"`
	Target          string          `json:"target"`
	Experiment      string          `json:"experiment,omitempty"`
	Link            *store.PlanLink `json:"-"`
	Constants       *tpcc.Constants `json:"run_constants,omitempty"`
}

func defaultTPCCParams() tpccParams {
	return tpccParams{VUsers: 1, Mode: "procs", Isolation: "read-committed", MaxTries: 10, Progress: time.Second, MaxErrorsPct: 1}
}

func newRunTPCCCmd(s *State) *cobra.Command {
	var cf connFlags
	var rf resultsFlag
	var jsonPath, cpuProfile string
	p := defaultTPCCParams()
	cmd := &cobra.Command{
		Use:   "tpcc --vusers N (--duration D | --iterations K) [--rampup R] [--mode procs|sql]",
		Short: "Run the TPC-C-like workload (HammerDB TPROC-C style) and store the result",
		Long: `Runs the five TPC-C-like transactions (New-Order, Payment, Order-Status,
Delivery, Stock-Level) with the standard mix (a shuffled deck of 10/10/1/1/1 per
pass). Each virtual user has its own connection and a home warehouse, dealt
round-robin so virtual users never share one while there are enough warehouses;
--all-warehouses spreads each virtual user's work over the warehouses dealt to it.

--mode procs calls server-side PL/pgSQL functions (one round trip per transaction,
like HammerDB); --mode sql sends the statements from the client, pipelined where
the transaction's logic allows. Both have the same effects on the database.

Results: NOPM = committed New-Orders per minute of the measured interval,
cross-checked against the growth of sum(d_next_o_id) (the run fails loudly if
they disagree beyond the ambiguous commits); TPM = commits + rollbacks per minute
from pg_stat_database (all databases, as HammerDB counts). Per transaction type:
count, min, avg, max, stddev, p50, p90, p95, p99 and total time. After the run,
consistency conditions 1-5 and 7-9 run in one snapshot (--expensive-checks adds
6, 10 and 12) and the distribution audits are compared with the spec's ranges.

Exit codes: 4 errors over --max-errors-pct, 5 a check or the NOPM cross-check
failed, 130 interrupted (partial result saved).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("duration") && cmd.Flags().Changed("iterations") {
				return errs.Usage("give --duration or --iterations, not both", "--duration and --iterations both given")
			}
			if p.Iterations == 0 && p.Duration == 0 {
				p.Duration = 2 * time.Minute
			}
			if p.Iterations > 0 {
				p.Duration = 0
			}
			return runMeasured(cmd, s, &cf, &rf, cpuProfile, jsonPath, func(ctx context.Context, t *pg.Target, srv *server.Server, st *store.Store) (*summary, error) {
				return runTPCC(ctx, s, t, srv, st, p, true)
			})
		},
	}
	f := cmd.Flags()
	cf.add(f)
	rf.add(f)
	f.IntVarP(&p.VUsers, "vusers", "u", p.VUsers, "virtual users, each with its own connection")
	f.DurationVarP(&p.Duration, "duration", "T", 0, "measured duration after the ramp-up (default 2m unless --iterations)")
	f.Int64Var(&p.Iterations, "iterations", 0, "transactions per virtual user, instead of --duration")
	f.DurationVar(&p.Rampup, "rampup", 0, "ramp-up before measuring (run, not counted)")
	f.StringVar(&p.Mode, "mode", p.Mode, "procs (server-side PL/pgSQL functions) or sql (client-side statements)")
	f.BoolVar(&p.AllWarehouses, "all-warehouses", false, "spread each virtual user's transactions over all the warehouses dealt to it")
	f.BoolVar(&p.KeyingThink, "keying-think", false, "apply the spec's keying and think times (outside the timed region)")
	f.StringVar(&p.Isolation, "isolation", p.Isolation, "read-committed, repeatable-read or serializable")
	f.Float64VarP(&p.Rate, "rate", "R", 0, "open loop: target transactions per second in total (Poisson schedule)")
	f.IntVar(&p.MaxTries, "max-tries", p.MaxTries, "tries per transaction for serialization failures and deadlocks (1 = no retry)")
	f.Int64Var(&p.Seed, "seed", 0, "random seed (0 = from the clock; stored with the run)")
	f.DurationVarP(&p.Progress, "progress", "P", p.Progress, "progress line interval (0 = none)")
	f.BoolVar(&p.NoCheck, "no-check", false, "skip the consistency checks after the run")
	f.BoolVar(&p.NoSamplers, "no-samplers", false, "do not record system, PostgreSQL and driver metrics (docs/metrics.md)")
	f.BoolVar(&p.ExpensiveChecks, "expensive-checks", false, "also run conditions 6, 10 and 12 after the run")
	f.Float64Var(&p.MaxErrorsPct, "max-errors-pct", p.MaxErrorsPct, "exit with code 4 when errors exceed this percentage of transactions")
	f.StringArrayVar(&p.Settings, "set", nil, "server setting name=value for this run, applied with ALTER SYSTEM, verified, restored afterwards (repeatable)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the driver to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&jsonPath, "json", "", "write the run summary as JSON to this file (see docs/json-summary.md)")
	return cmd
}

func (p *tpccParams) validate() error {
	if p.VUsers < 1 {
		return errs.Usage("give --vusers 1 or more", "invalid --vusers %d", p.VUsers)
	}
	if p.Duration < 0 || p.Iterations < 0 || p.Rampup < 0 || p.Rate < 0 {
		return errs.Usage("durations, counts and rates must not be negative", "negative value in run parameters")
	}
	if p.Duration == 0 && p.Iterations == 0 {
		return errs.Usage("give --duration D or --iterations K", "nothing to run: duration and iterations are both 0")
	}
	if p.Iterations > 0 && p.Rate > 0 {
		return errs.Usage("with --rate, give --duration", "--iterations cannot be combined with --rate")
	}
	if p.Mode != "procs" && p.Mode != "sql" {
		return errs.Usage("use --mode procs or --mode sql", "unknown mode %q", p.Mode)
	}
	switch p.Isolation {
	case "read-committed", "repeatable-read", "serializable":
	default:
		return errs.Usage("use --isolation read-committed, repeatable-read or serializable", "unknown isolation %q", p.Isolation)
	}
	if p.MaxTries < 1 {
		return errs.Usage("--max-tries takes 1 (no retry) or more", "invalid --max-tries %d", p.MaxTries)
	}
	if p.MaxErrorsPct < 0 || p.MaxErrorsPct > 100 {
		return errs.Usage("--max-errors-pct takes 0 to 100", "invalid --max-errors-pct %g", p.MaxErrorsPct)
	}
	return nil
}

// dbCounters are read from the database at the measurement window's edges.
type dbCounters struct {
	at        time.Time
	nextOID   int64 // sum(d_next_o_id)
	xacts     int64 // sum(xact_commit + xact_rollback) over all databases
	err       error
	completed bool
}

const tpccCountersSQL = `select (select sum(d_next_o_id) from district)::bigint,
 (select sum(xact_commit + xact_rollback) from pg_stat_database)::bigint`

// readCounters reads the counters; pg_stat_clear_snapshot makes repeated
// reads on one connection see fresh statistics.
func readCounters(ctx context.Context, conn *pgx.Conn) dbCounters {
	c := dbCounters{at: time.Now()}
	if _, c.err = conn.Exec(ctx, "select pg_stat_clear_snapshot()"); c.err != nil {
		return c
	}
	c.err = conn.QueryRow(ctx, tpccCountersSQL).Scan(&c.nextOID, &c.xacts)
	c.completed = c.err == nil
	return c
}

// windowReader reads dbCounters at the measurement start and end on its
// own connection without blocking the executor's collector.
type windowReader struct {
	conn       *pgx.Conn
	mu         sync.Mutex
	start, end dbCounters
	wg         sync.WaitGroup
}

func (w *windowReader) read(dst *dbCounters) func() {
	return func() {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w.mu.Lock()
			defer w.mu.Unlock()
			*dst = readCounters(ctx, w.conn)
		}()
	}
}

// runTPCC runs one tpcc measurement end to end and saves it.
func runTPCC(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, p tpccParams, verbose bool) (*summary, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Seed == 0 {
		p.Seed = time.Now().UnixNano()
	}
	p.Target = t.Describe()

	admin, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { admin.Close(context.Background()) }()
	info, err := tpcc.ReadInfo(ctx, admin)
	if err != nil {
		return nil, err
	}
	rc := tpcc.NewRunConstants(gen.NewRand(p.Seed, 1<<40), info.Load)
	p.Constants = &rc
	ro := tpcc.RunOptions{
		Warehouses: info.Warehouses, VUsers: p.VUsers, Mode: p.Mode, AllWarehouses: p.AllWarehouses,
		KeyingThink: p.KeyingThink, Isolation: p.Isolation, MaxTries: p.MaxTries, Constants: rc, Seed: p.Seed,
	}
	if err := ro.Validate(); err != nil {
		return nil, errs.Usage("see `tunebench run tpcc --help`", "%v", err)
	}

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
	if p.Mode == "procs" {
		if err := tpcc.InstallProcs(ctx, admin); err != nil {
			return nil, err
		}
	}
	env := envinfo.Take(ctx, envinfo.Options{Conn: admin, Version: Version})

	if verbose {
		length := p.Duration.String()
		if p.Iterations > 0 {
			length = fmt.Sprintf("%d transactions per virtual user", p.Iterations)
		}
		loop := "closed loop"
		if p.Rate > 0 {
			loop = fmt.Sprintf("open loop at %.1f tps", p.Rate)
		}
		extra := ""
		if p.AllWarehouses {
			extra += ", all warehouses"
		}
		if p.KeyingThink {
			extra += ", keying and think times"
		}
		s.eprintf("tpcc %s mode: %d warehouses, %d virtual users, %s isolation, ramp-up %s, %s, %s%s, %s\n",
			p.Mode, info.Warehouses, p.VUsers, p.Isolation, p.Rampup, length, loop, extra, t.Describe())
	}

	before := readCounters(ctx, admin)
	if before.err != nil {
		return nil, errs.Wrap(errs.KindConnect, before.err, "", "reading district and pg_stat_database before the run")
	}
	mon, err := t.ConnectStd(ctx)
	if err != nil {
		return nil, err
	}
	wr := &windowReader{conn: mon}
	defer func() { mon.Close(context.Background()) }()

	audit := tpcc.NewAudit()
	cfg := run.Config{
		Workers: p.VUsers, Duration: p.Duration, Transactions: p.Iterations, Warmup: p.Rampup,
		Rate: p.Rate, Seed: p.Seed, Tick: time.Second,
		OnMeasureStart: wr.read(&wr.start), OnMeasureEnd: wr.read(&wr.end),
	}
	errLog := newErrorLog(s, 5)
	cfg.OnError = errLog.log
	if verbose && p.Progress > 0 {
		cfg.Tick = p.Progress
		prevT := math.Inf(-1)
		cfg.OnTick = func(tk run.Tick) {
			span := p.Progress.Seconds()
			if !math.IsInf(prevT, -1) && tk.T > prevT {
				span = tk.T - prevT
			}
			prevT = tk.T
			printTPCCTick(s, tk, span)
		}
	}
	smp := startSampling(ctx, s, t, srv, p.NoSamplers, verbose)
	smp.attach(&cfg)
	res, execErr := run.Execute(ctx, cfg, func(ctx context.Context, id int) (workload.Worker, error) {
		return tpcc.NewWorker(ctx, t.Connect, ro, id, audit)
	})
	sampled := smp.stop(res, p.Rampup)
	if res == nil {
		if execErr != nil {
			return nil, execErr
		}
		return nil, errs.New(errs.KindInternal, "", "executor returned no result")
	}
	wr.wg.Wait()

	// From here on, work must finish even after an interrupt.
	bg, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sum := buildSummary(res)
	sum.Workload, sum.Script, sum.WarmupS = "tpcc", p.Mode, p.Rampup.Seconds()
	sum.Protocol = p.Mode
	sum.Scale = info.Warehouses
	tp := &TPCCSummary{VUsers: p.VUsers, Warehouses: info.Warehouses, Mode: p.Mode, Isolation: p.Isolation,
		AllWarehouses: p.AllWarehouses, KeyingThink: p.KeyingThink}
	sum.TPCCSummary = tp
	if len(applied) > 0 {
		sum.Settings = map[string]string{}
		for _, a := range applied {
			sum.Settings[a.Name] = a.Value
		}
	}
	minutes := res.MeasuredSeconds / 60
	var noCommitted int64
	for _, o := range res.Ops {
		if o.Op == tpcc.OpNewOrder && o.Class.Committed() {
			noCommitted += o.Count
		}
	}
	if minutes > 0 {
		tp.NOPM = float64(noCommitted) / minutes
	}
	if wr.start.completed && wr.end.completed && wr.end.at.After(wr.start.at) {
		m := wr.end.at.Sub(wr.start.at).Minutes()
		tp.TPM = float64(wr.end.xacts-wr.start.xacts) / m
		tp.NOPMDatabase = float64(wr.end.nextOID-wr.start.nextOID) / m
	}
	tp.PerTransaction = perTransaction(res)

	// The NOPM cross-check: over the whole run, committed New-Orders seen by
	// the driver must equal the growth of sum(d_next_o_id), up to ambiguous
	// commits (New-Orders whose COMMIT outcome is unknown, and steps
	// abandoned at the drain deadline).
	if admin.IsClosed() || admin.Ping(bg) != nil {
		admin.Close(bg)
		if c, err := t.Connect(bg); err == nil {
			admin = c
		}
	}
	after := readCounters(bg, admin)
	noAll := res.AllByOp[tpcc.OpNewOrder]
	xc := &nopmCheck{DriverCommitted: noAll.Committed, Ambiguous: noAll.Ambiguous + (res.AmbiguousAll - sumAmbiguous(res.AllByOp))}
	if after.err == nil {
		xc.DatabaseGrowth = after.nextOID - before.nextOID
		diff := xc.DatabaseGrowth - xc.DriverCommitted
		xc.Passed = diff >= 0 && diff <= xc.Ambiguous
		if xc.Passed {
			xc.Detail = fmt.Sprintf("sum(d_next_o_id) grew by %d, driver committed %d New-Orders (ambiguous %d)", xc.DatabaseGrowth, xc.DriverCommitted, xc.Ambiguous)
		} else {
			xc.Detail = fmt.Sprintf("MISMATCH: sum(d_next_o_id) grew by %d but the driver committed %d New-Orders (ambiguous %d)", xc.DatabaseGrowth, xc.DriverCommitted, xc.Ambiguous)
		}
	} else {
		xc.Detail = "could not read district after the run: " + after.err.Error()
	}
	tp.NOPMCheck = xc
	tp.Audits = audit.Report()

	var check *tpcc.CheckReport
	if !p.NoCheck && !res.Interrupted && after.err == nil {
		opts := tpcc.CheckOptions{Expensive: p.ExpensiveChecks}
		if verbose {
			s.eprintf("checking consistency conditions...\n")
		}
		rep, err := tpcc.Check(bg, admin, opts)
		if err != nil {
			s.eprintf("warning: consistency check: %v\n", err)
		} else {
			check = &rep
			sum.Check = rep
		}
	}

	status := "ok"
	switch {
	case res.Interrupted:
		status = "interrupted"
	case res.Errors > 0:
		status = "errors"
	}
	if (check != nil && !check.Passed) || (after.err == nil && !xc.Passed) {
		status = "failed"
	}
	sum.Status = status
	var checkAny any
	if check != nil {
		checkAny = check
	}
	saved, err := saveRunLinked(bg, st, p.Experiment, "tpcc", p.Mode, status, p, env, &sum, checkAny, res, p.Link, append(tpccSeries(res), sampled...))
	if err != nil {
		return &sum, err
	}
	sum.RunID = saved
	if verbose {
		s.printf("\n")
		printTPCCSummary(s, sum)
		if check != nil {
			s.printf("consistency conditions:\n")
			printTPCCCheck(s, *check)
		}
		s.printf("stored as run %d in %s\n", saved, st.Path())
	}
	switch {
	case execErr != nil:
		return &sum, execErr
	case res.Interrupted:
		return &sum, errs.New(errs.KindInterrupted, "", "run interrupted; partial result saved as run %d (status interrupted)", saved)
	case after.err == nil && !xc.Passed:
		return &sum, errs.New(errs.KindCheckFailed, "the driver's count of committed New-Orders and the database disagree: a driver or database bug", "NOPM cross-check failed after run %d: %s", saved, xc.Detail)
	case check != nil && !check.Passed:
		return &sum, errs.New(errs.KindCheckFailed, "see the condition lines above", "consistency check failed after run %d", saved)
	case sum.ErrorsPct > p.MaxErrorsPct:
		return &sum, errs.New(errs.KindRunErrors, "see the errors by SQLSTATE above; raise --max-errors-pct to accept them",
			"run %d finished with %.2f%% errors (threshold %.2f%%)", saved, sum.ErrorsPct, p.MaxErrorsPct)
	}
	return &sum, nil
}

func sumAmbiguous(m map[string]run.OpTotals) int64 {
	var n int64
	for _, v := range m {
		n += v.Ambiguous
	}
	return n
}

// perTransaction is HammerDB's time profile per transaction type, over the
// completed (committed or rolled back on purpose) calls of the measurement.
func perTransaction(res *run.Result) []txnStats {
	hs := map[string]*metrics.Hist{}
	for _, o := range res.Ops {
		if !o.Class.Completed() || o.Latency == nil {
			continue
		}
		if hs[o.Op] == nil {
			hs[o.Op] = metrics.NewHist()
		}
		hs[o.Op].Merge(o.Latency)
	}
	var out []txnStats
	for _, op := range tpcc.Ops() {
		h := hs[op]
		if h == nil || h.Count() == 0 {
			out = append(out, txnStats{Op: op})
			continue
		}
		p := h.PercentilesMs(50, 90, 95, 99)
		out = append(out, txnStats{Op: op, Count: h.Count(), MinMs: h.MinMs(), AvgMs: h.MeanMs(), MaxMs: h.MaxMs(), StdDevMs: h.StdDevMs(),
			P50Ms: p[0], P90Ms: p[1], P95Ms: p[2], P99Ms: p[3], TotalS: h.MeanMs() * float64(h.Count()) / 1000})
	}
	return out
}

// tpccSeries adds per-second NOPM (committed New-Orders of the interval
// times 60 over its length) and the New-Order p95 to the executor's series.
func tpccSeries(res *run.Result) []store.Point {
	pts := seriesPoints(res)
	prev := math.Inf(-1)
	for i, tk := range res.Series {
		span := 1.0
		if i > 0 {
			span = tk.T - res.Series[i-1].T
		} else if prev == math.Inf(-1) && tk.T < 1 && tk.T > 0 {
			span = tk.T
		}
		if span <= 0 {
			continue
		}
		no := tk.Ops[tpcc.OpNewOrder]
		pts = append(pts, store.Point{Series: "nopm", T: tk.T, V: float64(no.Committed) * 60 / span})
		pts = append(pts, store.Point{Series: "new_order_p95_ms", T: tk.T, V: no.P95Ms})
	}
	return pts
}

func printTPCCTick(s *State, tk run.Tick, span float64) {
	no := tk.Ops[tpcc.OpNewOrder]
	var completed int64
	for _, o := range tk.Ops {
		completed += o.Completed
	}
	phase := ""
	if tk.Phase != run.PhaseMeasure {
		phase = " (" + tk.Phase + ")"
	}
	// Live figures per interval from the driver's counts (the final TPM
	// comes from pg_stat_database).
	s.eprintf("progress: %6.1f s, NOPM %8.0f, TPM %8.0f, new-order p95 %7.3f ms, errors %d%s\n",
		tk.T, float64(no.Committed)*60/span, float64(completed)*60/span, no.P95Ms, tk.Errors, phase)
}

func printTPCCSummary(s *State, sum summary) {
	tp := sum.TPCCSummary
	s.printf("NOPM %.0f  TPM %.0f  (%d virtual users, %d warehouses, %s mode, %.1f s measured)\n",
		tp.NOPM, tp.TPM, tp.VUsers, tp.Warehouses, tp.Mode, sum.DurationS)
	if tp.NOPMCheck != nil {
		s.printf("NOPM cross-check: %s\n", tp.NOPMCheck.Detail)
	}
	s.printf("\n")
	printTxnTable(s, tp.PerTransaction)
	s.printf("\n")
	printOutcomes(s, sum)
	if audits, ok := tp.Audits.([]tpcc.AuditResult); ok && len(audits) > 0 {
		s.printf("audits (clause 9.2 ranges):\n")
		printAudits(s, audits)
	}
}

func printTxnTable(s *State, rows []txnStats) {
	tw := newTable(s)
	tw.row("transaction", "count", "min ms", "avg ms", "max ms", "stddev", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "total s")
	for _, r := range rows {
		tw.row(r.Op, fmt.Sprint(r.Count), f3(r.MinMs), f3(r.AvgMs), f3(r.MaxMs), f3(r.StdDevMs), f3(r.P50Ms), f3(r.P90Ms), f3(r.P95Ms), f3(r.P99Ms), fmt.Sprintf("%.1f", r.TotalS))
	}
	tw.flush()
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

// sortOps orders op names as tpcc.Ops, others after, alphabetically.
func sortOps(ops []string) {
	rank := map[string]int{}
	for i, o := range tpcc.Ops() {
		rank[o] = i + 1
	}
	sort.Slice(ops, func(i, j int) bool {
		ri, rj := rank[ops[i]], rank[ops[j]]
		if ri == 0 {
			ri = 1 << 20
		}
		if rj == 0 {
			rj = 1 << 20
		}
		if ri != rj {
			return ri < rj
		}
		return ops[i] < ops[j]
	})
}

func printAudits(s *State, audits []tpcc.AuditResult) {
	for _, a := range audits {
		mark := "PASS"
		switch {
		case a.Status == "not enough samples" || a.Status == "not applicable":
			mark = "----"
		case !a.Passed:
			mark = "FAIL"
		}
		rng := fmt.Sprintf("%g..%g", a.Min, a.Max)
		s.printf("  %-4s %-26s %8.3f %-5s (spec %s, %d samples)", mark, a.Name, a.Value, a.Unit, rng, a.Samples)
		if a.Note != "" {
			s.printf(" - %s", a.Note)
		}
		s.printf("\n")
	}
}
