// Package report builds tunebench's reports from the results store: one
// self-contained, offline HTML file per experiment or list of runs (tables,
// and charts drawn with gonum/plot as inline SVG), and the terminal tables of
// `tunebench compare`.
//
// The statistics are those docs/report.md explains: throughput per
// configuration and x value is the median over the counted repetitions
// with their min-max band; comparisons with the baseline configuration
// give the ratio of the medians and a percentile bootstrap 95% confidence
// interval over the repetitions.
package report

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// Options selects what a report covers and how it is computed.
type Options struct {
	// Experiment names the experiment to report on; otherwise RunIDs lists
	// the runs.
	Experiment string
	RunIDs     []int64
	// Baseline is the configuration label comparisons are made against.
	// Empty: the experiment plan's baseline, else the first configuration.
	Baseline string
	// Resamples and Seed drive the bootstrap (defaults DefaultResamples,
	// DefaultSeed).
	Resamples int
	Seed      uint64
	// MaxSeriesRuns caps the runs whose time series are drawn (default 30).
	MaxSeriesRuns int
	// IncludeErrors also counts the runs whose figures are in doubt
	// (results.InDoubt: status errors for an outage or checks that could
	// not run) in the medians, bands and comparisons. By default runs with
	// status ok count, and runs with status errors for transactions that
	// ended in errors (within or over max_errors_pct) count too; only the
	// runs in doubt are left out. Interrupted and failed runs never count.
	IncludeErrors bool
	// Version is tunebench's version, shown in the footer.
	Version string
	// Charts are the database targets' chart vocabularies (the drivers'
	// target.Charter): a run's charts are the report's own and those of
	// its database.
	Charts []results.ChartDef
	// Now is the generation time shown (default time.Now).
	Now time.Time
	// Registry holds the workloads: their headlines, the order of their
	// operations and their own sections of the report.
	Registry *workload.Registry
}

// Report is a built report, ready to be written as HTML.
type Report struct {
	Title     string
	Generated string
	Version   string
	StorePath string

	Exp       *expView
	Selection []kv // for a list of runs

	Env []envRow
	// Settings are the non-default settings, a table per database
	// product.
	Settings []settingsView
	EnvNote  string
	// Engines says what means something different on each database
	// engine the runs compare (nil for runs on one).
	Engines *enginesView

	Groups []groupView
	Other  []otherView // the sections of workloads the executor does not measure (storage, fsblog)

	Runs       []runRow
	Excluded   []string
	StatusNote string // how the runs with status errors were treated

	Series     []runCharts
	SeriesNote string

	Resamples int
	Seed      uint64
	Notes     []string

	charts int
}

// ChartCount is the number of charts (SVG elements) the report holds.
func (r *Report) ChartCount() int { return r.charts }

type kv struct{ K, V string }

type expView struct {
	Rows []kv
	Spec string
}

type groupView struct {
	Metric, MetricLabel, XName, Baseline string
	Chart                                template.HTML
	Rows                                 []tputRow
	RatioChart                           template.HTML
	Compare                              []cmpView
	Latency                              []latView
	// ManyOps: more transaction types than a chart each reads well
	// (tpch's 22 queries and 2 refreshes): one table, the charts folded.
	ManyOps bool
}

// manyOps is how many transaction types get a section each; more share
// one table, their charts folded away.
const manyOps = 6

type tputRow struct {
	Config           string
	Color            string
	X                string
	N                int
	Median, Min, Max string
	Spread           string // (max-min)/median in percent
	Runs             string
	Flagged          string // runs at this point whose status is not ok
}

type cmpView struct {
	Config, X         string
	Base, This        string // medians
	NBase, NThis      int
	Ratio, CI         string
	Verdict, Class    string
	P95Ratio, P95CI   string
	P95Verdict, P95Cl string
}

type latView struct {
	Op    string
	Chart template.HTML
	Rows  []latRowView
}

type latRowView struct {
	Config, Color, X                   string
	N                                  int
	Avg, P50, P90, P95, P99, P999, Max string
}

type runRow struct {
	ID, Config, X, Rep, Status, Started string
	StatusBad                           bool // the status is not ok
	Metric, Value, P95, Errors          string
	Outages                             []string
	Counted                             bool
	Why                                 string
}

// Build reads the store and computes the report.
func Build(ctx context.Context, st *store.Store, o Options) (*Report, error) {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.MaxSeriesRuns <= 0 {
		o.MaxSeriesRuns = 30
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var d *dataset
	var err error
	switch {
	case o.Experiment != "":
		d, err = loadExperiment(ctx, st, o.Experiment, newViews(o.Registry), o.IncludeErrors)
	case len(o.RunIDs) > 0:
		d, err = loadRuns(ctx, st, o.RunIDs, newViews(o.Registry), o.IncludeErrors)
	default:
		err = errs.Usage("name an experiment or give run ids", "nothing to report on")
	}
	if err != nil {
		return nil, err
	}
	return build(d, st.Path(), o)
}

func build(d *dataset, storePath string, o Options) (*Report, error) {
	baseline := o.Baseline
	if baseline != "" {
		found := false
		labels := configOrder(d)
		for _, c := range labels {
			found = found || c == baseline
		}
		if !found {
			return nil, errs.Usage("use one of the configuration labels: "+quoteList(labels),
				"no configuration %q to use as the baseline", baseline)
		}
	} else {
		baseline = d.Plan.Baseline
	}
	a := analyse(d, baseline, o.Resamples, o.Seed)

	r := &Report{
		Generated: o.Now.Format("2006-01-02 15:04:05 MST"),
		Version:   o.Version,
		StorePath: storePath,
		Resamples: o.Resamples,
		Seed:      o.Seed,
	}
	if d.Exp != nil {
		r.Title = "Experiment " + d.Exp.Name
		r.Exp = experimentView(d)
	} else {
		r.Title = "Runs " + idList(runIDs(d.Runs))
		r.Selection = selectionView(d)
	}
	if len(d.Runs) == 0 {
		r.Notes = append(r.Notes, "No stored runs: nothing to chart yet.")
	}
	r.Env, r.Settings, r.EnvNote = environment(d)
	r.Engines = engines(d)

	for _, g := range a.Groups {
		gv, err := groupViewOf(g)
		if err != nil {
			return nil, err
		}
		r.charts += countCharts(gv)
		r.Groups = append(r.Groups, gv)
	}
	for _, rd := range a.Excluded {
		r.Excluded = append(r.Excluded, rd.ref()+": "+rd.Why)
	}
	if r.StatusNote = statusNote(d); r.StatusNote != "" {
		r.Notes = append(r.Notes, r.StatusNote)
	}

	other, n, err := otherSections(d)
	if err != nil {
		return nil, err
	}
	r.Other, r.charts = other, r.charts+n

	for _, rd := range d.Runs {
		r.Runs = append(r.Runs, runRowOf(rd))
	}

	picked, note := seriesRuns(d, o.MaxSeriesRuns)
	r.SeriesNote = note
	for _, rd := range picked {
		rc, err := buildRunCharts(rd, o.Charts)
		if err != nil {
			return nil, err
		}
		r.charts += len(rc.Charts)
		r.Series = append(r.Series, rc)
	}
	return r, nil
}

func countCharts(g groupView) int {
	n := 0
	if g.Chart != "" {
		n++
	}
	if g.RatioChart != "" {
		n++
	}
	for _, l := range g.Latency {
		if l.Chart != "" {
			n++
		}
	}
	return n
}

func groupViewOf(g *group) (groupView, error) {
	gv := groupView{Metric: g.Metric, MetricLabel: g.Label, XName: g.XName, Baseline: g.Baseline}
	var err error
	if gv.Chart, err = throughputChart(g); err != nil {
		return gv, err
	}
	for _, c := range g.Configs {
		for _, p := range c.Points {
			spread := ""
			if p.Median > 0 && len(p.Values) > 1 {
				spread = fmt.Sprintf("%.1f%%", 100*(p.Max-p.Min)/p.Median)
			}
			row := tputRow{
				Config: c.Config, Color: cssColor(c.Color), X: fmtX(p.X), N: len(p.Values),
				Median: fmtNum(p.Median), Min: fmtNum(p.Min), Max: fmtNum(p.Max), Spread: spread,
				Runs: idList(p.RunIDs),
			}
			var flagged []string
			for _, f := range g.Flagged {
				if f.Config == c.Config && f.X == p.X {
					s := fmt.Sprintf("%d %s", f.ID, f.Status)
					if !f.Counted {
						s += ", left out"
					}
					flagged = append(flagged, s)
				}
			}
			row.Flagged = strings.Join(flagged, "; ")
			gv.Rows = append(gv.Rows, row)
		}
	}
	if len(g.Compare) > 0 {
		if gv.RatioChart, err = ratioChart(g); err != nil {
			return gv, err
		}
	}
	for _, c := range g.Compare {
		v, cl := verdictClass(c.Throughput, true)
		pv, pcl := verdictClass(c.P95, false)
		gv.Compare = append(gv.Compare, cmpView{
			Config: c.Config, X: fmtX(c.X),
			Base: fmtNum(c.Base.Median), This: fmtNum(c.This.Median),
			NBase: c.Throughput.NBase, NThis: c.Throughput.NOther,
			Ratio: fmtRatio(c.Throughput.Ratio), CI: fmtCI(c.Throughput),
			Verdict: v, Class: cl,
			P95Ratio: fmtRatio(c.P95.Ratio), P95CI: fmtCI(c.P95), P95Verdict: pv, P95Cl: pcl,
		})
	}
	for _, og := range g.Latency {
		lv := latView{Op: og.Op}
		if lv.Chart, err = latencyChart(g, og); err != nil {
			return gv, err
		}
		for _, row := range og.Rows {
			lv.Rows = append(lv.Rows, latRowView{
				Config: row.Config, Color: cssColor(row.Color), X: fmtX(row.X), N: row.N,
				Avg: fmtMs(row.Avg), P50: fmtMs(row.P50), P90: fmtMs(row.P90), P95: fmtMs(row.P95),
				P99: fmtMs(row.P99), P999: fmtMs(row.P999), Max: fmtMs(row.Max),
			})
		}
		gv.Latency = append(gv.Latency, lv)
	}
	gv.ManyOps = len(gv.Latency) > manyOps
	return gv, nil
}

// verdictClass returns the verdict text and its CSS class.
func verdictClass(r RatioCI, higherIsBetter bool) (string, string) {
	v := verdict(r, higherIsBetter)
	switch v {
	case "within noise":
		return v, "noise"
	case "better":
		if higherIsBetter {
			return "higher", "good"
		}
		return "lower", "good"
	case "worse":
		if higherIsBetter {
			return "lower", "bad"
		}
		return "higher", "bad"
	}
	return v, "na"
}

// seriesRuns picks the runs whose time series are drawn: every run of a
// list (up to max); for an experiment one representative run per
// configuration and x value (the repetition closest to the median).
func seriesRuns(d *dataset, maxRuns int) ([]*runData, string) {
	var out []*runData
	note := ""
	if d.Exp == nil {
		for _, rd := range d.Runs {
			if rd.Kind == kindDB && len(rd.Run.Series) > 0 {
				out = append(out, rd)
			}
		}
	} else {
		type key struct {
			config string
			x      float64
		}
		groups := map[key][]*runData{}
		var keys []key
		for _, rd := range d.Runs {
			if !rd.Counted || rd.Kind != kindDB || len(rd.Run.Series) == 0 {
				continue
			}
			k := key{rd.Config, rd.X}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], rd)
		}
		order := map[string]int{}
		for i, c := range configOrder(d) {
			order[c] = i
		}
		sort.Slice(keys, func(i, j int) bool {
			if order[keys[i].config] != order[keys[j].config] {
				return order[keys[i].config] < order[keys[j].config]
			}
			return keys[i].x < keys[j].x
		})
		multi := false
		for _, k := range keys {
			rs := groups[k]
			if len(rs) > 1 {
				multi = true
			}
			vals := make([]float64, len(rs))
			for i, rd := range rs {
				vals[i] = rd.Value
			}
			med := Median(vals)
			best := rs[0]
			for _, rd := range rs[1:] {
				if math.Abs(rd.Value-med) < math.Abs(best.Value-med) ||
					(math.Abs(rd.Value-med) == math.Abs(best.Value-med) && rd.Run.ID < best.Run.ID) {
					best = rd
				}
			}
			out = append(out, best)
		}
		if multi {
			note = "One run per configuration and x value: the repetition whose throughput is closest to the median. `tunebench report RUN_ID` draws any other run."
		}
		// And every run whose status is not ok: its series show what went
		// wrong (an outage, errors, where it stopped).
		picked := map[*runData]bool{}
		for _, rd := range out {
			picked[rd] = true
		}
		added := false
		for _, rd := range d.Runs {
			if picked[rd] || !rd.statusBad() || rd.Kind != kindDB || len(rd.Run.Series) == 0 || (rd.Link != nil && rd.Link.Warmup) {
				continue
			}
			out = append(out, rd)
			added = true
		}
		if added {
			note = strings.TrimSpace(note + " The runs whose status is not ok follow.")
		}
	}
	if len(out) > maxRuns {
		note = strings.TrimSpace(note + fmt.Sprintf(" Only the first %d of %d runs are drawn; report on fewer runs to see the others.", maxRuns, len(out)))
		out = out[:maxRuns]
	}
	return out, note
}
