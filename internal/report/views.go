package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/results"
)

// The experiment's, the selection's and the runs' tables of the report,
// and the formatting of their figures.

func runRowOf(rd *runData) runRow {
	row := runRow{
		ID: strconv.FormatInt(rd.Run.ID, 10), Config: rd.Config, Status: rd.statusText(), StatusBad: rd.statusBad(),
		Metric: rd.v.label(rd.Run.Workload, rd.Metric), Value: fmtNum(rd.Value), Counted: rd.Counted, Why: rd.Why,
		Outages: outageLines(rd, 8),
	}
	if rd.Kind != kindDB {
		row.Metric, row.Value, row.Config = "", "", rd.Run.Workload+" "+rd.Run.Variant
	}
	if rd.HasX {
		row.X = rd.XName + " " + fmtX(rd.X)
	}
	if rd.Link != nil {
		if rd.Link.Warmup {
			row.Rep = "warm-up"
		} else {
			row.Rep = strconv.Itoa(rd.Link.Repetition)
		}
	}
	if !rd.Run.StartedAt.IsZero() {
		row.Started = rd.Run.StartedAt.Local().Format("2006-01-02 15:04:05")
	}
	if v, ok := rd.Sum.LatencyMs["p95"]; ok {
		row.P95 = fmtMs(v)
	}
	if rd.Kind == kindDB {
		// A query run (tpch) counts its failed and timed-out queries.
		row.Errors = strconv.FormatInt(rd.Sum.Errors+rd.Sum.QueryErrors+rd.Sum.TimedOut, 10)
	}
	return row
}

func experimentView(d *dataset) *expView {
	e, p := d.Exp, d.Plan
	v := &expView{Spec: redact.Patterns(e.Spec)}
	add := func(k, val string) {
		if val != "" {
			v.Rows = append(v.Rows, kv{k, redact.Patterns(val)})
		}
	}
	add("Name", e.Name)
	add("Description", p.Description)
	status := e.Status
	add("Status", status)
	if !e.StartedAt.IsZero() {
		s := e.StartedAt.Local().Format("2006-01-02 15:04:05")
		if !e.EndedAt.IsZero() {
			s += " to " + e.EndedAt.Local().Format("2006-01-02 15:04:05") + " (" + e.EndedAt.Sub(e.StartedAt).Round(time.Second).String() + ")"
		}
		add("Time", s)
	}
	add("Workload", p.Workload)
	if p.Metric != "" {
		add("Throughput metric", d.v.unit(p.Workload, p.Metric))
	}
	if p.XAxis != "" {
		xs := make([]string, len(p.XValues))
		for i, x := range p.XValues {
			xs[i] = fmtX(x)
		}
		add("X axis", p.XAxis+": "+strings.Join(xs, ", "))
	}
	for _, dim := range p.Dimensions {
		if dim.XAxis {
			continue
		}
		add("Matrix: "+dim.Name, strings.Join(dim.Values, ", ")+" ("+dim.Kind+")")
	}
	if n := len(p.Configs); n > 0 {
		add("Configurations", strconv.Itoa(n))
	}
	add("Baseline", p.Baseline)
	if p.Repetitions > 0 {
		add("Repetitions", strconv.Itoa(p.Repetitions)+" per configuration and x value")
	}
	if p.WarmupRuns > 0 {
		add("Warm-up runs", strconv.Itoa(p.WarmupRuns)+" per block (not counted)")
	}
	order := p.Order
	if p.Seed != nil {
		order += ", seed " + strconv.FormatInt(*p.Seed, 10)
	}
	add("Order", order)
	reset := p.Reset
	if p.ResetEvery != "" && reset != "none" {
		reset += ", every " + p.ResetEvery
	}
	add("Reset", reset)
	if p.CooldownS > 0 {
		add("Cool-down", (time.Duration(p.CooldownS * float64(time.Second))).String())
	}
	target := p.Target
	if p.Database != "" {
		target += ", database " + p.Database
	}
	if len(p.Targets) > 0 {
		target = "named targets, database " + p.Database
	}
	add("Target", target)
	for _, t := range p.Targets {
		v := t.Kind + " " + t.Engine
		if t.Server != t.Name {
			v += ", on the server of " + t.Server
		}
		var ss []string
		for _, s := range t.Settings {
			ss = append(ss, s.Name+"="+s.Value)
		}
		if len(ss) > 0 {
			v += "; settings " + strings.Join(ss, " ")
		}
		add("Target "+t.Name, v)
	}
	if len(p.BaseSettings) > 0 {
		var ss []string
		for _, s := range p.BaseSettings {
			ss = append(ss, s.Name+"="+s.Value)
		}
		add("Base settings", strings.Join(ss, " "))
	}
	var stored, counted, warm, bad, missing int
	for _, l := range d.Links {
		if l.RunID == 0 {
			missing++
			continue
		}
		stored++
	}
	for _, rd := range d.Runs {
		switch {
		case rd.Counted:
			counted++
		case rd.Link != nil && rd.Link.Warmup:
			warm++
		default:
			bad++
		}
	}
	planned := len(p.Runs)
	if planned == 0 {
		planned = len(d.Links)
	}
	runs := fmt.Sprintf("%d planned, %d stored: %d counted, %d warm-up", planned, stored, counted, warm)
	if bad > 0 {
		runs += fmt.Sprintf(", %d not counted (status not ok, or incomplete)", bad)
	}
	if missing > 0 {
		runs += fmt.Sprintf(", %d without results", missing)
	}
	if rest := planned - len(d.Links); rest > 0 {
		runs += fmt.Sprintf(", %d not run yet", rest)
	}
	add("Runs", runs)
	if p.Estimate.TotalS > 0 {
		add("Planned time", (time.Duration(p.Estimate.TotalS) * time.Second).String())
	}
	return v
}

func selectionView(d *dataset) []kv {
	var rows []kv
	rows = append(rows, kv{"Runs", idList(runIDs(d.Runs))})
	wl := map[string]bool{}
	var names []string
	var first, last time.Time
	exps := map[string]bool{}
	for _, rd := range d.Runs {
		n := rd.Run.Workload
		if rd.Run.Variant != "" {
			n += " " + rd.Run.Variant
		}
		if !wl[n] {
			wl[n] = true
			names = append(names, n)
		}
		if t := rd.Run.StartedAt; !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
		if t := rd.Run.EndedAt; t.After(last) {
			last = t
		}
		if rd.Run.Experiment != "" {
			exps[rd.Run.Experiment] = true
		}
	}
	rows = append(rows, kv{"Workloads", strings.Join(names, ", ")})
	if !first.IsZero() {
		rows = append(rows, kv{"Time", first.Local().Format("2006-01-02 15:04:05") + " to " + last.Local().Format("2006-01-02 15:04:05")})
	}
	if len(exps) > 0 {
		var es []string
		for e := range exps {
			es = append(es, e)
		}
		sort.Strings(es)
		rows = append(rows, kv{"From experiments", strings.Join(es, ", ")})
	}
	rows = append(rows, kv{"Configurations", "runs outside an experiment are grouped by workload, script or mode, and the settings applied with --set"})
	return rows
}

func runIDs(rs []*runData) []int64 {
	out := make([]int64, len(rs))
	for i, rd := range rs {
		out[i] = rd.Run.ID
	}
	return out
}

// idList formats run ids compactly: "1-4, 7, 9".
func idList(ids []int64) string {
	s := append([]int64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.FormatInt(s[i], 10))
		case j == i+1:
			parts = append(parts, strconv.FormatInt(s[i], 10), strconv.FormatInt(s[j], 10))
		default:
			parts = append(parts, strconv.FormatInt(s[i], 10)+"-"+strconv.FormatInt(s[j], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// fmtNum formats a throughput-like number: thousands grouped, one decimal
// under 1000, none above; "-" for NaN.
func fmtNum(v float64) string { return results.FmtNum(v) }

// fmtMs formats milliseconds with three significant decimals.
func fmtMs(v float64) string { return results.FmtMs(v) }

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func fmtCI(r RatioCI) string {
	if !r.HasCI {
		return "-"
	}
	return "[" + fmtRatio(r.Lo) + ", " + fmtRatio(r.Hi) + "]"
}

func cssColor(i int) string {
	c := colorOf(i)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}
