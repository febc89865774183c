package qgen

import (
	"slices"
	"testing"
)

func TestOrderPowerStream(t *testing.T) {
	want := [22]int{14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12}
	if got := Order(0); got != want {
		t.Errorf("Order(0) = %v, want %v", got, want)
	}
	// permute.h row 1 and the last row (40).
	if got := Order(1); got != [22]int{21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4} {
		t.Errorf("Order(1) = %v", got)
	}
	if got := Order(40); got != [22]int{13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19} {
		t.Errorf("Order(40) = %v", got)
	}
}

func TestOrderPermutations(t *testing.T) {
	all := identity(1, 22)
	distinct := map[[22]int]bool{}
	for k := range 41 {
		o := Order(k)
		s := slices.Clone(o[:])
		slices.Sort(s)
		if !slices.Equal(s, all) {
			t.Errorf("Order(%d) = %v is not a permutation of 1..22", k, o)
		}
		distinct[o] = true
		if Order(k+41) != o || Order(k+82) != o {
			t.Errorf("Order(%d) is not Order(%d mod 41)", k+41, k)
		}
	}
	if len(distinct) != 41 {
		t.Errorf("%d distinct orders among 41 streams", len(distinct))
	}
	if Order(-1) != Order(40) {
		t.Error("Order(-1) is not Order(40)")
	}
}

func TestStreamOrderAndDeterminism(t *testing.T) {
	for _, stream := range []int{0, 1, 5, 41, 60} {
		a := Stream(20240101, stream, 10)
		b := Stream(20240101, stream, 10)
		if len(a) != 22 {
			t.Fatalf("stream %d has %d queries", stream, len(a))
		}
		order := Order(stream)
		for i, q := range a {
			if q.N != order[i] {
				t.Errorf("stream %d position %d is Q%d, want Q%d", stream, i, q.N, order[i])
			}
			if q.SQL != b[i].SQL || !slices.Equal(q.Params, b[i].Params) {
				t.Errorf("stream %d Q%d differs between two calls", stream, q.N)
			}
		}
	}
}

// paramsByQuery maps a stream's queries to their parameters.
func paramsByQuery(qs []Query) map[int][]string {
	m := map[int][]string{}
	for _, q := range qs {
		m[q.N] = q.Params
	}
	return m
}

func TestStreamsDiffer(t *testing.T) {
	for _, seed := range []int64{0, 1, 1231235959, -7} {
		var prev []map[int][]string
		for stream := range 12 {
			cur := paramsByQuery(Stream(seed, stream, 1))
			for other, p := range prev {
				same := 0
				for n := 1; n <= 22; n++ {
					if slices.Equal(cur[n], p[n]) {
						same++
					}
				}
				// Some queries have few possible values (Q18 has 4), but
				// most must differ between two streams.
				if same > 11 {
					t.Errorf("seed %d: streams %d and %d share the parameters of %d queries", seed, other, stream, same)
				}
			}
			prev = append(prev, cur)
		}
	}
	if slices.Equal(Stream(1, 0, 1)[0].Params, Stream(2, 0, 1)[0].Params) &&
		slices.Equal(Stream(1, 0, 1)[1].Params, Stream(2, 0, 1)[1].Params) {
		t.Error("seeds 1 and 2 give the same power stream")
	}
}

// Stream s uses qgen's draws for seed+s: stream 3 of seed 10 is the
// generator NewRand(13) in Order(3).
func TestStreamSeedConvention(t *testing.T) {
	r := NewRand(13)
	for _, q := range Stream(10, 3, 1) {
		if want := Random(q.N, 1, r); !slices.Equal(q.Params, want.Params) {
			t.Errorf("Q%d: %q, want %q", q.N, q.Params, want.Params)
		}
	}
}

func TestMinStreams(t *testing.T) {
	cases := map[float64]int{
		1: 2, 10: 3, 30: 4, 100: 5, 300: 6, 1000: 7, 3000: 8, 10000: 9, 30000: 10, 100000: 11,
		// Between and outside the listed scales.
		0.01: 2, 0.5: 2, 0: 2, -1: 2, 3: 2, 9.99: 2, 50: 4, 299: 5, 999: 6, 200000: 11,
	}
	for sf, want := range cases {
		if got := MinStreams(sf); got != want {
			t.Errorf("MinStreams(%v) = %d, want %d", sf, got, want)
		}
	}
}
