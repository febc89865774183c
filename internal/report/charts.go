package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Charts are drawn with gonum/plot onto its SVG canvas and inlined in the
// HTML. Text is measured with the Liberation Sans metrics bundled with
// gonum/plot; the SVG names that family first and falls back to the
// metric-compatible Arial/Helvetica and then any sans-serif font, so the
// file needs no font of its own.

// palette is the Okabe-Ito colour-blind safe palette (yellow darkened for
// contrast on white), then a few more distinct colours.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x44, 0x44, 0x44, 0xff}, // dark grey
	{0xA8, 0x8F, 0x00, 0xff}, // dark yellow
	{0x88, 0x22, 0x55, 0xff}, // wine
	{0x11, 0x77, 0x33, 0xff}, // green
}

// dashes cycles when the palette runs out, so lines stay distinguishable.
var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}

func colorOf(i int) color.RGBA { return palette[i%len(palette)] }

func dashOf(i int) []vg.Length { return dashes[(i/len(palette))%len(dashes)] }

func withAlpha(c color.RGBA, a uint8) color.Color {
	// color.RGBA is alpha-premultiplied.
	return color.RGBA{uint8(uint16(c.R) * uint16(a) / 255), uint8(uint16(c.G) * uint16(a) / 255), uint8(uint16(c.B) * uint16(a) / 255), a}
}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// chart sizes (points; 1 pt = 1/72 in).
const (
	wideW   = 9 * vg.Inch
	wideH   = 4.2 * vg.Inch
	smallW  = 6 * vg.Inch
	smallH  = 3 * vg.Inch
	maxPts  = 300 // points per series in time-series charts
	legendF = 10  // legend font size
)

// sans selects Liberation Sans, gonum/plot's bundled sans-serif face (its
// default is the serif one).
const sans = "Sans"

// legendItem is one entry of the legend drawn under a chart.
type legendItem struct {
	name   string
	thumbs []plot.Thumbnailer
}

// newPlot returns a plot with the report's axis style: labelled axes,
// thousands-friendly tick labels, a light horizontal grid.
func newPlot(title, xlabel, ylabel string, fontSize float64) *plot.Plot {
	return newPlotGrid(title, xlabel, ylabel, fontSize, false)
}

// newPlotGrid is newPlot with the grid lines vertical (for horizontal bars)
// instead of horizontal.
func newPlotGrid(title, xlabel, ylabel string, fontSize float64, vertical bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Variant = sans
	p.Title.TextStyle.Font.Size = vg.Length(fontSize + 2)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Variant = sans
		a.Tick.Label.Font.Variant = sans
		a.Label.TextStyle.Font.Size = vg.Length(fontSize)
		a.Tick.Label.Font.Size = vg.Length(fontSize - 1)
		a.Tick.Marker = niceTicks{}
		a.LineStyle.Color = color.Gray{0x66}
		a.Tick.LineStyle.Color = color.Gray{0x66}
	}
	p.Y.Label.Padding = vg.Points(4)
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = nil, color.Gray{0xdd}
	g.Horizontal.Width = vg.Points(0.5)
	if vertical {
		g.Vertical, g.Horizontal = g.Horizontal, g.Vertical
	}
	p.Add(g)
	return p
}

// niceTicks places about six labelled ticks at round values (steps of 1, 2,
// 2.5 or 5 times a power of ten) and labels them with one scale for the whole
// axis (k, M, G) and as few decimals as tell them apart.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: trimFloat(strconv.FormatFloat(lo, 'f', 3, 64))}}
	}
	raw := (hi - lo) / 7 // at most 8 labelled ticks
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for v := first; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, plot.Tick{Value: v, Label: "x"})
	}
	var top float64
	for _, t := range ts {
		top = math.Max(top, math.Abs(t.Value))
	}
	div, suffix := 1.0, ""
	switch {
	case top >= 1e9:
		div, suffix = 1e9, "G"
	case top >= 1e6:
		div, suffix = 1e6, "M"
	case top >= 1e4:
		div, suffix = 1e3, "k"
	}
	dec := decimalsFor(ts, div)
	for i := range ts {
		v := ts[i].Value / div
		if v == 0 {
			ts[i].Label = "0"
			continue
		}
		ts[i].Label = trimFloat(strconv.FormatFloat(v, 'f', dec, 64)) + suffix
	}
	return ts
}

// decimalsFor picks the fewest decimals (up to 6) that show every labelled
// tick value exactly.
func decimalsFor(ts []plot.Tick, div float64) int {
	dec := 0
	for _, t := range ts {
		if t.Label == "" {
			continue
		}
		v := t.Value / div
		for d := dec; d <= 6; d++ {
			p := math.Pow(10, float64(d))
			if math.Abs(math.Round(v*p)/p-v) <= 1e-9*math.Max(1, math.Abs(v)) {
				dec = d
				break
			}
			dec = d
		}
	}
	return dec
}

func trimFloat(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// xTicks puts labelled ticks exactly at the x values (client counts).
func xTicks(xs []float64) plot.Ticker {
	if len(xs) == 0 || len(xs) > 14 {
		return niceTicks{}
	}
	ts := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ts[i] = plot.Tick{Value: x, Label: fmtX(x)}
	}
	return ts
}

// fromZero starts a time axis at the measurement start (or earlier, when
// there are samples from before it).
func fromZero(p *plot.Plot) {
	if p.X.Min > 0 {
		p.X.Min = 0
	}
}

// zeroBased makes the y axis start at zero (values are non-negative) and
// leaves some room above the highest value.
func zeroBased(p *plot.Plot) {
	if p.Y.Min > 0 || math.IsInf(p.Y.Min, 1) {
		p.Y.Min = 0
	}
	if math.IsInf(p.Y.Max, -1) || p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max += (p.Y.Max - p.Y.Min) * 0.05
}

var (
	svgPrologRE = regexp.MustCompile(`(?s)^.*?<svg `)
	svgSizeRE   = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)
)

// render draws p with the legend items laid out in columns under it and
// returns the SVG markup ready to inline.
func render(p *plot.Plot, items []legendItem, w, h vg.Length, label string) (template.HTML, error) {
	c := vgsvg.New(w, h)
	dc := draw.New(c)

	legH := vg.Length(0)
	var colW vg.Length
	var cols [][]legendItem
	var sty = plot.NewLegend().TextStyle
	if len(items) > 0 {
		sty.Font.Size = legendF
		sty.Font.Variant = sans
		var maxText vg.Length
		for _, it := range items {
			maxText = max(maxText, sty.Rectangle(it.name).Max.X)
		}
		thumb := vg.Points(22)
		colW = thumb + sty.Rectangle(" ").Max.X + maxText + vg.Points(18)
		ncol := max(1, int((w-vg.Points(16))/colW))
		ncol = min(ncol, len(items))
		nrow := (len(items) + ncol - 1) / ncol
		for i := 0; i < len(items); i += nrow {
			cols = append(cols, items[i:min(i+nrow, len(items))])
		}
		entryH := sty.Rectangle("Mg").Max.Y + vg.Points(4)
		legH = vg.Length(nrow)*entryH + vg.Points(12)
	}

	p.Draw(draw.Crop(dc, vg.Points(2), -vg.Points(6), legH, -vg.Points(4)))
	for ci, col := range cols {
		l := plot.NewLegend()
		l.TextStyle = sty
		l.Top, l.Left = true, true
		l.Padding = vg.Points(4)
		l.ThumbnailWidth = vg.Points(22)
		for _, it := range col {
			l.Add(it.name, it.thumbs...)
		}
		left := vg.Points(16) + vg.Length(ci)*colW
		l.Draw(draw.Crop(dc, left, -(w - left - colW), vg.Points(4), -(h - legH + vg.Points(6))))
	}

	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("report: render chart %q: %w", label, err)
	}
	s := buf.String()
	s = svgPrologRE.ReplaceAllString(s, "<svg ")
	s = svgSizeRE.ReplaceAllString(s, `<svg class="chart" role="img" aria-label="`+template.HTMLEscapeString(label)+`"`)
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")
	return template.HTML(s), nil
}

// lineThumb and friends build styled plotters.
func styledLine(xys plotter.XYs, ci int, width float64) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = colorOf(ci)
	l.Width = vg.Points(width)
	l.Dashes = dashOf(ci)
	return l, nil
}

func styledPoints(xys plotter.XYs, ci int) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Color = colorOf(ci)
	s.GlyphStyle.Radius = vg.Points(3)
	s.GlyphStyle.Shape = glyphs[ci%len(glyphs)]
	return s, nil
}

// flagGlyph draws a cross (ring with ring set) with a stroke wide enough to
// read at a glance; gonum/plot's own are hairlines.
type flagGlyph struct{ ring bool }

func (g flagGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.8)})
	var p vg.Path
	if g.ring {
		p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
		p.Arc(pt, sty.Radius, 0, 2*math.Pi)
		p.Close()
		c.Stroke(p)
		return
	}
	r := sty.Radius * 0.75
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

// flagScatter marks runs whose status is not ok: a cross for a run left
// out of the medians, a ring for one counted (errors that leave its figures
// valid, or IncludeErrors).
func flagScatter(xys plotter.XYs, ci int, counted bool) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Color = colorOf(ci)
	s.GlyphStyle.Radius = vg.Points(5)
	s.GlyphStyle.Shape = flagGlyph{ring: counted}
	return s, nil
}

// flagLegend is the legend entry of flagScatter's marks, in a neutral colour.
func flagLegend(counted bool) (legendItem, error) {
	s, err := flagScatter(plotter.XYs{{}}, 6, counted)
	if err != nil {
		return legendItem{}, err
	}
	if counted {
		return legendItem{"run whose status is not ok, counted", []plot.Thumbnailer{s}}, nil
	}
	return legendItem{"run whose status is not ok, left out", []plot.Thumbnailer{s}}, nil
}

// flagLegends returns the legend entries for the kinds of flagged runs
// drawn.
func flagLegends(drawn map[bool]bool) ([]legendItem, error) {
	var items []legendItem
	for _, counted := range []bool{false, true} {
		if !drawn[counted] {
			continue
		}
		it, err := flagLegend(counted)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// throughputChart draws one line per configuration through the medians over
// the repetitions, with a shaded band from the minimum to the maximum, and
// marks the runs whose status is not ok.
func throughputChart(g *group) (template.HTML, error) {
	if xs := groupXs(g); len(xs) == 1 {
		var rows []hbar
		for _, c := range g.Configs {
			for _, pt := range c.Points {
				row := hbar{Label: c.Config, Color: c.Color, Values: []float64{pt.Median},
					Lo: []float64{pt.Min}, Hi: []float64{pt.Max}}
				for _, f := range g.Flagged {
					if f.Config == c.Config && f.X == pt.X {
						row.Marks = append(row.Marks, hmark{f.Value, f.Counted})
					}
				}
				rows = append(rows, row)
			}
		}
		return hbarChart(fmt.Sprintf("%s at %s %s (bar: median, whisker: min-max over repetitions)", g.Label, g.XName, fmtX(xs[0])),
			g.Unit, []string{g.Label}, rows, false, math.NaN(), "")
	}
	ylabel := g.Unit
	p := newPlot(g.Label+" vs "+g.XName+" (line: median, band: min-max over repetitions)", g.XName, ylabel, 11)
	var items []legendItem
	var xs []float64
	seen := map[float64]bool{}
	for _, c := range g.Configs {
		med := make(plotter.XYs, 0, len(c.Points))
		var upper, lower plotter.XYs
		var bars plotter.XYs
		var errsY plotter.YErrors
		for _, pt := range c.Points {
			if math.IsNaN(pt.Median) {
				continue
			}
			med = append(med, plotter.XY{X: pt.X, Y: pt.Median})
			upper = append(upper, plotter.XY{X: pt.X, Y: pt.Max})
			lower = append(lower, plotter.XY{X: pt.X, Y: pt.Min})
			bars = append(bars, plotter.XY{X: pt.X, Y: pt.Median})
			errsY = append(errsY, struct{ Low, High float64 }{pt.Median - pt.Min, pt.Max - pt.Median})
			if !seen[pt.X] {
				seen[pt.X] = true
				xs = append(xs, pt.X)
			}
		}
		if len(med) == 0 {
			continue
		}
		var thumbs []plot.Thumbnailer
		if len(med) >= 2 {
			poly := append(plotter.XYs{}, upper...)
			for i := len(lower) - 1; i >= 0; i-- {
				poly = append(poly, lower[i])
			}
			band, err := plotter.NewPolygon(poly)
			if err != nil {
				return "", err
			}
			band.Color = withAlpha(colorOf(c.Color), 0x38)
			band.LineStyle.Width = 0
			p.Add(band)
			line, err := styledLine(med, c.Color, 2)
			if err != nil {
				return "", err
			}
			p.Add(line)
			thumbs = append(thumbs, band, line)
		} else {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{bars, errsY})
			if err != nil {
				return "", err
			}
			eb.Color = colorOf(c.Color)
			eb.Width = vg.Points(1.5)
			p.Add(eb)
		}
		pts, err := styledPoints(med, c.Color)
		if err != nil {
			return "", err
		}
		p.Add(pts)
		thumbs = append(thumbs, pts)
		items = append(items, legendItem{c.Config, thumbs})
	}
	drawn := map[bool]bool{}
	for _, f := range g.Flagged {
		s, err := flagScatter(plotter.XYs{{X: f.X, Y: f.Value}}, f.Color, f.Counted)
		if err != nil {
			return "", err
		}
		p.Add(s)
		drawn[f.Counted] = true
		if !seen[f.X] {
			seen[f.X] = true
			xs = append(xs, f.X)
		}
	}
	flags, err := flagLegends(drawn)
	if err != nil {
		return "", err
	}
	items = append(items, flags...)
	sort.Float64s(xs)
	p.X.Tick.Marker = xTicks(xs)
	padX(p, xs)
	zeroBased(p)
	return render(p, items, wideW, wideH, "throughput chart")
}

// groupXs returns the distinct x values of a group, ascending.
func groupXs(g *group) []float64 {
	seen := map[float64]bool{}
	var xs []float64
	for _, c := range g.Configs {
		for _, p := range c.Points {
			if !seen[p.X] {
				seen[p.X] = true
				xs = append(xs, p.X)
			}
		}
	}
	sort.Float64s(xs)
	return xs
}

// padX leaves room left and right of the first and last x value so glyphs
// and bands are not cut by the axes.
func padX(p *plot.Plot, xs []float64) {
	if len(xs) == 0 {
		return
	}
	lo, hi := xs[0], xs[len(xs)-1]
	span := hi - lo
	if span == 0 {
		span = math.Max(1, math.Abs(lo))
	}
	p.X.Min = lo - span*0.04
	p.X.Max = hi + span*0.04
	if lo >= 0 && p.X.Min < 0 {
		p.X.Min = math.Min(0, lo-span*0.04)
	}
}

// latencyChart draws the p95 (solid) and p99 (dashed) latency of one
// transaction type against the x axis, one colour per configuration.
func latencyChart(g *group, og opGroup) (template.HTML, error) {
	if xs := groupXs(g); len(xs) == 1 {
		var rows []hbar
		nan := []float64{math.NaN(), math.NaN(), math.NaN()}
		for _, r := range og.Rows {
			rows = append(rows, hbar{Label: r.Config, Color: r.Color, Values: []float64{r.P50, r.P95, r.P99}, Lo: nan, Hi: nan})
		}
		return hbarChart(fmt.Sprintf("Latency of %s at %s %s (median over repetitions)", og.Op, g.XName, fmtX(xs[0])),
			"latency (ms)", []string{"p50", "p95", "p99"}, rows, false, math.NaN(), "")
	}
	p := newPlot("Latency of "+og.Op+" vs "+g.XName+" (median over repetitions)", g.XName, "latency (ms)", 10)
	var items []legendItem
	var xs []float64
	seen := map[float64]bool{}
	byConfig := map[string][]latRow{}
	var order []string
	for _, r := range og.Rows {
		if _, ok := byConfig[r.Config]; !ok {
			order = append(order, r.Config)
		}
		byConfig[r.Config] = append(byConfig[r.Config], r)
		if !seen[r.X] {
			seen[r.X] = true
			xs = append(xs, r.X)
		}
	}
	for _, cfg := range order {
		rows := byConfig[cfg]
		ci := rows[0].Color
		for _, pc := range []struct {
			name  string
			get   func(latRow) float64
			dash  []vg.Length
			width float64
		}{
			{"p95", func(r latRow) float64 { return r.P95 }, nil, 2},
			{"p99", func(r latRow) float64 { return r.P99 }, []vg.Length{vg.Points(5), vg.Points(3)}, 1.3},
		} {
			var xys plotter.XYs
			for _, r := range rows {
				if v := pc.get(r); !math.IsNaN(v) {
					xys = append(xys, plotter.XY{X: r.X, Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, err := styledLine(xys, ci, pc.width)
			if err != nil {
				return "", err
			}
			line.Dashes = pc.dash
			pts, err := styledPoints(xys, ci)
			if err != nil {
				return "", err
			}
			pts.GlyphStyle.Radius = vg.Points(2.5)
			p.Add(line, pts)
			items = append(items, legendItem{cfg + " " + pc.name, []plot.Thumbnailer{line, pts}})
		}
	}
	if len(items) == 0 {
		return "", nil
	}
	sort.Float64s(xs)
	p.X.Tick.Marker = xTicks(xs)
	padX(p, xs)
	zeroBased(p)
	return render(p, items, wideW, wideH*0.9, "latency chart "+og.Op)
}

// ratioChart draws each configuration's throughput ratio to the baseline
// with its 95% bootstrap interval as error bars, and the line at 1.0.
func ratioChart(g *group) (template.HTML, error) {
	if xs := groupXs(g); len(xs) == 1 {
		var rows []hbar
		for _, r := range g.Compare {
			lo, hi := math.NaN(), math.NaN()
			if r.Throughput.HasCI {
				lo, hi = r.Throughput.Lo, r.Throughput.Hi
			}
			ci := 0
			for _, c := range g.Configs {
				if c.Config == r.Config {
					ci = c.Color
				}
			}
			rows = append(rows, hbar{Label: r.Config, Color: ci, Values: []float64{r.Throughput.Ratio}, Lo: []float64{lo}, Hi: []float64{hi}})
		}
		return hbarChart(fmt.Sprintf("%s ratio to the baseline at %s %s (95%% bootstrap CI)", g.Label, g.XName, fmtX(xs[0])),
			"ratio to "+shorten(g.Baseline, 40), []string{"ratio"}, rows, true, 1, "baseline (1.0): "+shorten(g.Baseline, 60))
	}
	p := newPlot(g.Label+" ratio to the baseline (95% bootstrap CI)", g.XName, "ratio to "+shorten(g.Baseline, 40), 11)
	byConfig := map[string][]cmpRow{}
	var order []string
	var xs []float64
	seen := map[float64]bool{}
	for _, r := range g.Compare {
		if math.IsNaN(r.Throughput.Ratio) {
			continue
		}
		if _, ok := byConfig[r.Config]; !ok {
			order = append(order, r.Config)
		}
		byConfig[r.Config] = append(byConfig[r.Config], r)
		if !seen[r.X] {
			seen[r.X] = true
			xs = append(xs, r.X)
		}
	}
	if len(order) == 0 {
		return "", nil
	}
	sort.Float64s(xs)
	// Offset the configurations a little along x so their bars do not overlap.
	step := 0.0
	if len(xs) > 1 {
		step = (xs[len(xs)-1] - xs[0]) / float64(len(xs)-1) * 0.06
	}
	var items []legendItem
	for k, cfg := range order {
		rows := byConfig[cfg]
		ci := 0
		for _, c := range g.Configs {
			if c.Config == cfg {
				ci = c.Color
			}
		}
		off := (float64(k) - float64(len(order)-1)/2) * step
		var xys, cixys plotter.XYs
		var errsY plotter.YErrors
		for _, r := range rows {
			xys = append(xys, plotter.XY{X: r.X + off, Y: r.Throughput.Ratio})
			if r.Throughput.HasCI {
				cixys = append(cixys, plotter.XY{X: r.X + off, Y: r.Throughput.Ratio})
				errsY = append(errsY, struct{ Low, High float64 }{r.Throughput.Ratio - r.Throughput.Lo, r.Throughput.Hi - r.Throughput.Ratio})
			}
		}
		line, err := styledLine(xys, ci, 1.5)
		if err != nil {
			return "", err
		}
		pts, err := styledPoints(xys, ci)
		if err != nil {
			return "", err
		}
		p.Add(line)
		thumbs := []plot.Thumbnailer{line, pts}
		if len(cixys) > 0 {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{cixys, errsY})
			if err != nil {
				return "", err
			}
			eb.Color = colorOf(ci)
			eb.Width = vg.Points(1.2)
			p.Add(eb)
		}
		p.Add(pts)
		items = append(items, legendItem{cfg, thumbs})
	}
	padX(p, xs)
	p.X.Min -= step * float64(len(order))
	p.X.Max += step * float64(len(order))
	one, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 1}, {X: p.X.Max, Y: 1}})
	if err != nil {
		return "", err
	}
	one.Color = color.Black
	one.Width = vg.Points(1)
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	items = append(items, legendItem{"baseline (1.0): " + shorten(g.Baseline, 60), []plot.Thumbnailer{one}})
	p.X.Tick.Marker = xTicks(xs)
	lo, hi := p.Y.Min, p.Y.Max
	pad := math.Max((hi-lo)*0.08, 0.02)
	p.Y.Min, p.Y.Max = math.Min(lo, 1)-pad, math.Max(hi, 1)+pad
	return render(p, items, wideW, wideH*0.9, "ratio chart")
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
