package trace

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgNumber is a well-formed SVG length or number: an optional minus, digits
// with at most one decimal point, and optionally a percent sign.
var svgNumber = regexp.MustCompile(`^-?(\d+(\.\d+)?|\.\d+)%?$`)

// svgNumericAttrs are the attributes whose value is one number or length.
// nonNegative says it may not be negative.
var svgNumericAttrs = map[string]bool{ // name -> nonNegative
	"x": false, "y": false, "x1": false, "y1": false, "x2": false, "y2": false,
	"cx": false, "cy": false, "refX": false, "refY": false,
	"width": true, "height": true, "r": true, "rx": true, "font-size": true,
	"stroke-width": true, "markerWidth": true, "markerHeight": true,
	"fill-opacity": true, "stroke-opacity": true, "opacity": true,
}

// svgListAttrs are the attributes whose value is a list of numbers (with
// commas, spaces and, for paths, command letters between them).
var svgListAttrs = map[string]bool{"viewBox": true, "points": true, "d": true, "stroke-dasharray": true}

// svgCheckAttrs checks that every numeric attribute of an SVG document is
// well formed: no "%%" left by a format that was never formatted, no NaN or
// infinity, no negative width.
func svgCheckAttrs(t *testing.T, name string, b []byte) {
	t.Helper()
	for k, el := range parseSVG(t, b) {
		for attr, v := range el.attrs {
			if strings.Contains(v, "%%") {
				t.Errorf("%s: element %d <%s> %s=%q", name, k, el.name, attr, v)
			}
			if lv := strings.ToLower(v); attr != "class" && attr != "font-family" && !strings.HasPrefix(attr, "data-") &&
				(strings.Contains(lv, "nan") || strings.Contains(lv, "inf")) {
				t.Errorf("%s: element %d <%s> %s=%q", name, k, el.name, attr, v)
			}
			if nonNeg, ok := svgNumericAttrs[attr]; ok {
				if !svgNumber.MatchString(v) {
					t.Errorf("%s: element %d <%s> %s=%q is not a number", name, k, el.name, attr, v)
					continue
				}
				f, _ := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
				if nonNeg && f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
					t.Errorf("%s: element %d <%s> %s=%q is negative", name, k, el.name, attr, v)
				}
				if strings.HasSuffix(v, "%") && f > 100 {
					t.Errorf("%s: element %d <%s> %s=%q is over 100%%", name, k, el.name, attr, v)
				}
			}
			if svgListAttrs[attr] {
				for _, tok := range strings.FieldsFunc(v, func(r rune) bool {
					return r == ' ' || r == ',' || (r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') && r != 'e'
				}) {
					if !svgNumber.MatchString(tok) || strings.HasSuffix(tok, "%") {
						t.Errorf("%s: element %d <%s> %s=%q: %q is not a number", name, k, el.name, attr, v, tok)
					}
				}
			}
		}
	}
}

// TestSVGAttributesWellFormed parses every kind of SVG the package writes —
// diagrams of small, random, truncated, empty and marked traces, and line
// plots — and checks every numeric attribute. The background rectangle in
// particular must be 100% wide, so that a picture is not transparent on a
// dark page.
func TestSVGAttributesWellFormed(t *testing.T) {
	docs := map[string][]byte{}
	var b bytes.Buffer
	render := func(name string, tr *Trace, opt SVGOptions) {
		b.Reset()
		if err := WriteSVG(&b, tr, opt); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs[name] = bytes.Clone(b.Bytes())
	}
	render("sample", svgSample(), SVGOptions{Title: "sample", Mark: []int{8, 13, 7}})
	render("empty", &Trace{}, SVGOptions{})
	render("ra4", svgRATrace(4, 1), SVGOptions{})
	render("random", txRandomTrace(3, 9, 400, true), SVGOptions{Mark: []int{5, 50}})
	render("truncated", txRandomTrace(4, 5, 400, false), SVGOptions{MaxEvents: 60})
	render("narrow", svgRATrace(8, 2), SVGOptions{Width: 320})
	render("violations", svgRATrace(4, 1), SVGOptions{Violations: []Violation{
		{Name: "ME1", Events: []int{3, 9}}, {Name: "fairness", Events: []int{12}, Unpromised: true}}})
	render("wait-for", svgRATrace(4, 1), SVGOptions{Violations: []Violation{
		{Name: "ME2", Events: []int{3, 9}, Edges: []WaitFor{{From: 0, To: 3, At: 3}, {From: 3, To: 0, At: 9}}}}})
	render("shaded", svgRATrace(4, 1), SVGOptions{Shades: []Shade{
		{Kind: "partition", From: 1e6, To: 3e6, Label: "{p0,p1} | {p2,p3}"}, {Kind: "pause", Nodes: []int32{2}, From: 2e6}}})
	for _, p := range []LinePlot{
		{Title: "offsets", Series: []Series{{Name: "p0", X: []float64{0, 1, 2}, Y: []float64{1, math.NaN(), -3}}}},
		{Note: "no data"},
	} {
		b.Reset()
		if err := WriteLinePlot(&b, p); err != nil {
			t.Fatal(err)
		}
		docs["plot "+p.Title+p.Note] = bytes.Clone(b.Bytes())
	}
	// The README's own figures, as committed.
	figures, err := filepath.Glob(filepath.Join("..", "docs", "*.svg"))
	if err != nil || len(figures) == 0 {
		t.Fatalf("no figures in docs/: %v", err)
	}
	for _, f := range figures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = b
	}
	for name, doc := range docs {
		svgCheckAttrs(t, name, doc)
		els := parseSVG(t, doc)
		bg := false
		for _, el := range els {
			if el.attrs["class"] == "background" {
				bg = el.attrs["width"] == "100%" && el.attrs["height"] == "100%" && el.attrs["fill"] == "#fff"
			}
		}
		if !bg {
			t.Errorf("%s: no opaque background covering the picture", name)
		}
	}
}
