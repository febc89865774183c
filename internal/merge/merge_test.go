package merge_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/merge"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

// samplerSeries is how many series of the samplers a synthetic shard
// stores besides the executor's (a real run has 40 to 60: sys.*, net.*,
// driver.*, and on shard 0 pg.*, disk.*, server.*).
var samplerSeries = 0

// perTick is how many latencies a synthetic shard records an interval
// (50 to 150 by default).
var perTick = 0

// shardSpec is one synthetic shard: its machine's clock against the
// server's, when its window opened on the server's clock (after the
// common base), and how long it measured.
type shardSpec struct {
	offsetMs float64
	lateMs   float64
	seconds  int
	skip     bool // a shard whose result is missing
}

// raw is every latency the synthetic shards recorded: all of them, and
// by merged interval (1-based seconds on the server's clock).
type raw struct {
	all   []time.Duration
	ticks map[int][]time.Duration
}

// writeShards stores one synthetic tpcb shard run per spec, each in its
// own store under dir/shard-i (as the shards of an Indexed Job write
// them), recording every latency as the executor does (a whole-run
// histogram, one per interval) and keeping them all in raw.
func writeShards(t *testing.T, dir, key string, specs []shardSpec, seed uint64) *raw {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(seed, 7))
	rw := &raw{ticks: map[int][]time.Duration{}}
	for i, sp := range specs {
		if sp.skip {
			continue
		}
		serverStart := base.Add(time.Duration(sp.lateMs * float64(time.Millisecond)))
		local := serverStart.Add(-time.Duration(sp.offsetMs * float64(time.Millisecond)))
		whole := metrics.NewHist()
		res := &run.Result{StartedAt: local, EndedAt: local.Add(time.Duration(sp.seconds) * time.Second), Workers: 2, Threads: 2,
			MeasuredSeconds: float64(sp.seconds), Totals: map[step.OutcomeClass]int64{}}
		for s := 1; s <= sp.seconds; s++ {
			iv := metrics.NewHist()
			n := 50 + rng.IntN(100)
			if perTick > 0 {
				n = perTick
			}
			for range n {
				// Log-normal around 2 ms with a tail to a second.
				d := time.Duration(math.Exp(rng.NormFloat64()*0.9+math.Log(2000)) * float64(time.Microsecond))
				iv.Record(d)
				whole.Record(d)
				rw.all = append(rw.all, d)
				k := s + int(math.Round(sp.lateMs/1000))
				rw.ticks[k] = append(rw.ticks[k], d)
			}
			enc, err := metrics.Encode(iv)
			if err != nil {
				t.Fatal(err)
			}
			res.Series = append(res.Series, run.Tick{T: float64(s), Phase: run.PhaseMeasure, Committed: int64(n), Completed: int64(n),
				TPS: float64(n), Span: 1, ActiveWorkers: 2, LatencyEnc: enc})
			res.Committed += int64(n)
		}
		res.Totals[step.ClassOK] = res.Committed
		res.TPS = float64(res.Committed) / res.MeasuredSeconds
		res.Latency = whole
		res.Ops = []run.OpStats{{Op: "tx", Class: step.ClassOK, Count: res.Committed, Latency: whole}}
		sum := results.FromRun(res)
		sum.Workload, sum.Status = "tpcb", store.StatusOK
		sum.Shard = &results.Shard{Index: i, Count: len(specs), Part: fmt.Sprintf("shard %d/%d: clients %d-%d", i, len(specs), 2*i, 2*i+1),
			ClockOffsetMs: sp.offsetMs, RoundTripMs: 0.2, Rendezvous: key}
		hists, err := results.RunHistograms(res)
		if err != nil {
			t.Fatal(err)
		}
		pts := append(results.RunSeries(res), store.Point{Series: "pg.tps", T: 1, V: float64(i)})
		for k := range samplerSeries {
			for s := 1; s <= sp.seconds; s++ {
				pts = append(pts, store.Point{Series: fmt.Sprintf("sys.s%d", k), T: float64(s), V: rng.Float64()})
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("shard-%d", i), "results.db")
		st, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = results.Save(ctx, st, &results.Record{Summary: sum, Params: []byte(`{"clients":2,"script":"tpcb-like"}`),
			Series: pts, Histograms: hists, Intervals: results.RunIntervals(res)})
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return rw
}

// exactQuantile is the nearest-rank quantile of the raw values.
func exactQuantile(all []time.Duration, p float64) float64 {
	s := slices.Clone(all)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

func mergeDir(t *testing.T, key string, sources ...string) *merge.Merged {
	t.Helper()
	groups, err := merge.Collect(context.Background(), sources, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := merge.Pick(groups, key, sources)
	if err != nil {
		t.Fatal(err)
	}
	m, err := merge.Merge(g, tpcb.Workload{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMergeExact: three shards whose clocks disagree by a quarter of a
// second merge into one run whose throughput is the sum of theirs and
// whose percentiles, over the run and in every interval, are those of
// every latency the shards recorded: exactly those of one histogram of
// them all, and within the histogram's precision (0.1%) of the raw
// values' own. The sources are read, not changed.
func TestMergeExact(t *testing.T) {
	dir := t.TempDir()
	specs := []shardSpec{{0, 0, 60, false}, {250, 0.4, 60, false}, {-120, 0.9, 60, false}}
	rw := writeShards(t, dir, "exact", specs, 1)
	before, err := os.ReadFile(filepath.Join(dir, "shard-1", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	m := mergeDir(t, "exact", dir, dir, filepath.Join(dir, "shard-1", "results.db")) // a source given twice counts once
	after, _ := os.ReadFile(filepath.Join(dir, "shard-1", "results.db"))
	if !bytes.Equal(before, after) {
		t.Error("merging changed a shard's store")
	}
	sum := m.Record.Summary
	if sum.Status != store.StatusOK || len(sum.StatusReasons) > 0 {
		t.Fatalf("status %s %v", sum.Status, sum.StatusReasons)
	}
	var tps float64
	for _, sh := range sum.Merge.Shards {
		tps += sh.TPS
	}
	if sum.Transactions != int64(len(rw.all)) || math.Abs(sum.TPS-tps) > 1e-9 || sum.Clients != 6 {
		t.Errorf("transactions %d (want %d), tps %v (shards' sum %v), clients %d", sum.Transactions, len(rw.all), sum.TPS, tps, sum.Clients)
	}
	one := metrics.NewHist()
	for _, d := range rw.all {
		one.Record(d)
	}
	if want := results.LatencyOf(one); sum.LatencyMs != want {
		t.Errorf("merged latency %+v\nof one histogram of every latency %+v", sum.LatencyMs, want)
	}
	for _, c := range []struct {
		p   float64
		got float64
	}{{50, sum.LatencyMs.P50}, {95, sum.LatencyMs.P95}, {99, sum.LatencyMs.P99}} {
		if want := exactQuantile(rw.all, c.p); math.Abs(c.got-want) > want*0.001+0.001 {
			t.Errorf("p%v: merged %.4f ms, raw latencies' %.4f ms", c.p, c.got, want)
		}
	}
	if sum.Merge.MinOverlapPct < 99 || math.Abs(sum.Merge.CommonS-(60-0.0009)) > 0.001 {
		t.Errorf("common window %v s, least overlap %v%%", sum.Merge.CommonS, sum.Merge.MinOverlapPct)
	}
	// Every merged interval holds the three shards' same second.
	checkIntervals(t, m, rw, 60)
	// What shard 0 alone measured (the server) is kept; the others' not.
	var pg []float64
	for _, pt := range m.Record.Series {
		if pt.Series == "pg.tps" {
			pg = append(pg, pt.V)
		}
	}
	if len(pg) != 1 || pg[0] != 0 {
		t.Errorf("server series %v, want shard 0's alone", pg)
	}
}

// checkIntervals: the merged run has n intervals, and each one's
// percentiles are those of the latencies the shards recorded in it.
func checkIntervals(t *testing.T, m *merge.Merged, rw *raw, n int) {
	t.Helper()
	p95 := map[float64]float64{}
	for _, pt := range m.Record.Series {
		if pt.Series == "latency_p95_ms" {
			p95[pt.T] = pt.V
		}
	}
	if len(p95) != n || len(rw.ticks) != n {
		t.Fatalf("%d merged intervals, %d recorded, want %d", len(p95), len(rw.ticks), n)
	}
	for k, lat := range rw.ticks {
		h := metrics.NewHist()
		for _, d := range lat {
			h.Record(d)
		}
		if got, want := p95[float64(k)], h.PercentileMs(95); got != want {
			t.Errorf("interval %d: merged p95 %v, of its latencies %v", k, got, want)
		}
	}
}

// TestMergeFlags: a missing shard, a shard that started late and a shard
// that failed make the merged run errors, each naming its shard; the
// others' figures are all there.
func TestMergeFlags(t *testing.T) {
	dir := t.TempDir()
	rw := writeShards(t, dir, "flags", []shardSpec{{0, 0, 30, false}, {0, 0, 30, true}, {0, 0, 30, false}, {30, 1500, 30, false}}, 2)
	m := mergeDir(t, "flags", dir)
	// The late shard's seconds fall into the merged intervals 1.5 s on.
	checkIntervals(t, m, rw, 32)
	sum := m.Record.Summary
	codes := map[string]string{}
	for _, r := range sum.StatusReasons {
		codes[r.Code] = r.Detail
	}
	if sum.Status != store.StatusErrors || !strings.HasPrefix(codes[results.ReasonShardMissing], "shard 1/4 has no result") ||
		!strings.HasPrefix(codes[results.ReasonShardWindow], "shard 3/4's measured window") {
		t.Errorf("status %s, reasons %v", sum.Status, sum.StatusReasons)
	}
	if !sum.InDoubt() || !sum.Merge.Shards[1].Missing || sum.Merge.Shards[3].OverlapPct > 96 {
		t.Errorf("in doubt %v, shards %+v", sum.InDoubt(), sum.Merge.Shards)
	}
	var n int64
	for _, sh := range sum.Merge.Shards {
		n += sh.Transactions
	}
	if sum.Transactions != n || n == 0 {
		t.Errorf("merged %d transactions, the 3 shards present %d", sum.Transactions, n)
	}
}

// TestMergeConflict: two different runs of one shard under one key are
// refused, naming both; without a key the newest group is merged.
func TestMergeConflict(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeShards(t, a, "same", []shardSpec{{0, 0, 5, false}, {0, 0, 5, false}}, 3)
	writeShards(t, b, "same", []shardSpec{{0, 0, 5, false}, {0, 0, 5, false}}, 4)
	_, err := merge.Collect(context.Background(), []string{a, b}, nil)
	if err == nil || !strings.Contains(err.Error(), "shard 0/2 appears twice") {
		t.Errorf("two runs of one shard: %v", err)
	}
	_, _, err = merge.Pick(nil, "", []string{a})
	if err == nil || !strings.Contains(err.Error(), "no shard runs") {
		t.Errorf("no shards: %v", err)
	}
}

// BenchmarkMerge8Shards1h merges 8 shards of a one-hour run with 1-second
// intervals (500 latencies an interval each, 40 sampler series) read from
// their stores, and stores the merged run: `make bench-merge`.
func BenchmarkMerge8Shards1h(b *testing.B) {
	t := &testing.T{}
	dir := b.TempDir()
	samplerSeries, perTick = 40, 500
	defer func() { samplerSeries, perTick = 0, 0 }()
	specs := make([]shardSpec, 8)
	for i := range specs {
		specs[i] = shardSpec{offsetMs: float64(i) * 3, lateMs: float64(i) * 0.1, seconds: 3600}
	}
	t0 := time.Now()
	writeShards(t, dir, "hour", specs, 9)
	if t.Failed() {
		b.Fatal("writing the shards failed")
	}
	b.Logf("8 shard stores written in %.1f s", time.Since(t0).Seconds())
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		groups, err := merge.Collect(ctx, []string{dir}, nil)
		if err != nil {
			b.Fatal(err)
		}
		g, _, err := merge.Pick(groups, "hour", []string{dir})
		if err != nil {
			b.Fatal(err)
		}
		m, err := merge.Merge(g, tpcb.Workload{})
		if err != nil {
			b.Fatal(err)
		}
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "merged.db"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := results.Save(ctx, st, m.Record); err != nil {
			b.Fatal(err)
		}
		st.Close()
		if m.Record.Summary.Status != store.StatusOK || len(m.Record.Series) < 3600*8 {
			b.Fatalf("merged: %s, %d points", m.Record.Summary.Status, len(m.Record.Series))
		}
	}
}

// TestCollectSkipsOtherFiles: in a directory, an SQLite file that is not a
// results store and a run.json summary are passed over; given by name,
// the SQLite file is refused.
func TestCollectSkipsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, "skip", []shardSpec{{0, 0, 3, false}, {0, 0, 3, false}}, 5)
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (t text)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"run_id":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	groups, err := merge.Collect(context.Background(), []string{dir}, nil)
	if err != nil || len(groups) != 1 || len(groups[0].Missing()) != 0 {
		t.Fatalf("groups %v, %v", groups, err)
	}
	if _, err := merge.Collect(context.Background(), []string{other}, nil); err == nil {
		t.Error("a file that is not a store, given by name, was taken")
	}
}
