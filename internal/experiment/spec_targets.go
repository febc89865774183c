package experiment

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tunebench/tunebench/internal/target"
)

// The named targets of an experiment file (targets:) and the matrix key
// that compares them (matrix.target): PostgreSQL default and tuned,
// MariaDB default and tuned, on one workload, in one file.

// TargetKey is the matrix key of the named targets (matrix.target).
const TargetKey = "target"

// NamedTarget is one of the file's named targets: a target section (the
// shape of target:) under a name that matrix.target lists.
type NamedTarget struct {
	Name string
	TargetSpec
	Line int
	// Engine is the name of the target driver that opens it ("postgres",
	// "mariadb"); "" for a connection string when Parse had no drivers.
	Engine  string
	catalog target.SettingsCatalog
}

// serverKey identifies the server a named target runs on: targets that
// differ only in their settings (and host metrics) share one server and
// its loaded data.
func (t *NamedTarget) serverKey() string {
	k := struct {
		Engine, DSN, Restart string
		Timeout              int64
		Managed              *Managed
	}{t.Engine, t.DSN, t.RestartCommand, int64(t.RestartTimeout), t.Managed}
	b, _ := json.Marshal(k)
	return string(b)
}

// parseTargets reads targets:, a mapping of names to target sections.
func (s *Spec) parseTargets(f field, cfg *parseConfig, p *problems) {
	fields, ok := mapping(f.value, "targets", p)
	if !ok {
		return
	}
	if len(fields) == 0 {
		p.add(f.keyN, "targets is empty: name each target, e.g. targets: {pg: {managed: {engine: postgres}}, maria: {managed: {engine: mariadb}}}")
		return
	}
	for _, g := range fields {
		if !nameRe.MatchString(g.key) {
			p.add(g.keyN, "target name %q: use letters, digits, '.', '_' and '-' (at most 63 characters)", g.key)
			continue
		}
		nt := &NamedTarget{Name: g.key, Line: g.keyN.Line}
		first := len(s.settingKeys)
		s.parseTargetSection(g, &nt.TargetSpec, "targets."+g.key, p)
		for i := first; i < len(s.settingKeys); i++ {
			s.settingKeys[i].target = g.key
		}
		if nt.Database == "" {
			nt.Database = DefaultDatabase
		}
		ts := target.Spec{DSN: nt.DSN}
		if nt.Managed != nil {
			ts.Managed = &target.Managed{Engine: nt.Managed.Engine}
		}
		for _, d := range cfg.drivers {
			if d.Accepts(ts) {
				nt.Engine = d.Name()
				break
			}
		}
		if nt.Engine == "" && nt.Managed != nil {
			nt.Engine = cmpOr(nt.Managed.Engine, "postgres")
		}
		nt.catalog = cfg.settings
		if nt.catalog == nil {
			nt.catalog = target.CatalogFor(cfg.drivers, ts)
		}
		s.Targets = append(s.Targets, nt)
	}
	if len(s.Targets) > 0 {
		s.useTarget(s.Targets[0])
	}
}

// useTarget makes t the file's target for what knows one target only
// (whether it is managed, its directory, its database): its settings stay
// its own, applied with each configuration of it.
func (s *Spec) useTarget(t *NamedTarget) {
	s.Target = t.TargetSpec
	s.Target.Settings = nil
}

// parseMatrixTarget reads matrix.target, a list of the names in targets:.
func (s *Spec) parseMatrixTarget(g field, p *problems) {
	items, ok := list(g.value, "matrix.target", p)
	if !ok {
		return
	}
	if len(s.Targets) == 0 {
		p.add(g.keyN, "matrix.target lists named targets, and the file has no targets:; declare them (targets: {pg: {managed: {engine: postgres}}, maria: {managed: {engine: mariadb}}}) in place of target:")
		return
	}
	d := Dimension{Kind: DimTarget, Name: TargetKey, Line: g.keyN.Line}
	for _, it := range items {
		v, ok := scalar(it, "matrix.target", p)
		if !ok {
			continue
		}
		if s.NamedTarget(v) == nil {
			msg := "matrix.target: no target " + quote(v) + " in targets:"
			if sg := suggest(v, s.targetNames()); sg != "" {
				msg += " (did you mean " + sg + "?)"
			}
			p.add(it, "%s; the file's targets are %s", msg, strings.Join(s.targetNames(), ", "))
			continue
		}
		d.Values = appendUnique(d.Values, v, it, "matrix.target", p)
		d.ValueLines = append(d.ValueLines, it.Line)
	}
	s.addDim(d, p)
}

func quote(v string) string { return `"` + v + `"` }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Spec) targetNames() []string {
	out := make([]string, len(s.Targets))
	for i, t := range s.Targets {
		out[i] = t.Name
	}
	return out
}

// NamedTarget is the file's target of that name (nil: none).
func (s *Spec) NamedTarget(name string) *NamedTarget {
	for _, t := range s.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// matrixTargets are the named targets matrix.target compares, in its
// order.
func (s *Spec) matrixTargets() []*NamedTarget {
	var out []*NamedTarget
	for _, d := range s.Matrix {
		if d.Kind == DimTarget {
			for _, v := range d.Values {
				if t := s.NamedTarget(v); t != nil {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// checkTargets completes and checks the named targets once the matrix is
// read: without matrix.target every target is compared, in file order
// (the first matrix key); server settings in the matrix need one engine;
// a setting is either a target's or the matrix's; targets share one
// benchmark database name; a data directory, storage layout or envelope
// in the matrix needs every target on one managed server.
func (s *Spec) checkTargets(targetsLine int, p *problems) {
	if len(s.Targets) == 0 {
		return
	}
	if !slices.ContainsFunc(s.Matrix, func(d Dimension) bool { return d.Kind == DimTarget }) {
		d := Dimension{Kind: DimTarget, Name: TargetKey, Line: targetsLine}
		for _, t := range s.Targets {
			d.Values = append(d.Values, t.Name)
			d.ValueLines = append(d.ValueLines, t.Line)
		}
		s.Matrix = append([]Dimension{d}, s.Matrix...)
		s.targetsImplicit = true
	}
	used := s.matrixTargets()
	if len(used) == 0 {
		return
	}
	s.useTarget(used[0])
	var engines, servers []string
	for _, t := range used {
		if t.Engine != "" && !slices.Contains(engines, t.Engine) {
			engines = append(engines, t.Engine)
		}
		if k := t.serverKey(); !slices.Contains(servers, k) {
			servers = append(servers, k)
		}
		if t.Database != used[0].Database {
			p.addLine(t.Line, "targets.%s.database is %s and targets.%s.database %s: the experiment has one benchmark database name; give them the same", t.Name, t.Database, used[0].Name, used[0].Database)
		}
	}
	for _, d := range s.Matrix {
		switch d.Kind {
		case DimSetting:
			if len(engines) > 1 {
				p.addLine(d.Line, "matrix.settings.%s: server settings are engine-specific, and matrix.target compares %s; put them in targets.<name>.settings of each target instead", d.Name, strings.Join(engines, " and "))
			}
			for _, t := range used {
				for _, set := range t.Settings {
					if set.Name == d.Name {
						p.addLine(d.Line, "%s is in targets.%s.settings and in matrix.settings; keep it in one place", d.Name, t.Name)
					}
				}
			}
		case DimDataDir, DimStorage, DimEnvelope:
			if len(servers) > 1 {
				p.addLine(d.Line, "matrix.%s with targets on %d servers: the servers would share a directory; run one experiment per server, or give each target its own managed.dir", d.Name, len(servers))
			}
		}
	}
}

// catalogOf is the settings catalogue for a setting of the named target
// ("" or unknown: the file's).
func (s *Spec) catalogOf(name string) target.SettingsCatalog {
	if t := s.NamedTarget(name); t != nil && name != "" {
		return t.catalog
	}
	return s.catalog
}

// needsRestartOn is needsRestart on the named target's catalogue.
func (s *Spec) needsRestartOn(targetName, setting string) bool {
	if s == nil {
		return false
	}
	c := s.catalogOf(targetName)
	if c == nil {
		return false
	}
	_, restart := c.Setting(setting)
	return restart
}

// DSNs are the connection strings of the file's target or named targets.
func (s *Spec) DSNs() []string {
	if len(s.Targets) == 0 {
		if s.Target.DSN != "" {
			return []string{s.Target.DSN}
		}
		return nil
	}
	var out []string
	for _, t := range s.Targets {
		if t.DSN != "" {
			out = append(out, t.DSN)
		}
	}
	return out
}
