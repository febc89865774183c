package qgen

// The parameter generator of the TPC's qgen (dbgen/rnd.c, dbgen/qgen.c in
// the TPC-H tools) is the Lehmer "minimal standard" generator of Park and
// Miller (CACM 31(10), 1988): x' = 16807·x mod (2^31 − 1). qgen keeps one
// such stream per query and seeds them from the -r value: stream 0 starts
// at the seed, and stream i (1..22) starts at the i-th successor of the
// seed. Query n draws only from stream n, so a query's parameters do not
// depend on the order in which the queries of a stream are generated.
const (
	lehmerMultiplier = 16807
	lehmerModulus    = 2147483647 // 2^31 − 1
)

// numStreams is qgen's stream count for parameters: the master stream 0
// and one stream per query.
const numStreams = 1 + numQueries

// zeroSeedReplacement replaces a seed that is a multiple of 2^31 − 1. Such
// a seed leaves every qgen stream at 0 for ever: each draw then returns the
// low end of its range, and Q7 and Q12, which draw until two values
// differ, never finish. The replacement is the seed of the TPC's first
// reference parameter set (dbgen/reference/cmd_qgen_sf1: "-r 0101000000").
const zeroSeedReplacement = 101000000

// Rand is the deterministic random source for substitution parameters. It
// reproduces qgen's generator and seeding: NewRand(seed) followed by
// Random(n, sf, rng) yields the parameters that `qgen -r seed -s sf n`
// prints for query n (see NewRand for the seeds where the two differ).
//
// A Rand is not safe for concurrent use; it holds no state outside itself.
type Rand struct {
	// streams[0] is the master stream, streams[n] the stream of query n.
	streams [numStreams]int64
}

// NewRand returns the generator qgen sets up for `-r seed`: the seed is
// taken modulo 2^31 − 1 (qgen adds 2^31 − 1 to a negative seed, which is
// the same for seeds down to −(2^31 − 1); for seeds beyond what qgen's
// 64-bit arithmetic handles without overflow the two differ), and a seed
// that is a multiple of 2^31 − 1, which would make qgen loop for ever, is
// replaced by 101000000.
func NewRand(seed int64) *Rand {
	s := seed % lehmerModulus
	if s < 0 {
		s += lehmerModulus
	}
	if s == 0 {
		s = zeroSeedReplacement
	}
	r := &Rand{}
	r.streams[0] = s
	for i := 1; i < numStreams; i++ {
		r.streams[0] = nextLehmer(r.streams[0])
		r.streams[i] = r.streams[0]
	}
	return r
}

// nextLehmer is one step of the generator. x < 2^31, so the product fits
// in 64 bits.
func nextLehmer(x int64) int64 {
	return x * lehmerMultiplier % lehmerModulus
}

// intn draws an integer uniformly from [lo, hi] on the given stream, with
// qgen's arithmetic (rnd.c UnifInt): advance the stream, then
// lo + trunc(x / (2^31 − 1) · (hi − lo + 1)) in double precision. The
// explicit conversions force each operation to be rounded on its own, as
// in C, so that no fused operation can change a result.
func (r *Rand) intn(lo, hi int64, stream int) int64 {
	r.streams[stream] = nextLehmer(r.streams[stream])
	frac := float64(float64(r.streams[stream]) / float64(lehmerModulus))
	scaled := float64(frac * float64(hi-lo+1))
	return lo + int64(scaled)
}

// pick draws an index into a list of count entries that all have the same
// weight, as qgen's pick_str does for a dists.dss distribution: draw j in
// [1, total weight] and take the first entry whose cumulative weight is at
// least j. With equal weights w that entry is (j − 1) / w; the weight
// matters because it sets the range of the draw.
func (r *Rand) pick(count, weight int, stream int) int {
	j := r.intn(1, int64(count*weight), stream)
	return int((j - 1) / int64(weight))
}

// permute shuffles a in place as qgen's permute (dbgen/permute.c) does:
// for each position i in turn, swap it with a position drawn from
// [i, len(a) − 1] (the last draw, from a one-element range, still advances
// the stream).
func (r *Rand) permute(a []int, stream int) {
	last := int64(len(a) - 1)
	for i := range a {
		j := r.intn(int64(i), last, stream)
		a[i], a[j] = a[j], a[i]
	}
}
