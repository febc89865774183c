package metrics

import (
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tunebench/tunebench/internal/step"
)

// Phase says whether an outcome belongs to the warm-up or to the measurement.
// Warm-up outcomes appear in interval snapshots (the per-tick series) but
// never in the cumulative snapshot.
type Phase uint8

const (
	PhaseWarmup Phase = iota
	PhaseMeasure
	numPhases
)

// Key identifies one histogram set: a transaction type and how it ended.
type Key struct {
	Op    string
	Class step.OutcomeClass
}

// packed is one sparse per-worker histogram with its overflow counter.
// Values are first collected in buf and added to h packedBatch at a time
// (and before h is read, through hist): one add to the packed form is a
// binary search over its populated buckets, and on a driver thread whose
// caches the server process emptied between two round trips that search
// was about half a microsecond a value, a few per cent of the driver's CPU
// with per-statement timing; a batch finds the buckets warm.
type packed struct {
	h    *hdrhistogram.PackedHistogram
	over int64
	n    int
	buf  [packedBatch]uint32
}

// packedBatch is how many values packed holds before adding them to h.
const packedBatch = 64

func (p *packed) record(d time.Duration) {
	v, over := clampMicros(Micros(d))
	if over {
		p.over++
	}
	// MaxMicros is below 2^32: the value fits.
	p.buf[p.n] = uint32(v)
	p.n++
	if p.n == packedBatch {
		p.flush()
	}
}

// flush adds the collected values to h.
func (p *packed) flush() {
	for _, v := range p.buf[:p.n] {
		// In range by construction: RecordValue cannot fail.
		_ = p.h.RecordValue(int64(v))
	}
	p.n = 0
}

// hist returns h with every value recorded so far.
func (p *packed) hist() *hdrhistogram.PackedHistogram {
	if p.n > 0 {
		p.flush()
	}
	return p.h
}

func (p *packed) reset() {
	p.h.Reset()
	p.over, p.n = 0, 0
}

// recData is one interval's worth of recording for one key.
type recData struct {
	n             int64 // outcomes, including those recorded without a latency
	lat, svc, lag packed
}

func newRecData(openLoop bool) *recData {
	d := &recData{lat: packed{h: newPacked()}}
	if openLoop {
		d.svc.h = newPacked()
		d.lag.h = newPacked()
	}
	return d
}

func (d *recData) reset() {
	d.n = 0
	d.lat.reset()
	if d.svc.h != nil {
		d.svc.reset()
		d.lag.reset()
	}
}

// recSlot holds the live (cur) and the harvested (spare) data of one key in
// one phase. cur is touched by the worker under Recorder.mu; spare only by the
// harvesting goroutine.
type recSlot struct {
	key        Key
	phase      Phase
	cur, spare *recData
}

type recOp struct {
	name  string
	slots [numPhases][step.NumClasses]*recSlot
}

// Recorder is one worker's recording handle. Record calls on one Recorder
// must come from one goroutine at a time (its worker); the only other party is
// the Registry's harvest, which takes the Recorder's own mutex for a pointer
// swap per key, so the lock is uncontended in practice. In steady state a
// Record call does not allocate: the op lookup is cached and the set of ops is
// small; storage grows only when a new (op, class) or a new histogram bucket
// first appears.
type Recorder struct {
	mu       sync.Mutex
	openLoop bool
	last     *recOp
	ops      []*recOp
	slots    []*recSlot
}

// slot finds or makes the slot of (ph, op, class). Caller holds r.mu.
func (r *Recorder) slot(ph Phase, op string, class step.OutcomeClass) *recSlot {
	o := r.last
	if o == nil || o.name != op {
		o = nil
		for _, x := range r.ops {
			if x.name == op {
				o = x
				break
			}
		}
		if o == nil {
			o = &recOp{name: op}
			r.ops = append(r.ops, o)
		}
		r.last = o
	}
	s := o.slots[ph][class]
	if s == nil {
		s = &recSlot{
			key:   Key{Op: op, Class: class},
			phase: ph,
			cur:   newRecData(r.openLoop),
			spare: newRecData(r.openLoop),
		}
		o.slots[ph][class] = s
		r.slots = append(r.slots, s)
	}
	return s
}

// Record records one outcome with its latency (closed loop: latency is the
// service time, so no separate service or lag histogram is kept).
// class must be below step.NumClasses.
func (r *Recorder) Record(ph Phase, op string, class step.OutcomeClass, latency time.Duration) {
	r.mu.Lock()
	d := r.slot(ph, op, class).cur
	d.n++
	d.lat.record(latency)
	r.mu.Unlock()
}

// RecordOpen records one open-loop outcome: latency from the intended start,
// service time from the actual start, and schedule lag (actual - intended
// start). On a closed-loop recorder service and lag are ignored.
func (r *Recorder) RecordOpen(ph Phase, op string, class step.OutcomeClass, latency, service, lag time.Duration) {
	r.mu.Lock()
	d := r.slot(ph, op, class).cur
	d.n++
	d.lat.record(latency)
	if d.svc.h != nil {
		d.svc.record(service)
		d.lag.record(lag)
	}
	r.mu.Unlock()
}

// Count counts one outcome that has no latency (e.g. skipped_late).
func (r *Recorder) Count(ph Phase, op string, class step.OutcomeClass) {
	r.mu.Lock()
	r.slot(ph, op, class).cur.n++
	r.mu.Unlock()
}

// Entry is the data of one key in a Snapshot.
type Entry struct {
	Key
	// Count is the number of outcomes, including those without a latency.
	Count int64
	// Latency is nil when no outcome of this key had a latency (skipped_late).
	Latency *Hist
	// Service and Lag are nil except in open loop.
	Service, Lag *Hist
}

// Snapshot is a set of per-key histograms plus aggregates over committed
// transactions (ok + retried_ok). It is not safe for concurrent use.
type Snapshot struct {
	openLoop    bool
	entries     map[Key]*Entry
	classCounts [step.NumClasses]int64
	// Aggregates over committed transactions.
	latency, service, lag *Hist
}

// NewSnapshot returns an empty snapshot; openLoop says whether service and
// lag histograms are kept.
func NewSnapshot(openLoop bool) *Snapshot {
	s := &Snapshot{openLoop: openLoop, entries: map[Key]*Entry{}, latency: NewHist()}
	if openLoop {
		s.service = NewHist()
		s.lag = NewHist()
	}
	return s
}

// OpenLoop reports whether the snapshot keeps service and lag histograms.
func (s *Snapshot) OpenLoop() bool { return s.openLoop }

// Reset empties the snapshot, keeping its memory for reuse.
func (s *Snapshot) Reset() {
	for _, e := range s.entries {
		e.Count = 0
		for _, h := range []*Hist{e.Latency, e.Service, e.Lag} {
			if h != nil && h.Count() > 0 {
				h.Reset()
			}
		}
	}
	s.classCounts = [step.NumClasses]int64{}
	for _, h := range []*Hist{s.latency, s.service, s.lag} {
		if h != nil && h.Count() > 0 {
			h.Reset()
		}
	}
}

func (s *Snapshot) entry(k Key) *Entry {
	e := s.entries[k]
	if e == nil {
		e = &Entry{Key: k}
		s.entries[k] = e
	}
	return e
}

func ensure(h **Hist) *Hist {
	if *h == nil {
		*h = NewHist()
	}
	return *h
}

// addData adds one harvested per-worker interval to s.
func (s *Snapshot) addData(k Key, d *recData) {
	e := s.entry(k)
	e.Count += d.n
	s.classCounts[k.Class] += d.n
	committed := k.Class.Committed()
	if lat := d.lat.hist(); lat.TotalCount() > 0 {
		ensure(&e.Latency).mergePacked(lat, d.lat.over)
		if committed {
			s.latency.mergePacked(lat, d.lat.over)
		}
	}
	if s.openLoop && d.svc.h != nil {
		if svc, lag := d.svc.hist(), d.lag.hist(); svc.TotalCount() > 0 {
			ensure(&e.Service).mergePacked(svc, d.svc.over)
			ensure(&e.Lag).mergePacked(lag, d.lag.over)
			if committed {
				s.service.mergePacked(svc, d.svc.over)
				s.lag.mergePacked(lag, d.lag.over)
			}
		}
	}
}

// Merge adds every count and histogram of o to s.
func (s *Snapshot) Merge(o *Snapshot) {
	for k, oe := range o.entries {
		if oe.Count == 0 {
			continue
		}
		e := s.entry(k)
		e.Count += oe.Count
		if oe.Latency != nil && oe.Latency.Count() > 0 {
			ensure(&e.Latency).Merge(oe.Latency)
		}
		if s.openLoop && oe.Service != nil && oe.Service.Count() > 0 {
			ensure(&e.Service).Merge(oe.Service)
			ensure(&e.Lag).Merge(oe.Lag)
		}
	}
	for c, n := range o.classCounts {
		s.classCounts[c] += n
	}
	s.latency.Merge(o.latency)
	if s.openLoop && o.openLoop {
		s.service.Merge(o.service)
		s.lag.Merge(o.lag)
	}
}

// Entries returns the keys with at least one outcome, sorted by op then
// class. The entries point into s: clone histograms that must outlive a Reset.
func (s *Snapshot) Entries() []*Entry {
	out := make([]*Entry, 0, len(s.entries))
	for _, e := range s.entries {
		if e.Count > 0 {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// ClassCount is the number of outcomes of class c.
func (s *Snapshot) ClassCount(c step.OutcomeClass) int64 {
	if c >= step.NumClasses {
		return 0
	}
	return s.classCounts[c]
}

// Total is the number of outcomes of every class.
func (s *Snapshot) Total() int64 {
	var n int64
	for _, c := range s.classCounts {
		n += c
	}
	return n
}

func (s *Snapshot) sum(pred func(step.OutcomeClass) bool) int64 {
	var n int64
	for c, k := range s.classCounts {
		if pred(step.OutcomeClass(c)) {
			n += k
		}
	}
	return n
}

// Committed is the number of committed outcomes (ok + retried_ok).
func (s *Snapshot) Committed() int64 { return s.sum(step.OutcomeClass.Committed) }

// Completed is the number of completed outcomes (committed + user_abort).
func (s *Snapshot) Completed() int64 { return s.sum(step.OutcomeClass.Completed) }

// Errors is the number of error outcomes.
func (s *Snapshot) Errors() int64 { return s.sum(step.OutcomeClass.IsError) }

// Latency is the latency histogram of all committed transactions.
func (s *Snapshot) Latency() *Hist { return s.latency }

// Service is the service-time histogram of committed transactions (open
// loop; nil in closed loop).
func (s *Snapshot) Service() *Hist { return s.service }

// Lag is the schedule-lag histogram of committed transactions (open loop;
// nil in closed loop).
func (s *Snapshot) Lag() *Hist { return s.lag }

// Registry owns the recorders of one run and harvests them.
type Registry struct {
	mu         sync.Mutex
	openLoop   bool
	recorders  []*Recorder
	interval   *Snapshot
	warmup     *Snapshot // the warm-up part of interval
	cumulative *Snapshot
}

// NewRegistry returns an empty registry. openLoop says whether recorders keep
// service and schedule-lag histograms besides latency.
func NewRegistry(openLoop bool) *Registry {
	return &Registry{
		openLoop:   openLoop,
		interval:   NewSnapshot(openLoop),
		warmup:     NewSnapshot(openLoop),
		cumulative: NewSnapshot(openLoop),
	}
}

// OpenLoop reports the registry's mode.
func (g *Registry) OpenLoop() bool { return g.openLoop }

// NewRecorder makes a recorder for one worker.
func (g *Registry) NewRecorder() *Recorder {
	r := &Recorder{openLoop: g.openLoop}
	g.mu.Lock()
	g.recorders = append(g.recorders, r)
	g.mu.Unlock()
	return r
}

// Harvest moves what every recorder recorded since the previous harvest into
// a fresh interval snapshot (both phases) and into the cumulative snapshot
// (measurement phase only), and returns the interval snapshot. The returned
// snapshot belongs to the registry and is valid until the next Harvest; call
// Harvest from one goroutine.
func (g *Registry) Harvest() *Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.interval.Reset()
	g.warmup.Reset()
	for _, r := range g.recorders {
		r.mu.Lock()
		slots := r.slots
		for _, s := range slots {
			s.cur, s.spare = s.spare, s.cur
		}
		r.mu.Unlock()
		for _, s := range slots {
			d := s.spare
			if d.n == 0 {
				continue
			}
			g.interval.addData(s.key, d)
			if s.phase == PhaseMeasure {
				g.cumulative.addData(s.key, d)
			} else {
				g.warmup.addData(s.key, d)
			}
			d.reset()
		}
	}
	return g.interval
}

// IntervalWarmup is the warm-up part of the last Harvest's interval
// snapshot (the rest of it is measurement), valid until the next Harvest:
// a live view splits its counters by phase with it.
func (g *Registry) IntervalWarmup() *Snapshot { return g.warmup }

// Cumulative is the measurement-phase snapshot accumulated by every Harvest
// so far. It belongs to the registry; read it from the harvesting goroutine
// (or after the last Harvest).
func (g *Registry) Cumulative() *Snapshot { return g.cumulative }
