// Package live is the live view of a running benchmark (--listen): one
// in-process state fed from the same ticks the store gets (the executor's
// tick, the samplers' points, the run's end), read by a Prometheus /metrics
// endpoint, a small JSON endpoint and a live page. Nothing a worker does
// per transaction touches it: the executor's collector hands it one tick a
// second, whose interval histograms it turns into counters and cumulative
// buckets; the samplers hand it their points from their own goroutines;
// the HTTP handlers copy what they serve under a mutex held for
// microseconds.
//
// What /metrics serves is counters and cumulative histogram buckets (never
// quantiles someone would average), every series labelled with the run's
// key (RunInfo.Key, stored with the run as run_key) and, when set, its
// shard. docs/live.md lists the metrics.
package live

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
)

// Phases of the counters: a transaction counts in the phase it started
// in, as the executor records it (drained work is measurement).
const (
	PhaseWarmup  = "warmup"
	PhaseMeasure = "measure"
)

// Bounds are the upper bounds of the latency histogram's buckets, in
// seconds (plus +Inf): 50 µs to 60 s, about five a decade.
var Bounds = []float64{
	50e-6, 100e-6, 150e-6, 200e-6, 300e-6, 500e-6, 750e-6,
	1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3, 7.5e-3,
	10e-3, 15e-3, 20e-3, 30e-3, 50e-3, 75e-3,
	100e-3, 150e-3, 200e-3, 300e-3, 500e-3, 750e-3,
	1, 1.5, 2, 3, 5, 7.5,
	10, 20, 30, 60,
}

// boundsMicros is Bounds in microseconds, the histograms' unit.
var boundsMicros = func() []int64 {
	out := make([]int64, len(Bounds))
	for i, b := range Bounds {
		out[i] = int64(b*1e6 + 0.5)
	}
	return out
}()

// History limits: what the page can draw after it was opened late (at
// least this much, at most twice: see trim).
const (
	maxTicks  = 3600 // one hour of 1 s ticks
	maxPoints = 3600 // per host series
)

// NewKey makes a run key: the UTC start time and four random hex digits,
// e.g. 20260105-143012-3f2a. It labels the run's series from its first
// tick, before the store gives the run its id, and is stored with the run
// (run_key) so that a Prometheus series can be matched to the stored run.
func NewKey(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Headline is the figure a workload's runs are compared by.
type Headline struct {
	Metric string `json:"metric"` // tps, nopm, qphh, ...
	Label  string `json:"label"`  // tps, NOPM, QphH-like
	Unit   string `json:"unit"`
}

// RunInfo describes a run when it starts.
type RunInfo struct {
	// Key labels every series of the run (NewKey).
	Key      string
	Workload string
	// Shard is the run's shard (e.g. "2/4") for a sharded run; "" for a
	// whole run, and then the series have no shard label.
	Shard      string
	Experiment string
	// PlanRun is the run's place in an experiment's plan (-1 outside one)
	// and PlanLabel its configuration's description.
	PlanRun   int
	PlanLabel string
	Headline  Headline
	// Ticks says whether the executor drives the run (ticks come); a
	// workload that measures itself serves its samplers and, at the end,
	// its headline.
	Ticks bool
}

// Hub is the live state of one process: the current run (the last one
// once it ended, until the next starts) and an experiment's plan and
// progress. It is safe for concurrent use.
type Hub struct {
	mu  sync.Mutex
	seq int64 // increases with every change the page polls for
	run *Run
	exp *expState
	reg *prometheus.Registry
	now func() time.Time
}

// NewHub makes an empty hub with its Prometheus registry.
func NewHub() *Hub {
	h := &Hub{now: time.Now}
	h.reg = prometheus.NewRegistry()
	h.reg.MustRegister(collector{h})
	return h
}

// NewRun makes r the hub's current run; the previous run's series are no
// longer served.
func (h *Hub) NewRun(info RunInfo) *Run {
	r := &Run{h: h, info: info, started: h.now(), outcomes: map[outcomeKey]*outcome{},
		latest: map[string]sample{}, history: map[string][]point{}}
	r.descs = newDescs(info)
	h.mu.Lock()
	h.seq++
	h.run = r
	if h.exp != nil && info.PlanRun >= 0 {
		h.exp.setKey(info.PlanRun, info.Key)
	}
	h.mu.Unlock()
	return r
}

// Run is one run's live figures. Its methods are called by the run's
// lifecycle: Tick from the executor's collector, Points from the
// samplers, Finish at the end.
type Run struct {
	h       *Hub
	info    RunInfo
	started time.Time
	descs   *descs

	// Under h.mu.
	outcomes map[outcomeKey]*outcome
	ticks    []tickRec
	last     tickRec
	ticked   bool
	headline struct {
		v          float64
		set, final bool
	}
	latest   map[string]sample
	history  map[string][]point
	finished bool
	endedAt  time.Time
	final    finalRec
}

// staleAfter is how long a sampler series' latest value is served without
// a new one: a source that stopped answering (a node_exporter gone, an SQL
// read timing out) shows as a gap in the scraped series, not as its last
// value held.
const staleAfter = 5 * time.Second

// fresh reports whether a sampler value is still served: reported within
// staleAfter of now, or of the run's end once it ended (the final figures
// stay served while --listen-linger keeps the view up).
func (r *Run) fresh(s sample, now time.Time) bool {
	if r.finished {
		now = r.endedAt
	}
	return now.Sub(s.at) <= staleAfter
}

// SetExecutor says whether the executor drives the run (ticks will
// come) or the workload measures itself (its headline comes at the end).
func (r *Run) SetExecutor(executor bool) {
	r.h.mu.Lock()
	r.info.Ticks = executor
	r.h.seq++
	r.h.mu.Unlock()
}

// Key is the run's key.
func (r *Run) Key() string { return r.info.Key }

type outcomeKey struct {
	op    string
	class step.OutcomeClass
	phase string
}

// outcome is the counters of one (op, class, phase): the count and, for
// classes with a latency, the cumulative buckets and the sum.
type outcome struct {
	count   int64
	latency bool
	buckets []int64 // values <= Bounds[i]
	latN    int64   // values with a latency (every value of the class but skipped_late's)
	sumSec  float64
}

type tickRec struct {
	Seq      int64   `json:"seq"`
	X        float64 `json:"x"` // seconds since the run started (wall clock)
	T        float64 `json:"t"` // the executor's time (0 = measurement start)
	Phase    string  `json:"phase"`
	TPS      float64 `json:"tps"`
	Headline float64 `json:"headline"`
	HasHead  bool    `json:"has_headline"`
	P50      float64 `json:"p50_ms"`
	P95      float64 `json:"p95_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	Errors   int64   `json:"errors"`
	Active   int     `json:"active_workers"`
	Queue    int64   `json:"queue_depth"`
}

type sample struct {
	v  float64
	at time.Time
}

type point struct {
	seq  int64
	x, v float64
}

type finalRec struct {
	Status string `json:"status,omitempty"`
	RunID  int64  `json:"run_id,omitempty"`
	Error  string `json:"error,omitempty"`
}

// delta is what one tick adds to one outcome.
type delta struct {
	key     outcomeKey
	count   int64
	latN    int64
	buckets []int64
	sumSec  float64
}

// deltas splits a tick's interval by op, class and phase, with the
// latency buckets of each. It runs on the executor's collector, once a
// tick, outside the hub's lock.
func deltas(tk run.Tick) []delta {
	if tk.Interval == nil {
		return nil
	}
	warm := map[metrics.Key]*metrics.Entry{}
	if tk.IntervalWarmup != nil {
		for _, e := range tk.IntervalWarmup.Entries() {
			warm[e.Key] = e
		}
	}
	var out []delta
	for _, e := range tk.Interval.Entries() {
		all := measureOf(e)
		w := warm[e.Key]
		if w != nil {
			wd := measureOf(w)
			if all.buckets != nil && wd.buckets != nil {
				for i := range all.buckets {
					all.buckets[i] -= wd.buckets[i]
				}
			}
			all.count -= wd.count
			all.latN -= wd.latN
			all.sumSec -= wd.sumSec
			if all.sumSec < 0 {
				all.sumSec = 0
			}
			wd.key = outcomeKey{e.Op, e.Class, PhaseWarmup}
			out = append(out, wd)
		}
		if all.count > 0 {
			all.key = outcomeKey{e.Op, e.Class, PhaseMeasure}
			out = append(out, all)
		}
	}
	return out
}

func measureOf(e *metrics.Entry) delta {
	d := delta{count: e.Count}
	if e.Latency != nil && e.Latency.Count() > 0 {
		d.latN = e.Latency.Count()
		d.buckets = make([]int64, len(boundsMicros))
		e.Latency.CountsAtOrBelow(boundsMicros, d.buckets)
		d.sumSec = e.Latency.SumMicros() / 1e6
	}
	return d
}

// Tick adds one executor tick: its outcomes to the counters and buckets,
// its figures to the page's history. headline is the workload's headline
// over the tick when it has one (hasHeadline).
func (r *Run) Tick(tk run.Tick, headline float64, hasHeadline bool) {
	ds := deltas(tk)
	now := r.h.now()
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range ds {
		o := r.outcomes[d.key]
		if o == nil {
			o = &outcome{}
			r.outcomes[d.key] = o
		}
		o.count += d.count
		if d.buckets != nil {
			if o.buckets == nil {
				o.buckets = make([]int64, len(Bounds))
			}
			o.latency = true
			for i, n := range d.buckets {
				o.buckets[i] += n
			}
			o.latN += d.latN
			o.sumSec += d.sumSec
		}
	}
	h.seq++
	rec := tickRec{Seq: h.seq, X: now.Sub(r.started).Seconds(), T: tk.T, Phase: tk.Phase, TPS: tk.TPS,
		Headline: headline, HasHead: hasHeadline, P50: tk.P50Ms, P95: tk.P95Ms, P99: tk.P99Ms, Max: tk.MaxMs,
		Errors: tk.Errors, Active: tk.ActiveWorkers, Queue: tk.QueueDepth}
	r.last, r.ticked = rec, true
	r.ticks = trim(append(r.ticks, rec), maxTicks)
	if hasHeadline && !r.headline.final {
		r.headline.v, r.headline.set = headline, true
	}
}

// trim keeps the last keep elements of a history once it holds twice as
// many, moving them down in place: no allocation once the history is
// full, one copy every keep additions.
func trim[T any](xs []T, keep int) []T {
	if len(xs) < 2*keep {
		return xs
	}
	n := copy(xs, xs[len(xs)-keep:])
	return xs[:n]
}

// hostSeries are the sampler series the page draws over time (every
// series' latest value is served besides).
func hostSeries(name string) bool {
	for _, p := range []string{"sys.", "driver.", "disk.", "net.", "server.sys.", "server.net.", "container."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Points adds a sample's points, taken at their nominal time at.
func (r *Run) Points(at time.Time, pts []sampler.Point) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	x := at.Sub(r.started).Seconds()
	for _, p := range pts {
		if p.Series == sampler.ActiveSessions {
			// The wait-event sampler reports only the events it saw: one
			// not seen in this second had no active sessions (as the
			// stored series are densified), not its last value.
			for name, s := range r.latest {
				if strings.HasPrefix(name, sampler.WaitPrefix) && s.at.Before(at) {
					r.latest[name] = sample{v: 0, at: at}
				}
			}
		}
	}
	for _, p := range pts {
		r.latest[p.Series] = sample{v: p.V, at: at}
		if hostSeries(p.Series) {
			r.history[p.Series] = trim(append(r.history[p.Series], point{seq: h.seq, x: x, v: p.V}), maxPoints)
		}
	}
}

// Finish records the run's end: its stored status and id, and the
// headline as stored (the final figure replaces the live one). sum may be
// nil (the run failed before it measured), err the run's error.
func (r *Run) Finish(sum *results.Summary, err error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if r.finished {
		return
	}
	r.finished, r.endedAt = true, h.now()
	if sum != nil {
		r.final.Status, r.final.RunID = sum.Status, sum.RunID
		if v, ok := sum.Metric(r.info.Headline.Metric); ok {
			r.headline.v, r.headline.set, r.headline.final = v, true, true
		}
	}
	if err != nil {
		r.final.Error = err.Error()
	}
}

// expState is an experiment's plan and progress.
type expState struct {
	info     ExperimentInfo
	started  time.Time
	total    int // runs to do in this attempt
	ordinal  int // the current run's position among them (1-based)
	done     int // runs ended in this attempt
	eta      time.Duration
	etaAt    time.Time
	status   string
	runs     []planRunState
	byIndex  map[int]int
	finished bool
}

// ExperimentInfo is an experiment's plan as the page shows it.
type ExperimentInfo struct {
	Name     string
	Workload string
	Runs     []PlanRun // in execution order
}

// PlanRun is one run of the plan.
type PlanRun struct {
	Index  int    // the plan's run index
	Label  string // its configuration and x value
	Warmup bool
}

type planRunState struct {
	PlanRun
	state  string // pending, running, done, kept (completed by an earlier attempt), failed
	key    string
	runID  int64
	status string
	brief  string
}

// ExperimentBegin starts serving an experiment: its plan, the runs of
// this attempt (total), the completed runs kept from an earlier attempt
// (kept: plan indexes) and the estimate.
func (h *Hub) ExperimentBegin(info ExperimentInfo, total int, kept []int, eta time.Duration) {
	e := &expState{info: info, started: h.now(), total: total, eta: eta, etaAt: h.now(), status: "running", byIndex: map[int]int{}}
	keptSet := map[int]bool{}
	for _, k := range kept {
		keptSet[k] = true
	}
	for i, pr := range info.Runs {
		st := "pending"
		if keptSet[pr.Index] {
			st = "kept"
		}
		e.runs = append(e.runs, planRunState{PlanRun: pr, state: st})
		e.byIndex[pr.Index] = i
	}
	h.mu.Lock()
	h.seq++
	h.exp = e
	h.mu.Unlock()
}

// ExperimentRun says that the plan's run index starts, as run ordinal of
// total in this attempt, with eta left.
func (h *Hub) ExperimentRun(index, ordinal, total int, eta time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.exp
	if e == nil {
		return
	}
	h.seq++
	e.ordinal, e.total, e.eta, e.etaAt = ordinal, total, eta, h.now()
	if i, ok := e.byIndex[index]; ok {
		e.runs[i].state = "running"
	}
}

// ExperimentRunDone says how the plan's run index ended.
func (h *Hub) ExperimentRunDone(index int, runID int64, status, brief string, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.exp
	if e == nil {
		return
	}
	h.seq++
	e.done++
	if i, ok := e.byIndex[index]; ok {
		pr := &e.runs[i]
		pr.runID, pr.status, pr.brief = runID, status, brief
		pr.state = "done"
		if failed {
			pr.state = "failed"
		}
	}
}

// ExperimentEnd says the experiment ended with status.
func (h *Hub) ExperimentEnd(status string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exp == nil {
		return
	}
	h.seq++
	h.exp.status, h.exp.finished = status, true
	h.exp.eta = 0
}

func (e *expState) setKey(index int, key string) {
	if i, ok := e.byIndex[index]; ok {
		e.runs[i].key = key
	}
}

// etaLeft is the estimate left now: the last estimate less the time since.
func (e *expState) etaLeft(now time.Time) time.Duration {
	if e.finished {
		return 0
	}
	left := e.eta - now.Sub(e.etaAt)
	if left < 0 {
		left = 0
	}
	return left
}

// sortedOutcomes lists r's outcome keys in a stable order.
func (r *Run) sortedOutcomes() []outcomeKey {
	keys := make([]outcomeKey, 0, len(r.outcomes))
	for k := range r.outcomes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.op != b.op {
			return a.op < b.op
		}
		if a.class != b.class {
			return a.class < b.class
		}
		return a.phase < b.phase
	})
	return keys
}
