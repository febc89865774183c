package cli

import (
	"fmt"
	"sync"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// errorLog prints the first few errors of a run in full, then only counts.
type errorLog struct {
	s     *State
	mu    sync.Mutex
	limit int
	n     int
}

func newErrorLog(s *State, limit int) *errorLog { return &errorLog{s: s, limit: limit} }

func (l *errorLog) log(worker int, o workload.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.n > l.limit {
		return
	}
	msg := "<nil>"
	if o.Err != nil {
		msg = o.Err.Error()
	}
	l.s.eprintf("client %d: %s %s (SQLSTATE %s): %s\n", worker, o.Op, o.Class, orDash(o.SQLState), msg)
	if l.n == l.limit {
		l.s.eprintf("(further errors are counted, not printed)\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printTick is the live progress line.
func printTick(s *State, tk run.Tick) {
	if tk.Phase == run.PhaseDrain {
		return // a partial interval while in-flight work finishes: not a rate
	}
	phase := ""
	if tk.Phase != "" && tk.Phase != "measure" {
		phase = " [" + tk.Phase + "]"
	}
	s.eprintf("progress: %6.1f s, %9.1f tps, p95 %7.3f ms, p99 %7.3f ms, errors %d%s\n", tk.T, tk.TPS, tk.P95Ms, tk.P99Ms, tk.Errors, phase)
}

// seriesPoints flattens the per-tick series for the store.
func seriesPoints(res *run.Result) []store.Point {
	out := make([]store.Point, 0, len(res.Series)*6)
	for _, tk := range res.Series {
		add := func(name string, v float64) { out = append(out, store.Point{Series: name, T: tk.T, V: v}) }
		add("tps", tk.TPS)
		add("committed", float64(tk.Committed))
		add("errors", float64(tk.Errors))
		add("latency_p50_ms", tk.P50Ms)
		add("latency_p95_ms", tk.P95Ms)
		add("latency_p99_ms", tk.P99Ms)
		add("latency_max_ms", tk.MaxMs)
		add("active_workers", float64(tk.ActiveWorkers))
		if res.OpenLoop {
			add("queue_depth", float64(tk.QueueDepth))
			add("schedule_lag_p99_ms", tk.Lag99Ms)
		}
	}
	return out
}

// encodeHists encodes every per-op, per-class histogram so any percentile
// can be recomputed from the store.
func encodeHists(res *run.Result) ([]store.Histogram, error) {
	var out []store.Histogram
	add := func(op, class, kind string, h *metrics.Hist) error {
		if h == nil || h.Count() == 0 {
			return nil
		}
		b, err := metrics.Encode(h)
		if err != nil {
			return fmt.Errorf("encoding %s/%s/%s histogram: %w", op, class, kind, err)
		}
		out = append(out, store.Histogram{Op: op, Class: class, Kind: kind, Encoded: b})
		return nil
	}
	for _, o := range res.Ops {
		c := o.Class.String()
		if err := add(o.Op, c, "latency", o.Latency); err != nil {
			return nil, err
		}
		if err := add(o.Op, c, "service", o.Service); err != nil {
			return nil, err
		}
		if err := add(o.Op, c, "lag", o.Lag); err != nil {
			return nil, err
		}
	}
	return out, nil
}
