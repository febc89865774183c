package experiment

import (
	"slices"
	"strings"
	"time"
)

// Costs are the times the estimate assumes for the work around the runs.
type Costs struct {
	ServerStart time.Duration // start a managed server (initdb excluded)
	ServerStop  time.Duration // stop it (restoring settings)
	Connect     time.Duration // attach to a server given by DSN
	Restart     time.Duration // restart for a setting that needs one
	Reload      time.Duration // apply settings with a reload
	ResetFixed  time.Duration // drop + create database (two checkpoints)
	CopyBytesPS float64       // template copy speed, bytes per second
	RunOverhead time.Duration // per run: connect, environment, check, save
}

// DefaultCosts are rough figures for a small machine.
func DefaultCosts() Costs {
	return Costs{
		ServerStart: 4 * time.Second, ServerStop: 2 * time.Second, Connect: time.Second,
		Restart: 3 * time.Second, Reload: time.Second, ResetFixed: time.Second,
		CopyBytesPS: 200e6, RunOverhead: 2 * time.Second,
	}
}

// StepKind is what a step of the schedule does.
type StepKind int

const (
	StepOpen     StepKind = iota // start (or attach to) the server of a data directory
	StepLoad                     // make the data for a load configuration available
	StepApply                    // apply the settings that change for a block
	StepReset                    // recreate the benchmark database from its template
	StepCooldown                 // pause before a run
	StepRun                      // one run
	StepClose                    // restore settings, stop the server tunebench started
	StepKernel                   // set the kernel settings that change for a block
	StepHook                     // run a hook's command
	StepRestore                  // put back the settings of the named target before (its server stays)
)

func (k StepKind) String() string {
	return [...]string{"open", "load", "apply", "reset", "cooldown", "run", "close", "kernel", "hook", "restore"}[k]
}

// Step is one action of the schedule.
type Step struct {
	Kind     StepKind
	DataDir  string    // open, close
	Config   int       // load, apply, run: the configuration
	Run      int       // run: the plan run index
	Settings []Setting // apply: the settings that change
	Kernel   []Setting // kernel: the kernel settings that change
	Hook     *Hook     // hook: the command
	Block    int       // hook before_config: the block it opens
	Target   string    // restore: the named target whose settings are put back
	// PerRun is set on the steps that belong to run Run: its reset,
	// cool-down and hooks (a run skipped by a failed hook skips them).
	PerRun   bool
	Restart  bool          // apply: a restart is expected (built-in list of settings)
	Duration time.Duration // cooldown: the pause
	Estimate time.Duration
	Unknown  bool // run: its length is not known in advance (a count of transactions)
}

// Schedule lays out the steps that execute the runs for which todo returns
// true (nil: all), in plan order: a server per data directory, a load when
// the loaded data changes, settings when the block changes (only those whose
// value changes), a reset before every run (reset_every: run) or before the
// first run of each block (reset_every: configuration), a cool-down before
// every run but the first, and a close at the end of each data directory.
func (p *Plan) Schedule(todo func(i int) bool) []Step {
	var steps []Step
	c := p.costs
	if c == (Costs{}) {
		c = DefaultCosts()
	}
	var (
		open        bool
		curDir      string
		curLoad     string
		curBlock    = -1
		curTarget   string
		applied     map[string]string
		first       = true
		blockHasRun bool
		kernel      map[string]string
		anyRun      bool
	)
	hooks := func(point string, st Step) {
		for i := range p.Hooks {
			if h := &p.Hooks[i]; h.Point == point {
				st.Kind, st.Hook = StepHook, h
				steps = append(steps, st)
			}
		}
	}
	closeStep := func() {
		est := c.ServerStop
		if p.kindOf(curDir) == "dsn" {
			est = c.Reload
		}
		steps = append(steps, Step{Kind: StepClose, DataDir: curDir, Estimate: est})
	}
	for i, r := range p.Runs {
		if todo != nil && !todo(i) {
			continue
		}
		cfg := &p.Configs[r.Config]
		if !anyRun {
			anyRun = true
			hooks(HookBeforeExperiment, Step{})
		}
		if !open || cfg.DataDir != curDir {
			if open {
				closeStep()
			}
			est := c.ServerStart
			if p.kindOf(cfg.DataDir) == "dsn" {
				est = c.Connect
			}
			if len(p.BaseSettings) > 0 && p.kindOf(cfg.DataDir) == "dsn" {
				est += c.Reload
			}
			steps = append(steps, Step{Kind: StepOpen, DataDir: cfg.DataDir, Estimate: est})
			open, curDir, curLoad, curBlock, applied, kernel = true, cfg.DataDir, "", -1, map[string]string{}, map[string]string{}
			curTarget = cfg.Target
		}
		if r.Block != curBlock {
			var diff []Setting
			sched := false // a new scheduler resets the queue's nr_requests: set the queue again
			for _, s := range cfg.Kernel {
				sched = sched || (s.Name == "queue.scheduler" && kernel[s.Name] != s.Value)
			}
			for _, s := range cfg.Kernel {
				if v, ok := kernel[s.Name]; ok && v == s.Value && !(sched && strings.HasPrefix(s.Name, "queue.")) {
					continue
				}
				diff = append(diff, s)
				kernel[s.Name] = s.Value
			}
			if len(diff) > 0 {
				steps = append(steps, Step{Kind: StepKernel, Config: r.Config, Kernel: diff, Estimate: 100 * time.Millisecond})
			}
		}
		if k := p.loadKey(cfg); k != curLoad && !p.noDatabase() {
			var est time.Duration
			if p.workload != nil && p.workload.LoadTime != nil {
				est = p.workload.LoadTime(cfg.Load)
			}
			steps = append(steps, Step{Kind: StepLoad, Config: r.Config, Estimate: est + time.Second})
			curLoad = k
		}
		if r.Block != curBlock && cfg.Target != curTarget {
			// Another named target on the same server: the settings the
			// one before applied and this one does not set go back first.
			restart, stale := false, false
			for name := range applied {
				if !slices.ContainsFunc(cfg.Settings, func(s Setting) bool { return s.Name == name }) {
					stale = true
				}
				restart = restart || p.spec.needsRestartOn(curTarget, name)
			}
			if stale {
				est := c.Reload
				if restart {
					est = c.Restart
				}
				steps = append(steps, Step{Kind: StepRestore, Config: r.Config, Target: curTarget, Restart: restart, Estimate: est})
				applied = map[string]string{}
			}
			curTarget = cfg.Target
		}
		if r.Block != curBlock {
			curBlock, blockHasRun = r.Block, false
			var diff []Setting
			restart := false
			for _, s := range cfg.Settings {
				if v, ok := applied[s.Name]; ok && v == s.Value {
					continue
				}
				diff = append(diff, s)
				applied[s.Name] = s.Value
				restart = restart || p.spec.needsRestartOn(cfg.Target, s.Name)
			}
			if len(diff) > 0 {
				est := c.Reload
				if restart {
					est = c.Restart
				}
				steps = append(steps, Step{Kind: StepApply, Config: r.Config, Settings: diff, Restart: restart, Estimate: est})
			}
			hooks(HookBeforeConfig, Step{Config: r.Config, Block: r.Block})
		}
		if p.Reset == ResetTemplate && (p.ResetEvery != ResetEveryConfiguration || !blockHasRun) {
			steps = append(steps, Step{Kind: StepReset, Config: r.Config, Run: i, PerRun: true, Estimate: p.resetTime(cfg, c)})
		}
		blockHasRun = true
		if !first && p.CooldownS > 0 {
			d := durationS(p.CooldownS)
			steps = append(steps, Step{Kind: StepCooldown, Run: i, PerRun: true, Duration: d, Estimate: d})
		}
		first = false
		hooks(HookBeforeRun, Step{Config: r.Config, Run: i, PerRun: true})
		est, known := p.runTime(i, c)
		steps = append(steps, Step{Kind: StepRun, Config: r.Config, Run: i, PerRun: true, Estimate: est, Unknown: !known})
		hooks(HookAfterRun, Step{Config: r.Config, Run: i, PerRun: true})
	}
	if open {
		closeStep()
	}
	if anyRun {
		hooks(HookAfterExperiment, Step{})
	}
	return steps
}

func (p *Plan) resetTime(cfg *Config, c Costs) time.Duration {
	d := c.ResetFixed
	if p.workload != nil && p.workload.DataBytes != nil && c.CopyBytesPS > 0 {
		d += time.Duration(float64(p.workload.DataBytes(cfg.Load)) / c.CopyBytesPS * float64(time.Second))
	}
	return d
}

func (p *Plan) runTime(i int, c Costs) (time.Duration, bool) {
	if p.workload == nil || p.workload.RunTime == nil {
		return c.RunOverhead, false
	}
	d, known := p.workload.RunTime(p.RunOptions(i))
	return d + c.RunOverhead, known
}

// Estimate is the expected time of an experiment, by kind of work.
type Estimate struct {
	TotalS      float64 `json:"total_s"`
	Runs        int     `json:"runs"`
	RunsS       float64 `json:"runs_s"`
	WarmupRuns  int     `json:"warmup_runs"`
	WarmupRunsS float64 `json:"warmup_runs_s"`
	Cooldowns   int     `json:"cooldowns"`
	CooldownS   float64 `json:"cooldown_s"`
	Resets      int     `json:"resets"`
	ResetsS     float64 `json:"resets_s"`
	Loads       int     `json:"loads"`
	LoadsS      float64 `json:"loads_s"`
	Restarts    int     `json:"restarts"`
	Reloads     int     `json:"reloads"`
	SettingsS   float64 `json:"settings_s"`
	Servers     int     `json:"servers"`
	ServersS    float64 `json:"servers_s"`
	// LowerBound is set when some runs have no fixed length (a count of
	// transactions): the estimate counts only their overhead.
	LowerBound bool `json:"lower_bound,omitempty"`
}

// Total is the estimate as a duration.
func (e Estimate) Total() time.Duration { return durationS(e.TotalS) }

// EstimateFor sums the schedule of the runs todo selects (nil: all).
func (p *Plan) EstimateFor(todo func(i int) bool) Estimate {
	return p.estimateSteps(p.Schedule(todo))
}

func (p *Plan) estimateSteps(steps []Step) Estimate {
	var e Estimate
	for _, s := range steps {
		sec := s.Estimate.Seconds()
		e.TotalS += sec
		switch s.Kind {
		case StepRun:
			if p.Runs[s.Run].Warmup {
				e.WarmupRuns++
				e.WarmupRunsS += sec
			} else {
				e.Runs++
				e.RunsS += sec
			}
			e.LowerBound = e.LowerBound || s.Unknown
		case StepCooldown:
			e.Cooldowns++
			e.CooldownS += sec
		case StepReset:
			e.Resets++
			e.ResetsS += sec
		case StepLoad:
			e.Loads++
			e.LoadsS += sec
		case StepApply, StepRestore:
			if s.Restart {
				e.Restarts++
			} else {
				e.Reloads++
			}
			e.SettingsS += sec
		case StepOpen:
			e.Servers++
			e.ServersS += sec
		case StepClose:
			e.ServersS += sec
		}
	}
	return e
}

// settingsText renders settings as "a=1 b=2".
func settingsText(ss []Setting) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, " ")
}

// SettingsText is settingsText for callers.
func SettingsText(ss []Setting) string { return settingsText(ss) }

// describeOpen says how a server is opened.
func (p *Plan) describeOpen(s Step) string {
	if name := p.ServerOf(s.DataDir); name != "" {
		t := p.Target(name)
		on := "the server of target " + name
		if names := p.targetsOn(name); len(names) > 1 {
			on = "the server of targets " + strings.Join(names, ", ")
		}
		switch {
		case t.Kind == "dsn":
			return "connect to " + on
		case t.Dir == "":
			return "start " + on + " (managed " + t.Engine + ", in a temporary directory)"
		}
		return "start " + on + " (managed " + t.Engine + ", in " + t.Dir + ")"
	}
	switch {
	case p.TargetKind == "dsn":
		return "connect to the server"
	case s.DataDir == "":
		return "start a managed server in a temporary directory"
	}
	if storage, envelope, ok := ParseGroup(s.DataDir); ok {
		var what []string
		if storage != "" {
			what = append(what, "make storage layout "+storage)
		}
		start := "start a managed server"
		if storage != "" {
			start += " on it"
		}
		if envelope != "" {
			start += " in envelope " + envelope
		}
		return strings.Join(append(what, start), " and ")
	}
	return "start the managed server in " + s.DataDir
}

// DescribeStep says what a step does, for progress lines and dry runs.
func (p *Plan) DescribeStep(s Step) string {
	switch s.Kind {
	case StepOpen:
		what := p.describeOpen(s)
		if len(p.BaseKernel) > 0 {
			what += " (kernel " + settingsText(p.BaseKernel) + ")"
		}
		return what
	case StepLoad:
		c := &p.Configs[s.Config]
		var parts []string // the first load option, and the others when not at their default
		for i, name := range p.loadNames {
			v, ok := c.Load[name]
			if !ok {
				continue
			}
			if o, found := p.optionSpec(name); i == 0 || !found || o.Default != v {
				parts = append(parts, name+"="+v)
			}
		}
		what := strings.Join(parts, " ")
		if what == "" {
			what = p.Workload
		} else {
			what = p.Workload + " " + what
		}
		if p.Reset == ResetTemplate {
			return "load " + what + " into the template database " + p.Database + "_template"
		}
		return "load " + what + " into " + p.Database
	case StepApply:
		how := "reload"
		if s.Restart {
			how = "restart"
			if cmd := p.restartCommandOf(p.Configs[s.Config].DataDir); p.kindOf(p.Configs[s.Config].DataDir) == "dsn" && cmd != "" {
				how += ": " + cmd
			}
		}
		return "apply " + settingsText(s.Settings) + " (" + how + ")"
	case StepReset:
		return "recreate " + p.Database + " from its template"
	case StepCooldown:
		return "cool down " + s.Duration.String()
	case StepRun:
		return p.describeRun(s.Run)
	case StepRestore:
		how := "reload"
		if s.Restart {
			how = "restart"
		}
		return "restore the settings of target " + s.Target + " (" + how + ")"
	case StepClose:
		if p.kindOf(s.DataDir) == "dsn" {
			if cmd := p.restartCommandOf(s.DataDir); cmd != "" {
				return "restore the settings (a setting that needs it: restart: " + cmd + ")"
			}
			return "restore the settings"
		}
		return "restore the settings and stop the server"
	case StepKernel:
		return "set kernel " + settingsText(s.Kernel)
	case StepHook:
		return "hook " + s.Hook.Point + ": " + s.Hook.Command
	}
	return s.Kind.String()
}

func (p *Plan) optionSpec(name string) (*Option, bool) {
	if p.workload == nil {
		return nil, false
	}
	return p.workload.Option(name)
}

// noDatabase reports whether the workload uses no database (no load, no
// reset, no benchmark database).
func (p *Plan) noDatabase() bool { return p.workload != nil && p.workload.NoDatabase }
