package report

import (
	"html/template"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// When a group has a single x value (runs at one client count), lines over
// the x axis say nothing: these charts put the configurations on the
// vertical axis instead, as horizontal bars or, for ratios, as points with
// their interval (a forest plot).

// hbar is one configuration's row.
type hbar struct {
	Label  string
	Color  int
	Values []float64 // one per column
	Lo, Hi []float64 // whisker ends per column; NaN for none
	// Marks are single runs drawn on the row (first column's scale) with
	// flagScatter: runs whose status is not ok.
	Marks []hmark
}

// hmark is one run marked on a row.
type hmark struct {
	Value   float64
	Counted bool
}

// hbarChart draws one row per configuration (first at the top). With one
// column the bars take the configuration's colour; with several columns
// (e.g. p50, p95, p99) the bars are grouped and coloured by column. With
// points set, a glyph marks each value instead of a bar (for ratios, where a
// bar from zero would mislead). ref, when not NaN, draws a dashed reference
// line (1.0 for ratios).
func hbarChart(title, vlabel string, columns []string, rows []hbar, points bool, ref float64, refLabel string) (template.HTML, error) {
	return hbarChartScaled(title, vlabel, columns, rows, points, false, ref, refLabel)
}

// hbarChartScaled is hbarChart with a choice of a logarithmic value axis
// (for values spanning orders of magnitude, like query times); with it the
// values are drawn as points, since a bar has no zero to start from, and
// values that are not positive are left out.
func hbarChartScaled(title, vlabel string, columns []string, rows []hbar, points, logX bool, ref float64, refLabel string) (template.HTML, error) {
	if logX {
		points = true
		for _, r := range rows {
			for i, v := range r.Values {
				if v <= 0 {
					r.Values[i] = math.NaN()
				}
			}
		}
	}
	n := len(rows)
	if n == 0 {
		return "", nil
	}
	p := newPlotGrid(title, vlabel, "", 11, true)
	labels := make([]string, n)
	for i, r := range rows {
		labels[n-1-i] = shorten(r.Label, 48)
	}
	rowH := vg.Points(34)
	if len(columns) > 1 {
		rowH = vg.Points(16 * float64(len(columns)+1))
	}
	barW := rowH * 0.7 / vg.Length(len(columns))
	var items []legendItem
	for c, col := range columns {
		var legendThumb plot.Thumbnailer
		for i, r := range rows {
			pos := float64(n - 1 - i)
			ci := r.Color
			if len(columns) > 1 {
				ci = c
			}
			off := (vg.Length(c) - vg.Length(len(columns)-1)/2) * barW
			v := r.Values[c]
			if math.IsNaN(v) {
				continue
			}
			if points {
				// The glyph sits on the row; the offset moves grouped columns apart.
				dy := float64(off) / float64(rowH) // in row units (a row is 1.0)
				s, err := styledPoints(plotter.XYs{{X: v, Y: pos - dy}}, ci)
				if err != nil {
					return "", err
				}
				s.GlyphStyle.Radius = vg.Points(4)
				p.Add(s)
				legendThumb = s
				if !math.IsNaN(r.Lo[c]) {
					eb, err := plotter.NewXErrorBars(struct {
						plotter.XYs
						plotter.XErrors
					}{plotter.XYs{{X: v, Y: pos - dy}}, plotter.XErrors{{Low: v - r.Lo[c], High: r.Hi[c] - v}}})
					if err != nil {
						return "", err
					}
					eb.Color = colorOf(ci)
					eb.Width = vg.Points(1.5)
					p.Add(eb)
				}
				continue
			}
			bc, err := plotter.NewBarChart(plotter.Values{v}, barW)
			if err != nil {
				return "", err
			}
			bc.Horizontal = true
			bc.XMin = pos
			bc.Offset = -off
			bc.Color = withAlpha(colorOf(ci), 0xd0)
			bc.LineStyle.Width = 0
			p.Add(bc)
			legendThumb = bc
			if !math.IsNaN(r.Lo[c]) {
				dy := float64(off) / float64(rowH)
				eb, err := plotter.NewXErrorBars(struct {
					plotter.XYs
					plotter.XErrors
				}{plotter.XYs{{X: v, Y: pos - dy}}, plotter.XErrors{{Low: v - r.Lo[c], High: r.Hi[c] - v}}})
				if err != nil {
					return "", err
				}
				eb.Color = color.Black
				eb.Width = vg.Points(1.2)
				eb.CapWidth = vg.Points(6)
				p.Add(eb)
			}
		}
		if len(columns) > 1 && legendThumb != nil {
			items = append(items, legendItem{col, []plot.Thumbnailer{legendThumb}})
		}
	}
	drawn := map[bool]bool{}
	for i, r := range rows {
		for _, m := range r.Marks {
			if math.IsNaN(m.Value) || (logX && m.Value <= 0) {
				continue
			}
			s, err := flagScatter(plotter.XYs{{X: m.Value, Y: float64(n - 1 - i)}}, r.Color, m.Counted)
			if err != nil {
				return "", err
			}
			p.Add(s)
			drawn[m.Counted] = true
		}
	}
	flags, err := flagLegends(drawn)
	if err != nil {
		return "", err
	}
	items = append(items, flags...)
	if math.IsInf(p.X.Min, 1) { // every value was NaN
		return "", nil
	}
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.Y.Tick.Label.Font.Size = 10
	p.X.Tick.Marker = niceTicks{}
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5
	}
	if !points && p.X.Min > 0 {
		p.X.Min = 0
	}
	if !math.IsNaN(ref) {
		lo, hi := math.Min(p.X.Min, ref), math.Max(p.X.Max, ref)
		pad := math.Max((hi-lo)*0.08, 0.02)
		if points {
			p.X.Min, p.X.Max = lo-pad, hi+pad
		}
		l, err := plotter.NewLine(plotter.XYs{{X: ref, Y: p.Y.Min}, {X: ref, Y: p.Y.Max}})
		if err != nil {
			return "", err
		}
		l.Color = color.Black
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		items = append(items, legendItem{refLabel, []plot.Thumbnailer{l}})
	} else if !points {
		p.X.Max += (p.X.Max - p.X.Min) * 0.05
	}
	h := vg.Points(90) + rowH*vg.Length(n)
	return render(p, items, wideW, h, title)
}
