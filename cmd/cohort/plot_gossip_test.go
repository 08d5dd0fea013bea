package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// svgSeriesPoints parses an SVG line plot with encoding/xml and returns
// the points (pixels) of each series' path, by its data-series index, and
// the y pixel of each y tick label by its text.
func svgSeriesPoints(t *testing.T, path string) (series map[string][][2]float64, yticks map[string]float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	series, yticks = map[string][][2]float64{}, map[string]float64{}
	d := xml.NewDecoder(bytes.NewReader(b))
	var tickY float64
	inYTick := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
			}
			inYTick = attr["class"] == "tick" && attr["text-anchor"] == "end"
			tickY, _ = strconv.ParseFloat(attr["y"], 64)
			if tok.Name.Local == "path" && attr["class"] == "series" {
				for _, f := range strings.Fields(attr["d"]) {
					x, y, ok := strings.Cut(strings.TrimLeft(f, "ML"), ",")
					px, err1 := strconv.ParseFloat(x, 64)
					py, err2 := strconv.ParseFloat(y, 64)
					if !ok || err1 != nil || err2 != nil {
						t.Fatalf("path point %q", f)
					}
					series[attr["data-series"]] = append(series[attr["data-series"]], [2]float64{px, py})
				}
			}
		case xml.CharData:
			if inYTick {
				yticks[strings.TrimSpace(string(tok))] = tickY
			}
		case xml.EndElement:
			inYTick = false
		}
	}
	return series, yticks
}

// `cohort sim gossip --plot` draws log₁₀ of the report's susceptible
// fraction per round and the notes' recurrence from p₀ = 1 − 1/n: pull
// pᵢ₊₁ = pᵢ², push with fanout f pᵢ₊₁ = pᵢ(1 − 1/n)^{f·n(1−pᵢ)}.
func TestSimGossipPlotsSusceptibleOverTheory(t *testing.T) {
	const n = 1000
	for _, c := range []struct {
		algo   string
		fanout int
		next   func(p float64) float64
	}{
		{"pull", 1, func(p float64) float64 { return p * p }},
		{"push", 2, func(p float64) float64 { return p * math.Pow(1-1.0/n, 2*n*(1-p)) }},
	} {
		plot := filepath.Join(t.TempDir(), c.algo+".svg")
		code, out, errs := cli(t, "sim", "gossip", "--algo", c.algo, "--nodes", strconv.Itoa(n),
			"--fanout", strconv.Itoa(c.fanout), "--plot", plot, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.algo, code, errs)
		}
		var r struct {
			Series map[string][]float64 `json:"series"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		measured := r.Series["susceptible"]
		var theory []float64
		for p := 1 - 1.0/n; ; p = c.next(p) {
			theory = append(theory, p)
			if p < 1.0/n || len(theory) == len(measured) {
				break
			}
		}
		texts, _ := svgSummary(t, plot)
		if got := strings.Join(texts["legend"], "|"); got != "measured pᵢ|theory" {
			t.Errorf("%s: legend %q", c.algo, got)
		}
		if y := strings.Join(texts["ylabel"], ""); !strings.HasPrefix(y, "log₁₀ susceptible fraction") {
			t.Errorf("%s: y label %q", c.algo, y)
		}
		paths, yticks := svgSeriesPoints(t, plot)
		m, th := paths["0"], paths["1"]
		// The last measured fraction is 0: log₁₀ 0 is not drawn.
		if len(measured) < 5 || measured[len(measured)-1] != 0 || len(m) != len(measured)-1 || len(th) != len(theory) {
			t.Fatalf("%s: %d measured points for the series %v, %d theory points for %v", c.algo, len(m), measured, len(th), theory)
		}
		// The pixels are an affine map of (i, log₁₀ v): fix it by the
		// first and last measured points, then every point must follow.
		i0, i1 := 0, len(m)-1
		v0, v1 := math.Log10(measured[i0]), math.Log10(measured[i1])
		ky := (m[i1][1] - m[i0][1]) / (v1 - v0)
		kx := (m[i1][0] - m[i0][0]) / float64(i1-i0)
		check := func(name string, pts [][2]float64, want []float64) {
			for i, pt := range pts {
				wx, wy := m[i0][0]+kx*float64(i), m[i0][1]+ky*(math.Log10(want[i])-v0)
				if math.Abs(pt[0]-wx) > 0.2 || math.Abs(pt[1]-wy) > 0.2 {
					t.Errorf("%s %s point %d at (%v, %v), want (%.1f, %.1f) for %v", c.algo, name, i, pt[0], pt[1], wx, wy, want[i])
				}
			}
		}
		check("measured", m, measured)
		check("theory", th, theory)
		// The y ticks name log₁₀ values on the same scale.
		y0, ok0 := yticks["0"]
		y2, ok2 := yticks["-2"]
		if !ok0 || !ok2 || math.Abs((y2-y0)/-2-ky) > 0.2 {
			t.Errorf("%s: y ticks %v, want 0 and -2 at %.2f px per decade", c.algo, yticks, ky)
		}
	}
}

// An algorithm without a per-round series has nothing to plot; the error
// names the flag and those that have one.
func TestSimGossipPlotWithoutSeries(t *testing.T) {
	code, _, errs := cli(t, "sim", "gossip", "--algo", "swim", "--plot", filepath.Join(t.TempDir(), "s.svg"))
	if code != 2 || !strings.Contains(errs, "--plot") || !strings.Contains(errs, "push, pull, push-pull, rumor, push-sum and members") {
		t.Errorf("swim --plot: exit %d, stderr %q; want 2 naming --plot and the algorithms with a series", code, errs)
	}
}
