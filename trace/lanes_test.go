package trace

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var rewriteJoined = flag.Bool("rewrite", false, "rewrite testdata/joined.jsonl from joinedTrace")

// joinedFile is joinedTrace as a file, for the viewer's tests in the
// browser (cohort view testdata/joined.jsonl).
const joinedFile = "testdata/joined.jsonl"

// joinedTrace is what a live cluster records when founders 1 and 2 (0
// has left) take in a member that joins as 60000: an open trace whose
// IDs are far apart, stamped with wall-clock times, its vector clocks
// keyed by process ID.
func joinedTrace() *Trace {
	const base = 1_764_125_216_000_000_000
	ev := []Event{
		{Node: 1, Kind: Start, Peer: -1},
		{Node: 2, Kind: Start, Peer: -1},
		{Node: 1, Kind: Send, Msg: 1, Peer: 2, Type: "ping"},
		{Node: 2, Kind: Recv, Msg: 1, Peer: 1, Type: "ping"},
		{Node: 60000, Kind: Join, Peer: -1},
		{Node: 60000, Kind: Send, Msg: 2, Peer: 1, Type: "hello"},
		{Node: 1, Kind: Recv, Msg: 2, Peer: 60000, Type: "hello"},
		{Node: 2, Kind: Send, Msg: 3, Peer: 60000, Type: "ping"},
		{Node: 60000, Kind: Recv, Msg: 3, Peer: 2, Type: "ping"},
	}
	tr := &Trace{Header: Header{Format: FormatName, Nodes: 3, IDs: MaxIDs, Family: "members", Algo: "join"}}
	clocks := map[int32]map[int]uint64{}
	sent := map[uint64]map[int]uint64{}
	for i, e := range ev {
		e.Index, e.Time = i, base+int64(i+1)*1e6
		e.Local = e.Time
		c := clocks[e.Node]
		if c == nil {
			c = map[int]uint64{}
			clocks[e.Node] = c
		}
		if e.Kind == Recv {
			for p, x := range sent[e.Msg] {
				c[p] = max(c[p], x)
			}
		}
		c[int(e.Node)]++
		var ids []int
		var xs []uint64
		var lamport uint64
		for p, x := range c {
			ids, xs = append(ids, p), append(xs, x)
			lamport += x
		}
		e.VC, e.Lamport = SparseVC(ids, xs), lamport
		if e.Kind == Send {
			sent[e.Msg] = maps.Clone(c)
		}
		tr.Events = append(tr.Events, e)
	}
	return tr
}

// TestJoinedFixture checks that joinedFile is joinedTrace, written.
func TestJoinedFixture(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, joinedTrace()); err != nil {
		t.Fatal(err)
	}
	if *rewriteJoined {
		if err := os.WriteFile(joinedFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if old, err := os.ReadFile(joinedFile); err != nil || !bytes.Equal(old, b.Bytes()) {
		t.Errorf("%s is not joinedTrace (%v); go test ./trace -run TestJoinedFixture -rewrite", joinedFile, err)
	}
}

// TestLanes checks which processes get a lane: every one an event names
// and, in a trace of a fixed set of processes, every one its header
// counts; in a trace that processes join, only those named, however far
// apart their IDs — also once written and read back, when Read has
// raised the header's count to 60001.
func TestLanes(t *testing.T) {
	joined := joinedTrace()
	var buf bytes.Buffer
	if err := Write(&buf, joined); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.Header.Nodes != 60001 {
		t.Fatalf("read back: nodes = %d, want 60001", back.Header.Nodes)
	}
	for _, c := range []struct {
		name string
		tr   *Trace
		want []int32
	}{
		{"closed", svgLine(3, Event{Node: 0, Kind: Send, Msg: 1, Peer: 1}, Event{Node: 1, Kind: Recv, Msg: 1, Peer: 0}), []int32{0, 1, 2}},
		{"closed, a peer past the header", svgLine(2, Event{Node: 0, Kind: Send, Msg: 1, Peer: 5}), []int32{0, 1, 5}},
		{"closed, empty", &Trace{Header: Header{Format: FormatName, Nodes: 1}}, []int32{0}},
		{"open, empty", &Trace{Header: Header{Format: FormatName, Nodes: 1, IDs: 8}}, nil},
		{"joined", joined, []int32{1, 2, 60000}},
		{"joined, read back", back, []int32{1, 2, 60000}},
	} {
		if got := c.tr.Lanes(); !slices.Equal(got, c.want) {
			t.Errorf("%s: lanes %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSVGLanesOfJoinedTrace checks that the space-time diagram of a live
// trace naming processes 1, 2 and 60000 draws three lanes, in ID order,
// named after their IDs, each message between its own processes' lanes,
// on an axis from the run's first event; and that its ShiViz log names
// the same three hosts.
func TestSVGLanesOfJoinedTrace(t *testing.T) {
	tr := joinedTrace()
	doc := svgParse(t, svgRender(t, tr, SVGOptions{}))
	var names []string
	laneY := map[string]string{}
	for _, n := range doc.find("proc-name") {
		names = append(names, n.text)
	}
	for _, l := range doc.find("proc") {
		laneY["p"+l.attr["data-p"]] = l.attr["y1"]
	}
	if want := []string{"p1", "p2", "p60000"}; !slices.Equal(names, want) {
		t.Fatalf("lanes %q, want %q", names, want)
	}
	var ys []float64
	for _, p := range names {
		y, err := strconv.ParseFloat(laneY[p], 64)
		if err != nil {
			t.Fatalf("lane %s at y=%q", p, laneY[p])
		}
		ys = append(ys, y)
	}
	if !slices.IsSorted(ys) || ys[0] == ys[1] || ys[1] == ys[2] {
		t.Errorf("lanes at y=%v, want them top to bottom in ID order", ys)
	}
	if info := doc.find("info"); len(info) == 0 || !strings.Contains(info[0].text, "3 processes") {
		t.Errorf("header line %v, want it to say 3 processes", info)
	}
	// Each arrow runs between its sender's and its receiver's lanes.
	msgs := doc.find("msg")
	if len(msgs) != 3 {
		t.Fatalf("%d arrows, want 3", len(msgs))
	}
	for _, m := range msgs {
		r, _ := strconv.Atoi(m.attr["data-recv"])
		s, _ := strconv.Atoi(m.attr["data-send"])
		line := m.children[1]
		from, to := "p"+strconv.Itoa(int(tr.Events[s].Node)), "p"+strconv.Itoa(int(tr.Events[r].Node))
		if line.attr["y1"] != laneY[from] || line.attr["y2"] != laneY[to] {
			t.Errorf("message #%d→#%d drawn from y=%s to y=%s; want %s's lane (%s) to %s's (%s)",
				s, r, line.attr["y1"], line.attr["y2"], from, laneY[from], to, laneY[to])
		}
	}
	if c := doc.find("axis-caption"); len(c) != 1 || !strings.Contains(c[0].text, "since the first event") {
		t.Errorf("axis caption %v, want the time since the first event", c)
	}
	hosts := map[string]bool{}
	for _, e := range svCheck(t, tr, svWrite(t, tr)) {
		hosts[e.host] = true
	}
	if len(hosts) != 3 || !hosts["p1"] || !hosts["p2"] || !hosts["p60000"] {
		t.Errorf("ShiViz hosts %v, want p1, p2, p60000", hosts)
	}
}
