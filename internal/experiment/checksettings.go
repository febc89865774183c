package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// checkSettings validates every setting value of the plan on the server
// just opened, before the first run: each value alone (type, unit, range,
// enum, what the machine can hold) naming its line in the file, then each
// configuration's settings together (shared memory adds up). A wrong value
// in the last configuration stops the experiment before the first one runs.
//
// With named targets on several servers, the server of group dataDir
// checks the configurations that run on it.
func checkSettings(ctx context.Context, t Target, p *Plan, dataDir string) error {
	type value struct{ name, value string }
	seen := map[value]bool{}
	lists := map[string]bool{}
	for _, c := range p.Configs {
		if p.multiServer() && c.DataDir != dataDir {
			continue
		}
		for _, s := range c.Settings {
			v := value{s.Name, s.Value}
			if seen[v] {
				continue
			}
			seen[v] = true
			if err := t.Check(ctx, []Setting{s}); err != nil {
				if nt := p.Target(c.Target); nt != nil && slices.Contains(nt.Settings, s) {
					return errs.Wrap(errs.KindOf(err), err, "", "%s: targets.%s.settings.%s: %s", p.fileName(), nt.Name, s.Name, s.Value)
				}
				return errs.Wrap(errs.KindOf(err), err, "", "%s: matrix.settings.%s: %s", p.where(s), s.Name, s.Value)
			}
		}
		if len(c.Settings) < 2 {
			continue
		}
		parts := make([]string, len(c.Settings))
		for i, s := range c.Settings {
			parts[i] = s.String()
		}
		key := strings.Join(parts, " ")
		if lists[key] {
			continue
		}
		lists[key] = true
		if err := t.Check(ctx, c.Settings); err != nil {
			return errs.Wrap(errs.KindOf(err), err, "", "%s: the settings of configuration %s together", p.fileName(), c.Label)
		}
	}
	return nil
}

// where names the file line of a matrix setting's value.
func (p *Plan) where(s Setting) string {
	if p.spec != nil {
		for _, d := range p.spec.Matrix {
			if d.Kind != DimSetting || d.Name != s.Name {
				continue
			}
			for i, v := range d.Values {
				if v == s.Value && i < len(d.ValueLines) {
					return fmt.Sprintf("%s:%d", p.spec.File, d.ValueLines[i])
				}
			}
			return fmt.Sprintf("%s:%d", p.spec.File, d.Line)
		}
	}
	return p.fileName()
}

func (p *Plan) fileName() string {
	if p.spec != nil && p.spec.File != "" {
		return p.spec.File
	}
	return "the experiment file"
}
