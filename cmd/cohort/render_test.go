package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// TestOneEventCountEverywhere checks that the report, the diagram and the
// ShiViz log of a run count the same events: the trace's (the report used
// to print only the simulator's steps, 34 against the diagram's 49 for
// lamport-figure).
func TestOneEventCountEverywhere(t *testing.T) {
	dir := t.TempDir()
	jl, svg, sv := filepath.Join(dir, "f.jsonl"), filepath.Join(dir, "f.svg"), filepath.Join(dir, "f.log")
	code, out, errs := cli(t, "sim", "clocks", "--algo", "lamport-figure", "--trace", jl, "--svg", svg, "--shiviz", sv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := os.Open(jl)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := len(tr.Events)
	m := regexp.MustCompile(`events\s+(\d+) in the trace \((\d+) simulator steps\)`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Errorf("report says %q, the trace holds %d events:\n%s", m, n, out)
	}
	b, _ := os.ReadFile(svg)
	if !strings.Contains(string(b), strconv.Itoa(n)+" events") {
		t.Errorf("the diagram does not say %d events", n)
	}
	log, _ := os.ReadFile(sv)
	network := tr.Count(trace.Drop, "") + tr.Count(trace.Dup, "")
	if got := len(regexp.MustCompile(`(?m)^p\d+ \{`).FindAll(log, -1)); got != n-network {
		t.Errorf("ShiViz log has %d entries, want %d (the trace's process events)", got, n-network)
	}

	code, out, _ = cli(t, "sim", "clocks", "--algo", "lamport-figure", "--json")
	var r struct {
		Events      int64 `json:"events"`
		TraceEvents int64 `json:"trace_events"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.TraceEvents != int64(n) || r.Events >= r.TraceEvents {
		t.Errorf("--json: exit %d, %+v, want trace_events %d", code, r, n)
	}
}

// TestBankDemoShiVizHasBothRuns checks that the bank demonstration writes
// one ShiViz log with an execution per run, each named, so that ShiViz can
// diff them.
func TestBankDemoShiVizHasBothRuns(t *testing.T) {
	sv := filepath.Join(t.TempDir(), "bank.log")
	code, out, errs := cli(t, "sim", "multicast", "--demo", "bank", "--shiviz", sv)
	if code != 0 { // basic multicast breaks total order, which it does not promise
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	b, err := os.ReadFile(sv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if lines[0] != trace.ShiVizRegexp || lines[1] != trace.ShiVizDelimiter {
		t.Fatalf("header lines %q", lines[:2])
	}
	delim := regexp.MustCompile(`^=== (?P<trace>.*) ===$`)
	var names []string
	for _, l := range lines[2:] {
		if m := delim.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	if strings.Join(names, ",") != "basic,total-sequencer" {
		t.Errorf("executions %q", names)
	}
	if !strings.Contains(out, "wrote "+sv) {
		t.Errorf("output does not name the log:\n%s", out)
	}
}

// TestShiVizWarnsWhenLarge checks the warning for a log too big for ShiViz
// to open quickly.
func TestShiVizWarnsWhenLarge(t *testing.T) {
	dir := t.TempDir()
	tr := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 1}}
	for i := range shivizWarnEvents + 1 {
		tr.Events = append(tr.Events, trace.Event{Index: i, Kind: trace.Timer, Peer: -1, Type: "t"})
	}
	var errb strings.Builder
	if err := writeShiViz(filepath.Join(dir, "big.log"), &errb, tr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "10001 events") {
		t.Errorf("no warning: %q", errb.String())
	}
	errb.Reset()
	tr.Events = tr.Events[:100]
	if err := writeShiViz(filepath.Join(dir, "small.log"), &errb, tr); err != nil || errb.Len() != 0 {
		t.Errorf("small log: %v, %q", err, errb.String())
	}
}

// svgWaitFor parses a diagram with encoding/xml and returns its wait-for
// arcs ("p0→p1 at #55"), in order.
func svgWaitFor(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	var arcs []string
	at := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch attr["class"] {
		case "waitfor":
			at = attr["data-at"]
		case "waitfor-edge":
			arcs = append(arcs, "p"+attr["data-from"]+"→p"+attr["data-to"]+" at #"+at)
		}
	}
	return arcs
}

// The diagram draws a deadlock's wait-for cycle: basic Maekawa's, from
// ME2's verdict (cohort sim --svg, and cohort trace render --mark, which
// runs the checkers on the trace), and the cycles CMH's processes
// declare.
func TestSVGDrawsWaitForCycles(t *testing.T) {
	dir := t.TempDir()
	mk, mkSVG, marked := filepath.Join(dir, "mk.jsonl"), filepath.Join(dir, "mk.svg"), filepath.Join(dir, "marked.svg")
	code, out, errs := cli(t, "sim", "mutex", "--algo", "maekawa", "--nodes", "4", "--seed", "3", "--trace", mk, "--svg", mkSVG, "--json")
	if code > 1 {
		t.Fatalf("sim maekawa: exit %d: %s", code, errs)
	}
	var r lab.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	k := slices.IndexFunc(r.Checks, func(c lab.Check) bool { return c.Name == "ME2" })
	if k < 0 || len(r.Checks[k].Edges) != 2 {
		t.Fatalf("the report's checks %+v; want ME2's deadlock with two edges", r.Checks)
	}
	at := max(r.Checks[k].Edges[0].At, r.Checks[k].Edges[1].At)
	var want []string
	for _, e := range r.Checks[k].Edges {
		want = append(want, fmt.Sprintf("p%d→p%d at #%d", e.From, e.To, at))
	}
	if got := svgWaitFor(t, mkSVG); !slices.Equal(got, want) || want[0] != "p0→p1 at #"+strconv.Itoa(at) {
		t.Errorf("sim --svg draws the arcs %q, want ME2's %q (p0 → p1 → p0)", got, want)
	}
	if code, _, errs := cli(t, "trace", "render", mk, "--svg", marked, "--mark"); code != 0 {
		t.Fatalf("trace render: exit %d: %s", code, errs)
	}
	if got := svgWaitFor(t, marked); !slices.Equal(got, want) {
		t.Errorf("trace render --mark draws the arcs %q, want %q", got, want)
	}

	cmh, cmhSVG := filepath.Join(dir, "cmh.jsonl"), filepath.Join(dir, "cmh.svg")
	if code, _, errs := cli(t, "sim", "deadlock", "--algo", "cmh", "--nodes", "5", "--seed", "1", "--trace", cmh, "--svg", cmhSVG); code != 0 {
		t.Fatalf("sim deadlock: exit %d: %s", code, errs)
	}
	tr, err := readTrace(cmh)
	if err != nil {
		t.Fatal(err)
	}
	want = nil
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "deadlock" {
			var d struct{ Cycle []int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			for j, p := range d.Cycle {
				want = append(want, fmt.Sprintf("p%d→p%d at #%d", p, d.Cycle[(j+1)%len(d.Cycle)], e.Index))
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the CMH run declares no deadlock")
	}
	if got := svgWaitFor(t, cmhSVG); !slices.Equal(got, want) {
		t.Errorf("CMH's diagram draws the arcs %q, want the declared cycles' %q", got, want)
	}
}

// The README says how to open a log in ShiViz with the parser and the
// delimiter the logs carry, in the process order ShiViz needs, and from
// what size Cohort warns: the same strings the writer uses.
func TestReadmeSaysHowToOpenShiVizLogs(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ") // as wrapped anywhere
	for _, want := range []string{
		"`" + trace.ShiVizRegexp + "`",
		"delimiter `" + trace.ShiVizDelimiter + "`",
		`"appearance in log, ascending"`,
		fmt.Sprintf("past about %d,%03d events", shivizWarnEvents/1000, shivizWarnEvents%1000),
		"What ShiViz cannot draw",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not say %q", want)
		}
	}
}
