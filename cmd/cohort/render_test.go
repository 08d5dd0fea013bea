package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
