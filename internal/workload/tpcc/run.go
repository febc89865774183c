package tpcc

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// RunHelp is the help of `tunebench run tpcc`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "--vusers N (--duration D | --iterations K) [--rampup R] [--mode procs|sql]",
		Short: "Run the TPC-C-like workload (HammerDB TPROC-C style) and store the result",
		Long: `Runs the five TPC-C-like transactions (New-Order, Payment, Order-Status,
Delivery, Stock-Level) with the standard mix (a shuffled deck of 10/10/1/1/1 per
pass). Each virtual user has its own connection and a home warehouse, dealt
round-robin so virtual users never share one while there are enough warehouses;
--all-warehouses spreads each virtual user's work over the warehouses dealt to it.

--mode procs calls server-side PL/pgSQL functions (one round trip per transaction,
like HammerDB); --mode sql sends the statements from the client, pipelined where
the transaction's logic allows. Both have the same effects on the database.
On MariaDB, procs mode calls stored procedures that start and end their own
transactions, and sql mode sends each transaction's statements as one
multi-statement round trip (New-Order: two), since MariaDB would run statements
sent past an error; --isolation is tunebench's read-committed unless given
(MariaDB's own default is repeatable-read).

Results: NOPM = committed New-Orders per minute of the measured interval,
cross-checked against the growth of sum(d_next_o_id) (the run fails loudly if
they disagree beyond the ambiguous commits); TPM = commits + rollbacks per minute
of the database under test in pg_stat_database (HammerDB sums all databases); on
MariaDB, Com_commit + Com_rollback of the whole server, as HammerDB counts it
(COMMIT and ROLLBACK statements: sql mode's read-only Order-Status and
Stock-Level run in autocommit and are not counted).
Per transaction type: count, min, avg, max, stddev, p50, p90, p95, p99 and
total time. After the run, consistency conditions 1-5 and 7-9 run in one
snapshot (--expensive-checks adds 6, 10 and 12) and the distribution audits
are compared with the spec's ranges.

Exit codes: 4 errors over --max-errors-pct, outages over --max-outage-pct of the
measured window, or the NOPM cross-check or the checks could not run; 5 a check or
the NOPM cross-check failed; 130 interrupted (partial result saved).`,
	}
}

// Headline: NOPM against virtual users.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "nopm", Label: "NOPM", Unit: "NOPM (New-Orders per minute)", XAxis: "vusers"}
}

// params are the run's parameters as stored.
type params struct {
	VUsers          int           `json:"vusers"`
	Duration        time.Duration `json:"duration_ns"`
	Iterations      int64         `json:"iterations_per_vuser"`
	Rampup          time.Duration `json:"rampup_ns"`
	Mode            string        `json:"mode"`
	AllWarehouses   bool          `json:"all_warehouses"`
	KeyingThink     bool          `json:"keying_think"`
	Isolation       string        `json:"isolation"`
	Rate            float64       `json:"rate_tps"`
	TimerSlack      time.Duration `json:"timer_slack_ns,omitempty"` // open loop only
	MaxTries        int           `json:"max_tries"`
	Seed            int64         `json:"seed"`
	NoCheck         bool          `json:"no_check"`
	ExpensiveChecks bool          `json:"expensive_checks"`
	MaxErrorsPct    float64       `json:"max_errors_pct"`
	MaxOutagePct    float64       `json:"max_outage_pct"`
	Constants       *Constants    `json:"run_constants,omitempty"`
}

type tpccRun struct {
	env   *workload.RunEnv
	t     target.Target
	p     params
	exec  option.Exec
	ro    RunOptions
	info  Info
	audit *Audit
	// admin reads the counters before and after; wr at the measurement
	// window's edges, on a connection of its own.
	admin  side
	before dbCounters
	wr     *windowReader
}

// NewRun reads the load's warehouses and constants and prepares the run.
func (w Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	t := env.Target
	if err := supported(t); err != nil {
		return nil, err
	}
	o := env.Options
	x := option.ExecOf(w.Options().Phase(option.PhaseRun), o)
	r := &tpccRun{env: env, t: t, exec: x, audit: NewAudit()}
	r.p = params{VUsers: x.Workers, Duration: x.Duration, Iterations: x.Count, Rampup: x.Warmup, Mode: o.String("mode"),
		AllWarehouses: o.Bool("all_warehouses"), KeyingThink: o.Bool("keying_think"), Isolation: o.String("isolation"),
		Rate: x.Rate, TimerSlack: x.TimerSlack, MaxTries: int(o.Int("max_tries")), Seed: env.Seed, NoCheck: x.NoCheck,
		ExpensiveChecks: o.Bool("expensive_checks"), MaxErrorsPct: x.MaxErrorsPct, MaxOutagePct: x.MaxOutagePct}
	sd, err := openSide(ctx, t, false)
	if err != nil {
		return nil, err
	}
	defer sd.close()
	if r.info, err = sd.info(ctx); err != nil {
		return nil, err
	}
	rc := NewRunConstants(gen.NewRand(env.Seed, 1<<40), r.info.Load)
	r.p.Constants = &rc
	r.ro = RunOptions{Warehouses: r.info.Warehouses, VUsers: r.p.VUsers, Mode: r.p.Mode, AllWarehouses: r.p.AllWarehouses,
		KeyingThink: r.p.KeyingThink, Isolation: r.p.Isolation, MaxTries: r.p.MaxTries, Constants: rc, Seed: env.Seed, Dialect: t.Dialect()}
	if env.Shard.On() {
		all := env.Unsharded.Int("vusers")
		r.ro.FirstVUser, r.ro.AllVUsers = int(env.Shard.Offset(all)), int(all)
	}
	if err := r.ro.Validate(); err != nil {
		return nil, errs.Usage("see `tunebench run tpcc --help`", "%v", err)
	}
	return r, nil
}

func (r *tpccRun) Variant() string { return r.p.Mode }
func (r *tpccRun) Params() any     { return r.p }

// Describe is the header line.
func (r *tpccRun) Describe() string {
	length := r.p.Duration.String()
	if r.p.Iterations > 0 {
		length = fmt.Sprintf("%d transactions per virtual user", r.p.Iterations)
	}
	loop := "closed loop"
	if r.p.Rate > 0 {
		loop = fmt.Sprintf("open loop at %.1f tps", r.p.Rate)
	}
	extra := ""
	if r.p.AllWarehouses {
		extra += ", all warehouses"
	}
	if r.p.KeyingThink {
		extra += ", keying and think times"
	}
	return fmt.Sprintf("tpcc %s mode: %d warehouses, %d virtual users, %s isolation, ramp-up %s, %s, %s%s, %s",
		r.p.Mode, r.info.Warehouses, r.p.VUsers, r.p.Isolation, r.p.Rampup, length, loop, extra, r.t.Describe())
}

// Exec: one worker per virtual user; the database counters are read at the
// measurement window's edges.
func (r *tpccRun) Exec() workload.Exec {
	return workload.Exec{Exec: r.exec, OnMeasureStart: r.wr.read(&r.wr.start), OnMeasureEnd: r.wr.read(&r.wr.end)}
}

// Before installs the functions (procs mode) and reads the counters.
func (r *tpccRun) Before(ctx context.Context) error {
	var err error
	if r.admin, err = openSide(ctx, r.t, false); err != nil {
		return err
	}
	if r.p.Mode == ModeProcs {
		if err := r.admin.installProcs(ctx); err != nil {
			return err
		}
	}
	if r.before = r.admin.counters(ctx, time.Now(), 0); r.before.err != nil {
		return errs.Wrap(errs.KindConnect, r.before.err, "", "reading district and the database's transaction counters before the run")
	}
	mon, err := openSide(ctx, r.t, true)
	if err != nil {
		return err
	}
	r.wr = &windowReader{side: mon}
	return nil
}

func (r *tpccRun) NewWorker(ctx context.Context, id int) (workload.Worker, error) {
	ss, ok := r.t.(target.Sessions)
	if !ok {
		return nil, errs.New(errs.KindInternal, "", "the %s target has no worker sessions", r.t.Dialect())
	}
	return NewWorker(ctx, ss, r.ro, id, r.audit)
}

func (r *tpccRun) Close() {
	if r.admin != nil {
		r.admin.close()
	}
	if r.wr != nil {
		r.wr.close()
	}
}

// After derives NOPM, TPM and the time profile, cross-checks NOPM against
// the database, compares the audits and runs the consistency conditions.
func (r *tpccRun) After(ctx context.Context, res *run.Result, sum *results.Summary) (*workload.Verdict, error) {
	r.wr.wg.Wait()
	sum.Script, sum.Protocol, sum.Scale = r.p.Mode, r.p.Mode, r.info.Warehouses
	x := &Summary{VUsers: r.p.VUsers, Warehouses: r.info.Warehouses, Mode: r.p.Mode, Isolation: r.p.Isolation,
		AllWarehouses: r.p.AllWarehouses, KeyingThink: r.p.KeyingThink}
	v := &workload.Verdict{Extra: x, Series: nopmSeries(res)}
	var noCommitted int64
	for _, o := range res.Ops {
		if o.Op == OpNewOrder && o.Class.Committed() {
			noCommitted += o.Count
		}
	}
	if minutes := res.MeasuredSeconds / 60; minutes > 0 {
		x.NOPM = float64(noCommitted) / minutes
	}
	x.TPM, x.NOPMDatabase, x.Unknown = windowFigures(r.wr.start, r.wr.end)
	x.PerTransaction = perTransaction(res)

	// The NOPM cross-check: over the whole run, committed New-Orders seen by
	// the driver must equal the growth of sum(d_next_o_id), up to ambiguous
	// commits (New-Orders whose COMMIT outcome is unknown, and steps
	// abandoned at the drain deadline).
	after := r.admin.counters(ctx, time.Now(), afterBudget)
	noAll := res.AllByOp[OpNewOrder]
	xc := &NOPMCheck{DriverCommitted: noAll.Committed, Ambiguous: noAll.Ambiguous + (res.AmbiguousAll - sumAmbiguous(res.AllByOp))}
	if after.err == nil && r.env.Shard.On() {
		// Every shard's New-Orders grow the districts: the cross-check is
		// the merge's, over all of them.
		xc.DatabaseGrowth, xc.Before, xc.After = after.nextOID-r.before.nextOID, r.before.nextOID, after.nextOID
		xc.NotRun = true
		xc.Detail = fmt.Sprintf("AT THE MERGE: shard %s committed %d New-Orders; sum(d_next_o_id) went from %d to %d with every shard's",
			r.env.Shard, xc.DriverCommitted, xc.Before, xc.After)
	} else if after.err == nil {
		xc.DatabaseGrowth = after.nextOID - r.before.nextOID
		diff := xc.DatabaseGrowth - xc.DriverCommitted
		xc.Passed = diff >= 0 && diff <= xc.Ambiguous
		lossy := ""
		if diff < 0 && restartedBetween(r.before, after) {
			lossy = r.admin.lossy(ctx)
		}
		switch {
		case xc.Passed:
			xc.Detail = fmt.Sprintf("sum(d_next_o_id) grew by %d, driver committed %d New-Orders (ambiguous %d)", xc.DatabaseGrowth, xc.DriverCommitted, xc.Ambiguous)
		case lossy != "":
			// Commits acknowledged before a crash are lost by design with
			// synchronous_commit or fsync off: the database is right, the
			// driver's count is right, and the two cannot be compared.
			xc.NotRun = true
			xc.Detail = fmt.Sprintf("NOT APPLICABLE: sum(d_next_o_id) grew by %d, %d less than the %d New-Orders the driver saw committed: the server crashed during the run and runs with %s, which loses the commits of its last moments by design",
				xc.DatabaseGrowth, -diff, xc.DriverCommitted, lossy)
			v.NotRun = append(v.NotRun, fmt.Sprintf("the NOPM cross-check does not apply: the server crashed during the run with %s and lost %d New-Orders it had acknowledged", lossy, -diff))
		default:
			xc.Detail = fmt.Sprintf("MISMATCH: sum(d_next_o_id) grew by %d but the driver committed %d New-Orders (ambiguous %d)", xc.DatabaseGrowth, xc.DriverCommitted, xc.Ambiguous)
			v.Failures = append(v.Failures, workload.Failure{What: "NOPM cross-check", Detail: xc.Detail,
				Hint: "the driver's count of committed New-Orders and the database disagree: a driver or database bug"})
		}
	} else {
		xc.NotRun = true
		xc.Detail = "NOT RUN: could not read district after the run: " + errs.Brief(after.err)
		v.NotRun = append(v.NotRun, "the NOPM cross-check could not run: could not read district after the run: "+errs.Brief(after.err))
	}
	x.NOPMCheck = xc
	x.Audits = r.audit.Report()

	// The checks are left out on purpose with --no-check and after an
	// interrupt; otherwise a check that cannot run is said, and counts.
	switch {
	case r.p.NoCheck || res.Interrupted:
	case after.err != nil:
		v.NotRun = append(v.NotRun, "the consistency conditions could not be checked: the database was unreachable after the run")
	default:
		r.env.Note("checking consistency conditions...")
		rep, err := r.admin.check(ctx, CheckOptions{Expensive: r.p.ExpensiveChecks})
		if err != nil {
			v.NotRun = append(v.NotRun, "the consistency conditions could not be checked: "+errs.Brief(err))
		} else {
			v.Check = rep
			if !rep.Passed {
				v.Failures = append(v.Failures, workload.Failure{What: "consistency check", Hint: "see the condition lines above"})
			}
		}
	}
	return v, nil
}

// asyncCommit names the settings that let a crash lose acknowledged
// commits (synchronous_commit=off, fsync=off), "" when neither is set or
// they cannot be read.
func asyncCommit(ctx context.Context, conn *pgx.Conn) string {
	if conn == nil {
		return ""
	}
	var sc, fs string
	if err := conn.QueryRow(ctx, "select current_setting('synchronous_commit'), current_setting('fsync')").Scan(&sc, &fs); err != nil {
		return ""
	}
	var out []string
	if sc == "off" {
		out = append(out, "synchronous_commit=off")
	}
	if fs == "off" {
		out = append(out, "fsync=off")
	}
	return strings.Join(out, " and ")
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
func perTransaction(res *run.Result) []TxnStats {
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
	var out []TxnStats
	for _, op := range Ops() {
		h := hs[op]
		if h == nil || h.Count() == 0 {
			out = append(out, TxnStats{Op: op})
			continue
		}
		p := h.PercentilesMs(50, 90, 95, 99)
		out = append(out, TxnStats{Op: op, Count: h.Count(), MinMs: h.MinMs(), AvgMs: h.MeanMs(), MaxMs: h.MaxMs(), StdDevMs: h.StdDevMs(),
			P50Ms: p[0], P90Ms: p[1], P95Ms: p[2], P99Ms: p[3], TotalS: h.MeanMs() * float64(h.Count()) / 1000})
	}
	return out
}

// nopmSeries are per-second NOPM (committed New-Orders of the interval times
// 60 over its length: the tick's own span, so the first tick, which may
// cover the whole ramp-up, is not divided by one second) and the New-Order
// p95.
func nopmSeries(res *run.Result) []store.Point {
	var pts []store.Point
	for _, tk := range res.Series {
		span := tk.Span
		if span <= 0 {
			continue
		}
		no := tk.Ops[OpNewOrder]
		pts = append(pts, store.Point{Series: "nopm", T: tk.T, V: float64(no.Committed) * 60 / span})
		pts = append(pts, store.Point{Series: "new_order_p95_ms", T: tk.T, V: no.P95Ms})
	}
	return pts
}
