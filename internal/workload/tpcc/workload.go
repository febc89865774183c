package tpcc

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/loadspace"
)

// Workload is the registry entry: load, run, check and the result view.
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Meta describes the workload.
func (Workload) Meta() workload.Meta {
	return workload.Meta{
		Name:        "tpcc",
		Description: "TPC-C-like OLTP workload, HammerDB TPROC-C style (NOPM, TPM; procs and sql modes)",
		Version:     "1",
		Ops:         Ops(),
		Dialects:    []string{pgt.Dialect, DialectMariaDB},
	}
}

var isolations = []string{"read-committed", "repeatable-read", "serializable"}

// Options declares every option of the workload.
func (Workload) Options() option.Set {
	return append(option.Set{
		{Name: "warehouses", Short: "w", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Load: true,
			Doc: "warehouses to load (each about 500,000 rows, 105 MB with indexes)"},
		{Name: "partition", Kind: option.KindBool, Default: "false", Load: true,
			Doc: "range-partition the big per-warehouse tables by warehouse"},
		{Name: "drop", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "drop existing tpcc tables first (their data is lost)"},
		{Name: "resume", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "finish an interrupted load"},
		{Name: "force", Kind: option.KindBool, Load: true, FlagOnly: true,
			Doc: "load even when the estimate of the space it needs is more than the data directory's filesystem has free"},
		{Name: "seed", Kind: option.KindInt, Load: true, FlagOnly: true,
			Doc: "data generator seed (0 = from the clock; stored in tunebench_tpcc_meta)"},
		{Name: "copy_format", Kind: option.KindString, Default: FormatBinary, Enum: []string{FormatBinary, FormatText}, Load: true, FlagOnly: true, Hidden: true,
			Doc: "COPY format"},

		{Name: "vusers", Short: "u", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Max: 10000, HasMax: true, Role: option.RoleWorkers,
			Doc: "virtual users, each with its own connection"},
		{Name: "duration", Short: "T", Kind: option.KindDuration, Default: "2m", Role: option.RoleDuration,
			DefaultText: "2m unless {iterations}", Doc: "measured duration after the ramp-up"},
		{Name: "iterations", Kind: option.KindInt, HasMin: true, Role: option.RoleCount,
			Doc: "transactions per virtual user, instead of a duration; with a rate, the schedule's virtual users x this many starts"},
		{Name: "rampup", Kind: option.KindDuration, Default: "0", Role: option.RoleWarmup,
			Doc: "ramp-up before measuring (run, not counted)"},
		{Name: "mode", Kind: option.KindString, Default: ModeProcs, Enum: []string{ModeProcs, ModeSQL},
			Doc: "procs (server-side PL/pgSQL functions) or sql (client-side statements)"},
		{Name: "all_warehouses", Kind: option.KindBool, Default: "false",
			Doc: "spread each virtual user's transactions over all the warehouses dealt to it"},
		{Name: "keying_think", Kind: option.KindBool, Default: "false",
			Doc: "apply the spec's keying and think times (outside the timed region)"},
		{Name: "isolation", Kind: option.KindString, Default: "read-committed", Enum: isolations, Governs: "default_transaction_isolation",
			Doc: "transaction isolation level (the same default on every engine; MariaDB's own default is repeatable-read)"},
		{Name: "rate", Short: "R", Kind: option.KindFloat, HasMin: true, Role: option.RoleRate,
			Doc: "open loop: target transactions per second in total (Poisson schedule)"},
		workload.TimerSlackOption(),
		{Name: "max_tries", Kind: option.KindInt, Default: strconv.Itoa(DefaultMaxTries), Min: 1, HasMin: true,
			Doc: "tries per transaction for serialization failures and deadlocks (1 = no retry)"},
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed,
			Doc: "random seed (0 = from the clock; stored with the run)"},
		{Name: "no_check", Kind: option.KindBool, Default: "false", Role: option.RoleNoCheck,
			Doc: "skip the consistency checks after the run"},
		{Name: "expensive_checks", Kind: option.KindBool, Default: "false",
			Doc: "also run conditions 6, 10 and 12 after the run"},
		{Name: "max_errors_pct", Kind: option.KindFloat, Default: "1", HasMin: true, Max: 100, HasMax: true, Role: option.RoleMaxErrorsPct,
			Doc: "exit with code 4 when errors exceed this percentage of transactions"},
		{Name: "max_outage_pct", Kind: option.KindFloat, Default: "5", HasMin: true, Max: 100, HasMax: true, Role: option.RoleMaxOutagePct,
			Doc: "exit with code 4 (status errors) when outages (the server unreachable) cover more than this percentage of the measured window"},

		{Name: "expensive", Kind: option.KindBool, Check: true,
			Doc: "also check conditions 6, 10 and 12"},
		{Name: "all", Kind: option.KindBool, Check: true,
			Doc: "check all twelve conditions (11 holds only right after a load)"},
		{Name: "conditions", Kind: option.KindList, Check: true, Validate: checkConditions,
			Doc: "check exactly these conditions (1-12)"},
	}, workload.JobsOptions("COPY streams of warehouses, then index builds and ANALYZE side by side")...)
}

// checkConditions validates a list of condition numbers.
func checkConditions(text string) (string, error) {
	_, err := conditionList(text)
	return text, err
}

func conditionList(text string) ([]int, error) {
	var out []int
	for _, s := range option.SplitList(text) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > len(conditions) {
			return nil, option.Errorf("conditions are numbered 1 to 12 (clause 3.3.2.1 to 3.3.2.12)", "{conditions}: no consistency condition "+s)
		}
		out = append(out, n)
	}
	return out, nil
}

// RunTime: the duration and ramp-up (unknown with an iteration count).
func (w Workload) RunTime(o option.Values) (time.Duration, bool) {
	return workload.RunTimeByRoles(w, o)
}

// LoadTime: about 8 s per warehouse on 2 cores, after 5 s of set-up.
func (Workload) LoadTime(o option.Values) time.Duration {
	return 5*time.Second + time.Duration(o.Int("warehouses"))*8*time.Second
}

// DataBytes: 104.7 MB per warehouse with the indexes, and 13 MB for item
// (measured at 1, 2 and 4 warehouses, partitioned or not, PostgreSQL 15).
func (Workload) DataBytes(o option.Values) int64 { return dataBytes(int(o.Int("warehouses"))) }

func dataBytes(warehouses int) int64 { return 13_000_000 + int64(warehouses)*104_700_000 }

// Validate: --resume and --drop exclude each other (a load rule).
func (Workload) Validate(p option.Phase, v option.Values, given option.Given) error {
	if p == option.PhaseLoad && v.Bool("resume") && v.Bool("drop") {
		return option.Errorf("give {resume} to finish an interrupted load, or {drop} to start over", "{resume} and {drop} both given")
	}
	return nil
}

// LoadHelp is the help of `tunebench load tpcc`.
func (Workload) LoadHelp() workload.Help {
	return workload.Help{
		Use:   "--warehouses W [--jobs N] [--partition] [--drop | --resume] [--force]",
		Short: "Load the TPC-C-like tables (nine tables, about 500,000 rows per warehouse)",
		Long: `Creates warehouse, district, customer, history, new_order, orders, order_line,
item and stock with exact numeric money columns, and fills them per the TPC-C
population rules (clause 4.3.3.1): 100,000 items; per warehouse 100,000 stock
rows, 10 districts, 30,000 customers (the first 1,000 last names per district in
order, the rest NURand with the load-time C), one history row per customer, 3,000
orders per district with the last 900 undelivered, 5 to 15 lines per order.

The data goes in over --jobs connections with COPY (one transaction per
table, or per partition with --partition, that truncates it and copies with
FREEZE, so no VACUUM is needed); then the same connections build the primary keys
and indexes (different tables at once) and ANALYZE. The load constants (C-Load) and
the status are stored in tunebench_tpcc_meta: runs and checks refuse a load that
did not finish. An interrupted load is finished with --resume (the tables done
stay, the rest is redone); existing tables are only replaced with --drop.

Before the data goes in, the space the load needs (105 MB per warehouse of tables and
indexes, and as much WAL, at most max_wal_size) is compared with the free space of the
data directory's filesystem when it is known here (a managed server); the load is
refused when it does not fit, unless --force. A load that runs out of space stops,
keeps the finished tables and is marked incomplete: finish it with --resume once there
is room, or start over with --drop.

--partition range-partitions customer, history, new_order, orders, order_line and
stock by warehouse: one partition per warehouse up to 64, then ranges of
warehouses.`,
	}
}

// tailFactor estimates the keys and ANALYZE that follow the last COPY as a
// fraction of the data time (measured on 2 cores: 0.6 at 4 warehouses, 0.5
// at 10).
const tailFactor = 0.5

// loadFraction weighs the rows copied and the key and ANALYZE work done by
// their expected share of the time.
func loadFraction(p LoadProgress) float64 {
	if p.Phase == PhaseDone {
		return 1
	}
	var data, steps float64
	if p.TotalRows > 0 {
		data = float64(p.Rows) / float64(p.TotalRows)
	}
	if p.Work > 0 {
		steps = float64(p.WorkDone) / float64(p.Work)
	}
	return (data + tailFactor*steps) / (1 + tailFactor)
}

// loadETA estimates the time left: from the row rate while data is copied,
// then from the weighted key and ANALYZE steps. -1 when unknown.
func loadETA(p LoadProgress, dataStart time.Duration) time.Duration {
	switch p.Phase {
	case PhaseData:
		if p.Rows == 0 || dataStart < 0 || p.Elapsed <= dataStart {
			return -1
		}
		spent := p.Elapsed - dataStart
		dataTotal := time.Duration(float64(spent) * float64(p.TotalRows) / float64(p.Rows))
		return dataTotal - spent + time.Duration(tailFactor*float64(dataTotal))
	case PhaseKeys, PhaseAnalyze:
		if p.Work == 0 || p.WorkDone == 0 || dataStart < 0 {
			return -1
		}
		dataTotal := p.Elapsed - dataStart
		return time.Duration(tailFactor*float64(dataTotal)) * time.Duration(p.Work-p.WorkDone) / time.Duration(p.Work)
	}
	return -1
}

// Load builds the tables in the target's database (or resumes a load).
func (Workload) Load(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	if env.Target.Dialect() == DialectMariaDB {
		return loadOnMariaDB(ctx, env)
	}
	t, err := pgt.From(env.Target)
	if err != nil {
		return nil, err
	}
	o := env.Options
	lo := LoadOptions{Warehouses: int(o.Int("warehouses")), Partition: o.Bool("partition"),
		Drop: o.Bool("drop") || env.Fresh, Resume: o.Bool("resume"), Seed: o.Int("seed"), Format: o.String("copy_format"), Version: env.Version}
	var why string
	lo.Workers, why = t.LoadJobs(ctx, workload.Jobs(o))
	if lo.Resume && (env.Given == nil || !env.Given("warehouses")) {
		lo.Warehouses = 0 // taken from the interrupted load
	}
	lo.Space = &loadspace.Load{Target: t, What: "tpcc", Force: o.Bool("force"), Smaller: "fewer --warehouses"}
	if lo.Warehouses > 0 {
		lo.Space.What += " " + plural(lo.Warehouses, "warehouse")
	}
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	what := "loading tpcc"
	if lo.Resume {
		what = "resuming the tpcc load"
	} else {
		what += " " + plural(lo.Warehouses, "warehouse")
		if lo.Partition {
			what += " (partitioned)"
		}
	}
	env.Note("%s into %s with %d jobs (%s)", what, t.Describe(), lo.Workers, why)
	var dataStart time.Duration = -1
	gctx, stop := lo.Space.Guard(ctx)
	st, err := Load(gctx, t.Connect, lo, func(p LoadProgress) {
		if p.Phase == PhaseData && dataStart < 0 {
			dataStart = p.Elapsed
		}
		what := p.Phase
		if p.Phase == PhaseKeys || p.Phase == PhaseAnalyze {
			what = fmt.Sprintf("%s, step %d of %d", p.Phase, p.StepsDone+1, p.Steps)
		}
		env.Progress(workload.LoadProgress{What: what, Rows: p.Rows, TotalRows: p.TotalRows, Frac: loadFraction(p),
			ETA: loadETA(p, dataStart), Elapsed: p.Elapsed, Final: p.Phase == PhaseDone})
	})
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.KindInterrupted, err, "finish it with `tunebench load tpcc --resume`, or start over with --drop",
				"load interrupted; the finished tables are kept and the load is marked incomplete")
		}
		return nil, lo.Space.Error(ctx, err, "finish it with `tunebench load tpcc --resume` (the finished tables are kept), or start over with --drop, with fewer --warehouses")
	}
	if st.Complete {
		return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("the tpcc load of %s is already complete: nothing to resume", plural(st.Warehouses, "warehouse")))}}, nil
	}
	return &workload.Report{Blocks: loadBlocks(st)}, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func loadBlocks(st LoadStats) []results.Block {
	resumed := ""
	if st.Resumed {
		resumed = fmt.Sprintf(" (resumed: %d chunks were already in, %d copied now)", st.Skipped, st.Chunks)
	}
	tables := make([]string, 0, len(st.TableRows))
	for t := range st.TableRows {
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool { return st.TableRows[tables[i]] > st.TableRows[tables[j]] })
	line := "  rows:"
	for i, t := range tables {
		if i > 0 {
			line += ","
		}
		line += fmt.Sprintf(" %s %d", t, st.TableRows[t])
	}
	return []results.Block{
		results.Line(fmt.Sprintf("done in %.2f s%s: data %.2f s, keys %.2f s, analyze %.2f s (analyze overlaps keys)",
			st.Total.Seconds(), resumed, st.Data.Seconds(), st.Keys.Seconds(), st.Analyze.Seconds())),
		results.Line(line),
		results.Line(fmt.Sprintf("%d rows in %.2f s = %s rows/s; %.0f MB on disk; tunebench CPU %.2f s (generator and COPY protocol)",
			st.Rows, st.Total.Seconds(), results.Human(st.RowsPerSec), st.DataMBytes, st.CPU.Seconds())),
	}
}

// CheckHelp is the help of `tunebench check tpcc`.
func (Workload) CheckHelp() workload.Help {
	return workload.Help{
		Use:   "[--expensive | --all | --conditions 1,2,...]",
		Short: "Check the TPC-C consistency conditions (clause 3.3.2)",
		Long: `Evaluates the TPC-C consistency conditions in one repeatable-read snapshot and
prints one line per condition with the number of violations and the first keys.
Every condition is evaluated even when an earlier one fails.

By default conditions 1-5 and 7-9 (cheap: per warehouse and district sums, new
orders and delivery dates); --expensive adds 6, 10 and 12 (per order and per
customer joins over order_line); --all checks all twelve, including 11 (orders
minus new orders = 2,100 per district), which only holds right after a load: the
first Delivery breaks it. Exit code 5 when a condition fails.`,
	}
}

// Check evaluates the consistency conditions.
func (Workload) Check(ctx context.Context, env *workload.CheckEnv) (*workload.Report, error) {
	t := env.Target
	if err := supported(t); err != nil {
		return nil, err
	}
	o := CheckOptions{Expensive: env.Options.Bool("expensive"), All: env.Options.Bool("all")}
	var err error
	if o.Conditions, err = conditionList(env.Options.String("conditions")); err != nil {
		return nil, err
	}
	sd, err := openSide(ctx, t, false)
	if err != nil {
		return nil, err
	}
	defer sd.close()
	info, err := sd.info(ctx)
	if err != nil {
		return nil, err
	}
	env.Note("checking tpcc (%s) in %s", plural(info.Warehouses, "warehouse"), t.Describe())
	rep, err := sd.check(ctx, o)
	if err != nil {
		return nil, err
	}
	out := &workload.Report{Blocks: checkBlocks(rep)}
	if !rep.Passed {
		out.Failed = &workload.Failure{What: "tpcc consistency check", Detail: "condition " + joinInts(rep.Failed()),
			Hint: "look for errors in the runs since the load, or reload with `tunebench load tpcc --drop`"}
	}
	return out, nil
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// ShardOptions (workload.Sharder): the executor's split of the virtual
// users (and rate, threads, seed); NewRun then places the shard's virtual
// users after the earlier shards' (env.Shard, env.Unsharded), so that they
// take the terminals, home warehouses and Stock-Level districts the whole
// run would give them: no two shards drive the same terminal.
func (w Workload) ShardOptions(sh workload.Shard, v option.Values) (option.Values, string, error) {
	return workload.SplitByRoles(w.Meta().Name, w.Options().Phase(option.PhaseRun), sh, v)
}
