package pgstat

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

// WaitInterval is how often the wait-event profile samples pg_stat_activity.
const WaitInterval = 100 * time.Millisecond

// CPUEvent is the series of active backends not waiting on anything (on a
// CPU, or waiting for one: PostgreSQL cannot tell).
const CPUEvent = sampler.WaitPrefix + "CPU"

// WaitQuery counts the active client backends by wait event, leaving out
// the calling backend and every tunebench sampler connection ($1 =
// AppName).
const WaitQuery = `SELECT coalesce(wait_event_type, '') AS type, coalesce(wait_event, '') AS event, count(*)::int AS n
FROM pg_stat_activity
WHERE state = 'active' AND backend_type = 'client backend'
  AND pid <> pg_backend_pid() AND application_name IS DISTINCT FROM $1
GROUP BY 1, 2`

// WaitRow is one row of WaitQuery.
type WaitRow struct {
	Type, Event string
	N           int
}

// SeriesName names the series of a wait event: wait.<type>.<event>, or
// wait.CPU for an active backend without a wait event.
func (r WaitRow) SeriesName() string {
	if r.Type == "" && r.Event == "" {
		return CPUEvent
	}
	t, e := r.Type, r.Event
	if t == "" {
		t = "Unknown"
	}
	if e == "" {
		e = "Unknown"
	}
	return sampler.WaitPrefix + t + "." + e
}

// WaitProfile aggregates wait-event samples into average active sessions
// (AAS) per event: the number of backends seen in an event, summed over the
// samples, divided by the number of samples.
type WaitProfile struct {
	counts  map[string]float64
	samples int
}

// Add adds one sample's rows (an empty sample counts: nothing was active).
func (p *WaitProfile) Add(rows []WaitRow) {
	if p.counts == nil {
		p.counts = map[string]float64{}
	}
	p.samples++
	for _, r := range rows {
		p.counts[r.SeriesName()] += float64(r.N)
	}
}

// Flush returns the average active sessions per event since the last flush
// plus their total (sampler.ActiveSessions), sorted by series, and starts
// over. Without samples it returns nothing (no data is not zero activity).
func (p *WaitProfile) Flush() []sampler.Point {
	if p.samples == 0 {
		return nil
	}
	n := float64(p.samples)
	pts := make([]sampler.Point, 0, len(p.counts)+1)
	var total float64
	for k, v := range p.counts {
		pts = append(pts, sampler.Point{Series: k, V: v / n})
		total += v
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Series < pts[j].Series })
	pts = append(pts, sampler.Point{Series: sampler.ActiveSessions, V: total / n})
	clear(p.counts)
	p.samples = 0
	return pts
}

// Waits samples pg_stat_activity (every WaitInterval) on its own
// connection; the collector flushes it once per tick.
type Waits struct {
	sess    session
	profile WaitProfile
}

// NewWaits returns a wait-event sampler using connect for its connection.
func NewWaits(connect Connector) *Waits { return &Waits{sess: session{connect: connect}} }

func (*Waits) Name() string { return "pg-wait-events" }

// Close closes the connection.
func (w *Waits) Close() error { return w.sess.Close() }

// Sample takes one sample; its points come from Flush.
func (w *Waits) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	c, err := w.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, WaitQuery, AppName)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_activity: %w", err)
	}
	var got []WaitRow
	var r WaitRow
	for rows.Next() {
		if err := rows.Scan(&r.Type, &r.Event, &r.N); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pg_stat_activity: %w", err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pg_stat_activity: %w", err)
	}
	w.profile.Add(got)
	return nil, nil
}

// Flush returns the profile of the samples since the previous flush.
func (w *Waits) Flush(time.Time) []sampler.Point { return w.profile.Flush() }
