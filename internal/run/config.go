// Package run is the executor: it drives workload workers in a closed loop
// (each worker steps as fast as it can, plus think time) or an open loop (a
// seeded Poisson schedule of intended start times served by a worker pool),
// through the phases warm-up, measurement and drain, and returns the
// measured Result.
//
// Timing uses Go's monotonic clock only. Latency histograms are in
// microseconds (package metrics); every percentile accessor takes 0..100.
package run

import (
	"context"
	"math"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/step"
)

// Defaults applied by Execute when the Config field is zero.
const (
	DefaultDrainTimeout = 10 * time.Second
	DefaultTick         = time.Second
	// MinTick is the shortest accepted tick.
	MinTick = 10 * time.Millisecond
	// MaxInterruptDrain bounds the drain after an interruption (ctx
	// cancelled) or a fatal Step error, whatever DrainTimeout says: the user
	// asked to stop, so in-flight work gets at most this long to finish.
	MaxInterruptDrain = 5 * time.Second
	// DefaultTimerSlack is the open loop's timer slack (Config.TimerSlack):
	// half the kernel's default (50 µs, what pgbench -R waits with). In
	// select-only runs at a quarter of the capacity of 2 cores, against
	// 1 ns: 10% fewer thread wake-ups and 1% less driver CPU per
	// transaction (30 µs: 4% and 5%, in another set, where one run moves
	// by 3-8%), and a schedule lag p50 of 0.6 to 0.7 of pgbench's
	// (docs/benchmarks.md, "Open-loop precision").
	DefaultTimerSlack = 25 * time.Microsecond
	// MaxTimerSlack bounds Config.TimerSlack: a wake-up later than this is
	// no longer an open loop's precise start.
	MaxTimerSlack = time.Millisecond
)

// Config describes one run.
type Config struct {
	// Workers is the number of workers (>= 1). Closed loop: each its own
	// worker/connection. Open loop: the pool size (max transactions in flight).
	Workers int
	// Threads is the number of goroutines (each on its own OS thread) that
	// drive the workers, as pgbench -j. 0 (or Workers or more) gives every
	// worker its own goroutine. Fewer than Workers needs workers that
	// implement step.Multiplexed and poll(2) (Linux); the workers are then
	// dealt to the threads in contiguous blocks, as pgbench does, and each
	// thread sends on one connection while replies to the others are on
	// their way; in the open loop each thread serves its own share of the
	// schedule (muxOpen). If a worker cannot be multiplexed, every worker
	// gets its own goroutine (Result.Threads says what ran).
	Threads int
	// NewThread, if not nil, gives the scheduling discipline of a thread
	// that drives multiplexed workers (driver/pg.Thread for direct
	// PostgreSQL connections). It is called once per thread, one after
	// the other, before the threads start.
	NewThread func() step.Thread
	// FollowServer, for multiplexed threads that are as many as the CPUs
	// the process may run on, pins thread i to the i-th of those CPUs and
	// hands a connection to the thread on the CPU where its server process
	// runs (workers implementing step.Placed, a NewThread giving a
	// step.PinnedThread). See muxStart.
	FollowServer bool
	// forceMux (tests): multiplex even with one thread per worker.
	forceMux bool
	// Duration is the measurement duration; 0 when Transactions is used.
	Duration time.Duration
	// Transactions is the number of measured transactions per worker (like
	// pgbench -t); 0 when Duration is used. In the open loop the schedule
	// then ends after Workers x Transactions measured intended starts,
	// each one run or skipped for the latency limit, as pgbench -t with -R
	// counts skipped transactions in each client's -t.
	Transactions int64
	// Warmup runs before the measurement and is not counted (it is shown in
	// the series with phase "warmup").
	Warmup time.Duration
	// Rate is the target total transactions per second; 0 = closed loop.
	Rate float64
	// LatencyLimit has pgbench -L semantics. Open loop: a transaction whose
	// schedule lag already exceeds the limit when a worker takes it is not
	// sent (counted as skipped_late). Both modes: a completed transaction
	// (committed or user_abort) whose latency exceeds the limit is counted as
	// late. 0 disables.
	LatencyLimit time.Duration
	// TimerSlack (open loop, Linux) is how much later than an intended
	// start the kernel may wake the thread that waits for it: the thread's
	// timer slack (prctl PR_SET_TIMERSLACK), set for the open loop's timed
	// waits. The kernel then serves every timer of the CPU that falls due
	// within the slack in one wake-up, and a thread woken a little late
	// often finds a reply or the next start due too. 0: DefaultTimerSlack;
	// at most MaxTimerSlack.
	TimerSlack time.Duration
	// Seed seeds the open-loop schedule and the back-off jitter.
	Seed int64
	// DrainTimeout bounds the drain after the measurement (default 10s).
	DrainTimeout time.Duration
	// Tick is the series / progress interval (default 1s, at least MinTick).
	Tick time.Duration
	// OnTick, if not nil, is called from the collector goroutine once per
	// tick; it must return quickly. The Tick's Interval snapshots are valid
	// only during the call.
	OnTick func(Tick)
	// OnError, if not nil, is called from the worker's goroutine for every
	// outcome whose class is an error (all phases). The caller rate-limits
	// its own output; the callback must return quickly.
	OnError func(worker int, o step.Outcome)
	// OnMeasureStart and OnMeasureEnd, if not nil, are called from the
	// collector goroutine when the measurement window opens and closes (the
	// close also on interruption). They must return quickly: a caller that
	// reads the database starts its own goroutine. Duration mode only for
	// the start being exact; in transactions mode the end is the last
	// measured transaction's end, known only after the drain.
	OnMeasureStart func()
	OnMeasureEnd   func()
	// Ready, if not nil, is called once every worker is made (connected)
	// and before the first step: the shards of a split run wait there
	// for each other, so their set-up is not in the window they share.
	// An error ends the run before it started (the workers are closed).
	Ready func(ctx context.Context) error
	// TickHistograms keeps each tick's latency histogram (committed
	// transactions; and schedule lag, open loop) in Tick.LatencyEnc and
	// Tick.LagEnc, encoded: a shard's interval percentiles are merged from
	// them (`tunebench results merge`), since percentiles cannot be added.
	TickHistograms bool
}

// Factory makes the worker with the given id (0-based). Workers are all made
// before the run starts, so connection set-up is not measured.
type Factory func(ctx context.Context, id int) (step.Worker, error)

// OpenLoop reports whether the config asks for an open-loop (rate) run.
func (c Config) OpenLoop() bool { return c.Rate > 0 }

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.TimerSlack == 0 {
		c.TimerSlack = DefaultTimerSlack
	}
	return c
}

// Validate checks the configuration (after defaults) and returns a usage
// error describing the first problem.
func (c Config) Validate() error {
	const hint = "check the run options"
	switch {
	case c.Workers < 1:
		return errs.Usage("use at least one worker (client)", "workers must be at least 1, got %d", c.Workers)
	case c.Threads < 0:
		return errs.Usage(hint, "threads must not be negative, got %d", c.Threads)
	case c.Duration < 0:
		return errs.Usage(hint, "duration must not be negative, got %v", c.Duration)
	case c.Transactions < 0:
		return errs.Usage(hint, "transactions must not be negative, got %d", c.Transactions)
	case (c.Duration > 0) == (c.Transactions > 0):
		return errs.Usage("give either a duration or a number of transactions per client",
			"exactly one of duration and transactions must be set (duration %v, transactions %d)", c.Duration, c.Transactions)
	case c.Warmup < 0:
		return errs.Usage(hint, "warm-up must not be negative, got %v", c.Warmup)
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return errs.Usage("the rate is in transactions per second; 0 means as fast as possible", "invalid rate %v", c.Rate)
	case c.LatencyLimit < 0:
		return errs.Usage(hint, "latency limit must not be negative, got %v", c.LatencyLimit)
	case c.TimerSlack < 0 || c.TimerSlack > MaxTimerSlack:
		return errs.Usage("give a timer slack from 1ns to 1ms (the default, 25us, if unsure)",
			"timer slack %v is out of range", c.TimerSlack)
	case c.DrainTimeout < 0:
		return errs.Usage(hint, "drain timeout must not be negative, got %v", c.DrainTimeout)
	case c.Tick < 0 || (c.Tick > 0 && c.Tick < MinTick):
		return errs.Usage(hint, "tick must be at least %v, got %v", MinTick, c.Tick)
	case c.Rate > 0 && c.Rate > 1e7:
		return errs.Usage(hint, "rate %v is beyond what one driver process can schedule", c.Rate)
	}
	return nil
}
