package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

// doubtStore holds experiment "doubt": tpcb, work_mem=4MB at 4 clients,
// four repetitions planned and stored: runs 1 and 2 ok (1000 and 1100
// tps), run 3 with status errors for an outage (100 tps: in doubt), run 4
// with status errors for transactions that ended in errors within the
// threshold (1200 tps: it counts).
func doubtStore(t *testing.T) string {
	t.Helper()
	path := tempPath(t, "doubt.db")
	st := openStore(t, path)
	ctx := context.Background()
	plan := `{"version":1,"name":"doubt","workload":"tpcb","metric":"tps","x_axis":"clients","x_values":[4],"repetitions":4,
"baseline":"work_mem=4MB","configurations":[{"index":0,"label":"work_mem=4MB"}],"runs":[
{"index":0,"config":0,"label":"work_mem=4MB","x":4,"repetition":1},{"index":1,"config":0,"label":"work_mem=4MB","x":4,"repetition":2},
{"index":2,"config":0,"label":"work_mem=4MB","x":4,"repetition":3},{"index":3,"config":0,"label":"work_mem=4MB","x":4,"repetition":4}]}`
	e := &store.Experiment{Name: "doubt", Spec: "name: doubt\n", Plan: json.RawMessage(plan), StartedAt: time.Unix(1700000000, 0)}
	if _, err := st.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct {
		status string
		tps    float64
		extra  string
	}{
		{store.StatusOK, 1000, ""},
		{store.StatusOK, 1100, ""},
		{store.StatusErrors, 100, `,"errors":1234,"errors_pct":30,"outages":[{"start_s":6,"end_s":20,"errors":1234}],
"status_reasons":[{"code":"outage","detail":"outage of 14.0 s is over 5% of the window"}]`},
		{store.StatusErrors, 1200, `,"errors":3,"errors_pct":0.01,"status_reasons":[{"code":"errors","detail":"3 transactions ended in errors"}]`},
	} {
		sum := fmt.Sprintf(`{"workload":"tpcb","script":"tpcb-like","status":%q,"clients":4,"tps":%g,"duration_s":30,
"latency_ms":{"avg":1.5,"p50":1.4,"p90":2,"p95":2.2,"p99":2.8,"max":9}%s}`, r.status, r.tps, r.extra)
		run := &store.Run{Workload: "tpcb", Variant: "tpcb-like", Status: r.status, Summary: json.RawMessage(sum), Experiment: "doubt",
			StartedAt: time.Unix(1700000000+int64(i)*60, 0), EndedAt: time.Unix(1700000030+int64(i)*60, 0),
			Link: &store.PlanLink{ExperimentID: e.ID, PlanIndex: i, Config: "work_mem=4MB", XName: "clients", XValue: 4, Repetition: i + 1}}
		if _, err := st.SaveRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetExperimentStatus(ctx, e.ID, store.ExpDone, time.Unix(1700001000, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// `experiment show` counts the runs as the report does: the run in doubt
// (status errors for an outage) is left out of the median and named, the
// run with errors within the threshold counts; --include-errors counts
// both. `experiment list` still shows every stored run as done.
func TestExperimentShowInDoubt(t *testing.T) {
	h := newHarness(t)
	db := doubtStore(t)
	row := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "work_mem=4MB") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no row of work_mem=4MB:\n%s", out)
		return ""
	}

	r := h.must(0, "experiment", "show", "doubt", "--results", db)
	if got, want := row(r.stdout), "work_mem=4MB 4 3/4 1100.0 1000.0 1200.0"; got != want {
		t.Errorf("experiment show row %q, want %q:\n%s", got, want, r.stdout)
	}
	for _, want := range []string{
		"1 run with status errors for an outage, checks that could not run or no transactions is left out of the medians (--include-errors counts it):",
		"  run 3 (work_mem=4MB, clients 4, repetition 3): status errors: outage of 14.0 s is over 5% of the window",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("experiment show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "run 4 (") {
		t.Errorf("experiment show names run 4, whose errors are within the threshold:\n%s", r.stdout)
	}

	r = h.must(0, "experiment", "show", "doubt", "--results", db, "--include-errors")
	if got, want := row(r.stdout), "work_mem=4MB 4 4/4 1050.0 100.0 1200.0"; got != want {
		t.Errorf("experiment show --include-errors row %q, want %q:\n%s", got, want, r.stdout)
	}
	if want := "1 run with status errors for an outage, checks that could not run or no transactions is counted in the medians (--include-errors):"; !strings.Contains(r.stdout, want) {
		t.Errorf("experiment show --include-errors lacks %q:\n%s", want, r.stdout)
	}

	// The report counts the same runs.
	r = h.must(0, "report", "doubt", "-o", "-", "--results", db)
	if want := `<td class="num">4</td><td class="num">3</td><td class="num">1,100</td>`; !strings.Contains(r.stdout, want) {
		t.Errorf("report lacks %q", want)
	}
	r = h.must(0, "report", "doubt", "-o", "-", "--results", db, "--include-errors")
	if want := `<td class="num">4</td><td class="num">4</td><td class="num">1,050</td>`; !strings.Contains(r.stdout, want) {
		t.Errorf("report --include-errors lacks %q", want)
	}

	// Every stored run is done for the progress (and for --resume).
	if r := h.must(0, "experiment", "list", "--results", db); !strings.Contains(r.stdout, "4/4") {
		t.Errorf("experiment list:\n%s", r.stdout)
	}
}
