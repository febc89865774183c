package results

// A chart vocabulary says how a run's time series are drawn: the report's
// own charts (latency, errors, the host's CPU, disk, memory and network,
// the driver) and each database target's (its statistics, its processes),
// which a target's driver declares (target.Charter) so that the report
// knows no database.

// ChartSeries is one series of a chart: its name as the samplers store it
// and its label in the legend.
type ChartSeries struct{ Name, Label string }

// ChartDef describes one per-run time-series chart.
type ChartDef struct {
	Title  string
	YLabel string
	Scale  float64 // values are multiplied by this (e.g. bytes -> MB)
	// Stacked draws the series as stacked areas (parts of a whole).
	Stacked bool
	Series  []ChartSeries
	// Prefix selects every series whose name starts with it (wait
	// events); the legend shows the rest of the name. At most MaxLayers
	// are drawn, the largest by mean, the others summed as "other".
	Prefix    string
	MaxLayers int
	// OmitIfZero leaves the chart out when every value is zero.
	OmitIfZero bool
	// LogWhenWide switches the y axis to a log scale when the highest
	// value is more than 30 times the lowest positive one.
	LogWhenWide bool
	// Host is the chart's title when the run says whose machine its
	// series measure and from where (HostSeriesLabel).
	Host string
	// A target's chart: Product is the database whose runs it is drawn
	// for ("PostgreSQL", "MariaDB"); After is the title of the chart it
	// follows ("" or unknown: at the end). A target's chart whose title
	// is one of the report's adds its series to that chart instead.
	Product string
	After   string
	// Marks, on a target's entry that is not a chart of its own, names a
	// cumulative counter whose every step marks the throughput chart with
	// a dashed line (PostgreSQL's checkpoints).
	Marks string
}

// MarksFor is the counter that marks a run's throughput chart, from the
// target charts of product ("" when none).
func MarksFor(targets []ChartDef, product string) string {
	for _, t := range targets {
		if t.Product == product && t.Marks != "" {
			return t.Marks
		}
	}
	return ""
}

// ChartsFor are the charts of a run of product: the report's base charts
// with every target chart of that product merged in (its series added to
// the base chart of the same title, or the chart placed after After).
func ChartsFor(base []ChartDef, targets []ChartDef, product string) []ChartDef {
	out := make([]ChartDef, len(base))
	for i, b := range base {
		b.Series = append([]ChartSeries(nil), b.Series...)
		out[i] = b
	}
	for _, t := range targets {
		if t.Product != product || t.Marks != "" {
			continue
		}
		merged := false
		for i := range out {
			if out[i].Title == t.Title {
				out[i].Series = append(out[i].Series, t.Series...)
				merged = true
				break
			}
		}
		if merged {
			continue
		}
		at := len(out)
		for i := range out {
			if t.After != "" && out[i].Title == t.After {
				at = i + 1
			}
		}
		out = append(out[:at], append([]ChartDef{t}, out[at:]...)...)
	}
	return out
}
