package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// Run kinds: runs the executor measured have a throughput and an x axis;
// the others (storage, filesystem workloads) get their workload's section.
const (
	kindDB    = "db"
	kindOther = "other"
)

// runData is one stored run with what the report reads out of it.
type runData struct {
	Run  *store.Run
	R    *results.Run // the run decoded (its workload's types)
	v    *views
	Raw  map[string]any // the summary as generic JSON
	Sum  summaryFields
	Env  *envinfo.Snapshot
	Link *store.PlanLink // nil for runs outside experiments
	// planMetric is the throughput field named by the plan of the run's
	// experiment ("" when unknown).
	planMetric string

	Kind   string
	Config string // configuration label
	XName  string // "vusers", "clients", ...
	X      float64
	HasX   bool
	Metric string  // summary field measuring throughput: "nopm", "tps"
	Value  float64 // that field's value; NaN when missing

	Counted bool   // counts in medians, bands and comparisons
	Why     string // why it does not count (warm-up, interrupted, ...)

	// Reasons say why the run's status is not ok, as its summary gives
	// them (results.ReasonsOf); empty when it gives none.
	Reasons []results.Reason

	Ops []opLatency // latency per transaction type
}

// summaryFields are the summary fields the report reads leniently, by
// name, from a summary of any version (docs/json-summary.md); unknown or
// mistyped fields are left zero. per_transaction is the time profile of
// runs stored without histograms.
type summaryFields struct {
	Script    string             `json:"script"`
	Mode      string             `json:"mode"`
	Clients   int                `json:"clients"`
	LatencyMs map[string]float64 `json:"latency_ms"`
	Errors    int64              `json:"errors"`
	// QueryErrors and TimedOut are tpch's failed queries (its summary has
	// no executor's errors): the run table's errors for such a run.
	QueryErrors    int64             `json:"query_errors"`
	TimedOut       int64             `json:"timed_out"`
	ErrorsPct      float64           `json:"errors_pct"`
	Settings       map[string]string `json:"settings_applied"`
	PerTransaction []txnStats        `json:"per_transaction"`
	DurationS      float64           `json:"duration_s"`
	// Outages are the windows of connection errors with nothing
	// completing, in seconds since the measurement start (the time base of
	// the stored series).
	Outages []results.Outage `json:"outages"`
	// NotMeasured: what the run could not measure, and why.
	NotMeasured map[string]string `json:"not_measured"`
	// Hosts: the machines it measured, with their sources.
	Hosts    []results.Host `json:"hosts"`
	OpenLoop *struct {
		TargetTPS   float64            `json:"target_tps"`
		AchievedTPS float64            `json:"achieved_tps"`
		Lag         map[string]float64 `json:"schedule_lag_ms"`
		Dispatch    map[string]float64 `json:"dispatch_delay_ms"`
		SlackUs     float64            `json:"timer_slack_us"`
	} `json:"open_loop"`
}

type txnStats struct {
	Op    string  `json:"op"`
	Count int64   `json:"count"`
	AvgMs float64 `json:"avg_ms"`
	MaxMs float64 `json:"max_ms"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// opLatency is the latency profile of one transaction type in one run, in
// milliseconds.
type opLatency struct {
	Op                           string
	Count                        int64
	Avg, P50, P90, P95, P99, Max float64
	P999                         float64 // NaN when the source has no p99.9
	FromHistogram                bool
	Overflow                     int64 // values above the histogram range
}

// planInfo is the part of the experiment plan JSON (docs/experiments.md) the
// report shows. It is read leniently: a plan written by another version just
// shows fewer rows.
type planInfo struct {
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Workload     string    `json:"workload"`
	Metric       string    `json:"metric"`
	XAxis        string    `json:"x_axis"`
	XValues      []float64 `json:"x_values"`
	Seed         *int64    `json:"seed"`
	Order        string    `json:"order"`
	Reset        string    `json:"reset"`
	ResetEvery   string    `json:"reset_every"`
	Repetitions  int       `json:"repetitions"`
	WarmupRuns   int       `json:"warmup_runs"`
	CooldownS    float64   `json:"cooldown_s"`
	Target       string    `json:"target"`
	Database     string    `json:"database"`
	BaseSettings []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"base_settings"`
	// Targets are the named targets the experiment compared
	// (matrix.target).
	Targets []struct {
		Name     string `json:"name"`
		Engine   string `json:"engine"`
		Kind     string `json:"kind"`
		Server   string `json:"server"`
		Settings []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"settings"`
	} `json:"targets"`
	Dimensions []struct {
		Name   string   `json:"name"`
		Kind   string   `json:"kind"`
		Values []string `json:"values"`
		XAxis  bool     `json:"x_axis"`
	} `json:"dimensions"`
	Baseline string `json:"baseline"`
	Configs  []struct {
		Label string `json:"label"`
	} `json:"configurations"`
	Runs     []json.RawMessage `json:"runs"`
	Estimate struct {
		TotalS float64 `json:"total_s"`
	} `json:"estimate"`
}

// decodeLenient unmarshals what it can: type mismatches leave the field zero.
func decodeLenient(raw json.RawMessage, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	err := json.Unmarshal(raw, v)
	if err == nil {
		return true
	}
	_, typeErr := err.(*json.UnmarshalTypeError)
	return typeErr
}

// dataset is everything a report or a comparison is built from.
type dataset struct {
	Exp   *store.Experiment // nil for a list of runs
	Plan  planInfo
	Links []store.PlanLink
	Runs  []*runData // plan order for an experiment, else as given
	v     *views
	// includeErrors counts the runs with status errors in the medians
	// (Options.IncludeErrors).
	includeErrors bool
}

// loadExperiment reads an experiment with its linked runs.
func loadExperiment(ctx context.Context, st *store.Store, name string, v *views, includeErrors bool) (*dataset, error) {
	e, err := st.GetExperiment(ctx, name)
	if err != nil {
		return nil, err
	}
	links, err := st.PlanLinks(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	d := &dataset{Exp: e, Links: links, v: v, includeErrors: includeErrors}
	decodeLenient(e.Plan, &d.Plan)
	for i := range links {
		l := links[i]
		if l.RunID == 0 {
			continue
		}
		r, err := st.GetRun(ctx, l.RunID)
		if err != nil {
			if errs.KindOf(err) == errs.KindUsage { // the run was deleted
				continue
			}
			return nil, err
		}
		rd := newRunData(r, v)
		rd.Link = &l
		d.Runs = append(d.Runs, rd)
	}
	d.finish()
	return d, nil
}

// loadRuns reads the given runs. Runs that belong to an experiment get their
// plan link (configuration, x value, repetition) from it.
func loadRuns(ctx context.Context, st *store.Store, ids []int64, v *views, includeErrors bool) (*dataset, error) {
	d := &dataset{v: v, includeErrors: includeErrors}
	links := map[string]map[int64]store.PlanLink{} // experiment -> run id -> link
	metrics := map[string]string{}                 // experiment -> plan metric
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		r, err := st.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		rd := newRunData(r, v)
		if r.Experiment != "" {
			m, ok := links[r.Experiment]
			if !ok {
				m = map[int64]store.PlanLink{}
				if e, err := st.GetExperiment(ctx, r.Experiment); err == nil {
					var p planInfo
					decodeLenient(e.Plan, &p)
					metrics[r.Experiment] = p.Metric
					ls, err := st.PlanLinks(ctx, e.ID)
					if err != nil {
						return nil, err
					}
					for _, l := range ls {
						if l.RunID != 0 {
							m[l.RunID] = l
						}
					}
				}
				links[r.Experiment] = m
			}
			if l, ok := m[id]; ok {
				rd.Link = &l
				rd.planMetric = metrics[r.Experiment]
			}
		}
		d.Runs = append(d.Runs, rd)
	}
	d.finish()
	return d, nil
}

// repetitionsOf returns the counted runs of the same experiment,
// configuration and x value as rd (rd included when it counts), or nil for
// a run outside an experiment; left are the repetitions left out for their
// status (warm-up runs are not repetitions).
func repetitionsOf(ctx context.Context, st *store.Store, rd *runData, includeErrors bool) (counted, left []*runData, err error) {
	if rd.Link == nil || rd.Run.Experiment == "" {
		return nil, nil, nil
	}
	e, err := st.GetExperiment(ctx, rd.Run.Experiment)
	if err != nil {
		return nil, nil, nil
	}
	var plan planInfo
	decodeLenient(e.Plan, &plan)
	ls, err := st.PlanLinks(ctx, e.ID)
	if err != nil {
		return nil, nil, err
	}
	for i := range ls {
		l := ls[i]
		if l.RunID == 0 || l.Warmup || l.Config != rd.Link.Config || l.XValue != rd.Link.XValue {
			continue
		}
		var r *runData
		if l.RunID == rd.Run.ID {
			r = rd
		} else {
			sr, err := st.GetRun(ctx, l.RunID)
			if err != nil {
				continue
			}
			r = newRunData(sr, rd.v)
			r.Link = &l
			r.classify(plan.Metric, includeErrors)
		}
		switch {
		case r.Counted:
			counted = append(counted, r)
		case r.Run.Status != store.StatusOK:
			left = append(left, r)
		}
	}
	return counted, left, nil
}

func newRunData(r *store.Run, v *views) *runData {
	compactSeries(r, maxPts)
	rd := &runData{Run: r, Value: math.NaN(), v: v}
	rd.R = results.Open(r, v.extras())
	rd.Raw, rd.Env = rd.R.Raw, rd.R.Env
	decodeLenient(r.Summary, &rd.Sum)
	rd.Reasons = results.ReasonsOf(rd.Raw)
	return rd
}

// compactSeries reduces every series of r longer than max points with
// Downsample (keeping each interval's extremes), so that a report over many
// long runs holds a few hundred points per series instead of one per second
// (a one-hour run with the samplers has some 200,000 points).
func compactSeries(r *store.Run, max int) {
	if len(r.Series) <= 2*max {
		return
	}
	type span struct{ from, to int }
	var spans []span
	for i := 0; i < len(r.Series); {
		j := i
		for j < len(r.Series) && r.Series[j].Series == r.Series[i].Series {
			j++
		}
		spans = append(spans, span{i, j})
		i = j
	}
	out := make([]store.Point, 0, len(spans)*max)
	for _, sp := range spans {
		pts := r.Series[sp.from:sp.to]
		name := pts[0].Series
		if len(pts) <= max {
			out = append(out, pts...)
			continue
		}
		xy := make([]XY, len(pts))
		for i, p := range pts {
			xy[i] = XY{p.T, p.V}
		}
		for _, p := range Downsample(xy, max) {
			out = append(out, store.Point{Series: name, T: p.X, V: p.Y})
		}
	}
	r.Series = out
}

// finish derives configurations, x values, metrics and latencies.
func (d *dataset) finish() {
	for _, rd := range d.Runs {
		rd.classify(d.Plan.Metric, d.includeErrors)
	}
}

// classify fills the derived fields of rd; planMetric is the experiment's
// throughput field ("" outside experiments). includeErrors counts a run with
// status errors (Options.IncludeErrors).
func (rd *runData) classify(planMetric string, includeErrors bool) {
	r := rd.Run
	rd.Kind = kindOther
	if rd.v.measured(r.Workload, rd.Raw) || rd.v.onDatabase(r.Workload) {
		rd.Kind = kindDB
	}

	// Configuration and x axis.
	if rd.Link != nil {
		rd.Config = rd.Link.Config
		rd.XName, rd.X, rd.HasX = rd.Link.XName, rd.Link.XValue, true
	} else {
		rd.Config = adHocLabel(rd)
		if r, ok := rd.v.workload(rd.Run.Workload).(workload.Runner); ok {
			if x, ok := results.Number(rd.Raw, r.Headline().XAxis); ok && x > 0 {
				rd.XName, rd.X, rd.HasX = r.Headline().XAxis, x, true
			}
		} else if rd.Sum.Clients > 0 {
			rd.XName, rd.X, rd.HasX = "clients", float64(rd.Sum.Clients), true
		}
	}

	// Throughput metric.
	rd.Metric = planMetric
	if rd.Metric == "" {
		rd.Metric = rd.planMetric
	}
	if rd.Metric == "" {
		rd.Metric = "tps"
		if r, ok := rd.v.workload(r.Workload).(workload.Runner); ok {
			rd.Metric = r.Headline().Metric
		}
	}
	rd.Value = number(rd.Raw, rd.Metric)
	if rd.R.Summary != nil && math.IsNaN(rd.Value) {
		if x, ok := rd.R.Summary.Metric(rd.Metric); ok {
			rd.Value = x
		}
	}

	// Does it count? The rule (docs/report.md, "Which runs count"): runs
	// with status ok; runs with status errors unless their figures are in
	// doubt (results.InDoubt: an outage, checks that could not run), and
	// those too with includeErrors; never interrupted or failed runs, or any
	// other status.
	rd.Counted, rd.Why = true, ""
	switch {
	case rd.Link != nil && rd.Link.Warmup:
		rd.Counted, rd.Why = false, "warm-up run"
	case rd.inDoubt() && !includeErrors:
		rd.Counted, rd.Why = false, "status errors: "+rd.doubtText()+" (--include-errors counts it)"
	case r.Status == store.StatusInterrupted:
		rd.Counted, rd.Why = false, "interrupted"
	case r.Status == store.StatusFailed:
		rd.Counted, rd.Why = false, joinNonEmpty(": ", "failed", reasonsText(rd.Reasons))
	case r.Status != store.StatusOK && r.Status != store.StatusErrors:
		rd.Counted, rd.Why = false, joinNonEmpty(": ", "status "+r.Status, reasonsText(rd.Reasons))
	case rd.Kind == kindDB && math.IsNaN(rd.Value):
		rd.Counted, rd.Why = false, "no "+rd.Metric+" in its summary"
	case rd.Kind == kindDB && !rd.HasX:
		rd.Counted, rd.Why = false, "no client count"
	}

	if rd.Kind == kindDB {
		rd.Ops = runLatencies(rd)
	}
}

// adHocLabel names the configuration of a run outside an experiment: its
// workload, script or mode, and the settings applied for it.
func adHocLabel(rd *runData) string {
	parts := []string{rd.Run.Workload}
	if v := rd.Run.Variant; v != "" {
		parts = append(parts, v)
	} else if rd.Sum.Script != "" {
		parts = append(parts, rd.Sum.Script)
	} else if rd.Sum.Mode != "" {
		parts = append(parts, rd.Sum.Mode)
	}
	keys := make([]string, 0, len(rd.Sum.Settings))
	for k := range rd.Sum.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+rd.Sum.Settings[k])
	}
	return strings.Join(parts, " ")
}

// number returns m[key] as a float64 (nested keys separated by dots), NaN
// when missing or not a number.
func number(m map[string]any, key string) float64 {
	var cur any = m
	for _, k := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return math.NaN()
		}
		cur = mm[k]
	}
	switch v := cur.(type) {
	case float64:
		return v
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return math.NaN()
}

// completedClasses are the outcome classes whose latencies the report shows:
// transactions that ran to their intended end (committed, or rolled back on
// purpose like TPC-C's 1% New-Order rollbacks). This matches the tpcc
// per-transaction profile; tpcb has no user aborts, so there it is the
// committed transactions, like the summary's latency_ms.
var completedClasses = map[string]bool{
	step.ClassOK.String():        true,
	step.ClassRetriedOK.String(): true,
	step.ClassUserAbort.String(): true,
}

// runLatencies returns the latency profile per transaction type: from the
// stored histograms when there are any (exact merge over the completed
// classes), else from the summary's per_transaction list, else the
// summary's overall latency as op "all".
func runLatencies(rd *runData) []opLatency {
	hs := map[string]*metrics.Hist{}
	for _, h := range rd.Run.Histograms {
		if h.Kind != store.KindLatency || !completedClasses[h.Class] {
			continue
		}
		dh, err := metrics.Decode(h.Encoded)
		if err != nil || dh.Count() == 0 {
			continue
		}
		if hs[h.Op] == nil {
			hs[h.Op] = metrics.NewHist()
		}
		hs[h.Op].Merge(dh)
	}
	var out []opLatency
	if len(hs) > 0 {
		for op, h := range hs {
			p := h.PercentilesMs(50, 90, 95, 99, 99.9)
			out = append(out, opLatency{Op: op, Count: h.Count(), Avg: h.MeanMs(), P50: p[0], P90: p[1], P95: p[2], P99: p[3], P999: p[4],
				Max: h.MaxMs(), FromHistogram: true, Overflow: h.Overflow()})
		}
	} else if len(rd.Sum.PerTransaction) > 0 {
		for _, t := range rd.Sum.PerTransaction {
			if t.Count == 0 {
				continue
			}
			out = append(out, opLatency{Op: t.Op, Count: t.Count, Avg: t.AvgMs, P50: t.P50Ms, P90: t.P90Ms, P95: t.P95Ms, P99: t.P99Ms,
				Max: t.MaxMs, P999: math.NaN()})
		}
	} else if l := rd.Sum.LatencyMs; len(l) > 0 {
		get := func(k string) float64 {
			if v, ok := l[k]; ok {
				return v
			}
			return math.NaN()
		}
		out = append(out, opLatency{Op: "all", Avg: get("avg"), P50: get("p50"), P90: get("p90"), P95: get("p95"), P99: get("p99"),
			P999: get("p99_9"), Max: get("max")})
	}
	rd.v.sortOps(out)
	return out
}

// views is what the report knows of the workloads, from the registry:
// the order of their operations, the names of their headline metrics,
// how to decode their summaries and their own sections.
type views struct {
	reg    *workload.Registry
	opRank map[string]int
}

func newViews(reg *workload.Registry) *views {
	v := &views{reg: reg, opRank: map[string]int{}}
	if reg == nil {
		return v
	}
	for _, w := range reg.All() {
		for i, op := range w.Meta().Ops {
			if _, ok := v.opRank[op]; !ok {
				v.opRank[op] = i + 1
			}
		}
	}
	return v
}

// workload returns a run's workload (nil when this build has none of that
// name).
func (v *views) workload(name string) workload.Workload {
	if v.reg == nil {
		return nil
	}
	w, _ := v.reg.Get(name)
	return w
}

// extras decodes the workloads' summary fields.
func (v *views) extras() results.ExtraFunc {
	if v.reg == nil {
		return nil
	}
	return v.reg.Extras()
}

// measured reports whether a run's workload is measured by the executor
// (transactions, clients, latency), from its options; a run of a workload
// this build does not know counts as one when its summary has tps.
func (v *views) measured(name string, raw map[string]any) bool {
	if w := v.workload(name); w != nil {
		return workload.ByExecutor(w)
	}
	_, ok := raw["tps"].(float64)
	return ok
}

// onDatabase reports whether a workload that measures itself runs on a
// database (tpch): its runs are compared by their headline metric like the
// executor's, with the server's series, though they have no latency
// percentiles of the executor's.
func (v *views) onDatabase(name string) bool {
	w := v.workload(name)
	if w == nil || len(w.Meta().Dialects) == 0 {
		return false
	}
	_, ok := w.(workload.Runner)
	return ok
}

// headline is the headline of metric m: workload w's when it is its
// metric, else that of the first workload (by name) whose it is.
func (v *views) headline(w, m string) (workload.Headline, bool) {
	if r, ok := v.workload(w).(workload.Runner); ok && r.Headline().Metric == m {
		return r.Headline(), true
	}
	if v.reg != nil {
		for _, w := range v.reg.All() {
			if r, ok := w.(workload.Runner); ok && r.Headline().Metric == m {
				return r.Headline(), true
			}
		}
	}
	return workload.Headline{}, false
}

// fieldLabels name summary fields that are nobody's headline.
var fieldLabels = map[string][2]string{
	"tps": {"tps", "tps (transactions per second)"},
	"tpm": {"TPM", "TPM (transactions per minute)"},
}

// label is how a throughput field of workload w's runs is named in tables
// and charts.
func (v *views) label(w, m string) string {
	if h, ok := v.headline(w, m); ok {
		return h.Label
	}
	if l, ok := fieldLabels[m]; ok {
		return l[0]
	}
	return m
}

// unit is the y-axis label of a throughput field of workload w's runs.
func (v *views) unit(w, m string) string {
	if h, ok := v.headline(w, m); ok {
		return h.Unit
	}
	if l, ok := fieldLabels[m]; ok {
		return l[1]
	}
	return m
}

// opLess orders operations as their workloads list them; others by name
// after them.
func (v *views) opLess(a, b string) bool {
	oa, ob := v.opRank[a], v.opRank[b]
	if oa == 0 {
		oa = 1 << 20
	}
	if ob == 0 {
		ob = 1 << 20
	}
	if oa != ob {
		return oa < ob
	}
	return a < b
}

func (v *views) sortOps(ls []opLatency) {
	sort.Slice(ls, func(i, j int) bool { return v.opLess(ls[i].Op, ls[j].Op) })
}

// runRef describes a run in one line: id, configuration, x and repetition.
func (rd *runData) ref() string {
	s := fmt.Sprintf("run %d (%s", rd.Run.ID, rd.Config)
	if rd.HasX {
		s += fmt.Sprintf(", %s %s", rd.XName, fmtX(rd.X))
	}
	if rd.Link != nil {
		if rd.Link.Warmup {
			s += ", warm-up"
		} else if rd.Link.Repetition > 0 {
			s += fmt.Sprintf(", repetition %d", rd.Link.Repetition)
		}
	}
	return s + ")"
}

// fmtX formats an x-axis value (integers without decimals).
func fmtX(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64)
}
