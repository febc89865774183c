package option

import (
	"strings"
	"testing"
	"time"
)

func TestSpell(t *testing.T) {
	e := Errorf("give {max_tries} 1 or more", "{max_tries} must be at least 1, not 0 {Not An Option} {x")
	msg, hint := e.Render(Flag)
	if msg != "--max-tries must be at least 1, not 0 {Not An Option} {x" || hint != "give --max-tries 1 or more" {
		t.Errorf("flag spelling: %q / %q", msg, hint)
	}
	if e.Error() != "max_tries must be at least 1, not 0 {Not An Option} {x" {
		t.Errorf("key spelling: %q", e.Error())
	}
}

// The executor's rules, written once, name the options of the workload
// that declares the roles.
func TestExecRules(t *testing.T) {
	set := Set{
		{Name: "vusers", Kind: KindInt, Default: "1", Role: RoleWorkers},
		{Name: "threads", Kind: KindInt, Role: RoleThreads},
		{Name: "duration", Kind: KindDuration, Default: "2m", Role: RoleDuration},
		{Name: "iterations", Kind: KindInt, Role: RoleCount},
		{Name: "rate", Kind: KindFloat, Role: RoleRate},
		{Name: "latency_limit", Kind: KindDuration, Role: RoleLatencyLimit},
		{Name: "timer_slack", Kind: KindDuration, Default: "25µs", Role: RoleTimerSlack},
	}
	given := func(names ...string) Given {
		return func(n string) bool {
			for _, g := range names {
				if g == n {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		v     Values
		given Given
		want  string // in the flag spelling; "" = valid
	}{
		{Values{"duration": "2m"}, nil, ""},
		{Values{"duration": "2m", "iterations": "5"}, given("duration", "iterations"), "--duration and --iterations both given"},
		{Values{"duration": "2m", "iterations": "5"}, nil, ""}, // a count replaces the default duration
		{Values{"duration": "0", "iterations": "0"}, nil, "nothing to run"},
		{Values{"duration": "0", "iterations": "5", "rate": "10"}, nil, ""}, // a count at a rate, as pgbench -t with -R
		{Values{"duration": "1m", "latency_limit": "5ms"}, nil, "--latency-limit without --rate"},
		{Values{"duration": "1m", "vusers": "4", "threads": "2", "rate": "10"}, nil, ""}, // the open loop is multiplexed too
		{Values{"duration": "1m", "timer_slack": "5µs"}, given("timer_slack"), "--timer-slack without --rate"},
		{Values{"duration": "1m", "timer_slack": "25µs"}, nil, ""},                                // the default, with a closed loop
		{Values{"duration": "1m", "timer_slack": "5µs"}, nil, "--timer-slack without --rate"},     // an experiment's plan: not the default
		{Values{"duration": "1m", "timer_slack": "25µs"}, given("timer_slack"), "without --rate"}, // given, even as the default
		{Values{"duration": "1m", "timer_slack": "5µs", "rate": "10"}, given("timer_slack"), ""},
	}
	for _, c := range cases {
		err := ExecRules(set, c.v, c.given)
		got := ""
		if e, ok := As(err); ok {
			got, _ = e.Render(Flag)
		}
		if (c.want == "") != (err == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.v, got, c.want)
		}
	}
	x := ExecOf(set, Values{"duration": "2m", "iterations": "5", "vusers": "3"})
	if x.Duration != 0 || x.Count != 5 || x.Workers != 3 || x.MaxErrorsPct != 100 || x.TimerSlack != 0 {
		t.Errorf("ExecOf: %+v", x)
	}
	if x := ExecOf(set, Values{"duration": "2m", "rate": "10", "timer_slack": "5µs"}); x.TimerSlack != 5*time.Microsecond {
		t.Errorf("ExecOf: timer slack %v, want 5µs", x.TimerSlack)
	}
	if x := ExecOf(set, Values{"duration": "2m", "timer_slack": "25µs"}); x.TimerSlack != 0 {
		t.Errorf("ExecOf: timer slack %v in a closed loop, want none (not stored)", x.TimerSlack)
	}
}

func TestListsAndDefaults(t *testing.T) {
	o := Option{Name: "tests", Kind: KindList, Enum: []string{"a", "b"}}
	if v, err := o.CheckValue(" a, b "); err != nil || v != "a, b" {
		t.Errorf("list kept as written: %q %v", v, err)
	}
	if _, err := o.CheckValue("a,c"); err == nil || !strings.Contains(err.Error(), "one of a, b") {
		t.Errorf("list enum: %v", err)
	}
	s := Set{{Name: "dir", Kind: KindString}, {Name: "n", Kind: KindInt, Default: "3"}}
	v := s.Complete(Values{})
	if err := s.Check(v); err != nil || v["n"] != "3" || v["dir"] != "" {
		t.Errorf("an empty default is left open: %v %v", v, err)
	}
	if err := s.Check(Values{"dir": ""}); err != nil {
		t.Errorf("empty dir: %v", err)
	}
}

// TestDurationFlag: a duration flag takes what a duration option takes,
// refuses a bare number with the value written with a unit (only where
// that is a duration: not 1e3, not a negative number), and a negative
// duration.
func TestDurationFlag(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		errPart string
	}{
		{"5s", 5 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"0", 0, ""},
		{"5", 0, "like 5s, not a bare number"},
		{"0.5", 0, "like 0.5s, not a bare number"},
		{"1e3", 0, "must be a duration like 5s"},
		{"-5", 0, "must be a duration like 5s"},
		{"-5s", 0, "must not be negative"},
		{"often", 0, "must be a duration like 5s"},
	} {
		d := time.Minute
		err := DurationFlag{P: &d}.Set(tc.in)
		switch {
		case tc.errPart == "" && (err != nil || d != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.in, d, err, tc.want)
		case tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart)):
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.errPart)
		case tc.errPart != "" && d != time.Minute:
			t.Errorf("%q: refused, yet the value changed to %v", tc.in, d)
		}
	}
	d := 3 * time.Second
	if f := (DurationFlag{P: &d}); f.String() != "3s" || f.Type() != "duration" {
		t.Errorf("String %q Type %q", f.String(), f.Type())
	}
}

// TestSecondsFlag: --progress takes a bare number as seconds (pgbench's
// -P 5), and durations as the other flags do.
func TestSecondsFlag(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		errPart string
	}{
		{"5", 5 * time.Second, ""},
		{"0.5", 500 * time.Millisecond, ""},
		{"0", 0, ""},
		{"2s", 2 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"-5", 0, "must not be negative"},
		{"often", 0, "must be a duration like 5s"},
	} {
		d := time.Minute
		err := SecondsFlag{P: &d}.Set(tc.in)
		switch {
		case tc.errPart == "" && (err != nil || d != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.in, d, err, tc.want)
		case tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart)):
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.errPart)
		}
	}
}
