package experiment

import (
	"slices"
	"strings"
)

// The named targets in the plan (matrix.target): which server each runs
// on, the workload's dialects, the settings that need a restart on a
// server tunebench cannot restart, and the lab's group of a server.

// PlanTarget is a named target as the plan stores it.
type PlanTarget struct {
	Name   string `json:"name"`
	Engine string `json:"engine,omitempty"` // the target driver: postgres, mariadb
	Kind   string `json:"kind"`             // managed or dsn
	// Server is the name of the first target on the same server: targets
	// that differ only in their settings share one server and its
	// loaded data.
	Server   string    `json:"server"`
	Dir      string    `json:"dir,omitempty"` // a managed server's directory ("": a temporary one)
	Settings []Setting `json:"settings,omitempty"`
}

// TargetPrefix marks a configuration's DataDir that names the server of
// a named target when the targets run on several servers: the Lab opens
// one group per server.
const TargetPrefix = "target:"

// targets records the named targets matrix.target compares and refuses
// those the workload does not run on.
func (p *Plan) targets(s *Spec, pr *problems) {
	used := s.matrixTargets()
	if len(used) == 0 {
		return
	}
	first := map[string]string{} // server key -> its first target
	var kinds []string
	for _, t := range used {
		pt := PlanTarget{Name: t.Name, Engine: t.Engine, Kind: "managed", Settings: t.Settings}
		if t.Managed == nil {
			pt.Kind = "dsn"
		} else {
			pt.Dir = t.Managed.Dir
		}
		k := t.serverKey()
		if _, ok := first[k]; !ok {
			first[k] = t.Name
		}
		pt.Server = first[k]
		if !slices.Contains(kinds, pt.Kind) {
			kinds = append(kinds, pt.Kind)
		}
		p.Targets = append(p.Targets, pt)
		if w := s.Workload; len(w.Dialects) > 0 && t.Engine != "" && !slices.Contains(w.Dialects, t.Engine) {
			fix := "remove " + t.Name + " from matrix.target"
			if s.targetsImplicit {
				fix = "list the other targets in matrix.target (without it every target runs)"
			}
			pr.addLine(t.Line, "workload %s does not run on %s in this build (targets.%s); it runs on %s: %s",
				w.Name, t.Engine, t.Name, strings.Join(w.Dialects, ", "), fix)
		}
	}
	p.TargetKind = strings.Join(kinds, "+")
}

// checkTargetRestarts refuses settings that need a restart on a named
// target given by DSN without a restart command.
func checkTargetRestarts(s *Spec, dims []Dimension, pr *problems) {
	for _, t := range s.matrixTargets() {
		if t.Managed != nil || t.RestartCommand != "" {
			continue
		}
		for _, set := range t.Settings {
			if s.needsRestartOn(t.Name, set.Name) {
				pr.addLine(t.Line, "targets.%s.settings: %s needs a server restart: give targets.%s.restart_command, or set it on the server yourself", t.Name, set.Name, t.Name)
			}
		}
		for _, d := range dims {
			if d.Kind == DimSetting && s.needsRestartOn(t.Name, d.Name) {
				pr.addLine(d.Line, "%s needs a server restart to change, and targets.%s has no restart_command: give one, or use a managed target", d.Name, t.Name)
			}
		}
	}
}

// Target is the named target of that name (nil: none).
func (p *Plan) Target(name string) *PlanTarget {
	for i := range p.Targets {
		if p.Targets[i].Name == name {
			return &p.Targets[i]
		}
	}
	return nil
}

// serverOf is the server (its first target's name) of a named target.
func (p *Plan) serverOf(name string) string {
	if t := p.Target(name); t != nil {
		return t.Server
	}
	return ""
}

// multiServer reports whether the named targets run on several servers.
func (p *Plan) multiServer() bool {
	for _, t := range p.Targets {
		if t.Server != p.Targets[0].Server {
			return true
		}
	}
	return false
}

// ServerOf is the named target whose server opens for a configuration
// group (a Config's DataDir): "" for a file with one target.
func (p *Plan) ServerOf(dataDir string) string {
	if len(p.Targets) == 0 {
		return ""
	}
	if p.multiServer() {
		if name, ok := strings.CutPrefix(dataDir, TargetPrefix); ok {
			return name
		}
	}
	return p.Targets[0].Server
}

// kindOf is the kind (managed or dsn) of the server of a group.
func (p *Plan) kindOf(dataDir string) string {
	if t := p.Target(p.ServerOf(dataDir)); t != nil {
		return t.Kind
	}
	return p.TargetKind
}

// restartCommandOf is the restart command of a group's server.
func (p *Plan) restartCommandOf(dataDir string) string {
	if p.spec == nil {
		return ""
	}
	if t := p.spec.NamedTarget(p.ServerOf(dataDir)); t != nil {
		return t.RestartCommand
	}
	return p.spec.Target.RestartCommand
}

// DescribeTargets says where the named targets run, one line each (none
// for a file with one target).
func (p *Plan) DescribeTargets() []string {
	var out []string
	for _, t := range p.Targets {
		line := t.Name + ": "
		switch {
		case t.Kind == "dsn":
			line += cmpOr(t.Engine, "a server") + " given by its dsn"
		case t.Dir != "":
			line += "managed " + t.Engine + " server in " + t.Dir
		default:
			line += "managed " + t.Engine + " server in a temporary directory"
		}
		if t.Server != t.Name {
			line += " (the server of " + t.Server + ")"
		}
		if len(t.Settings) > 0 {
			line += "; settings " + settingsText(t.Settings)
		}
		out = append(out, line)
	}
	return out
}

// targetsOn are the named targets on the server of target server.
func (p *Plan) targetsOn(server string) []string {
	var out []string
	for _, t := range p.Targets {
		if t.Server == server {
			out = append(out, t.Name)
		}
	}
	return out
}
