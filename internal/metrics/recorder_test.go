package metrics

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/step"
)

func TestRecorderKeysPhasesAndClasses(t *testing.T) {
	g := NewRegistry(false)
	r := g.NewRecorder()
	r.Record(PhaseWarmup, "a", step.ClassOK, time.Millisecond)
	r.Record(PhaseMeasure, "a", step.ClassOK, 2*time.Millisecond)
	r.Record(PhaseMeasure, "a", step.ClassRetriedOK, 3*time.Millisecond)
	r.Record(PhaseMeasure, "b", step.ClassFailedError, 4*time.Millisecond)
	r.Record(PhaseMeasure, "a", step.ClassUserAbort, 5*time.Millisecond)
	r.Count(PhaseMeasure, "skipped", step.ClassSkippedLate)

	iv := g.Harvest()
	if iv.Total() != 6 || iv.Committed() != 3 || iv.Errors() != 1 || iv.Completed() != 4 {
		t.Fatalf("interval total/committed/errors/completed = %d/%d/%d/%d", iv.Total(), iv.Committed(), iv.Errors(), iv.Completed())
	}
	if iv.Latency().Count() != 3 {
		t.Fatalf("interval committed latency count %d, want 3 (warm-up included in intervals)", iv.Latency().Count())
	}
	if iv.Service() != nil || iv.Lag() != nil {
		t.Fatal("closed-loop snapshot has service/lag")
	}
	cum := g.Cumulative()
	if cum.Total() != 5 || cum.Committed() != 2 {
		t.Fatalf("cumulative total/committed = %d/%d, want 5/2 (warm-up excluded)", cum.Total(), cum.Committed())
	}
	es := cum.Entries()
	var got []Key
	for _, e := range es {
		got = append(got, e.Key)
	}
	want := []Key{
		{"a", step.ClassOK}, {"a", step.ClassUserAbort}, {"a", step.ClassRetriedOK},
		{"b", step.ClassFailedError}, {"skipped", step.ClassSkippedLate},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entries %v, want %v", got, want)
		}
	}
	if es[4].Latency != nil {
		t.Error("skipped entry has a latency histogram")
	}
	if es[0].Latency.Count() != 1 || es[0].Latency.PercentileMs(50) < 1.99 {
		t.Errorf("a/ok latency wrong: %d, %v", es[0].Latency.Count(), es[0].Latency.PercentileMs(50))
	}

	// The next harvest starts empty; the cumulative keeps its values.
	iv = g.Harvest()
	if iv.Total() != 0 || len(iv.Entries()) != 0 || iv.Latency().Count() != 0 {
		t.Fatalf("second interval not empty: %d", iv.Total())
	}
	if g.Cumulative().Total() != 5 {
		t.Fatal("cumulative lost values")
	}
}

func TestRecorderOpenLoop(t *testing.T) {
	g := NewRegistry(true)
	r := g.NewRecorder()
	r.RecordOpen(PhaseMeasure, "x", step.ClassOK, 10*time.Millisecond, 4*time.Millisecond, 6*time.Millisecond)
	r.RecordOpen(PhaseMeasure, "x", step.ClassConnError, 10*time.Millisecond, 4*time.Millisecond, 6*time.Millisecond)
	iv := g.Harvest()
	if iv.Service().Count() != 1 || iv.Lag().Count() != 1 || iv.Latency().Count() != 1 {
		t.Fatalf("committed aggregates: %d %d %d", iv.Latency().Count(), iv.Service().Count(), iv.Lag().Count())
	}
	if p := iv.Lag().PercentileMs(99); p < 5.99 || p > 6.01 {
		t.Errorf("lag p99 = %v", p)
	}
	for _, e := range g.Cumulative().Entries() {
		if e.Service == nil || e.Lag == nil || e.Service.Count() != 1 {
			t.Errorf("entry %v lacks service/lag", e.Key)
		}
	}
}

func TestSnapshotMerge(t *testing.T) {
	a, b := NewSnapshot(true), NewSnapshot(true)
	ga := NewRegistry(true)
	ra := ga.NewRecorder()
	ra.RecordOpen(PhaseMeasure, "x", step.ClassOK, time.Millisecond, time.Millisecond, 0)
	ra.RecordOpen(PhaseMeasure, "y", step.ClassFailedError, time.Millisecond, time.Millisecond, 0)
	a.Merge(ga.Harvest())
	ra.RecordOpen(PhaseMeasure, "x", step.ClassOK, 3*time.Millisecond, time.Millisecond, 0)
	b.Merge(ga.Harvest())
	a.Merge(b)
	if a.Total() != 3 || a.Committed() != 2 || a.Latency().Count() != 2 || a.Service().Count() != 2 {
		t.Fatalf("merge: %d %d %d", a.Total(), a.Committed(), a.Latency().Count())
	}
	if !a.Latency().Equal(ga.Cumulative().Latency()) {
		t.Fatal("merged snapshot differs from cumulative")
	}
	a.Reset()
	if a.Total() != 0 || len(a.Entries()) != 0 || a.Latency().Count() != 0 {
		t.Fatal("reset left data")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	g := NewRegistry(true)
	r := g.NewRecorder()
	ops := []string{"new_order", "payment", "delivery"}
	lat := []time.Duration{150 * time.Microsecond, 2 * time.Millisecond, 40 * time.Millisecond, 3 * time.Second}
	warm := func() {
		for i := 0; i < 1000; i++ {
			for _, op := range ops {
				for _, l := range lat {
					r.Record(PhaseMeasure, op, step.ClassOK, l)
					r.RecordOpen(PhaseMeasure, op, step.ClassRetriedOK, l, l, l)
				}
			}
		}
	}
	// Fill both the live and the spare buffers.
	warm()
	g.Harvest()
	warm()
	g.Harvest()
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		op := ops[i%len(ops)]
		l := lat[i%len(lat)]
		r.Record(PhaseMeasure, op, step.ClassOK, l)
		r.RecordOpen(PhaseMeasure, op, step.ClassRetriedOK, l, l, l)
		r.Count(PhaseMeasure, op, step.ClassOK)
		i++
	})
	if allocs != 0 {
		t.Fatalf("Record allocates %v per call", allocs)
	}
}

func TestHarvestConcurrentWithRecording(t *testing.T) {
	g := NewRegistry(false)
	const workers, per = 4, 20_000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		r := g.NewRecorder()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r.Record(PhaseMeasure, "op", step.ClassOK, time.Duration(i%5000)*time.Microsecond)
				if i%1000 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen int64
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		seen += g.Harvest().Total()
	}
	seen += g.Harvest().Total()
	if seen != workers*per || g.Cumulative().Total() != workers*per || g.Cumulative().Latency().Count() != workers*per {
		t.Fatalf("seen %d, cumulative %d, want %d", seen, g.Cumulative().Total(), workers*per)
	}
}

func TestReadSelf(t *testing.T) {
	a := ReadSelf()
	x := 0
	for i := 0; i < 5_000_000; i++ {
		x += i % 7
	}
	_ = make([]byte, 1<<20)
	runtime.GC()
	b := ReadSelf()
	d := b.Sub(a)
	if x == 0 || d.CPU < 0 || d.GCCycles < 1 || d.GCPauses < 1 || d.GCPauseTotal <= 0 {
		t.Fatalf("self sample diff %+v", d)
	}
}

// TestRecordBatches: values wait in a worker's batch before they reach its
// histogram; every harvest and every merge of a Sparse sees all of them,
// and a harvest leaves none behind for the next interval.
func TestRecordBatches(t *testing.T) {
	g := NewRegistry(true)
	r := g.NewRecorder()
	want := NewHist()
	n := 2*packedBatch + packedBatch/2 // two full batches and half of one
	for i := 1; i <= n; i++ {
		d := time.Duration(i) * 37 * time.Microsecond
		r.RecordOpen(PhaseMeasure, "x", step.ClassOK, d, d/2, d/4)
		want.Record(d)
	}
	iv := g.Harvest()
	if !iv.Latency().Equal(want) {
		t.Fatalf("interval latency: %d values, max %d µs; want %d, max %d", iv.Latency().Count(), iv.Latency().MaxMicros(), want.Count(), want.MaxMicros())
	}
	if iv.Service().Count() != int64(n) || iv.Lag().Count() != int64(n) {
		t.Fatalf("service/lag counts %d/%d, want %d", iv.Service().Count(), iv.Lag().Count(), n)
	}
	r.Record(PhaseMeasure, "x", step.ClassOK, time.Second)
	if iv := g.Harvest(); iv.Latency().Count() != 1 || iv.Latency().MaxMicros() < 999_000 || iv.Latency().MaxMicros() > 1_001_000 {
		t.Fatalf("second interval: %d values, max %d µs; want the one second only", iv.Latency().Count(), iv.Latency().MaxMicros())
	}
	if c := g.Cumulative().Latency().Count(); c != int64(n)+1 {
		t.Fatalf("cumulative count %d, want %d", c, n+1)
	}

	s := NewSparse()
	for i := range packedBatch + 3 {
		s.Record(time.Duration(i+1) * time.Millisecond)
	}
	h := NewHist()
	h.MergeSparse(s)
	s.Record(time.Hour + time.Minute) // overflow, still in the batch
	h2 := NewHist()
	h2.MergeSparse(s)
	if h.Count() != packedBatch+3 || h2.Count() != packedBatch+4 || h2.Overflow() != 1 {
		t.Fatalf("sparse merges: %d then %d values (overflow %d); want %d then %d (1)", h.Count(), h2.Count(), h2.Overflow(), packedBatch+3, packedBatch+4)
	}
}

// TestIntervalWarmup: the warm-up part of each harvest, so that a live
// view can split a tick's interval by phase.
func TestIntervalWarmup(t *testing.T) {
	g := NewRegistry(false)
	r := g.NewRecorder()
	r.Record(PhaseWarmup, "a", step.ClassOK, time.Millisecond)
	r.Record(PhaseWarmup, "a", step.ClassOK, time.Millisecond)
	r.Record(PhaseMeasure, "a", step.ClassOK, time.Millisecond)
	iv := g.Harvest()
	w := g.IntervalWarmup()
	if iv.Committed() != 3 || w.Committed() != 2 || w.Entries()[0].Latency.Count() != 2 {
		t.Errorf("interval %d, warm-up part %d", iv.Committed(), w.Committed())
	}
	r.Record(PhaseMeasure, "a", step.ClassOK, time.Millisecond)
	g.Harvest()
	if w := g.IntervalWarmup(); w.Total() != 0 || len(w.Entries()) != 0 {
		t.Errorf("warm-up part of a measured interval: %d", w.Total())
	}
}
