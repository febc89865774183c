package results

import (
	"encoding/json"
	"testing"
)

// The outages' time in the window is their union, clipped to the window:
// overlapping windows count once, a window inside another adds nothing.
func TestOutageSeconds(t *testing.T) {
	os := []Outage{{StartS: -2, EndS: 1}, {StartS: 3, EndS: 5}, {StartS: 4, EndS: 6}, {StartS: 4.5, EndS: 5.5},
		{StartS: 7, EndS: 7}, {StartS: 9, EndS: 30}}
	for _, c := range []struct {
		name   string
		os     []Outage
		window float64
		want   float64
	}{
		{"clipped union", os, 10, 1 + 3 + 1},
		{"unknown window: the union", os, 0, 3 + 3 + 21},
		{"nested", []Outage{{StartS: 2, EndS: 10}, {StartS: 3, EndS: 4}, {StartS: 9, EndS: 12}}, 20, 10},
		{"outside the window", []Outage{{StartS: 12, EndS: 14}, {StartS: -5, EndS: -1}}, 10, 0},
		{"none", nil, 10, 0},
	} {
		if got := OutageSeconds(c.os, c.window); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A run is in doubt when its status is errors and a reason is an outage or
// a check that could not run; errors within or over the threshold alone,
// other statuses and runs stored without reasons are not.
func TestInDoubt(t *testing.T) {
	for _, c := range []struct {
		status, summary string
		want            bool
	}{
		{"errors", `{"status":"errors","status_reasons":[{"code":"errors","detail":"3 transactions"},{"code":"outage","detail":"14 s"}]}`, true},
		{"errors", `{"status":"errors","status_reasons":[{"code":"not_checked","detail":"no connection"}]}`, true},
		{"errors", `{"status":"errors","status_reasons":[{"code":"errors","detail":"3 transactions"}]}`, false},
		{"errors", `{"status":"errors","status_reasons":[{"code":"errors_over_threshold","detail":"30%"}]}`, false},
		{"errors", `{"status":"errors","errors":12}`, false},                                    // stored before the reasons
		{"errors", `{"status":"errors","status_reasons":["the server went away"]}`, false},      // a plain string has no code
		{"interrupted", `{"status":"interrupted","status_reasons":[{"code":"outage"}]}`, false}, // not status errors
		{"errors", `not json`, false},
	} {
		got := len(StoredDoubts(c.status, json.RawMessage(c.summary))) > 0
		if got != c.want {
			t.Errorf("StoredDoubts(%s, %s): in doubt %v, want %v", c.status, c.summary, got, c.want)
		}
		var s Summary
		if json.Unmarshal([]byte(c.summary), &s) != nil || s.Status != c.status {
			continue // the typed summary cannot read a plain-string reason or bad JSON
		}
		if s.InDoubt() != c.want {
			t.Errorf("(%s).InDoubt() = %v, want %v", c.summary, s.InDoubt(), c.want)
		}
	}
}
