package dbgen

import "testing"

// Park and Miller's check: from seed 1, the 10,000th value is 1043618065.
func TestMinimalStandard(t *testing.T) {
	s := newStream(1, 1)
	for range 10000 {
		s.next()
	}
	if s.seed != 1043618065 {
		t.Fatalf("10,000th value from seed 1: %d, want 1043618065", s.seed)
	}
	j := newStream(1, 1)
	j.advance(10000)
	if j.seed != s.seed {
		t.Errorf("advance(10000) = %d, want %d", j.seed, s.seed)
	}
	for _, n := range []int64{0, 1, 2, 3, 31, 1 << 20} {
		a, b := newStream(12345, 1), newStream(12345, 1)
		for range n {
			a.next()
		}
		b.advance(n)
		if a.seed != b.seed {
			t.Errorf("advance(%d) = %d, want %d", n, b.seed, a.seed)
		}
	}
}

// A row reserves perRow draws whatever it used, so skipping rows lands on
// the same draw as generating them.
func TestStreamRows(t *testing.T) {
	a := newStream(933588178, 3)
	a.next() // row 0 uses one of its three draws
	a.rowDone()
	a.intIn(1, 7) // row 1 uses one too
	a.rowDone()
	b := newStream(933588178, 3)
	b.skipRows(2)
	if a.next() != b.next() {
		t.Error("rowDone twice and skipRows(2) disagree")
	}
	s := newStream(1, 1)
	seen := map[int32]bool{}
	for range 1000 {
		v := s.intIn(5, 9)
		if v < 5 || v > 9 {
			t.Fatalf("intIn(5, 9) = %d", v)
		}
		seen[v] = true
	}
	if len(seen) != 5 {
		t.Errorf("intIn(5, 9) drew %d distinct values in 1000, want 5", len(seen))
	}
}

// The full int32 range wraps to a negative width, as in the reference: the
// alphanumeric strings take their characters from such draws.
func TestIntInFullRangeWraps(t *testing.T) {
	s := newStream(1, 1)
	v := s.intIn(0, 1<<31-1)
	// 16807 / (2^31-1) * -2^31, truncated toward zero.
	first, width := float64(16807), -2147483648.0
	if want := int32(first / modulus * width); v != want || v >= 0 {
		t.Fatalf("intIn(0, MaxInt32) = %d, want %d (negative)", v, want)
	}
}
