package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// tpchSummaryJSON is the part of a tpch run's --json summary the tests read.
type tpchSummaryJSON struct {
	Workload   string  `json:"workload"`
	Status     string  `json:"status"`
	Test       string  `json:"test"`
	Scale      float64 `json:"scale_factor"`
	Streams    int     `json:"streams"`
	Seed       int64   `json:"seed"`
	Power      float64 `json:"power"`
	Throughput float64 `json:"throughput"`
	QphH       float64 `json:"qphh"`
	GeoMean    float64 `json:"geomean_s"`
	Queries    []struct {
		Stream int      `json:"stream"`
		Query  int      `json:"query"`
		Params []string `json:"params"`
		Status string   `json:"status"`
	} `json:"queries"`
	Refreshes []struct {
		Function string `json:"function"`
		Stream   int    `json:"stream"`
		Orders   int64  `json:"orders"`
		Error    string `json:"error"`
	} `json:"refreshes"`
	Validation []struct {
		Query  int    `json:"query"`
		Passed bool   `json:"passed"`
		Detail string `json:"detail"`
	} `json:"validation"`
	Plans []struct {
		Query int    `json:"query"`
		Shape string `json:"shape"`
	} `json:"plans"`
}

func readTPCH(t *testing.T, path string) tpchSummaryJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s tpchSummaryJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Load SF 0.01, validate the 22 answers, run the power test and a
// 2-stream throughput test, and check the data after the refresh
// functions; the same seed gives the same parameters.
func TestTPCHLoadValidateRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	conn := []string{"--server-dir", srv.Dir(), "-d", db}
	target := append(append([]string{}, conn...), "--results", tempPath(t, "results.db"))

	r := h.must(0, append([]string{"load", "tpch", "--scale", "0.01", "--jobs", "2"}, conn...)...)
	for _, want := range []string{"loaded tpch scale 0.01 with 2 jobs: 86805 rows", "generator CPU", "lineitem"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("load output lacks %q:\n%s", want, r)
		}
	}
	h.must(0, append([]string{"check", "tpch"}, conn...)...)

	js := tempPath(t, "validate.json")
	r = h.must(0, append([]string{"run", "tpch", "--validate", "--json", js}, target...)...)
	if !strings.Contains(r.stdout, "22 of 22 answers match") {
		t.Errorf("validation output:\n%s", r)
	}
	v := readTPCH(t, js)
	if len(v.Validation) != 22 || v.Status != "ok" {
		t.Fatalf("validation summary: %+v", v)
	}

	var runs [2]tpchSummaryJSON
	for i := range runs {
		js := tempPath(t, "full.json")
		r = h.must(0, append([]string{"run", "tpch", "--streams", "2", "--seed", "42", "--explain", "--json", js}, target...)...)
		for _, want := range []string{"QphH-like", "Power@Size", "Throughput@Size", "geometric mean"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("run output lacks %q:\n%s", want, r)
			}
		}
		runs[i] = readTPCH(t, js)
		s := runs[i]
		if s.Workload != "tpch" || s.Status != "ok" || s.Test != "full" || s.Streams != 2 || s.Seed != 42 {
			t.Fatalf("summary header %+v", s)
		}
		if s.Power <= 0 || s.Throughput <= 0 || s.QphH <= 0 || s.GeoMean <= 0 || len(s.Queries) != 66 || len(s.Refreshes) != 6 || len(s.Plans) != 22 {
			t.Fatalf("power %v throughput %v qphh %v geomean %v, %d queries, %d refreshes, %d plans",
				s.Power, s.Throughput, s.QphH, s.GeoMean, len(s.Queries), len(s.Refreshes), len(s.Plans))
		}
		h.must(0, append([]string{"check", "tpch"}, conn...)...)
	}
	// The same seed draws the same parameters for every stream, and the
	// streams differ from each other.
	params := func(s tpchSummaryJSON, stream int) map[int]string {
		m := map[int]string{}
		for _, q := range s.Queries {
			if q.Stream == stream {
				m[q.Query] = strings.Join(q.Params, ",")
			}
		}
		return m
	}
	for stream := range 3 {
		a, b := params(runs[0], stream), params(runs[1], stream)
		for q := range a {
			if a[q] != b[q] {
				t.Errorf("stream %d Q%d: parameters %q then %q with the same seed", stream, q, a[q], b[q])
			}
		}
	}
	if p0, p1 := params(runs[0], 1), params(runs[0], 2); p0[1] == p1[1] && p0[3] == p1[3] && p0[6] == p1[6] {
		t.Errorf("streams 1 and 2 drew the same parameters: %v", p0)
	}

	// A run that measures itself on a database gets the --set settings
	// (applied, recorded), the samplers' series, and the report's
	// comparison like the executor's runs.
	var ids []string
	for _, wm := range []string{"8MB", "16MB"} {
		js := tempPath(t, "set.json")
		h.must(0, append([]string{"run", "tpch", "--test", "power", "--seed", "1", "--set", "work_mem=" + wm, "--json", js}, target...)...)
		var got struct {
			RunID    int64             `json:"run_id"`
			Settings map[string]string `json:"settings_applied"`
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Settings["work_mem"] != wm {
			t.Errorf("settings_applied %v, want work_mem=%s", got.Settings, wm)
		}
		ids = append(ids, fmt.Sprint(got.RunID))
		ex := h.must(0, "results", "export", ids[len(ids)-1], "--format", "json", "--results", target[len(target)-1])
		var exp struct {
			Series map[string]json.RawMessage `json:"series"`
		}
		if err := json.Unmarshal([]byte(ex.stdout), &exp); err != nil {
			t.Fatal(err)
		}
		// A power test at SF 0.01 is shorter than a sampling interval:
		// gauges are there, rates need two samples.
		if exp.Series["query_s"] == nil || exp.Series["sys.mem_used_bytes"] == nil || exp.Series["pg.proc_count"] == nil {
			names := []string{}
			for k := range exp.Series {
				names = append(names, k)
			}
			t.Errorf("run %s: series %v, want query_s and the samplers' (sys.mem_used_bytes, pg.proc_count)", ids[len(ids)-1], names)
		}
	}
	rep := h.must(0, append([]string{"report", "-o", "-", "--results", target[len(target)-1], "--baseline", "tpch power work_mem=8MB"}, ids...)...)
	for _, want := range []string{"TPC-H-like workload (tpch)", "work_mem=16MB", "ratio to the baseline", "log scale"} {
		if !strings.Contains(rep.stdout, want) {
			t.Errorf("report of runs %v lacks %q", ids, want)
		}
	}

	// The refresh functions changed the data: validation refuses.
	r = h.must(2, append([]string{"run", "tpch", "--validate"}, target...)...)
	if !strings.Contains(r.stderr, "refresh functions") {
		t.Errorf("validation after refreshes:\n%s", r)
	}
}

// A wrong answer fails validation with exit code 5, naming the query, the
// row and the column.
func TestTPCHValidationFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	conn := []string{"--server-dir", srv.Dir(), "-d", db}
	h.must(0, append([]string{"load", "tpch", "--scale", "0.01", "--load-workers", "2"}, conn...)...)
	c := testutil.ConnectDB(t, srv, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// One lineitem of Q1's first group (returnflag A, linestatus F) costs
	// $1,000 more.
	if _, err := c.Exec(ctx, `update lineitem set l_extendedprice = l_extendedprice + 1000
		where (l_orderkey, l_linenumber) = (select l_orderkey, l_linenumber from lineitem
		where l_returnflag = 'A' and l_linestatus = 'F' order by 1, 2 limit 1)`); err != nil {
		t.Fatal(err)
	}
	results := tempPath(t, "r.db")
	r := h.must(5, append([]string{"run", "tpch", "--validate", "--results", results}, conn...)...)
	if !strings.Contains(r.stderr, "Q1 row 1 column sum_base_price") || !strings.Contains(r.stdout, "DIFFERS") {
		t.Errorf("a wrong Q1 answer:\n%s", r)
	}

	// A query that reaches --query-timeout is recorded as timed out, not as
	// a fast query, and no metric comes from the incomplete test (exit 4).
	js := tempPath(t, "timeout.json")
	r = h.must(4, append([]string{"run", "tpch", "--test", "power", "--refresh=false", "--query-timeout", "1ms", "--json", js, "--results", results}, conn...)...)
	s := readTPCH(t, js)
	timedOut := 0
	for _, q := range s.Queries {
		if q.Status == "timeout" {
			timedOut++
		}
	}
	if timedOut == 0 || s.Power != 0 || s.GeoMean != 0 || s.Status != "errors" || !strings.Contains(r.stderr, "timed out") {
		t.Errorf("with a 1 ms timeout: %d timed out, power %v, geomean %v, status %s:\n%s", timedOut, s.Power, s.GeoMean, s.Status, r)
	}

	// A refresh function that fails stops the test; the run is saved with
	// status errors. (RF1's keys are the 9th to 16th of every 32.)
	if _, err := c.Exec(ctx, "alter table orders add constraint base_keys_only check (o_orderkey % 32 < 8)"); err != nil {
		t.Fatal(err)
	}
	js = tempPath(t, "rf.json")
	r = h.must(4, append([]string{"run", "tpch", "--test", "power", "--json", js, "--results", results}, conn...)...)
	s = readTPCH(t, js)
	if s.Status != "errors" || len(s.Refreshes) != 1 || s.Refreshes[0].Error == "" || len(s.Queries) != 0 || !strings.Contains(r.stderr, "refresh function failed") {
		t.Errorf("a failing RF1: status %s, refreshes %+v, %d queries:\n%s", s.Status, s.Refreshes, len(s.Queries), r)
	}
}
