package trace

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// svgElements parses an SVG document with encoding/xml and returns its
// elements in order, each with its attributes and text.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

func parseSVG(t *testing.T, b []byte) []svgElement {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var els []svgElement
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
			open = append(open, len(els)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				els[open[len(open)-1]].text += string(tok)
			}
		}
	}
	if len(els) == 0 || els[0].name != "svg" {
		t.Fatalf("no svg root element")
	}
	return els
}

func TestLinePlotIsWellFormedSVG(t *testing.T) {
	p := LinePlot{
		Title:  `offsets <p0 & "p1">`,
		XLabel: "true time t (s)",
		YLabel: "offset C(t) − t (ms)",
		Series: []Series{
			{Name: "p0", X: []float64{0, 1, 2}, Y: []float64{0, 0, 0}},
			{Name: "p1", X: []float64{0, 1, math.NaN(), 2, 3}, Y: []float64{-2, 1, math.NaN(), 0.5, 0.25}},
			{Name: "p2", X: []float64{0.5, 2.5}, Y: []float64{3, -1}},
		},
	}
	var a, b bytes.Buffer
	if err := WriteLinePlot(&a, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteLinePlot(&b, p); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two renderings differ (err %v)", err)
	}
	els := parseSVG(t, a.Bytes())
	var paths, legend, titles []string
	texts := map[string]string{}
	for _, e := range els {
		switch {
		case e.name == "path" && e.attrs["class"] == "series":
			paths = append(paths, e.attrs["d"])
		case e.name == "text" && e.attrs["class"] == "legend":
			legend = append(legend, e.text)
		case e.name == "title":
			titles = append(titles, e.text)
		case e.name == "text":
			texts[e.attrs["class"]] = e.text
		}
	}
	if len(paths) != 3 || !slices.Equal(legend, []string{"p0", "p1", "p2"}) || !slices.Equal(titles, legend) {
		t.Fatalf("%d lines, legend %q, tooltips %q; want one line and one legend entry per series", len(paths), legend, titles)
	}
	// The NaN point is a gap: p1's line starts again after it.
	if strings.Count(paths[1], "M") != 2 || strings.Count(paths[1], "L") != 2 || strings.Count(paths[0], "M") != 1 {
		t.Errorf("p1's path %q: want two pieces of two points each", paths[1])
	}
	if texts["title"] != p.Title || texts["xlabel"] != p.XLabel || texts["ylabel"] != p.YLabel {
		t.Errorf("title %q, axes %q and %q", texts["title"], texts["xlabel"], texts["ylabel"])
	}
	// The y ticks cover the data (−2 .. 3) and include 0, where a zero line
	// is drawn.
	var yticks []string
	zero := false
	for _, e := range els {
		if e.name == "text" && e.attrs["class"] == "tick" && e.attrs["text-anchor"] == "end" {
			yticks = append(yticks, e.text)
		}
		zero = zero || e.attrs["class"] == "zero"
	}
	if !slices.Contains(yticks, "-2") || !slices.Contains(yticks, "3") || !slices.Contains(yticks, "0") || !zero {
		t.Errorf("y ticks %q (zero line %v)", yticks, zero)
	}
}

func TestLinePlotWithoutData(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLinePlot(&b, LinePlot{XLabel: "t (s)", YLabel: "y", Note: "no clock readings in this run"}); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range parseSVG(t, b.Bytes()) {
		found = found || e.attrs["class"] == "note" && e.text == "no clock readings in this run"
	}
	if !found {
		t.Error("the note is missing")
	}
}

func TestLinePlotErrors(t *testing.T) {
	for _, c := range []struct {
		p    LinePlot
		want string
	}{
		{LinePlot{Series: []Series{{Name: "p3", X: []float64{1, 2}, Y: []float64{1}}}}, `series "p3": 2 x values and 1 y values`},
		{LinePlot{Width: 100}, "at least 300 × 200"},
	} {
		if err := WriteLinePlot(io.Discard, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 10, 5, []float64{0, 2, 4, 6, 8, 10}},
		{-2.2, 3.1, 6, []float64{-2, -1, 0, 1, 2, 3}},
		{0.001, 0.0043, 4, []float64{0.001, 0.002, 0.003, 0.004}},
		{-120, 480, 6, []float64{-100, 0, 100, 200, 300, 400}},
	}
	for _, c := range cases {
		got := niceTicks(c.lo, c.hi, c.n)
		if len(got) != len(c.want) {
			t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
				break
			}
		}
	}
	if got := tickLabel(0.25, []float64{0, 0.05}); got != "0.25" {
		t.Errorf("tickLabel = %q, want 0.25", got)
	}
}
