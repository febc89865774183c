package gen

import (
	"math"
	"testing"
)

// chiSquare compares observed counts with expected probabilities and returns
// the statistic; df = len(p)-1.
func chiSquare(obs []int, p []float64, n int) float64 {
	var x2 float64
	for i := range obs {
		e := p[i] * float64(n)
		d := float64(obs[i]) - e
		x2 += d * d / e
	}
	return x2
}

// critical99 approximates the 0.999 quantile of chi-square with df degrees of
// freedom (Wilson-Hilferty), so a correct generator fails about 1 in 1000 seeds.
func critical999(df int) float64 {
	k := float64(df)
	z := 3.09
	a := 2.0 / (9.0 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

func draw(t *testing.T, d Dist, min, max int64, n int) []int {
	t.Helper()
	r := NewPRNG(42)
	obs := make([]int, max-min+1)
	for i := 0; i < n; i++ {
		v := d.Int(r, min, max)
		if v < min || v > max {
			t.Fatalf("%v drew %d outside [%d,%d]", d, v, min, max)
		}
		obs[v-min]++
	}
	return obs
}

func TestUniformChiSquare(t *testing.T) {
	const n, k = 200000, 50
	obs := draw(t, Dist{Kind: Uniform}, 1, k, n)
	p := make([]float64, k)
	for i := range p {
		p[i] = 1.0 / k
	}
	if x2 := chiSquare(obs, p, n); x2 > critical999(k-1) {
		t.Fatalf("uniform chi-square %.1f > %.1f", x2, critical999(k-1))
	}
}

// Exact cell probabilities of pgbench's exponential over k values:
// P(x = i) = (exp(-a*i/k) - exp(-a*(i+1)/k)) / (1 - exp(-a)).
func TestExponentialChiSquare(t *testing.T) {
	const n, k, a = 200000, 40, 5.0
	obs := draw(t, Dist{Kind: Exponential, Param: a}, 0, k-1, n)
	p := make([]float64, k)
	for i := range p {
		p[i] = (math.Exp(-a*float64(i)/k) - math.Exp(-a*float64(i+1)/k)) / (1 - math.Exp(-a))
	}
	if x2 := chiSquare(obs, p, n); x2 > critical999(k-1) {
		t.Fatalf("exponential chi-square %.1f > %.1f", x2, critical999(k-1))
	}
	if obs[0] < obs[k-1]*50 {
		t.Fatalf("exponential not skewed to min: first %d last %d", obs[0], obs[k-1])
	}
}

// Gaussian cell i covers z in [-a + 2a*i/k, -a + 2a*(i+1)/k) of a normal truncated to [-a, a).
func TestGaussianChiSquare(t *testing.T) {
	const n, k, a = 200000, 40, 2.5
	obs := draw(t, Dist{Kind: Gaussian, Param: a}, 1, k, n)
	phi := func(z float64) float64 { return 0.5 * (1 + math.Erf(z/math.Sqrt2)) }
	total := phi(a) - phi(-a)
	p := make([]float64, k)
	for i := range p {
		lo := -a + 2*a*float64(i)/k
		hi := -a + 2*a*float64(i+1)/k
		p[i] = (phi(hi) - phi(lo)) / total
	}
	if x2 := chiSquare(obs, p, n); x2 > critical999(k-1) {
		t.Fatalf("gaussian chi-square %.1f > %.1f", x2, critical999(k-1))
	}
}

// Zipf over k values: P(x = i) = i^-s / H(k, s), i = 1..k.
func TestZipfianChiSquare(t *testing.T) {
	for _, s := range []float64{1.01, 1.5, 3} {
		const n, k = 300000, 30
		obs := draw(t, Dist{Kind: Zipfian, Param: s}, 1, k, n)
		p := make([]float64, k)
		var h float64
		for i := 1; i <= k; i++ {
			h += math.Pow(float64(i), -s)
		}
		for i := 1; i <= k; i++ {
			p[i-1] = math.Pow(float64(i), -s) / h
		}
		if x2 := chiSquare(obs, p, n); x2 > critical999(k-1) {
			t.Fatalf("zipfian s=%g chi-square %.1f > %.1f", s, x2, critical999(k-1))
		}
	}
}

func TestParseDist(t *testing.T) {
	good := map[string]Dist{
		"uniform":         {Kind: Uniform},
		"exponential:5":   {Kind: Exponential, Param: 5},
		"gaussian:2":      {Kind: Gaussian, Param: 2},
		"zipfian:1.1":     {Kind: Zipfian, Param: 1.1},
		" Zipfian:1000 ":  {Kind: Zipfian, Param: 1000},
		"exponential:0.1": {Kind: Exponential, Param: 0.1},
	}
	for in, want := range good {
		got, err := ParseDist(in)
		if err != nil || got != want {
			t.Errorf("ParseDist(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "normal", "zipfian", "zipfian:1.0", "zipfian:1001", "gaussian:1.9",
		"exponential:0", "exponential:-1", "uniform:3", "gaussian:x", "zipfian:NaN"} {
		if _, err := ParseDist(bad); err == nil {
			t.Errorf("ParseDist(%q) accepted", bad)
		}
	}
	if s := (Dist{Kind: Zipfian, Param: 1.5}).String(); s != "zipfian:1.5" {
		t.Errorf("String = %q", s)
	}
}

func TestSeededDeterminism(t *testing.T) {
	a, b := NewRand(1, 3), NewRand(1, 3)
	c := NewRand(1, 4)
	same, diff := true, false
	for i := 0; i < 100; i++ {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Fatalf("seeded streams: same=%v diff=%v", same, diff)
	}
}

// TestZipfianLargeRange: random_zipfian's draws over 1000 values follow P(k) ∝ 1/k^s
// (chi-square over the first 20 values and the rest, 99.9% level).
func TestZipfianLargeRange(t *testing.T) {
	const n, s, draws = 1000, 1.2, 200_000
	p := NewPRNG(99)
	counts := make([]float64, 21)
	for range draws {
		k := p.Zipfian(1, n, s)
		if k < 1 || k > n {
			t.Fatalf("zipfian draw %d outside [1, %d]", k, n)
		}
		counts[min(k, 21)-1]++
	}
	var h float64
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -s)
	}
	var chi2 float64
	rest := 1.0
	for k := 1; k <= 21; k++ {
		pk := math.Pow(float64(k), -s) / h
		if k == 21 {
			pk = rest
		}
		rest -= pk
		e := pk * draws
		chi2 += (counts[k-1] - e) * (counts[k-1] - e) / e
	}
	// 20 degrees of freedom: the 99.9% quantile is 45.3.
	if chi2 > 45.3 {
		t.Errorf("chi-square %.1f over 20 degrees of freedom: the draws do not follow 1/k^%.1f", chi2, s)
	}
}

// TestClientPRNG: a client's generator made alone is the one Seeds makes
// for it among all the clients.
func TestClientPRNG(t *testing.T) {
	all, _ := Seeds(77, 5)
	for id := range all {
		if a, b := ClientPRNG(77, id).Uint64(), all[id].Uint64(); a != b {
			t.Errorf("client %d: %x alone, %x from Seeds", id, a, b)
		}
	}
}
