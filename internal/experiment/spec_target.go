package experiment

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/target"
)

// The target section of an experiment file (managed or dsn, settings,
// host metrics) and the server settings it names, checked against the
// target driver's catalogue.

func (s *Spec) parseTarget(f field, p *problems) {
	s.parseTargetSection(f, &s.Target, "target", p)
}

// parseTargetSection reads a target section (target:, or one of
// targets:) into ts; where names it in messages.
func (s *Spec) parseTargetSection(f field, ts *TargetSpec, where string, p *problems) {
	fields, ok := mapping(f.value, where, p)
	if !ok {
		return
	}
	// w spells a message's keys in this section's place.
	w := func(msg string) string { return strings.ReplaceAll(msg, "target.", where+".") }
	keys := []string{"managed", "dsn", "restart_command", "restart_timeout", "database", "settings", "kernel", "host_metrics"}
	var managedF, dsnF, restartF, timeoutF *field
	for i := range fields {
		tf := fields[i]
		switch tf.key {
		case "managed":
			managedF = &fields[i]
			m := &Managed{}
			ts.Managed = m
			mf, ok := mapping(tf.value, where+".managed", p)
			if !ok {
				continue
			}
			for _, g := range mf {
				switch g.key {
				case "engine":
					if v, ok := scalar(g.value, where+".managed.engine", p); ok {
						if v != "postgres" && v != "mariadb" {
							p.add(g.value, where+".managed.engine is postgres (the default) or mariadb, not %q", v)
						} else if v != "postgres" {
							m.Engine = v
						}
					}
				case "dir":
					if v, ok := scalar(g.value, where+".managed.dir", p); ok {
						m.Dir = v
					}
				case "port":
					if v, ok := scalar(g.value, where+".managed.port", p); ok {
						n, err := parseInt(v)
						if err != nil || n < 0 || n > 65535 || (n > 0 && n < 1024) {
							p.add(g.value, where+".managed.port must be 0 (pick a free one) or 1024-65535, not %q", v)
						} else {
							m.Port = int(n)
						}
					}
				case "pg_bin":
					if v, ok := scalar(g.value, where+".managed.pg_bin", p); ok {
						m.PGBin = v
					}
				case "run_as":
					if v, ok := scalar(g.value, where+".managed.run_as", p); ok {
						m.RunAs = v
					}
				case "settings":
					p.add(g.keyN, "%s", w("settings belong to the target, not to target.managed: move them to target.settings"))
				default:
					unknownKey(p, g, where+".managed", []string{"engine", "dir", "port", "pg_bin", "run_as"})
				}
			}
		case "dsn":
			dsnF = &fields[i]
			if v, ok := scalar(tf.value, where+".dsn", p); ok {
				ts.DSN = v
				if hasPassword(v) {
					p.add(tf.value, "%s", w("target.dsn must not contain a password: use PGPASSWORD, ~/.pgpass or $TUNEBENCH_DSN"))
				}
			}
		case "restart_command":
			restartF = &fields[i]
			if v, ok := scalar(tf.value, where+".restart_command", p); ok {
				if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\n\r") {
					p.add(tf.value, "%s", w("target.restart_command is one shell command line that restarts the server, e.g. ssh db1 sudo systemctl restart postgresql"))
				}
				ts.RestartCommand = v
			}
		case "restart_timeout":
			timeoutF = &fields[i]
			if v, ok := scalar(tf.value, where+".restart_timeout", p); ok {
				d, err := parseDuration(v)
				if err != nil || d <= 0 {
					p.add(tf.value, w("target.restart_timeout is how long the restart command may take, a duration like 10m, not %q"), v)
				} else {
					ts.RestartTimeout = d
				}
			}
		case "database":
			if v, ok := scalar(tf.value, where+".database", p); ok {
				if !databaseRe.MatchString(v) {
					p.add(tf.value, w("target.database %q: use lower-case letters, digits and '_' (at most 54 characters, not starting with a digit)"), v)
				} else {
					ts.Database = v
				}
			}
		case "settings":
			ts.Settings = s.parseSettings(tf, where+".settings", p)
		case KernelKey:
			if ts != &s.Target {
				p.add(tf.keyN, "%s.kernel: kernel settings are this machine's, not one target's; put them in matrix.kernel (a single value applies to every run)", where)
				continue
			}
			s.kernelLine = tf.keyN.Line
			ts.Kernel = s.parseKernel(tf, where+".kernel", p)
		case "host_metrics":
			s.parseHostMetrics(tf, &ts.HostMetrics, where, p)
		default:
			unknownKey(p, tf, where, keys)
		}
	}
	if restartF != nil && dsnF == nil {
		p.add(restartF.keyN, "%s", w("target.restart_command is for a server given by target.dsn; tunebench restarts its managed server itself"))
	}
	if timeoutF != nil && restartF == nil {
		p.add(timeoutF.keyN, "%s", w("target.restart_timeout bounds target.restart_command: give the command too, or drop the timeout"))
	}
	switch {
	case managedF != nil && dsnF != nil:
		p.add(dsnF.keyN, "%s has both managed and dsn; keep one", where)
	case dsnF != nil:
		ts.Managed = nil
	case managedF == nil:
		ts.Managed = &Managed{}
	}
}

// parseHostMetrics reads target.host_metrics: a source (auto, local, sql,
// none, or node_exporter's URL), or a mapping of source, disk,
// container_metrics and container, as the run flags.
func (s *Spec) parseHostMetrics(f field, hm *target.HostMetrics, where string, p *problems) {
	if n := resolve(f.value); n != nil && n.Kind == yaml.ScalarNode {
		if v, ok := scalar(f.value, where+".host_metrics", p); ok {
			hm.Source = v
		}
	} else {
		fields, ok := mapping(f.value, where+".host_metrics", p)
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
				unknownKey(p, g, where+".host_metrics", []string{"source", "disk", "container_metrics", "container"})
				continue
			}
			if v, ok := scalar(g.value, where+".host_metrics."+g.key, p); ok {
				*dst = v
			}
		}
	}
	if err := hm.Check(); err != nil {
		msg := strings.NewReplacer("--host-metrics", where+".host_metrics", "--container-metrics", "container_metrics", "--container", "container").Replace(err.Error())
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
	// target is the named target whose settings name it ("": the file's
	// target or the matrix).
	target string
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
	for _, k := range s.settingKeys {
		c := s.catalogOf(k.target)
		if c == nil || !settingRe.MatchString(k.name) {
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
