package qgen

import "math"

// The TPC-H-like metrics (specification clause 5.4; TPC.md 2.5). All times
// are in seconds. They are computed from the intervals as given: the
// specification reports each interval rounded to 0.1 s, and a TPC-H-like
// run at a small scale has queries far shorter than that, where rounding
// would dominate the result. Callers who want the reported resolution
// round with RoundInterval first.

// overTuningRatio is the specification's limit on the ratio of the longest
// to the shortest query interval of the power test (clause 5.4.1.4 as
// recalled in TPC.md 2.5): shorter query intervals are raised to the
// longest divided by this.
const overTuningRatio = 1000

// Power returns the power metric (Power@Size-like): 3600·SF divided by the
// geometric mean of the power test's 24 timing intervals, the 22 query
// intervals qi (indexed by query number − 1) and the two refresh function
// intervals ri (RF1, RF2).
//
// Before the mean, every query interval shorter than the longest query
// interval divided by 1000 is raised to that value (the specification's
// rule against over-tuning single queries). As TPC.md states the rule, it
// concerns the query intervals only: the refresh intervals are used as
// given and do not take part in finding the longest.
//
// A query interval of zero is raised like any other short one (an
// interval below the clock's resolution). The result is NaN if any
// interval is negative or NaN, a refresh interval is zero, all query
// intervals are zero, or sf is not positive.
func Power(sf float64, qi [22]float64, ri [2]float64) float64 {
	longest := 0.0
	for _, q := range qi {
		if !(q >= 0) {
			return math.NaN()
		}
		longest = max(longest, q)
	}
	floor := longest / overTuningRatio
	var logSum float64
	for _, q := range qi {
		if q < floor {
			q = floor
		}
		if !(q > 0) {
			return math.NaN()
		}
		logSum += math.Log(q)
	}
	for _, r := range ri {
		if !(r > 0) {
			return math.NaN()
		}
		logSum += math.Log(r)
	}
	if !(sf > 0) {
		return math.NaN()
	}
	return 3600 * sf / math.Exp(logSum/float64(len(qi)+len(ri)))
}

// Throughput returns the throughput metric (Throughput@Size-like):
// streams·22·3600 / seconds · SF, where seconds is the elapsed time of the
// throughput test (Ts, from the start of the first query stream to the end
// of the last query stream or refresh function, whichever is later).
// It is NaN unless streams, seconds and sf are positive.
func Throughput(sf float64, streams int, seconds float64) float64 {
	if streams <= 0 || !(seconds > 0) || !(sf > 0) {
		return math.NaN()
	}
	return float64(streams) * numQueries * 3600 / seconds * sf
}

// QphH returns the composite query-per-hour metric (QphH@Size-like), the
// geometric mean of the power and throughput metrics: √(power·throughput).
// It is NaN if either is negative or NaN.
func QphH(power, throughput float64) float64 {
	if !(power >= 0) || !(throughput >= 0) {
		return math.NaN()
	}
	return math.Sqrt(power * throughput)
}

// GeoMean returns the geometric mean of query times, the figure HammerDB
// reports for a TPC-H-like run instead of QphH (of the power stream's
// queries, or of the slowest throughput stream's). It is 0 if any time is
// 0, and NaN for an empty list or if any time is negative or NaN.
func GeoMean(seconds []float64) float64 {
	if len(seconds) == 0 {
		return math.NaN()
	}
	var logSum float64
	for _, s := range seconds {
		if !(s >= 0) {
			return math.NaN()
		}
		if s == 0 {
			return 0
		}
		logSum += math.Log(s)
	}
	return math.Exp(logSum / float64(len(seconds)))
}

// RoundInterval rounds a timing interval to the 0.1 s resolution in which
// the specification reports intervals, half up (23.74 → 23.7,
// 23.75 → 23.8), and raises anything shorter than 0.05 s to 0.1 s so that
// no reported interval is zero (clause 5.3.7 as recalled; TPC.md 2.4 says
// "report to 0.1 s resolution"). Negative and NaN inputs are returned as
// they are. The metric functions do not call it.
func RoundInterval(seconds float64) float64 {
	if !(seconds >= 0) {
		return seconds
	}
	// The small addition keeps decimal halves such as 0.35, stored a
	// little below the half, rounding up.
	r := math.Floor(seconds*10+0.5+1e-9) / 10
	if r < 0.1 {
		r = 0.1
	}
	return r
}
