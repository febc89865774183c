package experiment

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/kernel"
)

// The matrix of an experiment file (its dimensions), the x axis and the
// baseline that names one of its configurations.

func (s *Spec) parseMatrix(f field, p *problems) {
	fields, ok := mapping(f.value, "matrix", p)
	if !ok {
		return
	}
	var keys []string
	if s.Workload != nil {
		keys = append([]string{"settings", KernelKey, "data_dir", StorageKey, "envelope", TargetKey}, s.Workload.OptionNames()...)
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
		case g.key == TargetKey:
			s.parseMatrixTarget(g, p)
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
