package tpcb

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// Workload is the registry entry: load, run, check and the result view.
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Meta describes the workload.
func (Workload) Meta() workload.Meta {
	return workload.Meta{
		Name:        "tpcb",
		Description: "pgbench-compatible TPC-B-like workload (tpcb-like, simple-update, select-only)",
		Version:     "1",
		Ops:         Scripts(),
		Dialects:    []string{pgt.Dialect, DialectMariaDB},
	}
}

// Options declares every option of the workload.
func (Workload) Options() option.Set {
	return append(option.Set{
		{Name: "scale", Short: "s", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Load: true,
			Doc: "scale factor: 100,000 accounts, 10 tellers, 1 branch per unit"},
		{Name: "fillfactor", Kind: option.KindInt, Default: "100", Min: 10, HasMin: true, Max: 100, HasMax: true, Load: true,
			Doc: "fill factor of accounts, tellers and branches, as pgbench's"},
		{Name: "partitions", Kind: option.KindInt, Default: "0", HasMin: true, Load: true,
			Doc: "partition pgbench_accounts into this many partitions (0 = none)"},
		{Name: "partition_method", Kind: option.KindString, Default: "range", Enum: []string{"range", "hash"}, Load: true,
			Doc: "partition method"},
		{Name: "drop", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "drop existing pgbench tables first (their data is lost)"},
		{Name: "force", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "load even when the estimate of the space it needs is more than the data directory's filesystem has free"},

		{Name: "script", Short: "b", Kind: option.KindString, Default: ScriptTPCB, Enum: Scripts(),
			Doc: "the pgbench built-in script"},
		{Name: "follow_server", Kind: option.KindString, Default: "auto", Enum: []string{"auto", "on", "off"},
			Doc: "closed loop, with fewer threads than clients and one per CPU: pin each thread to a CPU and serve each connection from the thread on its server process's CPU (auto: on for select-only on PostgreSQL; off on MariaDB, whose connection threads move between CPUs)"},
		{Name: "max_tries", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true,
			Doc: "tries per transaction for serialization failures and deadlocks (1 = no retry)"},
		{Name: "distribution", Kind: option.KindString, Default: "uniform", Validate: checkDist,
			Doc: "account choice: uniform, zipfian:S, gaussian:T or exponential:T (pgbench's definitions)"},
		{Name: "pipeline", Kind: option.KindBool, Default: "false",
			Doc: "send each transaction's statements in one round trip (pgbench \\startpipeline)"},
		{Name: "no_check", Kind: option.KindBool, Default: "false", Role: option.RoleNoCheck,
			Doc: "skip the consistency check after the run"},
	}, append(workload.TxOptions(), workload.JobsOptions("COPY streams of pgbench_accounts, each taking the next 100,000 accounts in turn")...)...)
}

// RunTime: the duration and warm-up (unknown with a transaction count).
func (w Workload) RunTime(o option.Values) (time.Duration, bool) {
	return workload.RunTimeByRoles(w, o)
}

// LoadTime: about 1.5 s per scale unit on 2 cores, after a second of set-up.
func (Workload) LoadTime(o option.Values) time.Duration {
	return time.Second + time.Duration(o.Int("scale"))*1500*time.Millisecond
}

// DataBytes: 15.7 MB per scale unit with the keys (measured at scale 20,
// PostgreSQL 15: pgbench_accounts 13.4 MB, its primary key 2.25 MB); the
// heap grows as 100/fillfactor.
func (Workload) DataBytes(o option.Values) int64 {
	return dataBytes(int(o.Int("scale")), int(o.Int("fillfactor")))
}

func dataBytes(scale, fillfactor int) int64 {
	if fillfactor < 10 {
		fillfactor = 100
	}
	return int64(scale) * (2_250_000 + 13_430_000*100/int64(fillfactor))
}

// checkDist validates a distribution; the text stays as written (plans
// fingerprint it), the run stores the canonical form.
func checkDist(text string) (string, error) {
	if _, err := gen.ParseDist(text); err != nil {
		return "", option.Errorf("{distribution} is uniform, zipfian:S (1.001-1000), gaussian:T (>= 2) or exponential:T (> 0)", "{distribution}: "+err.Error())
	}
	return text, nil
}

// LoadHelp is the help of `tunebench load tpcb`.
func (Workload) LoadHelp() workload.Help {
	return workload.Help{
		Use:   "--scale N [--fillfactor F] [--partitions P] [--jobs N] [--drop] [--force]",
		Short: "Load the pgbench-compatible TPC-B-like tables (100,000 accounts per scale unit)",
		Long: `Creates pgbench_branches, pgbench_tellers, pgbench_accounts and pgbench_history
with pgbench's columns and sizes, loads them with COPY (accounts over several
parallel streams), runs VACUUM ANALYZE and builds the primary keys after the data,
as pgbench -i does. Existing tables are only replaced with --drop.

Before the data goes in, the space the load needs (15.7 MB per scale unit of tables
and indexes, and as much WAL, at most max_wal_size) is compared with the free space of
the data directory's filesystem when it is known here (a managed server); the load is
refused when it does not fit, unless --force. A load that runs out of space stops and
leaves the tables incomplete: load again with --drop (a tpcb load does not resume).`,
	}
}

// Load builds the tables in the target's database.
func (Workload) Load(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	o := env.Options
	lo := LoadOptions{Scale: int(o.Int("scale")), Fillfactor: int(o.Int("fillfactor")), Partitions: int(o.Int("partitions")),
		Method: o.String("partition_method"), Drop: o.Bool("drop") || env.Fresh}
	if env.Target.Dialect() == DialectMariaDB {
		return loadOnMariaDB(ctx, env, lo)
	}
	t, err := pgt.From(env.Target)
	if err != nil {
		return nil, err
	}
	var why string
	lo.Workers, why = t.LoadJobs(ctx, workload.Jobs(o))
	lo.Space = &loadspace.Load{Target: t, What: fmt.Sprintf("tpcb scale %d", lo.Scale), Force: o.Bool("force"), Smaller: "a smaller --scale"}
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	env.Note("loading tpcb scale %d into %s with %d jobs (%s)", lo.Scale, t.Describe(), lo.Workers, why)
	gctx, stop := lo.Space.Guard(ctx)
	st, err := Load(gctx, t.Connect, lo, loadProgress(env))
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.KindInterrupted, err, "load again with --drop", "load interrupted; the tables are incomplete and marked so")
		}
		return nil, lo.Space.Error(ctx, err, "load again with --drop (a tpcb load does not resume), or load a smaller --scale with --drop")
	}
	return &workload.Report{Blocks: []results.Block{results.Line(loadLine(st))}}, nil
}

// loadProgress reports a load's progress, with an estimate of the time
// left while the rows are generated.
func loadProgress(env *workload.LoadEnv) func(LoadProgress) {
	return func(p LoadProgress) {
		eta := time.Duration(-1)
		if rate := float64(p.Rows) / p.Elapsed.Seconds(); p.Phase == "generate" && rate > 0 && p.Rows < p.TotalRows {
			eta = time.Duration(float64(p.TotalRows-p.Rows)/rate) * time.Second / time.Second
		}
		env.Progress(workload.LoadProgress{What: p.Phase, Rows: p.Rows, TotalRows: p.TotalRows, Frac: -1, ETA: eta, Elapsed: p.Elapsed, Final: p.Phase == "done"})
	}
}

// loadOnMariaDB is Load on a MariaDB target (mariadb.go).
func loadOnMariaDB(ctx context.Context, env *workload.LoadEnv, lo LoadOptions) (*workload.Report, error) {
	admins, ok := env.Target.(target.Admins)
	if !ok {
		return nil, errs.New(errs.KindInternal, "", "the MariaDB target has no admin connections")
	}
	lo.Workers = workload.Jobs(env.Options)
	why := "--jobs"
	if lo.Workers == 0 {
		lo.Workers, why = runtime.NumCPU(), "this machine's CPUs"
	}
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	env.Note("loading tpcb scale %d into %s with %d jobs (%s)", lo.Scale, env.Target.Describe(), lo.Workers, why)
	st, err := loadMariaDB(ctx, admins, lo, loadProgress(env))
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.KindInterrupted, err, "load again with --drop", "load interrupted; the tables are incomplete and marked so")
		}
		return nil, err
	}
	return &workload.Report{Blocks: []results.Block{results.Line(loadLine(st))}}, nil
}

// CheckHelp is the help of `tunebench check tpcb`.
func (Workload) CheckHelp() workload.Help {
	return workload.Help{
		Short: "Check balances and the history growth of the last run",
		Long: `In one repeatable-read snapshot: sum(abalance) = sum(tbalance) = sum(bbalance)
= sum(pgbench_history.delta), and the rows added to pgbench_history since the last
tunebench run started equal the writing transactions it committed (up to its
ambiguous commits). Exit code 5 when a condition fails.`,
	}
}

// Check runs the consistency conditions.
func (Workload) Check(ctx context.Context, env *workload.CheckEnv) (*workload.Report, error) {
	b, err := openBook(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if _, err := b.info(ctx); err != nil {
		return nil, errs.Usage("load it with `tunebench load tpcb --scale N`", "database %s: %v", env.Target.Describe(), err)
	}
	rep, err := b.check(ctx)
	if err != nil {
		return nil, err
	}
	out := &workload.Report{Blocks: checkBlocks(rep)}
	if !rep.Passed {
		out.Failed = &workload.Failure{What: "tpcb consistency check", Hint: "look for errors in the run, or reload with `tunebench load tpcb --drop`"}
	}
	return out, nil
}
