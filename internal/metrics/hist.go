// Package metrics records transaction latencies in HDR histograms.
//
// Units: every histogram stores MICROSECONDS. Values are recorded with three
// significant digits over 1 µs .. 1 h (MaxMicros). A value below 1 µs is
// recorded as 1 µs; a value above 1 h is recorded as exactly 1 h AND counted
// in the histogram's overflow counter, so percentiles stay conservative and
// the clamp is never silent. Accessors say their unit (Ms, Micros) and every
// percentile accessor takes a percentile in 0..100, not a quantile in 0..1.
//
// Recording happens per worker (Recorder, no locks shared between workers);
// a Registry harvests the per-worker interval data once per tick into an
// interval Snapshot and a cumulative measurement-phase Snapshot.
package metrics

import (
	"errors"
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// MinMicros is the lowest recordable value; smaller values record as MinMicros.
	MinMicros int64 = 1
	// MaxMicros (1 h) is the highest recordable value; larger values record as
	// MaxMicros and are counted as overflow.
	MaxMicros int64 = 3600 * 1000 * 1000
	// SigFigs is the number of significant decimal digits kept.
	SigFigs = 3
)

// newHDR makes a dense histogram with the package geometry.
func newHDR() *hdrhistogram.Histogram {
	return hdrhistogram.New(MinMicros, MaxMicros, SigFigs)
}

// newPacked makes a sparse histogram with the package geometry (used on the
// per-worker recording path, where memory must stay small).
func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(MinMicros, MaxMicros, SigFigs)
}

// Micros converts a duration to whole microseconds, rounding to nearest.
// Negative durations give 0 (the caller's clamp makes that MinMicros).
func Micros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + 500*time.Nanosecond) / time.Microsecond)
}

// clampMicros applies the package range: below MinMicros -> MinMicros;
// above MaxMicros -> MaxMicros with over reporting true.
func clampMicros(us int64) (v int64, over bool) {
	if us < MinMicros {
		return MinMicros, false
	}
	if us > MaxMicros {
		return MaxMicros, true
	}
	return us, false
}

// Hist is a dense latency histogram in microseconds plus its overflow
// counter. It is not safe for concurrent use; the zero value is not usable,
// use NewHist.
type Hist struct {
	h        *hdrhistogram.Histogram
	overflow int64
}

// NewHist returns an empty histogram with the package geometry.
func NewHist() *Hist { return &Hist{h: newHDR()} }

// RecordMicros records one value in microseconds (clamped and overflow-counted
// as described in the package doc).
func (h *Hist) RecordMicros(us int64) {
	v, over := clampMicros(us)
	if over {
		h.overflow++
	}
	// In range by construction: RecordValue cannot fail.
	_ = h.h.RecordValue(v)
}

// Record records one duration.
func (h *Hist) Record(d time.Duration) { h.RecordMicros(Micros(d)) }

// Merge adds every value of o to h. Both have the package geometry, so the
// merge is exact: percentiles of the merge equal those of one histogram fed
// all the values.
func (h *Hist) Merge(o *Hist) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
	h.overflow += o.overflow
}

// mergePacked adds a sparse per-worker histogram (same geometry) to h.
func (h *Hist) mergePacked(p *hdrhistogram.PackedHistogram, overflow int64) {
	p.MergeInto(h.h)
	h.overflow += overflow
}

// Reset empties h, keeping its memory.
func (h *Hist) Reset() {
	h.h.Reset()
	h.overflow = 0
}

// Clone returns an independent copy.
func (h *Hist) Clone() *Hist {
	return &Hist{h: h.h.Clone(), overflow: h.overflow}
}

// Count is the number of recorded values (overflowed values included).
func (h *Hist) Count() int64 { return h.h.TotalCount() }

// Overflow is the number of values that were above MaxMicros and were
// recorded as MaxMicros.
func (h *Hist) Overflow() int64 { return h.overflow }

// ValueAtPercentileMicros returns the value at percentile p (0..100) in
// microseconds: the highest value equivalent (within the 3-digit resolution)
// to the one p% of the values are at or below. 0 when empty.
func (h *Hist) ValueAtPercentileMicros(p float64) int64 {
	return h.h.ValueAtPercentile(p)
}

// PercentileMs returns the value at percentile p (0..100) in milliseconds.
func (h *Hist) PercentileMs(p float64) float64 {
	return float64(h.h.ValueAtPercentile(p)) / 1000
}

// PercentilesMs returns the values at the percentiles ps (each 0..100) in
// milliseconds, in the same order.
func (h *Hist) PercentilesMs(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if h.Count() == 0 {
		return out
	}
	vs := h.h.ValueAtPercentilesSlice(ps)
	for i, v := range vs {
		out[i] = float64(v) / 1000
	}
	return out
}

// MaxMicros returns the highest recorded value (rounded up to its bucket's
// highest equivalent value, so never below the true maximum), 0 when empty.
func (h *Hist) MaxMicros() int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Max()
}

// MaxMs is MaxMicros in milliseconds.
func (h *Hist) MaxMs() float64 { return float64(h.MaxMicros()) / 1000 }

// MinMs returns the lowest recorded value in milliseconds, 0 when empty.
func (h *Hist) MinMs() float64 {
	if h.Count() == 0 {
		return 0
	}
	return float64(h.h.Min()) / 1000
}

// MeanMs returns the mean in milliseconds (bucket-midpoint approximation).
func (h *Hist) MeanMs() float64 { return h.h.Mean() / 1000 }

// StdDevMs returns the standard deviation in milliseconds.
func (h *Hist) StdDevMs() float64 { return h.h.StdDev() / 1000 }

// CountsAtOrBelow sets out[i] to the number of values at or below
// bounds[i] (microseconds, ascending; out as long as bounds): the
// cumulative buckets of a Prometheus histogram. A value counts by the
// lowest value of its HDR bucket, so a bound splits values only to the
// histogram's resolution (three significant digits). It copies h into a
// pooled sparse histogram (one pass over the dense counts, no allocation
// once the pool is warm) and walks its populated buckets: about 0.2 ms for
// a wide distribution, for a live view once per tick, never per
// transaction.
func (h *Hist) CountsAtOrBelow(bounds []int64, out []int64) {
	for i := range out {
		out[i] = 0
	}
	if h.Count() == 0 {
		return
	}
	p := sparsePool.Get().(*hdrhistogram.PackedHistogram)
	defer sparsePool.Put(p)
	p.Reset()
	p.MergeFrom(h.h)
	i := 0
	var below int64
	p.ForEachBucket(func(value, count int64) bool {
		for i < len(bounds) && value > bounds[i] {
			out[i] = below
			i++
		}
		below += count
		return i < len(bounds)
	})
	for ; i < len(bounds); i++ {
		out[i] = below
	}
}

// sparsePool holds the scratch histograms of CountsAtOrBelow.
var sparsePool = sync.Pool{New: func() any { return newPacked() }}

// SumMicros is the sum of the recorded values in microseconds, from the
// bucket-midpoint mean (MeanMs): exact to the histogram's resolution.
func (h *Hist) SumMicros() float64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Mean() * float64(h.Count())
}

// Equal reports whether h and o hold the same counts and overflow.
func (h *Hist) Equal(o *Hist) bool {
	return h.overflow == o.overflow && h.h.Equals(o.h)
}

// Encode serialises h in the HdrHistogram V2 compressed format (base64 text,
// as in HdrHistogram interval logs), readable by any HdrHistogram
// implementation. The overflow counter is
// not part of that format; Decode reconstructs it (see there).
func Encode(h *Hist) ([]byte, error) {
	if h == nil {
		return nil, errors.New("metrics: encode of a nil histogram")
	}
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("metrics: encode histogram: %w", err)
	}
	return b, nil
}

// topIndex is the index of MaxMicros's bucket in a histogram's counts.
var topIndex = func() int {
	h := newHDR()
	_ = h.RecordValue(MaxMicros)
	for i, c := range h.Export().Counts {
		if c != 0 {
			return i
		}
	}
	return -1
}()

// Decode parses a V2 compressed histogram. The result always has the package
// geometry: a histogram written with another geometry is re-recorded into it
// (values above MaxMicros are clamped and counted as overflow). Because
// overflowed values are stored at MaxMicros, the overflow counter of the
// result is the count of values in MaxMicros's bucket or above; a genuine
// value within the top bucket (within 0.1% below one hour) would also be
// counted, which is conservative.
func Decode(b []byte) (*Hist, error) {
	dh, err := hdrhistogram.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("metrics: decode histogram: %w", err)
	}
	var out *Hist
	if dh.LowestTrackableValue() == MinMicros && dh.HighestTrackableValue() == MaxMicros &&
		dh.SignificantFigures() == SigFigs {
		out = &Hist{h: dh}
	} else {
		out = NewHist()
		for _, bar := range dh.Distribution() {
			if bar.Count > 0 {
				v, _ := clampMicros(bar.From)
				_ = out.h.RecordValues(v, bar.Count)
			}
		}
	}
	// The count of MaxMicros's bucket is the overflow, read at its index
	// (walking every bucket for the maximum cost ten times as much).
	if c := out.h.Export().Counts; topIndex >= 0 && topIndex < len(c) {
		out.overflow = c[topIndex]
	}
	return out, nil
}

// Sparse is a small histogram for one worker's recording (the package
// geometry, packed: memory grows with the values recorded, not the range),
// merged into a Hist to be read. Not safe for concurrent use.
type Sparse struct{ p packed }

// NewSparse returns an empty sparse histogram.
func NewSparse() *Sparse { return &Sparse{p: packed{h: newPacked()}} }

// Record records one duration.
func (s *Sparse) Record(d time.Duration) { s.p.record(d) }

// MergeSparse adds s's values to h.
func (h *Hist) MergeSparse(s *Sparse) {
	if s != nil {
		h.mergePacked(s.p.hist(), s.p.over)
	}
}
