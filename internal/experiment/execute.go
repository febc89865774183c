package experiment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/store"
)

// Store is the part of the results store an experiment uses (*store.Store).
type Store interface {
	CreateExperiment(ctx context.Context, e *store.Experiment) (int64, error)
	GetExperiment(ctx context.Context, name string) (*store.Experiment, error)
	PlanLinks(ctx context.Context, experimentID int64) ([]store.PlanLink, error)
	SetExperimentStatus(ctx context.Context, id int64, status string, ended time.Time) error
	SetExperimentPlan(ctx context.Context, id int64, plan json.RawMessage) error
	SavePlanLink(ctx context.Context, l store.PlanLink) error
	SaveHook(ctx context.Context, h store.HookRecord) error
	AddRunReason(ctx context.Context, runID int64, code, detail string) error
}

// KernelTarget is a Target that sets kernel settings (matrix.kernel) of
// its machine and devices; they stay until Close (queue settings) or the
// Env's Finish.
type KernelTarget interface {
	Kernel(ctx context.Context, settings []Setting) error
}

// SettingsRestorer is a Target that puts back every setting applied
// through it and keeps its server (a change of named target on one
// server, StepRestore).
type SettingsRestorer interface {
	RestoreSettings(ctx context.Context) (restarted bool, err error)
}

// Finisher is an Env with work at the very end of an experiment, after
// the last target closed (restoring the machine's kernel settings); it is
// called also after an interruption, with a context that is not
// cancelled.
type Finisher interface {
	Finish(ctx context.Context) error
}

// Env opens the target of a data directory ("" when the matrix has no
// data_dir: the target of the file).
type Env interface {
	Open(ctx context.Context, dataDir string) (Target, error)
}

// Preflighter is an Env that can check, before an experiment starts,
// that the machine offers what the whole plan needs.
type Preflighter interface {
	Preflight(ctx context.Context, p *Plan) error
}

// Target is one server for the runs of one data directory.
type Target interface {
	// Apply makes settings effective (a reload, or a restart when a
	// setting's context needs one) and verifies them before returning.
	Apply(ctx context.Context, settings []Setting) (restarted bool, err error)
	// Check validates settings without changing anything.
	Check(ctx context.Context, settings []Setting) error
	// Load makes the data of cfg.Load available: loaded into the template
	// database (or, with reset: none, the benchmark database) unless it is
	// there already from an earlier attempt (loaded = false).
	Load(ctx context.Context, cfg *Config) (loaded bool, err error)
	// Reset recreates the benchmark database from its template.
	Reset(ctx context.Context) error
	// Run does one run and stores it with req.Link in the same transaction.
	// A run that was stored returns its id and status even with an error
	// (errors over the threshold, a failed check, an interruption).
	Run(ctx context.Context, req RunRequest) (RunResult, error)
	// Close restores every setting Apply changed and stops a server the
	// target started. It is called also after an interruption, with a
	// context that is not cancelled.
	Close(ctx context.Context) error
}

// RunRequest is what a Target needs for one run.
type RunRequest struct {
	Experiment string
	Plan       *Plan
	Index      int     // plan run index
	Config     *Config // its configuration
	Options    Options // run options, the x axis value included
	Seed       int64
	Link       store.PlanLink // to store with the run (experiment id set)
}

// RunResult is what a run produced.
type RunResult struct {
	RunID  int64   // 0 when nothing was stored
	Status string  // the stored run's status
	Metric float64 // throughput (the workload's Metric)
	Brief  string  // a one-line summary for the progress output
}

// Clock is time for the orchestrator (fake in tests).
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// EventKind says what an Event reports.
type EventKind int

const (
	EventBegin    EventKind = iota // the experiment starts or resumes (Total, Skipped, ETA)
	EventStep                      // a step starts (Step; for runs Ordinal, Total, ETA)
	EventStepDone                  // a step ended (Step, Elapsed, Err, Result, Loaded, Restarted)
	EventEnd                       // the experiment ended (Status, Err)
)

// Event is a progress report to the Observer.
type Event struct {
	Kind      EventKind
	Step      Step
	Ordinal   int // runs: 1-based position among the runs of this attempt
	Total     int // runs to do in this attempt
	Skipped   int // resume: completed runs not done again
	ETA       time.Duration
	Elapsed   time.Duration
	Err       error
	Result    *RunResult
	Loaded    bool // load: data was loaded (false: it was there already)
	Restarted bool // apply: the server was restarted
	// Hook is what a hook step ran; SkippedBy says why a run did not run
	// (a before hook failed).
	Hook      *store.HookRecord
	SkippedBy string
	Status    string
	Resumed   bool
}

// Observer receives progress events (the CLI prints them).
type Observer func(Event)

// Runner executes plans.
type Runner struct {
	Store   Store
	Env     Env
	Clock   Clock
	Observe Observer
	// Hook runs a hook's command (nil: RunHookCommand).
	Hook HookExec
	// Environ is the environment hooks start from (the process's: PATH,
	// HOME...), before the variables that say where they are.
	Environ []string
}

// Outcome is what Execute did.
type Outcome struct {
	ExperimentID int64
	Status       string // store.ExpDone, ExpInterrupted or ExpFailed
	Ran          int    // runs done in this attempt (warm-up runs included)
	Skipped      int    // completed runs skipped on resume
	Failed       int    // runs that failed (not stored, or stored as failed)
	HookSkipped  int    // runs not done because a before hook failed
}

// Execute runs the plan: a new experiment, or with resume the experiment of
// the same name in the store, skipping its completed runs. The experiment's
// status goes running -> done, interrupted or failed. Settings are restored
// and servers stopped at the end, also after an interruption (ctx
// cancelled). The error carries the exit code (errs kinds).
func (r *Runner) Execute(ctx context.Context, p *Plan, resume bool) (Outcome, error) {
	var out Outcome
	if p.workload != nil && !p.workload.Runnable {
		return out, errs.Usage("use --dry-run to see the plan; the workload's runs land with its own command",
			"workload %s cannot run in experiments in this build yet", p.Workload)
	}
	if pf, ok := r.Env.(Preflighter); ok {
		// What the machine must offer for the whole plan, before anything
		// is stored or started: a layout that cannot be made fails now,
		// not when its configuration comes up hours later.
		if err := pf.Preflight(ctx, p); err != nil {
			return out, err
		}
	}
	clock := r.Clock
	if clock == nil {
		clock = RealClock{}
	}
	observe := r.Observe
	if observe == nil {
		observe = func(Event) {}
	}
	planJSON, err := p.JSON()
	if err != nil {
		return out, err
	}

	todo := make([]bool, len(p.Runs))
	for i := range todo {
		todo[i] = true
	}
	var expID int64
	var prev *store.Experiment // the stored experiment a resume continues
	if resume {
		e, err := r.Store.GetExperiment(ctx, p.Name)
		if err != nil {
			return out, errs.Wrap(errs.KindUsage, err, "run it without --resume to start it", "cannot resume experiment %q", p.Name)
		}
		stored, err := DecodePlan(e.Plan)
		if err != nil {
			return out, errs.Wrap(errs.KindUsage, err, "run it as a new experiment under another name", "cannot resume experiment %q", p.Name)
		}
		if !p.SameRunsAs(stored) {
			return out, errs.Usage("put the file back as it was, or run it as a new experiment under another name",
				"experiment %q changed since it started: %s", p.Name, strings.Join(stored.Differences(p), "; "))
		}
		links, err := r.Store.PlanLinks(ctx, e.ID)
		if err != nil {
			return out, err
		}
		if todo, out.Skipped, err = p.Remaining(links); err != nil {
			return out, errs.Wrap(errs.KindUsage, err, "run it as a new experiment under another name", "cannot resume experiment %q", p.Name)
		}
		expID, prev = e.ID, e
		if err := r.Store.SetExperimentPlan(ctx, expID, planJSON); err != nil {
			return out, err
		}
		if err := r.Store.SetExperimentStatus(ctx, expID, store.ExpRunning, time.Time{}); err != nil {
			return out, err
		}
	} else {
		e := &store.Experiment{Name: p.Name, Spec: p.specSource(), Plan: planJSON, Status: store.ExpRunning, StartedAt: clock.Now()}
		if expID, err = r.Store.CreateExperiment(ctx, e); err != nil {
			return out, err
		}
	}
	out.ExperimentID = expID

	steps := p.Schedule(func(i int) bool { return todo[i] })
	total := 0
	for _, s := range steps {
		if s.Kind == StepRun {
			total++
		}
	}
	eta := newETA(steps)
	observe(Event{Kind: EventBegin, Total: total, Skipped: out.Skipped, ETA: eta.remaining(0), Resumed: resume})

	var (
		target   Target
		runErr   error // the first error of a stored run (errors, check)
		fatal    error // what stopped the experiment
		ordinal  int
		finished bool
		hk       = hookState{skipBlock: -1, skipRun: map[int]string{}, pending: map[int][]store.HookRecord{}, runIDs: map[int]RunResult{}}
	)
	hookExec := r.Hook
	if hookExec == nil {
		hookExec = RunHookCommand
	}
	saveHook := func(h store.HookRecord) {
		h.ExperimentID = expID
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := r.Store.SaveHook(sctx, h); err != nil && runErr == nil {
			runErr = err
		}
	}
	var lastTarget Target // for the hooks after the last close
	closeTarget := func() error {
		if target == nil {
			return nil
		}
		t := target
		target, lastTarget = nil, t
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		return t.Close(cctx)
	}

	for si, s := range steps {
		if ctx.Err() != nil {
			fatal = ctx.Err()
			break
		}
		if why := hk.skipped(p, s); why != "" {
			if s.Kind == StepRun {
				ordinal++
				out.HookSkipped++
				for _, h := range hk.pending[s.Run] {
					saveHook(h)
				}
				delete(hk.pending, s.Run)
				l := p.Link(expID, s.Run)
				l.Status = store.StatusSkipped
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				if err := r.Store.SavePlanLink(sctx, l); err != nil && runErr == nil {
					runErr = err
				}
				cancel()
				observe(Event{Kind: EventStepDone, Step: s, Ordinal: ordinal, Total: total, SkippedBy: why})
			}
			eta.done(si, 0)
			continue
		}
		ev := Event{Kind: EventStep, Step: s}
		if s.Kind == StepRun {
			ordinal++
			ev.Ordinal, ev.Total, ev.ETA = ordinal, total, eta.remaining(si)
		}
		observe(ev)
		t0 := clock.Now()
		done := Event{Kind: EventStepDone, Step: s, Ordinal: ev.Ordinal, Total: total}
		var err error
		switch s.Kind {
		case StepOpen:
			if target, err = r.Env.Open(ctx, s.DataDir); err == nil {
				err = checkSettings(ctx, target, p, s.DataDir)
			}
		case StepLoad:
			done.Loaded, err = target.Load(ctx, &p.Configs[s.Config])
		case StepApply:
			done.Restarted, err = target.Apply(ctx, s.Settings)
		case StepRestore:
			rt, ok := target.(SettingsRestorer)
			if !ok {
				err = errs.New(errs.KindInternal, "", "this target cannot put settings back before the next named target's")
				break
			}
			done.Restarted, err = rt.RestoreSettings(ctx)
		case StepKernel:
			kt, ok := target.(KernelTarget)
			if !ok {
				err = errs.Usage("remove matrix.kernel, or run the experiment on a target tunebench manages", "this target cannot set kernel settings")
				break
			}
			err = kt.Kernel(ctx, s.Kernel)
		case StepHook:
			res := hk.runIDs[s.Run]
			if s.Hook.Point != HookAfterRun || !s.PerRun {
				res = RunResult{}
			}
			rec := hookExec(ctx, *s.Hook, p.hookVars(r.Environ, cmp.Or(target, lastTarget), s, res.RunID, res.Status))
			rec.Config, rec.RunID = "", res.RunID
			if s.Hook.Point != HookBeforeExperiment && s.Hook.Point != HookAfterExperiment {
				rec.Config = p.Configs[s.Config].Label
			}
			if s.PerRun {
				rec.PlanIndex = s.Run
			}
			done.Hook = &rec
			err = hk.after(ctx, r.Store, p, s, &rec, saveHook, &runErr)
		case StepReset:
			err = target.Reset(ctx)
		case StepCooldown:
			err = clock.Sleep(ctx, s.Duration)
		case StepClose:
			err = closeTarget()
		case StepRun:
			res, rerr := r.run(ctx, target, p, expID, s.Run)
			done.Result, err = &res, rerr
			hk.runIDs[s.Run] = res
			for _, h := range hk.pending[s.Run] {
				h.RunID = res.RunID
				saveHook(h)
			}
			delete(hk.pending, s.Run)
			out.Ran++
			if res.RunID != 0 && res.Status == store.StatusFailed {
				out.Failed++
			}
			if rerr != nil && res.RunID == 0 && !interrupted(ctx, rerr) {
				// Nothing stored: record the attempt, so resume redoes it.
				out.Failed++
				l := p.Link(expID, s.Run)
				l.Status = store.StatusFailed
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				if serr := r.Store.SavePlanLink(sctx, l); serr != nil {
					err = errors.Join(err, serr) // the run's error and the record's
				}
				cancel()
			}
		}
		done.Elapsed, done.Err = clock.Now().Sub(t0), err
		eta.done(si, done.Elapsed)
		observe(done)
		if err == nil {
			continue
		}
		if s.Kind == StepRun && done.Result.RunID != 0 && !interrupted(ctx, err) {
			// A stored run with errors or a failed check: carry on.
			if runErr == nil {
				runErr = err
			}
			continue
		}
		fatal = err
		break
	}
	if fatal == nil && ctx.Err() == nil {
		finished = true
	}
	for _, hs := range hk.pending { // before_run hooks whose run never came
		for _, h := range hs {
			saveHook(h)
		}
	}
	cerr := closeTarget()
	var ferr error
	if f, ok := r.Env.(Finisher); ok {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		ferr = f.Finish(fctx)
		cancel()
	}
	if hk.afterExperiment != nil && fatal == nil {
		fatal = hk.afterExperiment
	}
	if out.HookSkipped > 0 && runErr == nil {
		runErr = errs.New(errs.KindRunErrors, "see why with tunebench experiment show "+p.Name+" --hooks; --resume runs them",
			"%d run(s) skipped because a before hook failed", out.HookSkipped)
	}

	status := store.ExpDone
	switch {
	case !finished && interrupted(ctx, fatal):
		status = store.ExpInterrupted
	case !finished || out.Failed > 0 || out.HookSkipped > 0:
		status = store.ExpFailed
	}
	ended := clock.Now()
	if prev != nil && out.Ran == 0 && status == store.ExpFailed {
		// A resume that could not start a run (its server refused, say)
		// changes nothing: the experiment keeps the status it had, except
		// that one still marked running was killed (this process is the
		// one running it now): it was interrupted.
		status, ended = prev.Status, prev.EndedAt
		if status == store.ExpRunning {
			status, ended = store.ExpInterrupted, clock.Now()
		}
	}
	out.Status = status
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	serr := r.Store.SetExperimentStatus(sctx, expID, status, ended)

	var final error
	switch {
	case status == store.ExpInterrupted:
		final = errs.New(errs.KindInterrupted, "continue it with --resume (completed runs are kept)",
			"experiment %s interrupted; settings restored", p.Name)
	case fatal != nil:
		final = fatal
	case runErr != nil:
		final = runErr
	}
	if cerr != nil {
		cerr = errs.Wrap(errs.KindConnect, cerr, "check the server log; settings may need restoring by hand (tunebench server stop restores them)", "closing the target")
	}
	final = joinKeepKind(final, cerr, ferr, serr)
	observe(Event{Kind: EventEnd, Status: status, Err: final})
	return out, final
}

// run does one planned run.
func (r *Runner) run(ctx context.Context, t Target, p *Plan, expID int64, i int) (RunResult, error) {
	run := p.Runs[i]
	req := RunRequest{
		Experiment: p.Name, Plan: p, Index: i, Config: &p.Configs[run.Config],
		Options: p.RunOptions(i), Seed: run.Seed, Link: p.Link(expID, i),
	}
	return t.Run(ctx, req)
}

// interrupted reports whether err comes from an interruption.
func interrupted(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	return err != nil && (errs.KindOf(err) == errs.KindInterrupted || errors.Is(err, context.Canceled))
}

// joinKeepKind joins errors, keeping the first one's kind (exit code).
func joinKeepKind(list ...error) error {
	var first error
	var rest []error
	for _, e := range list {
		if e == nil {
			continue
		}
		if first == nil {
			first = e
			continue
		}
		rest = append(rest, e)
	}
	if first == nil || len(rest) == 0 {
		return first
	}
	return &errs.Error{Kind: errs.KindOf(first), Hint: errs.HintOf(first), Err: errors.Join(append([]error{first}, rest...)...)}
}

func (p *Plan) specSource() string {
	if p.spec != nil {
		return p.spec.Source
	}
	return ""
}

// eta estimates the time left from the schedule, scaled by how the actual
// times of the finished steps compare with their estimates.
type eta struct {
	est        []time.Duration
	estDone    time.Duration
	actualDone time.Duration
}

func newETA(steps []Step) *eta {
	e := &eta{est: make([]time.Duration, len(steps))}
	for i, s := range steps {
		e.est[i] = s.Estimate
	}
	return e
}

func (e *eta) done(i int, actual time.Duration) {
	e.estDone += e.est[i]
	e.actualDone += actual
}

// remaining is the time left from step i on.
func (e *eta) remaining(i int) time.Duration {
	var left time.Duration
	for _, d := range e.est[i:] {
		left += d
	}
	if e.estDone > time.Minute/2 && e.actualDone > 0 {
		ratio := float64(e.actualDone) / float64(e.estDone)
		ratio = max(0.5, min(3, ratio))
		left = time.Duration(float64(left) * ratio)
	}
	return left.Round(time.Second)
}
