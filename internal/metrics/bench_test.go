package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/step"
)

// BenchmarkRecorderRecord records a wide (log-normal, sigma 1) latency
// distribution and harvests every 2,000 values, about one tick of a busy
// worker: the per-value cost includes the per-tick bucket re-population.
func BenchmarkRecorderRecord(b *testing.B) {
	g := NewRegistry(false)
	r := g.NewRecorder()
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 4096)
	for i := range lat {
		lat[i] = time.Duration(float64(time.Millisecond) * math.Exp(rng.NormFloat64()))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(PhaseMeasure, "tpcb-like", step.ClassOK, lat[i&4095])
		if i%2000 == 1999 {
			g.Harvest()
		}
	}
}
