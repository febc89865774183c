package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// envOf snapshots the environment: the target's (host, data directory,
// server), or the host's alone.
func envOf(ctx context.Context, req *Request) *envinfo.Snapshot {
	var s *envinfo.Snapshot
	if req.Target != nil {
		s = req.Target.Env(ctx, req.Version)
	} else {
		s = envinfo.Take(ctx, envinfo.Options{Version: req.Version})
	}
	if s != nil {
		s.Layout, s.Envelope = req.Layout, req.Envelope
	}
	return s
}

// paramsJSON is the run's parameters as stored: the workload's, and what
// the lifecycle adds (the settings asked for, the target, the experiment,
// the progress tick and the samplers switch).
// The workload's values are kept as they were written (a seed is an int64
// that a float64 would round).
func paramsJSON(req *Request, r workload.Run) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if p := r.Params(); p != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("run parameters of %s are not a JSON object: %w", req.Workload.Meta().Name, err)
		}
	}
	add := func(k string, v any) error {
		b, err := json.Marshal(v)
		m[k] = b
		return err
	}
	var err error
	if req.Experiment != "" {
		err = add("experiment", req.Experiment)
	}
	if req.Target != nil && err == nil {
		var settings []string // null when none, as before
		for _, s := range req.Settings {
			settings = append(settings, s.String())
		}
		err = errors.Join(add("settings", settings), add("target", req.Target.Describe()), add("progress_ns", req.Progress))
		if req.NoSamplers {
			err = errors.Join(err, add("no_samplers", true))
		}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// sampling is the metric samplers of one run (docs/metrics.md): the host's
// (CPU, memory, network, the driver itself) and the target's. They run in
// their own goroutines and connections from just before the executor
// starts until stop; their points share the executor's time axis (T = 0 at
// the measurement start, through the executor's OnMeasureStart hook).
type sampling struct {
	c *sampler.Collector
}

// startSampling starts the samplers unless the request turns them off.
// Problems that switch a sampler off, and each sampler's first error, are
// reported once as notes.
func startSampling(ctx context.Context, req *Request) *sampling {
	if req.NoSamplers {
		return &sampling{}
	}
	note := func(format string, a ...any) { req.note("samplers: "+format, a...) }
	const proc = "/proc"
	specs := []sampler.Spec{
		{Sampler: &system.CPU{Proc: proc}},
		{Sampler: &system.Memory{Proc: proc}},
		{Sampler: &system.Net{Proc: proc}},
		{Sampler: &system.Driver{}},
	}
	if req.Target != nil {
		specs = append(specs, req.Target.Samplers(ctx, note)...)
	}
	c := sampler.Start(ctx, sampler.Options{OnError: func(name string, err error) {
		note("%s: %v (later failures of this sampler are counted, not printed)", name, err)
	}, OnPoints: livePoints(req)}, specs...)
	return &sampling{c: c}
}

// attach makes the executor mark the measurement start (T = 0) for the
// samplers; a hook already set is still called.
func (sm *sampling) attach(cfg *run.Config) {
	if sm.c == nil {
		return
	}
	prev := cfg.OnMeasureStart
	cfg.OnMeasureStart = func() {
		sm.c.MeasureStart()
		if prev != nil {
			prev()
		}
	}
}

// stop stops the samplers and returns their points. When the measurement
// never started (an interrupted warm-up), T = 0 is placed where it would
// have been: the run's start plus the warm-up.
func (sm *sampling) stop(res *run.Result, warmup time.Duration) []store.Point {
	if sm == nil || sm.c == nil {
		return nil
	}
	if res != nil && !res.StartedAt.IsZero() {
		sm.c.SetZero(res.StartedAt.Add(warmup))
	}
	return sm.c.Stop()
}
