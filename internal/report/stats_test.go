package report

import (
	"math"
	"sort"
	"testing"

	"github.com/tunebench/tunebench/internal/store"
)

func TestMedianAndMinMax(t *testing.T) {
	cases := []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{5}, 5, 5, 5},
		{[]float64{math.NaN(), 7, 9}, 8, 7, 9},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.med {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.med)
		}
		lo, hi := MinMax(c.in)
		if lo != c.lo || hi != c.hi {
			t.Errorf("MinMax(%v) = %v, %v, want %v, %v", c.in, lo, hi, c.lo, c.hi)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("median of nothing is NaN")
	}
	if lo, hi := MinMax([]float64{math.NaN()}); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Error("min/max of nothing is NaN")
	}
	// Median does not reorder its input.
	in := []float64{3, 1, 2}
	Median(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("input changed: %v", in)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.25, 2}, {0.1, 1.4}} {
		if got := Quantile(s, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestBootstrapIdenticalSamples(t *testing.T) {
	r := BootstrapRatio([]float64{100, 100, 100}, []float64{100, 100, 100}, DefaultResamples, 0.95, 1)
	if !r.HasCI || r.Ratio != 1 || r.Lo != 1 || r.Hi != 1 {
		t.Fatalf("identical samples: %+v, want ratio 1 CI [1,1]", r)
	}
	if !r.WithinNoise() || verdict(r, true) != "within noise" {
		t.Errorf("identical samples must be within noise: %+v", r)
	}
}

func TestBootstrapSeparatedSamples(t *testing.T) {
	base := []float64{1000, 1010, 990, 1005, 995}
	other := []float64{1300, 1310, 1290, 1305, 1295}
	r := BootstrapRatio(base, other, DefaultResamples, 0.95, 7)
	if !r.HasCI || r.WithinNoise() {
		t.Fatalf("separated samples: %+v, want a CI excluding 1", r)
	}
	if r.Ratio != 1.3 || r.Lo <= 1 || r.Lo > r.Ratio || r.Hi < r.Ratio {
		t.Errorf("ratio %v CI [%v, %v]", r.Ratio, r.Lo, r.Hi)
	}
	// Every resampled ratio lies between min(other)/max(base) and
	// max(other)/min(base).
	if r.Lo < 1290.0/1010 || r.Hi > 1310.0/990 {
		t.Errorf("CI [%v, %v] outside the possible range", r.Lo, r.Hi)
	}
	if verdict(r, true) != "better" || verdict(r, false) != "worse" {
		t.Errorf("verdicts: %q %q", verdict(r, true), verdict(r, false))
	}
	// Lower is detected the other way round.
	r2 := BootstrapRatio(other, base, DefaultResamples, 0.95, 7)
	if r2.Hi >= 1 || verdict(r2, true) != "worse" {
		t.Errorf("reverse: %+v", r2)
	}
}

func TestBootstrapOverlappingSamplesWithinNoise(t *testing.T) {
	base := []float64{950, 1000, 1050, 980, 1030}
	other := []float64{960, 1040, 1010, 990, 1020}
	r := BootstrapRatio(base, other, DefaultResamples, 0.95, 3)
	if !r.HasCI || !r.WithinNoise() {
		t.Fatalf("overlapping samples: %+v, want within noise", r)
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	base := []float64{10, 12, 11, 9}
	other := []float64{11, 13, 12, 14}
	a := BootstrapRatio(base, other, 2000, 0.95, 99)
	b := BootstrapRatio(base, other, 2000, 0.95, 99)
	if a != b {
		t.Fatalf("same seed, different results: %+v %+v", a, b)
	}
	c := BootstrapRatio(base, other, 2000, 0.95, 100)
	if c.Ratio != a.Ratio {
		t.Fatalf("the ratio does not depend on the seed")
	}
}

func TestBootstrapNeedsRepetitions(t *testing.T) {
	r := BootstrapRatio([]float64{100}, []float64{120, 121}, DefaultResamples, 0.95, 1)
	if r.HasCI || r.Ratio != 1.205 || r.WithinNoise() {
		t.Fatalf("one base run: %+v, want a ratio without CI", r)
	}
	if verdict(r, true) != "no CI (needs 2+ repetitions each)" {
		t.Errorf("verdict %q", verdict(r, true))
	}
	r = BootstrapRatio(nil, []float64{1, 2}, 100, 0.95, 1)
	if !math.IsNaN(r.Ratio) || r.HasCI || verdict(r, true) != "n/a" {
		t.Errorf("empty base: %+v", r)
	}
	r = BootstrapRatio([]float64{0, 0}, []float64{1, 2}, 100, 0.95, 1)
	if !math.IsNaN(r.Ratio) || r.HasCI {
		t.Errorf("zero base: %+v", r)
	}
}

func TestDownsampleKeepsExtremes(t *testing.T) {
	var pts []XY
	for i := range 3600 {
		y := 1000.0
		if i == 1234 {
			y = 0 // a one-second stall
		}
		if i == 2500 {
			y = 5000 // a spike
		}
		pts = append(pts, XY{float64(i), y})
	}
	out := Downsample(pts, 300)
	if len(out) > 300 || len(out) < 150 {
		t.Fatalf("%d points, want at most 300", len(out))
	}
	var sawStall, sawSpike bool
	for i, p := range out {
		if i > 0 && p.X <= out[i-1].X {
			t.Fatalf("not in x order at %d: %v after %v", i, p, out[i-1])
		}
		sawStall = sawStall || (p.X == 1234 && p.Y == 0)
		sawSpike = sawSpike || (p.X == 2500 && p.Y == 5000)
	}
	if !sawStall || !sawSpike {
		t.Errorf("extremes lost: stall %v spike %v", sawStall, sawSpike)
	}
	// Short series are kept; NaN points are dropped.
	short := []XY{{0, 1}, {1, math.NaN()}, {2, 3}}
	if got := Downsample(short, 300); len(got) != 2 || got[1] != (XY{2, 3}) {
		t.Errorf("short series: %v", got)
	}
}

func TestDownsampleMean(t *testing.T) {
	var pts []XY
	for i := range 1000 {
		pts = append(pts, XY{float64(i), 2})
	}
	out := DownsampleMean(pts, 100)
	if len(out) != 100 {
		t.Fatalf("%d points", len(out))
	}
	for _, p := range out {
		if p.Y != 2 {
			t.Fatalf("mean of a constant changed: %v", p)
		}
	}
	if out[0].X != 4.5 {
		t.Errorf("first bucket x %v, want 4.5", out[0].X)
	}
}

func TestCompactSeries(t *testing.T) {
	r := &store.Run{}
	for i := range 3600 {
		v := 100.0
		if i == 1800 {
			v = 0
		}
		r.Series = append(r.Series, store.Point{Series: "a", T: float64(i), V: v}, store.Point{Series: "b", T: float64(i), V: float64(i)})
	}
	// Grouped by name, as GetRun returns them.
	sort.SliceStable(r.Series, func(i, j int) bool { return r.Series[i].Series < r.Series[j].Series })
	compactSeries(r, 300)
	n := map[string]int{}
	stall := false
	for _, p := range r.Series {
		n[p.Series]++
		stall = stall || (p.Series == "a" && p.T == 1800 && p.V == 0)
	}
	if n["a"] > 300 || n["b"] > 300 || n["a"] < 100 || !stall {
		t.Errorf("compacted: %v points, stall kept %v", n, stall)
	}
	short := &store.Run{Series: []store.Point{{Series: "a", T: 1, V: 1}}}
	compactSeries(short, 300)
	if len(short.Series) != 1 {
		t.Error("short series changed")
	}
}
