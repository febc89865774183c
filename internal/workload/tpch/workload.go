// Package tpch is the TPC-H-like analytics workload, HammerDB TPROC-H
// style: the eight tables generated row for row as the TPC's dbgen does
// (package dbgen) and streamed into COPY, the 22 queries with qgen's
// substitution parameters (package qgen), answers validated against the
// reference answers (package answers), the refresh functions, the power and
// throughput tests and their metrics. Its figures are TPC-H-like and
// QphH-like, not audited TPC-H results.
package tpch

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// Workload is the registry entry.
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Tests are the run's tests.
const (
	TestPower      = "power"
	TestThroughput = "throughput"
	TestFull       = "full"
)

// Meta describes the workload.
func (Workload) Meta() workload.Meta {
	ops := make([]string, 0, 24)
	for q := 1; q <= 22; q++ {
		ops = append(ops, queryOp(q))
	}
	ops = append(ops, "RF1", "RF2")
	return workload.Meta{
		Name:        "tpch",
		Description: "TPC-H-like analytics: dbgen-identical data, the 22 queries validated, power and throughput tests (QphH-like)",
		Version:     "1",
		Ops:         ops,
		Dialects:    []string{pgt.Dialect, DialectMariaDB},
	}
}

func queryOp(q int) string { return fmt.Sprintf("Q%d", q) }

// Options declares every option of the workload.
func (Workload) Options() option.Set {
	return append(option.Set{
		{Name: "scale", Short: "s", Kind: option.KindFloat, Default: "1", Min: MinScale, HasMin: true, Max: MaxScale, HasMax: true, Load: true,
			Doc: "scale factor (0.01 and up, fractions allowed): SF 1 is 6 million lineitems, about 1 GB of data"},
		{Name: "foreign_keys", Kind: option.KindBool, Default: "false", Load: true,
			Doc: "add the foreign keys of clause 1.4.2 after the data (the primary keys and indexes are always built)"},
		{Name: "drop", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "drop the existing TPC-H-like tables first (their data is lost)"},
		{Name: "force", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "load even when the estimate of the space it needs is more than the data directory's filesystem has free"},

		{Name: "test", Kind: option.KindString, Default: TestFull, Enum: []string{TestPower, TestThroughput, TestFull},
			Doc: "power (RF1, the 22 queries of stream 0, RF2), throughput (query streams next to a refresh stream), or full (power then throughput, as the specification's run)"},
		{Name: "validate", Kind: option.KindBool, Default: "false",
			Doc: "instead of a test, run the 22 queries with the validation parameters and compare every answer with the reference answer (SF 0.01, 0.1 and 1)"},
		{Name: "streams", Kind: option.KindInt, Default: "0", HasMin: true, Max: 1000, HasMax: true,
			DefaultText: "the specification's minimum for the scale (2 at SF 1)", Doc: "query streams of the throughput test"},
		{Name: "refresh", Kind: option.KindBool, Default: "true",
			Doc: "run the refresh functions RF1 and RF2 (off: queries only; no Power@Size then)"},
		{Name: "query_timeout", Kind: option.KindDuration, Default: "0s",
			Doc: "statement_timeout of each query (MariaDB: max_statement_time; 0 = the server's default); a query that reaches it is recorded as timed out"},
		{Name: "explain", Kind: option.KindBool, Default: "false",
			Doc: "after the test, run EXPLAIN (ANALYZE, BUFFERS) of stream 0's queries (MariaDB: ANALYZE FORMAT=JSON) and store the plans with the run"},
		{Name: "analyze", Kind: option.KindBool, Default: "false",
			Doc: "ANALYZE the tables before the test, untimed, so that statistics settings (default_statistics_target) take effect (MariaDB: ANALYZE TABLE ... PERSISTENT FOR ALL)"},
		{Name: "query_seed", Kind: option.KindInt, Default: "0", HasMin: true,
			Doc: "seed of the substitution parameters, to give every run of an experiment the same queries (0 = the run's seed)"},
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed,
			Doc: "the run's seed, from which the substitution parameters are drawn unless {query_seed} (0 = from the clock; stored with the run: the same seed gives the same parameters)"},
	}, workload.JobsOptions("the big tables go in as parts side by side (taking their chunks in turn), and the indexes are built side by side")...)
}

// Validate checks the rules between options.
func (Workload) Validate(p option.Phase, v option.Values, given option.Given) error {
	if p == option.PhaseRun && v.Bool("validate") && given != nil && given("test") {
		return option.Errorf("give either {validate} or {test}", "{validate} replaces the test: {test} cannot be given with it")
	}
	return nil
}

// LoadHelp is the help of `tunebench load tpch`.
func (Workload) LoadHelp() workload.Help {
	return workload.Help{
		Use:   "[--scale SF] [--foreign-keys] [--jobs N] [--drop] [--force]",
		Short: "Load the eight TPC-H-like tables, row for row as the TPC's dbgen generates them",
		Long: `Creates part, supplier, partsupp, customer, orders, lineitem, nation and region with the
specification's column types, generates their rows as dbgen does (identical data, so
the reference answers apply) in parallel chunks streamed into binary COPY over --jobs
connections: a small table (or any with one job) whole, in one transaction with FREEZE;
a big one in parts side by side, one per job, then one VACUUM. Each table's ANALYZE
and indexes follow as soon as its data is in, beside the COPY of the others; then the
primary keys, and the foreign keys with --foreign-keys. The progress line shows rows/s
and the time left per table; the end shows the generator's CPU time.

An interrupted load is resumed by running the same command again: finished tables are
kept, the rest are redone. A database with a complete load, or with other data in
these tables, is only replaced with --drop.

Before the data goes in, the space the load needs (1.71 GB per scale unit of tables and
indexes, and as much WAL, at most max_wal_size) is compared with the free space of the
data directory's filesystem when it is known here (a managed server); the load is
refused when it does not fit, unless --force. A load that runs out of space stops and
is marked incomplete: run the same command again once there is room (finished tables
are kept), or start over with --drop.

On MariaDB the tables are InnoDB, each made with its primary key and indexes, and each
table's rows go in by LOAD DATA LOCAL INFILE in one transaction (a table per job), then
ANALYZE TABLE ... PERSISTENT FOR ALL; --foreign-keys adds the keys without checking the
rows (dbgen's keys refer to existing rows). The space is checked and watched as on
PostgreSQL, with the same --force, when the server's data directory is on this
machine.`,
		Example: "  tunebench load tpch --scale 1 --server-dir ./pg\n  tunebench load tpch --scale 0.1 --server-dir ./mariadb",
	}
}

// RunHelp is the help of `tunebench run tpch`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "[--test power|throughput|full] [--streams S] [--validate] [--query-timeout D] [--explain] [--seed N]",
		Short: "Run the TPC-H-like power and throughput tests, or validate the 22 queries' answers",
		Long: `The power test runs RF1, the 22 queries of stream 0 in the specification's order and
RF2 on one session, and gives Power@Size. The throughput test runs S query streams,
each in its own order with its own parameters, next to a refresh stream of S RF1/RF2
pairs, and gives Throughput@Size. The full test runs both, and gives the composite
QphH-like figure (not an audited result) and, as HammerDB reports, the geometric mean
of the power test's query times.

The substitution parameters are drawn as qgen draws them from --seed (stored with the
run). The refresh functions insert and delete dbgen's update sets in turn; the tables
stay consistent for the next run (see tunebench check tpch).

--validate runs the 22 queries with the specification's validation parameters instead,
and compares each answer with the reference answer under the precision rules of clause
2.1.3.5 (answers exist for SF 0.01, 0.1 and 1, on data no refresh has changed).`,
		Example: "  tunebench run tpch --validate --server-dir ./pg\n  tunebench run tpch --test power --query-timeout 10m --server-dir ./pg",
	}
}

// CheckHelp is the help of `tunebench check tpch`.
func (Workload) CheckHelp() workload.Help {
	return workload.Help{
		Short: "Check row counts, key uniqueness and the order totals of the TPC-H-like data",
		Long: `In one repeatable-read snapshot: the row count of every table for the scale (orders and
lineitem as the refresh functions left them), unique keys, every o_totalprice equal to
the sum over its lineitems as clause 3.3.2.1 defines it, and no lineitem without its
order. Exit code 5 when a condition fails.`,
	}
}

// Headline: the QphH-like figure against the streams.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "qphh", Label: "QphH-like", Unit: "QphH-like (queries per hour x SF)", XAxis: "streams"}
}

// RunTime is not known in advance (the queries take what they take).
func (Workload) RunTime(option.Values) (time.Duration, bool) { return 0, false }

// LoadTime: about 60 s per scale unit on 2 cores, after a few seconds.
func (Workload) LoadTime(o option.Values) time.Duration {
	return 5*time.Second + time.Duration(o.Float("scale")*60*float64(time.Second))
}

// DataBytes: 1.71 GB per scale unit with the keys and indexes (measured at
// SF 0.01, 0.1 and 0.3, PostgreSQL 15: 17.8 MB, 172 MB, 515 MB).
func (Workload) DataBytes(o option.Values) int64 { return dataBytes(o.Float("scale")) }

func dataBytes(scale float64) int64 { return 1_000_000 + int64(scale*1.714e9) }

// Load builds the tables in the target's database.
func (Workload) Load(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	o := env.Options
	lo := LoadOptions{Scale: o.Float("scale"), ForeignKeys: o.Bool("foreign_keys"), Drop: o.Bool("drop") || env.Fresh}
	if env.Target.Dialect() == DialectMariaDB {
		return loadOnMariaDB(ctx, env, lo)
	}
	t, err := pgt.From(env.Target)
	if err != nil {
		return nil, err
	}
	var why string
	lo.Workers, why = t.LoadJobs(ctx, workload.Jobs(o))
	lo.Space = &loadspace.Load{Target: t, What: fmt.Sprintf("tpch scale %g", lo.Scale), Force: o.Bool("force"), Smaller: "a smaller --scale"}
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	env.Note("loading tpch scale %g into %s with %d jobs (%s)", lo.Scale, t.Describe(), lo.Workers, why)
	gctx, stop := lo.Space.Guard(ctx)
	st, err := Load(gctx, t.Connect, lo, loadProgress(env))
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil, interruptedLoad(err, lo)
		}
		return nil, lo.Space.Error(ctx, err, fmt.Sprintf("run `tunebench load tpch --scale %g` again to resume (finished tables are kept), or start over with --drop, at a smaller --scale", lo.Scale))
	}
	return &workload.Report{Blocks: loadBlocks(st)}, nil
}

func loadProgress(env *workload.LoadEnv) func(LoadProgress) {
	return func(p LoadProgress) {
		what := p.Phase
		if p.Detail != "" {
			what += ": " + p.Detail
		}
		env.Progress(workload.LoadProgress{What: what, Rows: p.Rows, TotalRows: p.TotalRows, Frac: p.Frac, ETA: p.ETA, Elapsed: p.Elapsed, Final: p.Phase == "done"})
	}
}

func interruptedLoad(err error, lo LoadOptions) error {
	return errs.Wrap(errs.KindInterrupted, err, fmt.Sprintf("run `tunebench load tpch --scale %g` again to resume (finished tables are kept), or add --drop to start over", lo.Scale),
		"load interrupted; the load is marked incomplete and no run will use it")
}

// loadOnMariaDB is Load on a MariaDB target (load_mariadb.go).
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
	lo.dirSpace = &loadspace.DirLoad{Target: env.Target, What: fmt.Sprintf("tpch scale %g", lo.Scale), Force: env.Options.Bool("force"), Smaller: "a smaller --scale"}
	env.Note("loading tpch scale %g into %s with %d jobs (%s)", lo.Scale, env.Target.Describe(), lo.Workers, why)
	st, err := loadMariaDB(ctx, admins, lo, loadProgress(env))
	if err != nil {
		next := fmt.Sprintf("run `tunebench load tpch --scale %g` again to resume (finished tables are kept), or start over with --drop", lo.Scale)
		if ctx.Err() != nil {
			return nil, interruptedLoad(err, lo)
		}
		if errs.HintOf(err) != "" {
			return nil, lo.dirSpace.Error(err, next)
		}
		return nil, lo.dirSpace.Error(errs.Wrap(errs.KindOf(err), err, next, "tpch load incomplete"), next)
	}
	return &workload.Report{Blocks: loadBlocks(st)}, nil
}

func loadBlocks(st LoadStats) []results.Block {
	out := []results.Block{results.Line(fmt.Sprintf("loaded tpch scale %g with %d jobs: %d rows in %.1f s (text pool %.1f s beside the preparation, generate and COPY %.1f s, then statistics and keys %.1f s); generator CPU %.1f s",
		st.Scale, st.Jobs, st.Rows, st.Total.Seconds(), st.TextPool.Seconds(), st.Generate.Seconds(), st.Keys.Seconds(), st.GeneratorCPU.Seconds()))}
	if len(st.Resumed) > 0 {
		out = append(out, results.Line("resumed: kept "+strings.Join(st.Resumed, ", ")+" from the interrupted load"))
	}
	tb := &results.Table{Columns: []string{"table", "parts", "rows", "seconds", "rows/s", "generator CPU s"}}
	for _, ts := range st.Tables {
		rate := 0.0
		if ts.Seconds > 0 {
			rate = float64(ts.Rows) / ts.Seconds
		}
		tb.Rows = append(tb.Rows, []string{ts.Table, fmt.Sprint(ts.Parts), fmt.Sprint(ts.Rows), fmt.Sprintf("%.1f", ts.Seconds), results.Human(rate), fmt.Sprintf("%.2f", ts.GenCPU.Seconds())})
	}
	if len(tb.Rows) > 0 {
		out = append(out, results.Block{Table: tb})
	}
	return out
}

// Check runs the consistency conditions.
func (Workload) Check(ctx context.Context, env *workload.CheckEnv) (*workload.Report, error) {
	var rep *CheckReport
	var err error
	if env.Target.Dialect() == DialectMariaDB {
		rep, err = checkOnMariaDB(ctx, env.Target)
	} else {
		rep, err = checkOnPostgres(ctx, env.Target)
	}
	if err == errNotLoaded {
		return nil, errs.Usage("load it with `tunebench load tpch --scale SF` (or finish an interrupted load by running it again)", "database %s: %v", env.Target.Describe(), err)
	}
	if err != nil {
		return nil, err
	}
	out := &workload.Report{Blocks: checkBlocks(rep)}
	if !rep.Passed {
		out.Failed = &workload.Failure{What: "tpch consistency check", Hint: "reload with `tunebench load tpch --drop`, and look for errors in the runs since the load"}
	}
	return out, nil
}

func checkOnPostgres(ctx context.Context, tt target.Target) (*CheckReport, error) {
	t, err := pgt.From(tt)
	if err != nil {
		return nil, err
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return Check(ctx, conn)
}

func checkBlocks(rep *CheckReport) []results.Block {
	tb := &results.Table{Columns: []string{"condition", "result", "detail"}}
	for _, c := range rep.Conditions {
		r := "ok"
		if !c.Passed {
			r = "FAILED"
		}
		tb.Rows = append(tb.Rows, []string{c.Name, r, c.Detail})
	}
	return []results.Block{{Table: tb}}
}
