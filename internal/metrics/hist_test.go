package metrics

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestHistClampAndOverflow(t *testing.T) {
	h := NewHist()
	h.Record(0)                     // below range -> 1 µs
	h.Record(300 * time.Nanosecond) // rounds to 0 -> 1 µs
	h.Record(2 * time.Hour)         // overflow -> 1 h
	h.RecordMicros(MaxMicros)       // exactly the max: not overflow
	if got := h.Count(); got != 4 {
		t.Fatalf("count = %d, want 4", got)
	}
	if got := h.Overflow(); got != 1 {
		t.Fatalf("overflow = %d, want 1", got)
	}
	if got := h.ValueAtPercentileMicros(0); got != 1 {
		t.Fatalf("min = %d µs, want 1", got)
	}
	if got := h.MaxMicros(); got < MaxMicros {
		t.Fatalf("max = %d µs, want >= %d", got, MaxMicros)
	}
	if got := h.PercentileMs(100); got < float64(MaxMicros)/1000 {
		t.Fatalf("p100 = %v ms, want >= 1h", got)
	}
}

func TestHistPercentileUnits(t *testing.T) {
	h := NewHist()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	// 3 significant digits: within 0.1%.
	check := func(p, wantMs float64) {
		t.Helper()
		got := h.PercentileMs(p)
		if got < wantMs*0.999 || got > wantMs*1.001 {
			t.Errorf("PercentileMs(%v) = %v, want ~%v", p, got, wantMs)
		}
	}
	check(50, 500)
	check(99, 990)
	check(100, 1000)
	ps := h.PercentilesMs(50, 99)
	if ps[0] != h.PercentileMs(50) || ps[1] != h.PercentileMs(99) {
		t.Errorf("PercentilesMs = %v, disagrees with PercentileMs", ps)
	}
	if m := h.MeanMs(); m < 499 || m > 502 {
		t.Errorf("mean = %v ms", m)
	}
	if m := h.MinMs(); m != 1 {
		t.Errorf("min = %v ms", m)
	}
	if sd := h.StdDevMs(); sd < 280 || sd > 300 {
		t.Errorf("stddev = %v ms", sd)
	}
	empty := NewHist()
	if empty.PercentileMs(99) != 0 || empty.MaxMs() != 0 || empty.MinMs() != 0 || empty.MeanMs() != 0 {
		t.Errorf("empty histogram should read 0")
	}
	if v := empty.PercentilesMs(50, 99); v[0] != 0 || v[1] != 0 {
		t.Errorf("empty PercentilesMs = %v", v)
	}
}

// lognormal-ish latencies from 10 µs to minutes, with a few overflows.
func sampleLatencies(n int, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]time.Duration, n)
	for i := range out {
		switch {
		case i%5000 == 4999:
			out[i] = 90 * time.Minute // overflow
		case i%777 == 0:
			out[i] = time.Duration(r.Float64() * float64(10*time.Second))
		default:
			out[i] = time.Duration(float64(200*time.Microsecond) * (1 + r.ExpFloat64()*r.ExpFloat64()*5))
		}
	}
	return out
}

var testPercentiles = []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100}

func TestPercentileMergeEqualsSingleHistogramPercentiles(t *testing.T) {
	values := sampleLatencies(200_000, 1)
	single := NewHist()
	for _, v := range values {
		single.Record(v)
	}

	// The same values spread over 8 workers' recorders, harvested every
	// 10,000 values (a "tick"), the intervals merged into the cumulative.
	g := NewRegistry(false)
	recs := make([]*Recorder, 8)
	for i := range recs {
		recs[i] = g.NewRecorder()
	}
	merged := NewHist()
	for i, v := range values {
		recs[i%len(recs)].Record(PhaseMeasure, "op", 0, v)
		if i%10_000 == 9_999 {
			merged.Merge(g.Harvest().Latency())
		}
	}
	merged.Merge(g.Harvest().Latency())
	cum := g.Cumulative().Latency()

	for _, h := range []*Hist{merged, cum} {
		if h.Count() != single.Count() || h.Overflow() != single.Overflow() {
			t.Fatalf("count/overflow %d/%d, want %d/%d", h.Count(), h.Overflow(), single.Count(), single.Overflow())
		}
		for _, p := range testPercentiles {
			if a, b := h.ValueAtPercentileMicros(p), single.ValueAtPercentileMicros(p); a != b {
				t.Errorf("p%v: merged %d µs, single %d µs", p, a, b)
			}
		}
		if h.MeanMs() != single.MeanMs() || h.MaxMs() != single.MaxMs() || h.StdDevMs() != single.StdDevMs() {
			t.Errorf("mean/max/stddev differ")
		}
		if !h.Equal(single) {
			t.Errorf("merged histogram not equal to the single one")
		}
	}
	if single.Overflow() == 0 {
		t.Fatal("test data should contain overflows")
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	h := NewHist()
	for _, v := range sampleLatencies(50_000, 2) {
		h.Record(v)
	}
	b, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Equal(h) {
		t.Fatalf("round trip differs: count %d/%d overflow %d/%d", d.Count(), h.Count(), d.Overflow(), h.Overflow())
	}
	for _, p := range testPercentiles {
		if d.ValueAtPercentileMicros(p) != h.ValueAtPercentileMicros(p) {
			t.Errorf("p%v differs after round trip", p)
		}
	}
	// Decoded histograms stay usable.
	d.Record(time.Millisecond)
	d.Merge(h)

	// Empty round trip.
	b, err = Encode(NewHist())
	if err != nil {
		t.Fatal(err)
	}
	if d, err = Decode(b); err != nil || d.Count() != 0 || d.Overflow() != 0 {
		t.Fatalf("empty round trip: %v %v", d, err)
	}
	if _, err := Decode([]byte("not a histogram")); err == nil {
		t.Fatal("garbage decoded without error")
	}
	if _, err := Encode(nil); err == nil {
		t.Fatal("nil encoded without error")
	}
}

func TestDecodeOtherGeometry(t *testing.T) {
	// A histogram written by another tool with a wider range: values above
	// one hour are clamped on the way in and counted as overflow.
	other := newOtherGeometry()
	b, err := other.Encode(v2Cookie())
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count() != 3 || d.Overflow() != 1 {
		t.Fatalf("count %d overflow %d, want 3 and 1", d.Count(), d.Overflow())
	}
}

func TestMicros(t *testing.T) {
	cases := map[time.Duration]int64{
		-time.Second: 0, 0: 0, 499: 0, 500: 1, 1499: 1, 1500: 2, time.Second: 1_000_000,
	}
	for d, want := range cases {
		if got := Micros(d); got != want {
			t.Errorf("Micros(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestCountsAtOrBelow: the cumulative buckets of a Prometheus histogram,
// exact at bounds the histogram resolves.
func TestCountsAtOrBelow(t *testing.T) {
	h := NewHist()
	for _, us := range []int64{10, 50, 51, 100, 999, 1000, 1001, 250_000, 90_000_000} {
		h.RecordMicros(us)
	}
	bounds := []int64{50, 100, 1000, 60_000_000}
	out := make([]int64, len(bounds))
	h.CountsAtOrBelow(bounds, out)
	if want := []int64{2, 4, 6, 8}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", out, want)
	}
	empty := []int64{7, 7}
	NewHist().CountsAtOrBelow(bounds[:2], empty)
	if empty[0] != 0 || empty[1] != 0 {
		t.Errorf("empty histogram: %v", empty)
	}
	if s := h.SumMicros(); s < 90_252_000*0.999 || s > 90_252_000*1.001 {
		t.Errorf("sum %v us, want about 90252212", s)
	}
}
