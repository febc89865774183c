package experiment

import (
	"strconv"
	"strings"
)

// The plan's making (NewPlan): the header, the x axis values, the
// dimensions and their checks, the expansion, each configuration and the
// workload's rules on it, the baseline. plan.go holds the plan itself,
// its order and its accessors.

// NewPlan expands a spec into configurations and runs in execution order.
// seed orders the runs when the spec has none (the caller picks one, e.g.
// from the clock, and it is stored in the plan).
func NewPlan(s *Spec, seed int64) (*Plan, error) {
	p := newPlan(s, seed)
	pr := &problems{file: s.File}
	xVals := p.xAxisValues(s)
	dims := p.dimensions(s)
	checkDimensions(s, p.TargetKind, dims, pr)
	p.targets(s, pr)
	combos := expand(dims)
	if n := len(combos) * len(xVals) * (s.Repetitions + s.WarmupRuns); n > 100_000 {
		pr.addLine(0, "the matrix expands to %d runs; that is more than 100000", n)
		return nil, pr.err()
	}
	checkMsgs := map[string]bool{}
	for ci, combo := range combos {
		c := p.config(s, ci, combo, dims)
		p.checkConfig(s, c, xVals, len(combos) > 1, checkMsgs, pr)
		p.Configs = append(p.Configs, c)
	}
	bi := p.baseline(s, dims, pr)
	if !pr.empty() {
		return nil, pr.err()
	}
	p.Configs[bi].Baseline = true
	p.Baseline = p.Configs[bi].Label

	p.order(xVals)
	p.Estimate = p.EstimateFor(nil)
	p.Fingerprint = p.fingerprint()
	return p, nil
}

// newPlan is the plan's header: what the file says outside the matrix.
func newPlan(s *Spec, seed int64) *Plan {
	if s.SeedSet {
		seed = s.Seed
	}
	w := s.Workload
	p := &Plan{
		Version: PlanVersion, Name: s.Name, Description: s.Description, Workload: w.Name, Metric: w.Metric,
		XAxis: s.XAxis, Seed: seed, Order: s.Order, Reset: s.Reset, ResetEvery: s.ResetEvery,
		Repetitions: s.Repetitions, Shards: s.Shards, WarmupRuns: s.WarmupRuns, CooldownS: s.Cooldown.Seconds(),
		Database: s.Target.Database, BaseSettings: s.Target.Settings, BaseKernel: s.Target.Kernel, Hooks: s.Hooks,
		workload: w, spec: s, costs: DefaultCosts(), OptionNames: w.OptionNames(),
	}
	if w.NoDatabase {
		// Nothing to reset: the workload keeps no data in a database.
		p.Reset, p.ResetEvery = ResetNone, ""
	}
	p.TargetKind = "managed"
	if s.Target.Managed == nil {
		p.TargetKind = "dsn"
	}
	for _, o := range w.Options {
		if o.Load {
			p.loadNames = append(p.loadNames, o.Name)
		}
	}
	return p
}

// xAxisValues are the x axis values (as written; p.XValues as numbers):
// from the matrix, else the single value of the options, else the
// option's default.
func (p *Plan) xAxisValues(s *Spec) []string {
	if s.XAxis == "" {
		p.XValues = []float64{0}
		return []string{"0"}
	}
	var xVals []string
	p.xOpt, _ = s.Workload.Option(s.XAxis)
	switch {
	case s.dim(s.XAxis) != nil:
		xVals = s.dim(s.XAxis).Values
	case s.Options.Has(s.XAxis):
		xVals = []string{s.Options[s.XAxis]}
	case p.xOpt.Default != "":
		xVals = []string{p.xOpt.Default}
	default:
		xVals = []string{"0"}
	}
	for _, v := range xVals {
		f, _ := parseFloat(v)
		p.XValues = append(p.XValues, f)
	}
	return xVals
}

// dimensions records every matrix dimension in the plan and returns the
// ones the configurations are the product of (all but the x axis).
func (p *Plan) dimensions(s *Spec) []Dimension {
	var dims []Dimension
	for _, d := range s.Matrix {
		kind := map[DimKind]string{DimSetting: "setting", DimOption: "option", DimDataDir: "data_dir", DimStorage: StorageKey, DimEnvelope: "envelope", DimKernel: KernelKey, DimTarget: TargetKey}[d.Kind]
		p.Dimensions = append(p.Dimensions, PlanDim{Name: d.Name, Kind: kind, Values: d.Values, XAxis: d.Name == s.XAxis && d.Kind == DimOption})
		if d.Kind == DimOption && d.Name == s.XAxis {
			continue
		}
		dims = append(dims, d)
	}
	return dims
}

// checkDimensions refuses dimensions that cannot go together, and
// settings that need a restart on a server tunebench cannot restart.
func checkDimensions(s *Spec, targetKind string, dims []Dimension, pr *problems) {
	var storageLine, envelopeLine, dataDirLine int
	for _, d := range dims {
		switch d.Kind {
		case DimStorage:
			storageLine = d.Line
		case DimEnvelope:
			envelopeLine = d.Line
		case DimDataDir:
			dataDirLine = d.Line
		}
	}
	if storageLine > 0 && dataDirLine > 0 {
		pr.addLine(storageLine, "matrix.storage and matrix.data_dir both given: each layout gets its own server directory on its filesystem, so remove matrix.data_dir")
	}
	if envelopeLine > 0 && dataDirLine > 0 {
		pr.addLine(envelopeLine, "matrix.envelope and matrix.data_dir both given: vary one of them (target.managed.dir names the server directory of the envelopes)")
	}
	if len(s.Targets) > 0 {
		checkTargetRestarts(s, dims, pr)
		return
	}
	if targetKind != "dsn" || s.Target.RestartCommand != "" {
		return
	}
	for _, d := range dims {
		if d.Kind == DimSetting && s.needsRestart(d.Name) {
			pr.addLine(d.Line, "%s needs a server restart to change: give target.restart_command, a command that restarts the server (e.g. ssh db1 sudo systemctl restart postgresql), or use a managed target", d.Name)
		}
	}
	for _, set := range s.Target.Settings {
		if s.needsRestart(set.Name) {
			pr.addLine(0, "target.settings: %s needs a server restart: give target.restart_command, or set it on the server yourself", set.Name)
		}
	}
}

// expand is the cartesian product of the dimensions' values, in order.
func expand(dims []Dimension) [][]string {
	combos := [][]string{{}}
	for _, d := range dims {
		var next [][]string
		for _, c := range combos {
			for _, v := range d.Values {
				next = append(next, append(append([]string{}, c...), v))
			}
		}
		combos = next
	}
	return combos
}

// config is configuration ci: the options' values (the file's, else the
// defaults), then the combination's value of each dimension.
func (p *Plan) config(s *Spec, ci int, combo []string, dims []Dimension) Config {
	w := s.Workload
	c := Config{Index: ci, Load: Options{}, Options: Options{}}
	if s.Target.Managed != nil {
		c.DataDir = s.Target.Managed.Dir
	}
	for _, o := range w.Options {
		if o.Name == s.XAxis {
			continue
		}
		val, ok := o.Default, o.Default != ""
		if v, set := s.Options[o.Name]; set {
			val, ok = v, true
		}
		if ok {
			if o.Load {
				c.Load[o.Name] = val
			} else {
				c.Options[o.Name] = val
			}
		}
	}
	var labels []string
	for di, d := range dims {
		v := combo[di]
		c.Values = append(c.Values, KV{Name: d.Name, Value: v})
		labels = append(labels, d.Name+"="+v)
		switch d.Kind {
		case DimSetting:
			c.Settings = append(c.Settings, Setting{Name: d.Name, Value: v})
		case DimKernel:
			c.Kernel = append(c.Kernel, Setting{Name: d.Name, Value: v})
		case DimDataDir:
			c.DataDir = v
		case DimStorage:
			c.Storage = v
		case DimEnvelope:
			c.Envelope = v
		case DimTarget:
			c.Target = v
		case DimOption:
			if opt, _ := w.Option(d.Name); opt.Load {
				c.Load[d.Name] = v
			} else {
				c.Options[d.Name] = v
			}
		}
	}
	if t := s.NamedTarget(c.Target); t != nil {
		// The target's own settings first, applied with the
		// configuration's (matrix.settings cannot name them too).
		c.Settings = append(append([]Setting{}, t.Settings...), c.Settings...)
		if p.multiServer() {
			c.DataDir = TargetPrefix + p.serverOf(c.Target)
		}
	}
	if c.Storage != "" || c.Envelope != "" {
		c.DataDir = GroupKey(c.Storage, c.Envelope)
		if l := s.Layouts[c.Storage]; l != nil && !l.Reuse {
			// A fresh filesystem per configuration (the studies made
			// a new one each time); reuse: true shares the layout's.
			c.DataDir += " " + configPrefix + strconv.Itoa(ci)
		}
	}
	c.Label = strings.Join(labels, " ")
	if c.Label == "" {
		c.Label = DefaultLabel
	}
	return c
}

// checkConfig runs the workload's rules across options on c at every x
// value, each message once (named by the configuration when there are
// several).
func (p *Plan) checkConfig(s *Spec, c Config, xVals []string, several bool, seen map[string]bool, pr *problems) {
	check := s.Workload.Check
	if check == nil {
		return
	}
	for _, xv := range xVals {
		all := c.Options.Clone()
		for k, v := range c.Load {
			all[k] = v
		}
		if s.XAxis != "" {
			all[s.XAxis] = xv
		}
		if err := check(all); err != nil {
			msg := err.Error()
			if several {
				msg = "configuration " + c.Label + ": " + msg
			}
			if !seen[msg] {
				seen[msg] = true
				pr.addLine(s.workloadLine, "%s", msg)
			}
		}
	}
}

// baseline is the index of the configuration that matches every
// baseline pair (the first without any).
func (p *Plan) baseline(s *Spec, dims []Dimension, pr *problems) int {
	if len(s.Baseline) == 0 {
		return 0
	}
	var matches []int
	for _, c := range p.Configs {
		if c.matches(s.Baseline) {
			matches = append(matches, c.Index)
		}
	}
	switch len(matches) {
	case 0:
		pr.addLine(s.baselineLine, "baseline matches no configuration")
	case 1:
		return matches[0]
	default:
		var names []string
		for _, d := range dims {
			found := false
			for _, b := range s.Baseline {
				found = found || b.Name == d.Name
			}
			if !found {
				names = append(names, d.Name)
			}
		}
		pr.addLine(s.baselineLine, "baseline matches %d configurations; add %s to pick one", len(matches), strings.Join(names, ", "))
	}
	return 0
}

func (s *Spec) dim(name string) *Dimension {
	for i := range s.Matrix {
		if s.Matrix[i].Name == name && s.Matrix[i].Kind == DimOption {
			return &s.Matrix[i]
		}
	}
	return nil
}

func (c *Config) matches(kvs []KV) bool {
	for _, kv := range kvs {
		found := false
		for _, v := range c.Values {
			if v.Name == kv.Name && v.Value == kv.Value {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
