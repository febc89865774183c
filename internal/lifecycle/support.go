package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/scrape"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
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
		s.Layout, s.Envelope, s.Kernel = req.Layout, req.Envelope, req.Kernel
		addTargetNotes(s, req)
	}
	return s
}

// addTargetNotes records the experiment's named target and what the
// target says its figures mean (target.Noter).
func addTargetNotes(s *envinfo.Snapshot, req *Request) {
	s.Target = req.NamedTarget
	if n, ok := req.Target.(target.Noter); ok && req.Target != nil {
		s.Notes = n.Notes()
	}
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

// sampling is the metric samplers of one run (docs/metrics.md): the
// driver's machine (CPU, memory, network, pressure, the driver itself),
// the target's (its statistics, and its host as the request's HostMetrics
// says: this machine's /proc, the server's own /proc through SQL, or its
// node_exporter) and the server's container (cAdvisor). They run in their
// own goroutines and connections from just before the executor starts
// until stop; their points share the executor's time axis (T = 0 at the
// measurement start, through the executor's OnMeasureStart hook).
type sampling struct {
	c     *sampler.Collector
	specs []sampler.Spec
	// notMeasured is why the server's host is not measured ("" when it
	// is), from the target's notes.
	notMeasured string
}

// startSampling starts the samplers unless the request turns them off.
// Problems that switch a sampler off, and each sampler's first error, are
// reported once as notes. An error is a host-metric source that cannot
// work (the run does not start).
func startSampling(ctx context.Context, req *Request) (*sampling, error) {
	if req.NoSamplers {
		return &sampling{}, nil
	}
	smp := &sampling{}
	note := func(format string, a ...any) {
		text := fmt.Sprintf(format, a...)
		if why, ok := strings.CutPrefix(text, target.NotMeasuredNote); ok && smp.notMeasured == "" {
			smp.notMeasured = "not measured: " + why
		}
		req.note("samplers: %s", text)
	}
	host, source := system.LocalHost()
	specs := []sampler.Spec{
		{Sampler: host, Host: sampler.HostDriver, Source: source},
		{Sampler: &system.Driver{}, Host: sampler.HostDriver, Source: source},
	}
	hm := req.HostMetrics
	// One server, measured once: by shard 0 of a split run. The other
	// shards measure their own machines (the driver's samplers above).
	otherShard := req.Shard != nil && req.Shard.Index > 0
	if otherShard {
		req.note("samplers: the database and its host are measured by shard 0/%d; this shard measures its own machine", req.Shard.Count)
	}
	if req.Target != nil && !otherShard {
		ts, err := req.Target.Samplers(ctx, hm, note)
		if err != nil {
			return nil, err
		}
		specs = append(specs, ts...)
		if hm.Scrape() {
			diskHere := slices.ContainsFunc(ts, func(sp sampler.Spec) bool { _, ok := sp.Sampler.(*system.Disk); return ok })
			specs = append(specs, sampler.Spec{Sampler: &scrape.Node{URL: hm.Source, Prefix: system.ServerPrefix, Disk: hm.Disk, NoDisk: diskHere},
				Host: sampler.HostServer, Source: "node_exporter " + scrape.Redact(hm.Source)})
		}
	}
	if hm.ContainerURL != "" && !otherShard {
		specs = append(specs, sampler.Spec{Sampler: &scrape.Container{URL: hm.ContainerURL, ID: hm.Container},
			Host: sampler.HostContainer, Source: "cadvisor " + scrape.Redact(hm.ContainerURL) + ", container " + hm.Container})
	}
	smp.specs = specs
	smp.c = sampler.Start(ctx, sampler.Options{OnError: func(name string, err error) {
		note("%s: %v (later failures of this sampler are counted, not printed)", name, err)
	}, OnPoints: livePoints(req)}, specs...)
	return smp, nil
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

// minGapWindow is the shortest measured window (seconds) whose host metric
// gaps are counted.
const minGapWindow = 5.0

// MaxHostGapPct is the share of the measured window (percent) a host
// metric source may leave without samples before the run's status says so
// (errors, reason host_metrics_gap; the run's own figures stand).
const MaxHostGapPct = 20.0

// hostGroup is the group a series is stored under in a host record: its
// first name element ("sys.", "disk.", "container."), two for a server
// host's ("server.sys."), and the database server's processes' ("pg.proc_",
// "mariadb.proc_").
// isProcSeries reports a series of a database server's processes
// (DB.proc_NAME).
func isProcSeries(name string) bool {
	i := strings.Index(name, ".proc_")
	return i > 0 && !strings.Contains(name[:i], ".")
}

func hostGroup(name string) (group, role string) {
	switch {
	case isProcSeries(name):
		// The server's processes: pg.proc_*, mariadb.proc_* (PGProcs).
		return name[:strings.Index(name, ".proc_")+len(".proc_")], results.HostServer
	case strings.HasPrefix(name, system.ServerPrefix):
		rest := strings.TrimPrefix(name, system.ServerPrefix)
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			return system.ServerPrefix + rest[:i+1], results.HostServer
		}
		return name, results.HostServer
	case strings.HasPrefix(name, "disk."):
		return "disk.", results.HostServer
	case strings.HasPrefix(name, "container."):
		return "container.", results.HostContainer
	case strings.HasPrefix(name, "sys."), strings.HasPrefix(name, "net."), strings.HasPrefix(name, "driver."):
		return name[:strings.IndexByte(name, '.')+1], results.HostDriver
	}
	return "", ""
}

// hosts are the run's host records from its samplers and their points:
// each machine's source, series, means over the measured window [0, dur]
// (seconds; 0: from T = 0 on), the share of it without a sample, and its
// samplers' first error. sameMachine says the server runs on the driver's
// machine.
func (sm *sampling) hosts(pts []store.Point, dur float64, sameMachine bool) []results.Host {
	if sm == nil || sm.c == nil {
		return nil
	}
	local := system.Local{}
	byRole := map[string]*results.Host{}
	var order []string
	for _, sp := range sm.specs {
		if sp.Host == "" {
			continue
		}
		h := byRole[sp.Host]
		if h == nil {
			h = &results.Host{Role: sp.Host, Source: sp.Source, Means: map[string]float64{}}
			if sp.Host == results.HostServer {
				h.SameMachine = sameMachine
			}
			byRole[sp.Host] = h
			order = append(order, sp.Host)
		} else if !strings.Contains(h.Source, sp.Source) {
			h.Source += ", " + sp.Source
		}
		if sp.Host == results.HostServer && sp.Source != local.Describe() {
			// Measured apart from the driver's machine (through SQL or
			// an exporter), even on it: its own series.
			h.SameMachine = false
		}
	}
	if len(order) == 0 {
		return nil
	}
	sums, counts, times := map[string]float64{}, map[string]int{}, map[string][]float64{}
	groups := map[string]map[string]bool{}
	for _, p := range pts {
		g, role := hostGroup(p.Series)
		if role == "" || byRole[role] == nil || p.T < 0 || dur > 0 && p.T > dur+0.5 || math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			continue
		}
		if groups[role] == nil {
			groups[role] = map[string]bool{}
		}
		groups[role][g] = true
		sums[p.Series] += p.V
		counts[p.Series]++
		times[p.Series] = append(times[p.Series], p.T)
	}
	for name, n := range counts {
		_, role := hostGroup(name)
		byRole[role].Means[name] = sums[name] / float64(n)
	}
	for role, h := range byRole {
		for g := range groups[role] {
			h.Series = append(h.Series, g)
		}
		slices.Sort(h.Series)
		if dur < minGapWindow {
			// Too short a window to tell a gap from the edges of
			// sampling (its failures still say so).
			continue
		}
		// Gaps: of the gauge each of the host's samplers gives at every
		// sample, the worst (one source down is a gap even when another
		// source of the same host goes on).
		for _, sp := range sm.specs {
			name := gaugeOf(sp.Sampler)
			if sp.Host != role || name == "" {
				continue
			}
			miss := 100.0
			if ts := times[name]; len(ts) > 0 {
				miss = 100 * missingSeconds(ts, dur, 1) / dur
			}
			h.MissingPct = max(h.MissingPct, miss)
		}
	}
	failures := sm.c.Failures()
	for _, sp := range sm.specs {
		h := byRole[sp.Host]
		if h == nil {
			continue
		}
		for _, f := range failures {
			if f.Sampler == sp.Sampler.Name() {
				h.Failures += f.Count
				if h.Error == "" {
					h.Error = f.First.Error()
				}
			}
		}
	}
	out := make([]results.Host, 0, len(order))
	for _, r := range order {
		out = append(out, *byRole[r])
	}
	return out
}

// missingSeconds is the time of [0, dur] not covered by samples taken
// every tick seconds at times ts (sorted): the part of each gap longer
// than one and a half ticks beyond one tick, with the window's edges.
func missingSeconds(ts []float64, dur, tick float64) float64 {
	slices.Sort(ts)
	missing := 0.0
	prev := 0.0
	for _, t := range append(ts, dur) {
		if t > dur {
			t = dur
		}
		if gap := t - prev; gap > 1.5*tick {
			missing += gap - tick
		}
		prev = t
	}
	return min(missing, dur)
}

// gaugeOf is a series the sampler gives at every sample it takes (its gaps
// are the sampler's), "" for one without such a series.
func gaugeOf(s sampler.Sampler) string {
	switch s := s.(type) {
	case *system.Host:
		return s.Prefix + system.MemUsed
	case *system.Portable:
		return system.MemUsed
	case *scrape.Node:
		return s.Prefix + system.MemUsed
	case *system.PGProcs:
		return s.Gauge()
	case *system.Disk:
		return system.DiskUtil
	case *scrape.Container:
		return scrape.ContainerMem
	}
	return ""
}
