package option

import (
	"time"
)

// Set is a workload's declared options.
type Set []Option

// Lookup finds an option by name.
func (s Set) Lookup(name string) (*Option, bool) {
	for i := range s {
		if s[i].Name == name {
			return &s[i], true
		}
	}
	return nil, false
}

// Phase returns the options of one phase, in declaration order.
func (s Set) Phase(p Phase) Set {
	var out Set
	for _, o := range s {
		if o.In(p) {
			out = append(out, o)
		}
	}
	return out
}

// Keys returns the options that experiment files may set (not FlagOnly).
func (s Set) Keys() Set {
	var out Set
	for _, o := range s {
		if !o.FlagOnly {
			out = append(out, o)
		}
	}
	return out
}

// ByRole returns the option playing role r, if any.
func (s Set) ByRole(r Role) (*Option, bool) {
	for i := range s {
		if s[i].Role == r {
			return &s[i], true
		}
	}
	return nil, false
}

// Governing returns the option of s that governs the server setting
// name (see Option.Governs).
func (s Set) Governing(name string) (*Option, bool) {
	for i := range s {
		if s[i].Governs != "" && s[i].Governs == name {
			return &s[i], true
		}
	}
	return nil, false
}

// GovernedError is the error for a server setting that option o governs;
// {name} is spelled --flag or key where it is rendered.
func GovernedError(o *Option, setting string) *Error {
	return Errorf("give {"+o.Name+"} instead (the workload's own setting for it)",
		setting+" would be overridden: the workload sets it in every session it opens, from {"+o.Name+"}")
}

// Defaults returns the default of every option in s.
func (s Set) Defaults() Values {
	v := Values{}
	for _, o := range s {
		v[o.Name] = o.DefaultValue()
	}
	return v
}

// Complete returns v with the default of every option of s that v lacks.
func (s Set) Complete(v Values) Values {
	out := s.Defaults()
	for k, x := range v {
		out[k] = x
	}
	return out
}

// Check validates every value of v that s declares (kind, bounds, enum,
// Validate) and rewrites it in canonical form. Values s does not declare
// are left alone.
func (s Set) Check(v Values) error {
	for i := range s {
		o := &s[i]
		text, ok := v[o.Name]
		if !ok || (text == o.DefaultValue() && text == "") {
			continue // an empty default is a choice left open (a path, an engine)
		}
		canon, err := o.CheckValue(text)
		if err != nil {
			return err
		}
		v[o.Name] = canon
	}
	return nil
}

// Given reports which options were given explicitly (not defaults).
type Given func(name string) bool

// ExecRules checks the rules between the executor roles of s: they are the
// same for every workload that runs transactions through the executor, and
// written only here. given tells which options the user set.
func ExecRules(s Set, v Values, given Given) error {
	name := func(r Role) string {
		if o, ok := s.ByRole(r); ok {
			return o.Name
		}
		return ""
	}
	dur, count, rate, limit, slack := name(RoleDuration), name(RoleCount), name(RoleRate), name(RoleLatencyLimit), name(RoleTimerSlack)
	ref := Ref
	if dur != "" && count != "" && given != nil && given(dur) && given(count) && v.Int(count) > 0 {
		return Errorf("give "+ref(dur)+" or "+ref(count)+", not both", ref(dur)+" and "+ref(count)+" both given")
	}
	if dur != "" && count != "" && v.Duration(dur) == 0 && v.Int(count) == 0 {
		return Errorf("give "+ref(dur)+" D or "+ref(count)+" N", "nothing to run: "+ref(dur)+" and "+ref(count)+" are both 0")
	}
	if limit != "" && rate != "" && v.Duration(limit) > 0 && v.Float(rate) == 0 {
		return Errorf(ref(limit)+" needs "+ref(rate)+" (open loop), as in pgbench", ref(limit)+" without "+ref(rate))
	}
	// A timer slack set without a rate: given, or, where nothing says what
	// was given (an experiment's plan fills every default), not the default.
	slackSet := given != nil && given(slack)
	if o, ok := s.ByRole(RoleTimerSlack); ok && given == nil && v[slack] != "" {
		slackSet = v.Duration(slack) != Values{slack: o.Default}.Duration(slack)
	}
	if slackSet && rate != "" && v.Float(rate) == 0 {
		return Errorf("give "+ref(rate)+" too, or leave "+ref(slack)+" out: a closed loop does not wait for starts",
			ref(slack)+" without "+ref(rate))
	}
	return nil
}

// Exec is the executor's part of a run's options, read through the roles.
type Exec struct {
	Workers, Threads int
	Duration         time.Duration
	Count            int64
	Warmup           time.Duration
	Rate             float64
	LatencyLimit     time.Duration
	TimerSlack       time.Duration // open loop only; 0: the executor's default
	MaxErrorsPct     float64
	MaxOutagePct     float64
	Seed             int64
	NoCheck          bool
}

// ExecOf reads the executor roles of s from v. A count replaces the
// duration (the duration's default then does not apply).
func ExecOf(s Set, v Values) Exec {
	get := func(r Role) string {
		if o, ok := s.ByRole(r); ok {
			return o.Name
		}
		return ""
	}
	e := Exec{
		Workers: int(v.Int(get(RoleWorkers))), Threads: int(v.Int(get(RoleThreads))),
		Duration: v.Duration(get(RoleDuration)), Count: v.Int(get(RoleCount)),
		Warmup: v.Duration(get(RoleWarmup)), Rate: v.Float(get(RoleRate)),
		LatencyLimit: v.Duration(get(RoleLatencyLimit)), TimerSlack: v.Duration(get(RoleTimerSlack)), Seed: v.Int(get(RoleSeed)),
		NoCheck: v.Bool(get(RoleNoCheck)),
	}
	if e.Rate == 0 {
		e.TimerSlack = 0 // a closed loop waits for no start: nothing to store
	}
	if o, ok := s.ByRole(RoleMaxErrorsPct); ok {
		e.MaxErrorsPct = v.Float(o.Name)
	} else {
		e.MaxErrorsPct = 100
	}
	e.MaxOutagePct = DefaultMaxOutagePct
	if o, ok := s.ByRole(RoleMaxOutagePct); ok {
		e.MaxOutagePct = v.Float(o.Name)
	}
	if e.Count > 0 {
		e.Duration = 0
	}
	return e
}
