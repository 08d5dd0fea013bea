package trace

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var svgOut = flag.String("svgout", "", "write the example diagrams and their traces to this directory")

// svgRA is a small Ricart-Agrawala run to draw: requests broadcast to all,
// OKs deferred by the higher-priority requester, a duplicated OK, a crash
// during which messages are lost, and a retry once the crashed process is
// back.
type svgRA struct {
	rng      *rand.Rand
	tr       Trace
	now      int64
	acts     []svgAct
	seq      int
	nextMsg  uint64
	lamport  []uint64
	vc       [][]uint64
	up       []bool
	req      []bool
	inCS     []bool
	ts       []uint64
	okFrom   []map[int32]bool
	deferred [][]int32
	dupDone  bool
}

type svgAct struct {
	at  int64
	seq int
	do  func()
}

func (s *svgRA) after(d int64, f func()) {
	s.seq++
	s.acts = append(s.acts, svgAct{s.now + d, s.seq, f})
}

func (s *svgRA) emit(e Event, merge []uint64) Event {
	e.Index, e.Time, e.Local = len(s.tr.Events), s.now, s.now+int64(e.Node)*1700
	if e.Kind.IsProcess() {
		p := e.Node
		if merge != nil {
			for k, v := range merge {
				s.vc[p][k] = max(s.vc[p][k], v)
			}
		}
		s.lamport[p]++
		s.vc[p][p]++
		e.Lamport = s.lamport[p]
		e.VC = DenseVC(slices.Clone(s.vc[p]))
	}
	s.tr.Events = append(s.tr.Events, e)
	return e
}

func (s *svgRA) send(p, q int32, typ, label string, reqTS uint64) {
	s.nextMsg++
	id := s.nextMsg
	e := s.emit(Event{Node: p, Kind: Send, Msg: id, Peer: q, Type: typ, Label: label}, nil)
	lam, vc := e.Lamport, e.VC.Dense()
	deliver := func() {
		if !s.up[q] {
			s.emit(Event{Node: q, Kind: Drop, Msg: id, Peer: p, Type: typ, Reason: "receiver crashed"}, nil)
			return
		}
		s.lamport[q] = max(s.lamport[q], lam)
		s.emit(Event{Node: q, Kind: Recv, Msg: id, Peer: p, Type: typ, Label: label}, vc)
		s.handle(q, p, typ, reqTS)
	}
	s.after(300_000+s.rng.Int64N(1_500_000), deliver)
	if typ == "OK" && !s.dupDone && p == 1 {
		s.dupDone = true
		s.emit(Event{Node: p, Kind: Dup, Msg: id, Peer: q, Type: typ}, nil)
		s.after(2_600_000, deliver)
	}
}

func (s *svgRA) request(p int32) {
	s.emit(Event{Node: p, Kind: Input, Peer: -1, Type: "request", Data: []byte(`{}`)}, nil)
	s.req[p], s.ts[p], s.okFrom[p] = true, s.lamport[p]+1, map[int32]bool{}
	for q := range int32(len(s.up)) {
		if q != p {
			s.send(p, q, "REQ", fmt.Sprintf("REQ(ts=%d)", s.ts[p]), s.ts[p])
		}
	}
	s.after(6_000_000, func() { s.retry(p) })
}

func (s *svgRA) retry(p int32) {
	if !s.req[p] || !s.up[p] {
		return
	}
	s.emit(Event{Node: p, Kind: Timer, Peer: -1, Type: "retry"}, nil)
	for q := range int32(len(s.up)) {
		if q != p && !s.okFrom[p][q] {
			s.send(p, q, "REQ", fmt.Sprintf("REQ(ts=%d)", s.ts[p]), s.ts[p])
		}
	}
	s.after(6_000_000, func() { s.retry(p) })
}

func (s *svgRA) handle(p, from int32, typ string, ts uint64) {
	switch typ {
	case "REQ":
		mine := s.req[p] || s.inCS[p]
		if mine && (s.inCS[p] || s.ts[p] < ts || s.ts[p] == ts && p < from) {
			s.deferred[p] = append(s.deferred[p], from)
			return
		}
		s.send(p, from, "OK", "OK", 0)
	case "OK":
		if !s.req[p] || s.okFrom[p][from] {
			return
		}
		s.okFrom[p][from] = true
		if len(s.okFrom[p]) == len(s.up)-1 {
			s.req[p], s.inCS[p] = false, true
			s.emit(Event{Node: p, Kind: Output, Peer: -1, Type: "enter", Label: "enter"}, nil)
			s.after(900_000, func() {
				s.emit(Event{Node: p, Kind: Timer, Peer: -1, Type: "cs-done"}, nil)
				s.inCS[p] = false
				s.emit(Event{Node: p, Kind: Output, Peer: -1, Type: "exit", Label: "exit"}, nil)
				for _, q := range s.deferred[p] {
					s.send(p, q, "OK", "OK", 0)
				}
				s.deferred[p] = nil
			})
		}
	}
}

func svgRATrace(n int, seed uint64) *Trace {
	s := &svgRA{rng: rand.New(rand.NewPCG(seed, 7))}
	s.tr.Header = Header{Format: FormatName, Nodes: n, Family: "mutex", Algo: "ricart-agrawala", Seed: seed}
	s.lamport = make([]uint64, n)
	s.vc = make([][]uint64, n)
	s.up, s.req, s.inCS = make([]bool, n), make([]bool, n), make([]bool, n)
	s.ts, s.okFrom, s.deferred = make([]uint64, n), make([]map[int32]bool, n), make([][]int32, n)
	for p := range n {
		s.vc[p] = make([]uint64, n)
		s.up[p] = true
		s.emit(Event{Node: int32(p), Kind: Start, Peer: -1}, nil)
	}
	for p := range int32(n) {
		at := 500_000 + s.rng.Int64N(3_000_000)
		s.after(at, func() { s.request(p) })
	}
	last := int32(n - 1)
	s.after(9_000_000, func() {
		s.emit(Event{Node: last, Kind: Crash, Peer: -1}, nil)
		s.up[last], s.req[last], s.inCS[last], s.deferred[last] = false, false, false, nil
	})
	s.after(9_500_000, func() { s.request(0) })
	s.after(14_000_000, func() {
		s.emit(Event{Node: last, Kind: Recover, Peer: -1}, nil)
		s.up[last] = true
	})
	for len(s.acts) > 0 && len(s.tr.Events) < 2000 {
		k := 0
		for i, a := range s.acts {
			if a.at < s.acts[k].at || a.at == s.acts[k].at && a.seq < s.acts[k].seq {
				k = i
			}
		}
		a := s.acts[k]
		s.acts = slices.Delete(s.acts, k, k+1)
		s.now = a.at
		a.do()
	}
	return &s.tr
}

// svgDoc is a parsed diagram.
type svgDoc struct {
	root  *svgNode
	count map[string]int // elements by class (each class of the attribute)
}

type svgNode struct {
	name     string
	attr     map[string]string
	text     string
	children []*svgNode
}

func svgParse(t *testing.T, b []byte) *svgDoc {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	doc := &svgDoc{count: map[string]int{}}
	var stack []*svgNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &svgNode{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			for _, c := range strings.Fields(n.attr["class"]) {
				doc.count[c]++
			}
			if len(stack) == 0 {
				if doc.root != nil {
					t.Fatalf("two root elements")
				}
				doc.root = n
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if doc.root == nil || doc.root.name != "svg" {
		t.Fatalf("root element is not svg")
	}
	return doc
}

// find returns the elements with the given class.
func (d *svgDoc) find(class string) []*svgNode {
	var out []*svgNode
	var walk func(n *svgNode)
	walk = func(n *svgNode) {
		if slices.Contains(strings.Fields(n.attr["class"]), class) {
			out = append(out, n)
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(d.root)
	return out
}

// title is the tooltip of an element.
func (n *svgNode) title() string {
	for _, c := range n.children {
		if c.name == "title" {
			return c.text
		}
	}
	return ""
}

func svgRender(t *testing.T, tr *Trace, opt SVGOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSVG(&b, tr, opt); err != nil {
		t.Fatalf("WriteSVG: %v", err)
	}
	return b.Bytes()
}

// svgSample is svSample with a message still in flight at the end and one
// sent to oneself.
func svgSample() *Trace {
	tr := svSample()
	tr.Events = append(tr.Events,
		Event{Index: 16, Time: 8e6, Node: 2, Kind: Send, Msg: 4, Peer: 0, Type: "LATE"},
		Event{Index: 17, Time: 8e6, Node: 1, Kind: Send, Msg: 5, Peer: 1, Type: "SELF"},
		Event{Index: 18, Time: 9e6, Node: 1, Kind: Recv, Msg: 5, Peer: 1, Type: "SELF"},
	)
	return tr
}

func TestSVGSample(t *testing.T) {
	tr := svgSample()
	b := svgRender(t, tr, SVGOptions{Title: "sample", Mark: []int{8, 13, 7}})
	doc := svgParse(t, b)

	if got := doc.count["proc"]; got != 3 {
		t.Errorf("%d process lines, want 3", got)
	}
	// Messages 1 (delivered twice), 3 and 5 (to itself): four arrows.
	if got := doc.count["msg"]; got != 4 {
		t.Errorf("%d message arrows, want 4", got)
	}
	if got := doc.count["dup"]; got != 1 {
		t.Errorf("%d duplicate deliveries, want 1", got)
	}
	drops := doc.find("drop")
	if len(drops) != 1 || !strings.Contains(drops[0].title(), "dropped: partition") {
		t.Errorf("drops %d, tooltip %q", len(drops), drops[0].title())
	}
	if got := doc.count["pending"]; got != 1 {
		t.Errorf("%d messages in flight, want 1", got)
	}
	crashed := doc.find("crashed")
	if len(crashed) != 1 || !strings.Contains(crashed[0].title(), "p0 crashed at 7.000ms, recovered at 7.500ms") {
		t.Errorf("crashed spans: %d", len(crashed))
	}
	for class, want := range map[string]int{"output": 1, "input": 1, "timer": 1, "start": 3, "crash": 1, "recover": 1} {
		if got := doc.count[class]; got != want {
			t.Errorf("%d elements of class %s, want %d", got, class, want)
		}
	}

	// Marked: the first receipt of message 1 (its arrow and its dot), the
	// output and the drop.
	marked := doc.find("marked")
	var what []string
	for _, n := range marked {
		what = append(what, n.attr["class"]+" "+n.attr["data-i"]+n.attr["data-recv"]+n.attr["data-drop"])
	}
	slices.Sort(what)
	want := []string{"drop drop-partition marked 7", "ev marked 8", "msg marked 8", "net marked 7", "output marked 13"}
	if !slices.Equal(what, want) {
		t.Errorf("marked elements %q, want %q", what, want)
	}
	for _, n := range marked {
		if !bytes.Contains(b, []byte(svgMark)) {
			t.Errorf("%s not drawn in red", n.attr["class"])
		}
	}
	if !bytes.Contains(b, []byte(`stroke="`+svgMark+`" stroke-width="2.6"`)) {
		t.Errorf("no thick red stroke")
	}
	if doc.count["title"] != 1 || !strings.Contains(string(b), ">sample</text>") {
		t.Errorf("title missing")
	}
	if doc.count["truncated"] != 0 {
		t.Errorf("not truncated, but says so")
	}
	if got := doc.count["msg-label"]; got < 2 {
		t.Errorf("%d message labels", got)
	}
	if got := len(doc.find("output-label")); got != 1 {
		t.Errorf("%d output labels", got)
	}
}

func TestSVGEscaping(t *testing.T) {
	nasty := `<&">` + "'\x00\x1b\xff\n]]>"
	tr := &Trace{Header: Header{Format: FormatName, Nodes: 2, Algo: nasty, Family: "<x>"}, Events: []Event{
		{Index: 0, Time: 0, Node: 0, Kind: Send, Msg: 1, Peer: 1, Type: nasty, Label: nasty},
		{Index: 1, Time: 10, Node: 1, Kind: Recv, Msg: 1, Peer: 0, Type: nasty, Label: nasty},
		{Index: 2, Time: 20, Node: 1, Kind: Output, Peer: -1, Type: nasty, Label: nasty},
		{Index: 3, Time: 30, Node: 0, Kind: Send, Msg: 2, Peer: 1, Label: nasty},
		{Index: 4, Time: 40, Node: 1, Kind: Drop, Msg: 2, Peer: 0, Reason: nasty},
	}}
	for _, title := range []string{"", nasty} {
		b := svgRender(t, tr, SVGOptions{Title: title})
		doc := svgParse(t, b)
		if bytes.Contains(b, []byte(`<&">`)) {
			t.Errorf("raw label in output")
		}
		labels := doc.find("output-label")
		if len(labels) != 1 || labels[0].text != "<&\">'\ufffd\ufffd\ufffd\n]]>" {
			t.Errorf("output labels: %d", len(labels))
		}
		drop := doc.find("drop")
		if len(drop) != 1 || !strings.Contains(drop[0].title(), "dropped: <&\">'") {
			t.Errorf("drop tooltip: %q", drop[0].title())
		}
	}
}

func TestSVGTruncated(t *testing.T) {
	tr := txRandomTrace(5, 5, 400, false)
	b := svgRender(t, tr, SVGOptions{MaxEvents: 50})
	doc := svgParse(t, b)
	notes := doc.find("truncated")
	if len(notes) != 1 || !strings.Contains(notes[0].text, fmt.Sprintf("first 50 of %d events", len(tr.Events))) {
		t.Errorf("truncation note: %v", notes)
	}
	for _, n := range doc.find("ev") {
		var i int
		fmt.Sscan(n.attr["data-i"], &i)
		if i >= 50 {
			t.Errorf("event %d drawn", i)
		}
	}

	// The default cap.
	big := txRandomTrace(6, 8, DefaultSVGMaxEvents+200, false)
	doc = svgParse(t, svgRender(t, big, SVGOptions{}))
	if len(doc.find("truncated")) != 1 {
		t.Errorf("no truncation note at %d events", len(big.Events))
	}
	svgCheckLabelsApart(t, doc)
}

// svgCheckLabelsApart checks that no two labels drawn overlap (by the
// estimated size of their text).
func svgCheckLabelsApart(t *testing.T, doc *svgDoc) {
	t.Helper()
	type box struct{ x0, y0, x1, y1 float64 }
	var boxes []box
	for _, class := range []string{"msg-label", "output-label"} {
		for _, n := range doc.find(class) {
			var x, y, size float64
			fmt.Sscan(n.attr["x"], &x)
			fmt.Sscan(n.attr["y"], &y)
			fmt.Sscan(n.attr["font-size"], &size)
			w := svgTextWidth(n.text, size)
			boxes = append(boxes, box{x - w/2 + 0.5, y - size*0.8 + 0.5, x + w/2 - 0.5, y - 0.5})
		}
	}
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
				t.Fatalf("labels overlap: %v and %v", a, b)
			}
		}
	}
}

// TestSVGCounts checks the diagrams of random runs: one line per process,
// one arrow per receipt, one dropped arrow per loss.
func TestSVGCounts(t *testing.T) {
	for seed := range uint64(12) {
		n := 1 + int(seed*3%31)
		tr := txRandomTrace(seed, n, 250, seed%2 == 0)
		b := svgRender(t, tr, SVGOptions{Mark: []int{3, 40, 1000}})
		doc := svgParse(t, b)
		var recvs, drops, crashes int
		for _, e := range tr.Events {
			switch e.Kind {
			case Recv:
				recvs++
			case Drop:
				drops++
			case Crash:
				crashes++
			}
		}
		if doc.count["proc"] != n || doc.count["proc-name"] != n {
			t.Errorf("seed %d: %d process lines, want %d", seed, doc.count["proc"], n)
		}
		if doc.count["msg"] != recvs || doc.count["drop"] != drops {
			t.Errorf("seed %d: %d arrows and %d drops, want %d and %d", seed, doc.count["msg"], doc.count["drop"], recvs, drops)
		}
		if doc.count["crashed"] != crashes {
			t.Errorf("seed %d: %d crashed spans, want %d", seed, doc.count["crashed"], crashes)
		}
		if again := svgRender(t, tr, SVGOptions{Mark: []int{3, 40, 1000}}); !bytes.Equal(b, again) {
			t.Errorf("seed %d: output not deterministic", seed)
		}
	}
}

func TestSVGEdgeCases(t *testing.T) {
	// An empty trace, a trace of one instant, and a receipt without its send.
	for _, tr := range []*Trace{
		{Header: Header{Nodes: 3}},
		{},
		{Events: []Event{{Node: 0, Kind: Start, Peer: -1}, {Index: 1, Node: 1, Kind: Start, Peer: -1}}},
		{Events: []Event{{Time: 5e9, Node: 2, Kind: Recv, Msg: 8, Peer: 0}, {Index: 1, Time: 6e9, Node: 2, Kind: Crash, Peer: -1}}},
	} {
		doc := svgParse(t, svgRender(t, tr, SVGOptions{Width: 500}))
		if doc.root.attr["width"] != "500" {
			t.Errorf("width %q", doc.root.attr["width"])
		}
	}
	if err := WriteSVG(io.Discard, &Trace{Events: []Event{{Node: -1, Kind: Start}}}, SVGOptions{}); err == nil {
		t.Errorf("negative node accepted")
	}
	if err := WriteSVG(&txFailWriter{n: 10}, svSample(), SVGOptions{}); err == nil {
		t.Errorf("write error lost")
	}
	// A header promising absurdly many processes is not believed: only
	// the process with events has a lane.
	huge := &Trace{Header: Header{Nodes: 1 << 40}, Events: []Event{{Node: 1, Kind: Start, Peer: -1}}}
	if doc := svgParse(t, svgRender(t, huge, SVGOptions{})); doc.count["proc"] != 1 || doc.find("proc-name")[0].text != "p1" {
		t.Errorf("%d rows", doc.count["proc"])
	}
}

func TestSVGTicks(t *testing.T) {
	for _, tc := range []struct {
		ns, step int64
		want     string
	}{
		{0, 1000, "0"}, {500_000, 500_000, "500µs"}, {1_500_000, 500_000, "1.5ms"}, {2_000_000, 1_000_000, "2ms"},
		{20e9, 5e9, "20s"}, {350, 50, "350ns"}, {5_000_020, 20, "5.00002ms"}, {1_200, 200, "1.2µs"},
	} {
		if got := svgTick(tc.ns, tc.step); got != tc.want {
			t.Errorf("svgTick(%d, %d) = %q, want %q", tc.ns, tc.step, got, tc.want)
		}
	}
}

// TestSVGExamples renders example diagrams; with -svgout they are written
// out to be looked at.
func TestSVGExamples(t *testing.T) {
	examples := map[string]struct {
		tr  *Trace
		opt SVGOptions
	}{
		"sample":     {svgSample(), SVGOptions{Title: "sample", Mark: []int{8, 13, 7}}},
		"ra4":        {svgRATrace(4, 1), SVGOptions{}},
		"ra4-marked": {svgRATrace(4, 1), SVGOptions{Title: "mutual exclusion violated", Mark: []int{}}},
		"ra8":        {svgRATrace(8, 2), SVGOptions{}},
		"random30":   {txRandomTrace(11, 30, 260, false), SVGOptions{Title: "30 processes"}},
	}
	// Mark an enter and the receipt that allowed it.
	ex := examples["ra4-marked"]
	for i, e := range ex.tr.Events {
		if e.Kind == Output && e.Type == "enter" {
			ex.opt.Mark = append(ex.opt.Mark, i, i-1)
			if len(ex.opt.Mark) == 4 {
				break
			}
		}
	}
	examples["ra4-marked"] = ex
	for name, ex := range examples {
		b := svgRender(t, ex.tr, ex.opt)
		svgParse(t, b)
		if *svgOut == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(*svgOut, name+".svg"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var jl bytes.Buffer
		if err := Write(&jl, ex.tr); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*svgOut, name+".jsonl"), jl.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSVGSpansAndQuietOutputs(t *testing.T) {
	tr := &Trace{Header: Header{Nodes: 2}}
	add := func(node int32, kind Kind, typ string) {
		tr.Events = append(tr.Events, Event{Index: len(tr.Events), Time: int64(len(tr.Events)+1) * 1e6, Node: node, Kind: kind, Type: typ, Peer: -1})
	}
	add(0, Output, "waiting")
	add(0, Output, "enter")
	add(0, Output, "exit")
	add(1, Output, "enter")
	add(1, Crash, "")
	add(0, Output, "enter") // still inside at the end
	var b strings.Builder
	opt := SVGOptions{Quiet: []string{"waiting"}, Spans: []Span{{Open: "enter", Close: "exit", Label: "critical section"}}}
	if err := WriteSVG(&b, tr, opt); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, `class="span span-0"`); n != 3 {
		t.Errorf("%d spans, want 3 (closed by exit, by a crash, and by the end)", n)
	}
	for _, want := range []string{"from 2.000ms to 3.000ms", "(crashed)", "to the end", ">critical section</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(svg, ">waiting</text>") {
		t.Error("a quiet output got a label")
	}
	if n := strings.Count(svg, `class="output-label"`); n != 4 {
		t.Errorf("%d output labels, want 4 (every output but the quiet one)", n)
	}
}

// TestSVGCuts: the outputs of SVGOptions.Cut with the same label are one
// cut, drawn as one line through them (a process's second output of one
// cut is ignored); without the option no cut is drawn.
func TestSVGCuts(t *testing.T) {
	tr := &Trace{Header: Header{Nodes: 3}}
	add := func(node int32, label string) {
		tr.Events = append(tr.Events, Event{Index: len(tr.Events), Time: int64(len(tr.Events)+1) * 1e6, Node: node, Kind: Output, Type: "cut", Label: label, Peer: -1})
	}
	add(0, "cut p0#1")
	add(2, "cut p0#1")
	add(1, "cut p1#1")
	add(1, "cut p0#1")
	add(0, "cut p1#1")
	add(2, "cut p1#1")
	add(2, "cut p1#1") // a second output of p2 for p1#1: not a point of the cut
	var b strings.Builder
	if err := WriteSVG(&b, tr, SVGOptions{Cut: "cut", Quiet: []string{"cut"}}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, `class="cut"`); n != 2 {
		t.Fatalf("%d cuts drawn, want 2", n)
	}
	for _, want := range []string{
		"cut p0#1: p0 at 1.000ms (#0), p1 at 4.000ms (#3), p2 at 2.000ms (#1)",
		"cut p1#1: p0 at 5.000ms (#4), p1 at 3.000ms (#2), p2 at 6.000ms (#5)",
		">cut</text>", // the legend
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Errorf("not well-formed XML: %v", err)
	}
	b.Reset()
	if err := WriteSVG(&b, tr, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `class="cut"`) {
		t.Error("a cut drawn without SVGOptions.Cut")
	}
}
