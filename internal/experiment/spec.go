package experiment

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/envelope"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/storage/layout"
	"github.com/tunebench/tunebench/internal/target"
)

// Spec is a parsed, validated experiment file.
type Spec struct {
	File        string // the file name, for messages
	Source      string // the file as given (stored with the experiment)
	Name        string
	Description string
	Target      TargetSpec
	Workload    *Workload
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
	Dir   string // server dir; "" = a temporary one (or matrix.data_dir)
	Port  int    // 0 = a free one
	PGBin string
	RunAs string
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

var topKeys = []string{"name", "description", "target", "workload", "matrix", "x_axis", "repetitions", "shards",
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

	// The target.
	if f, ok := top["target"]; ok {
		s.parseTarget(f, p)
	} else {
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
			ts.Managed = &target.Managed{}
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

func (s *Spec) parseTarget(f field, p *problems) {
	fields, ok := mapping(f.value, "target", p)
	if !ok {
		return
	}
	keys := []string{"managed", "dsn", "restart_command", "database", "settings", "kernel", "host_metrics"}
	var managedF, dsnF, restartF *field
	for i := range fields {
		tf := fields[i]
		switch tf.key {
		case "managed":
			managedF = &fields[i]
			m := &Managed{}
			s.Target.Managed = m
			mf, ok := mapping(tf.value, "target.managed", p)
			if !ok {
				continue
			}
			for _, g := range mf {
				switch g.key {
				case "dir":
					if v, ok := scalar(g.value, "target.managed.dir", p); ok {
						m.Dir = v
					}
				case "port":
					if v, ok := scalar(g.value, "target.managed.port", p); ok {
						n, err := parseInt(v)
						if err != nil || n < 0 || n > 65535 || (n > 0 && n < 1024) {
							p.add(g.value, "target.managed.port must be 0 (pick a free one) or 1024-65535, not %q", v)
						} else {
							m.Port = int(n)
						}
					}
				case "pg_bin":
					if v, ok := scalar(g.value, "target.managed.pg_bin", p); ok {
						m.PGBin = v
					}
				case "run_as":
					if v, ok := scalar(g.value, "target.managed.run_as", p); ok {
						m.RunAs = v
					}
				case "settings":
					p.add(g.keyN, "settings belong to the target, not to target.managed: move them to target.settings")
				default:
					unknownKey(p, g, "target.managed", []string{"dir", "port", "pg_bin", "run_as"})
				}
			}
		case "dsn":
			dsnF = &fields[i]
			if v, ok := scalar(tf.value, "target.dsn", p); ok {
				s.Target.DSN = v
				if hasPassword(v) {
					p.add(tf.value, "target.dsn must not contain a password: use PGPASSWORD, ~/.pgpass or $TUNEBENCH_DSN")
				}
			}
		case "restart_command":
			restartF = &fields[i]
			if v, ok := scalar(tf.value, "target.restart_command", p); ok {
				if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\n\r") {
					p.add(tf.value, "target.restart_command is one shell command line that restarts the server, e.g. ssh db1 sudo systemctl restart postgresql")
				}
				s.Target.RestartCommand = v
			}
		case "database":
			if v, ok := scalar(tf.value, "target.database", p); ok {
				if !databaseRe.MatchString(v) {
					p.add(tf.value, "target.database %q: use lower-case letters, digits and '_' (at most 54 characters, not starting with a digit)", v)
				} else {
					s.Target.Database = v
				}
			}
		case "settings":
			s.Target.Settings = s.parseSettings(tf, "target.settings", p)
		case KernelKey:
			s.kernelLine = tf.keyN.Line
			s.Target.Kernel = s.parseKernel(tf, "target.kernel", p)
		case "host_metrics":
			s.parseHostMetrics(tf, p)
		default:
			unknownKey(p, tf, "target", keys)
		}
	}
	if restartF != nil && dsnF == nil {
		p.add(restartF.keyN, "target.restart_command is for a server given by target.dsn; tunebench restarts its managed server itself")
	}
	switch {
	case managedF != nil && dsnF != nil:
		p.add(dsnF.keyN, "target has both managed and dsn; keep one")
	case dsnF != nil:
		s.Target.Managed = nil
	case managedF == nil:
		s.Target.Managed = &Managed{}
	}
}

// parseHostMetrics reads target.host_metrics: a source (auto, local, sql,
// none, or node_exporter's URL), or a mapping of source, disk,
// container_metrics and container, as the run flags.
func (s *Spec) parseHostMetrics(f field, p *problems) {
	hm := &s.Target.HostMetrics
	if n := resolve(f.value); n != nil && n.Kind == yaml.ScalarNode {
		if v, ok := scalar(f.value, "target.host_metrics", p); ok {
			hm.Source = v
		}
	} else {
		fields, ok := mapping(f.value, "target.host_metrics", p)
		if !ok {
			return
		}
		for _, g := range fields {
			var dst *string
			switch g.key {
			case "source":
				dst = &hm.Source
			case "disk":
				dst = &hm.Disk
			case "container_metrics":
				dst = &hm.ContainerURL
			case "container":
				dst = &hm.Container
			default:
				unknownKey(p, g, "target.host_metrics", []string{"source", "disk", "container_metrics", "container"})
				continue
			}
			if v, ok := scalar(g.value, "target.host_metrics."+g.key, p); ok {
				*dst = v
			}
		}
	}
	if err := hm.Check(); err != nil {
		msg := strings.NewReplacer("--host-metrics", "target.host_metrics", "--container-metrics", "container_metrics", "--container", "container").Replace(err.Error())
		if h := errs.HintOf(err); h != "" {
			msg += " (" + h + ")"
		}
		p.add(f.value, "%s", msg)
	}
}

// hasPassword spots a password in a key=value conninfo or a URL.
func hasPassword(dsn string) bool {
	l := strings.ToLower(dsn)
	if strings.Contains(l, "password") {
		return true
	}
	if i := strings.Index(l, "://"); i >= 0 {
		rest := l[i+3:]
		if at := strings.Index(rest, "@"); at >= 0 && strings.Contains(rest[:at], ":") {
			return true
		}
	}
	return false
}

// parseSettings reads a mapping of setting name to one value.
func (s *Spec) parseSettings(f field, where string, p *problems) []Setting {
	fields, ok := mapping(f.value, where, p)
	if !ok {
		return nil
	}
	var out []Setting
	for _, g := range fields {
		name, ok := s.checkSettingName(g, where, p)
		if !ok {
			continue
		}
		v, ok := settingValue(g.value, where+"."+g.key, p)
		if !ok {
			continue
		}
		out = append(out, Setting{Name: name, Value: v})
	}
	return out
}

func settingValue(n *yaml.Node, where string, p *problems) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		p.add(n, "%s must be a single value, not %s", where, describeNode(n))
		return "", false
	}
	if n.Tag == "!!null" {
		p.add(n, "%s has no value", where)
		return "", false
	}
	if strings.ContainsAny(n.Value, "\x00\n\r") {
		p.add(n, "%s contains a newline", where)
		return "", false
	}
	return strings.TrimSpace(n.Value), true
}

// settingKey is a server setting named in the file.
type settingKey struct {
	name, where string
	node        *yaml.Node
}

// checkGoverned refuses the settings the workload sets itself in its
// sessions (option.Option.Governs): they would be overridden.
func (s *Spec) checkGoverned(p *problems) {
	for _, k := range s.settingKeys {
		if o, ok := option.Set(s.Workload.Options).Governing(k.name); ok {
			msg, hint := option.GovernedError(o, k.where+"."+k.name).Render(option.Key)
			p.add(k.node, "%s: %s", msg, hint)
		}
	}
}

func (s *Spec) checkSettingName(g field, where string, p *problems) (string, bool) {
	name := strings.ToLower(strings.TrimSpace(g.key))
	s.settingKeys = append(s.settingKeys, settingKey{name: name, where: where, node: g.keyN})
	if !settingRe.MatchString(name) {
		p.add(g.keyN, "%q in %s is not a setting name (letters, digits and '_'; one dot for extension settings)", g.key, where)
		return "", false
	}
	return name, true
}

// checkSettingNames checks the file's setting names against the target's
// catalogue, once the whole file (and so the target) is read: the settings
// tunebench manages are refused, and unknown names get a suggestion.
func (s *Spec) checkSettingNames(p *problems) {
	c := s.catalog
	if c == nil {
		return
	}
	for _, k := range s.settingKeys {
		if !settingRe.MatchString(k.name) {
			continue
		}
		if c.Managed(k.name) {
			p.add(k.node, "%s in %s is managed by tunebench and cannot be set", k.name, k.where)
			continue
		}
		if known, _ := c.Setting(k.name); known || s.AllowUnknownSettings {
			continue
		}
		msg := fmt.Sprintf("unknown key %q in %s", k.node.Value, k.where)
		if sg := suggest(k.name, c.SettingNames()); sg != "" {
			msg += " (did you mean " + sg + "?)"
		} else {
			msg += fmt.Sprintf(" (not a %s setting tunebench knows; allow_unknown_settings: true skips this check)", c.Product())
		}
		p.add(k.node, "%s", msg)
	}
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

func (s *Spec) parseMatrix(f field, p *problems) {
	fields, ok := mapping(f.value, "matrix", p)
	if !ok {
		return
	}
	var keys []string
	if s.Workload != nil {
		keys = append([]string{"settings", KernelKey, "data_dir", StorageKey, "envelope"}, s.Workload.OptionNames()...)
	}
	for _, g := range fields {
		switch {
		case g.key == "settings":
			sf, ok := mapping(g.value, "matrix.settings", p)
			if !ok {
				continue
			}
			for _, h := range sf {
				name, ok := s.checkSettingName(h, "matrix.settings", p)
				if !ok {
					continue
				}
				items, ok := list(h.value, "matrix.settings."+h.key, p)
				if !ok {
					continue
				}
				d := Dimension{Kind: DimSetting, Name: name, Line: h.keyN.Line}
				for _, it := range items {
					v, ok := settingValue(it, "matrix.settings."+h.key, p)
					if ok {
						if d.Values = appendUnique(d.Values, v, it, "matrix.settings."+h.key, p); len(d.Values) > len(d.ValueLines) {
							d.ValueLines = append(d.ValueLines, it.Line)
						}
					}
				}
				for _, base := range s.Target.Settings {
					if base.Name == name {
						p.add(h.keyN, "%s is in target.settings and in matrix.settings; keep it in one place", name)
					}
				}
				s.addDim(d, p)
			}
		case g.key == KernelKey:
			s.parseMatrixKernel(g, p)
		case g.key == StorageKey:
			s.parseListDim(g, DimStorage, p, func(it *yaml.Node, v string) (string, bool) {
				if _, known := s.Layouts[v]; !known {
					names := make([]string, 0, len(s.Layouts))
					for n := range s.Layouts {
						names = append(names, n)
					}
					sort.Strings(names)
					if len(names) == 0 {
						p.add(it, "storage layout %q: the file declares no layouts; add layouts: {%s: {loop: 2GiB, filesystem: ext4}} (docs/storage-lab.md)", v, v)
					} else {
						p.add(it, "storage layout %q is not among the file's layouts: %s", v, strings.Join(names, ", "))
					}
					return "", false
				}
				if l := s.Layouts[v]; (l.Keep || (l.WAL != nil && l.WAL.Keep)) && (s.Target.Managed == nil || s.Target.Managed.Dir == "") {
					p.add(it, "storage layout %q keeps its loop file, but without target.managed.dir the loop files go in a temporary directory removed at the end: set target.managed.dir", v)
				}
				return v, true
			}, "matrix.storage needs a managed target, a server on this machine: tunebench makes each layout and starts the server on it (a server given by target.dsn, perhaps on another machine, cannot be moved)")
		case g.key == "envelope":
			s.parseListDim(g, DimEnvelope, p, func(it *yaml.Node, v string) (string, bool) {
				if _, known := s.Envelopes[v]; !known {
					p.add(it, "envelope %q is not among the file's envelopes; declare it under envelopes: {%s: {memory: 2GiB, cpus: 2}} (docs/envelopes.md)", v, v)
					return "", false
				}
				return v, true
			}, "matrix.envelope needs a managed target, a server on this machine: tunebench starts the server inside each envelope")
		case g.key == "data_dir":
			if s.Target.Managed != nil && s.Target.Managed.Dir != "" {
				p.add(g.keyN, "matrix.data_dir and target.managed.dir both given; the data_dir values are the server directories, so remove target.managed.dir")
			}
			s.parseListDim(g, DimDataDir, p, func(_ *yaml.Node, v string) (string, bool) { return filepath.Clean(v), true },
				"matrix.data_dir needs a managed target (tunebench starts one server per directory); target.dsn names one server")
		case s.Workload == nil:
			// Unknown workload: its options cannot be checked.
		default:
			opt, found := s.Workload.Option(g.key)
			if !found {
				unknownKey(p, g, "matrix (matrix keys are settings, data_dir and the options of "+s.Workload.Name+")", keys)
				continue
			}
			items, ok := list(g.value, "matrix."+g.key, p)
			if !ok {
				continue
			}
			d := Dimension{Kind: DimOption, Name: opt.Name, Line: g.keyN.Line}
			for _, it := range items {
				v, ok := scalar(it, "matrix."+g.key, p)
				if !ok {
					continue
				}
				canon, err := opt.CheckValue(v)
				if err != nil {
					p.add(it, "%v", err)
					continue
				}
				d.Values = appendUnique(d.Values, s.rebase(opt, canon), it, "matrix."+g.key, p)
			}
			if _, dup := s.Options[opt.Name]; dup {
				p.add(g.keyN, "%s is in workload.options and in the matrix; keep it in one place", opt.Name)
			}
			s.addDim(d, p)
		}
	}
}

// parseListDim parses matrix.KEY, a list of names, into one dimension of
// kind: keep checks each value (reporting its own problems) and returns
// the value to keep; needsManaged is the problem when the target is not
// a managed server.
func (s *Spec) parseListDim(g field, kind DimKind, p *problems, keep func(it *yaml.Node, v string) (string, bool), needsManaged string) {
	where := "matrix." + g.key
	items, ok := list(g.value, where, p)
	if !ok {
		return
	}
	d := Dimension{Kind: kind, Name: g.key, Line: g.keyN.Line}
	for _, it := range items {
		if v, ok := scalar(it, where, p); ok {
			if v, ok = keep(it, v); ok {
				d.Values = appendUnique(d.Values, v, it, where, p)
			}
		}
	}
	if s.Target.Managed == nil {
		p.add(g.keyN, "%s", needsManaged)
	}
	s.addDim(d, p)
}

func (s *Spec) addDim(d Dimension, p *problems) {
	if len(d.Values) == 0 {
		return
	}
	for _, o := range s.Matrix {
		if o.Name == d.Name {
			p.addLine(d.Line, "%s is in the matrix twice (also on line %d)", d.Name, o.Line)
			return
		}
	}
	s.Matrix = append(s.Matrix, d)
}

func appendUnique(vals []string, v string, n *yaml.Node, where string, p *problems) []string {
	for _, o := range vals {
		if o == v {
			p.add(n, "%s lists %q twice", where, v)
			return vals
		}
	}
	return append(vals, v)
}

// checkXAxis resolves the x axis and checks it is a numeric run option.
func (s *Spec) checkXAxis(p *problems) {
	w := s.Workload
	if s.XAxis == "" {
		s.XAxis = w.XAxis
		if s.XAxis == "" {
			return
		}
	}
	opt, ok := w.Option(s.XAxis)
	var numeric []string
	for _, o := range w.Options {
		if o.Numeric() && !o.Load {
			numeric = append(numeric, o.Name)
		}
	}
	switch {
	case !ok:
		msg := fmt.Sprintf("x_axis %q is not an option of %s", s.XAxis, w.Name)
		if sg := suggest(s.XAxis, numeric); sg != "" {
			msg += " (did you mean " + sg + "?)"
		}
		p.addLine(s.xLine, "%s; numeric run options: %s", msg, strings.Join(numeric, ", "))
	case opt.Load:
		p.addLine(s.xLine, "x_axis %s is a load option; put it in the matrix as a configuration instead and plot against one of %s", s.XAxis, strings.Join(numeric, ", "))
	case !opt.Numeric():
		p.addLine(s.xLine, "x_axis %s is not numeric; choose one of %s", s.XAxis, strings.Join(numeric, ", "))
	}
}

func (s *Spec) parseBaseline(f field, p *problems) {
	fields, ok := mapping(f.value, "baseline", p)
	if !ok {
		return
	}
	var names []string
	for _, d := range s.Matrix {
		if d.Name != s.XAxis {
			names = append(names, d.Name)
		}
	}
	for _, g := range fields {
		key := strings.TrimPrefix(strings.ToLower(g.key), "settings.")
		if k, err := kernel.ParseKey(key); err == nil {
			for _, d := range s.Matrix {
				if d.Kind == DimKernel && d.Name == k.Name {
					key = k.Name // transparent_hugepage.enabled is transparent_hugepage
				}
			}
		}
		v, ok := scalar(g.value, "baseline."+g.key, p)
		if !ok {
			continue
		}
		var dim *Dimension
		for i := range s.Matrix {
			if s.Matrix[i].Name == key {
				dim = &s.Matrix[i]
			}
		}
		switch {
		case key == s.XAxis && key != "":
			p.add(g.keyN, "baseline names %s, the x axis; a baseline is a configuration, compared at every x value", key)
			continue
		case dim == nil:
			msg := fmt.Sprintf("baseline key %q is not in the matrix", g.key)
			if sg := suggest(key, names); sg != "" {
				msg += " (did you mean " + sg + "?)"
			} else if len(names) > 0 {
				msg += "; matrix keys: " + strings.Join(names, ", ")
			}
			p.add(g.keyN, "%s", msg)
			continue
		}
		canon := strings.TrimSpace(v)
		if dim.Kind == DimOption {
			if opt, ok := s.Workload.Option(dim.Name); ok {
				if c, err := opt.CheckValue(v); err == nil {
					canon = s.rebase(opt, c)
				}
			}
		}
		if dim.Kind == DimDataDir {
			canon = filepath.Clean(canon)
		}
		if !contains(dim.Values, canon) {
			p.add(g.value, "baseline %s=%s is not one of the matrix values (%s)", dim.Name, v, strings.Join(dim.Values, ", "))
			continue
		}
		s.Baseline = append(s.Baseline, KV{Name: dim.Name, Value: canon})
	}
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
