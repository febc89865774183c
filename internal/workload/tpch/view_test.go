package tpch

import (
	"encoding/json"
	"testing"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload"
)

// A stored summary decodes back into the workload's type: its keys must not
// collide with the executor's (scale is an integer there).
func TestSummaryRoundTrip(t *testing.T) {
	x := &Summary{Scale: 0.01, Test: TestFull, Streams: 2, Seed: 3, Power: 10, Throughput: 40, QphH: 20, Errors: 1,
		Queries: []QueryRun{{Stream: 0, Query: 1, Seconds: 0.5, Status: statusOK}}}
	b, err := json.Marshal(&results.Summary{SchemaVersion: results.SchemaVersion, Workload: "tpch", Status: "ok", Extra: x})
	if err != nil {
		t.Fatal(err)
	}
	s, err := results.Decode(b, workload.NewRegistry(New()).Extras())
	if err != nil {
		t.Fatal(err)
	}
	got := extraOf(s)
	if got.Scale != 0.01 || got.QphH != 20 || got.Errors != 1 || len(got.Queries) != 1 || s.Measured != nil {
		t.Fatalf("decoded %+v (measured %v)", got, s.Measured)
	}
	if v, ok := s.Metric("qphh"); !ok || v != 20 {
		t.Errorf("metric qphh = %v %v", v, ok)
	}
}

// The metrics: Power from the power test's 22 queries and 2 refreshes,
// Throughput from the streams' Ts, QphH from both; none from a run with a
// failed or timed-out query.
func TestSummaryFill(t *testing.T) {
	res := &result{}
	for q := 1; q <= 22; q++ {
		res.queries = append(res.queries, QueryRun{Stream: 0, Query: q, Seconds: 2, Status: statusOK})
		for s := 1; s <= 2; s++ {
			res.queries = append(res.queries, QueryRun{Stream: s, Query: q, Seconds: float64(s), Status: statusOK})
		}
	}
	res.refresh = []RefreshRun{{Function: "RF1", Seconds: 2}, {Function: "RF2", Seconds: 2}}
	x := &Summary{Scale: 1, Test: TestFull, Streams: 2, Refresh: true, ThroughputSeconds: 88}
	x.fill(res)
	// Power: 3600 / 2 = 1800; Throughput: 2 * 22 * 3600 / 88 = 1800.
	if x.Power != 1800 || x.Throughput != 1800 || x.QphH != 1800 || x.GeoMean != 2 || x.GeoMeanSlowest != 2 {
		t.Fatalf("power %v throughput %v qphh %v geomean %v slowest %v", x.Power, x.Throughput, x.QphH, x.GeoMean, x.GeoMeanSlowest)
	}
	res.queries[0].Status = statusTimeout
	y := &Summary{Scale: 1, Test: TestFull, Streams: 2, Refresh: true, ThroughputSeconds: 88}
	y.fill(res)
	if y.Power != 0 || y.QphH != 0 || y.Throughput != 0 || y.TimedOut != 1 {
		t.Fatalf("with a timed-out power query: power %v qphh %v throughput %v timed out %d", y.Power, y.QphH, y.Throughput, y.TimedOut)
	}
	if _, ok := y.Metric("qphh"); ok {
		t.Error("a run with a timed-out query has a headline metric")
	}
	// A full test's headline is QphH-like only; a power test's is Power@Size.
	z := &Summary{Test: TestFull, Power: 5}
	if _, ok := z.Metric("qphh"); ok {
		t.Error("a full test without QphH has a headline metric")
	}
	z.Test = TestPower
	if v, ok := z.Metric("qphh"); !ok || v != 5 {
		t.Errorf("power test headline %v %v, want Power@Size", v, ok)
	}
}
