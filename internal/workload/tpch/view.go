package tpch

import (
	"fmt"
	"math"
	"sort"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload/tpch/qgen"
)

// Summary is what a tpch run adds to the summary (docs/tpch.md).
type Summary struct {
	Scale   float64 `json:"scale_factor"`
	Test    string  `json:"test"` // power, throughput, full or validate
	Streams int     `json:"streams"`
	// StreamsOfRun is a shard's whole run's streams (it ran Streams of
	// them); 0 for a whole run.
	StreamsOfRun int   `json:"streams_of_run,omitempty"`
	Seed         int64 `json:"seed"`
	Refresh      bool  `json:"refresh"`
	// The metrics (clause 5.4), when the tests they need completed: Power
	// needs the power test with its refresh functions, Throughput the
	// throughput test, QphH both. They are TPC-H-like, not audited.
	Power             float64 `json:"power,omitempty"`
	Throughput        float64 `json:"throughput,omitempty"`
	QphH              float64 `json:"qphh,omitempty"`
	PowerSeconds      float64 `json:"power_s,omitempty"`
	ThroughputSeconds float64 `json:"throughput_s,omitempty"`
	// GeoMean is the geometric mean of the power test's 22 query times and
	// GeoMeanSlowest that of the slowest throughput stream, as HammerDB
	// reports them.
	GeoMean        float64      `json:"geomean_s,omitempty"`
	GeoMeanSlowest float64      `json:"geomean_slowest_stream_s,omitempty"`
	Queries        []QueryRun   `json:"queries"`
	Refreshes      []RefreshRun `json:"refreshes,omitempty"`
	Validation     []QueryCheck `json:"validation,omitempty"`
	Plans          []Plan       `json:"plans,omitempty"`
	Failed         int          `json:"failed_answers,omitempty"`
	// Settings are the server settings the run applied (--set, or an
	// experiment's configuration), as the executor's runs record them.
	Settings map[string]string `json:"settings_applied,omitempty"`
	Errors   int               `json:"query_errors"`
	TimedOut int               `json:"timed_out"`
}

// fill derives the counts and the metrics from the executions.
func (x *Summary) fill(res *result) {
	x.Queries = append([]QueryRun(nil), res.queries...)
	x.Refreshes, x.Validation, x.Plans = res.refresh, res.checks, res.plans
	x.tally()
}

// tally counts the failures of the executions and derives the metrics.
func (x *Summary) tally() {
	sort.SliceStable(x.Queries, func(i, j int) bool { return x.Queries[i].Stream < x.Queries[j].Stream })
	x.Errors, x.TimedOut, x.Failed = 0, 0, 0
	for _, q := range x.Queries {
		switch q.Status {
		case statusError:
			x.Errors++
		case statusTimeout:
			x.TimedOut++
		}
	}
	for _, rr := range x.Refreshes {
		if rr.Error != "" {
			x.Errors++
		}
	}
	for _, c := range x.Validation {
		if c.Compared && !c.Passed {
			x.Failed++
		}
	}
	// A metric only comes from a test whose every query and refresh
	// completed.
	if x.Test == "validate" || x.Errors+x.TimedOut > 0 {
		return
	}
	byStream := map[int][]float64{}
	complete := map[int]bool{}
	for _, q := range x.Queries {
		if q.Status == statusOK {
			byStream[q.Stream] = append(byStream[q.Stream], q.Seconds)
		}
	}
	for s, t := range byStream {
		complete[s] = len(t) == 22
	}
	if x.Test != TestThroughput && complete[0] {
		x.GeoMean = qgen.GeoMean(byStream[0])
		var ri [2]float64
		n := 0
		for _, rr := range x.Refreshes {
			if rr.Stream == 0 && rr.Error == "" && n < 2 {
				ri[n] = rr.Seconds
				n++
			}
		}
		if x.Refresh && n == 2 {
			var qi [22]float64
			for _, q := range x.Queries {
				if q.Stream == 0 {
					qi[q.Query-1] = q.Seconds
				}
			}
			x.Power = qgen.Power(x.Scale, qi, ri)
		}
	}
	if x.Test != TestPower {
		all := x.ThroughputSeconds > 0
		for s := 1; s <= x.Streams; s++ {
			all = all && complete[s]
			if complete[s] {
				x.GeoMeanSlowest = math.Max(x.GeoMeanSlowest, qgen.GeoMean(byStream[s]))
			}
		}
		if all {
			x.Throughput = qgen.Throughput(x.Scale, x.Streams, x.ThroughputSeconds)
		}
	}
	if x.Power > 0 && x.Throughput > 0 {
		x.QphH = qgen.QphH(x.Power, x.Throughput)
	}
}

// Metric is the headline: QphH-like after a full test, Power@Size after a
// power test, Throughput@Size after a throughput test (none when the test
// did not complete); and "geomean_s".
func (x *Summary) Metric(name string) (float64, bool) {
	switch name {
	case "qphh":
		v := map[string]float64{TestFull: x.QphH, TestPower: x.Power, TestThroughput: x.Throughput}[x.Test]
		if v > 0 {
			return v, true
		}
	case "geomean_s":
		if x.GeoMean > 0 {
			return x.GeoMean, true
		}
	}
	return 0, false
}

// RecordSettings stores the settings the run applied (the lifecycle calls
// it for runs that measure themselves).
func (x *Summary) RecordSettings(s map[string]string) { x.Settings = s }

// NewExtra returns an empty summary to decode into.
func (Workload) NewExtra() results.Extra { return &Summary{} }

func extraOf(s *results.Summary) *Summary { return results.ExtraAs[Summary](s) }

// Brief is a run's one-line result.
func (Workload) Brief(s *results.Summary) string {
	x := extraOf(s)
	if x.Test == "validate" {
		return fmt.Sprintf("validation at SF %g: %d of %d answers match", x.Scale, len(x.Validation)-x.Failed, len(x.Validation))
	}
	out := fmt.Sprintf("SF %g %s", x.Scale, x.Test)
	if x.QphH > 0 {
		out += fmt.Sprintf(", QphH-like %.1f", x.QphH)
	}
	if x.Power > 0 {
		out += fmt.Sprintf(", power %.1f", x.Power)
	}
	if x.Throughput > 0 {
		out += fmt.Sprintf(", throughput %.1f (%d streams)", x.Throughput, x.Streams)
	}
	if x.GeoMean > 0 {
		out += fmt.Sprintf(", geomean %.3f s", x.GeoMean)
	}
	if x.Errors+x.TimedOut > 0 {
		out += fmt.Sprintf(", %d errors, %d timed out", x.Errors, x.TimedOut)
	}
	return out
}

// Show is the terminal view of a run.
func (w Workload) Show(s *results.Summary) []results.Block {
	x := extraOf(s)
	out := []results.Block{results.Line(w.Brief(s))}
	if x.Test == "validate" {
		return append(out, results.TableBlock(validationTable(x)))
	}
	out = append(out, results.TableBlock(queryTable(x)))
	if len(x.Refreshes) > 0 {
		tb := &results.Table{Columns: []string{"refresh", "stream", "set", "seconds", "orders", "lineitems"}}
		for _, r := range x.Refreshes {
			tb.Rows = append(tb.Rows, []string{r.Function, streamName(r.Stream), fmt.Sprint(r.Set), fmt.Sprintf("%.2f", r.Seconds), fmt.Sprint(r.Orders), fmt.Sprint(r.Lines)})
		}
		out = append(out, results.TableBlock(tb))
	}
	m := &results.Table{Columns: []string{"metric", "value"}}
	add := func(name string, v float64, format string) {
		if v > 0 {
			m.Rows = append(m.Rows, []string{name, fmt.Sprintf(format, v)})
		}
	}
	add("Power@Size (TPC-H-like)", x.Power, "%.1f")
	add("Throughput@Size (TPC-H-like)", x.Throughput, "%.1f")
	add("QphH-like@Size (not an audited result)", x.QphH, "%.1f")
	add("power test, seconds", x.PowerSeconds, "%.2f")
	add("throughput test Ts, seconds", x.ThroughputSeconds, "%.2f")
	add("geometric mean of the power queries, s (HammerDB)", x.GeoMean, "%.4f")
	add("geometric mean of the slowest stream, s (HammerDB)", x.GeoMeanSlowest, "%.4f")
	if len(m.Rows) > 0 {
		out = append(out, results.TableBlock(m))
	}
	return out
}

// validationTable has a row per query of a validation: its answer,
// compared with the reference or not, its rows, time and difference.
func validationTable(x *Summary) *results.Table {
	tb := &results.Table{Columns: []string{"query", "answer", "rows", "seconds", "detail"}}
	for _, c := range x.Validation {
		a := "matches"
		switch {
		case !c.Compared:
			a = "not compared"
		case !c.Passed:
			a = "DIFFERS"
		}
		tb.Row(queryOp(c.Query), a, fmt.Sprint(c.Rows), fmt.Sprintf("%.2f", c.Seconds), c.Detail)
	}
	return tb
}

// queryTable has a row per query: its power-test time and the throughput
// streams' (min, median, max), with the rows of the power test.
func queryTable(x *Summary) *results.Table {
	tb := &results.Table{Columns: []string{"query", "power s", "rows", "streams min s", "median s", "max s", "status"}}
	for q := 1; q <= 22; q++ {
		var power, rows string
		var ts []float64
		status := "not run"
		for _, r := range x.Queries {
			if r.Query != q {
				continue
			}
			if status == "not run" || r.Status != statusOK {
				status = r.Status
			}
			if r.Stream == 0 {
				power, rows = fmt.Sprintf("%.3f", r.Seconds), fmt.Sprint(r.Rows)
			} else if r.Status == statusOK {
				ts = append(ts, r.Seconds)
			}
		}
		row := []string{queryOp(q), power, rows, "", "", "", status}
		if len(ts) > 0 {
			sort.Float64s(ts)
			row[3], row[4], row[5] = fmt.Sprintf("%.3f", ts[0]), fmt.Sprintf("%.3f", ts[len(ts)/2]), fmt.Sprintf("%.3f", ts[len(ts)-1])
		}
		tb.Rows = append(tb.Rows, row)
	}
	return tb
}
