package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/store"
)

// reportStore writes a small synthetic results store: experiment "exp" with
// two configurations x two client counts x two repetitions of tpcb runs
// (configuration "work_mem=64MB" is 20% faster), plus two runs outside any
// experiment. It returns the store path.
func reportStore(t *testing.T) string {
	t.Helper()
	path := tempPath(t, "results.db")
	st := openStore(t, path)
	ctx := context.Background()
	configs := []string{"work_mem=4MB", "work_mem=64MB"}
	plan := fmt.Sprintf(`{"version":1,"name":"exp","workload":"tpcb","metric":"tps","x_axis":"clients","x_values":[1,4],
"repetitions":2,"baseline":%q,"configurations":[{"label":%q},{"label":%q}]}`, configs[0], configs[0], configs[1])
	e := &store.Experiment{Name: "exp", Spec: "name: exp\n", Plan: json.RawMessage(plan), StartedAt: time.Unix(1700000000, 0)}
	if _, err := st.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	idx := 0
	save := func(link *store.PlanLink, clients int, tps float64) {
		h := metrics.NewHist()
		for i := range 500 {
			h.RecordMicros(int64(800 + i*3))
		}
		enc, err := metrics.Encode(h)
		if err != nil {
			t.Fatal(err)
		}
		sum := fmt.Sprintf(`{"workload":"tpcb","script":"tpcb-like","status":"ok","clients":%d,"tps":%g,
"latency_ms":{"avg":1.5,"p50":1.4,"p90":2,"p95":2.2,"p99":2.8,"max":9},"errors":0,"driver":{"cpu_s":1.2}}`, clients, tps)
		var pts []store.Point
		for s := 1; s <= 30; s++ {
			pts = append(pts, store.Point{Series: "tps", T: float64(s), V: tps + float64(s%3)},
				store.Point{Series: "latency_p95_ms", T: float64(s), V: 2.2},
				store.Point{Series: "sys.cpu_user_pct", T: float64(s), V: 40})
		}
		r := &store.Run{Workload: "tpcb", Variant: "tpcb-like", Status: store.StatusOK, Summary: json.RawMessage(sum),
			Env:       json.RawMessage(`{"host":{"hostname":"lab","cpu_model":"Test CPU","cpus":2,"mem_total_bytes":4294967296,"kernel":"6.1"},"driver":{}}`),
			StartedAt: time.Unix(1700000000+int64(idx)*60, 0), EndedAt: time.Unix(1700000030+int64(idx)*60, 0),
			Series: pts, Histograms: []store.Histogram{{Op: "tpcb-like", Class: "ok", Kind: store.KindLatency, Encoded: enc}}}
		if link != nil {
			r.Experiment = "exp"
			link.ExperimentID = e.ID
			link.PlanIndex = idx
			r.Link = link
		}
		if _, err := st.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		idx++
	}
	for ci, cfg := range configs {
		for _, x := range []int{1, 4} {
			for rep := 1; rep <= 2; rep++ {
				tps := 1000 * float64(x) * (1 + 0.2*float64(ci)) * (1 + 0.01*float64(rep))
				save(&store.PlanLink{Config: cfg, XName: "clients", XValue: float64(x), Repetition: rep}, x, tps)
			}
		}
	}
	save(nil, 4, 3000) // run 9
	save(nil, 4, 3300) // run 10
	if err := st.SetExperimentStatus(ctx, e.ID, store.ExpDone, time.Unix(1700001000, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportCommandExperiment(t *testing.T) {
	h := newHarness(t)
	db := reportStore(t)
	out := tempPath(t, "exp.html")
	r := h.must(0, "report", "exp", "-o", out, "--results", db)
	if !strings.Contains(r.stdout, "report: "+out) {
		t.Errorf("no confirmation:\n%s", r)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"Experiment exp", "tps vs clients", "work_mem=64MB", "Comparison with the baseline", "<svg ", "tpcb-like", "Test CPU"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("report file mode: %v %v", fi.Mode(), err)
	}

	// Another baseline from the command line.
	r = h.must(0, "report", "exp", "-o", "-", "--results", db, "--baseline", "work_mem=64MB")
	if !strings.Contains(r.stdout, "against baseline “work_mem=64MB”") {
		t.Errorf("--baseline not used")
	}
}

func TestReportCommandRunIDs(t *testing.T) {
	h := newHarness(t)
	db := reportStore(t)
	r := h.must(0, "report", "9", "10", "-o", "-", "--results", db)
	if !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.Contains(r.stdout, "Runs 9, 10") {
		t.Errorf("report of runs 9 and 10:\n%.400s", r.stdout)
	}
	// A single number that is not an experiment name is a run id.
	r = h.must(0, "report", "3", "-o", "-", "--results", db)
	if !strings.Contains(r.stdout, "Runs 3") || !strings.Contains(r.stdout, "work_mem=4MB") {
		t.Errorf("report of run 3 lacks its configuration")
	}
}

func TestReportCommandErrors(t *testing.T) {
	h := newHarness(t)
	db := reportStore(t)
	r := h.must(2, "report", "nope", "--results", db, "-o", tempPath(t, "x.html"))
	if !strings.Contains(r.stderr, `no experiment "nope"`) {
		t.Errorf("unknown experiment:\n%s", r)
	}
	r = h.must(2, "report", "exp", "--results", db, "--baseline", "work_mem=1MB", "-o", tempPath(t, "x.html"))
	if !strings.Contains(r.stderr, "work_mem=1MB") || !strings.Contains(r.stderr, `"work_mem=4MB"`) {
		t.Errorf("unknown baseline:\n%s", r)
	}
	h.must(2, "report", "1", "exp", "--results", db, "-o", tempPath(t, "x.html"))
	h.must(2, "report", "99", "--results", db, "-o", tempPath(t, "x.html"))
	// Without a name, the most recent experiment.
	r = h.must(0, "report", "--results", db, "-o", "-")
	if !strings.Contains(r.stdout, "Experiment exp") || !strings.Contains(r.stderr, "the most recent experiment, exp") {
		t.Errorf("report without arguments:\n%.300s\n%s", r.stdout, r.stderr)
	}
	empty := tempPath(t, "empty.db")
	h.must(0, "results", "list", "--results", empty)
	r = h.must(2, "report", "--results", empty, "-o", "-")
	if !strings.Contains(r.stderr, "holds no experiment") || !strings.Contains(r.stderr, "results list") {
		t.Errorf("report without arguments on a store without experiments:\n%s", r)
	}
	r = h.must(2, "report", "exp", "--results", db, "-o", "/nonexistent/dir/r.html")
	if !strings.Contains(r.stderr, "cannot write") {
		t.Errorf("unwritable output:\n%s", r)
	}
}
