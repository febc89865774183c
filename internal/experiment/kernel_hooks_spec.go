package experiment

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/kernel"
)

// KernelKey is the matrix and target key of kernel settings
// (matrix.kernel, target.kernel).
const KernelKey = "kernel"

// Hook points, in the order they come in an experiment.
const (
	HookBeforeExperiment = "before_experiment"
	HookBeforeConfig     = "before_config"
	HookBeforeRun        = "before_run"
	HookAfterRun         = "after_run"
	HookAfterExperiment  = "after_experiment"
)

// HookPoints are the hook points in order.
var HookPoints = []string{HookBeforeExperiment, HookBeforeConfig, HookBeforeRun, HookAfterRun, HookAfterExperiment}

// DefaultHookTimeout is a hook's timeout when the file gives none.
const DefaultHookTimeout = 10 * time.Minute

// Hook is one command run at a hook point.
type Hook struct {
	Point   string  `json:"point"`
	Command string  `json:"run"`
	Timeout float64 `json:"timeout_s"`
	Line    int     `json:"line,omitempty"`
}

// TimeoutD is the timeout as a duration.
func (h Hook) TimeoutD() time.Duration { return time.Duration(h.Timeout * float64(time.Second)) }

// parseKernel reads a mapping of kernel key to one value (target.kernel).
func (s *Spec) parseKernel(f field, where string, p *problems) []Setting {
	fields, ok := mapping(f.value, where, p)
	if !ok {
		return nil
	}
	var out []Setting
	seen := map[string]int{}
	for _, g := range fields {
		k, ok := checkKernelKey(g, where, seen, p)
		if !ok {
			continue
		}
		if v, ok := settingValue(g.value, where+"."+g.key, p); ok {
			out = append(out, Setting{Name: k, Value: v})
		}
	}
	return out
}

// checkKernelKey checks a kernel key's spelling and that it is given once
// (transparent_hugepage and transparent_hugepage.enabled are one key).
func checkKernelKey(g field, where string, seen map[string]int, p *problems) (string, bool) {
	k, err := kernel.ParseKey(g.key)
	if err != nil {
		msg := err.Error()
		if h := errs.HintOf(err); h != "" {
			msg += " (" + h + ")"
		}
		p.add(g.keyN, "%s: %s", where, msg)
		return "", false
	}
	if line, dup := seen[k.Name]; dup {
		p.add(g.keyN, "%s: %s is given twice (also on line %d)", where, k.Name, line)
		return "", false
	}
	seen[k.Name] = g.keyN.Line
	return k.Name, true
}

// parseMatrixKernel reads matrix.kernel: a list of values per kernel key,
// each one dimension.
func (s *Spec) parseMatrixKernel(g field, p *problems) {
	fields, ok := mapping(g.value, "matrix.kernel", p)
	if !ok {
		return
	}
	seen := map[string]int{}
	for _, b := range s.Target.Kernel {
		if k, err := kernel.ParseKey(b.Name); err == nil {
			seen[k.Name] = 0
		}
	}
	for _, h := range fields {
		if k, err := kernel.ParseKey(h.key); err == nil {
			if line, dup := seen[k.Name]; dup && line == 0 {
				p.add(h.keyN, "%s is in target.kernel and in matrix.kernel; keep it in one place", k.Name)
				continue
			}
		}
		name, ok := checkKernelKey(h, "matrix.kernel", seen, p)
		if !ok {
			continue
		}
		if name == "vm.nr_hugepages" {
			p.add(h.keyN, "vm.nr_hugepages cannot vary in matrix.kernel: the server maps its shared memory when it starts; reserve the pages in target.kernel and vary huge_pages (on, off) in matrix.settings")
			continue
		}
		items, ok := list(h.value, "matrix.kernel."+h.key, p)
		if !ok {
			continue
		}
		d := Dimension{Kind: DimKernel, Name: name, Line: h.keyN.Line}
		for _, it := range items {
			if v, ok := settingValue(it, "matrix.kernel."+h.key, p); ok {
				if d.Values = appendUnique(d.Values, v, it, "matrix.kernel."+h.key, p); len(d.Values) > len(d.ValueLines) {
					d.ValueLines = append(d.ValueLines, it.Line)
				}
			}
		}
		s.addDim(d, p)
	}
}

// checkKernelTarget refuses what cannot work whatever the machine: block
// queue settings need the server's data directory on this machine.
func (s *Spec) checkKernelTarget(p *problems) {
	if s.Target.Managed != nil {
		return
	}
	check := func(name string, line int) {
		if k, err := kernel.ParseKey(name); err == nil && k.Class == kernel.Queue {
			p.addLine(line, "%s: block queue settings need a managed target (tunebench finds the devices under its data directory); a server given by target.dsn may be on another machine", name)
		}
	}
	for _, k := range s.Target.Kernel {
		check(k.Name, s.kernelLine)
	}
	for _, d := range s.Matrix {
		if d.Kind == DimKernel {
			check(d.Name, d.Line)
		}
	}
}

// parseHooks reads hooks: each point takes a command, a mapping {run,
// timeout}, or a list of them (run in order).
func (s *Spec) parseHooks(f field, p *problems) {
	fields, ok := mapping(f.value, "hooks", p)
	if !ok {
		return
	}
	for _, g := range fields {
		if !contains(HookPoints, g.key) {
			unknownKey(p, g, "hooks", HookPoints)
			continue
		}
		where := "hooks." + g.key
		items := []*yaml.Node{g.value}
		if g.value.Kind == yaml.SequenceNode {
			items = nil
			for _, c := range g.value.Content {
				items = append(items, resolve(c))
			}
			if len(items) == 0 {
				p.add(g.value, "%s is an empty list; give a command", where)
			}
		}
		for _, it := range items {
			h := Hook{Point: g.key, Timeout: DefaultHookTimeout.Seconds(), Line: it.Line}
			switch it.Kind {
			case yaml.ScalarNode:
				v, ok := scalar(it, where, p)
				if !ok {
					continue
				}
				h.Command = v
			case yaml.MappingNode:
				hf, _ := mapping(it, where, p)
				for _, x := range hf {
					switch x.key {
					case "run":
						if v, ok := scalar(x.value, where+".run", p); ok {
							h.Command = v
						}
					case "timeout":
						if v, ok := scalar(x.value, where+".timeout", p); ok {
							d, err := parseDuration(v)
							if err != nil || d <= 0 {
								p.add(x.value, "%s.timeout must be a duration like 30s or 10m, not %q", where, v)
								continue
							}
							h.Timeout = d.Seconds()
						}
					default:
						unknownKey(p, x, where, []string{"run", "timeout"})
					}
				}
			default:
				p.add(it, "%s must be a command, {run: COMMAND, timeout: 5m} or a list of them, not %s", where, describeNode(it))
				continue
			}
			if strings.TrimSpace(h.Command) == "" {
				p.add(it, "%s has no command: give run: COMMAND", where)
				continue
			}
			s.Hooks = append(s.Hooks, h)
		}
	}
}

// HooksAt are the file's hooks at point, in file order.
func (s *Spec) HooksAt(point string) []Hook {
	var out []Hook
	for _, h := range s.Hooks {
		if h.Point == point {
			out = append(out, h)
		}
	}
	return out
}
