// Package experiment turns an experiment file (YAML) into a plan of runs and
// executes it: spec parsing with strict, line-numbered errors, matrix
// expansion, seeded ordering, time estimates, resume planning, and an
// orchestrator whose side effects (servers, loads, resets, runs, the store)
// are reached through interfaces. It never prints: progress goes to an
// Observer the CLI supplies.
//
// The workloads an experiment can use are described by a Catalog the caller
// passes in (the CLI's adapter registry): each Workload lists its options
// with their kinds, defaults and bounds, which of them shape the loaded data,
// and which one is the x axis of the classic throughput-vs-clients figure.
package experiment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a workload option's value.
type Kind int

const (
	KindInt      Kind = iota // decimal integer (0x.. and 1_000 also accepted)
	KindFloat                // number
	KindDuration             // Go duration: 90s, 2m, 1h30m (a bare number is refused)
	KindBool                 // true or false
	KindString               // text, optionally one of Enum
)

func (k Kind) String() string {
	switch k {
	case KindInt:
		return "an integer"
	case KindFloat:
		return "a number"
	case KindDuration:
		return "a duration like 30s or 2m"
	case KindBool:
		return "true or false"
	default:
		return "a string"
	}
}

// Option describes one workload option.
type Option struct {
	Name    string
	Kind    Kind
	Default string   // text of the default value; "" = zero value of the kind
	Enum    []string // KindString: the accepted values (empty = any)
	// Min and Max bound numeric values (ints, floats; durations in seconds)
	// when HasMin / HasMax are set; both are inclusive.
	Min, Max       float64
	HasMin, HasMax bool
	// Load marks options that shape the loaded data (scale, warehouses):
	// runs that differ in them need another load.
	Load bool
	Doc  string
}

// Workload describes what an experiment needs to know about a workload.
type Workload struct {
	Name        string
	Description string
	// XAxis is the option the runs are plotted against by default
	// (clients for tpcb, vusers for tpcc). It must be a numeric run option.
	XAxis   string
	Options []Option
	// Metric names the summary field that measures throughput (tps, nopm).
	Metric string
	// Runnable is false for workloads whose runs cannot execute in this
	// build yet: their files parse and dry-run, and Execute refuses them.
	Runnable bool
	// RunTime estimates one run (its in-run warm-up or ramp-up included)
	// from the run's options; known is false when it cannot be told in
	// advance (a count of transactions instead of a duration).
	RunTime func(o Options) (d time.Duration, known bool)
	// LoadTime estimates loading the data for the given load options.
	LoadTime func(o Options) time.Duration
	// DataBytes estimates the size of the loaded database (for reset estimates).
	DataBytes func(o Options) int64
	// Check validates a full set of run and load options together (rules
	// across options); nil means none.
	Check func(o Options) error
}

// Option returns the named option.
func (w *Workload) Option(name string) (*Option, bool) {
	for i := range w.Options {
		if w.Options[i].Name == name {
			return &w.Options[i], true
		}
	}
	return nil, false
}

// OptionNames lists the option names in declaration order.
func (w *Workload) OptionNames() []string {
	out := make([]string, len(w.Options))
	for i, o := range w.Options {
		out[i] = o.Name
	}
	return out
}

// Catalog holds the workloads experiments can use, by name.
type Catalog map[string]*Workload

// Names lists the workload names, sorted.
func (c Catalog) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Options are option values by name, as text (validated against the
// workload's option kinds when the spec is parsed). The typed getters return
// the zero value for a missing or malformed option.
type Options map[string]string

// Clone copies o.
func (o Options) Clone() Options {
	out := make(Options, len(o))
	for k, v := range o {
		out[k] = v
	}
	return out
}

// String returns the option's text.
func (o Options) String(name string) string { return o[name] }

// Int returns an integer option.
func (o Options) Int(name string) int64 {
	v, _ := parseInt(o[name])
	return v
}

// Float returns a numeric option (integers included).
func (o Options) Float(name string) float64 {
	v, _ := parseFloat(o[name])
	return v
}

// Duration returns a duration option.
func (o Options) Duration(name string) time.Duration {
	v, _ := parseDuration(o[name])
	return v
}

// Bool returns a boolean option.
func (o Options) Bool(name string) bool { return o[name] == "true" }

// Has reports whether the option is set.
func (o Options) Has(name string) bool {
	_, ok := o[name]
	return ok
}

// text renders options as "a=1 b=2" in the given order (for messages).
func (o Options) text(order []string) string {
	var parts []string
	for _, n := range order {
		if v, ok := o[n]; ok {
			parts = append(parts, n+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func parseInt(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(s), 0, 64)
}

func parseFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return float64(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return 0, fmt.Errorf("not a finite number")
	}
	return f, err
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// checkValue validates text against the option and returns its canonical
// text (booleans as true/false, the rest as written).
func (opt *Option) checkValue(text string) (string, error) {
	text = strings.TrimSpace(text)
	var num float64
	switch opt.Kind {
	case KindInt:
		v, err := parseInt(text)
		if err != nil {
			return "", fmt.Errorf("%s must be an integer, not %q", opt.Name, text)
		}
		num = float64(v)
	case KindFloat:
		v, err := parseFloat(text)
		if err != nil {
			return "", fmt.Errorf("%s must be a number, not %q", opt.Name, text)
		}
		num = v
	case KindDuration:
		if _, err := strconv.ParseFloat(text, 64); err == nil && text != "0" {
			return "", fmt.Errorf("%s must be a duration with a unit, like %ss, not a bare number", opt.Name, text)
		}
		v, err := parseDuration(text)
		if err != nil {
			return "", fmt.Errorf("%s must be a duration like 30s, 2m or 1h30m, not %q", opt.Name, text)
		}
		if v < 0 {
			return "", fmt.Errorf("%s must not be negative (%s)", opt.Name, text)
		}
		num = v.Seconds()
	case KindBool:
		switch strings.ToLower(text) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", fmt.Errorf("%s must be true or false, not %q", opt.Name, text)
	case KindString:
		if len(opt.Enum) > 0 && !contains(opt.Enum, text) {
			msg := fmt.Sprintf("%s must be one of %s, not %q", opt.Name, strings.Join(opt.Enum, ", "), text)
			if s := suggest(text, opt.Enum); s != "" {
				msg += " (did you mean " + s + "?)"
			}
			return "", fmt.Errorf("%s", msg)
		}
		if text == "" {
			return "", fmt.Errorf("%s must not be empty", opt.Name)
		}
		return text, nil
	}
	unit := ""
	if opt.Kind == KindDuration {
		unit = " s"
	}
	if opt.HasMin && num < opt.Min {
		if opt.Min == 0 {
			return "", fmt.Errorf("%s must not be negative (%s)", opt.Name, text)
		}
		return "", fmt.Errorf("%s must be at least %s%s, not %s", opt.Name, fmtNum(opt.Min), unit, text)
	}
	if opt.HasMax && num > opt.Max {
		return "", fmt.Errorf("%s must be at most %s%s, not %s", opt.Name, fmtNum(opt.Max), unit, text)
	}
	return text, nil
}

func (opt *Option) numeric() bool { return opt.Kind == KindInt || opt.Kind == KindFloat }

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
