package qgen

import (
	"math"
	"testing"
)

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func fill(v float64) [22]float64 {
	var a [22]float64
	for i := range a {
		a[i] = v
	}
	return a
}

func TestPower(t *testing.T) {
	// All 24 intervals 2 s at SF 1: geometric mean 2, 3600·1/2 = 1800.
	if got := Power(1, fill(2), [2]float64{2, 2}); !near(got, 1800) {
		t.Errorf("Power(all 2 s) = %v, want 1800", got)
	}

	// SF 10, 12 query intervals of 4 s, 10 of 1 s, RF1 = RF2 = 1 s:
	// product 4^12 = 2^24, mean (2^24)^(1/24) = 2, 36000/2 = 18000.
	qi := fill(1)
	for i := range 12 {
		qi[i] = 4
	}
	if got := Power(10, qi, [2]float64{1, 1}); !near(got, 18000) {
		t.Errorf("Power(mixed) = %v, want 18000", got)
	}
}

func TestPowerOverTuningClamp(t *testing.T) {
	// SF 10; Q1 takes 1000 s, the other 21 queries 0.001 s, RFs 1 s.
	// 0.001 < 1000/1000 = 1, so the 21 are raised to 1 s: the product is
	// 1000 · 1^23 = 10^3, the mean 10^(3/24) = 10^(1/8) = 1.33352,
	// Power = 36000 / 1.33352 = 26996.19.
	// Without the rule the mean would be (1000 · 0.001^21)^(1/24) =
	// 10^(-60/24) = 10^-2.5 and Power 36000 · 316.23 = 11.4 million.
	qi := fill(0.001)
	qi[0] = 1000
	got := Power(10, qi, [2]float64{1, 1})
	if want := 36000 / math.Pow(10, 0.125); !near(got, want) {
		t.Errorf("Power with clamp = %v, want %v (≈26996.19)", got, want)
	}

	// An interval exactly at max/1000 is kept: 21 queries at 1 s, one at
	// 1000 s, RFs 1 s gives the same 10^(1/8) mean.
	qi = fill(1)
	qi[5] = 1000
	if got2 := Power(10, qi, [2]float64{1, 1}); !near(got2, got) {
		t.Errorf("Power at the clamp boundary = %v, want %v", got2, got)
	}

	// Zero query intervals are raised too (all but one query instant).
	qi = fill(0)
	qi[21] = 2000
	// 2000 · 2^21 (each raised to 2 s) · 1 · 1 = 1000 · 2^22; the mean is
	// (2000 · 2^21)^(1/24).
	want := 3600 / math.Pow(2000*math.Pow(2, 21), 1.0/24)
	if got := Power(1, qi, [2]float64{1, 1}); !near(got, want) {
		t.Errorf("Power with zero query intervals = %v, want %v", got, want)
	}
}

func TestPowerRefreshNotClamped(t *testing.T) {
	// Queries 1 s each, RF1 0.0001 s (far below 1/1000 of anything), RF2 1 s:
	// the refresh interval is used as given, the mean is
	// (10^-4)^(1/24) = 10^(-1/6), Power = 3600 · 10^(1/6) = 5284.06.
	got := Power(1, fill(1), [2]float64{0.0001, 1})
	if want := 3600 * math.Pow(10, 1.0/6); !near(got, want) {
		t.Errorf("Power = %v, want %v", got, want)
	}
	// A long refresh function does not raise the query floor: RF1 10^6 s,
	// queries 1 s and one 0.01 s (not below 1/1000 of the longest query,
	// 1 s): mean = (10^6 · 0.01)^(1/24) = 10^(4/24), Power = 3600 / 10^(1/6).
	qi := fill(1)
	qi[3] = 0.01
	got = Power(1, qi, [2]float64{1e6, 1})
	if want := 3600 / math.Pow(10, 1.0/6); !near(got, want) {
		t.Errorf("Power with long RF = %v, want %v", got, want)
	}
}

func TestPowerInvalid(t *testing.T) {
	for name, got := range map[string]float64{
		"zero RF":       Power(1, fill(1), [2]float64{0, 1}),
		"negative RF":   Power(1, fill(1), [2]float64{-1, 1}),
		"all QI zero":   Power(1, fill(0), [2]float64{1, 1}),
		"NaN QI":        Power(1, fill(math.NaN()), [2]float64{1, 1}),
		"zero SF":       Power(0, fill(1), [2]float64{1, 1}),
		"negative QI":   Power(1, [22]float64{-1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -2}, [2]float64{1, 1}),
		"throughput 0s": Throughput(1, 2, 0),
		"no streams":    Throughput(1, 0, 10),
		"QphH negative": QphH(-1, 10),
		"GeoMean empty": GeoMean(nil),
		"GeoMean neg":   GeoMean([]float64{1, -1}),
	} {
		if !math.IsNaN(got) {
			t.Errorf("%s: %v, want NaN", name, got)
		}
	}
}

func TestThroughput(t *testing.T) {
	// 2 streams at SF 1 in one hour: 2·22·3600/3600·1 = 44.
	if got := Throughput(1, 2, 3600); !near(got, 44) {
		t.Errorf("Throughput(1, 2, 3600) = %v, want 44", got)
	}
	// 3 streams at SF 10 in 1800 s: 3·22·3600/1800·10 = 1320.
	if got := Throughput(10, 3, 1800); !near(got, 1320) {
		t.Errorf("Throughput(10, 3, 1800) = %v, want 1320", got)
	}
}

func TestQphH(t *testing.T) {
	// √(400·100) = 200; √(1800·44) = √79200 = 281.4249...
	if got := QphH(400, 100); !near(got, 200) {
		t.Errorf("QphH(400, 100) = %v, want 200", got)
	}
	if got := QphH(1800, 44); !near(got, math.Sqrt(79200)) {
		t.Errorf("QphH(1800, 44) = %v", got)
	}
}

func TestGeoMean(t *testing.T) {
	// (1·2·4)^(1/3) = 8^(1/3) = 2; (2·8)^(1/2) = 4; a single value is itself.
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{1, 2, 4}, 2},
		{[]float64{2, 8}, 4},
		{[]float64{3.5}, 3.5},
		{[]float64{1e-3, 1e3}, 1},
		{[]float64{5, 0}, 0},
	} {
		if got := GeoMean(c.in); !near(got, c.want) {
			t.Errorf("GeoMean(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestRoundInterval(t *testing.T) {
	for in, want := range map[float64]float64{
		23.74: 23.7, 23.75: 23.8, 0.35: 0.4, 1.45: 1.5, 2.05: 2.1, 2.04999: 2.0, 0.04: 0.1, 0: 0.1, 0.05: 0.1, 0.14: 0.1, 0.15: 0.2, 100: 100,
	} {
		if got := RoundInterval(in); !near(got, want) {
			t.Errorf("RoundInterval(%v) = %v, want %v", in, got, want)
		}
	}
}
