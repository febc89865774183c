package live

import (
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
)

// The live view's own work per second of a select-only run at about
// 27,000 tps (docs/benchmarks.md, "Live view"): one tick, one scrape of
// /metrics, one poll of /api/live.

// liveRun is a hub with a run fed ticks of n transactions each (latencies
// around 0.15 ms with a tail), and the samplers' points of a tpcb run.
func liveRun(b *testing.B, n int) (*Hub, *Run, func() run.Tick) {
	hub := NewHub()
	r := hub.NewRun(RunInfo{Key: "k", Workload: "tpcb", PlanRun: -1, Headline: Headline{Metric: "tps"}, Ticks: true})
	g := metrics.NewRegistry(false)
	recs := []*metrics.Recorder{g.NewRecorder(), g.NewRecorder(), g.NewRecorder(), g.NewRecorder()}
	rng := rand.New(rand.NewPCG(1, 2))
	tick := func() run.Tick {
		for i := 0; i < n; i++ {
			d := time.Duration(100_000+rng.ExpFloat64()*50_000) * time.Nanosecond
			if i%5000 == 0 {
				d = 20 * time.Millisecond
			}
			recs[i%4].Record(metrics.PhaseMeasure, "select-only", step.ClassOK, d)
		}
		return harvestTick(g, 1, run.PhaseMeasure)
	}
	var pts []sampler.Point
	for _, s := range []string{"sys.cpu_user_pct", "sys.cpu_system_pct", "sys.cpu_idle_pct", "sys.mem_used_bytes", "disk.util_pct",
		"net.lo_bytes_s", "driver.cpu_pct", "pg.commits_s", "pg.blks_hit_s", "pg.proc_cpu_pct", "pg.active_sessions", "pg.wait.Client.ClientRead"} {
		pts = append(pts, sampler.Point{Series: s, V: 1})
	}
	for i := 0; i < 60; i++ {
		r.Tick(tick(), 27000, true)
		r.Points(time.Now(), pts)
	}
	return hub, r, tick
}

// BenchmarkTick: what the executor's collector spends on the live view per
// tick (the harvest itself, which the executor does anyway, excluded).
func BenchmarkTick(b *testing.B) {
	_, r, tick := liveRun(b, 27000)
	tk := tick()
	b.ReportAllocs()
	for b.Loop() {
		r.Tick(tk, 27000, true)
	}
}

// BenchmarkScrape: one GET /metrics.
func BenchmarkScrape(b *testing.B) {
	hub, _, _ := liveRun(b, 1000)
	h := hub.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	}
}

// BenchmarkPoll: one GET /api/live of a page that has everything but the
// last tick.
func BenchmarkPoll(b *testing.B) {
	hub, r, tick := liveRun(b, 1000)
	h := hub.Handler()
	seq := hub.pageState("k", 0).Seq
	r.Tick(tick(), 1000, true)
	url := "/api/live?run=k&since=" + itoa(int(seq))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	}
}
