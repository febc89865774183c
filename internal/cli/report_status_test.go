package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

// reportStoreWithErrors is reportStore with run 11: a third repetition of
// work_mem=64MB at 4 clients that lost its connections from 6 to 20 s and
// ended with status errors.
func reportStoreWithErrors(t *testing.T) string {
	t.Helper()
	path := reportStore(t)
	st := openStore(t, path)
	ctx := context.Background()
	e, err := st.GetExperiment(ctx, "exp")
	if err != nil {
		t.Fatal(err)
	}
	sum := `{"workload":"tpcb","script":"tpcb-like","status":"errors","clients":4,"tps":100,"duration_s":30,
"latency_ms":{"avg":1.5,"p50":1.4,"p90":2,"p95":2.2,"p99":2.8,"max":9},"errors":1234,"errors_pct":30,
"outages":[{"start_s":6,"end_s":20,"errors":1234}],"status_reasons":[{"code":"outage","detail":"outage of 14.0 s is over 5% of the window"}]}`
	var pts []store.Point
	for s := 1; s <= 30; s++ {
		v := 200.0
		if s > 6 && s <= 20 {
			v = 0
		}
		pts = append(pts, store.Point{Series: "tps", T: float64(s), V: v}, store.Point{Series: "latency_p95_ms", T: float64(s), V: 2.2})
	}
	r := &store.Run{Workload: "tpcb", Variant: "tpcb-like", Status: store.StatusErrors, Summary: json.RawMessage(sum), Experiment: "exp",
		StartedAt: time.Unix(1700002000, 0), EndedAt: time.Unix(1700002030, 0), Series: pts,
		Link: &store.PlanLink{ExperimentID: e.ID, PlanIndex: 10, Config: "work_mem=64MB", XName: "clients", XValue: 4, Repetition: 3}}
	id, err := st.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if id != 11 {
		t.Fatalf("the run with status errors is run %d, want 11", id)
	}
	return path
}

// Issue 16, items 8 and 10: `report` lists and draws the outage, marks the
// run with status errors and leaves it out of the medians unless
// --include-errors.
func TestReportCommandStatusErrors(t *testing.T) {
	h := newHarness(t)
	db := reportStoreWithErrors(t)
	r := h.must(0, "report", "exp", "-o", "-", "--results", db)
	for _, want := range []string{
		"outage 6.0–20.0 s (1,234 connection errors)",
		`<td class="status-bad">errors: outage of 14.0 s is over 5% of the window</td>`,
		"1 run with status errors for an outage, checks that could not run or no transactions is left out of the medians and comparisons; --include-errors keeps them.",
		// work_mem=64MB at 4 clients: the median of runs 7 and 8 only
		`<td class="num">4</td><td class="num">2</td><td class="num">4,872</td>`,
		"fill-opacity", ">outage<",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	r = h.must(0, "report", "exp", "-o", "-", "--results", db, "--include-errors")
	for _, want := range []string{
		"1 run with status errors for an outage, checks that could not run or no transactions is counted in the medians and comparisons (--include-errors).",
		`<td class="num">4</td><td class="num">3</td><td class="num">4,848</td>`,
		"outage 6.0–20.0 s (1,234 connection errors)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report --include-errors lacks %q", want)
		}
	}
}

func TestReportCompareCommandIncludeErrors(t *testing.T) {
	h := newHarness(t)
	db := reportStoreWithErrors(t)
	r := h.must(0, "compare", "3", "11", "--results", db)
	for _, want := range []string{
		"status errors: outage of 14.0 s is over 5% of the window",
		"B: outage 6.0–20.0 s (1,234 connection errors)",
		`B: "work_mem=64MB" at clients 4: 2 runs (7, 8)`,
		"left out for their status: run 11",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.must(0, "compare", "3", "11", "--results", db, "--include-errors")
	if !strings.Contains(r.stdout, `B: "work_mem=64MB" at clients 4: 3 runs (7, 8, 11)`) {
		t.Errorf("compare --include-errors:\n%s", r.stdout)
	}
}
