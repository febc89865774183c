// Package lifecycle is the one run lifecycle of every workload: apply and
// verify the settings, snapshot the environment, run the workload's before
// hooks, execute (or let the workload measure itself), derive and check,
// decide the status, save everything in one transaction, restore the
// settings (also after an interrupt) and say which exit code the run ends
// with. It never prints: it reports to an Observer (the CLI prints, an
// experiment prints less). The CLI's run commands and experiments both
// call Run.
package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/live"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// EventKind says what an Event reports.
type EventKind int

const (
	EventHeader   EventKind = iota // Text: what is about to run
	EventNote                      // Text: a line of progress or information
	EventWarning                   // Text: something went wrong but the run goes on
	EventTick                      // Tick, Span: one interval of the executor
	EventError                     // Worker, Outcome: a transaction ended in an error
	EventRestored                  // the settings were restored
	EventSaved                     // RunID, Path: the run is stored
)

// Event is one report to the Observer.
type Event struct {
	Kind    EventKind
	Text    string
	Tick    run.Tick
	Span    float64 // the tick's length in seconds
	Worker  int
	Outcome step.Outcome
	RunID   int64
	Path    string
}

// Observer receives the events of a run, from several goroutines (it must
// be safe for that, and return quickly).
type Observer func(Event)

// Request is one run to do.
type Request struct {
	Workload workload.Runner
	// Target is the database; nil for a workload without dialects run on
	// its own.
	Target  target.Target
	Options option.Values // the run options, checked (workload.Check)
	// Settings are applied for this run only and restored after it.
	Settings   []target.Setting
	NoSamplers bool
	// Progress is the tick of the progress events (0: none).
	Progress   time.Duration
	Experiment string
	// Layout is the storage layout the target's data is on, recorded in
	// the environment (experiments with matrix.storage).
	Layout *envinfo.Layout
	// Envelope is the hardware envelope the target's server runs in.
	Envelope *envinfo.Envelope
	// Kernel are the kernel settings in force (an experiment's
	// target.kernel and matrix.kernel), recorded in the environment.
	Kernel []envinfo.KernelSetting
	// NamedTarget is the experiment's named target the run is on
	// (targets:), recorded in the environment with the target's notes.
	NamedTarget *envinfo.NamedTarget
	// EnvelopeUsage reads what the run used of its envelope (counters and
	// a line), at save time.
	EnvelopeUsage func() (json.RawMessage, string)
	// Enclose, when set, is called just before the workload's measured
	// work and the function it returns just after: an experiment puts
	// tunebench itself in a hardware envelope for a workload that runs in
	// tunebench (fsblog; fio is its child), and for that work only.
	Enclose   func() (leave func(), err error)
	Link      *store.PlanLink
	Store     *store.Store
	Version   string
	Getenv    func(string) string
	LookupEnv func(string) (string, bool)
	Observe   Observer
	// Stdout and Stderr take the run's own output (workload.RunEnv).
	Stdout, Stderr io.Writer
	// HostMetrics says how the database server's host is measured.
	HostMetrics target.HostMetrics
	// Shard, for a shard of a split run (--shard), is stored with it; the
	// options are already the shard's (workload.ShardOptions).
	Shard *results.Shard
	// Unsharded are a shard's run's whole options (workload.RunEnv).
	Unsharded option.Values
	// Barrier, if set, is waited on once the run's workers are connected,
	// before its first step (run.Config.Ready): a shard meets the others.
	Barrier func(ctx context.Context) error

	// Live, when set, gets the run's ticks, the samplers' points and the
	// end as they come (--listen: internal/live), and its key is stored
	// with the run (run_key). Without --progress the executor still ticks
	// every second for it.
	Live *live.Run

	// rescued is the save's error when the store failed to save the run
	// and its result went to a rescue file instead (see finish).
	rescued error
}

func (r *Request) emit(e Event) {
	if r.Observe != nil {
		r.Observe(e)
	}
}

// enclose calls Enclose (a no-op leave without it).
func (r *Request) enclose() (func(), error) {
	if r.Enclose == nil {
		return func() {}, nil
	}
	return r.Enclose()
}

func (r *Request) note(format string, a ...any) {
	r.emit(Event{Kind: EventNote, Text: fmt.Sprintf(format, a...)})
}

// Run does one run end to end and stores it. It returns the stored summary
// (also for a run that was interrupted, had errors or failed a check: then
// with the error that carries the exit code), or nil and the error when
// nothing was stored.
func Run(ctx context.Context, req *Request) (*results.Summary, error) {
	w := req.Workload
	if err := w.Meta().CheckPlatform(runtime.GOOS); err != nil {
		return nil, err
	}
	set := w.Options().Phase(option.PhaseRun)
	seed := option.ExecOf(set, req.Options).Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
		if o, ok := set.ByRole(option.RoleSeed); ok {
			req.Options[o.Name] = fmt.Sprint(seed)
		}
	}
	env := &workload.RunEnv{Target: req.Target, Options: req.Options, Seed: seed, Version: req.Version,
		Getenv: req.Getenv, LookupEnv: req.LookupEnv, Note: req.note, Stdout: req.Stdout, Stderr: req.Stderr}
	if req.Shard != nil {
		env.Shard, env.Unsharded = workload.Shard{Index: req.Shard.Index, Count: req.Shard.Count}, req.Unsharded
		env.Ready = req.Barrier
	}
	sum, err := runOnce(ctx, req, env)
	if req.Live != nil {
		req.Live.Finish(sum, err)
	}
	return sum, err
}

func runOnce(ctx context.Context, req *Request, env *workload.RunEnv) (*results.Summary, error) {
	w := req.Workload
	r, err := w.NewRun(ctx, env)
	if err != nil {
		return nil, err
	}
	switch r := r.(type) {
	case workload.Transactions:
		defer r.Close()
		if req.Live != nil {
			req.Live.SetExecutor(true)
		}
		return req.finish(runTransactions(ctx, req, r))
	case workload.Measurer:
		return req.finish(runMeasurer(ctx, req, r))
	}
	return nil, errs.New(errs.KindInternal, "", "workload %s: its run is neither executed nor self-measured", w.Meta().Name)
}

// applySettings applies the run's settings; the returned restore puts them
// back whatever happens (a cancelled ctx does not stop it).
func applySettings(ctx context.Context, req *Request) (map[string]string, func(), error) {
	if len(req.Settings) == 0 || req.Target == nil {
		return nil, func() {}, nil
	}
	ch, err := req.Target.Settings().Apply(ctx, req.Settings)
	if err != nil {
		return nil, func() {}, err
	}
	return ch.Values(), func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := ch.Restore(rctx); err != nil {
			req.emit(Event{Kind: EventWarning, Text: "restoring settings failed: " + err.Error()})
		} else {
			req.emit(Event{Kind: EventRestored})
		}
	}, nil
}

func runTransactions(ctx context.Context, req *Request, r workload.Transactions) (*results.Summary, error) {
	applied, restore, err := applySettings(ctx, req)
	if err != nil {
		return nil, err
	}
	defer restore()
	if err := r.Before(ctx); err != nil {
		return nil, err
	}
	env := envOf(ctx, req)
	if d := r.Describe(); d != "" {
		req.emit(Event{Kind: EventHeader, Text: d})
	}

	x := r.Exec()
	cfg := run.Config{
		Workers: x.Workers, Threads: x.Threads, FollowServer: x.FollowServer, Duration: x.Duration, Transactions: x.Count,
		Warmup: x.Warmup, Rate: x.Rate, LatencyLimit: x.LatencyLimit, TimerSlack: x.TimerSlack, Seed: x.Seed, Tick: time.Second,
		OnMeasureStart: x.OnMeasureStart, OnMeasureEnd: x.OnMeasureEnd,
		OnError: func(worker int, o step.Outcome) { req.emit(Event{Kind: EventError, Worker: worker, Outcome: o}) },
		Ready:   req.Barrier,
		// A shard keeps its intervals' histograms for the merge.
		TickHistograms: req.Shard != nil,
	}
	if x.NewThread != nil {
		cfg.NewThread = func() step.Thread { return x.NewThread() }
	}
	if req.Progress > 0 || req.Live != nil {
		if req.Progress > 0 {
			cfg.Tick = req.Progress
		}
		nominal := cfg.Tick.Seconds()
		prev := math.Inf(-1)
		cfg.OnTick = func(tk run.Tick) {
			span := nominal
			if !math.IsInf(prev, -1) && tk.T > prev {
				span = tk.T - prev
			}
			prev = tk.T
			if req.Live != nil {
				v, ok := liveHeadline(req.Workload, tk, span)
				req.Live.Tick(tk, v, ok)
			}
			if req.Progress > 0 {
				req.emit(Event{Kind: EventTick, Tick: tk, Span: span})
			}
		}
	}
	smp, err := startSampling(ctx, req)
	if err != nil {
		return nil, err
	}
	smp.attach(&cfg)
	leave, err := req.enclose()
	if err != nil {
		smp.stop(nil, 0)
		return nil, err
	}
	res, execErr := run.Execute(ctx, cfg, func(ctx context.Context, id int) (step.Worker, error) {
		return r.NewWorker(ctx, id)
	})
	leave()
	sampled := smp.stop(res, x.Warmup)
	if res == nil {
		if execErr != nil {
			return nil, execErr
		}
		return nil, errs.New(errs.KindInternal, "", "executor returned no result")
	}

	// From here on, work must finish even after an interrupt.
	bg, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sum := results.FromRun(res)
	sum.Workload = req.Workload.Meta().Name
	sum.WarmupS = x.Warmup.Seconds()
	sum.Settings = applied
	recordHosts(req, sum, smp, sampled)
	v, afterErr := r.After(bg, res, sum)
	if afterErr != nil {
		req.emit(Event{Kind: EventWarning, Text: "after the run: " + afterErr.Error()})
	}
	if v == nil {
		v = &workload.Verdict{}
	}
	for _, w := range v.Warnings {
		req.emit(Event{Kind: EventWarning, Text: w})
	}
	if note := threadsNote(x.Threads, res); note != "" {
		req.emit(Event{Kind: EventWarning, Text: note})
	}
	sum.Extra = v.Extra
	if v.Check != nil {
		if sum.Check, err = json.Marshal(v.Check); err != nil {
			return nil, err
		}
	}
	decideStatus(sum, res, v, afterErr, execErr, x)
	hists, err := results.RunHistograms(res)
	if err != nil {
		return nil, err
	}
	series := append(append(results.RunSeries(res), v.Series...), sampled...)
	id, err := save(bg, req, r, sum, env, v.Check, series, hists, results.RunIntervals(res))
	if err != nil && req.rescued == nil { // a rescued run still ends with its own exit code
		return sum, err
	}
	switch {
	case execErr != nil:
		return sum, execErr
	case res.Interrupted:
		return sum, errs.New(errs.KindInterrupted, "", "run interrupted; partial result saved as run %d (status interrupted)", id)
	case len(v.Failures) > 0:
		return sum, failureError(v.Failures[0], id)
	}
	return sum, errorsExit(sum, id, req.Workload, req.Target, func() driver.Space { return driver.SpaceNear(req.Target) })
}

// liveHeadline is the workload's headline over one tick, for the live
// view: its own (workload.LiveHeadliner: tpcc's NOPM), else the tick's tps
// when tps is its headline; none otherwise (known at the end).
func liveHeadline(w workload.Runner, tk run.Tick, span float64) (float64, bool) {
	if lh, ok := w.(workload.LiveHeadliner); ok {
		return lh.LiveHeadline(tk, span)
	}
	if w.Headline().Metric == "tps" {
		return tk.TPS, true
	}
	return 0, false
}

// livePoints hands the samplers' points to the live view, if any.
func livePoints(req *Request) func(time.Time, []sampler.Point) {
	if req.Live == nil {
		return nil
	}
	return req.Live.Points
}

// failureError is the exit error of a failed check.
func failureError(f workload.Failure, id int64) error {
	msg := fmt.Sprintf("%s failed after run %d", f.What, id)
	if f.Detail != "" {
		msg += ": " + f.Detail
	}
	return errs.New(errs.KindCheckFailed, f.Hint, "%s", msg)
}

// settingsRecorder is the Extra of a run that measures itself on a
// database and records the settings it ran with (the executor's runs keep
// them in Measured).
type settingsRecorder interface {
	RecordSettings(map[string]string)
}

func runMeasurer(ctx context.Context, req *Request, r workload.Measurer) (*results.Summary, error) {
	// A workload that speaks to the database gets the run's settings and
	// the samplers, as the executor's runs do; one without (storage,
	// fsblog) measures on its own.
	onDB := req.Target != nil && len(req.Workload.Meta().Dialects) > 0
	var applied map[string]string
	if onDB {
		a, restore, err := applySettings(ctx, req)
		if err != nil {
			return nil, err
		}
		defer restore()
		applied = a
	}
	if d := r.Describe(); d != "" {
		req.emit(Event{Kind: EventHeader, Text: d})
	}
	smp := &sampling{}
	if onDB {
		var err error
		if smp, err = startSampling(ctx, req); err != nil {
			return nil, err
		}
		if smp.c != nil {
			smp.c.MeasureStart()
		}
	}
	leave, err := req.enclose()
	if err != nil {
		smp.stop(nil, 0)
		return nil, err
	}
	m, err := r.Measure(ctx)
	leave()
	if m != nil && smp.c != nil {
		// T = 0 where the workload's own measurement started (after what it
		// prepared), so the series line up with its own times.
		smp.c.SetZero(m.Summary.StartedAt)
	}
	sampled := smp.stop(nil, 0)
	if m == nil {
		return nil, err
	}
	if rec, ok := m.Summary.Extra.(settingsRecorder); ok && len(applied) > 0 {
		rec.RecordSettings(applied)
	}
	bg, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum := m.Summary
	sum.Workload = req.Workload.Meta().Name
	recordHosts(req, sum, smp, sampled)
	markHostGaps(sum)
	if m.Env == nil {
		m.Env = envOf(bg, req)
	} else {
		// The workload's own snapshot (of its directory): what the run
		// was made in is the lifecycle's to add.
		m.Env.Layout, m.Env.Envelope, m.Env.Kernel = req.Layout, req.Envelope, req.Kernel
		addTargetNotes(m.Env, req)
	}
	id, serr := save(bg, req, r, sum, m.Env, m.Check, append(m.Series, sampled...), m.Histograms, nil)
	if serr != nil && req.rescued == nil { // a rescued run still ends with its own exit code
		return sum, serr
	}
	if m.Exit != nil {
		return sum, m.Exit(id)
	}
	return sum, err
}

// save stores the run in one transaction, with the request's plan link.
func save(ctx context.Context, req *Request, r workload.Run, sum *results.Summary, env *envinfo.Snapshot, check any, series []store.Point, hists []store.Histogram, intervals []store.IntervalHistogram) (int64, error) {
	if req.EnvelopeUsage != nil && env != nil && env.Envelope != nil {
		env.Envelope.Usage, env.Envelope.UsageLine = req.EnvelopeUsage()
	}
	if req.Live != nil {
		sum.RunKey = req.Live.Key()
	}
	sum.Shard = req.Shard
	params, err := paramsJSON(req, r)
	if err != nil {
		return 0, err
	}
	rec := &results.Record{Summary: sum, Experiment: req.Experiment, Variant: r.Variant(), Params: params,
		Env: env, Check: check, Series: series, Histograms: hists, Intervals: intervals, Link: req.Link, RescueDirs: rescueDirs(req)}
	id, err := results.Save(ctx, req.Store, rec)
	if err != nil {
		if _, ok := store.RescuedTo(err); ok {
			req.rescued = err
		}
		return 0, err
	}
	req.emit(Event{Kind: EventSaved, RunID: id, Path: req.Store.Path()})
	return id, nil
}

// threadsNote says when the workers were to be multiplexed on fewer
// threads and were not (their connections could not be polled: TLS, a
// connection that is not a plain socket); each then had a thread of its
// own.
func threadsNote(threads int, res *run.Result) string {
	if res == nil || threads <= 0 || threads >= res.Workers || res.Threads != res.Workers {
		return ""
	}
	return fmt.Sprintf("the %d clients ran on %d threads, not %d: their connections cannot be multiplexed (TLS, or not a plain socket), so each had a thread of its own", res.Workers, res.Threads, threads)
}

// recordHosts puts the run's host records in its summary, and what was not
// measured of the server's host and why: the target's note, or a remote
// server's host that no source measured.
func recordHosts(req *Request, sum *results.Summary, smp *sampling, pts []store.Point) {
	if req.Target == nil {
		return
	}
	dur := 0.0
	if sum.Measured != nil {
		dur = sum.DurationS
	} else if !sum.StartedAt.IsZero() && sum.EndedAt.After(sum.StartedAt) {
		// A workload that measures itself: its own span (the samplers'
		// T = 0 is at its start).
		dur = sum.EndedAt.Sub(sum.StartedAt).Seconds()
	}
	sum.Hosts = smp.hosts(pts, dur, !req.Target.Remote())
	why := smp.notMeasured
	if why == "" && sum.HostOf(results.HostServer) == nil {
		switch {
		case req.Shard != nil && req.Shard.Index > 0:
			why = fmt.Sprintf("measured by shard 0/%d (one server, measured once)", req.Shard.Count)
		case req.Target.Remote():
			why = results.WhyRemote
		case req.HostMetrics.Source == target.HostNone:
			why = "not measured: --host-metrics none"
		}
	}
	if why != "" {
		sum.NotMeasured = map[string]string{results.NotMeasuredServerHost: why}
	}
}
