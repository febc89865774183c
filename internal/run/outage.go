package run

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// outageTracker builds the outage windows: runs of conn_error outcomes with
// no completed transaction finishing after the last of them. Successes cost
// one atomic load while no outage is open; conn errors take a mutex (they
// are rare, and spaced by back-off).
type outageTracker struct {
	open atomic.Bool
	mu   sync.Mutex
	list []outageSpan
}

type outageSpan struct {
	start, end time.Duration // offsets since the run start
	errors     int64
}

func (t *outageTracker) connError(at time.Duration) {
	t.mu.Lock()
	if n := len(t.list); n > 0 && t.open.Load() {
		o := &t.list[n-1]
		if at > o.end {
			o.end = at
		}
		if at < o.start {
			o.start = at
		}
		o.errors++
	} else {
		t.list = append(t.list, outageSpan{start: at, end: at, errors: 1})
		t.open.Store(true)
	}
	t.mu.Unlock()
}

// success closes the open outage if the completed transaction finished after
// the outage's last error (an older success does not split it).
func (t *outageTracker) success(at time.Duration) {
	if !t.open.Load() {
		return
	}
	t.mu.Lock()
	if n := len(t.list); n > 0 && t.open.Load() && at >= t.list[n-1].end {
		t.open.Store(false)
	}
	t.mu.Unlock()
}

// outages returns the windows in seconds relative to the measurement start.
func (t *outageTracker) outages(msOff time.Duration) []Outage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Outage, 0, len(t.list))
	for _, o := range t.list {
		out = append(out, Outage{Start: (o.start - msOff).Seconds(), End: (o.end - msOff).Seconds(), Errors: o.errors})
	}
	return out
}

// Back-off after a conn_error outcome: exponential from backoffMin doubling
// to backoffMax, each wait drawn uniformly from [d/2, d] ("equal jitter") so
// reconnecting workers spread out; reset by the next other outcome.
const (
	backoffMin = 10 * time.Millisecond
	backoffMax = time.Second
)

func nextBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return backoffMin
	}
	if prev >= backoffMax/2 {
		return backoffMax
	}
	return prev * 2
}

func jitter(r *rand.Rand, d time.Duration) time.Duration {
	half := d / 2
	return d - half + time.Duration(r.Int64N(int64(half)+1))
}
