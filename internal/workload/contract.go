package workload

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
)

// Meta describes a workload.
type Meta struct {
	Name        string
	Description string
	Version     string
	// Command, when set, also makes `tunebench <Command>` run the workload
	// (`tunebench storage` is `tunebench run storage`).
	Command string
	// Layouts says the workload works in a directory a storage layout can
	// hold (package storage/layout): its top-level command gets `layout
	// check` (`tunebench storage layout check FILE`).
	Layouts bool
	// Ops lists the operations (transaction types) in display order.
	Ops []string
	// Dialects lists the database dialects the workload speaks (see
	// target.Target.Dialect); empty: it needs no database.
	Dialects []string
	// Platforms lists the operating systems (runtime.GOOS) the workload
	// runs on, and PlatformsWhy says why not elsewhere; empty: all.
	Platforms    []string
	PlatformsWhy string
}

// CheckPlatform refuses, with the reason, a workload that does not run on
// goos.
func (m Meta) CheckPlatform(goos string) error {
	if len(m.Platforms) == 0 || slices.Contains(m.Platforms, goos) {
		return nil
	}
	names := make([]string, len(m.Platforms))
	for i, p := range m.Platforms {
		names[i] = osName(p)
	}
	return errs.New(errs.KindUsage, "run it on "+strings.Join(names, " or "),
		"%s does not run on %s: %s", m.Name, osName(goos), m.PlatformsWhy)
}

// osName is a GOOS as people name the system.
func osName(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return goos
}

// Workload is what every workload provides: its description and its
// options, every phase's, declared once.
type Workload interface {
	Meta() Meta
	Options() option.Set
}

// Help is the text of a generated command: Use is what follows the
// command's name on its usage line.
type Help struct {
	Use, Short, Long, Example string
}

// Loader builds a workload's schema and data.
type Loader interface {
	Workload
	LoadHelp() Help
	// Load builds the data in env.Target's database. An interrupted load
	// returns an error of kind interrupted saying how to go on.
	Load(ctx context.Context, env *LoadEnv) (*Report, error)
}

// LoadEnv is what a load gets.
type LoadEnv struct {
	Target  target.Target
	Options option.Values // the load options, defaults filled, checked
	// Given reports which options the user gave (nil: none).
	Given option.Given
	// Fresh: the database was made empty for this load (an experiment's):
	// build everything, replacing nothing of the user's.
	Fresh    bool
	Version  string
	Progress func(LoadProgress)
	Note     func(format string, a ...any) // a line on stderr
}

// LoadProgress is one update of a load's progress bar.
type LoadProgress struct {
	What      string // the phase, e.g. "generate" or "keys, step 3 of 9"
	Rows      int64  // rows done
	TotalRows int64
	// Frac is the share done in [0, 1]; negative: Rows / TotalRows.
	Frac float64
	// ETA is the time left; negative: unknown.
	ETA     time.Duration
	Elapsed time.Duration
	Final   bool
}

// Report is what a load or a check prints when it ends; Failed is set when
// a check failed (exit code 5).
type Report struct {
	Blocks []results.Block
	Failed *Failure
}

// Failure is a failed check: What failed ("consistency check"), a Detail,
// and the Hint for the user.
type Failure struct {
	What, Detail, Hint string
}

// Runner measures the workload.
type Runner interface {
	Workload
	RunHelp() Help
	Headline() Headline
	// NewRun prepares one run; errors are usage or connection errors, and
	// nothing has been measured or changed.
	NewRun(ctx context.Context, env *RunEnv) (Run, error)
}

// Headline is the figure a workload's runs are compared by, and what it
// is plotted against.
type Headline struct {
	Metric string // the summary field: tps, nopm, iops, read_score
	Label  string // how tables name it: tps, NOPM
	Unit   string // the axis label: tps (transactions per second)
	XAxis  string // the run option on the x axis: clients, vusers
}

// RunEnv is what a run gets.
type RunEnv struct {
	// Target is the database (nil for a workload without dialects, unless
	// an experiment runs it next to a managed server: see ScratchDir).
	Target  target.Target
	Options option.Values // the run options, defaults filled, checked
	Seed    int64         // the run's seed, never 0
	Version string
	Getenv  func(string) string
	// LookupEnv reports whether a variable is set (nil: unset).
	LookupEnv func(string) (string, bool)
	// Note writes a line on stderr (progress of a run that measures itself).
	Note func(format string, a ...any)
	// Stdout and Stderr take what the run itself prints for the user, as
	// pgbench prints a script's debug() values and passes its \shell
	// commands' output through (nil: discarded). Safe for concurrent
	// writes; a line is written whole.
	Stdout, Stderr io.Writer
	// Shard, for a shard of a split run, says which (Options are already
	// the shard's), and Unsharded are the whole run's options, for a
	// workload that places its part in the whole (tpcc's terminals).
	Shard     Shard
	Unsharded option.Values
	// Ready, for a shard that measures itself (a Measurer: tpch), is
	// called once its sessions are connected and before it measures: the
	// shards wait there for each other (--rendezvous). Nil otherwise.
	Ready func(ctx context.Context) error
}

// Run is one prepared run. It is one of Transactions (measured by the
// executor) or Measurer (measures itself).
type Run interface {
	// Describe is the line printed before the run starts.
	Describe() string
	// Variant is stored with the run: the script, the mode.
	Variant() string
	// Params are the run's parameters as stored (marshalled to a JSON
	// object; the run lifecycle adds its own: seed, settings, target).
	Params() any
}

// Transactions is a run the executor drives: one worker per client.
type Transactions interface {
	Run
	// Exec configures the executor.
	Exec() Exec
	// Before runs after the settings are applied, before the environment
	// is taken and the workers connect.
	Before(ctx context.Context) error
	NewWorker(ctx context.Context, id int) (Worker, error)
	// After derives the workload's results from the executor's (the
	// summary has the executor's figures) and runs the checks; ctx is not
	// cancelled by an interrupt. An error means the checks could not be
	// done: the run's status is errors (Verdict.NotRun says it per check).
	After(ctx context.Context, res *run.Result, sum *results.Summary) (*Verdict, error)
	// Close releases what the run holds.
	Close()
}

// Exec is the executor's configuration of a run.
type Exec struct {
	option.Exec
	// FollowServer and NewThread: see run.Config.
	FollowServer bool
	NewThread    func() Thread
	// OnMeasureStart and OnMeasureEnd: see run.Config.
	OnMeasureStart, OnMeasureEnd func()
}

// Verdict is what After concluded.
type Verdict struct {
	Extra results.Extra
	// Check is the check report stored with the run (nil: none ran).
	Check any
	// Failures are the checks that failed: the run's status is failed and
	// the exit code 5.
	Failures []Failure
	// NotRun are the checks and cross-checks that should have run but
	// could not (the database unreachable after the run), each saying
	// which and why: the run's status is errors and the exit code 4 (unless
	// a check failed or the run was interrupted). A check the user turned
	// off, or skipped because of an interrupt, is not one of them.
	NotRun []string
	// Series are added to the executor's series.
	Series []store.Point
	// Warnings are printed on stderr.
	Warnings []string
}

// Measurer is a run that measures itself (it runs fio, or its own
// threads).
type Measurer interface {
	Run
	// Measure runs. A nil result means nothing was measured (nothing is
	// stored; err says why).
	Measure(ctx context.Context) (*Measured, error)
}

// Measured is what a Measurer measured.
type Measured struct {
	Summary    *results.Summary // common fields and the workload's Extra; Status set
	Env        *envinfo.Snapshot
	Series     []store.Point
	Histograms []store.Histogram
	Check      any
	// Exit is the error the command ends with once the run is stored as
	// run id (nil: success); it may name the run.
	Exit func(id int64) error
}

// ShardMerger merges the workload's own part of its shards' summaries
// (`tunebench results merge`): its Extra, its series, and its cross-check
// of the database, once, on the merged figures. A workload without one
// keeps none of its own fields in a merged run.
type ShardMerger interface {
	MergeShards(in *MergeInput) (*Verdict, error)
}

// MergeInput is what a merge gives a workload: every shard's summary (by
// index; nil for a missing shard), whether the shards met at a
// rendezvous (their counts before and after can then be ordered: every
// count before precedes every transaction), and the merged run: its
// executor figures (histograms per op merged, Series the merged
// intervals, counts summed) and its summary with the Measured part filled.
type MergeInput struct {
	Parts   []*results.Summary
	Met     bool
	Result  *run.Result
	Summary *results.Summary
	// SumSeries is a series of the workload's own (a rate, a count per
	// interval) summed over the shards on the merged run's intervals.
	SumSeries func(name string) []store.Point
}

// Checker checks the loaded data.
type Checker interface {
	Workload
	CheckHelp() Help
	Check(ctx context.Context, env *CheckEnv) (*Report, error)
}

// CheckEnv is what a check gets.
type CheckEnv struct {
	Target  target.Target
	Options option.Values // the check options, defaults filled, checked
	Note    func(format string, a ...any)
}

// Viewer presents a workload's results: in the terminal and in the report.
type Viewer interface {
	// NewExtra returns an empty Extra, to decode the workload's summaries.
	NewExtra() results.Extra
	// Brief is a run's one-line result (results list, experiments).
	Brief(s *results.Summary) string
	// Show is the terminal view of a run (after the run, results show).
	Show(s *results.Summary) []results.Block
}

// CheckViewer shows the checks a run ran (printed after the run).
type CheckViewer interface {
	CheckView(s *results.Summary) []results.Block
}

// Sectioner adds a section of the workload's own to the report.
type Sectioner interface {
	Section(runs []*results.Run) (*results.Section, error)
}

// Ticker formats the live progress line of an executor's tick; span is
// the tick's length in seconds.
type Ticker interface {
	Tick(tk run.Tick, span float64) string
}

// LiveHeadliner gives the headline over one executor tick for the live
// view (--listen); span is the tick's length in seconds. A workload whose
// headline is tps needs none (the tick's tps is served); one whose
// headline is known only at the end has none.
type LiveHeadliner interface {
	LiveHeadline(tk run.Tick, span float64) (v float64, ok bool)
}

// Estimator estimates a run's and a load's time for experiment plans.
type Estimator interface {
	// RunTime estimates one run (its warm-up included); known is false
	// when it cannot be told in advance (a count instead of a duration).
	RunTime(o option.Values) (d time.Duration, known bool)
	LoadTime(o option.Values) time.Duration
	// DataBytes estimates the size of the loaded data.
	DataBytes(o option.Values) int64
}

// RunTimeByRoles estimates a run from its executor roles: its duration
// and warm-up, or unknown (the warm-up only) when it counts transactions.
func RunTimeByRoles(w Workload, o option.Values) (time.Duration, bool) {
	x := option.ExecOf(w.Options().Phase(option.PhaseRun), o)
	if x.Count > 0 && x.Rate > 0 {
		// The schedule's length: every client's count at the rate.
		return x.Warmup + time.Duration(float64(x.Count)*float64(x.Workers)/x.Rate*float64(time.Second)), true
	}
	if x.Count > 0 {
		return x.Warmup, false
	}
	return x.Duration + x.Warmup, true
}

// TxOptions declares the executor's options of a workload whose run is
// clients running transactions (tpcb, script), in one wording: clients,
// threads, duration, transaction count, warm-up, rate, latency limit,
// seed and the error and outage thresholds. A workload adds its own
// around them, and may reword one (Set.Lookup).
func TxOptions() option.Set {
	return option.Set{
		{Name: "clients", Short: "c", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Max: 10000, HasMax: true, Role: option.RoleWorkers,
			Doc: "concurrent clients, each with its own connection"},
		{Name: "threads", Short: "j", Kind: option.KindInt, Default: "0", HasMin: true, Role: option.RoleThreads,
			Doc: "driver threads serving the clients, as pgbench -j (0 = one per core, one per 4 cores for a MariaDB on this machine; at most one per client)"},
		{Name: "duration", Short: "T", Kind: option.KindDuration, Default: "60s", Role: option.RoleDuration,
			DefaultText: "1m unless {transactions}", Doc: "measured duration"},
		{Name: "transactions", Short: "t", Kind: option.KindInt, HasMin: true, Role: option.RoleCount,
			Doc: "transactions per client (like pgbench -t), instead of a duration; with a rate, the schedule's clients x this many starts, each run or skipped"},
		{Name: "warmup", Kind: option.KindDuration, Role: option.RoleWarmup,
			Doc: "warm-up before measuring (run, not counted)"},
		{Name: "rate", Short: "R", Kind: option.KindFloat, HasMin: true, Role: option.RoleRate,
			Doc: "open loop: target transactions per second in total (Poisson schedule)"},
		{Name: "latency_limit", Short: "L", Kind: option.KindDuration, Role: option.RoleLatencyLimit,
			Doc: "with a rate: skip transactions later than this, count completed ones over it as late"},
		TimerSlackOption(),
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed,
			Doc: "random seed (0 = from the clock; stored with the run)"},
		{Name: "max_errors_pct", Kind: option.KindFloat, Default: "1", HasMin: true, Max: 100, HasMax: true, Role: option.RoleMaxErrorsPct,
			Doc: "exit with code 4 when errors exceed this percentage of transactions"},
		{Name: "max_outage_pct", Kind: option.KindFloat, Default: "5", HasMin: true, Max: 100, HasMax: true, Role: option.RoleMaxOutagePct,
			Doc: "exit with code 4 (status errors) when outages (the server unreachable) cover more than this percentage of the measured window"},
	}
}

// TimerSlackOption is the open loop's timer slack (run.Config.TimerSlack),
// for every workload with a rate option.
func TimerSlackOption() option.Option {
	return option.Option{Name: "timer_slack", Kind: option.KindDuration, Default: run.DefaultTimerSlack.String(), Role: option.RoleTimerSlack,
		Validate: checkTimerSlack,
		Doc: "with a rate: how much later than an intended start the kernel may wake the driver, to serve several wake-ups at once " +
			"(Linux timer slack; 1ns for the most precise starts, for more wake-ups and client CPU; a thread whose waits share their deadlines, " +
			"as a transaction of several statements does, waits on a timer without slack)"}
}

// checkTimerSlack accepts a timer slack from 1 ns to run.MaxTimerSlack.
func checkTimerSlack(text string) (string, error) {
	d, err := time.ParseDuration(text)
	if err != nil || d < time.Nanosecond || d > run.MaxTimerSlack {
		return "", option.Errorf("give {timer_slack} a duration from 1ns to 1ms, like 25us (the default)",
			"{timer_slack} "+text+" is out of range")
	}
	return d.String(), nil
}

// TxParams are the stored parameters of a workload declared with
// TxOptions, with its follow_server and max_tries options (tpcb and
// script declare those in their own words). A workload embeds it in its
// parameters: the keys are inlined in the run's JSON.
type TxParams struct {
	Clients      int           `json:"clients"`
	Threads      int           `json:"threads,omitempty"`
	FollowServer string        `json:"follow_server,omitempty"` // auto, on or off
	Duration     time.Duration `json:"duration_ns"`
	Transactions int64         `json:"transactions_per_client"`
	Warmup       time.Duration `json:"warmup_ns"`
	Rate         float64       `json:"rate_tps"`
	LatencyLimit time.Duration `json:"latency_limit_ns"`
	TimerSlack   time.Duration `json:"timer_slack_ns,omitempty"` // open loop only
	MaxTries     int           `json:"max_tries"`
	Seed         int64         `json:"seed"`
	MaxErrorsPct float64       `json:"max_errors_pct"`
	MaxOutagePct float64       `json:"max_outage_pct"`
}

// TxParamsOf reads TxParams from the run's executor options x, its values
// o and its seed.
func TxParamsOf(x option.Exec, o option.Values, seed int64) TxParams {
	return TxParams{Clients: x.Workers, Threads: x.Threads, FollowServer: o.String("follow_server"),
		Duration: x.Duration, Transactions: x.Count, Warmup: x.Warmup, Rate: x.Rate, LatencyLimit: x.LatencyLimit,
		TimerSlack: x.TimerSlack, MaxTries: int(o.Int("max_tries")), Seed: seed, MaxErrorsPct: x.MaxErrorsPct, MaxOutagePct: x.MaxOutagePct}
}

// Validator checks rules across a phase's options, beyond each option's
// own (errors are *option.Error, naming options as {name}).
type Validator interface {
	Validate(p option.Phase, v option.Values, given option.Given) error
}

// All lists the workloads, sorted by name.
func (r *Registry) All() []Workload {
	out := make([]Workload, 0, len(r.byName))
	for _, n := range r.Names() {
		out = append(out, r.byName[n])
	}
	return out
}

// Extras decodes the workloads' summary fields (results.Decode).
func (r *Registry) Extras() results.ExtraFunc {
	return func(name string) (results.Extra, bool, bool) {
		w, ok := r.byName[name]
		if !ok {
			return nil, false, false
		}
		var x results.Extra
		if v, ok := w.(Viewer); ok {
			x = v.NewExtra()
		}
		return x, ByExecutor(w), true
	}
}

// ByExecutor reports whether the executor measures w's runs: it declares
// the workers of a run.
func ByExecutor(w Workload) bool {
	_, ok := w.Options().Phase(option.PhaseRun).ByRole(option.RoleWorkers)
	return ok
}

// Capabilities lists what a workload can do, for `tunebench workloads`.
func Capabilities(w Workload) []string {
	var out []string
	if _, ok := w.(Loader); ok {
		out = append(out, "load")
	}
	if _, ok := w.(Runner); ok {
		out = append(out, "run")
	}
	if _, ok := w.(Checker); ok {
		out = append(out, "check")
	}
	if _, ok := w.(Sectioner); ok {
		out = append(out, "report section")
	}
	return out
}

// Check validates the options of one phase: each value against its
// declaration, then the executor's rules (run phase), then the workload's
// own rules. v is completed with the defaults and canonicalised in place.
func Check(w Workload, p option.Phase, v option.Values, given option.Given) error {
	set := w.Options().Phase(p)
	for _, o := range set {
		if _, ok := v[o.Name]; !ok {
			v[o.Name] = o.DefaultValue()
		}
	}
	if err := set.Check(v); err != nil {
		return err
	}
	if p == option.PhaseRun {
		if err := option.ExecRules(set, v, given); err != nil {
			return err
		}
	}
	if val, ok := w.(Validator); ok {
		return val.Validate(p, v, given)
	}
	return nil
}
