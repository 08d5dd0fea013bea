package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgLine builds a trace from events given in order, numbering them and
// spacing them 1ms apart unless they carry a time.
func svgLine(nodes int, ev ...Event) *Trace {
	tr := &Trace{Header: Header{Format: FormatName, Nodes: nodes}}
	for i, e := range ev {
		e.Index = i
		if e.Time == 0 {
			e.Time = int64(i) * 1e6
		}
		if e.Kind != Send && e.Kind != Recv && e.Kind != Drop && e.Kind != Dup && e.Peer == 0 {
			e.Peer = -1
		}
		tr.Events = append(tr.Events, e)
	}
	return tr
}

// TestSVGTypesColoured checks that each message type has its own colour,
// assigned in order of first appearance, and a legend entry.
func TestSVGTypesColoured(t *testing.T) {
	tr := svgLine(2,
		Event{Node: 0, Kind: Send, Msg: 1, Peer: 1, Type: "PING"},
		Event{Node: 1, Kind: Recv, Msg: 1, Peer: 0, Type: "PING"},
		Event{Node: 1, Kind: Send, Msg: 2, Peer: 0, Type: "PONG"},
		Event{Node: 0, Kind: Recv, Msg: 2, Peer: 1, Type: "PONG"},
		Event{Node: 0, Kind: Send, Msg: 3, Peer: 1, Type: "PING"},
		Event{Node: 1, Kind: Recv, Msg: 3, Peer: 0, Type: "PING"},
	)
	doc := svgParse(t, svgRender(t, tr, SVGOptions{}))
	stroke := map[string]string{}
	for _, m := range doc.find("msg") {
		typ := "PING"
		if m.attr["data-recv"] == "3" {
			typ = "PONG"
		}
		c := m.children[1].attr["stroke"]
		if prev, ok := stroke[typ]; ok && prev != c {
			t.Errorf("%s drawn in %s and %s", typ, prev, c)
		}
		stroke[typ] = c
	}
	if stroke["PING"] != svgTypeColors[0] || stroke["PONG"] != svgTypeColors[1] {
		t.Errorf("colours %v, want PING %s and PONG %s", stroke, svgTypeColors[0], svgTypeColors[1])
	}
	var legend []string
	for _, g := range doc.find("legend-type") {
		legend = append(legend, g.children[1].text+"="+g.children[1].attr["fill"])
	}
	if want := []string{"PING=" + svgTypeColors[0], "PONG=" + svgTypeColors[1]}; !slices.Equal(legend, want) {
		t.Errorf("legend %q, want %q", legend, want)
	}
}

// TestSVGWideDiagram checks a diagram far wider than a screen: the process
// names are repeated along the lanes, and messages are labelled wherever
// there is room, however many there are.
func TestSVGWideDiagram(t *testing.T) {
	tr := txRandomTrace(21, 6, 1500, false)
	doc := svgParse(t, svgRender(t, tr, SVGOptions{}))
	var width float64
	fmt.Sscan(doc.root.attr["width"], &width)
	names := doc.find("lane-name")
	if width < 3*svgLaneNameEvery || len(names) < 6*2 {
		t.Fatalf("%d repeated names on a diagram %g pixels wide", len(names), width)
	}
	// Every lane is named within svgLaneNameEvery pixels of any point.
	xs := map[string][]float64{}
	for _, n := range names {
		var x float64
		fmt.Sscan(n.attr["x"], &x)
		xs[n.text] = append(xs[n.text], x)
	}
	for p := range 6 {
		got := xs[fmt.Sprintf("p%d", p)]
		if len(got) == 0 || got[len(got)-1] < width-svgLaneNameEvery-80 {
			t.Errorf("p%d named at %v on a diagram %g wide", p, got, width)
		}
	}
	msgs := len(doc.find("msg"))
	labels := len(doc.find("msg-label"))
	if msgs < 200 || labels < msgs/10 {
		t.Errorf("%d labels for %d messages", labels, msgs)
	}
	svgCheckLabelsApart(t, doc)
}

// TestSVGHeaderWrapped checks that a long title and the information line
// wrap within the picture instead of running off its right edge.
func TestSVGHeaderWrapped(t *testing.T) {
	title := strings.Repeat("a long title for a narrow picture ", 6)
	doc := svgParse(t, svgRender(t, svSample(), SVGOptions{Width: 400, Title: title}))
	lines := doc.find("title")
	if len(lines) < 3 {
		t.Fatalf("title on %d lines", len(lines))
	}
	var text []string
	for _, n := range append(lines, doc.find("info")...) {
		var x, size float64
		fmt.Sscan(n.attr["x"], &x)
		fmt.Sscan(n.attr["font-size"], &size)
		if x+svgTextWidth(n.text, size) > 400 {
			t.Errorf("header line %q runs past the edge", n.text)
		}
		text = append(text, n.text)
	}
	if got := strings.Join(text[:len(lines)], " "); got != strings.TrimSpace(title) {
		t.Errorf("title wrapped as %q", got)
	}
	var firstLane float64
	fmt.Sscan(doc.find("band")[0].attr["y"], &firstLane)
	var lastHead float64
	fmt.Sscan(doc.find("info")[len(doc.find("info"))-1].attr["y"], &lastHead)
	if firstLane <= lastHead {
		t.Errorf("the lanes start at %g, above the header's last line at %g", firstLane, lastHead)
	}
}

// TestSVGTruncatedHonestly checks a diagram cut short: it says which part
// of the run it shows, draws a message received after the cut as cut off
// (not in flight), and keeps the in-flight arrow for a message never
// received.
func TestSVGTruncatedHonestly(t *testing.T) {
	tr := svgLine(3,
		Event{Node: 0, Kind: Send, Msg: 1, Peer: 1, Type: "A"},
		Event{Node: 0, Kind: Send, Msg: 2, Peer: 2, Type: "B"}, // never received
		Event{Node: 1, Kind: Recv, Msg: 1, Peer: 0, Type: "A"},
		Event{Node: 0, Kind: Send, Msg: 3, Peer: 1, Type: "A"}, // received after the cut
		Event{Node: 2, Kind: Timer, Type: "tick"},
		Event{Node: 1, Kind: Recv, Msg: 3, Peer: 0, Type: "A"},
		Event{Node: 2, Kind: Timer, Type: "tick", Time: 16e6},
	)
	doc := svgParse(t, svgRender(t, tr, SVGOptions{MaxEvents: 5}))
	info := ""
	for _, n := range doc.find("info") {
		info += n.text + " "
	}
	if !strings.Contains(info, "shown: 0–4ms of 16ms") {
		t.Errorf("header %q does not say what is shown", info)
	}
	var pending, cut []string
	for _, n := range doc.find("pending") {
		pending = append(pending, n.attr["data-send"])
	}
	for _, n := range doc.find("cutoff") {
		cut = append(cut, n.attr["data-send"])
	}
	if !slices.Equal(pending, []string{"1"}) || !slices.Equal(cut, []string{"3"}) {
		t.Errorf("in flight %v and cut off %v, want [1] and [3]", pending, cut)
	}
	if n := doc.find("truncated"); len(n) != 1 || !strings.Contains(n[0].text, "0–4ms of 16ms") {
		t.Errorf("truncation note %v", n)
	}
}

// TestSVGViolations checks that every event of every violation is marked,
// a property the algorithm does not promise in the softer colour, and that
// the legend names each violation.
func TestSVGViolations(t *testing.T) {
	tr := svSample()
	opt := SVGOptions{Violations: []Violation{
		{Name: "ME1", Events: []int{8, 13}},
		{Name: "fifo", Events: []int{11, 12}, Unpromised: true},
		{Name: "late", Events: []int{14, 400}},
	}}
	doc := svgParse(t, svgRender(t, tr, opt))
	colour := map[string]string{}
	for _, n := range doc.find("marked") {
		if i := n.attr["data-i"]; i != "" {
			colour[i] = n.children[1].attr["stroke"]
		}
	}
	for i, want := range map[string]string{"8": svgMark, "13": svgMark, "11": svgSoft, "12": svgSoft, "14": svgMark} {
		if colour[i] != want {
			t.Errorf("event %s marked %q, want %q (marks: %v)", i, colour[i], want, colour)
		}
	}
	var legend []string
	for _, g := range doc.find("legend-violation") {
		legend = append(legend, g.children[2].text)
	}
	want := []string{"ME1 violated: 2 events", "fifo violated (not promised): 2 events", "late violated: 2 events"}
	if !slices.Equal(legend, want) {
		t.Errorf("legend %q, want %q", legend, want)
	}
	// Cut short: the marks past the cut are counted.
	doc = svgParse(t, svgRender(t, tr, SVGOptions{Violations: opt.Violations, MaxEvents: 10}))
	if n := doc.find("truncated"); len(n) != 1 || !strings.Contains(n[0].text, "4 marked events come later and are not drawn") {
		t.Errorf("truncation note %v", n)
	}
}

// TestSVGFaults checks that partitions and pauses are shaded, and that
// losses are drawn by cause.
func TestSVGFaults(t *testing.T) {
	tr := svgLine(3,
		Event{Node: 0, Kind: Send, Msg: 1, Peer: 1, Type: "A"},
		Event{Node: 1, Kind: Drop, Msg: 1, Peer: 0, Type: "A", Reason: "partition"},
		Event{Node: 0, Kind: Send, Msg: 2, Peer: 2, Type: "A"},
		Event{Node: 2, Kind: Drop, Msg: 2, Peer: 0, Type: "A", Reason: "loss"},
		Event{Node: 0, Kind: Send, Msg: 3, Peer: 2, Type: "A"},
		Event{Node: 2, Kind: Drop, Msg: 3, Peer: 0, Type: "A", Reason: "receiver crashed"},
	)
	opt := SVGOptions{Shades: []Shade{
		{Kind: "partition", From: 0, To: 2e6, Label: "{p0} | {p1,p2}"},
		{Kind: "pause", Nodes: []int32{2}, From: 3e6},
	}}
	doc := svgParse(t, svgRender(t, tr, opt))
	if a, b := len(doc.find("shade-partition")), len(doc.find("shade-pause")); a != 1 || b != 1 {
		t.Errorf("%d partitions and %d pauses shaded", a, b)
	}
	if p := doc.find("shade-partition"); len(p) == 1 && !strings.Contains(p[0].title(), "{p0} | {p1,p2} from 0ns to 2.000ms") {
		t.Errorf("partition tooltip %q", p[0].title())
	}
	for class, want := range map[string]string{"drop-partition": svgDropPart, "drop-loss": svgDrop, "drop-receiver-down": svgDropGone} {
		n := doc.find(class)
		if len(n) != 1 || n[0].children[1].attr["stroke"] != want {
			t.Errorf("%s: %d drawn", class, len(n))
		}
	}
}

// TestSVGWallClockAxis checks that a trace stamped with wall-clock times
// (a live node's) gets an axis from its first event, not from 1970.
func TestSVGWallClockAxis(t *testing.T) {
	const base = 1_764_125_216_000_000_000
	tr := svgLine(2,
		Event{Node: 0, Kind: Send, Msg: 1, Peer: 1, Type: "A", Time: base + 1e6},
		Event{Node: 1, Kind: Recv, Msg: 1, Peer: 0, Type: "A", Time: base + 3e6},
		Event{Node: 1, Kind: Timer, Type: "t", Time: base + 9e6},
	)
	doc := svgParse(t, svgRender(t, tr, SVGOptions{}))
	var ticks []string
	for _, g := range doc.find("axis") {
		for _, c := range g.children {
			if c.name == "text" && c.attr["class"] == "" {
				ticks = append(ticks, c.text)
			}
		}
	}
	if len(ticks) < 3 || ticks[0] != "0" || ticks[len(ticks)-1] != "8ms" {
		t.Errorf("ticks %q, want 0 … 8ms", ticks)
	}
	if c := doc.find("axis-caption"); len(c) != 1 || !strings.Contains(c[0].text, "since the first event, 2025-11-26 02:46:56.001 UTC") {
		t.Errorf("caption %v", c)
	}
}

// TestSVGWaitForCycles checks that a deadlock's wait-for cycle is drawn at
// the event that shows it, one arc per edge from the waiting process's
// lane to the lane of the one it waits for: a violation's edges (at the
// latest of their events) and a cycle declared by an output. Edges naming
// processes outside the diagram are left out; a cycle past the end of a
// truncated diagram is counted in its note.
func TestSVGWaitForCycles(t *testing.T) {
	tr := svgLine(3,
		Event{Node: 0, Kind: Output, Type: "waiting"},
		Event{Node: 1, Kind: Output, Type: "waiting"},
		Event{Node: 2, Kind: Output, Type: "waiting"},
		Event{Node: 2, Kind: Output, Type: "deadlock", Data: []byte(`{"cycle":[2,0,1]}`)},
		Event{Node: 0, Kind: Output, Type: "deadlock", Data: []byte(`{"cycle":[0]}`)}, // no edge
		Event{Node: 1, Kind: Output, Type: "deadlock", Data: []byte(`{"cycle":[1,2]}`)},
	)
	opt := SVGOptions{
		Declared: "deadlock",
		Violations: []Violation{
			{Name: "ME2", Events: []int{0, 1}, Unpromised: true, Edges: []WaitFor{{From: 0, To: 1, At: 1}, {From: 1, To: 0, At: 0}, {From: 1, To: 9, At: 1}}},
			{Name: "ME1", Events: []int{2}},
		},
	}
	b := svgRender(t, tr, opt)
	svgCheckAttrs(t, "wait-for", b)
	doc := svgParse(t, b)
	type edge struct {
		from, to  string
		x, y1, y2 float64
	}
	// The arcs of each cycle drawn, by the event they are drawn at.
	got := map[string][]edge{}
	var titles []string
	for _, g := range doc.find("waitfor") {
		titles = append(titles, g.title())
		for _, p := range g.children {
			if p.name != "path" || !strings.Contains(p.attr["class"], "waitfor-edge") {
				continue
			}
			var x1, y1, c1, c2, c3, c4, x2, y2 float64
			if _, err := fmt.Sscanf(p.attr["d"], "M%g,%g C%g,%g %g,%g %g,%g", &x1, &y1, &c1, &c2, &c3, &c4, &x2, &y2); err != nil || x1 != x2 {
				t.Errorf("arc %q: %v", p.attr["d"], err)
			}
			got[g.attr["data-at"]] = append(got[g.attr["data-at"]], edge{p.attr["data-from"], p.attr["data-to"], x1, y1, y2})
		}
	}
	want := map[string][]string{"1": {"0>1", "1>0"}, "3": {"2>0", "0>1", "1>2"}, "5": {"1>2", "2>1"}}
	if len(got) != len(want) {
		t.Errorf("cycles drawn at %v, want at events 1, 3 and 5", got)
	}
	lane := map[string]float64{}
	for _, n := range doc.find("proc") {
		lane[n.attr["data-p"]], _ = strconv.ParseFloat(n.attr["y1"], 64)
	}
	point := map[string]float64{}
	for _, n := range doc.find("output") {
		point[n.attr["data-i"]], _ = strconv.ParseFloat(n.children[1].attr["cx"], 64)
	}
	for at, w := range want {
		var names []string
		for _, e := range got[at] {
			names = append(names, e.from+">"+e.to)
			if e.x != point[at] || e.y1 != lane[e.from] || e.y2 != lane[e.to] {
				t.Errorf("event %s: arc %+v; want it at x=%v from y=%v to y=%v", at, e, point[at], lane[e.from], lane[e.to])
			}
		}
		if !slices.Equal(names, w) {
			t.Errorf("event %s: arcs %q, want %q", at, names, w)
		}
	}
	for _, want := range []string{"wait-for cycle (ME2) at 1.000ms, #1: p0 waits for p1, p1 waits for p0", "wait-for cycle (declared by p2) at 3.000ms, #3: p2 waits for p0, p0 waits for p1, p1 waits for p2"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no tooltip %q in %q", want, titles)
		}
	}
	legend := false
	for _, n := range doc.find("legend") {
		for _, c := range n.children {
			legend = legend || c.name == "text" && c.text == "wait-for cycle"
		}
	}
	if !legend {
		t.Error("the legend has no wait-for cycle")
	}

	// An OR model's wait-for graph (Graphs), drawn at its latest edge's
	// event, named as such.
	doc = svgParse(t, svgRender(t, tr, SVGOptions{Graphs: []WaitForGraph{{By: "declared by p2", Edges: []WaitFor{{From: 2, To: 0, At: 4}, {From: 2, To: 1, At: 4}, {From: 0, To: 1, At: 4}, {From: 1, To: 0, At: 4}}}}}))
	if g := doc.find("waitfor"); len(g) != 1 || g[0].attr["data-at"] != "4" ||
		g[0].title() != "OR wait-for graph (declared by p2) at 4.000ms, #4: p2 waits for p0, p2 waits for p1, p0 waits for p1, p1 waits for p0" {
		t.Errorf("OR graph drawn as %v", g)
	}

	// Without cycles, nothing of them: no arrowhead, no legend entry.
	if b := svgRender(t, tr, SVGOptions{}); strings.Contains(string(b), "cycle") {
		t.Error("a diagram without wait-for cycles mentions them")
	}
	// Cut short before the last declaration: it is counted, not drawn.
	doc = svgParse(t, svgRender(t, tr, SVGOptions{Declared: "deadlock", Violations: opt.Violations, MaxEvents: 5}))
	if n := len(doc.find("waitfor")); n != 2 {
		t.Errorf("truncated: %d cycles drawn, want 2", n)
	}
	if n := doc.find("truncated"); len(n) != 1 || !strings.Contains(n[0].text, "1 wait-for cycle comes later and is not drawn") {
		t.Errorf("truncation note %v", n)
	}
}
