package metrics

import (
	"math"
	"runtime/metrics"
	"time"
)

// SelfSample is a reading of the driver process's own cost: CPU time
// (user+sys, from getrusage where available) and garbage-collector activity
// (from runtime/metrics). Subtract two readings to get the cost of a window.
type SelfSample struct {
	CPU time.Duration
	// GCCycles is the number of completed GC cycles.
	GCCycles int64
	// GCPauses is the number of stop-the-world GC pauses (two per cycle).
	GCPauses int64
	// GCPauseTotal is the summed GC pause time, estimated from the runtime's
	// pause histogram (bucket midpoints), so it is approximate.
	GCPauseTotal time.Duration
}

const (
	gcCyclesMetric = "/gc/cycles/total:gc-cycles"
	gcPausesMetric = "/sched/pauses/total/gc:seconds"
)

// ReadSelf takes a reading. It allocates and is meant for phase boundaries,
// not for the hot path.
func ReadSelf() SelfSample {
	s := SelfSample{CPU: processCPU()}
	samples := []metrics.Sample{{Name: gcCyclesMetric}, {Name: gcPausesMetric}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		s.GCCycles = int64(samples[0].Value.Uint64())
	}
	if samples[1].Value.Kind() == metrics.KindFloat64Histogram {
		h := samples[1].Value.Float64Histogram()
		var total float64
		for i, c := range h.Counts {
			if c == 0 {
				continue
			}
			lo, hi := h.Buckets[i], h.Buckets[i+1]
			var v float64
			switch {
			case math.IsInf(lo, -1):
				v = hi
			case math.IsInf(hi, 1):
				v = lo
			default:
				v = (lo + hi) / 2
			}
			s.GCPauses += int64(c)
			total += v * float64(c)
		}
		s.GCPauseTotal = time.Duration(total * float64(time.Second))
	}
	return s
}

// Sub returns s - o, the cost between two readings.
func (s SelfSample) Sub(o SelfSample) SelfSample {
	return SelfSample{
		CPU:          s.CPU - o.CPU,
		GCCycles:     s.GCCycles - o.GCCycles,
		GCPauses:     s.GCPauses - o.GCPauses,
		GCPauseTotal: s.GCPauseTotal - o.GCPauseTotal,
	}
}
