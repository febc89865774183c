package run

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/step"
)

// Worker states. A worker moves idle -> inStep -> idle with CAS; at the drain
// deadline the collector moves inStep -> abandoned (the step is counted as
// unfinished and its outcome discarded) or idle -> closed (the worker starts
// nothing more).
const (
	stIdle int32 = iota
	stStepWarm
	stStepMeasure
	stAbandoned
	stClosed
)

// abandonGrace is how long Execute waits, after cancelling the contexts of
// steps still running at the drain deadline, for them to return. Workers
// that take longer are left to finish (and Close themselves) in the
// background.
const abandonGrace = time.Second

// Open-loop scheduler timing: intended starts are handed to the queue up to
// lookahead before they are due (the worker then waits until the exact
// time, fineSleep), and the scheduler wakes at most once per minWake. The
// lookahead covers the scheduler's own late wake-ups (the runtime's timers
// are as coarse as a millisecond) and the hand-off to a parked worker.
const (
	lookahead = 3 * time.Millisecond
	minWake   = 500 * time.Microsecond
	queueCap  = 4096
)

type workerState struct {
	id     int
	w      step.Worker
	rec    *metrics.Recorder
	state  atomic.Int32
	exited chan struct{}
	timer  *time.Timer
	rng    *rand.Rand
	// dispatch is the open-loop dispatch delay of the worker's measured
	// starts (nil in closed loop); written by the worker before each step.
	dispatch *metrics.Hist

	// Owned by the worker goroutine. The collector reads them only after the
	// worker exited, or after it abandoned the worker inside a Step (the
	// state CAS orders those reads after the worker's last writes).
	done         int64 // measured steps (Transactions mode)
	late         int64
	unfinished   int64
	stepErrors   int64 // Steps that returned an error (any phase)
	thinkOverrun time.Duration
	sqlStates    map[string]int64
	retries      int64            // failed attempts tried again (measured steps)
	retried      map[string]int64 // the same by SQLSTATE
	lastEnd      time.Duration    // end of the last measured step, since run start
	lastStart    time.Duration    // actual start of the last measured step, since run start

	_ [64]byte // keep workers' hot fields off each other's cache lines
}

// sleep waits d or until stop is closed; it reports whether the full time
// elapsed. The timer is the worker's own and is reused (no allocation).
func (ws *workerState) sleep(d time.Duration, stop <-chan struct{}) bool {
	return sleepOn(ws.timer, d, stop)
}

// sleepOn waits d on t (stopped, with nothing to receive) or until stop is
// closed; it reports whether the full time elapsed.
func sleepOn(t *time.Timer, d time.Duration, stop <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-stop:
		t.Stop()
		return false
	}
}

func (ws *workerState) countSQLState(s string) {
	if s == "" {
		s = NoSQLState
	}
	ws.sqlStates[s]++
}

// countRetried counts the failed attempts of a measured step that were
// tried again, by SQLSTATE (NoSQLState for one the worker did not name).
func (ws *workerState) countRetried(o *step.Outcome) {
	n := o.Attempts - 1
	if n <= 0 {
		return
	}
	ws.retries += int64(n)
	if ws.retried == nil {
		ws.retried = map[string]int64{}
	}
	for i := range n {
		s := ""
		if i < len(o.Retried) {
			s = o.Retried[i]
		}
		if s == "" {
			s = NoSQLState
		}
		ws.retried[s]++
	}
}

type runner struct {
	cfg    Config
	open   bool
	txMode bool

	base  time.Time     // run start = warm-up start (monotonic)
	msOff time.Duration // measurement start, since base
	meOff time.Duration // measurement end, since base (duration mode)

	stepCtx     context.Context
	cancelSteps context.CancelFunc

	stopIssue chan struct{} // closed: start no new step (closed loop)
	stopOnce  sync.Once
	halt      chan struct{} // closed: interrupted, failed or drain timed out; queued work is abandoned
	haltOnce  sync.Once
	failed    chan struct{}
	failOnce  sync.Once
	failErr   error

	reg     *metrics.Registry
	workers []*workerState
	threads int // goroutines driving the workers
	// muxDeclined says why the workers were not multiplexed as asked
	// ("" when they were, or were not asked to be).
	muxDeclined string
	mux         *muxShared // multiplexed threads' shared state
	outages     outageTracker

	// Open loop.
	q         chan time.Duration // intended start offsets since base
	qPending  atomic.Int64       // intended starts held by the scheduler beyond the channel
	schedDone chan struct{}
	// Owned by the scheduler; read after schedDone.
	scheduled       int64
	maxDepth        int64
	schedUnfinished int64
}

// Execute runs the workload and returns what it measured.
//
// Workers are all made first (set-up is not measured); if one fails, the
// ones made are closed and its error returned. Then come warm-up (Warmup;
// shown in the series, not counted), measurement and drain: no new work
// starts after the measurement window, work already started (and, in open
// loop, intended starts already due but still queued) finishes and is
// recorded, and whatever is still running DrainTimeout after the window end
// is cancelled and counted as Unfinished.
//
// A transaction belongs to the measurement if its start (closed loop) or
// intended start (open loop) falls in the window. MeasuredSeconds, the
// denominator of TPS, is the length of the window in which measured
// transactions may start:
//   - Duration mode: Duration (shorter if interrupted);
//   - Transactions mode: from the measurement start to the end of the last
//     measured transaction (like pgbench -t);
//   - open loop: extended to the actual start of the last measured
//     transaction when a backlog was still being served in the drain, so
//     an overloaded run is not credited with work done after the window.
//
// If ctx is cancelled, no new work starts, in-flight steps finish (their
// context is not the caller's; it is cancelled only at the drain deadline,
// at most MaxInterruptDrain after the interruption), and the Result is
// returned with Interrupted set and a nil error. A Step that returns a
// non-nil error stops the run the same way; the partial Result is returned
// together with that error.
func Execute(ctx context.Context, cfg Config, newWorker Factory) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newWorker == nil {
		return nil, errors.New("run: nil worker factory")
	}
	made := make([]step.Worker, 0, cfg.Workers)
	for i := 0; i < cfg.Workers; i++ {
		w, err := newWorker(ctx, i)
		if err == nil && w == nil {
			err = errors.New("factory returned a nil worker")
		}
		if err != nil {
			for _, m := range made {
				_ = m.Close()
			}
			return nil, fmt.Errorf("run: creating worker %d: %w", i, err)
		}
		made = append(made, w)
	}
	if cfg.Ready != nil {
		if err := cfg.Ready(ctx); err != nil {
			for _, m := range made {
				_ = m.Close()
			}
			return nil, err
		}
	}

	r := &runner{
		cfg:       cfg,
		open:      cfg.OpenLoop(),
		txMode:    cfg.Transactions > 0,
		msOff:     cfg.Warmup,
		meOff:     cfg.Warmup + cfg.Duration,
		stopIssue: make(chan struct{}),
		halt:      make(chan struct{}),
		failed:    make(chan struct{}),
		reg:       metrics.NewRegistry(cfg.OpenLoop()),
	}
	stepBase := context.WithoutCancel(ctx)
	if r.open {
		// Workers with threads of their own wake for intended starts too.
		stepBase = step.WithPaced(stepBase)
	}
	r.stepCtx, r.cancelSteps = context.WithCancel(stepBase)
	defer r.cancelSteps()
	for i, w := range made {
		t := time.NewTimer(time.Hour)
		t.Stop()
		r.workers = append(r.workers, &workerState{
			id:        i,
			w:         w,
			rec:       r.reg.NewRecorder(),
			exited:    make(chan struct{}),
			timer:     t,
			rng:       rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)+1)),
			sqlStates: map[string]int64{},
		})
		if cfg.OpenLoop() {
			r.workers[i].dispatch = metrics.NewHist()
		}
	}
	if r.open {
		r.q = make(chan time.Duration, queueCap)
		r.schedDone = make(chan struct{})
	}
	return r.run(ctx)
}

func (r *runner) since() time.Duration { return time.Since(r.base) }

func (r *runner) stopAll() {
	r.stopOnce.Do(func() { close(r.stopIssue) })
	r.haltOnce.Do(func() { close(r.halt) })
}

func (r *runner) fail(id int, err error) {
	r.failOnce.Do(func() {
		r.failErr = fmt.Errorf("run: worker %d: %w", id, err)
		close(r.failed)
	})
}

func (r *runner) isHalted() bool {
	select {
	case <-r.halt:
		return true
	default:
		return false
	}
}

// afterOutcome does the bookkeeping shared by both loops.
func (r *runner) afterOutcome(ws *workerState, o *step.Outcome, at time.Duration) {
	switch {
	case o.Class == step.ClassConnError:
		r.outages.connError(at)
	case o.Class.Completed():
		r.outages.success(at)
	}
	if r.cfg.OnError != nil && o.Class.IsError() {
		r.cfg.OnError(ws.id, *o)
	}
}

// workerExit closes the workload worker from its own goroutine (so a worker
// still inside an abandoned Step is closed when that Step returns) and marks
// the worker as gone.
func (r *runner) workerExit(ws *workerState) {
	_ = ws.w.Close()
	close(ws.exited)
}

func validClass(o *step.Outcome) error {
	if o.Class >= step.NumClasses {
		return fmt.Errorf("workload returned invalid outcome class %d (op %q)", uint8(o.Class), o.Op)
	}
	return nil
}

// collector state.
type collector struct {
	ticks         []Tick
	nextTick      time.Duration // next regular tick boundary, since base
	lastTickEnd   time.Duration // nominal end of the last tick, since base
	lastHarvestAt time.Duration

	windowClosed  bool
	windowEnd     time.Duration
	drainDeadline time.Duration
	interrupted   bool

	// Over every harvest (all phases).
	committedAll, ambiguousAll int64
	allByOp                    map[string]OpTotals

	selfStarted bool
	self0       metrics.SelfSample
	selfDelta   metrics.SelfSample
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	r.base = time.Now()
	startedAt := r.base.Round(0)
	c := &collector{}
	if r.msOff == 0 {
		// The window opens with the run: before the first step, so that
		// the hooks see every measured step (a -t run's first ones too).
		c.self0, c.selfStarted = metrics.ReadSelf(), true
		r.measureStarted()
	}

	r.threads = len(r.workers)
	if r.multiplexable() {
		groups := r.muxGroups()
		r.threads = len(groups)
		r.muxStart(groups)
	} else {
		for _, ws := range r.workers {
			if r.open {
				go r.openLoop(ws)
			} else {
				go r.closedLoop(ws)
			}
		}
	}
	if r.open {
		if r.mux == nil {
			go r.scheduler()
		} else {
			// Each multiplexed thread draws its own share of the
			// schedule (muxOpen).
			close(r.q)
			close(r.schedDone)
		}
	}
	allDone := make(chan struct{})
	go func() {
		if r.open {
			<-r.schedDone
		}
		for _, ws := range r.workers {
			<-ws.exited
		}
		close(allDone)
	}()

	// Tick boundaries are aligned on the measurement start: msOff + k*Tick.
	tick := r.cfg.Tick
	c.nextTick = r.msOff - (r.msOff/tick)*tick
	if c.nextTick == 0 {
		c.nextTick = tick
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	ctxDone := ctx.Done()
	failed := (<-chan struct{})(r.failed)
	var abandonedSteps []int32

loop:
	for {
		now := r.since()
		if !c.selfStarted && now >= r.msOff && !c.windowClosed {
			c.self0, c.selfStarted = metrics.ReadSelf(), true
			r.measureStarted()
		}
		if now >= c.nextTick {
			r.emitTick(c, c.nextTick, now, false)
			for c.nextTick <= now {
				c.nextTick += tick
			}
		}
		if !r.txMode && !c.windowClosed && now >= r.meOff {
			r.closeWindow(c, r.meOff, now)
		}
		if c.windowClosed && now >= c.drainDeadline {
			abandonedSteps = r.abandon()
			break loop
		}

		wake := c.nextTick
		if !r.txMode && !c.windowClosed && r.meOff < wake {
			wake = r.meOff
		}
		if c.windowClosed && c.drainDeadline < wake {
			wake = c.drainDeadline
		}
		timer.Reset(wake - r.since())
		// In duration mode the window closes at its end even when every
		// worker is already done (the open-loop schedule can run out up
		// to lookahead early).
		done := allDone
		if !r.txMode && !c.windowClosed {
			done = nil
		}
		select {
		case <-timer.C:
		case <-ctxDone:
			ctxDone = nil
			c.interrupted = true
			r.stopNow(c)
		case <-failed:
			failed = nil
			r.stopNow(c)
		case <-done:
			break loop
		}
	}

	var unfinished, abandonedAll int64
	if abandonedSteps != nil {
		unfinished, abandonedAll = r.waitAfterAbandon(abandonedSteps)
	}
	// Every goroutine that records has exited (or was abandoned inside a
	// Step and records nothing more).
	now := r.since()
	if !c.windowClosed {
		end := now
		if !r.txMode && end > r.meOff {
			end = r.meOff
		}
		if r.txMode {
			end = r.msOff
			for _, ws := range r.workers {
				if ws.lastEnd > end {
					end = ws.lastEnd
				}
			}
		}
		r.closeWindow(c, end, now)
	}
	if now > c.lastTickEnd {
		r.emitTick(c, now, now, true)
	}
	if r.open {
		// Intended starts left in the queue (every worker gone).
		for tk := range r.q {
			if tk >= r.msOff {
				unfinished++
			}
		}
	}
	if r.open && r.mux != nil {
		r.scheduled = r.mux.scheduled.Load()
		r.schedUnfinished = r.mux.queuedMeasured.Load()
		r.maxDepth = r.mux.maxDepth.Load()
	}
	res := r.result(c, unfinished)
	res.AmbiguousAll += abandonedAll
	res.StartedAt = startedAt
	res.EndedAt = time.Now().Round(0)
	select {
	case <-r.failed:
		return res, r.failErr
	default:
	}
	return res, nil
}

// stopNow handles an interruption or a fatal error: the window closes now
// (if still open), nothing new starts, and the drain is bounded by
// MaxInterruptDrain.
func (r *runner) stopNow(c *collector) {
	now := r.since()
	if !c.windowClosed {
		end := now
		if !r.txMode && end > r.meOff {
			end = r.meOff
		}
		r.closeWindow(c, end, now)
	}
	d := r.cfg.DrainTimeout
	if d > MaxInterruptDrain {
		d = MaxInterruptDrain
	}
	if dl := now + d; dl < c.drainDeadline {
		c.drainDeadline = dl
	}
	// Stop at once: no new step starts and (open loop) queued intended
	// starts are abandoned and counted as unfinished.
	r.stopAll()
}

// measureStarted runs the OnMeasureStart hook.
func (r *runner) measureStarted() {
	if r.cfg.OnMeasureStart != nil {
		r.cfg.OnMeasureStart()
	}
}

func (r *runner) stopIssueNow() { r.stopOnce.Do(func() { close(r.stopIssue) }) }

// closeWindow ends the measurement window at offset end.
func (r *runner) closeWindow(c *collector, end, now time.Duration) {
	c.windowClosed = true
	c.windowEnd = end
	c.drainDeadline = end + r.cfg.DrainTimeout
	if c.selfStarted {
		c.selfDelta = metrics.ReadSelf().Sub(c.self0)
		if r.cfg.OnMeasureEnd != nil {
			r.cfg.OnMeasureEnd()
		}
	}
	r.stopIssueNow()
	if end > c.lastTickEnd && end <= now {
		r.emitTick(c, end, now, false)
	}
}

func (r *runner) phaseAt(c *collector, end time.Duration) string {
	switch {
	case c.windowClosed && end > c.windowEnd:
		return PhaseDrain
	case end <= r.msOff:
		return PhaseWarmup
	default:
		return PhaseMeasure
	}
}

// emitTick harvests the recorders and appends the tick ending (nominally)
// at end; an optional tick is dropped when nothing completed in it.
func (r *runner) emitTick(c *collector, end, now time.Duration, optional bool) {
	iv := r.reg.Harvest()
	c.committedAll += iv.Committed()
	c.ambiguousAll += iv.ClassCount(step.ClassAmbiguousCommit)
	var byOp map[string]OpTick
	for _, e := range iv.Entries() {
		if c.allByOp == nil {
			c.allByOp = map[string]OpTotals{}
		}
		at := c.allByOp[e.Op]
		ot := byOp[e.Op]
		switch {
		case e.Class.Committed():
			at.Committed += e.Count
			ot.Committed += e.Count
		case e.Class == step.ClassAmbiguousCommit:
			at.Ambiguous += e.Count
		}
		if e.Class.Completed() {
			ot.Completed += e.Count
		}
		if e.Class.IsError() {
			ot.Errors += e.Count
		}
		c.allByOp[e.Op] = at
		if byOp == nil {
			byOp = map[string]OpTick{}
		}
		byOp[e.Op] = ot
	}
	if optional && iv.Total() == 0 {
		return
	}
	t := Tick{
		T:         (end - r.msOff).Seconds(),
		Phase:     r.phaseAt(c, end),
		Committed: iv.Committed(),
		Errors:    iv.Errors(),
		Completed: iv.Completed(),
	}
	if span := now - c.lastHarvestAt; span > 0 {
		t.Span = span.Seconds()
		t.TPS = float64(t.Committed) / t.Span
	}
	if lat := iv.Latency(); lat.Count() > 0 {
		ps := lat.PercentilesMs(50, 95, 99)
		t.P50Ms, t.P95Ms, t.P99Ms = ps[0], ps[1], ps[2]
		t.MaxMs = lat.MaxMs()
		if r.cfg.TickHistograms {
			t.LatencyEnc, _ = metrics.Encode(lat) // a non-nil histogram encodes
		}
	}
	if lag := iv.Lag(); lag != nil && lag.Count() > 0 {
		t.Lag99Ms = lag.PercentileMs(99)
		if r.cfg.TickHistograms {
			t.LagEnc, _ = metrics.Encode(lag)
		}
	}
	if len(c.allByOp) > 1 {
		// Per-op counts and p95 of committed transactions, for workloads
		// with more than one op (every tick once a second op was seen).
		hs := map[string]*metrics.Hist{}
		for _, e := range iv.Entries() {
			if e.Class.Committed() && e.Latency != nil {
				if hs[e.Op] == nil {
					hs[e.Op] = metrics.NewHist()
				}
				hs[e.Op].Merge(e.Latency)
			}
		}
		for op, h := range hs {
			ot := byOp[op]
			ot.P95Ms = h.PercentileMs(95)
			byOp[op] = ot
		}
		t.Ops = byOp
	}
	for _, ws := range r.workers {
		if s := ws.state.Load(); s == stStepWarm || s == stStepMeasure {
			t.ActiveWorkers++
		}
	}
	if r.open {
		t.QueueDepth = int64(len(r.q)) + r.qPending.Load()
	}
	c.ticks = append(c.ticks, t)
	c.lastTickEnd = end
	c.lastHarvestAt = now
	if r.cfg.OnTick != nil {
		t.Interval, t.IntervalWarmup = iv, r.reg.IntervalWarmup()
		r.cfg.OnTick(t)
	}
}

// abandon is called at the drain deadline: nothing more starts, steps still
// running are marked abandoned and their contexts cancelled. It returns, per
// worker, the state of the step it abandoned (stIdle if none).
func (r *runner) abandon() []int32 {
	r.stopAll()
	out := make([]int32, len(r.workers))
	for i, ws := range r.workers {
		for {
			s := ws.state.Load()
			if s == stIdle {
				if ws.state.CompareAndSwap(stIdle, stClosed) {
					break
				}
				continue
			}
			if s == stStepWarm || s == stStepMeasure {
				if ws.state.CompareAndSwap(s, stAbandoned) {
					out[i] = s
					break
				}
				continue
			}
			break
		}
	}
	r.cancelSteps()
	return out
}

// waitAfterAbandon waits for the workers to exit: the ones abandoned inside
// a Step for at most abandonGrace, the others (which are not in a Step and
// exit promptly) fully. It returns the number of abandoned measured steps
// and of all abandoned steps.
func (r *runner) waitAfterAbandon(abandoned []int32) (measured, all int64) {
	if r.open {
		<-r.schedDone
	}
	grace := time.NewTimer(abandonGrace)
	defer grace.Stop()
	graceOver := false
	for i, ws := range r.workers {
		if abandoned[i] != stIdle {
			all++
			if abandoned[i] == stStepMeasure {
				measured++
			}
			if !graceOver {
				select {
				case <-ws.exited:
				case <-grace.C:
					graceOver = true
				}
			}
			continue
		}
		<-ws.exited
	}
	return measured, all
}
