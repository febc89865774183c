package sampler

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

func TestNextSlot(t *testing.T) {
	a := time.Unix(100, 0)
	s := time.Second
	at := func(d time.Duration) time.Time { return a.Add(d) }
	cases := []struct {
		last, now, want time.Duration
		noLast          bool
	}{
		{noLast: true, now: 0, want: 0},                                           // first sample at once
		{noLast: true, now: 300 * time.Millisecond, want: 0},                      // a little late: still the slot just passed
		{noLast: true, now: 700 * time.Millisecond, want: s},                      // too late for it: the next one
		{last: 0, now: 10 * time.Millisecond, want: s},                            // after a sample: the next slot
		{last: s, now: 1900 * time.Millisecond, want: 2 * s},                      // on time
		{last: s, now: 3200 * time.Millisecond, want: 3 * s},                      // a slow sample: skip missed slots
		{last: -300 * time.Millisecond, now: 0, want: s},                          // re-anchored just after a sample: not 0.3 s apart
		{last: -700 * time.Millisecond, now: 0, want: 0},                          // re-anchored: sample at the new zero
		{last: -2100 * time.Millisecond, now: -1500 * time.Millisecond, want: -s}, // before the anchor
	}
	for i, c := range cases {
		var last time.Time
		if !c.noLast {
			last = at(c.last)
		}
		if got := nextSlot(a, last, at(c.now), s); !got.Equal(at(c.want)) {
			t.Errorf("case %d: got %v, want %v", i, got.Sub(a), c.want)
		}
	}
	if got := floorSlot(a, at(1500*time.Millisecond), s); !got.Equal(at(s)) {
		t.Errorf("floorSlot %v", got.Sub(a))
	}
	if got := floorSlot(a, at(-500*time.Millisecond), s); !got.Equal(at(-s)) {
		t.Errorf("floorSlot negative %v", got.Sub(a))
	}
}

// fake returns the number of its calls as the value of series "fake".
type fake struct {
	name  string
	calls atomic.Int64
	fail  func(n int64) error
	mu    sync.Mutex
	times []time.Time
}

func (f *fake) Name() string { return f.name }

func (f *fake) Sample(_ context.Context, now time.Time) ([]Point, error) {
	n := f.calls.Add(1)
	f.mu.Lock()
	f.times = append(f.times, now)
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(n); err != nil {
			return nil, err
		}
	}
	return []Point{{Series: f.name, V: float64(n)}}, nil
}

// fastFake counts samples and flushes their number.
type fastFake struct {
	n, flushes int
	closed     atomic.Bool
}

func (f *fastFake) Name() string { return "fast" }
func (f *fastFake) Sample(context.Context, time.Time) ([]Point, error) {
	f.n++
	return nil, nil
}
func (f *fastFake) Flush(time.Time) []Point {
	f.flushes++
	pts := []Point{{Series: ActiveSessions, V: float64(f.n)}}
	if f.flushes == 2 {
		pts = append(pts, Point{Series: WaitPrefix + "Lock.tuple", V: 1})
	}
	f.n = 0
	return pts
}
func (f *fastFake) Close() error { f.closed.Store(true); return nil }

func series(pts []store.Point, name string) []store.Point {
	var out []store.Point
	for _, p := range pts {
		if p.Series == name {
			out = append(out, p)
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	const tick = 100 * time.Millisecond
	slow := &fake{name: "slow"}
	failing := &fake{name: "failing", fail: func(n int64) error {
		if n%2 == 1 {
			return errors.New("boom")
		}
		return nil
	}}
	fast := &fastFake{}
	var errMu sync.Mutex
	var reported []string
	c := Start(context.Background(), Options{Tick: tick, OnError: func(name string, err error) {
		errMu.Lock()
		reported = append(reported, name+": "+err.Error())
		errMu.Unlock()
	}}, Spec{Sampler: slow}, Spec{Sampler: failing}, Spec{Sampler: fast, Interval: 10 * time.Millisecond}, Spec{})

	time.Sleep(250 * time.Millisecond) // "warm-up"
	c.MeasureStart()
	if c.SetZero(time.Now().Add(time.Hour)) {
		t.Error("a second zero was accepted")
	}
	time.Sleep(420 * time.Millisecond)
	pts := c.Stop()
	if again := c.Stop(); len(again) != len(pts) {
		t.Error("second Stop differs")
	}
	if !fast.closed.Load() {
		t.Error("Close not called")
	}

	// The slow sampler: negative times before the measurement start, then
	// exactly 0, 0.1, 0.2, ... (whole ticks, like the executor's).
	s := series(pts, "slow")
	if len(s) < 5 {
		t.Fatalf("slow has %d points: %v", len(s), s)
	}
	var neg, onGrid int
	for i, p := range s {
		if i > 0 && p.T <= s[i-1].T {
			t.Errorf("times not increasing: %v", s)
		}
		if p.T < 0 {
			neg++
			continue
		}
		k := p.T / tick.Seconds()
		if math.Abs(k-math.Round(k)) > 1e-9 {
			t.Errorf("point at T=%v is off the tick grid", p.T)
		}
		onGrid++
	}
	if neg < 2 || onGrid < 3 {
		t.Errorf("%d warm-up and %d measured points: %v", neg, onGrid, s)
	}
	if s[0].T > -0.2 {
		t.Errorf("first point at %v, want about -0.25", s[0].T)
	}

	// The failing sampler: reported once, its good samples kept.
	errMu.Lock()
	if len(reported) != 1 || reported[0] != "failing: boom" {
		t.Errorf("reported %v", reported)
	}
	errMu.Unlock()
	f := c.Failures()
	if len(f) != 1 || f[0].Sampler != "failing" || f[0].Count < 2 || f[0].String() == "" {
		t.Errorf("failures %+v", f)
	}
	if n := len(series(pts, "failing")); n < 2 {
		t.Errorf("failing sampler kept %d points", n)
	}

	// The fast sampler: one flush per tick, about 10 samples each, stamped
	// on the grid; the wait series seen once is filled with zeros.
	as := series(pts, ActiveSessions)
	if len(as) < 5 {
		t.Fatalf("%d flushes: %v", len(as), as)
	}
	for _, p := range as {
		if p.T >= 0 {
			if k := p.T / tick.Seconds(); math.Abs(k-math.Round(k)) > 1e-9 {
				t.Errorf("flush at T=%v is off the grid", p.T)
			}
			if p.T > 0 && (p.V < 1 || p.V > 15) {
				t.Errorf("flush at %v counted %v samples, want about 10", p.T, p.V)
			}
		}
	}
	lock := series(pts, WaitPrefix+"Lock.tuple")
	if len(lock) != len(as) {
		t.Errorf("wait series has %d points, active sessions %d", len(lock), len(as))
	}
	var ones int
	for _, p := range lock {
		if p.V == 1 {
			ones++
		} else if p.V != 0 {
			t.Errorf("filled value %v", p.V)
		}
	}
	if ones != 1 {
		t.Errorf("%d real points in %v", ones, lock)
	}
}

// A stuck sampler does not hold Stop beyond StopWait.
type stuck struct{ started chan struct{} }

func (stuck) Name() string { return "stuck" }
func (s stuck) Sample(ctx context.Context, _ time.Time) ([]Point, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	time.Sleep(time.Hour) // ignores ctx on purpose
	return nil, nil
}

func TestStopBounded(t *testing.T) {
	s := stuck{started: make(chan struct{}, 1)}
	c := Start(context.Background(), Options{Tick: 50 * time.Millisecond, StopWait: 50 * time.Millisecond}, Spec{Sampler: s})
	<-s.started
	t0 := time.Now()
	c.Stop()
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Stop took %v", d)
	}
}

// Without a measurement start, times are relative to Start.
func TestNoZero(t *testing.T) {
	f := &fake{name: "x"}
	c := Start(context.Background(), Options{Tick: 20 * time.Millisecond}, Spec{Sampler: f})
	time.Sleep(50 * time.Millisecond)
	pts := c.Stop()
	if len(pts) < 2 || pts[0].T != 0 || math.Abs(pts[1].T-0.02) > 1e-9 {
		t.Errorf("points %v", pts)
	}
}

// TestOnPoints: a live view gets every point as it is taken, samples' and
// flushes' alike, with its nominal time.
func TestOnPoints(t *testing.T) {
	const tick = 50 * time.Millisecond
	var mu sync.Mutex
	got := map[string]int{}
	var stamps []time.Time
	slow, fast := &fake{name: "slow"}, &fastFake{}
	c := Start(context.Background(), Options{Tick: tick, OnPoints: func(at time.Time, pts []Point) {
		mu.Lock()
		defer mu.Unlock()
		stamps = append(stamps, at)
		for _, p := range pts {
			got[p.Series]++
		}
	}}, Spec{Sampler: slow}, Spec{Sampler: fast, Interval: 10 * time.Millisecond})
	time.Sleep(230 * time.Millisecond)
	pts := c.Stop()
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"slow", ActiveSessions} {
		if n := len(series(pts, name)); got[name] != n || n == 0 {
			t.Errorf("%s: %d points handed over, %d stored", name, got[name], n)
		}
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if len(stamps) == 0 || len(slow.times) == 0 {
		t.Fatal("no points")
	}
	found := false
	for _, s := range stamps {
		found = found || s.Equal(slow.times[0])
	}
	if !found {
		t.Errorf("the points are not stamped with their nominal times %v: %v", slow.times, stamps)
	}
}

// countCloser counts its Close calls and whether a user was still
// sampling when it was closed.
type countCloser struct {
	closes   atomic.Int32
	sampling *atomic.Int32
	early    atomic.Bool
}

func (c *countCloser) Close() error {
	if c.sampling.Load() > 0 {
		c.early.Store(true)
	}
	c.closes.Add(1)
	return nil
}

// usesShared samples slowly through a shared resource.
type usesShared struct {
	name     string
	sampling *atomic.Int32
}

func (u usesShared) Name() string { return u.name }
func (u usesShared) Sample(context.Context, time.Time) ([]Point, error) {
	u.sampling.Add(1)
	defer u.sampling.Add(-1)
	time.Sleep(15 * time.Millisecond)
	return []Point{{Series: u.name, V: 1}}, nil
}

// TestSharedClosedOnce: a resource shared by several samplers (an SQL
// source's connection) is closed exactly once, after the last of them
// stopped; one used by none is not touched.
func TestSharedClosedOnce(t *testing.T) {
	var sampling atomic.Int32
	res := &countCloser{sampling: &sampling}
	c := Start(context.Background(), Options{Tick: 10 * time.Millisecond},
		Spec{Sampler: usesShared{"a", &sampling}, Shared: res},
		Spec{Sampler: usesShared{"b", &sampling}, Shared: res},
		Spec{Sampler: usesShared{"c", &sampling}, Shared: res, Interval: 5 * time.Millisecond})
	time.Sleep(60 * time.Millisecond)
	if n := res.closes.Load(); n != 0 {
		t.Fatalf("closed %d times while sampling", n)
	}
	c.Stop()
	if n := res.closes.Load(); n != 1 {
		t.Errorf("closed %d times, want once", n)
	}
	if res.early.Load() {
		t.Error("closed while a sampler still used it")
	}
}
