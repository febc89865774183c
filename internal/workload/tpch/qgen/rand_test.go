package qgen

import (
	"slices"
	"testing"
)

// Park and Miller (CACM 31(10), 1988, p. 1195) give the check value of the
// minimal standard generator: from x = 1, the 10,000th value is 1043618065.
func TestLehmerCheckValue(t *testing.T) {
	x := int64(1)
	for range 10000 {
		x = nextLehmer(x)
	}
	if x != 1043618065 {
		t.Fatalf("10000th value from 1 = %d, want 1043618065", x)
	}
}

// The Lehmer sequence from 1 is x1 = 16807, x2 = 282475249,
// x3 = 1622650073, x4 = 984943658, x5 = 1144108930, ... (x(k+1) =
// 16807·xk mod 2^31−1). qgen -r 1 sets Seed[0] = 1 and Seed[i] = xi for
// i = 1..22 (qgen.c main), so query q's k-th draw uses x(q+k).
func TestNewRandSeedsLikeQgen(t *testing.T) {
	r := NewRand(1)
	want := []int64{1, 16807, 282475249, 1622650073, 984943658, 1144108930}
	for i := 1; i < len(want); i++ {
		if r.streams[i] != want[i] {
			t.Errorf("stream %d starts at %d, want %d", i, r.streams[i], want[i])
		}
	}
	// Stream 0 ends where stream 22 starts (qgen advances Seed[0] 22 times).
	if r.streams[0] != r.streams[22] {
		t.Errorf("stream 0 = %d, want stream 22's start %d", r.streams[0], r.streams[22])
	}
}

// qgen adds 2^31−1 to a negative seed; NewRand takes the seed modulo
// 2^31−1, which agrees for seeds from −(2^31−1) up.
func TestNewRandNegativeSeed(t *testing.T) {
	if *NewRand(-5) != *NewRand(lehmerModulus - 5) {
		t.Error("NewRand(-5) differs from NewRand(2^31-1-5)")
	}
	if *NewRand(lehmerModulus + 7) != *NewRand(7) {
		t.Error("NewRand(2^31-1+7) differs from NewRand(7)")
	}
}

// A seed that is 0 modulo 2^31−1 would leave every stream at 0 (Q7 would
// never find two different nations); NewRand replaces it.
func TestNewRandZeroSeed(t *testing.T) {
	for _, seed := range []int64{0, lehmerModulus, -lehmerModulus} {
		r := NewRand(seed)
		if r.streams[0] == 0 || *r != *NewRand(zeroSeedReplacement) {
			t.Errorf("NewRand(%d) is not NewRand(%d)", seed, zeroSeedReplacement)
		}
		q := Random(7, 1, r) // must terminate with two different nations
		if q.Params[0] == q.Params[1] {
			t.Errorf("seed %d: Q7 nations %v", seed, q.Params)
		}
	}
}

// Parameters qgen -r 1 gives, derived by hand from varsub.c and rnd.c:
// UnifInt(lo, hi) = lo + trunc(x / (2^31−1) · (hi−lo+1)); pick_str draws
// j = UnifInt(1, total weight) and takes the first entry whose cumulative
// weight reaches j.
func TestRandomMatchesQgenSeed1(t *testing.T) {
	cases := []struct {
		n    int
		want []string
		how  string
	}{
		{1, []string{"68"},
			"x2 = 282475249: 282475249/2147483647 = 0.13154 · 61 = 8.02 → 60+8"},
		{2, []string{"38", "STEEL", "ASIA"},
			"x3 = 1622650073: 0.75561·50 = 37.8 → 38; x4 = 984943658: 0.45865·150 = 68.8 → j 69 → p_types[68] = MEDIUM POLISHED STEEL; " +
				"x5 = 1144108930: 0.53277·5 = 2.66 → j 3 → regions[2]"},
		{4, []string{"1995-07-01"},
			"x5: 0.53277·58 = 30.9 → 30 → 19(93+30/12)-(30%12+1)-01"},
		{6, []string{"1993-01-01", "0.07", "25"},
			"x7 = 101027544: 0.04704·5 = 0.24 → 93; x8 = 1457850878: 0.67887·8 = 5.43 → 2+5; x9 = 1458777923: 0.67930·2 = 1.36 → 24+1"},
		{7, []string{"MOZAMBIQUE", "UNITED KINGDOM"},
			"x8: 0.67887·25 = 16.97 → j 17 → nations2[16]; x9: 0.67930·25 = 16.98 → j 17 again, redrawn; " +
				"x10 = 2007237709: 0.93469·25 = 23.4 → j 24 → nations2[23]"},
		{8, []string{"MOZAMBIQUE", "AFRICA", "PROMO POLISHED TIN"},
			"x9: j 17 → MOZAMBIQUE, region 0; x10: 0.93469·150 = 140.2 → j 141 → p_types[140]"},
		{13, []string{"special", "packages"},
			"x14 = 74243042: 0.03457·80 = 2.77 → j 3 ≤ 20 → Q13a[0]; x15 = 114807987: 0.05346·160 = 8.55 → j 9 ≤ 40 → Q13b[0]"},
		{18, []string{"313"},
			"x19 = 823378840: 0.38342·4 = 1.53 → 312+1"},
	}
	for _, c := range cases {
		got := Random(c.n, 1, NewRand(1)).Params
		if !slices.Equal(got, c.want) {
			t.Errorf("Q%d with seed 1: %q, want %q (%s)", c.n, got, c.want, c.how)
		}
	}

	// Q22 shuffles 0..24 (plus 10): position i swaps with UnifInt(i, 24).
	// x23 = 1264817709: 0.58898·25 = 14.7 → 14: position 0 gets 10+14 = 24;
	// x24 = 1998097157: 0.93044·24 = 22.3 → 1+22 = 23: position 1 gets 33;
	// x25 = 1817129560: 0.84617·23 = 19.5 → 2+19 = 21: position 2 gets 31.
	got := Random(22, 1, NewRand(1)).Params
	if !slices.Equal(got[:3], []string{"24", "33", "31"}) {
		t.Errorf("Q22 with seed 1 starts %q, want [24 33 31]", got[:3])
	}
}

// Each query draws from its own stream, so the order of generation does
// not matter (qgen generates them in stream order).
func TestRandomStreamsIndependent(t *testing.T) {
	a := NewRand(42)
	forward := make(map[int][]string)
	for n := 1; n <= 22; n++ {
		forward[n] = Random(n, 1, a).Params
	}
	b := NewRand(42)
	for n := 22; n >= 1; n-- {
		if got := Random(n, 1, b).Params; !slices.Equal(got, forward[n]) {
			t.Errorf("Q%d: %q in reverse order, %q in forward order", n, got, forward[n])
		}
	}
}

func TestPermuteIsPermutation(t *testing.T) {
	r := NewRand(7)
	for range 100 {
		a := identity(1, 50)
		r.permute(a, 16)
		b := slices.Clone(a)
		slices.Sort(b)
		if !slices.Equal(b, identity(1, 50)) {
			t.Fatalf("permute gave %v", a)
		}
	}
}
