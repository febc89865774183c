// Package option declares a workload's options once: name, kind, default,
// bounds, help, the phase it belongs to (load, run or check) and the part it
// plays in the executor's configuration. From that one declaration the CLI
// makes its flags (--max-tries), experiment files take their keys
// (max_tries), values are checked, and docs/options.md is written. Errors
// name options symbolically ({max_tries}) and are spelled for the context
// that reports them: a flag on the command line, a key in an experiment file.
package option

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of an option's value.
type Kind int

const (
	KindInt      Kind = iota // decimal integer (0x.. and 1_000 also accepted)
	KindFloat                // number
	KindDuration             // Go duration: 90s, 2m, 1h30m (a bare number is refused, except 0)
	KindBool                 // true or false
	KindString               // text, optionally one of Enum
	KindList                 // comma-separated text items, each optionally one of Enum
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
	case KindList:
		return "a comma-separated list"
	default:
		return "a string"
	}
}

// TypeName is the short type shown in help and docs.
func (k Kind) TypeName() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "number"
	case KindDuration:
		return "duration"
	case KindBool:
		return "bool"
	case KindList:
		return "list"
	default:
		return "string"
	}
}

// Role is the part an option plays in the executor's configuration. The
// rules between roles (a duration or a count, not both; a latency limit
// needs a rate, ...) are
// written once (ExecRules) for every workload that declares them.
type Role int

const (
	RoleNone         Role = iota
	RoleWorkers           // concurrent clients / virtual users
	RoleThreads           // driver threads serving them (closed loop)
	RoleDuration          // measured time
	RoleCount             // transactions per worker, instead of a duration
	RoleWarmup            // warm-up / ramp-up before measuring
	RoleRate              // open loop: total transactions per second
	RoleLatencyLimit      // pgbench -L
	RoleMaxErrorsPct      // exit 4 above this share of errors
	RoleSeed              // random seed (0 = from the clock)
	RoleNoCheck           // skip the checks after the run
	RoleMaxOutagePct      // status errors and exit 4 when outages cover more of the window
	RoleTimerSlack        // open loop: how late the kernel may wake the driver for a start
)

// DefaultMaxOutagePct is the share of the measured window (in percent)
// that outages may cover before a run's status is errors, for a workload
// that declares no RoleMaxOutagePct option.
const DefaultMaxOutagePct = 5.0

// Option describes one option of a workload.
type Option struct {
	// Name is the experiment key (snake_case); the flag is the same with
	// dashes: max_tries, --max-tries.
	Name string
	// Short is the one-letter flag shorthand ("" = none).
	Short string
	Kind  Kind
	// Default is the text of the default value; "" = the zero value of the kind.
	Default string
	// Enum lists the accepted values of a string (or of each list item).
	Enum []string
	// Min and Max bound numeric values (durations in seconds) when HasMin /
	// HasMax are set; both are inclusive.
	Min, Max       float64
	HasMin, HasMax bool
	// Load marks options of the load phase (they shape the loaded data:
	// runs that differ in them need another load); Check marks options of
	// the check command. Neither: a run option.
	Load, Check bool
	// FlagOnly options are command-line flags only, never experiment keys
	// (--drop, --json-like choices that an experiment makes itself).
	FlagOnly bool
	// Hidden flags are left out of --help and the docs.
	Hidden bool
	Role   Role
	// Doc is the help text.
	Doc string
	// DefaultText replaces the default in help when it depends on other
	// options ("1m unless --transactions"); {name} references are spelled
	// for the context.
	DefaultText string
	// Validate checks the text further and returns its canonical form (for
	// values a kind cannot describe, e.g. a distribution). It runs after the
	// kind's own check.
	Validate func(text string) (string, error)
	// Rebase, for a value naming files, makes its relative paths relative
	// to dir (an experiment file's directory); a command line's stay
	// relative to the working directory.
	Rebase func(text, dir string) string
	// Governs names the server setting this option sets in every session
	// the workload opens (tpcc's isolation sets
	// default_transaction_isolation): a --set or an experiment setting of
	// it would be overridden without a word, so they are refused and point
	// to the option.
	Governs string
}

// Phase is the phase of a command: Load, Run or Check.
type Phase int

const (
	PhaseRun Phase = iota
	PhaseLoad
	PhaseCheck
)

// In reports whether the option belongs to phase p.
func (o *Option) In(p Phase) bool {
	switch p {
	case PhaseLoad:
		return o.Load
	case PhaseCheck:
		return o.Check
	}
	return !o.Load && !o.Check
}

// Flag is the option's command-line flag name (without dashes).
func (o *Option) Flag() string { return FlagName(o.Name) }

// FlagName turns an option name into its flag: max_tries -> max-tries.
func FlagName(name string) string { return strings.ReplaceAll(name, "_", "-") }

// Numeric reports whether the option takes a number (int or float).
func (o *Option) Numeric() bool { return o.Kind == KindInt || o.Kind == KindFloat }

// CheckValue validates text against the option and returns its canonical
// text (booleans as true/false, the rest as written: experiment plans
// fingerprint it). Errors name the option as {name}: spell them with Render.
func (o *Option) CheckValue(text string) (string, error) {
	canon, err := o.checkKind(strings.TrimSpace(text))
	if err != nil {
		return "", err
	}
	if o.Validate != nil {
		c, err := o.Validate(canon)
		if err != nil {
			if e, ok := err.(*Error); ok {
				return "", e
			}
			return "", &Error{Msg: "{" + o.Name + "}: " + err.Error(), Hint: o.hint()}
		}
		canon = c
	}
	return canon, nil
}

func (o *Option) errorf(format string, a ...any) error {
	return &Error{Msg: "{" + o.Name + "} " + fmt.Sprintf(format, a...), Hint: o.hint()}
}

// hint is the fix for a bad value of o.
func (o *Option) hint() string {
	ref := "{" + o.Name + "}"
	switch {
	case len(o.Enum) > 0 && o.Kind == KindList:
		return "give " + ref + " a comma-separated list of " + orList(o.Enum)
	case len(o.Enum) > 0:
		return "use " + ref + " " + orList(o.Enum)
	case o.Kind == KindBool:
		return "give " + ref + " true or false"
	case o.Numeric() || o.Kind == KindDuration:
		unit := ""
		if o.Kind == KindDuration {
			unit = " s"
		}
		switch {
		case o.HasMin && o.HasMax:
			return fmt.Sprintf("give %s a value from %s%s to %s%s", ref, fmtNum(o.Min), unit, fmtNum(o.Max), unit)
		case o.HasMin && o.Min == 0:
			return "give " + ref + " a value of 0 or more"
		case o.HasMin:
			return fmt.Sprintf("give %s %s%s or more", ref, fmtNum(o.Min), unit)
		case o.Kind == KindDuration && o.subSecond():
			return "give " + ref + " a duration like " + o.example()
		case o.Kind == KindDuration:
			return "give " + ref + " a duration like 30s, 2m or 1h30m"
		}
		return "give " + ref + " " + o.Kind.String()
	}
	if o.Doc != "" {
		return ref + ": " + o.Doc
	}
	return "see the option's help"
}

// subSecond reports whether a duration option's default is in a unit below
// the second (25µs, 10ms): its hints then speak in that unit.
func (o *Option) subSecond() bool {
	d, err := parseDuration(o.Default)
	return err == nil && d > 0 && d < time.Second && strings.TrimLeft(o.Default, "0123456789.") != "s"
}

// example is a sub-second default as a user types it (25us, not 25µs).
func (o *Option) example() string { return strings.ReplaceAll(o.Default, "µ", "u") }

func orList(vs []string) string {
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

func (o *Option) checkKind(text string) (string, error) {
	var num float64
	switch o.Kind {
	case KindInt:
		v, err := parseInt(text)
		if err != nil {
			return "", o.errorf("must be an integer, not %q", text)
		}
		num = float64(v)
	case KindFloat:
		v, err := parseFloat(text)
		if err != nil {
			return "", o.errorf("must be a number, not %q", text)
		}
		num = v
	case KindDuration:
		unit, like := "s", "30s, 2m or 1h30m"
		if o.subSecond() {
			like = o.example()
			unit = strings.TrimLeft(like, "0123456789.")
		}
		v, msg := readDuration(text, unit, like)
		if msg != "" {
			return "", o.errorf("%s", msg)
		}
		num = v.Seconds()
	case KindBool:
		switch strings.ToLower(text) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", o.errorf("must be true or false, not %q", text)
	case KindString:
		if len(o.Enum) > 0 && !contains(o.Enum, text) {
			return "", o.enumError(text)
		}
		if text == "" {
			return "", o.errorf("must not be empty")
		}
		return text, nil
	case KindList:
		items := SplitList(text)
		if len(items) == 0 {
			return "", o.errorf("must not be empty")
		}
		for _, it := range items {
			if len(o.Enum) > 0 && !contains(o.Enum, it) {
				return "", o.enumError(it)
			}
		}
		return text, nil // as written: experiment plans fingerprint it
	}
	unit := ""
	if o.Kind == KindDuration {
		unit = " s"
	}
	if o.HasMin && num < o.Min {
		if o.Min == 0 {
			return "", o.errorf("must not be negative (%s)", text)
		}
		return "", o.errorf("must be at least %s%s, not %s", fmtNum(o.Min), unit, text)
	}
	if o.HasMax && num > o.Max {
		return "", o.errorf("must be at most %s%s, not %s", fmtNum(o.Max), unit, text)
	}
	return text, nil
}

func (o *Option) enumError(text string) error {
	msg := fmt.Sprintf("must be one of %s, not %q", strings.Join(o.Enum, ", "), text)
	if s := Suggest(text, o.Enum); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	return o.errorf("%s", msg)
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(text string) []string {
	var out []string
	for _, p := range strings.Split(text, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// DefaultValue is the option's default as canonical text.
func (o *Option) DefaultValue() string {
	if o.Default != "" {
		return o.Default
	}
	switch o.Kind {
	case KindInt, KindFloat, KindDuration:
		return "0"
	case KindBool:
		return "false"
	}
	return ""
}

// Values are option values by name, as canonical text. The typed getters
// return the zero value for a missing or malformed option.
type Values map[string]string

// Clone copies v.
func (v Values) Clone() Values {
	out := make(Values, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}

// String returns the option's text.
func (v Values) String(name string) string { return v[name] }

// Int returns an integer option.
func (v Values) Int(name string) int64 {
	n, _ := parseInt(v[name])
	return n
}

// Float returns a numeric option (integers included).
func (v Values) Float(name string) float64 {
	f, _ := parseFloat(v[name])
	return f
}

// Duration returns a duration option.
func (v Values) Duration(name string) time.Duration {
	d, _ := parseDuration(v[name])
	return d
}

// Bool returns a boolean option.
func (v Values) Bool(name string) bool { return v[name] == "true" }

// List returns a list option's items.
func (v Values) List(name string) []string { return SplitList(v[name]) }

// Has reports whether the option is set.
func (v Values) Has(name string) bool {
	_, ok := v[name]
	return ok
}

// Text renders values as "a=1 b=2" in the given order (for messages).
func (v Values) Text(order []string) string {
	var parts []string
	for _, n := range order {
		if x, ok := v[n]; ok {
			parts = append(parts, n+"="+x)
		}
	}
	return strings.Join(parts, " ")
}

// ParseInt parses an integer as option values are written (0x10, 1_000).
func ParseInt(s string) (int64, error) { return parseInt(s) }

// ParseFloat parses a finite number.
func ParseFloat(s string) (float64, error) { return parseFloat(s) }

// ParseDuration parses a duration ("0" without a unit too).
func ParseDuration(s string) (time.Duration, error) { return parseDuration(s) }

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

// readDuration reads text as the duration options and flags take it: with
// a unit (a bare number, pgbench's -P 5, is refused with the value written
// with unit; 0 needs none) and not negative. msg says what is wrong, "" if
// nothing; like is an example for a text that is no duration.
func readDuration(text, unit, like string) (d time.Duration, msg string) {
	if _, err := strconv.ParseFloat(text, 64); err == nil && text != "0" {
		if d, err := parseDuration(text + unit); err == nil && d > 0 {
			return 0, fmt.Sprintf("must be a duration with a unit, like %s%s, not a bare number", text, unit)
		}
	}
	d, err := parseDuration(text)
	if err != nil {
		return 0, fmt.Sprintf("must be a duration like %s, not %q", like, text)
	}
	if d < 0 {
		return 0, fmt.Sprintf("must not be negative (%s)", text)
	}
	return d, ""
}

// DurationFlag is a command-line duration flag (a pflag.Value) read as the
// duration options are (readDuration).
type DurationFlag struct{ P *time.Duration }

func (f DurationFlag) Set(text string) error {
	d, msg := readDuration(text, "s", "5s, 500ms or 1m")
	if msg != "" {
		return errors.New(msg)
	}
	*f.P = d
	return nil
}

func (f DurationFlag) String() string { return f.P.String() }
func (f DurationFlag) Type() string   { return "duration" }

// SecondsFlag is a duration flag that also takes a bare number as seconds,
// as pgbench's -P does (--progress): the one flag where a habit of
// pgbench's users costs nothing, a progress interval being seconds in
// every tool. Other durations keep their unit (a bare --duration 60 could
// be read as minutes by a HammerDB user).
type SecondsFlag struct{ P *time.Duration }

func (f SecondsFlag) Set(text string) error {
	t := strings.TrimSpace(text)
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("must not be negative (%s)", t)
		}
		*f.P = time.Duration(v * float64(time.Second))
		return nil
	}
	return DurationFlag(f).Set(text)
}

func (f SecondsFlag) String() string { return f.P.String() }
func (f SecondsFlag) Type() string   { return "duration" }

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// FormatNum formats a bound (1, 0.5, 1e+06).
func FormatNum(f float64) string { return fmtNum(f) }

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
