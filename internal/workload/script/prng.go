package script

import (
	"math"
	"math/bits"
)

// PRNG is pgbench's pseudo-random generator (PostgreSQL 15 and later,
// src/common/pg_prng.c): xoroshiro128** 1.0 (Blackman and Vigna,
// https://prng.di.unimi.it/), its 128-bit state filled from a 64-bit seed
// by splitmix64. The draws below reproduce pgbench's, value for value, so
// that a script run with the same --random-seed sees the same variables
// under both tools (seeding: Seeds).
type PRNG struct{ s0, s1 uint64 }

// splitmix64 advances *x and returns the next output of the splitmix64
// sequence (Steele, Lea and Flood; constants from the published algorithm).
func splitmix64(x *uint64) uint64 {
	*x += 0x9E3779B97F4A7C15
	z := *x
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// NewPRNG returns a generator seeded with seed, as pg_prng_seed does.
func NewPRNG(seed uint64) *PRNG {
	p := &PRNG{}
	p.Seed(seed)
	return p
}

// Seed resets the state from seed. An all-zero state (a fixed point of
// the generator) is replaced by Knuth's LCG constants, as PostgreSQL does.
func (p *PRNG) Seed(seed uint64) {
	p.s0 = splitmix64(&seed)
	p.s1 = splitmix64(&seed)
	if p.s0 == 0 && p.s1 == 0 {
		p.s0, p.s1 = 0x5851F42D4C957F2D, 0x14057B7EF767814F
	}
}

// Uint64 returns the next 64 uniformly distributed bits.
func (p *PRNG) Uint64() uint64 {
	s0 := p.s0
	sx := p.s1 ^ s0
	v := bits.RotateLeft64(s0*5, 7) * 9
	p.s0 = bits.RotateLeft64(s0, 24) ^ sx ^ sx<<16
	p.s1 = bits.RotateLeft64(sx, 37)
	return v
}

// Uint64Range returns a uniform value in [lo, hi] (lo when the range is
// empty): the top bits of a draw, as many as hi-lo needs, drawn again
// while beyond it (the bitmask rejection method; fewer than two draws on
// average).
func (p *PRNG) Uint64Range(lo, hi uint64) uint64 {
	if hi <= lo {
		return lo
	}
	span := hi - lo
	shift := uint(bits.LeadingZeros64(span))
	for {
		if v := p.Uint64() >> shift; v <= span {
			return lo + v
		}
	}
}

// Float64 returns a uniform value in [0, 1) from the top 52 bits of a draw.
func (p *PRNG) Float64() float64 {
	return math.Ldexp(float64(p.Uint64()>>12), -52)
}

// Normal returns a standard normal value: the Box-Muller transform of two
// uniform values in (0, 1], one output per pair.
func (p *PRNG) Normal() float64 {
	u1 := 1 - p.Float64()
	u2 := 1 - p.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Sin(2*math.Pi*u2)
}

// Parameter bounds of pgbench's distributions.
const (
	MinGaussianParam = 2.0
	MinZipfianParam  = 1.001
	MaxZipfianParam  = 1000.0
)

// Random is pgbench's random(lb, ub): uniform in [lb, ub]. The caller
// checks lb <= ub and that ub-lb does not overflow.
func (p *PRNG) Random(lb, ub int64) int64 {
	return lb + int64(p.Uint64Range(0, uint64(ub-lb)))
}

// Exponential is random_exponential(lb, ub, param): the density falls by
// exp(-param) from lb to ub (param > 0).
func (p *PRNG) Exponential(lb, ub int64, param float64) int64 {
	cut := math.Exp(-param)
	u := 1 - p.Float64() // (0, 1]
	r := -math.Log(cut+(1-cut)*u) / param
	return lb + int64(float64(ub-lb+1)*r)
}

// Gaussian is random_gaussian(lb, ub, param): a normal draw kept within
// param standard deviations of the centre (drawn again outside), scaled
// onto [lb, ub] (param >= MinGaussianParam).
func (p *PRNG) Gaussian(lb, ub int64, param float64) int64 {
	var z float64
	for {
		z = p.Normal()
		if z >= -param && z < param {
			break
		}
	}
	r := (z + param) / (2 * param)
	return lb + int64(float64(ub-lb+1)*r)
}

// Zipfian is random_zipfian(lb, ub, s): value lb+k-1 with probability
// proportional to 1/k^s over the n = ub-lb+1 values, drawn by the
// rejection method of Devroye, "Non-Uniform Random Variate Generation"
// (Springer 1986), pp. 550-551, as pgbench does (MinZipfianParam <= s <=
// MaxZipfianParam).
func (p *PRNG) Zipfian(lb, ub int64, s float64) int64 {
	n := ub - lb + 1
	if n <= 1 {
		return lb
	}
	b := math.Pow(2, s-1)
	for {
		u, v := p.Float64(), p.Float64()
		x := math.Floor(math.Pow(u, -1/(s-1)))
		t := math.Pow(1+1/x, s-1)
		if v*x*(t-1)/(b-1) <= t/b && x <= float64(n) {
			return lb - 1 + int64(x)
		}
	}
}

// FNV-1a (64-bit) and MurmurHash2 (64-bit, Austin Appleby) constants.
const (
	fnvOffsetBasis = 0xcbf29ce484222325
	fnvPrime       = 0x100000001b3
	mm2Mul         = 0xc6a4a7935bd1e995
	mm2Mul8        = 0x35253c9ade8f4ca8 // mm2Mul * 8 mod 2^64 (the block length, 8 bytes)
	mm2Rot         = 47
)

// HashFNV1a is pgbench's hash_fnv1a(v, seed): FNV-1a over the 8 bytes of
// v, least significant first, from the offset basis XOR seed.
func HashFNV1a(v int64, seed uint64) int64 {
	h := uint64(fnvOffsetBasis) ^ seed
	for range 8 {
		h ^= uint64(v) & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return int64(h)
}

// HashMurmur2 is pgbench's hash_murmur2(v, seed) (also hash(v, seed)): one
// 8-byte block of MurmurHash64A.
func HashMurmur2(v int64, seed uint64) int64 {
	h := seed ^ mm2Mul8
	k := uint64(v) * mm2Mul
	k ^= k >> mm2Rot
	k *= mm2Mul
	h ^= k
	h *= mm2Mul
	h ^= h >> mm2Rot
	h *= mm2Mul
	h ^= h >> mm2Rot
	return int64(h)
}

// Permute is pgbench's permute(v, size, seed): a pseudorandom bijection of
// [0, size) chosen by seed, applied to v mod size (0 when size < 2). Six
// rounds, each of which multiplies by an odd number, XORs and rotates the
// lower and the upper part of the range within the largest power of two
// that fits (a bijection of each part), then adds an offset modulo size;
// the generator is seeded with seed and drawn in pgbench's order.
func Permute(v, size, seed int64) int64 {
	if size < 2 {
		return 0
	}
	var p PRNG
	p.Seed(uint64(seed))
	n := uint64(size)
	x := uint64(v) % n
	width := uint(63 - bits.LeadingZeros64(n)) // floor(log2 n)
	mask := uint64(1)<<width - 1
	rot := func(y uint64) uint64 { return (y<<1)&mask | y>>(width-1) }
	for range 6 {
		m := p.Uint64()&mask | 1
		r := p.Uint64() & mask
		if x <= mask {
			x = rot((x*m ^ r) & mask)
		}
		m = p.Uint64()&mask | 1
		r = p.Uint64() & mask
		if t := n - 1 - x; t <= mask {
			x = n - 1 - rot((t*m^r)&mask)
		}
		x = (x + p.Uint64Range(0, n-1)) % n
	}
	return int64(x)
}

// Seeds are the generators pgbench derives from --random-seed seed for a
// run of clients: a base sequence seeded with seed gives, in this order,
// each client's generator for the script functions (client 0 first),
// then the default seed of the hash functions (:default_seed).
func Seeds(seed uint64, clients int) (perClient []*PRNG, defaultSeed int64) {
	base := NewPRNG(seed)
	perClient = make([]*PRNG, clients)
	for i := range perClient {
		perClient[i] = NewPRNG(base.Uint64())
	}
	return perClient, int64(base.Uint64())
}
