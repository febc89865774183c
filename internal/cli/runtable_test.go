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

// tpccStore is a store with a TPC-C-like experiment of two runs.
func tpccStore(t *testing.T) string {
	t.Helper()
	path := tempPath(t, "tpcc.db")
	st := openStore(t, path)
	ctx := context.Background()
	plan := `{"version":1,"name":"vu","workload":"tpcc","metric":"nopm","x_axis":"vusers","x_values":[2,4],
"repetitions":1,"configurations":[{"label":"shared_buffers=128MB"}]}`
	e := &store.Experiment{Name: "vu", Spec: "name: vu\n", Plan: json.RawMessage(plan), StartedAt: time.Unix(1700000000, 0)}
	if _, err := st.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	for i, vu := range []int{2, 4} {
		sum := fmt.Sprintf(`{"workload":"tpcc","script":"procs","status":"ok","clients":%d,"tps":%d,"vusers":%d,"warehouses":2,"mode":"procs","nopm":%d,"tpm":%d,
"latency_ms":{"avg":1.5,"p50":1.4,"p90":2,"p95":2.2,"p99":2.8,"max":9},"errors":0}`, vu, 1000*vu, vu, 30000*vu, 70000*vu)
		r := &store.Run{Workload: "tpcc", Variant: "procs", Status: store.StatusOK, Summary: json.RawMessage(sum), Experiment: "vu",
			StartedAt: time.Unix(1700000000+int64(i)*60, 0), EndedAt: time.Unix(1700000030+int64(i)*60, 0),
			Link: &store.PlanLink{ExperimentID: e.ID, PlanIndex: i, Config: "shared_buffers=128MB", XName: "vusers", XValue: float64(vu), Repetition: 1}}
		if _, err := st.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// Every run in the workload's own columns (issue 16, item 15: the
// quickstart printed the TPC-C-like runs as script "procs", clients, tps).
func TestExperimentRunTablePerWorkload(t *testing.T) {
	h := newHarness(t)
	r := h.must(0, "experiment", "show", "vu", "--runs", "--results", tpccStore(t))
	runs := r.stdout[strings.Index(r.stdout, "every run"):]
	for _, want := range []string{"NOPM (New-Orders per minute)", "vusers", "NOPM", "120000", "60000", "2.200"} {
		if !strings.Contains(runs, want) {
			t.Errorf("tpcc runs table lacks %q:\n%s", want, runs)
		}
	}
	if strings.Contains(runs, "script") || strings.Contains(runs, "tps") || strings.Contains(runs, "procs") {
		t.Errorf("tpcc runs shown with the TPC-B-like columns:\n%s", runs)
	}
	// tpcb keeps the executor's columns.
	r = h.must(0, "experiment", "show", "exp", "--runs", "--results", reportStore(t))
	if runs := r.stdout[strings.Index(r.stdout, "every run"):]; !strings.Contains(runs, "script") || !strings.Contains(runs, "tpcb-like") || !strings.Contains(runs, "tps") {
		t.Errorf("tpcb runs table:\n%s", runs)
	}
}
