package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload/all"
)

// statusErrorsReport builds the fixture's report with the run of status
// errors added.
func statusErrorsReport(t *testing.T, includeErrors bool) (*Report, string) {
	t.Helper()
	st := openTempStore(t)
	buildFixture(t, st)
	addStatusErrorsRun(t, st)
	r, err := Build(context.Background(), st, Options{Experiment: "sweep", IncludeErrors: includeErrors,
		Now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Version: "test", Registry: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	return r, buf.String()
}

// outageFill is how the SVG of a chart fills an outage window.
const outageFill = "fill:#BF1616;fill-opacity:"

func tputRowAt(t *testing.T, r *Report, config, x string) tputRow {
	t.Helper()
	for _, row := range findGroup(t, r, "nopm").Rows {
		if row.Config == config && row.X == x {
			return row
		}
	}
	t.Fatalf("no throughput row for %s at %s", config, x)
	return tputRow{}
}

// Issue 16, items 8 and 10: a run with status errors is marked and left out
// of the medians and comparisons, its outage is listed in the run table and
// shaded on every one of its time-series charts.
func TestReportStatusErrorsLeftOutWithOutages(t *testing.T) {
	r, html := statusErrorsReport(t, false)

	row := tputRowAt(t, r, fixtureConfigs[1], "8")
	if row.N != 3 || row.Median != fmtNum(fixtureNOPM(1, 8, 2)) || strings.Contains(row.Runs, strconv.Itoa(errorsRunID)) {
		t.Errorf("the run with status errors counts in the median: %+v", row)
	}
	if row.Flagged != "22 errors, left out" {
		t.Errorf("throughput row marks %q", row.Flagged)
	}
	// A run with status errors for a few failed transactions counts, marked.
	if row := tputRowAt(t, r, fixtureConfigs[0], "4"); row.N != 4 || row.Median != fmtNum(fixtureNOPM(0, 4, 2)) || row.Flagged != "23 errors" {
		t.Errorf("the run with a few errors: %+v", row)
	}
	for _, c := range findGroup(t, r, "nopm").Compare {
		if c.X == "8" && c.NThis != 3 {
			t.Errorf("comparison at 8 vusers over %d runs of 1GB, want 3", c.NThis)
		}
	}
	for _, want := range []string{
		// the run table: status with its reason, the outage, why it does not count
		`<td class="status-bad">errors: ` + errorsReason + `</td>`,
		`<span class="outage">outage 6.0–20.0 s (1,234 connection errors)</span>`,
		"no: status errors: " + errorsReason + " (--include-errors counts it)",
		// the note, at the top and in the throughput section
		"1 run with status errors for an outage, checks that could not run or no transactions is left out of the medians and comparisons; --include-errors keeps them.",
		// the throughput chart's legend
		"run whose status is not ok, left out", "run whose status is not ok, counted",
		`<td class="status-bad">errors: ` + benignReason + `</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	found := false
	for _, ex := range r.Excluded {
		found = found || strings.HasPrefix(ex, "run 22 (") && strings.Contains(ex, errorsReason)
	}
	if !found {
		t.Errorf("run 22 is not among the runs left out: %q", r.Excluded)
	}

	// Its time series are drawn though it does not count, with the outage
	// on every chart; no other run has one (run 23 is drawn without).
	var rc *runCharts
	for i := range r.Series {
		s := &r.Series[i]
		if s.Run.Run.ID == errorsRunID {
			rc = s
			continue
		}
		for _, c := range s.Charts {
			if strings.Contains(string(c.SVG), outageFill) {
				t.Errorf("run %d, %s: an outage drawn for a run without one", s.Run.Run.ID, c.Title)
			}
		}
	}
	if rc == nil {
		t.Fatal("the run with status errors has no time series in the report")
	}
	if len(rc.Charts) < 10 {
		t.Errorf("run 22 has %d charts", len(rc.Charts))
	}
	for _, c := range rc.Charts {
		svg := string(c.SVG)
		// the band, the legend's sample and the legend entry
		if strings.Count(svg, outageFill) != 2 || !strings.Contains(svg, ">outage<") {
			t.Errorf("run 22, %s: no outage band", c.Title)
		}
	}
	if !strings.Contains(rc.Status, "status errors: "+errorsReason) || len(rc.Outages) != 1 {
		t.Errorf("time-series heading: %q %q", rc.Status, rc.Outages)
	}

	if dir := os.Getenv("TUNEBENCH_REPORT_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "status-errors.html"), []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// With IncludeErrors the run with status errors counts, and the report says
// so.
func TestReportIncludeErrors(t *testing.T) {
	r, html := statusErrorsReport(t, true)
	row := tputRowAt(t, r, fixtureConfigs[1], "8")
	want := Median([]float64{fixtureNOPM(1, 8, 1), fixtureNOPM(1, 8, 2), fixtureNOPM(1, 8, 3), fixtureNOPM(1, 8, 2) * 0.3})
	if row.N != 4 || row.Median != fmtNum(want) || !strings.Contains(row.Runs, "22") || row.Flagged != "22 errors" {
		t.Errorf("with --include-errors: %+v, want 4 runs with median %s", row, fmtNum(want))
	}
	for _, want := range []string{
		"1 run with status errors for an outage, checks that could not run or no transactions is counted in the medians and comparisons (--include-errors).",
		"run whose status is not ok, counted",
		`<td class="status-bad">errors: ` + errorsReason + `</td>`,
		`<span class="outage">outage 6.0–20.0 s (1,234 connection errors)</span>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "left out of the medians and comparisons;") {
		t.Error("the note says the run is left out")
	}
	// Interrupted runs never count.
	if row := tputRowAt(t, r, fixtureConfigs[1], "4"); row.N != 3 {
		t.Errorf("the interrupted run counts with --include-errors: %+v", row)
	}
}

// compare leaves the repetitions with status errors out unless asked, and
// shows a run's status and outages.
func TestReportCompareStatusErrors(t *testing.T) {
	st := openTempStore(t)
	buildFixture(t, st)
	addStatusErrorsRun(t, st)
	for _, include := range []bool{false, true} {
		c, err := CompareRuns(context.Background(), st, all.Registry(), 15, errorsRunID, CompareOptions{IncludeErrors: include})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := c.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		wants := []string{"B: run 22 (", "status errors: " + errorsReason, "B: outage 6.0–20.0 s (1,234 connection errors)"}
		if include {
			wants = append(wants, `B: "shared_buffers=1GB" at vusers 8: 4 runs (15-17, 22)`, "counted with status errors (--include-errors): runs 22")
		} else {
			wants = append(wants, `B: "shared_buffers=1GB" at vusers 8: 3 runs (15-17)`,
				"left out for their status: run 22 (errors: "+errorsReason+"); --include-errors counts the runs with status errors")
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("include %v: compare lacks %q:\n%s", include, want, out)
			}
		}
	}
}

// The outage windows are drawn on the series' own x axis: seconds since
// the measurement start. With the series from 0 to 100 s, a window of 25 to
// 75 s is half as wide as one of 0 to 100 s and has the same centre.
func TestOutageBandsOnTheSeriesTimeAxis(t *testing.T) {
	var pts []XY
	for s := 0; s <= 100; s++ {
		pts = append(pts, XY{float64(s), 50})
	}
	svg, err := throughputSeriesChart("t", pts, "tps", "tps", nil, []results.Outage{{StartS: 0, EndS: 100, Errors: 1}, {StartS: 25, EndS: 75, Errors: 1}})
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`<path d="M([0-9.]+),([0-9.]+)L([0-9.]+),[0-9.]+L[0-9.]+,([0-9.]+)L[0-9.]+,[0-9.]+Z" style="` + regexp.QuoteMeta(outageFill))
	m := re.FindAllStringSubmatch(string(svg), -1)
	if len(m) != 3 { // the two bands and the legend's sample
		t.Fatalf("%d outage fills drawn, want 3:\n%s", len(m), svg)
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	w0, w1 := f(m[0][3])-f(m[0][1]), f(m[1][3])-f(m[1][1])
	c0, c1 := (f(m[0][3])+f(m[0][1]))/2, (f(m[1][3])+f(m[1][1]))/2
	if d := w1/w0 - 0.5; d > 0.01 || d < -0.01 || c0-c1 > 0.5 || c1-c0 > 0.5 {
		t.Errorf("bands %v: widths %.1f and %.1f, centres %.1f and %.1f", m, w0, w1, c0, c1)
	}

	// Without outages, no band and no legend entry.
	svg, err = throughputSeriesChart("t", pts, "tps", "tps", nil, nil)
	if err != nil || strings.Contains(string(svg), outageFill) || strings.Contains(string(svg), ">outage<") {
		t.Errorf("a chart without outages has a band: %v", err)
	}
}

// At a single x value the throughput chart is horizontal bars; a run whose
// status is not ok is marked on its configuration's row.
func TestSingleXBarsMarkFlaggedRuns(t *testing.T) {
	g := &group{Metric: "tps", Label: "tps", XName: "clients", Configs: []*configLine{
		{Config: "a", Points: []*point{{X: 4, Values: []float64{10, 12}, Median: 11, Min: 10, Max: 12}}},
		{Config: "b", Color: 1, Points: []*point{{X: 4, Values: []float64{20}, Median: 20, Min: 20, Max: 20}}}},
		Flagged: []flaggedRun{{ID: 3, Config: "b", Color: 1, X: 4, Value: 2, Status: "errors"}}}
	svg, err := throughputChart(g)
	if err != nil || !strings.Contains(string(svg), "run whose status is not ok, left out") {
		t.Errorf("single x with a run left out: %v", err)
	}
	g.Flagged[0].Counted = true
	svg, err = throughputChart(g)
	if err != nil || !strings.Contains(string(svg), "run whose status is not ok, counted") {
		t.Errorf("single x with a run counted: %v", err)
	}
}

// The outage total the report shows is the one the status reason counts
// (results.OutageSeconds): overlapping windows once, clipped to the window.
func TestOutageTotalMergesOverlaps(t *testing.T) {
	rd := &runData{Sum: summaryFields{DurationS: 20, Outages: []results.Outage{
		{StartS: -1, EndS: 2}, {StartS: 5, EndS: 9}, {StartS: 7, EndS: 11}, {StartS: 18, EndS: 25}}}}
	if got, want := outageTotal(rd), "4 outages, 10.0 s (50.0% of the window)"; got != want {
		t.Errorf("outageTotal %q, want %q", got, want)
	}
}
