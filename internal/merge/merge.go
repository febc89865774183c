package merge

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// MinOverlapPct is the least share of a shard's measured window that the
// shards' common window must cover; a shard below it started late or
// ended early, and the merged run says so (status errors).
const MinOverlapPct = 99.0

// Merged is a merged run, ready to store, and what the merge concluded.
type Merged struct {
	Record *results.Record
	// Failures are the workload's cross-checks that failed on the merged
	// figures (the run's status is failed).
	Failures []workload.Failure
}

// serverSide are the series prefixes of what shard 0 alone measures: the
// database server's host, its container and its statistics; the driver
// machine's (sys., net., driver.) are shard 0's own and kept as its.
var serverSide = []string{"server.", "disk.", "pg.", "container.", "sys.", "net.", "driver."}

// Merge makes one run of a group's shards; w is their workload (nil when
// this binary does not know it: its own fields are then left out).
func Merge(g *Group, w workload.Workload) (*Merged, error) {
	var present []*Part
	for _, p := range g.Parts {
		if p != nil {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		return nil, errs.Usage("", "no shard of %s has a result to merge", g.Label())
	}
	first := present[0]
	sm, merges := w.(workload.ShardMerger)
	if first.Run.Summary.Measured == nil && !merges {
		return nil, errs.Usage("run it unsharded", "%s measures itself, and this tunebench cannot merge its shards' results", g.Workload)
	}
	m := &merger{g: g, present: present, info: &results.Merge{Key: g.Key, Count: g.Count}}
	m.window()
	sum := m.summary()
	res, err := m.executor()
	if err != nil {
		return nil, err
	}
	ticks, err := m.series()
	if err != nil {
		return nil, err
	}
	res.Series = ticks
	if mm := sum.Measured; mm != nil {
		mm.LatencyMs = results.LatencyOf(res.Latency)
		if ol := mm.OpenLoop; ol != nil {
			ol.ScheduleLagMs, ol.ServiceMs = results.LatencyOf(res.Lag), results.LatencyOf(res.Service)
		}
	}

	out := &Merged{}
	parts := make([]*results.Summary, g.Count)
	for i, p := range g.Parts {
		if p != nil {
			parts[i] = p.Run.Summary
		}
	}
	var v *workload.Verdict
	if merges {
		v, err = sm.MergeShards(&workload.MergeInput{Parts: parts, Met: g.Key != "", Result: res, Summary: sum, SumSeries: m.sumSeries})
		if err != nil {
			return nil, err
		}
	}
	if v == nil {
		v = &workload.Verdict{}
	}
	sum.Extra = v.Extra
	m.info.Notes = append(m.info.Notes, v.Warnings...)
	m.status(sum, v)
	out.Failures = v.Failures

	hists, err := results.RunHistograms(res)
	if err != nil {
		return nil, err
	}
	series := append(append(results.RunSeries(res), v.Series...), m.otherSeries()...)
	env, err := m.env()
	if err != nil {
		return nil, err
	}
	sum.Merge = m.info
	rec := &results.Record{Summary: sum, Experiment: first.Run.Experiment, Variant: first.Run.Variant,
		Params: m.params(), Env: env, Series: series, Histograms: hists}
	if v.Check != nil {
		if rec.Check, err = json.Marshal(v.Check); err != nil {
			return nil, err
		}
	}
	out.Record = rec
	return out, nil
}

type merger struct {
	g       *Group
	present []*Part
	info    *results.Merge
	// t0 is the merged run's time zero: the earliest shard's measurement
	// start (server's clock).
	t0 time.Time
}

// window finds the common window and each shard's overlap with it.
func (m *merger) window() {
	var cs, ce time.Time
	for i, p := range m.present {
		s, e := measureStart(p), measureEnd(p)
		if i == 0 || s.Before(m.t0) {
			m.t0 = s
		}
		if i == 0 || s.After(cs) {
			cs = s
		}
		if i == 0 || e.Before(ce) {
			ce = e
		}
	}
	common := ce.Sub(cs).Seconds()
	if common < 0 {
		common = 0
	}
	m.info.CommonStart, m.info.CommonS = cs.UTC(), common
	m.info.MinOverlapPct = 100
	for i, p := range m.g.Parts {
		if p == nil {
			m.info.Shards = append(m.info.Shards, results.MergedShard{Index: i, Missing: true})
			continue
		}
		s := p.Run.Summary
		sh := p.Shard()
		ms := results.MergedShard{Index: i, Source: p.Path, RunID: p.RunID, Part: sh.Part, Status: s.Status,
			Start: measureStart(p).UTC(), DurationS: measureEnd(p).Sub(measureStart(p)).Seconds(), ClockOffsetMs: sh.ClockOffsetMs, RoundTripMs: sh.RoundTripMs,
			Hosts: s.Hosts}
		if s.Measured != nil {
			ms.Transactions, ms.TPS = s.Transactions, s.TPS
		}
		if p.Run.Env != nil {
			ms.Machine = p.Run.Env.Host.Hostname
		}
		switch {
		case s.Measured == nil:
			// A run that measures itself ends when its own work does
			// (tpch's streams): its window is held to its start alone,
			// late by at most the same share of the whole span.
			span := m.span().Seconds()
			ms.OverlapPct = 100
			if span > 0 {
				ms.OverlapPct = 100 * (1 - measureStart(p).Sub(m.t0).Seconds()/span)
			}
		case ms.DurationS > 0:
			ms.OverlapPct = 100 * math.Min(1, common/ms.DurationS)
		}
		m.info.MinOverlapPct = math.Min(m.info.MinOverlapPct, ms.OverlapPct)
		m.info.Shards = append(m.info.Shards, ms)
	}
}

// span is from the first shard's start to the last one's end.
func (m *merger) span() time.Duration {
	var end time.Time
	for _, p := range m.present {
		if e := measureEnd(p); e.After(end) {
			end = e
		}
	}
	return end.Sub(m.t0)
}

// summary is the merged run's summary: shard 0's (or the first present
// shard's) description, counts summed; latency is set from the merged
// histograms afterwards.
func (m *merger) summary() *results.Summary {
	first := m.present[0].Run.Summary
	sum := &results.Summary{SchemaVersion: results.SchemaVersion, Workload: first.Workload, NotMeasured: first.NotMeasured}
	sum.Hosts = first.Hosts
	if first.Measured == nil { // a workload that measures itself: its merge is its own
		for i, p := range m.present {
			st, en := p.Run.Summary.StartedAt.Add(offset(p)), p.Run.Summary.EndedAt.Add(offset(p))
			if i == 0 || st.Before(sum.StartedAt) {
				sum.StartedAt = st
			}
			if en.After(sum.EndedAt) {
				sum.EndedAt = en
			}
		}
		return sum
	}
	fm := *first.Measured
	mm := &fm
	sum.Measured = mm
	mm.Clients, mm.Threads, mm.Handovers, mm.Transactions, mm.TPS = 0, 0, 0, 0, 0
	mm.Errors, mm.Retries, mm.Unfinished, mm.DurationS = 0, 0, 0, 0
	mm.Outcomes, mm.BySQLState, mm.AttemptFailures = map[string]int64{}, map[string]int64{}, map[string]int64{}
	mm.Outages, mm.Check = nil, nil
	mm.Driver = results.DriverStats{}
	if first.OpenLoop != nil {
		ol := *first.OpenLoop
		ol.TargetTPS, ol.AchievedTPS, ol.Skipped, ol.Late, ol.MaxQueueDepth = 0, 0, 0, 0, 0
		mm.OpenLoop = &ol
	}
	var dispatchWorst float64
	for i, p := range m.present {
		s := p.Run.Summary
		st, en := s.StartedAt.Add(offset(p)), s.EndedAt.Add(offset(p))
		if i == 0 || st.Before(sum.StartedAt) {
			sum.StartedAt = st
		}
		if en.After(sum.EndedAt) {
			sum.EndedAt = en
		}
		x := s.Measured
		if x == nil {
			continue
		}
		mm.Clients += x.Clients
		mm.Threads += x.Threads
		mm.Handovers += x.Handovers
		mm.Transactions += x.Transactions
		mm.TPS += x.TPS
		mm.Errors += x.Errors
		mm.Retries += x.Retries
		mm.Unfinished += x.Unfinished
		mm.DurationS = math.Max(mm.DurationS, x.DurationS)
		addMap(mm.Outcomes, x.Outcomes)
		addMap(mm.BySQLState, x.BySQLState)
		addMap(mm.AttemptFailures, x.AttemptFailures)
		shift := measureStart(p).Sub(m.t0).Seconds()
		for _, o := range x.Outages {
			mm.Outages = append(mm.Outages, results.Outage{StartS: o.StartS + shift, EndS: o.EndS + shift, Errors: o.Errors})
		}
		mm.Driver.CPUSeconds += x.Driver.CPUSeconds
		mm.Driver.GCPauses += x.Driver.GCPauses
		mm.Driver.GCPauseTotalMs += x.Driver.GCPauseTotalMs
		mm.Driver.ThinkOverrunMs += x.Driver.ThinkOverrunMs
		if ol, xo := mm.OpenLoop, x.OpenLoop; ol != nil && xo != nil {
			ol.TargetTPS += xo.TargetTPS
			ol.AchievedTPS += xo.AchievedTPS
			ol.Skipped += xo.Skipped
			ol.Late += xo.Late
			ol.MaxQueueDepth += xo.MaxQueueDepth
			if xo.DispatchDelayMs.P99 >= dispatchWorst {
				dispatchWorst, ol.DispatchDelayMs = xo.DispatchDelayMs.P99, xo.DispatchDelayMs
			}
		}
	}
	sort.Slice(mm.Outages, func(i, j int) bool { return mm.Outages[i].StartS < mm.Outages[j].StartS })
	var total int64
	for _, n := range mm.Outcomes {
		total += n
	}
	mm.ErrorsPct = 0
	if total > 0 {
		mm.ErrorsPct = 100 * float64(mm.Errors) / float64(total)
	}
	if mm.Transactions > 0 {
		mm.Driver.CPUMsPer1000Tx = 1e6 * mm.Driver.CPUSeconds / float64(mm.Transactions)
	}
	if mm.OpenLoop != nil {
		m.info.Notes = append(m.info.Notes, "open_loop.dispatch_delay_ms is the worst shard's (it is not kept as a histogram); max_queue_depth is the sum of the shards' maxima")
	}
	if m.g.Parts[0] == nil {
		m.info.Notes = append(m.info.Notes, "shard 0 is missing: the database and its host were not measured (only shard 0 samples them)")
		sum.NotMeasured = map[string]string{results.NotMeasuredServerHost: "not measured: shard 0, which measures the server, is missing"}
	}
	return sum
}

func offset(p *Part) time.Duration {
	return time.Duration(p.Shard().ClockOffsetMs * float64(time.Millisecond))
}

func addMap(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

// histKey names one stored histogram.
type histKey struct{ op, class, kind string }

// executor merges the shards' histograms per op, class and kind into an
// executor result, with the counts the workloads' merges read.
func (m *merger) executor() (*run.Result, error) {
	hs := map[histKey]*metrics.Hist{}
	var keys []histKey
	for _, p := range m.present {
		for _, h := range p.Run.Histograms {
			d, err := metrics.Decode(h.Encoded)
			if err != nil {
				return nil, fmt.Errorf("%s: histogram %s/%s/%s: %w", p.Where, h.Op, h.Class, h.Kind, err)
			}
			k := histKey{h.Op, h.Class, h.Kind}
			if hs[k] == nil {
				hs[k] = d
				keys = append(keys, k)
			} else {
				hs[k].Merge(d)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.op != b.op {
			return a.op < b.op
		}
		return a.class < b.class
	})
	first := m.present[0].Run.Summary
	res := &run.Result{OpenLoop: first.Measured != nil && first.OpenLoop != nil, Latency: metrics.NewHist(), Totals: map[step.OutcomeClass]int64{}}
	if res.OpenLoop {
		res.Service, res.Lag = metrics.NewHist(), metrics.NewHist()
	}
	byOp := map[histKey]*run.OpStats{}
	var order []histKey
	for _, k := range keys {
		cl, ok := step.ParseClass(k.class)
		if !ok {
			return nil, fmt.Errorf("histogram of op %s has an unknown outcome class %q", k.op, k.class)
		}
		oc := histKey{k.op, k.class, ""}
		o := byOp[oc]
		if o == nil {
			o = &run.OpStats{Op: k.op, Class: cl}
			byOp[oc] = o
			order = append(order, oc)
		}
		h := hs[k]
		switch k.kind {
		case store.KindLatency:
			o.Latency, o.Count = h, h.Count()
			if cl.Committed() {
				res.Latency.Merge(h)
			}
		case store.KindService:
			o.Service = h
			if cl.Committed() && res.Service != nil {
				res.Service.Merge(h)
			}
		case store.KindLag:
			o.Lag = h
			if cl.Committed() && res.Lag != nil {
				res.Lag.Merge(h)
			}
		}
	}
	for _, oc := range order {
		res.Ops = append(res.Ops, *byOp[oc])
	}
	for _, p := range m.present {
		x := p.Run.Summary.Measured
		if x == nil {
			continue
		}
		res.Committed += x.Transactions
		res.Errors += x.Errors
		res.Workers += x.Clients
		res.Threads += x.Threads
		res.TPS += x.TPS
		res.MeasuredSeconds = math.Max(res.MeasuredSeconds, x.DurationS)
		for name, n := range x.Outcomes {
			if cl, ok := step.ParseClass(name); ok && n > 0 {
				res.Totals[cl] += n
			}
		}
	}
	return res, nil
}

// env is shard 0's environment (when it is missing, the first present
// shard's, marked so), holding shards 1 to N-1's (nil for a missing one).
func (m *merger) env() (*envinfo.Snapshot, error) {
	snap := func(p *Part) *envinfo.Snapshot {
		if p == nil || p.Run.Env == nil {
			return nil
		}
		c := *p.Run.Env
		return &c
	}
	base := snap(m.g.Parts[0])
	if base == nil {
		for _, p := range m.present {
			if base = snap(p); base != nil {
				base.Shard0Missing = true
				break
			}
		}
	}
	if base == nil {
		return nil, nil
	}
	base.Shards = nil
	for _, p := range m.g.Parts[1:] {
		base.Shards = append(base.Shards, snap(p))
	}
	return base, nil
}

// params are shard 0's (the first present shard's) run parameters with
// the whole run's clients.
func (m *merger) params() json.RawMessage {
	raw := m.present[0].Run.Params
	var obj map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	var clients float64
	for _, p := range m.present {
		if x := p.Run.Summary.Measured; x != nil {
			clients += float64(x.Clients)
		}
	}
	if _, ok := obj["clients"]; ok && clients > 0 {
		obj["clients"] = clients
	}
	obj["shards"] = m.g.Count
	b, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// status is the worst of the shards' with their reasons naming them, a
// missing shard's and a shard's window, then the workload's cross-checks.
func (m *merger) status(sum *results.Summary, v *workload.Verdict) {
	var reasons []results.Reason
	add := func(code, format string, a ...any) {
		reasons = append(reasons, results.Reason{Code: code, Detail: fmt.Sprintf(format, a...)})
	}
	for i, p := range m.g.Parts {
		name := fmt.Sprintf("shard %d/%d", i, m.g.Count)
		if p == nil {
			add(results.ReasonShardMissing, "%s has no result: it did not run, was killed, or its store was not given to the merge", name)
			continue
		}
		s := p.Run.Summary
		switch s.Status {
		case store.StatusFailed, store.StatusInterrupted:
			add(results.ReasonShardFailed, "%s ended %s (%s): what it measured until then is merged", name, s.Status, p.Where)
		}
		for _, r := range s.StatusReasons {
			if r.Code == results.ReasonInterrupted {
				continue
			}
			reasons = append(reasons, results.Reason{Code: r.Code, Detail: name + ": " + r.Detail})
		}
		ms := m.info.Shards[i]
		if ms.OverlapPct < MinOverlapPct {
			late := ms.Start.Sub(m.t0).Seconds()
			add(results.ReasonShardWindow, "%s's measured window (%.1f s, starting %.3f s after the first shard's) is only %.1f%% covered by the window all shards share (%.1f s); less than %.0f%%",
				name, ms.DurationS, late, ms.OverlapPct, m.info.CommonS, MinOverlapPct)
		}
	}
	for _, n := range v.NotRun {
		add(results.ReasonNotChecked, "%s", n)
	}
	status := store.StatusOK
	if len(reasons) > 0 {
		status = store.StatusErrors
	}
	for _, f := range v.Failures {
		status = store.StatusFailed
		d := f.What + " failed"
		if f.Detail != "" {
			d += ": " + f.Detail
		}
		reasons = append([]results.Reason{{Code: results.ReasonCheckFailed, Detail: d}}, reasons...)
	}
	sum.Status, sum.StatusReasons = status, reasons
}
