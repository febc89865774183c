package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tunebench/tunebench/internal/results"
)

// seriesDef is one stored series drawn in a chart, with its legend name.
type (
	seriesDef   = results.ChartSeries
	runChartDef = results.ChartDef
)

const (
	mb  = 1e-6
	gib = 1.0 / (1 << 30)
)

// baseCharts are the report's own per-run charts after the throughput
// chart, in the order they appear; the run's target adds its own
// (results.ChartsFor, target.Charter). Series names are the samplers'
// (docs/report.md).
var baseCharts = []runChartDef{
	{Title: "Latency per second", YLabel: "latency (ms)", Scale: 1, LogWhenWide: true, Series: []seriesDef{
		{Name: "latency_p50_ms", Label: "p50"}, {Name: "latency_p95_ms", Label: "p95"}, {Name: "latency_p99_ms", Label: "p99"}, {Name: "latency_max_ms", Label: "max"}}},
	{Title: "Errors per second", YLabel: "errors per second", Scale: 1, OmitIfZero: true, Series: []seriesDef{
		{Name: "errors", Label: "errors per second"}}},
	{Title: "CPU (whole machine)", Host: "CPU", YLabel: "% of all CPUs", Scale: 1, Stacked: true, Series: []seriesDef{
		{Name: "sys.cpu_user_pct", Label: "user"}, {Name: "sys.cpu_system_pct", Label: "system"}, {Name: "sys.cpu_iowait_pct", Label: "iowait"}, {Name: "sys.cpu_steal_pct", Label: "steal"}}},
	{Title: "CPU (database server host)", Host: "CPU", YLabel: "% of all CPUs", Scale: 1, Stacked: true, OmitIfZero: true, Series: []seriesDef{
		{Name: "server.sys.cpu_user_pct", Label: "user"}, {Name: "server.sys.cpu_system_pct", Label: "system"}, {Name: "server.sys.cpu_iowait_pct", Label: "iowait"}, {Name: "server.sys.cpu_steal_pct", Label: "steal"}}},
	{Title: "Container CPU", Host: "Container CPU", YLabel: "percent", Scale: 1, OmitIfZero: true, Series: []seriesDef{
		{Name: "container.cpu_pct", Label: "% of one CPU"}, {Name: "container.cpu_throttled_pct", Label: "% of periods throttled"}}},
	{Title: "Pressure stall", Host: "Pressure stall", YLabel: "% of time some task waited", Scale: 1, OmitIfZero: true, Series: []seriesDef{
		{Name: "sys.pressure_cpu_pct", Label: "CPU"}, {Name: "sys.pressure_io_pct", Label: "I/O"}, {Name: "sys.pressure_mem_pct", Label: "memory"}}},
	{Title: "Pressure stall (database server host)", Host: "Pressure stall", YLabel: "% of time some task waited", Scale: 1, OmitIfZero: true, Series: []seriesDef{
		{Name: "server.sys.pressure_cpu_pct", Label: "CPU"}, {Name: "server.sys.pressure_io_pct", Label: "I/O"}, {Name: "server.sys.pressure_mem_pct", Label: "memory"}}},
	{Title: "Process CPU", YLabel: "% of one CPU", Scale: 1, Series: []seriesDef{
		{Name: "driver.cpu_pct", Label: "tunebench driver"}}},
	{Title: "Disk throughput (data directory device)", Host: "Disk throughput, data directory device", YLabel: "MB/s", Scale: mb, Series: []seriesDef{
		{Name: "disk.read_bytes_s", Label: "device read"}, {Name: "disk.write_bytes_s", Label: "device write"}}},
	{Title: "Disk IOPS", Host: "Disk IOPS", YLabel: "I/O per second", Scale: 1, Series: []seriesDef{
		{Name: "disk.read_iops", Label: "read"}, {Name: "disk.write_iops", Label: "write"}}},
	{Title: "Disk await", Host: "Disk await", YLabel: "ms", Scale: 1, Series: []seriesDef{
		{Name: "disk.await_ms", Label: "all"}, {Name: "disk.read_await_ms", Label: "read"}, {Name: "disk.write_await_ms", Label: "write"}}},
	{Title: "Disk utilisation", Host: "Disk utilisation", YLabel: "% of time busy", Scale: 1, Series: []seriesDef{{Name: "disk.util_pct", Label: "busy"}}},
	{Title: "Memory", Host: "Memory", YLabel: "GiB", Scale: gib, Series: []seriesDef{
		{Name: "sys.mem_used_bytes", Label: "used"}, {Name: "sys.page_cache_bytes", Label: "page cache"}}},
	{Title: "Memory (database server host)", Host: "Memory", YLabel: "GiB", Scale: gib, OmitIfZero: true, Series: []seriesDef{
		{Name: "server.sys.mem_used_bytes", Label: "used"}, {Name: "server.sys.page_cache_bytes", Label: "page cache"}}},
	{Title: "Container memory", Host: "Container memory", YLabel: "GiB", Scale: gib, OmitIfZero: true, Series: []seriesDef{
		{Name: "container.mem_working_set_bytes", Label: "working set"}}},
	{Title: "Network", Host: "Network", YLabel: "MB/s", Scale: mb, Series: []seriesDef{
		{Name: "net.rx_bytes_s", Label: "received"}, {Name: "net.tx_bytes_s", Label: "sent"}, {Name: "net.lo_bytes_s", Label: "loopback"}}},
	{Title: "Network (database server host)", Host: "Network", YLabel: "MB/s", Scale: mb, OmitIfZero: true, Series: []seriesDef{
		{Name: "server.net.rx_bytes_s", Label: "received"}, {Name: "server.net.tx_bytes_s", Label: "sent"}, {Name: "server.net.lo_bytes_s", Label: "loopback"}}},
	{Title: "Container I/O and network", Host: "Container I/O and network", YLabel: "MB/s", Scale: mb, OmitIfZero: true, Series: []seriesDef{
		{Name: "container.read_bytes_s", Label: "read"}, {Name: "container.write_bytes_s", Label: "written"}, {Name: "container.net_rx_bytes_s", Label: "received"}, {Name: "container.net_tx_bytes_s", Label: "sent"}}},
	{Title: "Driver GC pauses", YLabel: "ms per second", Scale: 1, Series: []seriesDef{{Name: "driver.gc_pause_ms", Label: "GC pause"}}},
}

// namedChart is one rendered chart.
type namedChart struct {
	Title string
	SVG   template.HTML
}

// runCharts is the time-series section of one run.
type runCharts struct {
	Run     *runData
	Ref     string // the run in one line
	Status  string // its status when not ok, with the reason
	Outages []string
	Charts  []namedChart
	Missing []string // charts left out for lack of data
	// NotMeasured says what the run could not measure (a remote server's
	// host), as the summary records it.
	NotMeasured []string
	// Hosts say where each machine's series came from (and what a source
	// left missing).
	Hosts []string
	// OpenLoop is an open-loop run's schedule lag and, next to it, the
	// driver's own dispatch delay.
	OpenLoop string
}

// seriesMap groups a run's points by series name, in saved order.
func seriesMap(rd *runData) map[string][]XY {
	m := map[string][]XY{}
	for _, p := range rd.Run.Series {
		m[p.Series] = append(m[p.Series], XY{p.T, p.V})
	}
	return m
}

// checkpointTimes returns the times at which the cumulative checkpoint count
// went up.
func checkpointTimes(pts []XY) []float64 {
	var out []float64
	prev := math.NaN()
	for _, p := range pts {
		if math.IsNaN(p.Y) {
			continue
		}
		if !math.IsNaN(prev) && p.Y > prev {
			out = append(out, p.X)
		}
		prev = p.Y
	}
	return out
}

// buildRunCharts renders the time-series charts of one run.
func buildRunCharts(rd *runData, targetCharts []runChartDef) (runCharts, error) {
	rc := runCharts{Run: rd, Ref: rd.ref(), Outages: outageLines(rd, 8)}
	if rd.statusBad() {
		rc.Status = "status " + rd.statusText()
		if !rd.Counted {
			rc.Status += "; not counted"
		}
	}
	for k, why := range rd.Sum.NotMeasured {
		rc.NotMeasured = append(rc.NotMeasured, strings.ReplaceAll(k, "_", " ")+": "+why)
	}
	slices.Sort(rc.NotMeasured)
	for _, h := range rd.Sum.Hosts {
		who := map[string]string{results.HostDriver: "The driver's machine", results.HostServer: "The database server host",
			results.HostContainer: "The server's container"}[h.Role]
		if h.Role == results.HostDriver && slices.ContainsFunc(rd.Sum.Hosts, func(x results.Host) bool { return x.Role == results.HostServer && x.SameMachine }) {
			who = "The machine of the driver and the server"
		}
		line := fmt.Sprintf("%s: %s (series %s).", who, h.Source, strings.Join(h.Series, "*, ")+"*")
		if h.MissingPct >= 1 {
			line += fmt.Sprintf(" No sample for %.0f%% of the measured window", h.MissingPct)
			if h.Error != "" {
				line += ": " + h.Error
			}
			line += "."
		}
		rc.Hosts = append(rc.Hosts, line)
	}
	if ol := rd.Sum.OpenLoop; ol != nil {
		rc.OpenLoop = fmt.Sprintf("Open loop at %.0f tps (achieved %.1f): schedule lag p50 %.3f ms, p99 %.3f ms; of it the driver's own dispatch delay p50 %.3f ms, p99 %.3f ms (the rest is queueing behind busy workers).",
			ol.TargetTPS, ol.AchievedTPS, ol.Lag["p50"], ol.Lag["p99"], ol.Dispatch["p50"], ol.Dispatch["p99"])
		if ol.SlackUs > 0 {
			rc.OpenLoop += fmt.Sprintf(" Timer slack %s: the kernel could wake the driver that much after an intended start.", results.SlackText(ol.SlackUs))
		}
	}
	sm := seriesMap(rd)
	outs := rd.Sum.Outages

	// The run's own metric when it stored a series of it (tpcc: nopm),
	// else the executor's tps.
	name, label, unit := "tps", "tps", "transactions per second"
	if rd.Metric != "tps" && len(sm[rd.Metric]) > 0 {
		name, label, unit = rd.Metric, rd.v.label(rd.Run.Workload, rd.Metric), rd.v.unit(rd.Run.Workload, rd.Metric)
	}
	title := "Throughput per second"
	var marks []float64
	if m := results.MarksFor(targetCharts, productOf(rd)); m != "" {
		marks = checkpointTimes(sm[m])
	}
	if svg, err := throughputSeriesChart(title, sm[name], label, unit, marks, outs); err != nil {
		return rc, err
	} else if svg != "" {
		rc.Charts = append(rc.Charts, namedChart{title, svg})
	} else {
		rc.Missing = append(rc.Missing, title)
	}

	for _, def := range results.ChartsFor(baseCharts, targetCharts, productOf(rd)) {
		if def.Host != "" && len(def.Series) > 0 {
			if l := results.HostSeriesLabel(&results.Summary{Hosts: rd.Sum.Hosts}, def.Series[0].Name); l != "" {
				def.Title = def.Host + " (" + l + ")"
			}
		}
		svg, err := seriesChart(def, sm, outs)
		if err != nil {
			return rc, err
		}
		if svg == "" {
			if !def.OmitIfZero {
				rc.Missing = append(rc.Missing, def.Title)
			}
			continue
		}
		rc.Charts = append(rc.Charts, namedChart{def.Title, svg})
	}
	return rc, nil
}

// throughputSeriesChart draws throughput per second with a dashed vertical
// line at every checkpoint and the outage windows shaded.
func throughputSeriesChart(title string, pts []XY, label, unit string, checkpoints []float64, outs []results.Outage) (template.HTML, error) {
	pts = Downsample(pts, maxPts)
	if len(pts) == 0 {
		return "", nil
	}
	p := newPlot(title, "seconds since measurement start", unit, 9)
	band, strip := newOutageBands(outs)
	if band != nil {
		p.Add(band)
	}
	line, err := styledLine(toXYs(pts, 1), 0, 1.3)
	if err != nil {
		return "", err
	}
	p.Add(line)
	items := []legendItem{{label, []plot.Thumbnailer{line}}}
	zeroBased(p)
	fromZero(p)
	top := p.Y.Max
	if len(checkpoints) > 0 {
		var first *plotter.Line
		for _, t := range checkpoints {
			l, err := plotter.NewLine(plotter.XYs{{X: t, Y: 0}, {X: t, Y: top}})
			if err != nil {
				return "", err
			}
			l.Color = colorOf(3)
			l.Width = vg.Points(1)
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			p.Add(l)
			if first == nil {
				first = l
			}
		}
		items = append(items, legendItem{"checkpoint", []plot.Thumbnailer{first}})
	}
	if strip != nil {
		p.Add(strip)
		items = append(items, outageLegend(band))
	}
	return render(p, items, smallW, smallH, title)
}

func toXYs(pts []XY, scale float64) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i] = plotter.XY{X: p.X, Y: p.Y * scale}
	}
	return out
}

// seriesChart draws one chart definition with the run's outage windows; ""
// when none of its series has data (or, with OmitIfZero, when all its
// values are zero).
func seriesChart(def runChartDef, sm map[string][]XY, outs []results.Outage) (template.HTML, error) {
	defs := def.Series
	if def.Prefix != "" {
		defs = prefixLayers(sm, def.Prefix, def.MaxLayers)
	}
	type layer struct {
		label string
		pts   []XY
	}
	var layers []layer
	nonzero := false
	for _, sd := range defs {
		pts := sm[sd.Name]
		if sd.Name == "" { // the "other" layer of a prefix chart
			pts = sumOthers(sm, def.Prefix, defs)
		}
		var keep []XY
		for _, p := range pts {
			if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
				keep = append(keep, p)
				if p.Y != 0 {
					nonzero = true
				}
			}
		}
		if len(keep) > 0 {
			layers = append(layers, layer{sd.Label, keep})
		}
	}
	if len(layers) == 0 || (def.OmitIfZero && !nonzero) {
		return "", nil
	}
	p := newPlot(def.Title, "seconds since measurement start", def.YLabel, 9)
	band, strip := newOutageBands(outs)
	if band != nil {
		p.Add(band)
	}
	var items []legendItem
	done := func() (template.HTML, error) {
		if strip != nil {
			p.Add(strip)
			items = append(items, outageLegend(band))
		}
		return render(p, items, smallW, smallH, def.Title)
	}
	if def.Stacked {
		// Align the layers on the union of their times, then average down to
		// maxPts and stack.
		tset := map[float64]bool{}
		for _, l := range layers {
			for _, pt := range l.pts {
				tset[pt.X] = true
			}
		}
		ts := make([]float64, 0, len(tset))
		for t := range tset {
			ts = append(ts, t)
		}
		sort.Float64s(ts)
		cum := make([]XY, len(ts))
		for i, t := range ts {
			cum[i] = XY{t, 0}
		}
		cumDown := DownsampleMean(cum, maxPts)
		for i, l := range layers {
			vals := map[float64]float64{}
			for _, pt := range l.pts {
				vals[pt.X] = pt.Y * def.Scale
			}
			// A layer without a sample at some time (series reduced
			// separately, or a late sampler) carries its last value.
			full := make([]XY, len(ts))
			last := 0.0
			for j, t := range ts {
				if v, ok := vals[t]; ok {
					last = v
				}
				full[j] = XY{t, last}
			}
			down := DownsampleMean(full, maxPts)
			poly := make(plotter.XYs, 0, 2*len(down))
			for j, pt := range down {
				poly = append(poly, plotter.XY{X: pt.X, Y: cumDown[j].Y + pt.Y})
			}
			for j := len(down) - 1; j >= 0; j-- {
				poly = append(poly, plotter.XY{X: down[j].X, Y: cumDown[j].Y})
			}
			for j, pt := range down {
				cumDown[j].Y += pt.Y
			}
			pg, err := plotter.NewPolygon(poly)
			if err != nil {
				return "", err
			}
			pg.Color = withAlpha(colorOf(i), 0xb0)
			pg.LineStyle.Width = vg.Points(0.5)
			pg.LineStyle.Color = colorOf(i)
			p.Add(pg)
			items = append(items, legendItem{l.label, []plot.Thumbnailer{pg}})
		}
	} else {
		logY := false
		if def.LogWhenWide {
			lo, hi := math.Inf(1), 0.0
			for _, l := range layers {
				for _, pt := range l.pts {
					if v := pt.Y * def.Scale; v > 0 {
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
				}
			}
			logY = hi > 30*lo
		}
		for i, l := range layers {
			pts := l.pts
			if logY { // a log axis cannot show zero: those seconds are gaps
				pts = make([]XY, 0, len(l.pts))
				for _, pt := range l.pts {
					if pt.Y*def.Scale > 0 {
						pts = append(pts, pt)
					}
				}
				if len(pts) == 0 {
					continue
				}
			}
			line, err := styledLine(toXYs(Downsample(pts, maxPts), def.Scale), i, 1.2)
			if err != nil {
				return "", err
			}
			p.Add(line)
			items = append(items, legendItem{l.label, []plot.Thumbnailer{line}})
		}
		if len(items) == 0 {
			return "", nil
		}
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Y.Label.Text = def.YLabel + ", log scale"
			fromZero(p)
			return done()
		}
	}
	zeroBased(p)
	fromZero(p)
	return done()
}

// prefixLayers picks the series starting with prefix, largest mean first;
// beyond maxLayers-1 of them the rest become one "other" layer (name "").
func prefixLayers(sm map[string][]XY, prefix string, maxLayers int) []seriesDef {
	type cand struct {
		name string
		mean float64
	}
	var cs []cand
	for name, pts := range sm {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		var sum float64
		var n int
		for _, p := range pts {
			if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
				sum += p.Y
				n++
			}
		}
		if n > 0 && sum > 0 {
			cs = append(cs, cand{name, sum / float64(n)})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].mean != cs[j].mean {
			return cs[i].mean > cs[j].mean
		}
		return cs[i].name < cs[j].name
	})
	var out []seriesDef
	for i, c := range cs {
		if maxLayers > 0 && len(cs) > maxLayers && i == maxLayers-1 {
			out = append(out, seriesDef{Name: "", Label: "other"})
			break
		}
		out = append(out, seriesDef{Name: c.name, Label: strings.TrimPrefix(c.name, prefix)})
	}
	return out
}

// sumOthers adds up, per time, the prefix series not named in defs.
func sumOthers(sm map[string][]XY, prefix string, defs []seriesDef) []XY {
	named := map[string]bool{}
	for _, d := range defs {
		named[d.Name] = true
	}
	sum := map[float64]float64{}
	for name, pts := range sm {
		if !strings.HasPrefix(name, prefix) || named[name] {
			continue
		}
		for _, p := range pts {
			if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
				sum[p.X] += p.Y
			}
		}
	}
	out := make([]XY, 0, len(sum))
	for t, v := range sum {
		out = append(out, XY{t, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

// productOf is the database a run measured, as its environment says
// (PostgreSQL for runs that recorded none).
func productOf(rd *runData) string {
	if rd.Env != nil && rd.Env.Postgres == nil && rd.Env.Database != nil {
		return rd.Env.Database.Product
	}
	return "PostgreSQL"
}
