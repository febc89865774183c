package tpch

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
)

// varying lists the server settings whose values differ between the runs
// (from each run's environment snapshot): what tells the configurations
// of an experiment, or of runs made with different --set, apart.
func varying(runs []*results.Run) []string {
	values := map[string]map[string]bool{}
	n := 0
	for _, rd := range runs {
		if rd.Env == nil || rd.Env.Postgres == nil {
			continue
		}
		n++
		for k, v := range rd.Env.Postgres.Settings {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	var out []string
	for k, vs := range values {
		count := 0
		for _, rd := range runs {
			if rd.Env != nil && rd.Env.Postgres != nil {
				if _, ok := rd.Env.Postgres.Settings[k]; ok {
					count++
				}
			}
		}
		if len(vs) > 1 || count != n {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// configOf is a run's configuration as the report groups it: the scale,
// the test, the streams and the settings that vary between the runs.
func configOf(rd *results.Run, x *Summary, settings []string) string {
	label := fmt.Sprintf("SF %g %s", x.Scale, x.Test)
	if x.Test != TestPower && x.Test != "validate" {
		label += fmt.Sprintf(" %d streams", x.Streams)
	}
	var parts []string
	for _, k := range settings {
		v := "default"
		if rd.Env != nil && rd.Env.Postgres != nil {
			if s, ok := rd.Env.Postgres.Settings[k]; ok {
				v = s
			}
		}
		parts = append(parts, k+"="+v)
	}
	if len(parts) > 0 {
		label += ", " + strings.Join(parts, " ")
	}
	return label
}

// Section is the workload's part of the report: each configuration's
// per-query times side by side (power test, median over repetitions, log
// scale), the metrics of every run, the plans that differ between
// configurations, and per run its queries, refreshes and time series.
func (Workload) Section(runs []*results.Run) (*results.Section, error) {
	v := &results.Section{ID: "tpch", Title: "TPC-H-like workload (tpch)",
		Intro: "Per-query times of the power test per configuration (median over repetitions; log scale), the TPC-H-like metrics of every run (QphH-like: not an audited result), the query plans that differ between configurations (with --explain), and per run its queries, refreshes and time series."}
	type config struct {
		label  string
		times  [22][]float64
		shapes map[int]map[string]bool
	}
	var configs []*config
	byLabel := map[string]*config{}
	settings := varying(runs)
	metrics := results.Table{Name: "Metrics per run", Left: 2, Columns: []string{"run", "configuration", "status", "QphH-like", "Power@Size", "Throughput@Size", "geomean s", "slowest stream geomean s", "power s", "Ts s"}}
	for _, rd := range runs {
		if rd.Summary == nil {
			continue
		}
		x := extraOf(rd.Summary)
		label := configOf(rd, x, settings)
		c := byLabel[label]
		if c == nil {
			c = &config{label: label, shapes: map[int]map[string]bool{}}
			byLabel[label] = c
			configs = append(configs, c)
		}
		for _, q := range x.Queries {
			if q.Stream == 0 && q.Status == statusOK && q.Query >= 1 && q.Query <= 22 {
				c.times[q.Query-1] = append(c.times[q.Query-1], q.Seconds)
			}
		}
		for _, p := range x.Plans {
			if c.shapes[p.Query] == nil {
				c.shapes[p.Query] = map[string]bool{}
			}
			c.shapes[p.Query][p.Shape] = true
		}
		num := func(f float64, format string) string {
			if f <= 0 {
				return "-"
			}
			return fmt.Sprintf(format, f)
		}
		metrics.Row("run "+strconv.FormatInt(rd.ID, 10), label, rd.Status, num(x.QphH, "%.1f"), num(x.Power, "%.1f"), num(x.Throughput, "%.1f"),
			num(x.GeoMean, "%.4f"), num(x.GeoMeanSlowest, "%.4f"), num(x.PowerSeconds, "%.2f"), num(x.ThroughputSeconds, "%.2f"))
		v.Runs = append(v.Runs, runView(rd, x, label))
	}
	bars := results.BarChart{Title: "Power-test query times per configuration (median over repetitions, log scale)", Unit: "seconds", Log: true}
	for _, c := range configs {
		bars.Columns = append(bars.Columns, c.label)
	}
	for q := 1; q <= 22; q++ {
		b := results.Bar{Label: queryOp(q)}
		for _, c := range configs {
			b.Values = append(b.Values, median(c.times[q-1]))
		}
		bars.Rows = append(bars.Rows, b)
	}
	if hasValues(bars) {
		v.Bars = append(v.Bars, bars)
	}
	v.Tables = append(v.Tables, metrics)
	if t, ok := planChanges(configs, func(c *config) (string, map[int]map[string]bool) { return c.label, c.shapes }); ok {
		v.Tables = append(v.Tables, t)
	}
	return v, nil
}

func hasValues(b results.BarChart) bool {
	for _, r := range b.Rows {
		for _, v := range r.Values {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// planChanges is a table of the queries whose plan shape differs between
// configurations: each distinct shape gets a letter, each configuration the
// letters of the shapes its runs had.
func planChanges[C any](configs []C, of func(C) (string, map[int]map[string]bool)) (results.Table, bool) {
	t := results.Table{Name: "Query plans that differ between configurations (plan A, B ...: distinct plan shapes, from EXPLAIN)", Left: 1, Columns: []string{"query"}}
	for _, c := range configs {
		label, _ := of(c)
		t.Columns = append(t.Columns, label)
	}
	for q := 1; q <= 22; q++ {
		letters := map[string]string{}
		var cells []string
		for _, c := range configs {
			_, shapes := of(c)
			var ls []string
			keys := make([]string, 0, len(shapes[q]))
			for s := range shapes[q] {
				keys = append(keys, s)
			}
			sort.Strings(keys)
			for _, s := range keys {
				if _, ok := letters[s]; !ok {
					letters[s] = string(rune('A' + len(letters)))
				}
				ls = append(ls, letters[s])
			}
			cell := "-"
			if len(ls) > 0 {
				cell = "plan " + strings.Join(ls, ", ")
			}
			cells = append(cells, cell)
		}
		if len(letters) > 1 {
			t.Row(append([]string{queryOp(q)}, cells...)...)
		}
	}
	return t, len(t.Rows) > 0
}

// runView is one run's part: its queries, refreshes, plans and series.
func runView(rd *results.Run, x *Summary, label string) results.RunView {
	r := results.RunView{RunID: rd.ID}
	r.Fields = append(r.Fields, results.Field{K: "Configuration", V: label}, results.Field{K: "Seed", V: strconv.FormatInt(x.Seed, 10)})
	if x.Test == "validate" {
		t := validationTable(x)
		t.Name, t.Left = "Validation", 1
		r.Tables = append(r.Tables, *t)
		return r
	}
	qt := queryTable(x)
	qt.Name, qt.Left = "Query times", 1
	r.Tables = append(r.Tables, *qt)
	if len(x.Refreshes) > 0 {
		t := results.Table{Name: "Refresh functions", Left: 2, Columns: []string{"function", "stream", "set", "seconds", "orders", "lineitems"}}
		for _, f := range x.Refreshes {
			t.Row(f.Function, streamName(f.Stream), strconv.FormatInt(f.Set, 10), fmt.Sprintf("%.2f", f.Seconds), strconv.FormatInt(f.Orders, 10), strconv.FormatInt(f.Lines, 10))
		}
		r.Tables = append(r.Tables, t)
	}
	have := map[string]bool{}
	for _, p := range rd.Series {
		have[p.Series] = true
	}
	chart := func(title, ylabel string, refs ...results.SeriesRef) {
		var in []results.SeriesRef
		for _, s := range refs {
			if have[s.Name] {
				in = append(in, s)
			}
		}
		if len(in) > 0 {
			r.Charts = append(r.Charts, results.SeriesChart{Title: title, YLabel: ylabel, Series: in})
		}
	}
	chart("Query times, at each query's end", "seconds", results.SeriesRef{Name: "query_s", Label: "query"})
	chart("CPU", "percent", results.SeriesRef{Name: "sys.cpu_user_pct", Label: "user"}, results.SeriesRef{Name: "sys.cpu_system_pct", Label: "system"},
		results.SeriesRef{Name: "sys.cpu_iowait_pct", Label: "iowait"})
	chart("Buffers", "blocks per second", results.SeriesRef{Name: "pg.blks_hit_s", Label: "hit"}, results.SeriesRef{Name: "pg.blks_read_s", Label: "read"})
	chart("Temporary files", "bytes per second", results.SeriesRef{Name: "pg.temp_bytes_s", Label: "temp"})
	if len(r.Charts) == 0 {
		r.Note = "No series stored for this run."
	}
	return r
}
