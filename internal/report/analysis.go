package report

import (
	"math"
	"sort"
)

// point is one x value of one configuration: the throughput of each counted
// repetition, their median (the line) and their min and max (the band).
type point struct {
	X                float64
	Values           []float64
	RunIDs           []int64
	Median, Min, Max float64
	P95              []float64 // overall p95 latency (ms) of each repetition, NaN when unknown
}

// configLine is one configuration's throughput over the x axis.
type configLine struct {
	Config string
	Color  int // index into the palette, stable over the whole report
	Points []*point
}

func (c *configLine) at(x float64) *point {
	for _, p := range c.Points {
		if p.X == x {
			return p
		}
	}
	return nil
}

// cmpRow compares one configuration with the baseline at one x value.
type cmpRow struct {
	Config     string
	X          float64
	Base, This *point
	Throughput RatioCI // median(this)/median(baseline) of the throughput
	P95        RatioCI // the same for the overall p95 latency (lower is better)
}

// group is the runs measured with one throughput metric against one x axis
// (an experiment has one group; a list of runs may mix tpcb and tpcc).
type group struct {
	Metric   string // summary field, e.g. "nopm"
	Label    string // how tables name it: NOPM
	Unit     string // its axis label
	XName    string
	Configs  []*configLine
	Baseline string
	Compare  []cmpRow
	Latency  []opGroup // per transaction type
	// Flagged are the runs of the group's metric and x axis whose status
	// is not ok (counted with IncludeErrors, or left out), marked on the
	// throughput chart.
	Flagged []flaggedRun
}

// flaggedRun is a run whose status is not ok, where the throughput chart
// marks it.
type flaggedRun struct {
	ID       int64
	Config   string
	Color    int
	X, Value float64
	Status   string
	Counted  bool
}

// latRow is the latency of one transaction type for one configuration at one
// x value: medians over the counted repetitions, in ms.
type latRow struct {
	Config                             string
	Color                              int
	X                                  float64
	N                                  int
	Avg, P50, P90, P95, P99, P999, Max float64
}

// opGroup is the latency rows of one transaction type.
type opGroup struct {
	Op   string
	Rows []latRow
}

// analysis is the computed content of a report, independent of its format.
type analysis struct {
	Groups   []*group
	Colors   map[string]int // configuration -> palette index
	Excluded []*runData     // database runs that do not count, with rd.Why
}

// analyse groups the runs by metric, configuration and x value and computes
// medians, bands, latencies and comparisons with the baseline.
func analyse(d *dataset, baseline string, resamples int, seed uint64) *analysis {
	a := &analysis{Colors: map[string]int{}}
	order := configOrder(d)
	for i, c := range order {
		a.Colors[c] = i
	}

	byKey := map[string]*group{}
	var groups []*group
	for _, rd := range d.Runs {
		if rd.Kind != kindDB {
			continue
		}
		if !rd.Counted {
			a.Excluded = append(a.Excluded, rd)
			continue
		}
		k := rd.Metric + "\x00" + rd.XName
		g := byKey[k]
		if g == nil {
			g = &group{Metric: rd.Metric, XName: rd.XName, Label: d.v.label(rd.Run.Workload, rd.Metric), Unit: d.v.unit(rd.Run.Workload, rd.Metric)}
			byKey[k] = g
			groups = append(groups, g)
		}
		var cl *configLine
		for _, c := range g.Configs {
			if c.Config == rd.Config {
				cl = c
			}
		}
		if cl == nil {
			cl = &configLine{Config: rd.Config, Color: a.Colors[rd.Config]}
			g.Configs = append(g.Configs, cl)
		}
		p := cl.at(rd.X)
		if p == nil {
			p = &point{X: rd.X}
			cl.Points = append(cl.Points, p)
		}
		p.Values = append(p.Values, rd.Value)
		p.RunIDs = append(p.RunIDs, rd.Run.ID)
		p95 := math.NaN()
		if l := rd.Sum.LatencyMs; l != nil {
			if v, ok := l["p95"]; ok {
				p95 = v
			}
		}
		p.P95 = append(p.P95, p95)
	}

	// Mark the runs whose status is not ok where they would be.
	for _, rd := range d.Runs {
		if rd.Kind != kindDB || !rd.statusBad() || !rd.HasX || math.IsNaN(rd.Value) || (rd.Link != nil && rd.Link.Warmup) {
			continue
		}
		if g := byKey[rd.Metric+"\x00"+rd.XName]; g != nil {
			g.Flagged = append(g.Flagged, flaggedRun{ID: rd.Run.ID, Config: rd.Config, Color: a.Colors[rd.Config],
				X: rd.X, Value: rd.Value, Status: rd.Run.Status, Counted: rd.Counted})
		}
	}

	for _, g := range groups {
		sort.SliceStable(g.Configs, func(i, j int) bool { return g.Configs[i].Color < g.Configs[j].Color })
		for _, c := range g.Configs {
			sort.Slice(c.Points, func(i, j int) bool { return c.Points[i].X < c.Points[j].X })
			for _, p := range c.Points {
				p.Median = Median(p.Values)
				p.Min, p.Max = MinMax(p.Values)
			}
		}
		g.Baseline = g.Configs[0].Config
		for _, c := range g.Configs {
			if c.Config == baseline {
				g.Baseline = baseline
			}
		}
		g.Compare = compareGroup(g, resamples, seed)
		g.Latency = latencyGroup(d, g)
	}
	a.Groups = groups
	return a
}

// configOrder lists the configuration labels: the plan's order first, then
// the others in the order their runs come.
func configOrder(d *dataset) []string {
	var out []string
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, c := range d.Plan.Configs {
		add(c.Label)
	}
	for _, rd := range d.Runs {
		if rd.Kind == kindDB {
			add(rd.Config)
		}
	}
	return out
}

// compareGroup compares every configuration with the group's baseline at
// every x value both have.
func compareGroup(g *group, resamples int, seed uint64) []cmpRow {
	var base *configLine
	for _, c := range g.Configs {
		if c.Config == g.Baseline {
			base = c
		}
	}
	var rows []cmpRow
	for _, c := range g.Configs {
		if c == base {
			continue
		}
		for _, p := range c.Points {
			bp := base.at(p.X)
			if bp == nil {
				continue
			}
			rows = append(rows, cmpRow{
				Config: c.Config, X: p.X, Base: bp, This: p,
				Throughput: BootstrapRatio(bp.Values, p.Values, resamples, 0.95, seed),
				P95:        BootstrapRatio(bp.P95, p.P95, resamples, 0.95, seed),
			})
		}
	}
	return rows
}

// latencyGroup computes, per transaction type, configuration and x value,
// the median over the counted repetitions of each latency statistic.
func latencyGroup(d *dataset, g *group) []opGroup {
	type key struct {
		op, config string
		x          float64
	}
	vals := map[key][]opLatency{}
	ops := map[string]bool{}
	inGroup := map[int64]bool{}
	for _, c := range g.Configs {
		for _, p := range c.Points {
			for _, id := range p.RunIDs {
				inGroup[id] = true
			}
		}
	}
	for _, rd := range d.Runs {
		if !inGroup[rd.Run.ID] {
			continue
		}
		for _, l := range rd.Ops {
			k := key{l.Op, rd.Config, rd.X}
			vals[k] = append(vals[k], l)
			ops[l.Op] = true
		}
	}
	opNames := make([]string, 0, len(ops))
	for op := range ops {
		opNames = append(opNames, op)
	}
	sort.Slice(opNames, func(i, j int) bool { return d.v.opLess(opNames[i], opNames[j]) })

	var out []opGroup
	for _, op := range opNames {
		og := opGroup{Op: op}
		for _, c := range g.Configs {
			for _, p := range c.Points {
				ls := vals[key{op, c.Config, p.X}]
				if len(ls) == 0 {
					continue
				}
				med := func(f func(opLatency) float64) float64 {
					xs := make([]float64, len(ls))
					for i, l := range ls {
						xs[i] = f(l)
					}
					return Median(xs)
				}
				og.Rows = append(og.Rows, latRow{
					Config: c.Config, Color: c.Color, X: p.X, N: len(ls),
					Avg:  med(func(l opLatency) float64 { return l.Avg }),
					P50:  med(func(l opLatency) float64 { return l.P50 }),
					P90:  med(func(l opLatency) float64 { return l.P90 }),
					P95:  med(func(l opLatency) float64 { return l.P95 }),
					P99:  med(func(l opLatency) float64 { return l.P99 }),
					P999: med(func(l opLatency) float64 { return l.P999 }),
					Max:  med(func(l opLatency) float64 { return l.Max }),
				})
			}
		}
		out = append(out, og)
	}
	return out
}

// verdict says in words what a ratio and its interval mean. higherIsBetter
// is true for throughput, false for latency.
func verdict(r RatioCI, higherIsBetter bool) string {
	switch {
	case math.IsNaN(r.Ratio):
		return "n/a"
	case !r.HasCI:
		return "no CI (needs 2+ repetitions each)"
	case r.WithinNoise():
		return "within noise"
	case (r.Lo > 1) == higherIsBetter:
		return "better"
	default:
		return "worse"
	}
}
