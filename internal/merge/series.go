// The merged run's series: the shards' intervals moved onto the server's
// clock, binned into the merged intervals and their histograms merged, and
// the sampler series summed or taken from shard 0.

package merge

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
)

// bin is one merged interval: the shards' ticks whose ends fall in it.
type bin struct {
	committed, errors int64
	rate              float64 // the shards' rates summed
	active            int
	queue             int64
	phase             string
	latEnc, lagEnc    [][]byte // the shards' interval histograms, encoded
	lat, lag          *metrics.Hist
	// The bin's figures, read from lat and lag by the worker that merged
	// them (which then lets them go: a dense histogram is 188 KB).
	p50, p95, p99, maxMs, lag99 float64
	hasLat, hasLag              bool
	latMissing, lagMissing      bool
	where                       string // for an error: a shard and interval of the bin
}

// series merges the shards' interval series: each shard's intervals,
// placed on the common time axis by its window's start on the server's
// clock, fall into the merged run's intervals (whose length is the
// shards' tick); counts and rates add, and the latency percentiles of an
// interval come from the shards' interval histograms merged.
func (m *merger) series() ([]run.Tick, error) {
	tick := m.tickLength()
	bins := map[int]*bin{}
	for _, p := range m.present {
		pts := p.Run.Series
		byT := map[string]map[float64]float64{}
		for _, pt := range pts {
			if byT[pt.Series] == nil {
				byT[pt.Series] = map[float64]float64{}
			}
			byT[pt.Series][pt.T] = pt.V
		}
		lat, lag := map[float64][]byte{}, map[float64][]byte{}
		for _, ih := range p.Run.Intervals {
			if ih.Kind == store.KindLag {
				lag[ih.T] = ih.Encoded
			} else {
				lat[ih.T] = ih.Encoded
			}
		}
		shift := measureStart(p).Sub(m.t0).Seconds()
		committed := byT["committed"]
		ts := make([]float64, 0, len(committed))
		for t := range committed {
			ts = append(ts, t)
		}
		sort.Float64s(ts)
		prev := math.Inf(-1)
		spans := map[int]float64{}
		counts := map[int]int64{}
		for _, t := range ts {
			k := binOf(t, shift, tick)
			b := bins[k]
			if b == nil {
				b = &bin{phase: phaseOf(t)}
				bins[k] = b
			}
			c := int64(committed[t])
			b.committed += c
			b.errors += int64(byT["errors"][t])
			b.active += int(byT["active_workers"][t])
			b.queue += int64(byT["queue_depth"][t])
			span := tick
			if !math.IsInf(prev, -1) {
				span = t - prev
			}
			prev = t
			spans[k] += span
			counts[k] += c
			if c > 0 {
				if enc, ok := lat[t]; ok {
					b.latEnc = append(b.latEnc, enc)
				} else {
					b.latMissing = true
				}
				if enc, ok := lag[t]; ok {
					b.lagEnc = append(b.lagEnc, enc)
				} else if _, open := byT["schedule_lag_p99_ms"]; open {
					b.lagMissing = true
				}
				b.where = fmt.Sprintf("%s: interval %g s", p.Where, t)
			}
		}
		for k, sp := range spans {
			if sp > 0 {
				bins[k].rate += float64(counts[k]) / sp
			}
		}
	}
	keys := make([]int, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	if err := decodeBins(bins, keys); err != nil {
		return nil, err
	}
	out := make([]run.Tick, 0, len(keys))
	missing := 0
	for _, k := range keys {
		b := bins[k]
		tk := run.Tick{T: float64(k) * tick, Phase: b.phase, Committed: b.committed, Errors: b.errors, Completed: b.committed,
			TPS: b.rate, Span: tick, ActiveWorkers: b.active, QueueDepth: b.queue}
		switch {
		case b.latMissing && b.committed > 0:
			missing++
			tk.P50Ms, tk.P95Ms, tk.P99Ms, tk.MaxMs = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		case b.hasLat:
			tk.P50Ms, tk.P95Ms, tk.P99Ms, tk.MaxMs = b.p50, b.p95, b.p99, b.maxMs
		}
		switch {
		case b.lagMissing:
			tk.Lag99Ms = math.NaN()
		case b.hasLag:
			tk.Lag99Ms = b.lag99
		}
		out = append(out, tk)
	}
	if missing > 0 {
		m.info.Notes = append(m.info.Notes, fmt.Sprintf("%d intervals lack a shard's interval histogram (a shard stored by an older tunebench): their latency percentiles are left out", missing))
	}
	// The executor's per-op counts of an interval are not stored; the
	// workloads' merges read the op counts of res.Ops instead.
	return out, nil
}

// binOf is the merged interval a shard's tick ending at t (its own axis,
// shifted by shift onto the merged one) falls in: the one whose end it is
// (within a tenth of a tick: the shards' ticks are their own). A warm-up
// tick stays in the warm-up, however late its shard started.
func binOf(t, shift, tick float64) int {
	k := int(math.Ceil((t+shift)/tick - 0.1))
	if t <= 0 && k > 0 {
		k = 0
	}
	return k
}

func phaseOf(t float64) string {
	if t <= 0 {
		return run.PhaseWarmup
	}
	return run.PhaseMeasure
}

// decodeBins merges each bin's interval histograms, the bins spread over
// the machine's cores (decoding is most of a long run's merge).
func decodeBins(bins map[int]*bin, keys []int) error {
	work := make(chan *bin)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				err := func() error {
					for _, enc := range b.latEnc {
						if err := mergeInto(&b.lat, enc); err != nil {
							return err
						}
					}
					for _, enc := range b.lagEnc {
						if err := mergeInto(&b.lag, enc); err != nil {
							return err
						}
					}
					return nil
				}()
				b.latEnc, b.lagEnc = nil, nil
				if b.lat != nil {
					ps := b.lat.PercentilesMs(50, 95, 99)
					b.p50, b.p95, b.p99, b.maxMs, b.hasLat = ps[0], ps[1], ps[2], b.lat.MaxMs(), true
				}
				if b.lag != nil {
					b.lag99, b.hasLag = b.lag.PercentileMs(99), true
				}
				b.lat, b.lag = nil, nil
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", b.where, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, k := range keys {
		work <- bins[k]
	}
	close(work)
	wg.Wait()
	return first
}

func mergeInto(dst **metrics.Hist, enc []byte) error {
	h, err := metrics.Decode(enc)
	if err != nil {
		return err
	}
	if *dst == nil {
		*dst = h
	} else {
		(*dst).Merge(h)
	}
	return nil
}

// tickLength is the shards' series interval: the most common step
// between their ticks (1 s unless --progress said otherwise).
func (m *merger) tickLength() float64 {
	count := map[float64]int{}
	for _, p := range m.present {
		var prev float64
		n := 0
		for _, pt := range p.Run.Series {
			if pt.Series != "committed" {
				continue
			}
			if n > 0 {
				count[math.Round((pt.T-prev)*1000)/1000]++
			}
			prev = pt.T
			n++
		}
	}
	best, bestN := 1.0, 0
	for d, n := range count {
		if d > 0 && (n > bestN || (n == bestN && d < best)) {
			best, bestN = d, n
		}
	}
	return best
}

// sumSeries is the named series of every shard summed, interval by
// interval, on the merged axis (as the executor's counts are).
func (m *merger) sumSeries(name string) []store.Point {
	tick := m.tickLength()
	sums := map[int]float64{}
	for _, p := range m.present {
		shift := measureStart(p).Sub(m.t0).Seconds()
		for _, pt := range p.Run.Series {
			if pt.Series == name && !math.IsNaN(pt.V) {
				sums[binOf(pt.T, shift, tick)] += pt.V
			}
		}
	}
	keys := make([]int, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]store.Point, 0, len(keys))
	for _, k := range keys {
		out = append(out, store.Point{Series: name, T: float64(k) * tick, V: sums[k]})
	}
	return out
}

// otherSeries are shard 0's series of what it alone measures (the server,
// its host and container) and of its own machine, on the merged axis.
func (m *merger) otherSeries() []store.Point {
	p := m.g.Parts[0]
	if p == nil {
		return nil
	}
	shift := measureStart(p).Sub(m.t0).Seconds()
	var out []store.Point
	for _, pt := range p.Run.Series {
		if slices.ContainsFunc(serverSide, func(pre string) bool { return strings.HasPrefix(pt.Series, pre) }) {
			out = append(out, store.Point{Series: pt.Series, T: pt.T + shift, V: pt.V})
		}
	}
	return out
}
