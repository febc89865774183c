package tpcc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// exactNURand is the exact distribution of NURand(a, x, y) with constant c,
// by enumerating every pair (random(0, a), random(x, y)): p[v-x] is the
// probability of v.
func exactNURand(a, x, y, c int) []float64 {
	n := y - x + 1
	p := make([]float64, n)
	w := 1 / float64((a+1)*n)
	for i := 0; i <= a; i++ {
		for j := x; j <= y; j++ {
			p[((i|j)+c)%n] += w
		}
	}
	return p
}

// chiSquareCritical approximates the chi-square quantile for df degrees of
// freedom at the upper tail probability of z standard deviations
// (Wilson-Hilferty).
func chiSquareCritical(df int, z float64) float64 {
	k := float64(df)
	h := 2 / (9 * k)
	return k * math.Pow(1-h+z*math.Sqrt(h), 3)
}

// chiSquare compares counts of values x.. with the expected probabilities
// p; bins with an expected count below 5 are pooled.
func chiSquare(counts []int, p []float64, draws int) (stat float64, df int) {
	var obs, exp float64
	bins := 0
	flush := func() {
		stat += (obs - exp) * (obs - exp) / exp
		bins++
		obs, exp = 0, 0
	}
	for i := range p {
		obs += float64(counts[i])
		exp += p[i] * float64(draws)
		if exp >= 5 {
			flush()
		}
	}
	if exp > 0 {
		flush()
	}
	return stat, bins - 1
}

// nurandIntNBug is the NURand variant of some public drivers for the item
// number, random(0, A-2) instead of random(0, A): the chi-square test must
// reject it (on the small cases, where the two missing values weigh most).
func nurandIntNBug(r *rand.Rand, a, x, y, c int) int {
	return (((r.IntN(a-1) | Uniform(r, x, y)) + c) % (y - x + 1)) + x
}

func TestNURandChiSquare(t *testing.T) {
	z := 3.29 // upper tail 0.0005: a correct generator fails 1 run in 2,000 (the seeds are fixed)
	cases := []struct {
		name       string
		a, x, y, c int
		draws      int
	}{
		{"small", 7, 1, 20, 5, 200000},
		{"small-odd", 13, 0, 40, 17, 200000},
		{"c_last", ALast, 0, 999, 123, 400000},
		{"c_id", ACustID, 1, CustomersPerDistrict, 259, 600000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := exactNURand(tc.a, tc.x, tc.y, tc.c)
			// The exact distribution is far from uniform: that is the point.
			if lo, hi := minMax(p); hi < 1.5*lo {
				t.Fatalf("exact distribution nearly uniform: %g..%g", lo, hi)
			}
			run := func(f func(*rand.Rand, int, int, int, int) int) (float64, int) {
				r := rand.New(rand.NewPCG(1, 2))
				counts := make([]int, tc.y-tc.x+1)
				for i := 0; i < tc.draws; i++ {
					v := f(r, tc.a, tc.x, tc.y, tc.c)
					if v < tc.x || v > tc.y {
						t.Fatalf("NURand out of range: %d", v)
					}
					counts[v-tc.x]++
				}
				return chiSquare(counts, p, tc.draws)
			}
			stat, df := run(NURand)
			if crit := chiSquareCritical(df, z); stat > crit {
				t.Errorf("chi-square %.1f > %.1f (df %d): NURand does not follow the exact distribution", stat, crit, df)
			}
			if tc.a < 100 {
				stat, df = run(nurandIntNBug)
				if crit := chiSquareCritical(df, z); stat <= crit {
					t.Errorf("chi-square %.1f <= %.1f (df %d): the test does not see the random(0, A-2) bug", stat, crit, df)
				}
			}
		})
	}
}

func minMax(p []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range p {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi
}

// TestNURandItemBoundsMean checks the item number's NURand(8191, 1, 100000)
// on its real range: bounds, and the sample mean against the exact mean
// over all pairs (random(0, 8191), random(1, 100000)).
func TestNURandItemBoundsMean(t *testing.T) {
	const a, x, y = AItemID, 1, Items
	n := y - x + 1
	for _, c := range []int{0, 4000, AItemID} {
		r := rand.New(rand.NewPCG(uint64(c), 9))
		const draws = 400000
		var s, s2 float64
		minV, maxV := y, x
		for i := 0; i < draws; i++ {
			v := NURand(r, a, x, y, c)
			minV, maxV = min(minV, v), max(maxV, v)
			s += float64(v)
			s2 += float64(v) * float64(v)
		}
		if minV < x || maxV > y {
			t.Errorf("c=%d: values %d..%d out of [%d, %d]", c, minV, maxV, x, y)
		}
		if minV > 50 || maxV < y-50 {
			t.Errorf("c=%d: values %d..%d do not cover the range", c, minV, maxV)
		}
		if c != 4000 {
			continue // the exact mean takes 819M pairs: one constant is enough
		}
		// The exact mean: the sum over all pairs of (((i|j) + c) % n) + x;
		// (i|j) + c < 2n here, so the modulo is one conditional subtraction.
		var sum int64
		for j := x; j <= y; j++ {
			for i := 0; i <= a; i++ {
				v := (i | j) + c
				if v >= n {
					v -= n
				}
				sum += int64(v + x)
			}
		}
		exact := float64(sum) / float64((a+1)*n)
		mean := s / draws
		sd := math.Sqrt(s2/draws - mean*mean)
		if se := sd / math.Sqrt(draws); math.Abs(mean-exact) > 4*se {
			t.Errorf("c=%d: mean %.1f, exact %.1f (4 standard errors %.1f)", c, mean, exact, 4*se)
		}
	}
}

func TestValidLastDelta(t *testing.T) {
	for _, tc := range []struct {
		load, run int
		ok        bool
	}{
		{0, 64, false}, {0, 65, true}, {0, 119, true}, {0, 120, false},
		{0, 96, false}, {0, 112, false}, {0, 95, true}, {0, 97, true}, {0, 111, true}, {0, 113, true},
		{200, 135, true}, {200, 104, false}, {200, 88, false}, {200, 81, true}, {255, 136, true}, {255, 137, true},
		{100, 100, false}, {65, 0, true},
	} {
		if got := ValidLastDelta(tc.load, tc.run); got != tc.ok {
			t.Errorf("ValidLastDelta(%d, %d) = %v, want %v", tc.load, tc.run, got, tc.ok)
		}
	}
	// Over all pairs: the rule depends only on |run - load|, and every load
	// value has valid run values.
	for load := 0; load <= ALast; load++ {
		valid := 0
		for run := 0; run <= ALast; run++ {
			d := run - load
			if d < 0 {
				d = -d
			}
			want := d >= 65 && d <= 119 && d != 96 && d != 112
			if got := ValidLastDelta(load, run); got != want || ValidLastDelta(run, load) != got {
				t.Fatalf("ValidLastDelta(%d, %d) = %v, want %v (symmetric)", load, run, got, want)
			}
			if want {
				valid++
			}
		}
		if valid == 0 {
			t.Fatalf("no valid run constant for load %d", load)
		}
	}
}

func TestNewRunConstantsValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for load := 0; load <= ALast; load++ {
		lc := Constants{CLast: load, CCustID: 5, CItemID: 6}
		seen := map[int]bool{}
		for i := 0; i < 40; i++ {
			rc := NewRunConstants(r, lc)
			if !ValidLastDelta(load, rc.CLast) {
				t.Fatalf("load %d: invalid run C_LAST %d", load, rc.CLast)
			}
			if rc.CCustID < 0 || rc.CCustID > ACustID || rc.CItemID < 0 || rc.CItemID > AItemID {
				t.Fatalf("run constants out of range: %+v", rc)
			}
			seen[rc.CLast] = true
		}
		if len(seen) < 2 {
			t.Errorf("load %d: the run C_LAST is not drawn (always %v)", load, seen)
		}
	}
}

func TestLastName(t *testing.T) {
	for num, want := range map[int]string{
		0: "BARBARBAR", 371: "PRICALLYOUGHT", 999: "EINGEINGEING", 40: "BARPRESBAR", 123: "OUGHTABLEPRI",
		580: "ESEATIONBAR", 6: "BARBARANTI",
	} {
		if got := LastName(num); got != want {
			t.Errorf("LastName(%d) = %s, want %s", num, got, want)
		}
		if got := string(AppendLastName([]byte("x"), num)); got != "x"+want {
			t.Errorf("AppendLastName(%d) = %s", num, got)
		}
	}
}

func TestMiddleIndex(t *testing.T) {
	// Position ceil(n/2), counted from 1 (clause 2.5.2.2): the lower middle
	// for even n.
	for n, want := range map[int]int{1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 2} {
		if got := MiddleIndex(n); got != want {
			t.Errorf("MiddleIndex(%d) = %d, want %d", n, got, want)
		}
	}
}
