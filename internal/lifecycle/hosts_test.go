package lifecycle

import (
	"context"
	"math"
	"testing"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/scrape"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

func TestMissingSeconds(t *testing.T) {
	for _, c := range []struct {
		ts        []float64
		dur, want float64
	}{
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, 0},
		{nil, 10, 9},                          // one tick of the window is the first sample's wait
		{[]float64{1, 2, 3, 8, 9, 10}, 10, 4}, // 3..8: 5 s without, one tick of it expected
		{[]float64{1, 2, 3, 4, 5}, 10, 4},     // stopped after 5 s
		{[]float64{6, 7, 8, 9, 10}, 10, 5},    // started late
		{[]float64{1, 2.4, 3, 4, 5, 6, 7, 8, 9, 10}, 10, 0},
	} {
		if got := missingSeconds(append([]float64(nil), c.ts...), c.dur, 1); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("missingSeconds(%v, %v) = %v, want %v", c.ts, c.dur, got, c.want)
		}
	}
}

// every gives a point of each series at T = 1..n.
func every(n int, series ...string) []store.Point {
	var pts []store.Point
	for i := 1; i <= n; i++ {
		for _, s := range series {
			pts = append(pts, store.Point{Series: s, T: float64(i), V: 1})
		}
	}
	return pts
}

// TestHostGapPerSource: a server host measured by two sources (local /proc
// for its PostgreSQL processes, a node_exporter for the machine) has the
// gap of the worse one: a node_exporter that never answered is 100 %
// missing even though the local sampler went on, and the run's status
// says so; with both answering nothing is missing.
func TestHostGapPerSource(t *testing.T) {
	node := &scrape.Node{URL: "http://db:9100/metrics", Prefix: system.ServerPrefix}
	specs := []sampler.Spec{
		{Sampler: &system.Host{Src: system.Local{}}, Host: sampler.HostDriver, Source: "local /proc"},
		{Sampler: &system.PGProcs{}, Host: sampler.HostServer, Source: "local /proc"},
		{Sampler: node, Host: sampler.HostServer, Source: "node_exporter " + node.URL},
	}
	c := sampler.Start(context.Background(), sampler.Options{})
	c.Stop()
	sm := &sampling{c: c, specs: specs}

	down := every(20, system.MemUsed, system.PGProcCount)
	hs := sm.hosts(down, 20, true)
	byRole := map[string]results.Host{}
	for _, h := range hs {
		byRole[h.Role] = h
	}
	if h := byRole[results.HostDriver]; h.MissingPct != 0 {
		t.Errorf("driver host missing %v%%, want 0", h.MissingPct)
	}
	if h := byRole[results.HostServer]; h.MissingPct != 100 {
		t.Errorf("server host with its node_exporter down: missing %v%%, want 100 (%+v)", h.MissingPct, h)
	}
	sum := &results.Summary{Status: store.StatusOK, Hosts: hs}
	markHostGaps(sum)
	if sum.Status != store.StatusErrors || len(sum.StatusReasons) != 1 {
		t.Errorf("status %q reasons %+v, want errors with one reason", sum.Status, sum.StatusReasons)
	}

	up := every(20, system.MemUsed, system.PGProcCount, system.ServerPrefix+system.MemUsed)
	for _, h := range sm.hosts(up, 20, true) {
		if h.MissingPct != 0 {
			t.Errorf("%s host missing %v%% with every source answering", h.Role, h.MissingPct)
		}
	}
	// Too short a window to tell: not judged.
	for _, h := range sm.hosts(every(3, system.MemUsed), 3, true) {
		if h.MissingPct != 0 {
			t.Errorf("%s host judged over a 3 s window: %v%%", h.Role, h.MissingPct)
		}
	}
}
