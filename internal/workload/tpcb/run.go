package tpcb

import (
	"context"
	"fmt"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// RunHelp is the help of `tunebench run tpcb`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "--script S --clients N (--duration D | --transactions T) [--rate R [--latency-limit L]]",
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
errors exceed --max-errors-pct of all transactions, outages (the server unreachable)
cover more than --max-outage-pct of the measured window or the check could not run,
5 when the check fails, 130 when interrupted (the partial result is saved, marked
interrupted).`,
	}
}

// Headline: tps against clients.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "tps", Label: "tps", Unit: "tps (transactions per second)", XAxis: "clients"}
}

// params are the run's parameters as stored (the lifecycle adds the
// settings, the target and the experiment).
type params struct {
	Script       string `json:"script"`
	Distribution string `json:"distribution"`
	Pipeline     bool   `json:"pipeline"`
	NoCheck      bool   `json:"no_check"`
	workload.TxParams
}

// tpcbRun is one prepared run.
type tpcbRun struct {
	env  *workload.RunEnv
	t    target.Target
	ss   target.Sessions
	p    params
	exec option.Exec
	ro   RunOptions
	info Info
	book book
	// histBefore: pgbench_history rows before the run (for the check).
	histBefore int64
	mark       runMark // a writing run's mark (overlap.go)
}

// NewRun reads the loaded database's scale and prepares the run.
func (w Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	t := env.Target
	ss, ok := t.(target.Sessions)
	if !ok {
		return nil, errs.Usage("run tpcb on PostgreSQL or MariaDB", "the target %s runs no sessions", t.Describe())
	}
	o := env.Options
	x := option.ExecOf(w.Options().Phase(option.PhaseRun), o)
	r := &tpcbRun{env: env, t: t, ss: ss, exec: x}
	r.p = params{Script: o.String("script"), Distribution: o.String("distribution"), Pipeline: o.Bool("pipeline"),
		NoCheck: x.NoCheck, TxParams: workload.TxParamsOf(x, o, env.Seed)}
	dist, err := gen.ParseDist(r.p.Distribution)
	if err != nil {
		return nil, errs.Usage("see `tunebench run tpcb --help`", "%v", err)
	}
	r.p.Distribution = dist.String()
	if r.p.Pipeline && t.Dialect() == DialectMariaDB {
		return nil, errs.Usage("leave --pipeline out on MariaDB", "MariaDB has no pipeline mode: a transaction's statements go one round trip each")
	}
	b, err := openBook(ctx, t)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if r.info, err = b.info(ctx); err != nil {
		return nil, errs.Usage("load it first: tunebench load tpcb --scale N", "database %s: %v", t.Describe(), err)
	}
	r.ro = RunOptions{Script: r.p.Script, Scale: r.info.Scale, Dist: dist, MaxTries: r.p.MaxTries, Pipeline: r.p.Pipeline, Seed: env.Seed, Dialect: t.Dialect()}
	if err := r.ro.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *tpcbRun) writes() bool { return r.p.Script != ScriptSelectOnly }

// Describe is the header line.
func (r *tpcbRun) Describe() string {
	mode := "closed loop"
	if r.p.Rate > 0 {
		mode = fmt.Sprintf("open loop at %.1f tps", r.p.Rate)
	}
	length := r.p.Duration.String()
	if r.p.Transactions > 0 {
		length = fmt.Sprintf("%d transactions per client", r.p.Transactions)
	}
	threads := target.DriverThreads(r.ss, r.p.Threads, r.p.Clients)
	if threads == 0 || threads > r.p.Clients {
		threads = r.p.Clients
	}
	return fmt.Sprintf("tpcb %s: scale %d, %d clients on %d threads, %s, %s, %s", r.ro.Describe(), r.info.Scale, r.p.Clients, threads, length, mode, r.t.Describe())
}

func (r *tpcbRun) Variant() string { return r.p.Script }
func (r *tpcbRun) Params() any     { return r.p }

// Exec: one worker per client, multiplexed on the threads; the threads
// follow the server processes when asked (auto: select-only).
func (r *tpcbRun) Exec() workload.Exec {
	x := r.exec
	x.Threads = target.DriverThreads(r.ss, r.p.Threads, r.p.Clients)
	return workload.Exec{Exec: x, FollowServer: followServer(r.p.FollowServer, r.p.Script, target.FollowsServer(r.ss)), NewThread: r.ss.NewThread}
}

// Before counts the history rows and clears the last run's record (a run
// whose bookkeeping fails afterwards leaves no stale numbers).
func (r *tpcbRun) Before(ctx context.Context) error {
	var err error
	if r.book, err = openBook(ctx, r.t); err != nil {
		return err
	}
	if r.histBefore, err = r.book.historyCount(ctx); err != nil {
		return err
	}
	if r.writes() && r.info.LoadedBy == "tunebench" {
		if err := r.book.recordRun(ctx, nil); err != nil {
			return err
		}
		r.mark, err = r.book.mark(ctx)
		return err
	}
	return nil
}

func (r *tpcbRun) NewWorker(ctx context.Context, id int) (workload.Worker, error) {
	return NewWorker(ctx, r.ss, r.ro, id)
}

// After records the history expectation (committed writing transactions
// over warm-up, measurement and drain) and runs the balance check.
func (r *tpcbRun) After(ctx context.Context, res *run.Result, sum *results.Summary) (*workload.Verdict, error) {
	sum.Script, sum.Scale = r.p.Script, r.info.Scale
	sum.Protocol = "prepared"
	if r.p.Pipeline {
		sum.Protocol = "prepared+pipeline"
	}
	v := &workload.Verdict{}
	if r.env.Shard.On() {
		return r.afterShard(ctx, res, v)
	}
	// Only tunebench-loaded databases have the meta table (not pgbench -i
	// ones); without anything to record or check, the database need not
	// be reachable after the run.
	record := r.writes() && r.info.LoadedBy == "tunebench"
	check := !r.p.NoCheck && !res.Interrupted
	if !record && !check {
		return v, nil
	}
	// The admin connection may have died during the run (a server restart)
	// and a server in crash recovery refuses connections for a moment: on
	// a lost connection the record and the check are tried again on a new
	// one, within the same bounds as tpcc's read after the run.
	var rep CheckReport
	var overlap string
	err := r.book.afterRun(ctx, func() error {
		if record {
			now, err := r.book.started(ctx)
			if err != nil {
				return err
			}
			// An overlapped run records none: its growth is not its own.
			rec := &RunRecord{HistoryBefore: r.histBefore, Committed: res.CommittedAll, Ambiguous: res.AmbiguousAll}
			if overlap = r.mark.overlap(now); overlap != "" {
				rec = nil
			}
			if err := r.book.recordRun(ctx, rec); err != nil {
				return err
			}
		}
		if check {
			var err error
			rep, err = r.book.check(ctx)
			if err == nil && overlap != "" {
				rep = outside(rep, res.CommittedAll, res.AmbiguousAll, overlap)
			}
			return err
		}
		return nil
	})
	if err == nil && overlap != "" && !check {
		// No check to carry the word: say it on its own.
		v.Warnings = append(v.Warnings, "another tunebench run wrote to this database during this one ("+overlap+"): no run is recorded for a later `check tpcb`")
	}
	if err == nil && check {
		v.Check = rep
		if !rep.Passed {
			v.Failures = append(v.Failures, workload.Failure{What: "consistency check", Hint: "see the check lines above"})
		}
	}
	return v, err
}

// afterShard keeps a writing shard's history counts for the merge: every
// shard's transactions grow pgbench_history, so only the merge can hold
// the growth against what they all committed.
func (r *tpcbRun) afterShard(ctx context.Context, res *run.Result, v *workload.Verdict) (*workload.Verdict, error) {
	if !r.writes() {
		return v, nil
	}
	hg := &HistoryGrowth{Before: r.histBefore, Committed: res.CommittedAll, Ambiguous: res.AmbiguousAll}
	err := r.book.afterRun(ctx, func() error {
		var err error
		hg.After, err = r.book.historyCount(ctx)
		return err
	})
	if err != nil {
		hg.NotRead = "could not count pgbench_history after the run: " + errs.Brief(err)
	}
	v.Extra = &Summary{ShardHistory: hg}
	return v, nil
}

func (r *tpcbRun) Close() {
	if r.book != nil {
		r.book.close()
	}
}

// followServer resolves --follow-server. auto turns it on for select-only
// only: there each server process keeps to one CPU, and a driver thread
// pinned next to its connections' server processes wakes them without
// inter-processor interrupts. In the writing scripts the server processes
// wait on row locks and WAL flushes and move between CPUs, and pinned
// driver threads were measured slower (docs/benchmarks.md).
func followServer(mode, script string, gains bool) bool {
	switch mode {
	case "on":
		return true
	case "off":
		return false
	}
	return script == ScriptSelectOnly && gains
}
