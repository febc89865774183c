package gen

import (
	"math"
	"math/bits"
)

// PRNG is pgbench's pseudo-random generator (PostgreSQL 15 and later,
// src/common/pg_prng.c): xoroshiro128** 1.0 (Blackman and Vigna,
// https://prng.di.unimi.it/), its 128-bit state filled from a 64-bit seed
// by splitmix64. The draws below reproduce pgbench's, value for value, so
// that a script run with the same --random-seed sees the same variables
// under both tools, and a tpcb run the same accounts as pgbench's built-in
// scripts (seeding: Seeds, ClientPRNG).
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

// ClientPRNG is client id's generator of Seeds(seed, n), for any n > id,
// made without the others.
func ClientPRNG(seed uint64, id int) *PRNG {
	base := NewPRNG(seed)
	for range id {
		base.Uint64()
	}
	return NewPRNG(base.Uint64())
}
