// Package results is the typed, versioned contract of a stored run: the
// summary that --json writes and the store keeps, written and read by the
// same types. Every run has the common fields (Summary); a run measured by
// the executor adds its figures (Measured); a workload adds its own fields
// through its own type (Extra), flattened into the same JSON object. The
// schema version is stored with every run (SchemaVersion); runs stored
// before it was recorded are version 1, whose JSON is read unchanged.
// docs/json-summary.md documents the fields.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion is the version of the summary schema this binary writes.
// Version 1: the summaries written before the version was recorded (the
// same fields, without schema_version). Version 2 adds schema_version and
// the headline metric of storage runs (iops).
const SchemaVersion = 2

// Summary is one run's summary.
type Summary struct {
	// SchemaVersion is the version of this schema the run was written with
	// (0 in a summary of version 1, which did not say).
	SchemaVersion int    `json:"schema_version,omitempty"`
	RunID         int64  `json:"run_id"`
	Workload      string `json:"workload"`
	Status        string `json:"status"`
	// StatusReasons say why the status is not ok (none when it is).
	StatusReasons []Reason  `json:"status_reasons,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at"`
	Interrupted   bool      `json:"interrupted"`
	// NotMeasured names what the run could not measure, and why
	// (NotMeasuredServerHost: WhyRemote for a server on another machine).
	NotMeasured map[string]string `json:"not_measured,omitempty"`
	// Hosts are the machines the run measured (the driver's, the
	// database server's host, its container): each one's source, series,
	// means and gaps.
	Hosts []Host `json:"hosts,omitempty"`
	// RunKey labels the run's live series (--listen: docs/live.md) from
	// its start, before it has a run id; empty without --listen.
	RunKey string `json:"run_key,omitempty"`
	// Shard says which part of a run split over several drivers this run
	// ran (--shard i/N); nil for a whole run.
	Shard *Shard `json:"shard,omitempty"`
	// Merge, on a run merged from shards (`tunebench results merge`), says
	// which shards it holds and how their windows met; nil otherwise.
	Merge *Merge `json:"merge,omitempty"`
	// Measured holds the executor's figures (nil for workloads that
	// measure themselves, like storage and fsblog).
	*Measured
	// Extra is the workload's own part (a pointer to a struct of its
	// package), flattened into the JSON object. Its keys must not repeat
	// the keys above.
	Extra Extra `json:"-"`
}

// Shard is the part of a split run a shard ran: its index (0-based) of
// Count, and which clients (or streams, terminals) were its.
type Shard struct {
	Index int    `json:"index"`
	Count int    `json:"count"`
	Part  string `json:"part"`
	// ClockOffsetMs is how far the database server's clock was ahead of
	// the shard's machine's (negative: behind), read over RoundTripMs
	// (its uncertainty is half of it): the merge puts every shard's times
	// on the server's clock with it.
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	RoundTripMs   float64 `json:"round_trip_ms"`
	// Rendezvous is the key under which the shards met in the database
	// (--rendezvous), and StartAt the start they agreed, on the server's
	// clock; empty without one.
	Rendezvous string    `json:"rendezvous,omitempty"`
	StartAt    time.Time `json:"start_at,omitzero"`
}

// NotMeasuredServerHost is the server host's CPU, memory, disks and
// processes; WhyRemote says why they are not measured.
const (
	NotMeasuredServerHost = "server_host"
	WhyRemote             = "not measured: remote server (the cpu, memory and network series are the driver's machine); " +
		"--host-metrics sql reads its /proc through the database (a superuser, or pg_read_server_files), " +
		"--host-metrics http://HOST:9100/metrics its node_exporter"
)

// Reason is one reason for a run's status: Code for programs, Detail for
// people (docs/json-summary.md lists the codes).
type Reason struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// The reason codes. Those of DoubtCodes leave the run's figures in doubt:
// the report marks such runs and keeps them out of its medians.
const (
	// ReasonCheckFailed: a check or cross-check failed (status failed, exit 5).
	ReasonCheckFailed = "check_failed"
	// ReasonAborted: a worker stopped the run with an error it could not
	// go on from (a script error; status failed, the error's exit code).
	ReasonAborted = "aborted"
	// ReasonInterrupted: the run was interrupted (status interrupted, exit 130).
	ReasonInterrupted = "interrupted"
	// ReasonOutage: outages covered more of the measured window than the
	// run's max_outage_pct (status errors, exit 4).
	ReasonOutage = "outage"
	// ReasonNotChecked: a check or cross-check after the run could not run
	// (status errors, exit 4).
	ReasonNotChecked = "not_checked"
	// ReasonErrorsOver: errors over the run's max_errors_pct (status
	// errors, exit 4).
	ReasonErrorsOver = "errors_over_threshold"
	// ReasonErrors: some transactions ended in errors, within
	// max_errors_pct (status errors, exit 0).
	ReasonErrors = "errors"
	// ReasonHostGap: a host metric source (the server's host, its
	// container) left more of the measured window without samples than
	// the run accepts (status errors, exit 0: the run's figures stand).
	ReasonHostGap = "host_metrics_gap"
	// ReasonShardMissing: a merged run lacks a shard's result (status
	// errors: its figures are the other shards').
	ReasonShardMissing = "shard_missing"
	// ReasonShardFailed: a shard of a merged run failed or was
	// interrupted (status errors; what it measured is merged).
	ReasonShardFailed = "shard_failed"
	// ReasonShardWindow: a shard's measured window does not cover the
	// shards' common window closely enough (status errors).
	ReasonShardWindow = "shard_window"
	// ReasonNoTransactions: the measured window passed without a
	// transaction ending (status errors, exit 4): there are no figures.
	ReasonNoTransactions = "no_transactions"
)

// DoubtCodes are the reason codes that put a run's figures in doubt.
var DoubtCodes = []string{ReasonOutage, ReasonNotChecked, ReasonShardMissing, ReasonShardFailed, ReasonShardWindow, ReasonNoTransactions}

// Doubts are the reasons of s that put its figures in doubt (DoubtCodes),
// whatever its status; InDoubt is the rule that uses them.
func (s *Summary) Doubts() []Reason { return Doubts(s.StatusReasons) }

// InDoubt reports whether s's figures are in doubt: status errors with a
// reason in DoubtCodes (InDoubt). Such runs are stored and complete an
// experiment's plan, but the report and `experiment show` leave them out of
// their medians unless --include-errors.
func (s *Summary) InDoubt() bool { return InDoubt(s.Status, s.StatusReasons) }

// Extra is a workload's part of the summary: a pointer to a struct whose
// JSON fields are added to the summary's object.
type Extra any

// ExtraAs is s's Extra as the workload's own type T, or a zero T when the
// summary holds none (a run that failed before it measured) or another type.
func ExtraAs[T any](s *Summary) *T {
	if x, ok := s.Extra.(*T); ok {
		return x
	}
	return new(T)
}

// Metricer is an Extra that can compute a headline metric that is not one
// of its stored fields.
type Metricer interface {
	Metric(name string) (float64, bool)
}

type summaryJSON Summary // without the methods

// MarshalJSON writes the common fields, the measured ones and the
// workload's own fields as one object.
func (s *Summary) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal((*summaryJSON)(s))
	if err != nil {
		return nil, err
	}
	if s.Extra == nil {
		return base, nil
	}
	extra, err := json.Marshal(s.Extra)
	if err != nil {
		return nil, err
	}
	if string(extra) == "null" { // a typed nil pointer: nothing to add
		return base, nil
	}
	return mergeObjects(base, extra)
}

// mergeObjects joins two JSON objects into one ({"a":1} + {"b":2}).
func mergeObjects(a, b []byte) ([]byte, error) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) < 2 || a[0] != '{' || len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("results: cannot merge %.20q and %.20q: not objects", a, b)
	}
	if len(b) == 2 {
		return a, nil
	}
	if len(a) == 2 {
		return b, nil
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	out = append(out, b[1:]...)
	return out, nil
}

// ExtraFunc returns a new, empty Extra for a workload's summaries (nil when
// the workload adds nothing), and whether the executor measures its runs
// (known false when the workload is unknown: its summary is then taken as
// measured when it has tps).
type ExtraFunc func(workload string) (x Extra, measured, known bool)

// Decode reads a stored or written summary of any schema version. The
// workload's fields are decoded into extras(workload) when that gives a
// type; the executor's figures when the summary has them.
func Decode(raw json.RawMessage, extras ExtraFunc) (*Summary, error) {
	var s Summary
	if err := json.Unmarshal(raw, (*summaryJSON)(&s)); err != nil {
		return nil, fmt.Errorf("results: decoding a run summary: %w", err)
	}
	var x Extra
	measured, known := false, false
	if extras != nil {
		x, measured, known = extras(s.Workload)
	}
	if !known {
		var probe struct {
			TPS *float64 `json:"tps"`
		}
		measured = json.Unmarshal(raw, &probe) == nil && probe.TPS != nil
	}
	if !measured {
		s.Measured = nil // fields of the same name in the workload's own part
	}
	if s.SchemaVersion == 0 {
		s.SchemaVersion = 1
	}
	if s.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("results: a summary of schema version %d, newer than the %d this tunebench knows (upgrade tunebench)", s.SchemaVersion, SchemaVersion)
	}
	if x != nil {
		if err := json.Unmarshal(raw, x); err != nil {
			return nil, fmt.Errorf("results: decoding the %s fields of a run summary: %w", s.Workload, err)
		}
		s.Extra = x
	}
	return &s, nil
}

// Metric returns a summary field by name (nested keys separated by dots:
// latency_ms.p95), or what the workload's Extra computes for it; ok is
// false when the summary has no such number.
func (s *Summary) Metric(name string) (float64, bool) {
	if m, ok := s.Extra.(Metricer); ok {
		if v, ok := m.Metric(name); ok {
			return v, true
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return 0, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return 0, false
	}
	return Number(m, name)
}

// Number returns m[key] as a number (nested keys separated by dots).
func Number(m map[string]any, key string) (float64, bool) {
	var cur any = m
	for _, k := range splitDots(key) {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = mm[k]
	}
	v, ok := cur.(float64)
	return v, ok
}

func splitDots(s string) []string {
	var out []string
	for {
		i := bytes.IndexByte([]byte(s), '.')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}
