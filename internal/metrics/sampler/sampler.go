// Package sampler runs metric samplers (system, PostgreSQL, driver) next to
// a workload and returns their time series on the executor's time axis.
//
// Every sampler runs in its own goroutine on a fixed grid of nominal sample
// times (anchor + k*interval). The points of a sample are labelled with the
// nominal time, as the executor labels a tick with its nominal end, while
// rates are computed by the samplers over the actual time between their
// readings. When the measurement starts (MeasureStart, called from the
// executor's OnMeasureStart hook) the grid is re-anchored on that instant,
// which becomes T = 0: from then on the samples fall on the same whole
// seconds as the executor's ticks, and samples taken before it (warm-up,
// connection set-up) have negative T.
//
// Samplers never block the workload: the executor only calls MeasureStart,
// which takes a mutex held for nanoseconds. A failing sampler is recorded
// once (its first error, then a count) and keeps being called.
package sampler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

// Point is one value of a series; the collector stamps it with the nominal
// time of the sample (or flush) that returned it.
type Point struct {
	Series string
	V      float64
}

// Sampler takes one sample. now is the nominal sample time (on the grid);
// rates are the sampler's business (over the actual time between its reads).
type Sampler interface {
	Name() string
	Sample(ctx context.Context, now time.Time) ([]Point, error)
}

// Flusher is implemented by samplers polled faster than the collector's tick
// that aggregate what they saw: Flush(now) is called in the sampler's own
// goroutine (never concurrently with Sample) at every tick boundary and
// returns the aggregate of the samples since the previous flush.
type Flusher interface {
	Flush(now time.Time) []Point
}

// Closer is implemented by samplers holding resources (connections); Close
// is called once from the sampler's goroutine when it exits.
type Closer interface {
	Close() error
}

// Spec is a sampler and how often it runs.
type Spec struct {
	Sampler Sampler
	// Interval between samples; 0 means the collector's tick. A shorter
	// interval should divide the tick (e.g. 100 ms for a 1 s tick).
	Interval time.Duration
	// Host is the machine whose figures the sampler gives: HostDriver
	// (where tunebench runs), HostServer (the database server's host),
	// HostContainer (the server's container) or "" (the database's own
	// statistics); Source says how it reads them ("local /proc", ...).
	Host, Source string
	// Shared, when set, is a resource the sampler shares with other
	// specs (the connection of a source several samplers read through):
	// it is closed once, when the last sampler that shares it has exited.
	Shared Closer
}

// The hosts a sampler measures (Spec.Host).
const (
	HostDriver    = "driver"
	HostServer    = "server"
	HostContainer = "container"
)

// Options configures a Collector.
type Options struct {
	// Tick is the series interval (default 1 s): the interval of samplers
	// without one and the flush interval of Flushers.
	Tick time.Duration
	// OnError, if not nil, is called once per sampler, with its first error,
	// from the sampler's goroutine.
	OnError func(sampler string, err error)
	// StopWait bounds how long Stop waits for a sampler stuck in a Sample
	// after its context was cancelled (default 2 s); its points so far are
	// kept.
	StopWait time.Duration
	// OnPoints, if not nil, receives every sample's (and flush's) points
	// with their nominal time as they are taken, from the sampler's
	// goroutine (a live view; it must return quickly and not keep pts).
	OnPoints func(at time.Time, pts []Point)
}

// Failure is the error record of one sampler.
type Failure struct {
	Sampler string
	First   error
	Count   int
}

func (f Failure) String() string {
	if f.Count > 1 {
		return fmt.Sprintf("%s: %v (%d failed samples)", f.Sampler, f.First, f.Count)
	}
	return fmt.Sprintf("%s: %v", f.Sampler, f.First)
}

// stamped is a batch of points with its nominal time.
type stamped struct {
	at  time.Time
	pts []Point
}

type entry struct {
	s        Sampler
	interval time.Duration
	done     chan struct{}
	shared   *sharedCloser

	mu       sync.Mutex // guards out, firstErr, errCount (Stop may read while stuck)
	out      []stamped
	firstErr error
	errCount int
}

// Collector runs samplers until Stop.
type Collector struct {
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	entries []*entry

	mu      sync.Mutex
	anchor  time.Time
	zero    time.Time
	zeroSet bool
	realign chan struct{} // closed (and replaced) when the grid is re-anchored

	stopOnce sync.Once
	result   []store.Point
}

// Start starts every sampler in its own goroutine. The grid is anchored on
// the current time until MeasureStart re-anchors it. Cancelling ctx does not
// stop the samplers (they must go on through an interrupted run's drain);
// Stop does.
func Start(ctx context.Context, opts Options, specs ...Spec) *Collector {
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.StopWait <= 0 {
		opts.StopWait = 2 * time.Second
	}
	c := &Collector{opts: opts, anchor: time.Now(), realign: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	shared := map[Closer]*sharedCloser{}
	for _, sp := range specs {
		if sp.Sampler == nil {
			continue
		}
		iv := sp.Interval
		if iv <= 0 || iv > opts.Tick {
			iv = opts.Tick
		}
		e := &entry{s: sp.Sampler, interval: iv, done: make(chan struct{})}
		if sp.Shared != nil {
			if shared[sp.Shared] == nil {
				shared[sp.Shared] = &sharedCloser{c: sp.Shared}
			}
			e.shared = shared[sp.Shared]
			e.shared.users.Add(1)
		}
		c.entries = append(c.entries, e)
	}
	for _, e := range c.entries {
		go c.loop(e)
	}
	return c
}

// sharedCloser closes a resource when the last of its users is done.
type sharedCloser struct {
	c     Closer
	users atomic.Int32
}

func (s *sharedCloser) done() {
	if s.users.Add(-1) == 0 {
		_ = s.c.Close()
	}
}

// MeasureStart marks now as the measurement start (T = 0) and re-anchors
// the sampling grid on it. Only the first call (of MeasureStart or SetZero)
// counts. It is cheap and safe to call from the executor's collector.
func (c *Collector) MeasureStart() { c.SetZero(time.Now()) }

// SetZero sets the time that becomes T = 0, if none was set yet; it reports
// whether this call set it. Callers use it with an estimate (e.g. the run's
// start plus its warm-up) when the measurement never started.
func (c *Collector) SetZero(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zeroSet {
		return false
	}
	c.zero, c.zeroSet, c.anchor = t, true, t
	close(c.realign)
	c.realign = make(chan struct{})
	return true
}

func (c *Collector) grid() (time.Time, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.anchor, c.realign
}

// nextSlot returns the next nominal time on the grid anchor + k*iv that is
// more than half an interval after last (no two samples closer than that)
// and not more than half an interval in the past (a late sampler skips
// missed slots instead of catching up).
func nextSlot(anchor, last, now time.Time, iv time.Duration) time.Time {
	lo := now.Add(-iv / 2)
	if !last.IsZero() && last.Add(iv/2).After(lo) {
		lo = last.Add(iv / 2)
	}
	// Smallest k with anchor + k*iv > lo (>= when lo is not from last).
	d := lo.Sub(anchor)
	k := int64(math.Ceil(float64(d) / float64(iv)))
	g := anchor.Add(time.Duration(k) * iv)
	if !last.IsZero() && !g.After(last.Add(iv/2)) {
		g = g.Add(iv)
	}
	return g
}

// floorSlot returns the largest anchor + k*tick <= t.
func floorSlot(anchor, t time.Time, tick time.Duration) time.Time {
	k := int64(math.Floor(float64(t.Sub(anchor)) / float64(tick)))
	return anchor.Add(time.Duration(k) * tick)
}

func (c *Collector) loop(e *entry) {
	defer close(e.done)
	if e.shared != nil {
		defer e.shared.done()
	}
	if cl, ok := e.s.(Closer); ok {
		defer func() { _ = cl.Close() }()
	}
	fl, _ := e.s.(Flusher)
	timeout := 5 * e.interval
	if timeout < time.Second {
		timeout = time.Second
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var last, lastFlush time.Time
	anchor0, _ := c.grid()
	lastFlush = anchor0
	for {
		anchor, realign := c.grid()
		g := nextSlot(anchor, last, time.Now(), e.interval)
		timer.Reset(time.Until(g))
		select {
		case <-c.ctx.Done():
			return
		case <-realign:
			timer.Stop() // Go 1.23+: no stale value is received after Stop
			continue
		case <-timer.C:
		}
		sctx, cancel := context.WithTimeout(c.ctx, timeout)
		pts, err := e.s.Sample(sctx, g)
		cancel()
		last = g
		if c.ctx.Err() != nil {
			// Stopped mid-sample: the sample may be cut short; drop it.
			return
		}
		e.record(g, pts, err, c.opts.OnError)
		c.onPoints(g, pts)
		if fl != nil {
			// Flush at every tick boundary crossed (the boundary at or
			// before this sample; a re-anchored grid starts a new one).
			// A boundary less than half a tick after the previous flush
			// (right after re-anchoring) is skipped: its few samples go
			// into the next flush instead of making a noisy point.
			anchor, _ = c.grid()
			if fb := floorSlot(anchor, g, c.opts.Tick); fb.After(lastFlush) {
				if fb.Sub(lastFlush) >= c.opts.Tick/2 {
					fpts := fl.Flush(fb)
					e.record(fb, fpts, nil, nil)
					c.onPoints(fb, fpts)
				}
				lastFlush = fb
			}
		}
	}
}

// onPoints hands a sample's points to Options.OnPoints.
func (c *Collector) onPoints(at time.Time, pts []Point) {
	if c.opts.OnPoints != nil && len(pts) > 0 {
		c.opts.OnPoints(at, pts)
	}
}

func (e *entry) record(at time.Time, pts []Point, err error, onError func(string, error)) {
	e.mu.Lock()
	if len(pts) > 0 {
		e.out = append(e.out, stamped{at: at, pts: pts})
	}
	first := false
	if err != nil {
		e.errCount++
		if e.firstErr == nil {
			e.firstErr, first = err, true
		}
	}
	e.mu.Unlock()
	if first && onError != nil {
		onError(e.s.Name(), err)
	}
}

// Stop stops every sampler and returns all points with T in seconds since
// the measurement start (see MeasureStart; without one, since Start). It
// may be called more than once; later calls return the same points.
func (c *Collector) Stop() []store.Point {
	c.stopOnce.Do(func() {
		c.cancel()
		deadline := time.NewTimer(c.opts.StopWait)
		defer deadline.Stop()
		for _, e := range c.entries {
			select {
			case <-e.done:
			case <-deadline.C:
				// Left running (it exits when its Sample returns); its
				// points so far are kept.
			}
		}
		c.mu.Lock()
		zero := c.zero
		if !c.zeroSet {
			zero = c.anchor
		}
		c.mu.Unlock()
		var out []store.Point
		for _, e := range c.entries {
			e.mu.Lock()
			for _, b := range e.out {
				t := b.at.Sub(zero).Seconds()
				for _, p := range b.pts {
					out = append(out, store.Point{Series: p.Series, T: t, V: p.V})
				}
			}
			e.mu.Unlock()
		}
		c.result = densifyWait(out)
		sort.SliceStable(c.result, func(i, j int) bool {
			if c.result[i].Series != c.result[j].Series {
				return c.result[i].Series < c.result[j].Series
			}
			return c.result[i].T < c.result[j].T
		})
	})
	return c.result
}

// Failures lists the samplers that failed at least once, by name.
func (c *Collector) Failures() []Failure {
	var out []Failure
	for _, e := range c.entries {
		e.mu.Lock()
		if e.errCount > 0 {
			out = append(out, Failure{Sampler: e.s.Name(), First: e.firstErr, Count: e.errCount})
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sampler < out[j].Sampler })
	return out
}

// WaitPrefix is the prefix of wait-event series; ActiveSessions is the
// series giving the total number of active sessions per second, whose
// points mark the seconds the wait-event sampler covered.
const (
	WaitPrefix     = "wait."
	ActiveSessions = "pg.active_sessions"
)

// densifyWait gives every wait-event series a point (0) at every time the
// wait-event sampler reported (the times of ActiveSessions), so stacked
// charts of the profile need no gap handling: an event not seen in a second
// had zero average active sessions in it.
func densifyWait(pts []store.Point) []store.Point {
	var times []float64
	events := map[string]map[float64]bool{}
	for _, p := range pts {
		switch {
		case p.Series == ActiveSessions:
			times = append(times, p.T)
		case len(p.Series) > len(WaitPrefix) && p.Series[:len(WaitPrefix)] == WaitPrefix:
			if events[p.Series] == nil {
				events[p.Series] = map[float64]bool{}
			}
			events[p.Series][p.T] = true
		}
	}
	names := make([]string, 0, len(events))
	for n := range events {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, t := range times {
			if !events[n][t] {
				pts = append(pts, store.Point{Series: n, T: t, V: 0})
			}
		}
	}
	return pts
}
