// Package dbgen generates the TPC-H-like tables row for row as the TPC's
// reference generator (dbgen) does, from the specification's rules and
// dbgen's published definitions: the random streams and their seeds, the
// distributions of dists.dss, the text grammar, and the per-column rules.
//
// Every column is drawn from its own random stream, and every stream uses a
// fixed number of draws per row whatever the row needed, so any row of any
// table can be generated without the rows before it: a stream is moved to a
// row by jumping ahead by squaring. That is what lets the loader generate a
// table in parallel chunks that are, concatenated, the reference file.
package dbgen

// The streams are Lehmer (Park–Miller "minimal standard") generators:
// x' = 16807·x mod (2^31 − 1) (Park and Miller, "Random number generators:
// good ones are hard to find", CACM 31(10), 1988; the same constants as
// dbgen's rnd.c).
const (
	multiplier = 16807
	modulus    = 2147483647
)

// stream is one column's random stream: the current value, how many draws
// a row reserves, and how many the current row has used.
type stream struct {
	seed   int64
	perRow int64
	used   int64
}

func newStream(seed, perRow int64) stream {
	return stream{seed: seed, perRow: perRow}
}

// next draws the next value in [1, 2^31 − 2].
func (s *stream) next() int64 {
	s.seed = s.seed * multiplier % modulus
	s.used++
	return s.seed
}

// intIn draws an integer in [low, high] as dbgen's UnifInt does: the draw as
// a fraction of the modulus, times the width, truncated. The width is
// computed in 32-bit arithmetic and wraps for the full int32 range, as the
// reference does (the alphanumeric strings rely on it).
func (s *stream) intIn(low, high int32) int32 {
	s.next()
	width := float64(high - low + 1)
	return low + int32(float64(s.seed)/modulus*width)
}

// advance moves the stream n draws ahead.
func (s *stream) advance(n int64) { s.seed = jump(s.seed, n) }

// jump is seed·16807^n mod m, by squaring: n draws of the 32-bit generator
// ahead (the 64-bit streams are moved the same way).
func jump(seed, n int64) int64 {
	m := int64(multiplier)
	for n > 0 {
		if n&1 == 1 {
			seed = seed * m % modulus
		}
		m = m * m % modulus
		n >>= 1
	}
	return seed
}

// rowDone skips what the current row left of its draws.
func (s *stream) rowDone() {
	s.advance(s.perRow - s.used)
	s.used = 0
}

// skipRows moves the stream n whole rows ahead.
func (s *stream) skipRows(n int64) {
	if s.used != 0 {
		s.rowDone()
	}
	s.advance(s.perRow * n)
}

// longStream is the 64-bit stream dbgen switches to for keys drawn from
// ranges past 2^31 (scale factors of 30,000 and more): a linear
// congruential generator with Knuth's MMIX constants whose value is taken
// modulo the width, while rows are still skipped with the 32-bit method.
type longStream struct {
	seed   int64
	perRow int64
	used   int64
}

const (
	longMultiplier = 6364136223846793005
	longIncrement  = 1
)

func (s *longStream) intIn(low, high int64) int64 {
	s.seed = s.seed*longMultiplier + longIncrement
	s.used++
	v := s.seed
	if v < 0 {
		v = -v
	}
	return low + v%(high-low+1)
}

func (s *longStream) rowDone() {
	s.seed = jump(s.seed, s.perRow-s.used)
	s.used = 0
}

func (s *longStream) skipRows(n int64) {
	if s.used != 0 {
		s.rowDone()
	}
	s.seed = jump(s.seed, s.perRow*n)
}

// keyStream draws keys from [1, high] with the 32-bit stream, or with the
// 64-bit one when the scale needs it.
type keyStream struct {
	wide  bool
	high  int64
	short stream
	long  longStream
}

func newKeyStream(seed, high, perRow int64, wide bool) keyStream {
	return keyStream{
		wide: wide, high: high,
		short: newStream(seed, perRow),
		long:  longStream{seed: seed, perRow: perRow},
	}
}

func (k *keyStream) next() int64 {
	if k.wide {
		return k.long.intIn(1, k.high)
	}
	return int64(k.short.intIn(1, int32(k.high)))
}

func (k *keyStream) rowDone() {
	if k.wide {
		k.long.rowDone()
	} else {
		k.short.rowDone()
	}
}

func (k *keyStream) skipRows(n int64) {
	if k.wide {
		k.long.skipRows(n)
	} else {
		k.short.skipRows(n)
	}
}
