package report

import (
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultResamples is the number of bootstrap resamples used for confidence
// intervals.
const DefaultResamples = 10000

// DefaultSeed seeds the bootstrap, so that a report built twice from the same
// store shows the same intervals.
const DefaultSeed uint64 = 20240601

// finite returns the finite values of xs (NaN and ±Inf dropped), in order.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// Median returns the median of the finite values of xs (the mean of the two
// middle values for an even count); NaN when there are none.
func Median(xs []float64) float64 {
	v := finite(xs)
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	return medianSorted(v)
}

func medianSorted(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// MinMax returns the smallest and largest finite values of xs; NaN, NaN when
// there are none.
func MinMax(xs []float64) (lo, hi float64) {
	v := finite(xs)
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo = math.Min(lo, x)
		hi = math.Max(hi, x)
	}
	return lo, hi
}

// Quantile returns the q-quantile (0..1) of sorted values, interpolating
// linearly between closest ranks (the "type 7" definition of R and NumPy).
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return sorted[0]
	}
	if q >= 1 {
		return sorted[n-1]
	}
	h := q * float64(n-1)
	i := int(math.Floor(h))
	if i+1 >= n {
		return sorted[n-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// RatioCI is the ratio of the medians of two groups of repetitions and its
// bootstrap confidence interval.
type RatioCI struct {
	Ratio  float64 // median(other) / median(base); NaN when undefined
	Lo, Hi float64 // confidence interval; NaN when not available
	Level  float64 // e.g. 0.95
	NBase  int     // repetitions in the base group (finite values)
	NOther int     // repetitions in the other group
	// HasCI is false when a group has fewer than two repetitions (a single
	// run has no spread to resample) or the ratio is undefined.
	HasCI bool
}

// WithinNoise reports whether the interval contains 1.0 (no difference can
// be told apart from run-to-run variation). Without an interval it is false;
// check HasCI first.
func (r RatioCI) WithinNoise() bool {
	return r.HasCI && r.Lo <= 1 && r.Hi >= 1
}

// BootstrapRatio computes median(other)/median(base) and a percentile
// bootstrap confidence interval at the given level (e.g. 0.95): each of
// `resamples` rounds draws both groups again with replacement (each group
// keeps its size), and the interval is formed by the (1-level)/2 and
// 1-(1-level)/2 quantiles of the resampled ratios. Rounds whose base median
// is zero are skipped. The random source is seeded, so the result is
// deterministic.
func BootstrapRatio(base, other []float64, resamples int, level float64, seed uint64) RatioCI {
	b, o := finite(base), finite(other)
	r := RatioCI{Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Level: level, NBase: len(b), NOther: len(o)}
	if len(b) == 0 || len(o) == 0 {
		return r
	}
	mb, mo := Median(b), Median(o)
	if mb == 0 {
		return r
	}
	r.Ratio = mo / mb
	if len(b) < 2 || len(o) < 2 || resamples < 1 {
		return r
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sb := make([]float64, len(b))
	so := make([]float64, len(o))
	ratios := make([]float64, 0, resamples)
	for range resamples {
		for i := range sb {
			sb[i] = b[rng.IntN(len(b))]
		}
		for i := range so {
			so[i] = o[rng.IntN(len(o))]
		}
		slices.Sort(sb)
		slices.Sort(so)
		den := medianSorted(sb)
		if den == 0 {
			continue
		}
		ratios = append(ratios, medianSorted(so)/den)
	}
	if len(ratios) == 0 {
		return r
	}
	slices.Sort(ratios)
	alpha := (1 - level) / 2
	r.Lo, r.Hi = Quantile(ratios, alpha), Quantile(ratios, 1-alpha)
	r.HasCI = true
	return r
}

// XY is one point of a series.
type XY struct{ X, Y float64 }

// Downsample reduces a series ordered by X to at most max points (max >= 4)
// while keeping its extremes: the points are split into max/2 consecutive
// buckets and each bucket keeps its lowest and its highest point, in X order.
// Stalls and spikes therefore survive, which an average would smooth away.
// Points with a non-finite Y are dropped. A series that already fits is
// returned as is (without the non-finite points).
func Downsample(pts []XY, max int) []XY {
	in := make([]XY, 0, len(pts))
	for _, p := range pts {
		if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) && !math.IsNaN(p.X) {
			in = append(in, p)
		}
	}
	if max < 4 {
		max = 4
	}
	if len(in) <= max {
		return in
	}
	buckets := max / 2
	out := make([]XY, 0, max)
	for b := range buckets {
		lo := b * len(in) / buckets
		hi := (b + 1) * len(in) / buckets
		if hi <= lo {
			continue
		}
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if in[i].Y < in[iMin].Y {
				iMin = i
			}
			if in[i].Y > in[iMax].Y {
				iMax = i
			}
		}
		switch {
		case iMin == iMax:
			out = append(out, in[iMin])
		case iMin < iMax:
			out = append(out, in[iMin], in[iMax])
		default:
			out = append(out, in[iMax], in[iMin])
		}
	}
	return out
}

// DownsampleMean reduces a series to at most max points by averaging
// consecutive buckets (X and Y), for stacked areas where the layers must stay
// aligned. Non-finite values count as zero.
func DownsampleMean(pts []XY, max int) []XY {
	if max < 2 {
		max = 2
	}
	if len(pts) <= max {
		return pts
	}
	out := make([]XY, 0, max)
	for b := range max {
		lo := b * len(pts) / max
		hi := (b + 1) * len(pts) / max
		if hi <= lo {
			continue
		}
		var sx, sy float64
		for _, p := range pts[lo:hi] {
			sx += p.X
			if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
				sy += p.Y
			}
		}
		n := float64(hi - lo)
		out = append(out, XY{sx / n, sy / n})
	}
	return out
}
