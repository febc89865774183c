package script

import (
	"math/bits"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// PRNG is pgbench's generator (package gen).
type PRNG = gen.PRNG

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
