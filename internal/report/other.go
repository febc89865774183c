package report

import (
	"math"
	"sort"
	"strconv"

	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload"
)

// Runs the executor does not measure (storage, fsblog) have no clients axis
// and no transactions: their workload's own section shows them, across
// all its runs of the report (so that two filesystems or disks are side by
// side), and per run.

// otherView is the part of the report for one workload's runs.
type otherView struct {
	ID     string // HTML anchor
	Title  string
	Intro  string
	Charts []namedChart
	Tables []objTable // across runs
	Runs   []otherRun
}

// otherRun is one storage or fsblog run.
type otherRun struct {
	Ref    string
	Fields []kv
	Tables []objTable
	Charts []namedChart
	Note   string
}

// objTable is a simple table.
type objTable struct {
	Name    string
	Left    int // leading text columns (the others are numbers, right-aligned)
	Columns []string
	Rows    [][]string
}

// otherSections builds the workloads' own sections (Sectioner), by
// workload name, and returns the number of charts drawn.
func otherSections(d *dataset) ([]otherView, int, error) {
	byWorkload := map[string][]*runData{}
	var names []string
	for _, rd := range d.Runs {
		if _, ok := byWorkload[rd.Run.Workload]; !ok {
			names = append(names, rd.Run.Workload)
		}
		byWorkload[rd.Run.Workload] = append(byWorkload[rd.Run.Workload], rd)
	}
	sort.Strings(names)
	var out []otherView
	n := 0
	for _, name := range names {
		sec, ok := d.v.workload(name).(workload.Sectioner)
		if !ok {
			continue
		}
		rds := byWorkload[name]
		runs := make([]*results.Run, len(rds))
		for i, rd := range rds {
			runs[i] = rd.R
		}
		s, err := sec.Section(runs)
		if err != nil {
			return nil, 0, err
		}
		if s == nil {
			continue
		}
		v, err := renderSection(s, rds)
		if err != nil {
			return nil, 0, err
		}
		n += len(v.Charts)
		for _, r := range v.Runs {
			n += len(r.Charts)
		}
		out = append(out, v)
	}
	return out, n, nil
}

// renderSection draws a workload's section: its tables as they are (text
// redacted), its bar charts and each run's series charts.
func renderSection(s *results.Section, rds []*runData) (otherView, error) {
	v := otherView{ID: s.ID, Title: s.Title, Intro: s.Intro}
	for _, t := range s.Tables {
		v.Tables = append(v.Tables, tableOf(t))
	}
	for _, b := range s.Bars {
		rows := make([]hbar, len(b.Rows))
		for i, r := range b.Rows {
			nan := make([]float64, len(r.Values))
			for j := range nan {
				nan[j] = math.NaN()
			}
			rows[i] = hbar{Label: redact.Patterns(r.Label), Values: r.Values, Lo: nan, Hi: nan}
			if b.ColorByRow {
				rows[i].Color = i
			}
		}
		svg, err := hbarChartScaled(b.Title, b.Unit, b.Columns, rows, false, b.Log, math.NaN(), "")
		if err != nil {
			return v, err
		}
		if svg != "" {
			v.Charts = append(v.Charts, namedChart{b.Title, svg})
		}
	}
	byID := map[int64]*runData{}
	for _, rd := range rds {
		byID[rd.Run.ID] = rd
	}
	for _, rv := range s.Runs {
		rd := byID[rv.RunID]
		r := otherRun{Ref: "run " + strconv.FormatInt(rv.RunID, 10), Note: redact.Patterns(rv.Note)}
		if rd != nil {
			r.Ref = rd.ref()
		}
		for _, f := range rv.Fields {
			r.Fields = append(r.Fields, kv{f.K, redact.Patterns(f.V)})
		}
		for _, t := range rv.Tables {
			r.Tables = append(r.Tables, tableOf(t))
		}
		if rd != nil {
			sm := seriesMap(rd)
			for _, c := range rv.Charts {
				def := runChartDef{Title: c.Title, YLabel: c.YLabel, Scale: 1}
				for _, ref := range c.Series {
					def.Series = append(def.Series, seriesDef(ref))
				}
				svg, err := seriesChart(def, sm, rd.Sum.Outages)
				if err != nil {
					return v, err
				}
				if svg != "" {
					r.Charts = append(r.Charts, namedChart{def.Title, svg})
				}
			}
		}
		v.Runs = append(v.Runs, r)
	}
	return v, nil
}

func tableOf(t results.Table) objTable {
	o := objTable{Name: t.Name, Left: t.Left, Columns: t.Columns}
	for _, r := range t.Rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = redact.Patterns(c)
		}
		o.Rows = append(o.Rows, row)
	}
	return o
}
