package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// svEntry is one entry of a ShiViz log as ShiViz's parser sees it.
type svEntry struct {
	host  string
	clock map[string]uint64
	event string
}

// svParse parses a log the way ShiViz does: the first line is the parser
// regular expression, the second the (empty) execution delimiter, and the
// expression's matches in the rest are the entries.
func svParse(t testing.TB, log string) []svEntry {
	t.Helper()
	regex, rest, ok := strings.Cut(log, "\n")
	if !ok {
		t.Fatalf("no regular expression line in %q", log)
	}
	if regex != ShiVizRegexp {
		t.Fatalf("first line %q, want %q", regex, ShiVizRegexp)
	}
	delim, rest, ok := strings.Cut(rest, "\n")
	if !ok || delim != "" {
		t.Fatalf("second line %q, want it empty", delim)
	}
	// ShiViz's named groups are (?<name>...); Go's RE2 accepts that syntax
	// too, but spell it the RE2 way to be sure this is RE2's reading.
	re := regexp.MustCompile(strings.ReplaceAll(regex, "(?<", "(?P<"))
	var out []svEntry
	for _, m := range re.FindAllStringSubmatch(strings.TrimSpace(rest), -1) {
		e := svEntry{
			host:  m[re.SubexpIndex("host")],
			event: m[re.SubexpIndex("event")],
		}
		if err := json.Unmarshal([]byte(m[re.SubexpIndex("clock")]), &e.clock); err != nil {
			t.Fatalf("clock %q: %v", m[re.SubexpIndex("clock")], err)
		}
		out = append(out, e)
	}
	// Every line of the log is part of an entry.
	if lines := strings.Count(strings.TrimSpace(rest), "\n") + 1; rest != "" && lines != 2*len(out) {
		t.Fatalf("%d lines but %d entries", lines, len(out))
	}
	return out
}

func svWrite(t *testing.T, tr *Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteShiViz(&b, tr); err != nil {
		t.Fatalf("WriteShiViz: %v", err)
	}
	return b.String()
}

// svBefore computes happened-before over the process events of tr by
// search, independently of vector clocks: before[a][b] for trace indices.
func svBefore(tr *Trace) map[int]map[int]bool {
	succ := map[int][]int{}
	last := map[int32]int{}
	sends := map[uint64]int{}
	for i := range tr.Events {
		e := &tr.Events[i]
		if !e.Kind.IsProcess() {
			continue
		}
		if p, ok := last[e.Node]; ok {
			succ[p] = append(succ[p], i)
		}
		last[e.Node] = i
		switch e.Kind {
		case Send:
			sends[e.Msg] = i
		case Recv:
			if s, ok := sends[e.Msg]; ok {
				succ[s] = append(succ[s], i)
			}
		}
	}
	before := map[int]map[int]bool{}
	for i := range tr.Events {
		if !tr.Events[i].Kind.IsProcess() {
			continue
		}
		seen := map[int]bool{}
		stack := append([]int(nil), succ[i]...)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !seen[x] {
				seen[x] = true
				stack = append(stack, succ[x]...)
			}
		}
		before[i] = seen
	}
	return before
}

func svLeq(a, b map[string]uint64) bool {
	for h, v := range a {
		if v > b[h] {
			return false
		}
	}
	return true
}

// svCheck verifies a ShiViz log of tr against ShiViz's rules and against the
// causality of tr.
func svCheck(t *testing.T, tr *Trace, log string) []svEntry {
	t.Helper()
	return svCheckRules(t, tr, log, true)
}

// svCheckRules verifies a ShiViz log of tr against ShiViz's rules: one entry
// per process event, in order, each host's own clock counting 1, 2, 3 ...,
// other components naming events that exist. With causal, it also checks
// that the clocks order the events exactly as the trace does.
func svCheckRules(t testing.TB, tr *Trace, log string, causal bool) []svEntry {
	t.Helper()
	entries := svParse(t, log)
	var idx []int // trace index of each entry
	for i := range tr.Events {
		if tr.Events[i].Kind.IsProcess() {
			idx = append(idx, i)
		}
	}
	if len(entries) != len(idx) {
		t.Fatalf("%d entries for %d process events", len(entries), len(idx))
	}
	own := map[string]uint64{}
	hosts := map[string]uint64{}
	for k, en := range entries {
		hosts[en.host]++
		if want := fmt.Sprintf("p%d", tr.Events[idx[k]].Node); en.host != want {
			t.Fatalf("entry %d: host %q, want %q", k, en.host, want)
		}
	}
	sendClock := map[uint64]map[string]uint64{}
	for k, en := range entries {
		e := &tr.Events[idx[k]]
		own[en.host]++
		if en.clock[en.host] != own[en.host] {
			t.Fatalf("entry %d (%s): own clock %d, want %d", k, en.event, en.clock[en.host], own[en.host])
		}
		for h, v := range en.clock {
			if v == 0 {
				t.Errorf("entry %d: zero component for %s", k, h)
			}
			if v > hosts[h] {
				t.Errorf("entry %d: clock names event %d of %s, which has %d", k, v, h, hosts[h])
			}
		}
		if !causal {
			continue
		}
		switch e.Kind {
		case Send:
			sendClock[e.Msg] = en.clock
		case Recv:
			if s, ok := sendClock[e.Msg]; ok && !svLeq(s, en.clock) {
				t.Errorf("entry %d: receive clock %v does not dominate the send's %v", k, en.clock, s)
			}
		}
		if !strings.Contains(en.event, "t="+FormatNS(e.Time)) {
			t.Errorf("entry %d: %q lacks the time", k, en.event)
		}
	}
	if !causal {
		return entries
	}
	before := svBefore(tr)
	for a := range entries {
		for b := range entries {
			if a == b {
				continue
			}
			hb := svLeq(entries[a].clock, entries[b].clock)
			if want := before[idx[a]][idx[b]]; hb != want {
				t.Fatalf("events %d and %d: clocks %v %v say before=%v, the trace says %v",
					idx[a], idx[b], entries[a].clock, entries[b].clock, hb, want)
			}
		}
	}
	return entries
}

func svSample() *Trace {
	ev := []Event{
		{Node: 0, Kind: Start, Peer: -1},
		{Node: 1, Kind: Start, Peer: -1},
		{Node: 2, Kind: Start, Peer: -1},
		{Node: 1, Kind: Input, Peer: -1, Type: "request"},
		{Node: 1, Kind: Send, Msg: 1, Peer: 2, Type: "REQ", Label: "REQ(ts=4)"},
		{Node: 1, Kind: Dup, Msg: 1, Peer: 2, Type: "REQ"},
		{Node: 1, Kind: Send, Msg: 2, Peer: 0, Type: "REQ", Label: "REQ(ts=4)"},
		{Node: 0, Kind: Drop, Msg: 2, Peer: 1, Type: "REQ", Reason: "partition"},
		{Node: 2, Kind: Recv, Msg: 1, Peer: 1, Type: "REQ", Label: "REQ(ts=4)"},
		{Node: 2, Kind: Send, Msg: 3, Peer: 1, Type: "OK"},
		{Node: 2, Kind: Recv, Msg: 1, Peer: 1, Type: "REQ", Label: "REQ(ts=4)"},
		{Node: 0, Kind: Timer, Peer: -1, Type: "retry"},
		{Node: 1, Kind: Recv, Msg: 3, Peer: 2, Type: "OK"},
		{Node: 1, Kind: Output, Peer: -1, Type: "enter", Label: "enter"},
		{Node: 0, Kind: Crash, Peer: -1},
		{Node: 0, Kind: Recover, Peer: -1},
	}
	tr := &Trace{Header: Header{Format: FormatName, Nodes: 3}}
	for i, e := range ev {
		e.Index = i
		e.Time = int64(i) * 500_000
		tr.Events = append(tr.Events, e)
	}
	return tr
}

func TestShiVizSample(t *testing.T) {
	tr := svSample()
	log := svWrite(t, tr)
	entries := svCheck(t, tr, log)
	want := []string{
		`p0 {"p0":1} start (t=0ns)`,
		`p1 {"p1":1} start (t=500.000µs)`,
		`p2 {"p2":1} start (t=1.000ms)`,
		`p1 {"p1":2} input request (t=1.500ms)`,
		`p1 {"p1":3} send REQ(ts=4) to p2 (t=2.000ms, msg 1, duplicated)`,
		`p1 {"p1":4} send REQ(ts=4) to p0 (t=3.000ms, msg 2, dropped: partition)`,
		`p2 {"p1":3,"p2":2} recv REQ(ts=4) from p1 (t=4.000ms, msg 1)`,
		`p2 {"p1":3,"p2":3} send OK to p1 (t=4.500ms, msg 3)`,
		`p2 {"p1":3,"p2":4} recv REQ(ts=4) from p1 (t=5.000ms, msg 1)`,
		`p0 {"p0":2} timer retry (t=5.500ms)`,
		`p1 {"p1":5,"p2":3} recv OK from p2 (t=6.000ms, msg 3)`,
		`p1 {"p1":6,"p2":3} output enter (t=6.500ms)`,
		`p0 {"p0":3} crash (t=7.000ms)`,
		`p0 {"p0":4} recover (t=7.500ms)`,
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d:\n%s", len(entries), len(want), log)
	}
	for k, en := range entries {
		clock, _ := json.Marshal(en.clock)
		if got := en.host + " " + string(clock) + " " + en.event; got != want[k] {
			t.Errorf("entry %d:\n got %s\nwant %s", k, got, want[k])
		}
	}
	if !strings.HasPrefix(log, ShiVizRegexp+"\n\np0 {\"p0\":1}\nstart (t=0ns)\np1 ") {
		t.Errorf("log starts %q", log[:80])
	}
}

func TestShiVizRandom(t *testing.T) {
	for seed := range uint64(30) {
		for _, vc := range []bool{false, true} {
			tr := txRandomTrace(seed, 1+int(seed%9), 120, vc)
			svCheck(t, tr, svWrite(t, tr))
		}
	}
}

// TestShiVizRecorded checks that recorded vector timestamps are used when
// they fit ShiViz's rules, and replaced when they do not.
func TestShiVizRecorded(t *testing.T) {
	tr := txRandomTrace(3, 4, 150, true)
	computed := txRandomTrace(3, 4, 150, false)
	if a, b := svWrite(t, tr), svWrite(t, computed); a != b {
		t.Errorf("recorded clocks that tick on every event give a different log than computed ones")
	}

	// Recorded clocks that only tick on sends and receives (as some vector
	// clock algorithms keep them) break ShiViz's rule; they must be replaced.
	sparse := txRandomTrace(4, 4, 150, false)
	cur := make([][]uint64, 4)
	for p := range cur {
		cur[p] = make([]uint64, 4)
	}
	at := map[uint64][]uint64{}
	for i := range sparse.Events {
		e := &sparse.Events[i]
		if !e.Kind.IsProcess() {
			continue
		}
		c := cur[e.Node]
		switch e.Kind {
		case Send:
			c[e.Node]++
			at[e.Msg] = append([]uint64(nil), c...)
		case Recv:
			for k, v := range at[e.Msg] {
				c[k] = max(c[k], v)
			}
			c[e.Node]++
		}
		e.VC = DenseVC(append([]uint64(nil), c...))
	}
	svCheck(t, sparse, svWrite(t, sparse))

	// Recorded clocks naming events that do not exist are replaced too.
	bogus := svSample()
	for i := range bogus.Events {
		vc := []uint64{0, 0, 0}
		if e := &bogus.Events[i]; e.Kind.IsProcess() {
			vc[e.Node] = 1
		}
		bogus.Events[i].VC = DenseVC(vc)
	}
	svCheck(t, bogus, svWrite(t, bogus))
}

func TestShiVizText(t *testing.T) {
	tr := &Trace{Header: Header{Format: FormatName, Nodes: 2}, Events: []Event{
		{Index: 0, Node: 0, Kind: Output, Peer: -1, Label: "two\nlines\r\u2028\u2029\x00 and \xff"},
		{Index: 1, Node: 1, Kind: Output, Peer: -1, Label: `p9 {"p9":1}`},
		{Index: 2, Node: 1, Kind: Send, Msg: 4, Peer: 0},
		{Index: 3, Node: 0, Kind: Drop, Msg: 4, Peer: 1, Reason: "loss"},
		{Index: 4, Node: 1, Kind: Dup, Msg: 4, Peer: 0},
		{Index: 5, Node: 1, Kind: Dup, Msg: 4, Peer: 0},
		{Index: 6, Node: 0, Kind: Drop, Msg: 4, Peer: 1, Reason: "loss"},
		{Index: 7, Node: 0, Kind: Drop, Msg: 4, Peer: 1, Reason: "crashed"},
	}}
	log := svWrite(t, tr)
	entries := svCheck(t, tr, log)
	if got, want := entries[0].event, `output two\u000alines\u000d\u2028\u2029\u0000 and `+"\ufffd (t=0ns)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := entries[2].event, "send to p0 (t=0ns, msg 4, duplicated 2 times, dropped 3 times: loss, crashed)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(entries) != 3 || entries[1].host != "p1" {
		t.Errorf("entries %+v", entries)
	}
}

func TestShiVizEdgeCases(t *testing.T) {
	// No process events: just the two header lines.
	if got := svWrite(t, &Trace{Header: Header{Nodes: 2}}); got != ShiVizRegexp+"\n\n" {
		t.Errorf("empty trace: %q", got)
	}
	// Processes that never act, and process numbers with gaps.
	tr := &Trace{Events: []Event{
		{Index: 0, Node: 7, Kind: Send, Msg: 1, Peer: 3},
		{Index: 1, Node: 3, Kind: Recv, Msg: 1, Peer: 7},
		{Index: 2, Node: 3, Kind: Recv, Msg: 99, Peer: 5}, // its send is not in the trace
	}}
	svCheck(t, tr, svWrite(t, tr))

	bad := &Trace{Events: []Event{{Node: -2, Kind: Start}}}
	if err := WriteShiViz(&bytes.Buffer{}, bad); err == nil {
		t.Errorf("negative node accepted")
	}
	if err := WriteShiViz(&txFailWriter{n: 1000}, txRandomTrace(1, 3, 500, false)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("write error: %v", err)
	}
}

// TestShiVizExecutions checks a log of several runs as ShiViz reads one
// with its "multiple executions": the second line is ShiVizDelimiter, the
// lines it matches split the log, each names its execution (the runs'
// algorithms, made unique), and each execution is a valid log of its run
// on its own — one entry per process event, ShiViz's clock rules, the
// run's causality — which is what ShiViz's pairwise diff compares.
func TestShiVizExecutions(t *testing.T) {
	a, b, c := svSample(), svgRATrace(4, 1), svSample()
	a.Header.Algo, b.Header.Algo, c.Header.Algo = "basic", "total-sequencer", "basic"
	var buf bytes.Buffer
	n, err := WriteShiVizExecutions(&buf, a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	if strings.TrimSuffix(lines[0], "\n") != ShiVizRegexp || strings.TrimSuffix(lines[1], "\n") != ShiVizDelimiter {
		t.Fatalf("first lines %q, want the regexp and the delimiter", lines[:2])
	}
	delim := regexp.MustCompile(strings.ReplaceAll(ShiVizDelimiter, "(?<", "(?P<"))
	var names, bodies []string
	for _, l := range lines[2:] {
		if m := delim.FindStringSubmatch(strings.TrimSuffix(l, "\n")); m != nil {
			names = append(names, m[delim.SubexpIndex("trace")])
			bodies = append(bodies, "")
			continue
		}
		if len(bodies) == 0 {
			t.Fatalf("line %q before the first execution's name", l)
		}
		bodies[len(bodies)-1] += l
	}
	if want := []string{"basic", "total-sequencer", "run 3"}; !slices.Equal(names, want) {
		t.Fatalf("executions %q, want %q", names, want)
	}
	entries := 0
	for k, tr := range []*Trace{a, b, c} {
		entries += len(svCheck(t, tr, ShiVizRegexp+"\n\n"+bodies[k]))
	}
	if entries != n {
		t.Errorf("%d entries in the executions, WriteShiVizExecutions says %d", entries, n)
	}
}
