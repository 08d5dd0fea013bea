package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// LinePlot is a line chart: one polyline per series over shared axes, with
// ticks, axis labels and a legend. Cohort draws the offsets of clocks from
// true time with it (`cohort sim --plot`).
type LinePlot struct {
	Title string
	// XLabel and YLabel name each axis's quantity and unit: "true time (s)".
	XLabel, YLabel string
	Series         []Series
	// Note, if set, is drawn inside the plot area (why it is empty, say).
	Note string
	// Width and Height are the picture's size in pixels; 0 means 860 × 480.
	Width, Height int
	// Marks are reference segments drawn over the lines with a label: a
	// level, a bound, the span of a quantity (a clock plot's accuracy α
	// and precision π).
	Marks []Mark
}

// Mark is a labelled segment from (X0, Y0) to (X1, Y1) in the data's
// units; an infinite X reaches the plot's edge on that side. Its finite
// coordinates are kept in view.
type Mark struct {
	Label          string
	X0, Y0, X1, Y1 float64
}

// Series is one line of a LinePlot: the points (X[i], Y[i]) joined in
// order. A point with a NaN or infinite coordinate is a gap: the line
// stops there and starts again at the next point.
type Series struct {
	Name string
	X, Y []float64
}

// plotColors are the series' colours, in turn (a colour-blind-safe
// palette); past the tenth, they repeat dashed.
var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// plotMaxLegend is how many series the legend names; the rest are counted.
const plotMaxLegend = 24

// WriteLinePlot draws p as a standalone SVG document. The same plot always
// gives the same bytes. A plot with no points draws its frame and note; the
// error is for series whose X and Y differ in length.
func WriteLinePlot(w io.Writer, p LinePlot) error {
	for _, s := range p.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot series %q: %d x values and %d y values", s.Name, len(s.X), len(s.Y))
		}
	}
	width, height := float64(p.Width), float64(p.Height)
	if width <= 0 {
		width = 860
	}
	if height <= 0 {
		height = 480
	}
	if width < 300 || height < 200 {
		return errors.New("plot: at least 300 × 200 pixels")
	}
	// The data's range, widened a little, or [0, 1] if there is none.
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for i := range s.X {
			if finite(s.X[i]) && finite(s.Y[i]) {
				x0, x1 = min(x0, s.X[i]), max(x1, s.X[i])
				y0, y1 = min(y0, s.Y[i]), max(y1, s.Y[i])
			}
		}
	}
	for _, m := range p.Marks {
		for _, x := range []float64{m.X0, m.X1} {
			if finite(x) && x0 <= x1 {
				x0, x1 = min(x0, x), max(x1, x)
			}
		}
		for _, y := range []float64{m.Y0, m.Y1} {
			if finite(y) && x0 <= x1 {
				y0, y1 = min(y0, y), max(y1, y)
			}
		}
	}
	if x0 > x1 {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if x0 == x1 {
		x0, x1 = x0-1, x1+1
	}
	if y0 == y1 {
		y0, y1 = y0-1, y1+1
	}
	pad := (y1 - y0) * 0.05
	y0, y1 = y0-pad, y1+pad
	xt, yt := niceTicks(x0, x1, 8), niceTicks(y0, y1, 6)

	legend := min(len(p.Series), plotMaxLegend)
	legendW := 0.0
	for _, s := range p.Series[:legend] {
		legendW = max(legendW, svgTextWidth(svgClip(s.Name, 24), 11))
	}
	if legend > 0 {
		legendW += 40
	}
	left, right, top, bottom := 78.0, width-16-legendW, 44.0, height-52
	if right-left < 120 {
		return errors.New("plot: too many or too long series names for the width")
	}
	sx := func(x float64) float64 { return left + (x-x0)/(x1-x0)*(right-left) }
	sy := func(y float64) float64 { return bottom - (y-y0)/(y1-y0)*(bottom-top) }

	var d svgDiagram // used for its writer: printf and XML-escaped text
	d.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`+"\n",
		svgF(width), svgF(height), svgF(width), svgF(height))
	d.printf(`<rect class="background" width="100%%" height="100%%" fill="#fff"/>` + "\n")
	if p.Title != "" {
		d.printf(`<text class="title" x="%s" y="24" font-size="15" font-weight="bold" fill="%s">`, svgF(left), svgInk)
		d.text(svgClip(p.Title, int((width-left-8)/(15*0.6)))) // what fits, at the title's size
		d.printf("</text>\n")
	}
	// Grid and tick labels.
	for _, v := range xt {
		x := sx(v)
		d.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e4e7eb"/>`+"\n", svgF(x), svgF(top), svgF(x), svgF(bottom))
		d.printf(`<text class="tick" x="%s" y="%s" text-anchor="middle" fill="%s">%s</text>`+"\n", svgF(x), svgF(bottom+16), svgInk, tickLabel(v, xt))
	}
	for _, v := range yt {
		y := sy(v)
		d.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e4e7eb"/>`+"\n", svgF(left), svgF(y), svgF(right), svgF(y))
		d.printf(`<text class="tick" x="%s" y="%s" text-anchor="end" fill="%s">%s</text>`+"\n", svgF(left-6), svgF(y+4), svgInk, tickLabel(v, yt))
	}
	if y0 < 0 && y1 > 0 {
		d.printf(`<line class="zero" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#8a939c" stroke-width="1.2"/>`+"\n", svgF(left), svgF(sy(0)), svgF(right), svgF(sy(0)))
	}
	d.printf(`<rect class="frame" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s"/>`+"\n",
		svgF(left), svgF(top), svgF(right-left), svgF(bottom-top), svgInk)
	// Axis labels.
	d.printf(`<text class="xlabel" x="%s" y="%s" text-anchor="middle" font-size="12" fill="%s">`, svgF((left+right)/2), svgF(height-14), svgInk)
	d.text(p.XLabel)
	d.printf("</text>\n")
	d.printf(`<text class="ylabel" x="0" y="0" transform="translate(16 %s) rotate(-90)" text-anchor="middle" font-size="12" fill="%s">`, svgF((top+bottom)/2), svgInk)
	d.text(p.YLabel)
	d.printf("</text>\n")
	if p.Note != "" {
		d.printf(`<text class="note" x="%s" y="%s" text-anchor="middle" font-size="13" fill="#777">`, svgF((left+right)/2), svgF((top+bottom)/2))
		d.text(p.Note)
		d.printf("</text>\n")
	}
	// The lines, clipped to the frame.
	d.printf(`<clipPath id="plot-area"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath>`+"\n",
		svgF(left), svgF(top), svgF(right-left), svgF(bottom-top))
	for i, s := range p.Series {
		d.printf(`<path class="series" data-series="%d" clip-path="url(#plot-area)" fill="none" stroke="%s" stroke-width="1.4"%s d="`,
			i, plotColors[i%len(plotColors)], plotDash(i))
		cmd := "M"
		for k := range s.X {
			if !finite(s.X[k]) || !finite(s.Y[k]) {
				if cmd != "M" {
					cmd = " M" // a gap: the line starts again
				}
				continue
			}
			d.printf("%s%s,%s", cmd, svgF(sx(s.X[k])), svgF(sy(s.Y[k])))
			cmd = " L"
		}
		d.printf(`"><title>`)
		d.text(s.Name)
		d.printf("</title></path>\n")
	}
	// Marks, over the lines.
	clampX := func(x float64) float64 {
		switch {
		case math.IsInf(x, -1):
			return left
		case math.IsInf(x, 1):
			return right
		}
		return sx(x)
	}
	clampY := func(y float64) float64 {
		switch {
		case math.IsInf(y, -1):
			return bottom
		case math.IsInf(y, 1):
			return top
		}
		return sy(y)
	}
	for i, m := range p.Marks {
		if math.IsNaN(m.X0) || math.IsNaN(m.X1) || math.IsNaN(m.Y0) || math.IsNaN(m.Y1) {
			continue
		}
		ax, ay, bx, by := clampX(m.X0), clampY(m.Y0), clampX(m.X1), clampY(m.Y1)
		d.printf(`<line class="mark" data-mark="%d" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c2185b" stroke-width="1.6" stroke-dasharray="6 3"/>`+"\n",
			i, svgF(ax), svgF(ay), svgF(bx), svgF(by))
		if ax == bx { // a span: ticks at its ends
			for _, y := range []float64{ay, by} {
				d.printf(`<line class="mark-end" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c2185b" stroke-width="1.6"/>`+"\n", svgF(ax-5), svgF(y), svgF(ax+5), svgF(y))
			}
		}
		lx, ly, anchor := bx-4, by-5, "end"
		if ax == bx {
			lx, ly, anchor = ax+7, (ay+by)/2+4, "start"
		}
		d.printf(`<text class="mark-label" x="%s" y="%s" text-anchor="%s" fill="#c2185b" font-weight="bold">`, svgF(lx), svgF(ly), anchor)
		d.text(m.Label)
		d.printf("</text>\n")
	}
	// Legend.
	for i, s := range p.Series[:legend] {
		y := top + 8 + float64(i)*16
		d.printf(`<line class="legend-line" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n",
			svgF(right+12), svgF(y), svgF(right+32), svgF(y), plotColors[i%len(plotColors)], plotDash(i))
		d.printf(`<text class="legend" x="%s" y="%s" fill="%s">`, svgF(right+36), svgF(y+4), svgInk)
		d.text(svgClip(s.Name, 24))
		d.printf("</text>\n")
	}
	if rest := len(p.Series) - legend; rest > 0 {
		d.printf(`<text class="legend" x="%s" y="%s" fill="#777">and %d more</text>`+"\n", svgF(right+12), svgF(top+12+float64(legend)*16), rest)
	}
	d.printf("</svg>\n")
	_, err := w.Write(d.out)
	return err
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func plotDash(i int) string {
	if i >= len(plotColors) {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

// niceTicks returns about n round values (1, 2 or 5 times a power of ten
// apart) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	var ticks []float64
	first := math.Ceil(lo / step)
	for k := 0.0; ; k++ {
		v := (first + k) * step
		if v > hi+step*1e-9 {
			return ticks
		}
		ticks = append(ticks, v)
	}
}

// tickLabel renders v with as many decimals as the ticks' spacing needs.
func tickLabel(v float64, ticks []float64) string {
	digits := 0
	if len(ticks) > 1 {
		if step := ticks[1] - ticks[0]; step < 1 {
			digits = int(math.Ceil(-math.Log10(step) - 1e-9))
		}
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}
