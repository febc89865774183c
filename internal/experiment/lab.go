package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/envelope"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/lifecycle"
	"github.com/tunebench/tunebench/internal/live"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/storage/layout"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// CatalogOf describes the registered workloads that can run in
// experiments: their experiment keys (every option that is not a flag
// only), headline and x axis, estimates and rules.
func CatalogOf(reg *workload.Registry) Catalog {
	cat := Catalog{}
	for _, w := range reg.All() {
		r, ok := w.(workload.Runner)
		if !ok {
			continue
		}
		h := r.Headline()
		var opts option.Set
		for _, o := range w.Options().Keys() {
			if !o.Check {
				opts = append(opts, o)
			}
		}
		_, loads := w.(workload.Loader)
		ew := &Workload{Name: w.Meta().Name, Description: w.Meta().Description, XAxis: h.XAxis, Metric: h.Metric,
			Options: opts, Runnable: loads || len(w.Meta().Dialects) == 0, NoDatabase: len(w.Meta().Dialects) == 0,
			Dialects: w.Meta().Dialects}
		ew.RunTime = func(o Options) (time.Duration, bool) { return workload.RunTimeByRoles(w, o) }
		if e, ok := w.(workload.Estimator); ok {
			ew.RunTime, ew.LoadTime, ew.DataBytes = e.RunTime, e.LoadTime, e.DataBytes
		}
		ew.Check = func(o Options) error {
			for _, p := range []option.Phase{option.PhaseLoad, option.PhaseRun} {
				v := Options{}
				for _, opt := range w.Options().Phase(p) {
					if x, ok := o[opt.Name]; ok {
						v[opt.Name] = x
					}
				}
				// The plan fills every option with its default, so the rule
				// "a duration and a count both given" does not apply: a
				// count replaces the duration, as it always did in files.
				if err := workload.Check(w, p, v, nil); err != nil {
					return err
				}
			}
			return nil
		}
		cat[ew.Name] = ew
	}
	return cat
}

// Lab runs an experiment's plan on real targets: it opens them (a managed
// server per data directory, or the file's DSN), loads data into template
// databases, resets the benchmark database from them and does each run
// through the run lifecycle.
type Lab struct {
	Registry  *workload.Registry
	Drivers   []target.Driver
	Spec      *Spec
	Plan      *Plan
	Store     *store.Store
	Version   string
	Progress  time.Duration // the runs' progress tick (0: none)
	Getenv    func(string) string
	LookupEnv func(string) (string, bool)
	Redactor  *redact.Redactor
	Log       io.Writer // the managed servers' messages
	// Stdout and Stderr take the runs' own output (workload.RunEnv).
	Stdout, Stderr io.Writer
	Observe        lifecycle.Observer // the events of each run
	// LoadProgress receives the loads' progress; LoadNote their lines.
	LoadProgress func(workload.LoadProgress)
	LoadNote     func(format string, a ...any)
	// AllowDestroy lets storage layouts make filesystems on the real
	// devices they name (--allow-destroy).
	AllowDestroy bool
	// Live, when set, makes each run's live view (--listen): the run key
	// labels its series and is stored with it.
	Live func(w workload.Workload, planRun int, planLabel string) *live.Run
	// KernelJournal is the journal of kernel changes (""
	// kernel.DefaultJournal); KernelMachine where the kernel's files are
	// (zero: this machine).
	KernelJournal string
	KernelMachine kernel.Machine

	kernel *kernel.Session // the experiment's kernel changes (nil: none yet)
}

// marker starts the comment of every database an experiment makes.
const marker = "tunebench experiment"

// Open starts (or attaches to) the server of a data directory, or opens
// the file's DSN target, and applies the base settings.
func (l *Lab) Open(ctx context.Context, dataDir string) (Target, error) {
	spec := l.Spec
	// The file's target, or the named target whose server this group is
	// (its settings are its configurations', applied with each of them).
	tgt, base := &spec.Target, spec.Target.Settings
	if nt := spec.NamedTarget(l.Plan.ServerOf(dataDir)); nt != nil {
		tgt, base = &nt.TargetSpec, nil
		if l.Plan.multiServer() && nt.Managed != nil {
			dataDir = nt.Managed.Dir
		}
	}
	ts := target.Spec{DSN: tgt.DSN, RestartCommand: tgt.RestartCommand, RestartTimeout: tgt.RestartTimeout, Own: true, Redactor: l.Redactor, Log: l.Log,
		Avoid: []string{l.Plan.Database, l.Plan.Database + "_template"}}
	for _, b := range base {
		ts.Base = append(ts.Base, target.Setting{Name: b.Name, Value: b.Value})
	}
	lt := &labTarget{lab: l, hostMetrics: tgt.HostMetrics}
	for _, b := range base {
		if b.Name == "huge_pages" {
			lt.hugePagesSetting = strings.ToLower(b.Value)
		}
	}
	if tgt.Managed != nil {
		// Machine-wide kernel settings before the server starts (huge
		// pages it maps at start). A server given by DSN is checked to
		// run here first.
		if err := lt.applyBaseMachine(); err != nil {
			return nil, err
		}
	}
	if m := tgt.Managed; m != nil {
		ts.DSN = ""
		ts.Managed = &target.Managed{Engine: m.Engine, Dir: dataDir, Port: m.Port, PGBin: m.PGBin, RunAs: m.RunAs}
		if storage, env, ok := ParseGroup(dataDir); ok {
			ts.Managed.Dir = m.Dir
			if storage != "" {
				if err := lt.makeLayout(ctx, storage, ts.Managed); err != nil {
					return nil, err
				}
			}
			if env != "" {
				if err := lt.makeEnvelope(env, ts.Managed); err != nil {
					return nil, errors.Join(err, lt.teardown(context.WithoutCancel(ctx)))
				}
			}
		}
	}
	t, err := target.Open(ctx, l.Drivers, ts)
	if err != nil {
		return nil, errors.Join(err, lt.teardown(context.WithoutCancel(ctx)))
	}
	lt.t = t
	if l.usesKernel(l.Plan) && t.Remote() {
		lt.Close(context.WithoutCancel(ctx))
		return nil, errs.Usage("remove target.kernel and matrix.kernel, or run tunebench on the server's machine",
			"kernel settings change this machine's kernel, and the server runs on another machine (%s)", t.Describe())
	}
	if tgt.Managed == nil {
		if err := lt.applyBaseMachine(); err != nil {
			lt.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if err := lt.applyBaseQueue(ctx, dataDir); err != nil {
		lt.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := lt.checkHugePages(); err != nil {
		lt.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if tgt.HostMetrics.Source == target.HostLocal && t.Remote() {
		lt.Close(context.WithoutCancel(ctx))
		return nil, errs.Usage("give target.host_metrics: sql (the server's /proc read through the database) or the URL of its node_exporter",
			"target.host_metrics local reads this machine's /proc, and the server runs on another machine (%s)", t.Describe())
	}
	w, ok := l.Registry.Get(l.Plan.Workload)
	if !ok {
		lt.Close(context.WithoutCancel(ctx))
		return nil, errs.New(errs.KindUsage, "", "workload %s is not in this build", l.Plan.Workload)
	}
	if d := w.Meta().Dialects; len(d) > 0 && !target.Speaks(d, t) {
		lt.Close(context.WithoutCancel(ctx))
		return nil, errs.Usage("run it on a target of one of those databases", "workload %s speaks %v, the target is %s", w.Meta().Name, d, t.Dialect())
	}
	lt.w = w
	return lt, nil
}

// makeLayout makes storage layout name (what a killed run left of it is
// cleaned up first) in target.managed.dir, or a temporary directory, and
// points the managed server at a new directory on it (pg_wal on the WAL
// layout's filesystem when there is one).
func (lt *labTarget) makeLayout(ctx context.Context, name string, m *target.Managed) error {
	l := lt.lab.Spec.Layouts[name]
	if l == nil {
		return errs.New(errs.KindInternal, "", "storage layout %s is not in the file", name)
	}
	work := lt.lab.Spec.Target.Managed.Dir
	if work == "" {
		d, err := os.MkdirTemp("", "tunebench-layouts-")
		if err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "set TMPDIR to a writable directory or give target.managed.dir", "cannot make a temporary directory")
		}
		if err := os.Chmod(d, 0o755); err != nil {
			os.RemoveAll(d)
			return errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", d)
		}
		work, lt.tempDir = d, d
	}
	o := layout.Options{WorkDir: work, AllowDestroy: lt.lab.AllowDestroy, Log: func(format string, a ...any) {
		if lt.lab.Log != nil {
			fmt.Fprintf(lt.lab.Log, format+"\n", a...)
		}
	}}
	if err := layout.Sweep(ctx, l, o); err != nil {
		return err
	}
	mounted, err := layout.Provision(ctx, l, o)
	if err != nil {
		return errors.Join(err, lt.teardown(context.WithoutCancel(ctx)))
	}
	lt.layout = mounted
	m.Dir = filepath.Join(mounted.Dir, "server")
	if mounted.WAL != nil {
		m.WALDir = filepath.Join(mounted.WAL.Dir, "pg_wal")
	}
	return nil
}

// makeEnvelope makes the cgroup of envelope name (after sweeping what
// killed runs left) and has the managed server started inside it.
func (lt *labTarget) makeEnvelope(name string, m *target.Managed) error {
	e := lt.lab.Spec.Envelopes[name]
	if e == nil {
		return errs.New(errs.KindInternal, "", "envelope %s is not in the file", name)
	}
	if removed, err := envelope.Sweep(); err != nil {
		return err
	} else if len(removed) > 0 && lt.lab.Log != nil {
		fmt.Fprintf(lt.lab.Log, "removed %d cgroup(s) an earlier run left: %s\n", len(removed), strings.Join(removed, ", "))
	}
	// Pages cached by an earlier server on this directory stay charged to
	// its cgroup: drop them, so the envelope's memory limit sees its own.
	if m.Dir != "" {
		if _, err := os.Stat(m.Dir); err == nil {
			if _, err := envelope.EvictCache(m.Dir); err != nil {
				return err
			}
		}
	}
	g, err := envelope.Create(e)
	if err != nil {
		return err
	}
	lt.group = g
	rec := g.Describe()
	lt.envelope = &rec
	if lt.lab.Log != nil {
		fmt.Fprintf(lt.lab.Log, "envelope %s\n", rec.Brief())
	}
	m.Wrap = g.Command
	return nil
}

// usageSince reads the envelope's counters now and returns what reads
// them again at the run's end and says the difference (nil without an
// envelope).
func (lt *labTarget) usageSince() func() (json.RawMessage, string) {
	g := lt.group
	if g == nil {
		return nil
	}
	before, err := g.Usage()
	if err != nil {
		return nil
	}
	return func() (json.RawMessage, string) {
		after, err := g.Usage()
		if err != nil {
			return nil, ""
		}
		b, _ := json.Marshal(map[string]envelope.Usage{"before": before, "after": after})
		return b, usageLine(before, after)
	}
}

// usageLine says in one line what a run used of its envelope.
func usageLine(before, after envelope.Usage) string {
	var parts []string
	if m, m0 := after.Memory, before.Memory; m != nil && m0 != nil {
		parts = append(parts, fmt.Sprintf("%d memory limit hits, %d OOM kills, peak %s", m.LimitHits-m0.LimitHits, m.OOMKills-m0.OOMKills, human.Bytes(m.PeakBytes)))
	}
	if c, c0 := after.CPU, before.CPU; c != nil && c0 != nil && c.Throttled > c0.Throttled {
		parts = append(parts, fmt.Sprintf("CPU throttled %.1f s", (c.Throttled-c0.Throttled).Seconds()))
	}
	return strings.Join(parts, ", ")
}

// envelopeRecord is what the environment records of an envelope.
func envelopeRecord(r *envelope.Record) *envinfo.Envelope {
	if r == nil {
		return nil
	}
	b, _ := json.Marshal(r)
	return &envinfo.Envelope{Brief: r.Brief(), Record: b}
}

// layoutRecord is what the environment records of a made layout.
func layoutRecord(m *layout.Mounted) *envinfo.Layout {
	if m == nil {
		return nil
	}
	l := m.Layout
	r := &envinfo.Layout{Name: l.Name, Filesystem: l.Filesystem, Devices: l.Devices, LoopSize: l.LoopSize, Mkfs: m.MkfsCommand,
		Mount: l.Mount, Readahead: l.Readahead, Scheduler: l.Scheduler, WAL: layoutRecord(m.WAL)}
	switch {
	case l.RAID != nil:
		r.Volume = fmt.Sprintf("md raid%s over %d devices", l.RAID.Level, len(m.Members))
	case l.LVM != nil:
		r.Volume = fmt.Sprintf("LVM volume over %d devices", len(m.Members))
		if l.LVM.Stripes > 1 {
			r.Volume += fmt.Sprintf(", %d stripes", l.LVM.Stripes)
		}
	}
	return r
}

// teardown takes down the layout the target made and removes its
// temporary directory.
func (lt *labTarget) teardown(ctx context.Context) error {
	var err error
	if lt.group != nil {
		err = lt.group.Close()
		lt.group = nil
	}
	if lt.layout != nil {
		err = errors.Join(err, lt.layout.Teardown(ctx))
		lt.layout = nil
	}
	if lt.tempDir != "" && err == nil {
		os.RemoveAll(lt.tempDir)
		lt.tempDir = ""
	}
	return err
}

// Preflight checks what the plan's storage layouts and envelopes need of
// this machine: the mkfs, md or device-mapper and tools of each layout,
// the safety of every device it names and --allow-destroy for them, and a
// writable cgroup hierarchy with the controllers of each envelope.
func (l *Lab) Preflight(_ context.Context, p *Plan) error {
	if l.Spec.Target.Managed != nil && len(p.Targets) == 0 {
		if err := managedSupported(l.Drivers, l.Spec.Target.Managed.Engine); err != nil {
			return errs.New(errs.KindUsage, "give target.dsn (a database server you run) instead of target.managed", "%v", err)
		}
	}
	for _, pt := range p.Targets {
		if nt := l.Spec.NamedTarget(pt.Name); nt != nil && nt.Managed != nil {
			if err := managedSupported(l.Drivers, nt.Managed.Engine); err != nil {
				return errs.New(errs.KindUsage, "give targets."+nt.Name+".dsn (a database server you run) instead of managed, or leave the target out of matrix.target", "target %s: %v", nt.Name, err)
			}
		}
	}
	if l.Registry != nil && l.Spec.Workload != nil {
		if w, ok := l.Registry.Get(l.Spec.Workload.Name); ok {
			if err := w.Meta().CheckPlatform(runtime.GOOS); err != nil {
				return err
			}
		}
	}
	seenL, seenE := map[string]bool{}, map[string]bool{}
	var problems []error
	if n := l.Spec.Shards; n > 1 && l.Registry != nil && l.Spec.Workload != nil {
		if w, ok := l.Registry.Get(l.Spec.Workload.Name); ok {
			for i := range p.Runs {
				o := w.Options().Phase(option.PhaseRun).Complete(option.Values(p.RunOptions(i)))
				if _, _, err := workload.ShardOptions(w, workload.Shard{Count: n}, o); err != nil {
					problems = append(problems, fmt.Errorf("shards: %d: run %d (%s): %w", n, i+1, p.DescribeRun(i), err))
					break
				}
			}
		}
	}
	problems = append(problems, l.preflightKernel(p)...)
	for _, c := range p.Configs {
		if name := c.Storage; name != "" && !seenL[name] {
			seenL[name] = true
			for _, f := range layout.MachineCheck(l.Spec.Layouts[name]) {
				if f.Err != nil {
					problems = append(problems, f.Err)
				}
			}
			for each := l.Spec.Layouts[name]; each != nil; each = each.WAL {
				if len(each.Devices) > 0 && !l.AllowDestroy {
					problems = append(problems, errs.Usage("give --allow-destroy to let tunebench erase them, or use loop: SIZE",
						"layout %s would make a filesystem on %s, erasing what it holds", each.Name, strings.Join(each.Devices, ", ")))
				}
			}
		}
		if name := c.Envelope; name != "" && !seenE[name] {
			seenE[name] = true
			if _, err := envelope.Probe(l.Spec.Envelopes[name]); err != nil {
				problems = append(problems, err)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errs.Wrap(errs.KindOf(problems[0]), errors.Join(problems...), errs.HintOf(problems[0]),
		"this machine cannot run experiment %s as planned (nothing was started)", p.Name)
}

// labTarget is one server for the orchestrator.
type labTarget struct {
	lab *Lab
	t   target.Target // the administration target (not the benchmark database)
	w   workload.Workload
	// layout is the storage layout made for this target (matrix.storage),
	// torn down after the server stops; tempDir holds it when the file
	// names no target.managed.dir.
	layout  *layout.Mounted
	tempDir string
	// group is the hardware envelope the server runs in (matrix.envelope),
	// closed after the server stops; envelope is its record.
	group    *envelope.Group
	envelope *envelope.Record
	// devs are the block devices under the server's data directory (for
	// queue settings); hugePagesSetting the server's huge_pages as the
	// experiment set it ("" when it did not).
	devs             []string
	hugePagesSetting string
	// hostMetrics is how the server's host is measured (its target's
	// host_metrics; a named target's own for its runs).
	hostMetrics target.HostMetrics
}

// RestoreSettings puts back the settings applied through the target (the
// named target before, on a server the next one shares).
func (lt *labTarget) RestoreSettings(ctx context.Context) (bool, error) {
	r, ok := lt.t.(target.SettingsRestorer)
	if !ok {
		return false, errs.New(errs.KindUsage, "give each target a server of its own (a managed.dir or dsn of its own)",
			"%s cannot put its settings back without a stop, and two named targets share it", lt.t.Describe())
	}
	restarted, err := r.RestoreSettings(ctx)
	if err == nil {
		lt.hugePagesSetting = ""
	}
	return restarted, err
}

// runFacts are a run's host metrics and named target (nil: the file's
// one target).
func (lt *labTarget) runFacts(cfg *Config) (target.HostMetrics, *envinfo.NamedTarget) {
	nt := lt.lab.Spec.NamedTarget(cfg.Target)
	if nt == nil || cfg.Target == "" {
		return lt.hostMetrics, nil
	}
	return nt.HostMetrics, &envinfo.NamedTarget{Name: nt.Name, Engine: nt.Engine}
}

// Apply applies a configuration's settings; they stay until Close.
func (lt *labTarget) Apply(ctx context.Context, settings []Setting) (bool, error) {
	list := make([]target.Setting, len(settings))
	for i, s := range settings {
		list[i] = target.Setting{Name: s.Name, Value: s.Value}
	}
	ch, err := lt.t.Settings().Apply(ctx, list)
	if err != nil {
		return false, err
	}
	for _, s := range settings {
		if s.Name == "huge_pages" {
			lt.hugePagesSetting = strings.ToLower(s.Value)
		}
	}
	if ch.Restarted() {
		if err := lt.checkHugePages(); err != nil {
			return true, err
		}
	}
	return ch.Restarted(), nil
}

// Check validates settings on the server without changing anything.
func (lt *labTarget) Check(ctx context.Context, settings []Setting) error {
	list := make([]target.Setting, len(settings))
	for i, s := range settings {
		list[i] = target.Setting{Name: s.Name, Value: s.Value}
	}
	return lt.t.Settings().Check(ctx, list)
}

// Close restores the settings and stops a server the target started,
// then takes down the storage layout it was made on.
func (lt *labTarget) Close(ctx context.Context) error {
	var err error
	if lt.t != nil {
		err = lt.t.Close(ctx)
	}
	// The queue settings of its devices, before a layout is taken down.
	err = errors.Join(err, lt.restoreQueue())
	if err != nil && lt.group != nil {
		// The envelope goes (a process still in it is moved out).
		err = errors.Join(err, lt.group.Close())
		lt.group = nil
	}
	if err != nil && lt.layout != nil {
		// The server may still run on the layout: leave it mounted.
		return errs.Wrap(errs.KindOf(err), err, "stop the server, then unmount its layout (the next experiment on it cleans up what is left)", "storage layout %s left in place", lt.layout.Layout.Name)
	}
	return errors.Join(err, lt.teardown(ctx))
}

// loadMarker identifies loaded data: the workload and its load options.
func (lt *labTarget) loadMarker(cfg *Config) string {
	b, _ := json.Marshal(cfg.Load) // map keys are sorted
	return marker + " data: " + lt.lab.Plan.Workload + " " + string(b)
}

// runTarget is the target a run gets: the benchmark database, or for a
// workload that uses none the server's own.
func (lt *labTarget) runTarget() target.Target {
	if w := lt.lab.Plan.WorkloadSpec(); w != nil && w.NoDatabase {
		return lt.t
	}
	return lt.t.WithDatabase(lt.lab.Plan.Database)
}

// Load loads cfg's data into the template database (reset: template) or
// the benchmark database (reset: none), unless a complete load of the same
// data is there (its marker says so: it is set only at the end).
func (lt *labTarget) Load(ctx context.Context, cfg *Config) (bool, error) {
	p := lt.lab.Plan
	dbs := lt.t.Databases()
	if dbs == nil {
		return false, errs.Usage("use a target whose databases tunebench can create", "the target %s cannot create databases", lt.t.Describe())
	}
	db := p.Database
	if p.Reset == ResetTemplate {
		db += "_template"
	}
	m := lt.loadMarker(cfg)
	if exists, c, err := dbs.State(ctx, db); err != nil {
		return false, err
	} else if exists && c == m {
		return false, nil
	}
	if p.Reset == ResetTemplate {
		// The old copy belongs to other data.
		if err := dbs.DropOwn(ctx, p.Database, marker); err != nil {
			return false, err
		}
	}
	if err := dbs.DropOwn(ctx, db, marker); err != nil {
		return false, err
	}
	if err := dbs.Create(ctx, db, marker+" (loading)"); err != nil {
		return false, err
	}
	if ld, ok := lt.w.(workload.Loader); ok {
		o := lt.w.Options().Phase(option.PhaseLoad).Complete(option.Values(cfg.Load))
		env := &workload.LoadEnv{Target: lt.t.WithDatabase(db), Options: o, Fresh: true, Version: lt.lab.Version,
			Progress: lt.lab.LoadProgress, Note: lt.lab.LoadNote}
		if env.Progress == nil {
			env.Progress = func(workload.LoadProgress) {}
		}
		if env.Note == nil {
			env.Note = func(string, ...any) {}
		}
		if _, err := ld.Load(ctx, env); err != nil {
			if ctx.Err() != nil {
				return false, errs.Wrap(errs.KindInterrupted, err, "", "load interrupted")
			}
			return false, err
		}
	}
	if p.Reset == ResetTemplate {
		// Nobody connects to the template: CREATE DATABASE ... TEMPLATE
		// needs it idle.
		if err := dbs.Seal(ctx, db); err != nil {
			return false, err
		}
	}
	return true, dbs.Mark(ctx, db, m)
}

// Reset recreates the benchmark database from the template.
func (lt *labTarget) Reset(ctx context.Context) error {
	p := lt.lab.Plan
	dbs := lt.t.Databases()
	if err := dbs.DropOwn(ctx, p.Database, marker); err != nil {
		return err
	}
	if err := dbs.Copy(ctx, p.Database, p.Database+"_template"); err != nil {
		return err
	}
	return dbs.Mark(ctx, p.Database, marker+" copy")
}

// Run does one run through the run lifecycle and stores it with its plan
// link.
func (lt *labTarget) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	r, ok := lt.w.(workload.Runner)
	if !ok {
		return RunResult{}, errs.New(errs.KindUsage, "", "workload %s cannot run", lt.w.Meta().Name)
	}
	o := lt.w.Options().Phase(option.PhaseRun).Complete(option.Values(req.Options))
	if s, ok := lt.w.Options().Phase(option.PhaseRun).ByRole(option.RoleSeed); ok {
		o[s.Name] = itoa(req.Seed)
	}
	link := req.Link
	var enclose func() (func(), error)
	if g := lt.group; g != nil && len(lt.w.Meta().Dialects) == 0 {
		// A workload that runs in tunebench itself (fsblog; storage's fio
		// is its child): tunebench joins the envelope for its measured work.
		enclose = func() (func(), error) {
			if err := g.Add(os.Getpid()); err != nil {
				return nil, err
			}
			return func() {
				if err := g.Leave(os.Getpid()); err != nil && lt.lab.Log != nil {
					fmt.Fprintf(lt.lab.Log, "warning: %v\n", err)
				}
			}, nil
		}
	}
	if n := lt.lab.Spec.Shards; n > 1 {
		return lt.runShards(ctx, req, r, o, link, n)
	}
	var lv *live.Run
	if lt.lab.Live != nil {
		lv = lt.lab.Live(lt.w, req.Index, req.Plan.DescribeRun(req.Index))
	}
	hm, named := lt.runFacts(req.Config)
	sum, err := lifecycle.Run(ctx, &lifecycle.Request{
		Workload: r, Target: lt.runTarget(), Options: o, Progress: lt.lab.Progress,
		Experiment: req.Experiment, Link: &link, Store: lt.lab.Store, Version: lt.lab.Version,
		Getenv: lt.lab.Getenv, LookupEnv: lt.lab.LookupEnv, Observe: lt.lab.Observe, Layout: layoutRecord(lt.layout),
		Envelope: envelopeRecord(lt.envelope), Kernel: lt.lab.kernelRecord(), EnvelopeUsage: lt.usageSince(), Enclose: enclose,
		Stdout: lt.lab.Stdout, Stderr: lt.lab.Stderr, HostMetrics: hm, NamedTarget: named, Live: lv,
	})
	var res RunResult
	if sum != nil {
		res.RunID, res.Status = sum.RunID, sum.Status
		res.Metric, _ = sum.Metric(r.Headline().Metric)
		if v, ok := lt.w.(workload.Viewer); ok {
			res.Brief = v.Brief(sum)
		}
	}
	return res, err
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// managedSupported asks the driver of managed servers whether it can run
// one on this machine.
func managedSupported(drivers []target.Driver, engine string) error {
	s := target.Spec{Managed: &target.Managed{Engine: engine}}
	for _, d := range drivers {
		if d.Accepts(s) {
			if mc, ok := d.(target.ManagedChecker); ok {
				return mc.ManagedSupported()
			}
			return nil
		}
	}
	return nil
}
