package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tunebench/tunebench/internal/results"
)

// outageRed is the colour of the outage windows on the time series.
var outageRed = color.RGBA{0xC0, 0x1B, 0x1B, 0xff}

// outageBands draws a run's outage windows on a time-series chart, whose x
// axis is seconds since the measurement start like the windows. The band
// (added before the series) shades the whole height of each window; the
// strip (added after them) is a solid bar along the top of the data area,
// so a window stays visible over stacked areas. A window shorter than
// minWidth on the page is widened to it, so a single failing second shows.
type outageBands struct {
	spans []results.Outage
	strip bool
}

const (
	outageMinWidth = vg.Length(2.5)
	outageStripH   = vg.Length(4)
)

// newOutageBands returns the band and the strip of the windows, nil for a
// run without outages.
func newOutageBands(outs []results.Outage) (band, strip *outageBands) {
	if len(outs) == 0 {
		return nil, nil
	}
	return &outageBands{spans: outs}, &outageBands{spans: outs, strip: true}
}

// DataRange widens the x axis to take in every window; it says nothing of y.
func (o *outageBands) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range o.spans {
		xmin, xmax = math.Min(xmin, s.StartS), math.Max(xmax, s.EndS)
	}
	return xmin, xmax, math.Inf(1), math.Inf(-1)
}

// Plot implements plot.Plotter.
func (o *outageBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range o.spans {
		x0, x1 := trX(s.StartS), trX(s.EndS)
		if w := x1 - x0; w < outageMinWidth {
			mid := (x0 + x1) / 2
			x0, x1 = mid-outageMinWidth/2, mid+outageMinWidth/2
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		if x1 <= x0 {
			continue
		}
		y0, y1 := c.Min.Y, c.Max.Y
		clr := withAlpha(outageRed, 0x38)
		if o.strip {
			y0, clr = y1-outageStripH, outageRed
		}
		c.FillPolygon(clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
}

// Thumbnail draws the legend's sample: the shade with the strip on top.
func (o *outageBands) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(withAlpha(outageRed, 0x38), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	top := r.Max.Y - (r.Max.Y-r.Min.Y)/3
	c.FillPolygon(outageRed, []vg.Point{{X: r.Min.X, Y: top}, {X: r.Max.X, Y: top}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// outageLegend is the legend entry of the windows.
func outageLegend(band *outageBands) legendItem {
	return legendItem{"outage", []plot.Thumbnailer{band}}
}
