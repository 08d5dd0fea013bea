package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svgSummary parses an SVG file with encoding/xml and returns the texts
// of its elements by class, and its lines (the series' paths).
func svgSummary(t *testing.T, path string) (texts map[string][]string, paths int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	texts = map[string][]string{}
	var class string
	root := ""
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
			if root == "" {
				root = tok.Name.Local
			}
			class = ""
			for _, a := range tok.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			if tok.Name.Local == "path" && class == "series" {
				paths++
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" && class != "" {
				texts[class] = append(texts[class], s)
			}
		case xml.EndElement:
			class = ""
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts, paths
}

func TestSimPlotsClockOffsets(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "ntp.svg")
	code, out, errs := cli(t, "sim", "clocks", "--algo", "ntp", "--plot", plot)
	if code != 0 || !strings.Contains(out, "wrote        "+plot) {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	texts, paths := svgSummary(t, plot)
	if paths != 4 || strings.Join(texts["legend"], " ") != "p0 p1 p2 p3" {
		t.Errorf("%d lines, legend %q: want one line per process", paths, texts["legend"])
	}
	if x, y := strings.Join(texts["xlabel"], ""), strings.Join(texts["ylabel"], ""); x != "true time t (s)" ||
		!strings.HasPrefix(y, "offset C(t) − t (") {
		t.Errorf("axis labels %q and %q: want true time and offset, with units", x, y)
	}
	if title := strings.Join(texts["title"], ""); !strings.Contains(title, "clocks/ntp") {
		t.Errorf("title %q", title)
	}
	if len(texts["tick"]) < 8 {
		t.Errorf("ticks %q", texts["tick"])
	}

	// A run without clock readings has nothing to plot.
	code, _, errs = cli(t, "sim", "clocks", "--algo", "lamport", "--plot", filepath.Join(dir, "l.svg"))
	if code != 2 || !strings.Contains(errs, "--plot") || !strings.Contains(errs, "no clock readings") {
		t.Errorf("lamport --plot: exit %d, stderr %q; want 2 naming --plot", code, errs)
	}
	code, _, errs = cli(t, "sim", "clocks", "--algo", "ntp", "--no-check", "--plot", plot)
	if code != 2 || !strings.Contains(errs, "--plot") {
		t.Errorf("--no-check --plot: exit %d, stderr %q", code, errs)
	}
}

// The whole family with --plot: a chart per algorithm, an empty one saying
// so for those without clock readings.
func TestSimPlotsTheWholeFamily(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "c.svg")
	code, out, errs := cli(t, "sim", "clocks", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "MONOTONIC-CLOCK") || !strings.Contains(out, "rbs ") {
		t.Errorf("the table lacks the synchronization algorithms or their checker:\n%s", out)
	}
	texts, paths := svgSummary(t, perAlgo(plot, "lamport-figure", 2))
	if paths != 0 || len(texts["note"]) != 1 {
		t.Errorf("lamport-figure: %d lines, notes %q", paths, texts["note"])
	}
	if _, paths := svgSummary(t, perAlgo(plot, "rbs", 2)); paths != 4 {
		t.Errorf("rbs: %d lines, want 4 (the receivers; the sender outputs no readings)", paths)
	}
}

func TestSimClockSyncJSON(t *testing.T) {
	for _, algo := range []string{"cristian", "ntp", "berkeley", "rbs", "hlc"} {
		code, out, errs := cli(t, "sim", "clocks", "--algo", algo, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", algo, code, errs)
		}
		var r struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v\n%s", algo, err, out)
		}
		for _, k := range []string{"precision_ns", "accuracy_ns", "messages", "converged_ns"} {
			if _, ok := r.Metrics[k]; !ok {
				t.Errorf("%s: metrics %v lack %s", algo, r.Metrics, k)
			}
		}
	}
}
