package live

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/testutil"
)

func TestResolveAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9100":           "127.0.0.1:9100",
		":9100":          "127.0.0.1:9100",
		" 9100 ":         "127.0.0.1:9100",
		"0":              "127.0.0.1:0",
		"0.0.0.0:9100":   "0.0.0.0:9100",
		"192.0.2.7:80":   "192.0.2.7:80",
		"[::1]:9100":     "[::1]:9100",
		"localhost:9100": "localhost:9100",
	} {
		got, err := ResolveAddr(in)
		if err != nil || got != want {
			t.Errorf("ResolveAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "9100x", "70000", "-1", "host:", "1.2.3.4", "a:b:c", "::1", "my host:9100"} {
		_, err := ResolveAddr(in)
		if err == nil {
			t.Errorf("ResolveAddr(%q): no error", in)
			continue
		}
		if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--listen 9100") {
			t.Errorf("ResolveAddr(%q): %v (hint %q), want a usage error saying what to give", in, err, errs.HintOf(err))
		}
	}
}

// TestListenInUse: a taken port is a usage error that says which port to
// give instead.
func TestListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = Listen(itoa(port), NewHub())
	if err == nil {
		t.Fatal("listening on a taken port worked")
	}
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), "address is in use") ||
		!strings.Contains(errs.HintOf(err), "--listen "+itoa(port+1)) {
		t.Errorf("error %v, hint %q", err, errs.HintOf(err))
	}
	if _, err := Listen("192.0.2.1:9100", NewHub()); err == nil || !strings.Contains(err.Error(), "not one of this machine's") {
		t.Errorf("an address of another machine: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// recorded makes a registry with outcomes recorded in both phases and
// returns the tick the executor would hand to OnTick after a harvest.
func harvestTick(g *metrics.Registry, t float64, phase string) run.Tick {
	iv := g.Harvest()
	return run.Tick{T: t, Phase: phase, TPS: float64(iv.Committed()), Committed: iv.Committed(),
		Interval: iv, IntervalWarmup: g.IntervalWarmup()}
}

func scrape(t *testing.T, h http.Handler) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics is not the text format: %v\n%s", err, text)
	}
	return fams, text
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// find returns the series of family name whose labels include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s", name)
	}
	for _, m := range f.GetMetric() {
		l := labels(m)
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	t.Fatalf("no %s%v among %d series", name, want, len(f.GetMetric()))
	return nil
}

// TestMetricsFromTicks feeds ticks harvested from real recorders (a
// warm-up, then a measurement) and reads /metrics back: counters by op,
// outcome and phase, cumulative buckets, the run's labels on every
// series, no quantile anywhere.
func TestMetricsFromTicks(t *testing.T) {
	hub := NewHub()
	r := hub.NewRun(RunInfo{Key: "k1", Workload: "wl", PlanRun: -1, Headline: Headline{Metric: "tps", Label: "tps"}})
	r.SetExecutor(true)
	g := metrics.NewRegistry(false)
	rec := g.NewRecorder()
	// Warm-up: 2 ok in one tick.
	rec.Record(metrics.PhaseWarmup, "pay", step.ClassOK, 80*time.Microsecond)
	rec.Record(metrics.PhaseWarmup, "pay", step.ClassOK, 2*time.Millisecond)
	r.Tick(harvestTick(g, -1, run.PhaseWarmup), 2, true)
	// A tick across the start: one warm-up and three measured outcomes.
	rec.Record(metrics.PhaseWarmup, "pay", step.ClassOK, 90*time.Microsecond)
	rec.Record(metrics.PhaseMeasure, "pay", step.ClassOK, 1200*time.Microsecond)
	rec.Record(metrics.PhaseMeasure, "pay", step.ClassRetriedOK, 20*time.Millisecond)
	rec.Record(metrics.PhaseMeasure, "look", step.ClassFailedError, 500*time.Microsecond)
	r.Tick(harvestTick(g, 0, run.PhaseMeasure), 3, true)
	// Measurement: one slower than the last bound, one skipped (no latency).
	rec.Record(metrics.PhaseMeasure, "pay", step.ClassOK, 90*time.Second)
	rec.Count(metrics.PhaseMeasure, "skipped", step.ClassSkippedLate)
	r.Tick(harvestTick(g, 1, run.PhaseMeasure), 1, true)
	r.Points(time.Now(), []sampler.Point{{Series: "sys.cpu_user_pct", V: 42}, {Series: "pg.commits_s", V: 7}})

	fams, text := scrape(t, hub.Handler())
	if strings.Contains(text, "quantile") {
		t.Errorf("/metrics serves quantiles:\n%s", text)
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "tunebench_") {
			t.Errorf("metric %s without the tunebench_ prefix", name)
		}
		for _, m := range f.GetMetric() {
			if l := labels(m); l["run"] != "k1" || l["workload"] != "wl" {
				t.Errorf("%s%v: not labelled with the run", name, l)
			}
			if _, ok := labels(m)["shard"]; ok {
				t.Errorf("%s has a shard label on a whole run", name)
			}
		}
	}
	count := func(op, outcome, phase string) float64 {
		return find(t, fams, MetricTransactions, map[string]string{"op": op, "outcome": outcome, "phase": phase}).GetCounter().GetValue()
	}
	if n := count("pay", "ok", "warmup"); n != 3 {
		t.Errorf("pay ok warm-up %v, want 3", n)
	}
	if n := count("pay", "ok", "measure"); n != 2 {
		t.Errorf("pay ok measure %v, want 2", n)
	}
	if n := count("pay", "retried_ok", "measure"); n != 1 {
		t.Errorf("pay retried_ok %v", n)
	}
	if n := count("skipped", "skipped_late", "measure"); n != 1 {
		t.Errorf("skipped %v", n)
	}
	// The committed counter of the measurement is the executor's own
	// figure (what the store gets).
	if n := find(t, fams, MetricCommitted, map[string]string{"phase": "measure"}).GetCounter().GetValue(); n != float64(g.Cumulative().Committed()) || n != 3 {
		t.Errorf("committed measure %v, cumulative %d", n, g.Cumulative().Committed())
	}
	if n := find(t, fams, MetricCommitted, map[string]string{"phase": "warmup"}).GetCounter().GetValue(); n != 3 {
		t.Errorf("committed warm-up %v", n)
	}
	if n := find(t, fams, MetricErrors, map[string]string{"phase": "measure"}).GetCounter().GetValue(); n != 1 {
		t.Errorf("errors %v", n)
	}

	// Buckets: the measured ok values are 1.2 ms and 90 s (over 60 s).
	h := find(t, fams, MetricLatency, map[string]string{"op": "pay", "outcome": "ok", "phase": "measure"}).GetHistogram()
	if h.GetSampleCount() != 2 {
		t.Errorf("histogram count %d", h.GetSampleCount())
	}
	if s := h.GetSampleSum(); s < 90 || s > 90.2 {
		t.Errorf("histogram sum %v s, want about 90.0012", s)
	}
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		ub, n := b.GetUpperBound(), b.GetCumulativeCount()
		if n < prev {
			t.Errorf("bucket le=%v: %d below the previous %d (not cumulative)", ub, n, prev)
		}
		prev = n
		want := uint64(0)
		switch {
		case math.IsInf(ub, 1):
			want = 2
		case ub >= 1.5e-3:
			want = 1
		}
		if n != want {
			t.Errorf("bucket le=%v: %d, want %d", ub, n, want)
		}
	}
	if len(h.GetBucket()) != len(Bounds)+1 {
		t.Errorf("%d buckets, want %d and +Inf", len(h.GetBucket()), len(Bounds))
	}
	// Warm-up: 80 us, 2 ms, 90 us.
	hw := find(t, fams, MetricLatency, map[string]string{"op": "pay", "outcome": "ok", "phase": "warmup"}).GetHistogram()
	for _, b := range hw.GetBucket() {
		want := map[float64]uint64{50e-6: 0, 100e-6: 2, 1.5e-3: 2, 2e-3: 3, 60: 3}
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("warm-up bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	for _, m := range fams[MetricLatency].GetMetric() {
		if labels(m)["outcome"] == "skipped_late" {
			t.Error("a latency histogram for skipped_late, which has no latency")
		}
	}
	if v := find(t, fams, MetricSample, map[string]string{"series": "pg.commits_s"}).GetGauge().GetValue(); v != 7 {
		t.Errorf("sample %v", v)
	}
	if v := find(t, fams, MetricHeadline, map[string]string{"metric": "tps"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("headline %v, want the last tick's", v)
	}
	if v := find(t, fams, MetricRunDone, nil).GetGauge().GetValue(); v != 0 {
		t.Errorf("run done %v while running", v)
	}

	// The end: the stored headline replaces the live one.
	r.Finish(&results.Summary{RunID: 12, Status: "ok", Measured: &results.Measured{TPS: 123.5}}, nil)
	fams, _ = scrape(t, hub.Handler())
	if v := find(t, fams, MetricHeadline, map[string]string{"metric": "tps"}).GetGauge().GetValue(); v != 123.5 {
		t.Errorf("headline %v after the end, want the stored 123.5", v)
	}
	if v := find(t, fams, MetricRunDone, nil).GetGauge().GetValue(); v != 1 {
		t.Errorf("run done %v after the end", v)
	}
	promtool(t, text)
}

// promtool runs `promtool check metrics` on an exposition (Prometheus'
// own lint of names, types and help); without promtool the check is
// skipped, or fails under CI (make test installs it: prometheus).
func promtool(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("promtool is required in CI (apt-get install prometheus): %v", err)
		}
		t.Log("promtool not installed: the exposition is not linted")
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestShardLabel: a shard is one more constant label; the names and the
// other labels stay.
func TestShardLabel(t *testing.T) {
	hub := NewHub()
	r := hub.NewRun(RunInfo{Key: "k2", Workload: "wl", Shard: "2/4", PlanRun: -1, Headline: Headline{Metric: "tps"}, Ticks: true})
	g := metrics.NewRegistry(false)
	g.NewRecorder().Record(metrics.PhaseMeasure, "op", step.ClassOK, time.Millisecond)
	r.Tick(harvestTick(g, 1, run.PhaseMeasure), 1, true)
	fams, _ := scrape(t, hub.Handler())
	m := find(t, fams, MetricTransactions, map[string]string{"shard": "2/4", "run": "k2", "op": "op", "outcome": "ok"})
	if m.GetCounter().GetValue() != 1 {
		t.Errorf("counter %v", m.GetCounter().GetValue())
	}
	find(t, fams, MetricLatency, map[string]string{"shard": "2/4"})
	find(t, fams, MetricCommitted, map[string]string{"shard": "2/4", "phase": "measure"})
}

// TestSelfMeasured: a workload that measures itself serves no transaction
// counters (it has none live), its samplers, and its headline at the end.
func TestSelfMeasured(t *testing.T) {
	hub := NewHub()
	r := hub.NewRun(RunInfo{Key: "k3", Workload: "selfy", PlanRun: -1, Headline: Headline{Metric: "tps"}})
	r.Points(time.Now(), []sampler.Point{{Series: "sys.cpu_user_pct", V: 3}})
	fams, _ := scrape(t, hub.Handler())
	for _, n := range []string{MetricCommitted, MetricErrors, MetricTransactions, MetricHeadline} {
		if fams[n] != nil {
			t.Errorf("%s served for a run that measures itself, before its end", n)
		}
	}
	find(t, fams, MetricSample, map[string]string{"series": "sys.cpu_user_pct"})
	r.Finish(&results.Summary{Status: "ok", Measured: &results.Measured{TPS: 9}}, nil)
	fams, _ = scrape(t, hub.Handler())
	if v := find(t, fams, MetricHeadline, nil).GetGauge().GetValue(); v != 9 {
		t.Errorf("headline %v", v)
	}
}

func getJSON(t *testing.T, h http.Handler, url string) *pageJSON {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %s", url, rec.Code, rec.Header())
	}
	var p pageJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, rec.Body)
	}
	return &p
}

// TestPageJSON: the page gets everything once, then only what is new; a
// new run (an experiment's next) starts it over.
func TestPageJSON(t *testing.T) {
	hub := NewHub()
	h := hub.Handler()
	if p := getJSON(t, h, "/api/live"); p.Run != nil || p.Experiment != nil {
		t.Errorf("before any run: %+v", p)
	}
	r := hub.NewRun(RunInfo{Key: "a", Workload: "wl", PlanRun: -1, Headline: Headline{Metric: "nopm", Label: "NOPM"}})
	g := metrics.NewRegistry(false)
	rec := g.NewRecorder()
	for i := 0; i < 3; i++ {
		rec.Record(metrics.PhaseMeasure, "new_order", step.ClassOK, time.Millisecond)
		r.Tick(harvestTick(g, float64(i), run.PhaseMeasure), 60, true)
		r.Points(time.Now(), []sampler.Point{{Series: "sys.cpu_user_pct", V: float64(i)}, {Series: "pg.x", V: 1}})
	}
	p := getJSON(t, h, "/api/live")
	if p.Run == nil || !p.Run.Full || len(p.Run.TickList) != 3 || len(p.Run.Host["sys.cpu_user_pct"]) != 3 || p.Run.Host["pg.x"] != nil {
		t.Fatalf("first poll: %+v", p.Run)
	}
	if p.Run.Totals.Committed != 3 || p.Run.HeadValue == nil || *p.Run.HeadValue != 60 || p.Run.HeadFinal {
		t.Errorf("totals %+v headline %v", p.Run.Totals, p.Run.HeadValue)
	}
	seq := p.Seq
	if q := getJSON(t, h, "/api/live?run=a&since="+itoa(int(seq))); q.Run.Full || len(q.Run.TickList) != 0 || len(q.Run.Host) != 0 {
		t.Errorf("nothing new: %+v", q.Run)
	}
	rec.Record(metrics.PhaseMeasure, "new_order", step.ClassOK, time.Millisecond)
	r.Tick(harvestTick(g, 3, run.PhaseMeasure), 60, true)
	if q := getJSON(t, h, "/api/live?run=a&since="+itoa(int(seq))); len(q.Run.TickList) != 1 || q.Run.TickList[0].T != 3 {
		t.Errorf("one new tick: %+v", q.Run.TickList)
	}
	hub.NewRun(RunInfo{Key: "b", Workload: "wl", PlanRun: -1})
	if q := getJSON(t, h, "/api/live?run=a&since="+itoa(int(seq))); q.Run.Key != "b" || !q.Run.Full {
		t.Errorf("another run: %+v", q.Run)
	}
	r.Finish(nil, errors.New("boom")) // the old run's end changes nothing served
	if q := getJSON(t, h, "/api/live"); q.Run.Key != "b" || q.Run.Done {
		t.Errorf("after the old run's end: %+v", q.Run)
	}
}

// TestExperimentProgress: the plan, which run goes, which are done, the
// estimate left; served as gauges and in the page's JSON.
func TestExperimentProgress(t *testing.T) {
	hub := NewHub()
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	hub.now = func() time.Time { return now }
	info := ExperimentInfo{Name: "e1", Workload: "tpcb", Runs: []PlanRun{{Index: 0, Label: "a"}, {Index: 1, Label: "b"}, {Index: 2, Label: "c"}}}
	hub.ExperimentBegin(info, 2, []int{0}, 10*time.Minute)
	hub.ExperimentRun(1, 1, 2, 8*time.Minute)
	hub.NewRun(RunInfo{Key: "r1", Workload: "tpcb", Experiment: "e1", PlanRun: 1, PlanLabel: "b"})
	now = now.Add(time.Minute)
	hub.ExperimentRunDone(1, 7, "ok", "1000 tps", false)
	hub.ExperimentRun(2, 2, 2, 4*time.Minute)
	now = now.Add(30 * time.Second)

	fams, _ := scrape(t, hub.Handler())
	for name, want := range map[string]float64{MetricExpRuns: 2, MetricExpDone: 1, MetricExpCurrent: 2, MetricExpETA: 210, MetricExpEnded: 0} {
		if v := find(t, fams, name, map[string]string{"experiment": "e1"}).GetGauge().GetValue(); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	find(t, fams, MetricRunInfo, map[string]string{"run": "r1", "experiment": "e1", "plan_run": "1"})
	p := getJSON(t, hub.Handler(), "/api/live")
	e := p.Experiment
	if e == nil || e.Ordinal != 2 || e.Total != 2 || e.Done != 1 || len(e.Runs) != 3 {
		t.Fatalf("experiment %+v", e)
	}
	if e.Runs[0].State != "kept" || e.Runs[1].State != "done" || e.Runs[1].RunID != 7 || e.Runs[1].Key != "r1" || e.Runs[2].State != "running" {
		t.Errorf("runs %+v", e.Runs)
	}
	hub.ExperimentEnd("done")
	fams, _ = scrape(t, hub.Handler())
	if v := find(t, fams, MetricExpEnded, nil).GetGauge().GetValue(); v != 1 {
		t.Errorf("ended %v", v)
	}
	if v := find(t, fams, MetricExpETA, nil).GetGauge().GetValue(); v != 0 {
		t.Errorf("eta %v after the end", v)
	}
}

// TestPageSelfContained: the page is one HTML document with its script
// and style inline, nothing loaded from elsewhere.
func TestPageSelfContained(t *testing.T) {
	h := NewHub().Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(body, "<canvas") {
		t.Fatalf("/: %d %s", rec.Code, rec.Header())
	}
	for _, bad := range []string{"http://", "https://", "<script src", "<link", "@import", "//cdn"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page refers to something outside it: %q", bad)
		}
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/nothing", nil))
	if rec.Code != 404 {
		t.Errorf("/nothing: %d", rec.Code)
	}
}

// TestServerServes: Listen on a free loopback port, the three endpoints
// over real HTTP, Close.
func TestServerServes(t *testing.T) {
	hub := NewHub()
	hub.NewRun(RunInfo{Key: "k", Workload: "wl", PlanRun: -1})
	s, err := Listen("0", hub)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %s: not loopback", s.URL())
	}
	for _, p := range []string{"", "metrics", "api/live"} {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("/%s: %d", p, resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Error(err)
	}
	if _, err := http.Get(s.URL()); err == nil {
		t.Error("still serving after Close")
	}
}

func TestNewKey(t *testing.T) {
	k := NewKey(time.Date(2026, 1, 5, 14, 30, 12, 0, time.FixedZone("x", 3600)))
	if !strings.HasPrefix(k, "20260105-133012-") || len(k) != len("20260105-133012-")+4 {
		t.Errorf("key %q", k)
	}
	now := time.Now()
	seen := map[string]bool{}
	for i := 0; i < 8; i++ {
		seen[NewKey(now)] = true
	}
	if len(seen) < 2 {
		t.Error("keys of the same second are not told apart")
	}
}

// TestTrim: a history keeps its last entries, in place, once full.
func TestTrim(t *testing.T) {
	var xs []int
	for i := 0; i < 25; i++ {
		xs = trim(append(xs, i), 5)
		if len(xs) > 9 || xs[len(xs)-1] != i {
			t.Fatalf("after %d: %v", i, xs)
		}
	}
	if len(xs) < 5 || xs[0] != 25-len(xs) {
		t.Errorf("kept %v", xs)
	}
	for i := 1; i < len(xs); i++ {
		if xs[i] != xs[i-1]+1 {
			t.Errorf("out of order: %v", xs)
		}
	}
}

// TestStaleSamples: a sampler series not reported for staleAfter is no
// longer served (a source that stopped shows as a gap, not a held value);
// a wait event not seen in a wait sample reads 0; once the run ended its
// final values stay served however long the view lingers.
func TestStaleSamples(t *testing.T) {
	hub := NewHub()
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	hub.now = func() time.Time { return now }
	r := hub.NewRun(RunInfo{Key: "k4", Workload: "wl", PlanRun: -1, Headline: Headline{Metric: "tps"}})
	served := func() map[string]float64 {
		t.Helper()
		fams, _ := scrape(t, hub.Handler())
		out := map[string]float64{}
		if f := fams[MetricSample]; f != nil {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "series" {
						out[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		if p := getJSON(t, hub.Handler(), "/api/live"); len(p.Run.Latest) != len(out) {
			t.Errorf("the page has %v, /metrics %v", p.Run.Latest, out)
		}
		return out
	}
	r.Points(now, []sampler.Point{{Series: "server.sys.cpu_user_pct", V: 40}, {Series: "sys.cpu_user_pct", V: 10}})
	r.Points(now, []sampler.Point{{Series: sampler.ActiveSessions, V: 2}, {Series: "wait.Lock.tuple", V: 1.5}})
	if got := served(); got["server.sys.cpu_user_pct"] != 40 || got["wait.Lock.tuple"] != 1.5 {
		t.Fatalf("served %v", got)
	}
	// The node_exporter stops answering; the local sampler goes on, and
	// the lock wait is over.
	for i := 1; i <= 6; i++ {
		now = now.Add(time.Second)
		r.Points(now, []sampler.Point{{Series: "sys.cpu_user_pct", V: 10}})
		r.Points(now, []sampler.Point{{Series: sampler.ActiveSessions, V: 1}})
	}
	got := served()
	if _, ok := got["server.sys.cpu_user_pct"]; ok {
		t.Errorf("a source silent for 6 s is still served: %v", got)
	}
	if v, ok := got["wait.Lock.tuple"]; !ok || v != 0 {
		t.Errorf("wait.Lock.tuple after it was no longer seen: %v (present %v), want 0", v, ok)
	}
	if got["sys.cpu_user_pct"] != 10 {
		t.Errorf("a live source was dropped: %v", got)
	}
	r.Finish(&results.Summary{Status: "ok"}, nil)
	now = now.Add(time.Minute)
	if got := served(); got["sys.cpu_user_pct"] != 10 {
		t.Errorf("the final values are not served while the view lingers: %v", got)
	}
}
