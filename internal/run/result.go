package run

import (
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/step"
)

// Tick phases.
const (
	PhaseWarmup  = "warmup"
	PhaseMeasure = "measure"
	PhaseDrain   = "drain"
)

// SkippedOp is the op name under which open-loop transactions skipped by the
// latency limit are counted (the workload picks the op inside Step, which
// never ran).
const SkippedOp = "skipped"

// NoSQLState is the SQLStates key for error outcomes without a SQLSTATE
// (network errors, client-side failures).
const NoSQLState = "none"

// Result is what a run measured. Counts and histograms cover the
// measurement phase only (warm-up excluded, drained work included).
type Result struct {
	StartedAt, EndedAt time.Time // wall clock, for display only
	// MeasuredSeconds is the length of the measurement window; see Execute.
	MeasuredSeconds float64
	Interrupted     bool
	Workers         int
	// Threads is the number of goroutines that drove the workers: Workers,
	// or fewer when they were multiplexed (Config.Threads).
	Threads int
	// ThreadsNote says why the workers had a thread each although fewer
	// were asked for (their sessions declined to be multiplexed).
	ThreadsNote string
	// FollowServer: the multiplexed threads were pinned one per CPU and
	// connections followed their server process (Config.FollowServer);
	// Handovers counts the connections handed from one thread to another.
	FollowServer bool
	Handovers    int64
	OpenLoop     bool
	TargetRate   float64
	TimerSlack   time.Duration // Config.TimerSlack (open loop)
	// Ops has one entry per (op, class), sorted by op then class.
	Ops []OpStats
	// Totals counts outcomes per class (classes with none are absent).
	Totals map[step.OutcomeClass]int64
	// SQLStates counts error outcomes by SQLSTATE; NoSQLState for errors
	// without one.
	SQLStates         map[string]int64
	Committed, Errors int64
	// Retries counts the failed attempts that were tried again (a step's
	// Attempts-1), and Retried splits them by SQLSTATE (NoSQLState for
	// none): failures the final outcomes do not show, since a retried
	// transaction ends in one class with the last attempt's SQLSTATE.
	Retries int64
	Retried map[string]int64
	// CommittedAll counts committed transactions over the whole run
	// (warm-up, measurement and drain), for checks of what the database
	// must contain afterwards. AmbiguousAll counts, over the whole run, the
	// transactions whose outcome is unknown: ambiguous_commit outcomes,
	// steps abandoned at the drain deadline (they may still commit), and
	// a step that returned an error.
	CommittedAll, AmbiguousAll int64
	// AllByOp splits CommittedAll and the ambiguous_commit outcomes by op
	// (whole run), e.g. for TPC-C's New-Order cross-check against the
	// database. Abandoned steps are not attributed to an op.
	AllByOp map[string]OpTotals
	TPS     float64 // Committed / MeasuredSeconds
	// Latency covers all committed transactions (ok + retried_ok): closed
	// loop actual start to end; open loop intended start to end.
	Latency *metrics.Hist
	// Service (actual start to end) and Lag (actual - intended start) cover
	// committed transactions; open loop only (nil otherwise).
	Service, Lag *metrics.Hist
	// Dispatch is the driver's own delay in starting the measured
	// transactions (open loop only): from when a start could have begun
	// (its intended time, or when a worker became free to take it if
	// later) to when it did. The schedule lag less this is queueing (every
	// worker busy).
	Dispatch *metrics.Hist
	// Skipped: open-loop transactions not sent because of LatencyLimit.
	// Late: completed transactions slower than LatencyLimit.
	// Unfinished: measured transactions that were in a Step when the drain
	// timed out, plus (open loop) scheduled ones never started because the
	// run was interrupted or the drain timed out.
	Skipped, Late, Unfinished int64
	// Scheduled is the number of intended starts the open-loop schedule
	// handed out in the measurement phase; every one of them ends up as an
	// outcome (Totals, which includes skipped_late) or as Unfinished.
	Scheduled     int64
	MaxQueueDepth int64
	// Series has one Tick per interval, warm-up and drain included.
	Series  []Tick
	Outages []Outage
	// ThinkOverrun is the total time think sleeps overshot their deadline
	// (closed loop, measurement phase).
	ThinkOverrun time.Duration
	// Driver self-metrics over the measurement window.
	DriverCPUSeconds float64
	GCPauses         int64 // stop-the-world GC pauses
	GCCycles         int64 // completed GC cycles
	GCPauseTotal     time.Duration
}

// OpStats is the outcome count and histograms of one (op, class).
type OpStats struct {
	Op    string
	Class step.OutcomeClass
	Count int64
	// Latency is nil for skipped_late (no latency exists).
	Latency *metrics.Hist
	// Service and Lag: open loop only.
	Service, Lag *metrics.Hist
}

// Tick is one interval of the series.
type Tick struct {
	// T is the end of the interval in seconds since the measurement start
	// (negative in warm-up). Regular ticks fall on multiples of the tick
	// length; the window end and the final tick may be partial.
	T     float64
	Phase string
	// Outcomes that completed in this interval (both phases' outcomes are
	// shown; the phase of a tick is that of its end).
	Committed, Errors, Completed int64
	TPS                          float64 // Committed / interval length
	// Span is the interval's length in seconds: from the previous harvest
	// (or the run's start) to this one. The first tick after a warm-up
	// without ticks covers the whole warm-up.
	Span float64
	// Latency of committed transactions completed in the interval.
	P50Ms, P95Ms, P99Ms, MaxMs float64
	// ActiveWorkers is the number of workers inside a Step at the tick.
	ActiveWorkers int
	// QueueDepth is the open-loop queue length at the tick.
	QueueDepth int64
	// Lag99Ms is the p99 schedule lag of committed transactions (open loop).
	Lag99Ms float64
	// Ops splits the interval by op once the run has seen more than one op
	// (nil before that, and always for single-op workloads).
	Ops map[string]OpTick
	// Interval is the interval's outcomes and latency histograms by op and
	// class (both phases), and IntervalWarmup its warm-up part (the rest is
	// measurement): for a live view that keeps counters and cumulative
	// buckets (internal/live). Set only on the Tick given to Config.OnTick,
	// never in Result.Series, and valid only during that call (the
	// executor reuses them at the next tick).
	Interval, IntervalWarmup *metrics.Snapshot `json:"-"`
	// LatencyEnc and LagEnc are the interval's latency and schedule lag
	// histograms (those P50Ms..MaxMs and Lag99Ms come from), encoded
	// (metrics.Encode); nil unless Config.TickHistograms, and for an
	// interval without committed transactions.
	LatencyEnc, LagEnc []byte `json:"-"`
}

// OpTick is one op's share of a Tick.
type OpTick struct {
	Committed, Completed, Errors int64
	P95Ms                        float64 // committed transactions of this op in the interval
}

// OpTotals counts one op's outcomes over the whole run.
type OpTotals struct {
	Committed, Ambiguous int64
}

// Outage is a window in which conn_error outcomes happened with no
// completed (committed or user_abort) transaction finishing in between.
// Start and End are the end times of the first and last failing steps, in
// seconds since the measurement start.
type Outage struct {
	Start, End float64
	Errors     int64
}

// result assembles what the run returns from the collector's totals,
// the registry's cumulative figures and every worker's counts.
func (r *runner) result(c *collector, unfinished int64) *Result {
	cum := r.reg.Cumulative()
	res := &Result{
		Interrupted:      c.interrupted,
		Workers:          r.cfg.Workers,
		Threads:          r.threads,
		ThreadsNote:      r.muxDeclined,
		FollowServer:     r.followed(),
		Handovers:        r.handovers(),
		OpenLoop:         r.open,
		TargetRate:       r.cfg.Rate,
		TimerSlack:       r.cfg.TimerSlack,
		Totals:           map[step.OutcomeClass]int64{},
		SQLStates:        map[string]int64{},
		Retried:          map[string]int64{},
		Committed:        cum.Committed(),
		CommittedAll:     c.committedAll,
		AmbiguousAll:     c.ambiguousAll,
		AllByOp:          c.allByOp,
		Errors:           cum.Errors(),
		Latency:          cum.Latency(),
		Service:          cum.Service(),
		Lag:              cum.Lag(),
		Skipped:          cum.ClassCount(step.ClassSkippedLate),
		Unfinished:       unfinished + r.schedUnfinished,
		Scheduled:        r.scheduled,
		MaxQueueDepth:    r.maxDepth,
		Series:           c.ticks,
		Outages:          r.outages.outages(r.msOff),
		DriverCPUSeconds: c.selfDelta.CPU.Seconds(),
		GCPauses:         c.selfDelta.GCPauses,
		GCCycles:         c.selfDelta.GCCycles,
		GCPauseTotal:     c.selfDelta.GCPauseTotal,
	}
	if r.open {
		res.Dispatch = metrics.NewHist()
		for _, ws := range r.workers {
			res.Dispatch.Merge(ws.dispatch)
		}
	}
	for _, e := range cum.Entries() {
		res.Ops = append(res.Ops, OpStats{
			Op: e.Op, Class: e.Class, Count: e.Count,
			Latency: e.Latency, Service: e.Service, Lag: e.Lag,
		})
	}
	for cl := step.OutcomeClass(0); cl < step.NumClasses; cl++ {
		if n := cum.ClassCount(cl); n > 0 {
			res.Totals[cl] = n
		}
	}
	measured := c.windowEnd - r.msOff
	for _, ws := range r.workers {
		res.Late += ws.late
		res.AmbiguousAll += ws.stepErrors
		res.Unfinished += ws.unfinished
		res.ThinkOverrun += ws.thinkOverrun
		for k, v := range ws.sqlStates {
			res.SQLStates[k] += v
		}
		res.Retries += ws.retries
		for k, v := range ws.retried {
			res.Retried[k] += v
		}
		if r.open && ws.lastStart-r.msOff > measured {
			measured = ws.lastStart - r.msOff
		}
	}
	if measured > 0 {
		res.MeasuredSeconds = measured.Seconds()
		res.TPS = float64(res.Committed) / res.MeasuredSeconds
	}
	return res
}
