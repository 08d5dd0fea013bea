package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// `cohort sim overlay --plot` draws the hop histogram with the mean and
// the theory's hops marked; the JSON report carries the histogram.
func TestSimOverlayPlotsHops(t *testing.T) {
	dir := t.TempDir()
	for algo, theory := range map[string]string{"pastry": "log₁₆N ", "circular": "N/4l "} {
		plot := filepath.Join(dir, algo+".svg")
		code, out, errs := cli(t, "sim", "overlay", "--algo", algo, "--nodes", "200", "--lookups", "300", "--plot", plot)
		if code != 0 || !strings.Contains(out, "wrote        "+plot) {
			t.Fatalf("%s: exit %d: %s\n%s", algo, code, errs, out)
		}
		texts, paths := svgSummary(t, plot)
		if paths != 1 || strings.Join(texts["legend"], " ") != "measured" {
			t.Errorf("%s: %d lines, legend %q: want the measured histogram", algo, paths, texts["legend"])
		}
		if x, y := strings.Join(texts["xlabel"], ""), strings.Join(texts["ylabel"], ""); x != "hops" || y != "fraction of the delivered lookups" {
			t.Errorf("%s: axis labels %q and %q", algo, x, y)
		}
		if title := strings.Join(texts["title"], ""); !strings.Contains(title, "overlay/"+algo) || !strings.Contains(title, "300 lookups") {
			t.Errorf("%s: title %q", algo, title)
		}
		marks := texts["mark-label"]
		if len(marks) != 2 || !strings.HasPrefix(marks[0], "mean ") || !strings.HasPrefix(marks[1], theory) {
			t.Errorf("%s: marks %q, want the mean and %q", algo, marks, theory)
		}

		code, out, errs = cli(t, "sim", "overlay", "--algo", algo, "--nodes", "200", "--lookups", "300", "--json")
		if code != 0 {
			t.Fatalf("%s --json: exit %d: %s", algo, code, errs)
		}
		var r struct {
			Series map[string][]float64 `json:"series"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, c := range r.Series["hops"] {
			n += c
		}
		if n != 300 {
			t.Errorf("%s --json: series hops %v counts %v lookups, want 300", algo, r.Series["hops"], n)
		}
	}

	// Scribe routes no lookups: nothing to plot.
	code, _, errs := cli(t, "sim", "overlay", "--algo", "scribe", "--nodes", "50", "--plot", filepath.Join(dir, "s.svg"))
	if code != 2 || !strings.Contains(errs, "--plot") || !strings.Contains(errs, "no lookups") {
		t.Errorf("scribe --plot: exit %d, stderr %q; want 2 naming --plot", code, errs)
	}

	// The whole family: a histogram for each router, an empty chart that
	// says so for the trees.
	plot := filepath.Join(dir, "o.svg")
	if code, _, errs := cli(t, "sim", "overlay", "--nodes", "64", "--plot", plot); code != 0 {
		t.Fatalf("whole family --plot: exit %d: %s", code, errs)
	}
	for algo, lines := range map[string]int{"pastry": 1, "circular": 1, "scribe": 0, "esm": 0} {
		texts, paths := svgSummary(t, perAlgo(plot, algo, 2))
		if paths != lines || (lines == 0) != (len(texts["note"]) == 1) {
			t.Errorf("%s: %d lines, notes %q; want %d", algo, paths, texts["note"], lines)
		}
	}
}
