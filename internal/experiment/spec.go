package experiment

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/envelope"
	"github.com/tunebench/tunebench/internal/storage/layout"
	"github.com/tunebench/tunebench/internal/target"
)

// Spec is a parsed, validated experiment file.
type Spec struct {
	File        string // the file name, for messages
	Source      string // the file as given (stored with the experiment)
	Name        string
	Description string
	// Target is the file's target (target:). With targets: it is the
	// first target matrix.target compares, without its settings, for what
	// knows one target only (whether it is managed, its directory).
	Target TargetSpec
	// Targets are the named targets (targets:), in file order, which
	// matrix.target compares; nil with target:.
	Targets []*NamedTarget
	// targetsImplicit: the file has targets: and no matrix.target, so
	// every target runs, in file order.
	targetsImplicit bool
	Workload        *Workload
	// Options are workload.options as written (validated; defaults are
	// added when the plan is built).
	Options Options
	// Matrix holds the dimensions in file order; the x axis is one of them
	// when it has several values.
	Matrix []Dimension
	// Layouts are the storage layouts the file declares (`layouts:`),
	// which matrix.storage names.
	Layouts map[string]*layout.Layout
	// Envelopes are the hardware envelopes the file declares
	// (`envelopes:`), which matrix.envelope names.
	Envelopes   map[string]*envelope.Envelope
	XAxis       string
	Repetitions int
	// Shards splits every run over this many shards (--shard i/N) that
	// meet at the database and are merged into the run (0 or 1: whole).
	Shards     int
	WarmupRuns int
	Order      string // OrderRandom, OrderSequential or OrderRounds
	Seed       int64
	SeedSet    bool   // seed was given in the file
	Reset      string // ResetTemplate or ResetNone
	ResetEvery string // ResetEveryRun or ResetEveryConfiguration ("" with ResetNone)
	Cooldown   time.Duration
	// Baseline names the configuration comparisons are made against, as
	// matrix dimension = value pairs (may be partial); empty = the first
	// configuration.
	Baseline []KV
	// AllowUnknownSettings turns off the check of setting names against
	// the built-in list (for settings newer than this tunebench).
	AllowUnknownSettings bool
	// Hooks are the commands run at fixed points (hooks:), in file order.
	Hooks []Hook

	baselineLine, workloadLine, xLine, kernelLine int
	// settingKeys are the server settings the file names and where, to
	// check them against the workload once it is known.
	settingKeys []settingKey
	// catalog is the settings catalogue of the target's driver (nil: none
	// known; names are not checked and none needs a restart).
	catalog target.SettingsCatalog
}

// needsRestart reports whether changing setting name needs a server
// restart, as the target's catalogue says.
func (s *Spec) needsRestart(name string) bool {
	if s == nil || s.catalog == nil {
		return false
	}
	_, restart := s.catalog.Setting(name)
	return restart
}

// Orders.
const (
	OrderRandom     = "random"
	OrderSequential = "sequential"
	OrderRounds     = "rounds"
)

// Reset methods and scopes.
const (
	ResetTemplate           = "template"
	ResetNone               = "none"
	ResetEveryRun           = "run"
	ResetEveryConfiguration = "configuration"
)

// DefaultDatabase is the benchmark database when target.database is not given.
const DefaultDatabase = "tunebench_exp"

// TargetSpec is where the experiment runs.
type TargetSpec struct {
	// Managed is set for a managed PostgreSQL tunebench starts itself
	// (also when the file has no target at all).
	Managed *Managed
	// DSN is a connection string to an existing server, on this machine
	// or another (no password).
	DSN string
	// RestartCommand restarts the DSN's server (settings that need a
	// restart); "" refuses such settings.
	RestartCommand string
	// RestartTimeout bounds the restart command and the server's return
	// (0: the default, server.RestartTimeout).
	RestartTimeout time.Duration
	// Database is the benchmark database (recreated from its template
	// between runs); the template is Database + "_template".
	Database string
	// Settings are the base settings for every run.
	Settings []Setting
	// Kernel are the base kernel settings of this machine for every run
	// (target.kernel): sysctl keys, transparent_hugepage, queue.*.
	Kernel []Setting
	// HostMetrics says how the server's host is measured
	// (target.host_metrics: a source, or a mapping of source, disk,
	// container_metrics and container).
	HostMetrics target.HostMetrics
}

// Managed describes the managed server.
type Managed struct {
	// Engine is the database: "postgres" (the default) or "mariadb", a
	// target driver's name.
	Engine string
	Dir    string // server dir; "" = a temporary one (or matrix.data_dir)
	Port   int    // 0 = a free one
	PGBin  string
	RunAs  string
}

// Setting is one server setting.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s Setting) String() string { return s.Name + "=" + s.Value }

// KV is a name and a value.
type KV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// StorageKey is the matrix key of storage layouts (matrix.storage). It is
// spelled like the storage workload's name, but it is a key of the file,
// not a workload: nothing here depends on which workload runs.
const StorageKey = "storage"

// DimKind says what a matrix dimension varies.
type DimKind int

const (
	DimSetting  DimKind = iota // a server setting (matrix.settings.NAME)
	DimOption                  // a workload option (matrix.NAME)
	DimDataDir                 // the managed server's directory (matrix.data_dir)
	DimStorage                 // a storage layout the managed server runs on (matrix.storage)
	DimEnvelope                // a hardware envelope the managed server runs in (matrix.envelope)
	DimKernel                  // a kernel setting of this machine (matrix.kernel.KEY)
	DimTarget                  // a named target (matrix.target)
)

// Dimension is one matrix key and its values.
type Dimension struct {
	Kind   DimKind
	Name   string
	Values []string // canonical text, in file order
	Line   int
	// ValueLines are the file lines of Values (for messages).
	ValueLines []int
}

// Key is how the dimension appears in labels and baselines.
func (d Dimension) Key() string { return d.Name }

var (
	nameRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	databaseRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,53}$`)
	settingRe  = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)
)

var topKeys = []string{"name", "description", "target", "targets", "workload", "matrix", "x_axis", "repetitions", "shards",
	"warmup_runs", "order", "seed", "reset", "reset_every", "cooldown", "baseline", "allow_unknown_settings", "layouts", "envelopes", "hooks"}

// ParseOption adds to what Parse knows.
type ParseOption func(*parseConfig)

type parseConfig struct {
	drivers  []target.Driver
	settings target.SettingsCatalog
}

// WithDrivers checks the file's setting names against the catalogue of the
// driver of its target (target.CatalogFor).
func WithDrivers(ds []target.Driver) ParseOption {
	return func(c *parseConfig) { c.drivers = ds }
}

// WithSettings checks the file's setting names against sc, whatever its
// target.
func WithSettings(sc target.SettingsCatalog) ParseOption {
	return func(c *parseConfig) { c.settings = sc }
}

// Parse reads an experiment file. Every problem found is reported in one
// *SpecError whose lines read "file:line: message". Setting names are
// checked against the settings catalogue of the target's driver
// (WithDrivers); without one only their spelling is.
func Parse(file string, src []byte, cat Catalog, opts ...ParseOption) (*Spec, error) {
	var cfg parseConfig
	for _, o := range opts {
		o(&cfg)
	}
	p := &problems{file: file}
	s := &Spec{File: file, Source: string(src), Repetitions: 1, Order: OrderRandom, Reset: ResetTemplate}
	root := parseYAML(file, src, p)
	if root == nil {
		return nil, p.err()
	}
	fields, ok := mapping(root, "the file", p)
	if !ok {
		return nil, p.err()
	}
	top := map[string]field{}
	for _, f := range fields {
		if !contains(topKeys, f.key) {
			unknownKey(p, f, "the file", topKeys)
			continue
		}
		top[f.key] = f
	}

	// Simple top-level values.
	if f, ok := top["allow_unknown_settings"]; ok {
		s.AllowUnknownSettings = parseBoolField(f, p)
	}
	s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if f, ok := top["name"]; ok {
		if v, ok := scalar(f.value, "name", p); ok {
			s.Name = v
			if !nameRe.MatchString(v) {
				p.add(f.value, "name %q: use letters, digits, '.', '_' and '-' (at most 63 characters)", v)
			}
		}
	} else if !nameRe.MatchString(s.Name) {
		p.addLine(0, "no name, and the file name %q is not usable as one: add name: with letters, digits, '.', '_' and '-'", s.Name)
	}
	if f, ok := top["description"]; ok {
		if v, ok := scalar(f.value, "description", p); ok {
			s.Description = v
		}
	}
	if f, ok := top["repetitions"]; ok {
		s.Repetitions = intField(f, p, 1, "repetitions must be 1 or more (each configuration and x value runs this many times)")
	}
	if f, ok := top["shards"]; ok {
		s.Shards = intField(f, p, 1, "shards must be 1 or more (each run split over this many driver shards, merged into one run)")
	}
	if f, ok := top["warmup_runs"]; ok {
		s.WarmupRuns = intField(f, p, 0, "warmup_runs must be 0 or more")
	}
	if f, ok := top["order"]; ok {
		s.Order = enumField(f, p, []string{OrderRandom, OrderSequential, OrderRounds})
	}
	if f, ok := top["seed"]; ok {
		if v, ok := scalar(f.value, "seed", p); ok {
			n, err := parseInt(v)
			if err != nil {
				p.add(f.value, "seed must be an integer, not %q", v)
			} else {
				s.Seed, s.SeedSet = n, true
			}
		}
	}
	if f, ok := top["reset"]; ok {
		v := enumField(f, p, []string{ResetTemplate, ResetNone, "snapshot"})
		if v == "snapshot" {
			p.add(f.value, "reset: snapshot (data-directory snapshots) is not available yet; use template or none")
		} else if v != "" {
			s.Reset = v
		}
	}
	if s.Reset == ResetTemplate {
		s.ResetEvery = ResetEveryRun
	}
	if f, ok := top["reset_every"]; ok {
		v := enumField(f, p, []string{ResetEveryRun, ResetEveryConfiguration})
		if s.Reset == ResetNone {
			p.add(f.keyN, "reset_every has no meaning with reset: none; remove it")
		} else if v != "" {
			s.ResetEvery = v
		}
	}
	if f, ok := top["cooldown"]; ok {
		if v, ok := scalar(f.value, "cooldown", p); ok {
			opt := Option{Name: "cooldown", Kind: KindDuration}
			if _, err := opt.CheckValue(v); err != nil {
				p.add(f.value, "%v", err)
			} else {
				s.Cooldown, _ = parseDuration(v)
			}
		}
	}

	// Storage layouts, before the matrix names them.
	if f, ok := top["layouts"]; ok {
		var ps []layout.Problem
		s.Layouts, _, ps = layout.ParseNode(resolve(f.value))
		for _, pr := range ps {
			p.addLine(pr.Line, "%s", pr.Msg)
		}
	}

	// Hardware envelopes, before the matrix names them.
	if f, ok := top["envelopes"]; ok {
		s.Envelopes = map[string]*envelope.Envelope{}
		if fields, ok := mapping(f.value, "envelopes", p); ok {
			for _, g := range fields {
				var spec envelope.Spec
				if err := decodeStrict(g.value, &spec); err != nil {
					p.add(g.keyN, "envelope %s: %v (keys: cgroup, memory, cpus, cores, cpuset, io)", g.key, err)
					continue
				}
				spec.Name = g.key
				e, err := envelope.Parse(spec)
				if err != nil {
					ps := envelope.Problems(err)
					for _, pr := range ps {
						p.add(g.keyN, "envelope %s: %s", g.key, pr)
					}
					if len(ps) == 0 {
						p.add(g.keyN, "%v", err)
					}
					continue
				}
				s.Envelopes[g.key] = e
			}
		}
	}

	// The target, or the named targets.
	tf, hasTarget := top["target"]
	tsf, hasTargets := top["targets"]
	switch {
	case hasTarget && hasTargets:
		p.add(tsf.keyN, "target and targets both given: target is the one target of a file, targets names several that matrix.target compares; keep one (move target's section under a name in targets)")
		s.parseTargets(tsf, &cfg, p)
	case hasTarget:
		s.parseTarget(tf, p)
	case hasTargets:
		s.parseTargets(tsf, &cfg, p)
	}
	if s.Target.Managed == nil && s.Target.DSN == "" {
		s.Target.Managed = &Managed{}
	}
	if s.Target.Database == "" {
		s.Target.Database = DefaultDatabase
	}

	// The workload comes before the matrix: its options are matrix keys.
	if f, ok := top["workload"]; ok {
		s.workloadLine = f.keyN.Line
		s.parseWorkload(f, cat, p)
	} else {
		p.addLine(0, "no workload: add workload: {name: %s, options: {...}}", strings.Join(cat.Names(), "|"))
	}
	if f, ok := top["x_axis"]; ok {
		s.xLine = f.value.Line
		if v, ok := scalar(f.value, "x_axis", p); ok {
			s.XAxis = v
		}
	}
	if f, ok := top["matrix"]; ok {
		s.parseMatrix(f, p)
	}
	if hasTargets {
		s.checkTargets(tsf.keyN.Line, p)
	}
	s.checkKernelTarget(p)
	if f, ok := top["hooks"]; ok {
		s.parseHooks(f, p)
	}
	if s.Workload != nil {
		s.checkXAxis(p)
		s.checkGoverned(p)
	}
	if f, ok := top["baseline"]; ok {
		s.baselineLine = f.keyN.Line
		s.parseBaseline(f, p)
	}
	s.catalog = cfg.settings
	if s.catalog == nil {
		ts := target.Spec{DSN: s.Target.DSN}
		if s.Target.Managed != nil {
			ts.Managed = &target.Managed{Engine: s.Target.Managed.Engine}
		}
		s.catalog = target.CatalogFor(cfg.drivers, ts)
	}
	s.checkSettingNames(p)
	if !p.empty() {
		return nil, p.err()
	}
	return s, nil
}

func parseBoolField(f field, p *problems) bool {
	v, ok := scalar(f.value, f.key, p)
	if !ok {
		return false
	}
	switch strings.ToLower(v) {
	case "true":
		return true
	case "false":
		return false
	}
	p.add(f.value, "%s must be true or false, not %q", f.key, v)
	return false
}

func intField(f field, p *problems, minimum int64, msg string) int {
	v, ok := scalar(f.value, f.key, p)
	if !ok {
		return int(minimum)
	}
	n, err := parseInt(v)
	if err != nil {
		p.add(f.value, "%s must be an integer, not %q", f.key, v)
		return int(minimum)
	}
	if n < minimum || n > 1_000_000 {
		p.add(f.value, "%s, not %s", msg, v)
		return int(minimum)
	}
	return int(n)
}

func enumField(f field, p *problems, values []string) string {
	v, ok := scalar(f.value, f.key, p)
	if !ok {
		return ""
	}
	if !contains(values, v) {
		msg := fmt.Sprintf("%s must be one of %s, not %q", f.key, strings.Join(values, ", "), v)
		if s := suggest(v, values); s != "" {
			msg += " (did you mean " + s + "?)"
		}
		p.add(f.value, "%s", msg)
		return ""
	}
	return v
}

func (s *Spec) parseWorkload(f field, cat Catalog, p *problems) {
	fields, ok := mapping(f.value, "workload", p)
	if !ok {
		return
	}
	var optsF *field
	named := false
	for i := range fields {
		g := fields[i]
		switch g.key {
		case "name":
			named = true
			v, ok := scalar(g.value, "workload.name", p)
			if !ok {
				continue
			}
			w, found := cat[v]
			if !found {
				msg := fmt.Sprintf("unknown workload %q", v)
				if sg := suggest(v, cat.Names()); sg != "" {
					msg += " (did you mean " + sg + "?)"
				}
				msg += "; experiments run " + strings.Join(cat.Names(), ", ")
				p.add(g.value, "%s", msg)
				continue
			}
			s.Workload = w
		case "options":
			optsF = &fields[i]
		default:
			unknownKey(p, g, "workload", []string{"name", "options"})
		}
	}
	if !named {
		p.add(f.keyN, "workload has no name: add name: %s", strings.Join(cat.Names(), "|"))
	}
	s.Options = Options{}
	if optsF == nil || s.Workload == nil {
		return
	}
	ofields, ok := mapping(optsF.value, "workload.options", p)
	if !ok {
		return
	}
	for _, g := range ofields {
		opt, found := s.Workload.Option(g.key)
		if !found {
			unknownKey(p, g, "workload.options of "+s.Workload.Name, s.Workload.OptionNames())
			continue
		}
		v, ok := scalar(g.value, "workload.options."+g.key, p)
		if !ok {
			continue
		}
		canon, err := opt.CheckValue(v)
		if err != nil {
			p.add(g.value, "%v", err)
			continue
		}
		s.Options[opt.Name] = s.rebase(opt, canon)
	}
}

// rebase makes the relative file paths of an option's value relative to
// the experiment file's directory (Option.Rebase).
func (s *Spec) rebase(opt *Option, v string) string {
	if opt.Rebase == nil {
		return v
	}
	return opt.Rebase(v, filepath.Dir(s.File))
}

// decodeStrict decodes a YAML node into v, refusing unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return nil
}
