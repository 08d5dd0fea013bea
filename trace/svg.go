package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SVGOptions controls WriteSVG.
type SVGOptions struct {
	// Width is the width of the picture in pixels; 0 chooses one from the
	// number of events.
	Width int
	// Mark lists indices of events to highlight in red, such as a checker's
	// counterexample.
	Mark []int
	// Title is drawn above the diagram; if empty, one is made from the
	// trace header.
	Title string
	// MaxEvents is how many events are drawn at most (the first ones of the
	// trace); 0 means DefaultSVGMaxEvents. A truncated diagram says so.
	MaxEvents int
	// Quiet lists output kinds drawn as small dots without a label (the
	// text stays in the tooltip): bookkeeping that would crowd the picture.
	Quiet []string
	// Spans are drawn as bars on a process's line, from each output of
	// kind Open to the next of kind Close (or a crash, or the end): the
	// critical sections of a mutual exclusion run, say.
	Spans []Span
	// Cut, if set, is an output kind that marks cuts: the outputs of that
	// kind with the same label (one per process: "cut p0#1") are the
	// frontier of one cut, drawn as a dashed line across the processes
	// through them — the recorded states of a snapshot.
	Cut string
	// Violations are checkers' counterexamples: every event of each is
	// marked, in red for a property the algorithm promises and in a
	// softer colour for one it does not (Unpromised), and the legend
	// names each.
	Violations []Violation
	// Shades are periods of faults the trace does not record as events
	// (partitions, pauses), shaded over the lanes they affect.
	Shades []Shade
	// Declared, if set, is an output kind whose data names a wait-for
	// cycle its process declared ({"cycle": [p, q, ...]}, p waiting for
	// q and the last for p: CMH's "deadlock"); each is drawn at the
	// declaration, as a violation's Edges are.
	Declared string
	// Graphs are wait-for graphs to draw as declared cycles are, each at
	// the latest event its edges name (At): the OR model's, whose
	// declarations name no cycle — a process is deadlocked when all it
	// reaches waits, and the graph drawn is what it reached.
	Graphs []WaitForGraph
}

// WaitForGraph is a wait-for graph to draw: its edges, and By, who
// showed it ("declared by p3").
type WaitForGraph struct {
	By    string
	Edges []WaitFor
}

// Violation is a checker's verdict to draw: its name and the events of its
// counterexample (trace indices).
type Violation struct {
	Name   string
	Events []int
	// Unpromised is true for a property the algorithm does not promise:
	// its violation is expected, drawn softer than a real failure.
	Unpromised bool
	// Edges, for a deadlock, are the edges of its wait-for cycle (the
	// checker's, in cycle order): drawn as arrows between the lanes at
	// the latest event that shows one.
	Edges []WaitFor
}

// WaitFor is an edge of a wait-for graph: process From waits for process
// To (for its reply, its vote, a resource it holds), as the trace's event
// At (an index) shows. The checkers' verdicts (check.Edge), the viewer and
// the SVG share it.
type WaitFor struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
	At   int   `json:"at"`
}

// svgCycle is a wait-for cycle as drawn: its edges at event at.
type svgCycle struct {
	at    int
	edges [][2]int32
	by    string // "ME2", "declared by p4"
	what  string // "wait-for cycle", "OR wait-for graph"
}

// Shade is a fault that lasts a while: a partition, or a paused process.
type Shade struct {
	Kind  string  // "partition", "pause", "slow"...: the legend's name
	Nodes []int32 // the processes affected; none means all
	// From and To are the fault's period (ns); To <= From means until the
	// end of the trace.
	From, To int64
	Label    string // for the tooltip: "{p0,p1} | {p2}"
}

// Span is a kind of interval between two outputs of one process.
type Span struct {
	Open, Close string // output kinds
	Label       string // for the legend and tooltips: "critical section"
}

// DefaultSVGMaxEvents is the number of events WriteSVG draws when
// SVGOptions.MaxEvents is 0.
const DefaultSVGMaxEvents = 5000

// Bounds of the drawing.
const (
	svgMaxRows      = 4096 // processes
	svgMaxWidth     = 20000
	svgMinPlotWidth = 560
	svgMaxTitle     = 400 // runes in a tooltip line
	svgMaxLabel     = 28  // runes in a label drawn in the diagram
)

// Colours.
const (
	svgInk      = "#333"
	svgMsg      = "#2f6aa8"
	svgDrop     = "#d97a0b" // lost by the network
	svgDropPart = "#8c564b" // lost to a partition
	svgDropGone = "#7f7f7f" // lost because the receiver was not up
	svgPending  = "#9aa3ad"
	svgOutput   = "#1e9e5a"
	svgInput    = "#8546b8"
	svgMark     = "#d62728" // a violated promise
	svgSoft     = "#e58fb8" // a violated property that was not promised
	svgCrashed  = "#dcdcdc"
	svgPause    = "#f3d36b"
	svgPartit   = "#b39ddb"
	svgCycleInk = "#c2185b" // a wait-for cycle
)

// svgTypeColors colour the messages by type, in the order the types first
// appear in the trace; the types past the last colour share svgMsgOther.
// None is red (marks), orange (losses) or grey (in flight).
var svgTypeColors = []string{"#2f6aa8", "#1b9e77", "#a6761d", "#17becf", "#7570b3", "#66a61e", "#1f3f8f", "#b8860b", "#6a3d9a", "#2e8b57"}

const svgMsgOther = "#5b6770"

// svgLaneNameEvery is the distance in pixels between repeated process
// names along a lane.
const svgLaneNameEvery = 700

// WriteSVG draws t as a space-time diagram: one horizontal line per process,
// true time from left to right with a time axis, an arrow from each send to
// each receipt of the message (two for a duplicated one), a dashed arrow
// that stops short with a ✕ for a dropped message and a grey one running
// off the right edge for a message still in flight at the end. Outputs are
// labelled green dots, inputs purple triangles, timers small ticks, starts
// small squares and crashes a ✕, after which the process's line is greyed
// out until it recovers. Events listed in opt.Mark, and the messages they
// send or receive, are drawn in red. A deadlock's wait-for cycle (a
// violation's Edges, or a cycle declared by an output of kind
// opt.Declared) is drawn as dashed arcs between the lanes at the event that
// shows it. Every element has a tooltip with the full events; message
// labels are also drawn when there are few messages.
//
// The output is a standalone SVG document that depends on nothing else;
// the same trace and options always give the same bytes.
func WriteSVG(w io.Writer, t *Trace, opt SVGOptions) error {
	d, err := newSVGDiagram(t, opt)
	if err != nil {
		return err
	}
	d.draw()
	_, err = w.Write(d.out)
	return err
}

// svgMessage is a message as drawn: its send and what became of it.
type svgMessage struct {
	send     int   // event index of the send; -1 if not in the trace
	recvs    []int // receipts
	drops    []int // losses
	dups     []int // Dup events
	from, to int32
}

type svgRect struct{ x0, y0, x1, y1 float64 }

type svgDiagram struct {
	opt    SVGOptions
	full   *Trace
	events []Event // the events drawn
	total  int     // events in the trace
	marked map[int]bool
	soft   map[int]bool // marked only by violations of unpromised properties
	hidden int          // marked events past the end of the drawing
	// cycles are the wait-for cycles drawn; hiddenCycles, those past the
	// end of the drawing.
	cycles       []svgCycle
	hiddenCycles int

	// Message types in order of first appearance, and each one's colour
	// index (past the palette: len(svgTypeColors), "other").
	types   []string
	typeIdx map[string]int
	// later are the messages drawn whose receipt or loss comes after the
	// last event drawn: cut off by the truncation, not in flight.
	later map[uint64]int64 // the time of the first receipt or loss
	// tEnd is the time of the last event of the whole trace.
	tEnd int64
	// origin is the time labelled 0 on the axis: 0, or the first event of
	// a trace stamped with wall-clock times.
	origin int64
	// headTitle and headInfo are the header's lines; headInline puts the
	// information on the title's line.
	headTitle, headInfo []string
	headInline          bool
	// laneAt are where the process names are repeated along the lanes.
	laneAt []svgLaneName

	// procs are the processes drawn, one per row from the top (Lanes);
	// rowOf is each one's row.
	procs       []int32
	rowOf       map[int32]int
	rows        int
	rowH        float64
	width       float64
	height      float64
	top         float64 // y of the first row's band
	x0, x1      float64 // x of the first and last times
	edge        float64 // right edge of the plot
	t0, t1      int64
	msgs        []*svgMessage // in order of first appearance
	byID        map[uint64]*svgMessage
	placed      map[[2]int][]svgRect // occupied label boxes by grid cell
	outLabels   map[int][2]float64   // where outputs' labels go
	title, info string

	out []byte
}

func newSVGDiagram(t *Trace, opt SVGOptions) (*svgDiagram, error) {
	d := &svgDiagram{
		opt:       opt,
		full:      t,
		total:     len(t.Events),
		marked:    map[int]bool{},
		soft:      map[int]bool{},
		typeIdx:   map[string]int{},
		later:     map[uint64]int64{},
		byID:      map[uint64]*svgMessage{},
		placed:    map[[2]int][]svgRect{},
		outLabels: map[int][2]float64{},
	}
	limit := opt.MaxEvents
	if limit <= 0 {
		limit = DefaultSVGMaxEvents
	}
	d.events = t.Events[:min(limit, len(t.Events))]
	hidden := map[int]bool{}
	mark := func(events []int, soft bool) {
		for _, i := range events {
			switch {
			case i >= len(d.events) && i < d.total:
				hidden[i] = true
			case i < 0 || i >= len(d.events):
			case !d.marked[i]:
				d.marked[i], d.soft[i] = true, soft
			case !soft:
				d.soft[i] = false
			}
		}
	}
	mark(opt.Mark, false)
	for _, v := range opt.Violations {
		mark(v.Events, v.Unpromised)
	}
	d.hidden = len(hidden)
	if len(t.Events) > 0 {
		d.tEnd = t.Events[len(t.Events)-1].Time
	}

	// Rows: every process named by an event drawn, and those the header
	// promises (Lanes), in order of ID; not every ID up to the highest.
	for i := range d.events {
		if e := &d.events[i]; e.Node < 0 {
			return nil, fmt.Errorf("trace: event %d: node %d out of range", i, e.Node)
		}
	}
	h := t.Header
	if h.Nodes > svgMaxRows {
		h.IDs = h.Nodes // more than can be drawn: only those with events
	}
	d.procs = lanes(&h, d.events)
	if len(d.procs) > svgMaxRows {
		return nil, fmt.Errorf("trace: %d processes, more than a diagram draws (%d)", len(d.procs), svgMaxRows)
	}
	if len(d.procs) == 0 {
		d.procs = []int32{0}
	}
	d.rows = len(d.procs)
	d.rowOf = make(map[int32]int, d.rows)
	for r, p := range d.procs {
		d.rowOf[p] = r
	}
	switch {
	case d.rows <= 6:
		d.rowH = 64
	case d.rows <= 12:
		d.rowH = 52
	case d.rows <= 20:
		d.rowH = 40
	default:
		d.rowH = 32
	}

	d.waitForCycles()

	// Messages.
	get := func(id uint64) *svgMessage {
		m := d.byID[id]
		if m == nil {
			m = &svgMessage{send: -1, from: -1, to: -1}
			d.byID[id] = m
			d.msgs = append(d.msgs, m)
		}
		return m
	}
	times := map[int64]bool{}
	perRow := make([]int, d.rows)
	for i := range d.events {
		e := &d.events[i]
		times[e.Time] = true
		perRow[d.rowOf[e.Node]]++
		if e.Kind == Send || e.Kind == Recv || e.Kind == Drop {
			if _, ok := d.typeIdx[e.Type]; !ok {
				d.typeIdx[e.Type] = min(len(d.types), len(svgTypeColors))
				d.types = append(d.types, e.Type)
			}
		}
		switch e.Kind {
		case Send:
			m := get(e.Msg)
			if m.send < 0 {
				m.send, m.from, m.to = i, e.Node, e.Peer
			}
		case Recv:
			m := get(e.Msg)
			m.recvs = append(m.recvs, i)
			if m.from < 0 {
				m.from, m.to = e.Peer, e.Node
			}
		case Drop:
			m := get(e.Msg)
			m.drops = append(m.drops, i)
			if m.from < 0 {
				m.from, m.to = e.Peer, e.Node
			}
		case Dup:
			get(e.Msg).dups = append(get(e.Msg).dups, i)
		}
	}
	// The fate of messages sent before the cut, decided after it.
	for i := len(d.events); i < d.total; i++ {
		if e := &t.Events[i]; e.Kind == Recv || e.Kind == Drop {
			if _, ok := d.later[e.Msg]; !ok && d.byID[e.Msg] != nil {
				d.later[e.Msg] = e.Time
			}
		}
	}

	// Time range. Start the axis at 0, when the run began, unless the
	// events start much later.
	if len(d.events) > 0 {
		d.t0, d.t1 = d.events[0].Time, d.events[len(d.events)-1].Time
		for i := range d.events { // in case the trace is not in time order
			d.t0 = min(d.t0, d.events[i].Time)
			d.t1 = max(d.t1, d.events[i].Time)
		}
		if d.t0 > 0 && d.t0 <= (d.t1-d.t0)/4 {
			d.t0 = 0
		}
	}
	if d.t1 <= d.t0 {
		d.t0 = min(d.t0, math.MaxInt64-1)
		d.t1 = d.t0 + 1
	}
	// A live trace is stamped with wall-clock times (since 1970): its axis
	// counts from its first event instead.
	if d.t0 >= svgWallClock {
		d.origin = d.t0
	}

	// Title.
	d.title = opt.Title
	if d.title == "" {
		h := t.Header
		switch {
		case h.Algo != "" && h.Family != "":
			d.title = h.Algo + " (" + h.Family + ")"
		default:
			d.title = h.Algo + h.Family
		}
		if d.title != "" && h.Seed != 0 {
			d.title += ", seed " + strconv.FormatUint(h.Seed, 10)
		}
	}
	info := []string{fmt.Sprintf("%d processes", d.rows), fmt.Sprintf("%d events", d.total)}
	if d.rows == 1 {
		info[0] = "1 process"
	}
	if len(d.events) < d.total {
		// Say what is drawn, in time and in events: "shown: 0–108ms of 161ms".
		last := d.events[len(d.events)-1].Time
		info[1] = fmt.Sprintf("shown: %s–%s of %s (the first %d of %d events)",
			svgTick(d.t0-d.origin, d.t1-d.t0), svgTick(last-d.origin, d.t1-d.t0), svgTick(d.tEnd-d.origin, d.t1-d.t0), len(d.events), d.total)
	} else if span := d.t1 - d.t0; len(d.events) > 0 && span > 0 {
		info = append(info, svgTick(span, span))
	}
	d.info = strings.Join(info, " · ")

	// Geometry.
	const left, right = 64.0, 36.0
	if opt.Width > 0 {
		d.width = float64(opt.Width)
	} else {
		busiest := slices.Max(perRow)
		plot := max(float64(len(times))*22, float64(busiest)*28, float64(len(d.msgs))*14, svgMinPlotWidth)
		d.width = min(left+plot+right+40, svgMaxWidth)
	}
	d.width = max(d.width, 320)
	d.x0 = left + 14
	d.edge = d.width - right
	d.x1 = d.edge - 26
	d.headerLayout(info)
	_, last := d.legendLayout(d.top + float64(d.rows)*d.rowH + 62)
	d.height = last + 16
	if len(d.events) < d.total {
		d.height += 22
	}
	return d, nil
}

// waitForCycles gathers the wait-for cycles to draw: the violations'
// edges, and the cycles declared by outputs of kind opt.Declared. An edge
// naming a process outside the diagram is left out; a cycle shown by an
// event past the end of the drawing is counted, not drawn.
func (d *svgDiagram) waitForCycles() {
	what := "wait-for cycle"
	add := func(at int, edges [][2]int32, by string) {
		edges = slices.DeleteFunc(edges, func(e [2]int32) bool {
			return !d.has(e[0]) || !d.has(e[1]) || e[0] == e[1]
		})
		switch {
		case len(edges) == 0 || at < 0 || at >= d.total:
		case at >= len(d.events):
			d.hiddenCycles++
		default:
			d.cycles = append(d.cycles, svgCycle{at: at, edges: edges, by: by, what: what})
		}
	}
	for _, v := range d.opt.Violations {
		if len(v.Edges) == 0 {
			continue
		}
		at := -1
		var edges [][2]int32
		for _, e := range v.Edges {
			at = max(at, e.At)
			edges = append(edges, [2]int32{e.From, e.To})
		}
		add(at, edges, v.Name)
	}
	what = "OR wait-for graph"
	for _, g := range d.opt.Graphs {
		at := -1
		var edges [][2]int32
		for _, e := range g.Edges {
			at = max(at, e.At)
			edges = append(edges, [2]int32{e.From, e.To})
		}
		add(at, edges, g.By)
	}
	what = "wait-for cycle"
	if d.opt.Declared == "" {
		return
	}
	for i := range d.full.Events {
		e := &d.full.Events[i]
		if e.Kind != Output || e.Type != d.opt.Declared || len(e.Data) == 0 {
			continue
		}
		var data struct{ Cycle []int32 }
		if json.Unmarshal(e.Data, &data) != nil || len(data.Cycle) < 2 {
			continue
		}
		var edges [][2]int32
		for k, p := range data.Cycle {
			edges = append(edges, [2]int32{p, data.Cycle[(k+1)%len(data.Cycle)]})
		}
		add(i, edges, fmt.Sprintf("declared by p%d", e.Node))
	}
}

// svgWallClock is a time (ns) no simulated run reaches (11.5 days) and
// every wall-clock reading since 1970 passes.
const svgWallClock = 1e15

// headerLayout wraps the title and the information line to the width, and
// sets the top of the first lane below them. Title and information share
// one line if they fit on it.
func (d *svgDiagram) headerLayout(info []string) {
	room := d.width - 28
	titleW := func(s string) float64 { return svgTextWidth(s, 15) * 1.08 } // bold
	d.headTitle = svgWrap(strings.Fields(d.title), " ", room, func(s string) float64 { return titleW(s) })
	d.headInfo = svgWrap(info, " · ", room, func(s string) float64 { return svgTextWidth(s, 11) })
	d.headInline = len(d.headTitle) == 1 && len(d.headInfo) == 1 &&
		titleW(d.headTitle[0])+14+svgTextWidth(d.headInfo[0], 11) <= room
	d.top = 16
	if ys := d.headLines(); len(ys) > 0 {
		d.top = ys[len(ys)-1] + 18
	}
}

// headLines returns the baseline of each header line: the title's lines,
// then the information's (none of its own if it shares the title's line).
func (d *svgDiagram) headLines() []float64 {
	var ys []float64
	y := 26.0
	for range d.headTitle {
		ys = append(ys, y)
		y += 19
	}
	if d.headInline {
		return ys
	}
	if len(d.headTitle) > 0 {
		y -= 2
	}
	for range d.headInfo {
		ys = append(ys, y)
		y += 15
	}
	return ys
}

// svgWrap joins words with sep into lines no wider than room (a word wider
// than room is clipped on a line of its own).
func svgWrap(words []string, sep string, room float64, width func(string) float64) []string {
	var lines []string
	cur := ""
	for _, w := range words {
		if w == "" {
			continue
		}
		for width(w) > room && utf8.RuneCountInString(w) > 2 {
			w = svgClip(w, utf8.RuneCountInString(w)-1)
		}
		switch {
		case cur == "":
			cur = w
		case width(cur+sep+w) <= room:
			cur += sep + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// x is where time ns is drawn.
func (d *svgDiagram) x(ns int64) float64 {
	return d.x0 + (d.x1-d.x0)*(float64(ns)-float64(d.t0))/(float64(d.t1)-float64(d.t0))
}

// y is the height of process p's line (p has one: has(p)).
func (d *svgDiagram) y(p int32) float64 { return d.top + (float64(d.rowOf[p])+0.5)*d.rowH }

// has reports whether process p has a line.
func (d *svgDiagram) has(p int32) bool { _, ok := d.rowOf[p]; return ok }

func (d *svgDiagram) draw() {
	d.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`+"\n",
		svgF(d.width), svgF(d.height), svgF(d.width), svgF(d.height))
	d.defs()
	d.printf(`<rect class="background" width="100%%" height="100%%" fill="#fff"/>` + "\n")
	d.header()
	d.lanes()
	d.shades()
	d.grid()
	d.crashes()
	d.spans()
	d.cuts()
	d.messages()
	d.waitFor()
	d.points()
	d.laneNames()
	d.axis()
	d.legend()
	d.printf("</svg>\n")
}

func (d *svgDiagram) defs() {
	d.printf("<defs>\n")
	heads := []struct{ id, color string }{
		{"arrow", svgMsg}, {"arrow-marked", svgMark}, {"arrow-soft", svgSoft}, {"arrow-pending", svgPending}, {"arrow-other", svgMsgOther},
	}
	for k, c := range svgTypeColors[:min(len(d.types), len(svgTypeColors))] {
		heads = append(heads, struct{ id, color string }{"arrow-" + strconv.Itoa(k), c})
	}
	if len(d.cycles) > 0 {
		heads = append(heads, struct{ id, color string }{"arrow-cycle", svgCycleInk})
	}
	for _, m := range heads {
		d.printf(`<marker id="%s" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto"><path d="M0,1 L10,5 L0,9 z" fill="%s"/></marker>`+"\n", m.id, m.color)
	}
	d.printf("</defs>\n")
}

// header draws the title and the information line, wrapped as
// headerLayout decided.
func (d *svgDiagram) header() {
	ys := d.headLines()
	for k, line := range d.headTitle {
		d.printf(`<text class="title" x="14" y="%s" font-size="15" font-weight="bold" fill="%s">`, svgF(ys[k]), svgInk)
		d.text(line)
		d.printf("</text>\n")
	}
	if d.headInline {
		// Bold text is wider than the estimate; keep clear of it.
		x := 14 + svgTextWidth(d.headTitle[0], 15)*1.08 + 14
		d.printf(`<text class="info" x="%s" y="26" font-size="11" fill="#777">`, svgF(x))
		d.text(d.headInfo[0])
		d.printf("</text>\n")
		return
	}
	for k, line := range d.headInfo {
		d.printf(`<text class="info" x="14" y="%s" font-size="11" fill="#777">`, svgF(ys[len(d.headTitle)+k]))
		d.text(line)
		d.printf("</text>\n")
	}
}

// lanes draws each process's band and name.
func (d *svgDiagram) lanes() {
	for r, p := range d.procs {
		y := d.y(p)
		if r%2 == 1 {
			d.printf(`<rect class="band" x="0" y="%s" width="%s" height="%s" fill="#f6f8fa"/>`+"\n",
				svgF(y-d.rowH/2), svgF(d.width), svgF(d.rowH))
		}
	}
	for _, p := range d.procs {
		y := d.y(p)
		d.printf(`<text class="proc-name" x="46" y="%s" text-anchor="end" font-size="12" font-weight="bold" fill="%s">p%d</text>`+"\n", svgF(y+4), svgInk, p)
		d.printf(`<line class="proc" data-p="%d" x1="52" y1="%s" x2="%s" y2="%s" stroke="#8a939c" stroke-width="1.2"/>`+"\n",
			p, svgF(y), svgF(d.edge), svgF(y))
	}
}

// grid draws faint vertical lines at the time axis's ticks.
func (d *svgDiagram) grid() {
	bottom := d.top + float64(d.rows)*d.rowH
	for _, tk := range d.ticks() {
		x := d.x(tk)
		d.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e4e7eb" stroke-width="1"/>`+"\n",
			svgF(x), svgF(d.top), svgF(x), svgF(bottom))
	}
}

// crashes greys out each process's line from a crash to its recovery.
func (d *svgDiagram) crashes() {
	type span struct {
		from int // crash event
		to   int // recovery event, or -1
	}
	var spans []span
	open := map[int32]int{}
	for i := range d.events {
		e := &d.events[i]
		switch e.Kind {
		case Crash, Leave:
			if _, ok := open[e.Node]; !ok {
				open[e.Node] = i
			}
		case Recover, Start, Join:
			if c, ok := open[e.Node]; ok {
				spans = append(spans, span{from: c, to: i})
				delete(open, e.Node)
			}
		}
	}
	for _, c := range open {
		spans = append(spans, span{from: c, to: -1})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	for _, s := range spans {
		c := &d.events[s.from]
		y := d.y(c.Node)
		x0, x1 := d.x(c.Time), d.edge
		tip := fmt.Sprintf("p%d crashed at %s", c.Node, FormatNS(c.Time))
		if s.to >= 0 {
			r := &d.events[s.to]
			x1 = d.x(r.Time)
			tip += fmt.Sprintf(", recovered at %s", FormatNS(r.Time))
		} else {
			tip += ", down until the end"
		}
		h := min(d.rowH*0.42, 20)
		d.printf(`<g class="crashed" data-i="%d"><title>`, s.from)
		d.text(tip)
		d.printf(`</title><rect x="%s" y="%s" width="%s" height="%s" rx="3" fill="%s" fill-opacity="0.85"/>`,
			svgF(x0), svgF(y-h/2), svgF(max(x1-x0, 2)), svgF(h), svgCrashed)
		d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#b5b5b5" stroke-width="1.2" stroke-dasharray="3 3"/></g>`+"\n",
			svgF(x0), svgF(y), svgF(x0+max(x1-x0, 2)), svgF(y))
	}
}

// spans draws the intervals of SVGOptions.Spans as bars on the lines.
func (d *svgDiagram) spans() {
	for k, sp := range d.opt.Spans {
		open := map[int32]int{}
		draw := func(from int, endTime int64, endText string) {
			e := &d.events[from]
			x0, x1 := d.x(e.Time), d.x(endTime)
			y := d.y(e.Node)
			h := min(d.rowH*0.34, 14)
			d.printf(`<g class="span span-%d" data-i="%d"><title>`, k, from)
			d.text(fmt.Sprintf("p%d in the %s from %s %s", e.Node, sp.Label, FormatNS(e.Time), endText))
			d.printf(`</title><rect x="%s" y="%s" width="%s" height="%s" rx="2" fill="%s" fill-opacity="0.5"/></g>`+"\n",
				svgF(x0), svgF(y-h/2), svgF(max(x1-x0, 2)), svgF(h), svgSpanColors[k%len(svgSpanColors)])
		}
		for i := range d.events {
			e := &d.events[i]
			switch {
			case e.Kind == Output && e.Type == sp.Open:
				if _, ok := open[e.Node]; !ok {
					open[e.Node] = i
				}
			case (e.Kind == Output && e.Type == sp.Close) || e.Kind.Stops():
				if from, ok := open[e.Node]; ok {
					end := "to " + FormatNS(e.Time)
					switch e.Kind {
					case Crash:
						end += " (crashed)"
					case Leave:
						end += " (left)"
					}
					draw(from, e.Time, end)
					delete(open, e.Node)
				}
			}
		}
		var still []int
		for _, from := range open {
			still = append(still, from)
		}
		slices.Sort(still)
		for _, from := range still {
			draw(from, d.t1, "to the end")
		}
	}
}

// cutFrontiers groups the outputs of kind opt.Cut by label, in the order
// of their first appearance: each group is a cut's frontier, at most one
// event per process (the first).
func (d *svgDiagram) cutFrontiers() (labels []string, frontiers [][]int) {
	if d.opt.Cut == "" {
		return nil, nil
	}
	index := map[string]int{}
	seen := map[string]map[int32]bool{}
	for i := range d.events {
		e := &d.events[i]
		if e.Kind != Output || e.Type != d.opt.Cut {
			continue
		}
		k, ok := index[e.Label]
		if !ok {
			k = len(labels)
			index[e.Label] = k
			labels = append(labels, e.Label)
			frontiers = append(frontiers, nil)
			seen[e.Label] = map[int32]bool{}
		}
		if !seen[e.Label][e.Node] {
			seen[e.Label][e.Node] = true
			frontiers[k] = append(frontiers[k], i)
		}
	}
	return labels, frontiers
}

// cuts draws each cut of SVGOptions.Cut as a dashed line from the top of
// the diagram to the bottom through its frontier events, process by
// process, labelled at the top.
func (d *svgDiagram) cuts() {
	labels, frontiers := d.cutFrontiers()
	for k, f := range frontiers {
		slices.SortFunc(f, func(a, b int) int { return int(d.events[a].Node) - int(d.events[b].Node) })
		color := svgCutColors[k%len(svgCutColors)]
		var pts []string
		var tip []string
		for j, i := range f {
			e := &d.events[i]
			x, y := d.x(e.Time), d.y(e.Node)
			if j == 0 {
				pts = append(pts, svgF(x)+","+svgF(y-d.rowH/2))
			}
			pts = append(pts, svgF(x)+","+svgF(y))
			if j == len(f)-1 {
				pts = append(pts, svgF(x)+","+svgF(y+d.rowH/2))
			}
			tip = append(tip, fmt.Sprintf("p%d at %s (#%d)", e.Node, FormatNS(e.Time), i))
		}
		first := &d.events[f[0]]
		d.printf(`<g class="cut" data-i="%d"><title>`, f[0])
		d.text(labels[k] + ": " + strings.Join(tip, ", "))
		d.printf(`</title><polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3" stroke-opacity="0.85"/>`,
			strings.Join(pts, " "), color)
		d.printf(`<text x="%s" y="%s" font-size="10" fill="%s">`, svgF(d.x(first.Time)+3), svgF(d.y(first.Node)-d.rowH/2+10), color)
		d.text(svgClip(labels[k], svgMaxLabel))
		d.printf("</text></g>\n")
	}
}

// svgCutColors colour the cuts, in order.
var svgCutColors = []string{"#2ca02c", "#9467bd", "#e377c2", "#17becf"}

// svgSpanColors colour the kinds of spans, in order.
var svgSpanColors = []string{"#f0a830", "#7fb8e6", "#c39bd3"}

func (d *svgDiagram) quiet(e *Event) bool {
	return e.Kind == Output && slices.Contains(d.opt.Quiet, e.Type)
}

// typeColor is the colour of the messages of type typ.
func (d *svgDiagram) typeColor(typ string) (color, head string) {
	if k, ok := d.typeIdx[typ]; ok && k < len(svgTypeColors) {
		return svgTypeColors[k], "arrow-" + strconv.Itoa(k)
	}
	return svgMsgOther, "arrow-other"
}

// markOf says whether any of the events is marked, and in which colour:
// red if any is marked by a promise broken, soft if all by unpromised
// properties.
func (d *svgDiagram) markOf(events ...int) (marked bool, color, head string) {
	color, head = svgSoft, "arrow-soft"
	for _, i := range events {
		if i >= 0 && d.marked[i] {
			marked = true
			if !d.soft[i] {
				return true, svgMark, "arrow-marked"
			}
		}
	}
	return marked, color, head
}

// dropColor is the colour of a loss, by its cause.
func dropColor(reason string) (color, cause string) {
	switch {
	case reason == "partition":
		return svgDropPart, "partition"
	case strings.HasPrefix(reason, "receiver "):
		return svgDropGone, "receiver down"
	}
	return svgDrop, "loss"
}

func (d *svgDiagram) messages() {
	// The repeated process names come first, then outputs' labels, then
	// the process lines.
	d.layoutLaneNames()
	for _, l := range d.laneAt {
		d.block(svgRect{l.x, d.y(l.p) - 13, l.x + 6 + svgTextWidth("p"+strconv.Itoa(int(l.p)), 10)*1.1, d.y(l.p)})
	}
	d.layoutOutputs()
	for _, p := range d.procs {
		d.block(svgRect{d.x0 - 20, d.y(p) - 3.5, d.edge, d.y(p) + 3.5})
	}
	for i := range d.events {
		if e := &d.events[i]; e.Kind.IsProcess() {
			x, y := d.x(e.Time), d.y(e.Node)
			d.block(svgRect{x - 5, y - 12, x + 5, y + 6})
		}
	}
	type label struct {
		text           string
		x1, y1, x2, y2 float64
		color          string
	}
	var labels []label
	for _, m := range d.msgs {
		name, typ := "", ""
		var sendEv *Event
		if m.send >= 0 {
			sendEv = &d.events[m.send]
		}
		for _, i := range append(append([]int{m.send}, m.recvs...), m.drops...) {
			if i >= 0 && name == "" {
				name, typ = svgEventName(&d.events[i]), d.events[i].Type
			}
		}
		msgColor, msgHead := d.typeColor(typ)
		marked, markColor, markHead := d.markOf(append([]int{m.send}, m.dups...)...)

		// Deliveries.
		for k, r := range m.recvs {
			re := &d.events[r]
			if sendEv == nil {
				// The send is not in the trace: a short stub into the receipt.
				x, y := d.x(re.Time), d.y(re.Node)
				d.printf(`<g class="msg orphan" data-recv="%d"><title>`, r)
				d.text(svgClip(re.String(), svgMaxTitle) + "\n(its send is not in the trace)")
				d.printf(`</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.2" stroke-dasharray="2 2" marker-end="url(#%s)"/></g>`+"\n",
					svgF(x-14), svgF(y-d.rowH*0.35), svgF(x), svgF(y), msgColor, msgHead)
				continue
			}
			color, width, head := msgColor, "1.3", msgHead
			class := "msg"
			if k > 0 {
				class = "msg dup"
			}
			if mk, c, h := d.markOf(append([]int{m.send, r}, m.dups...)...); mk {
				color, width, head = c, "2.6", h
				class += " marked"
			}
			x1, y1 := d.x(sendEv.Time), d.y(sendEv.Node)
			x2, y2 := d.x(re.Time), d.y(re.Node)
			tip := svgClip(sendEv.String(), svgMaxTitle) + "\n" + svgClip(re.String(), svgMaxTitle)
			if k > 0 {
				tip += "\n(duplicate delivery)"
			}
			d.printf(`<g class="%s" data-send="%d" data-recv="%d" data-type="%d"><title>`, class, m.send, r, d.typeIdx[typ])
			d.text(tip)
			d.printf("</title>")
			dash := ""
			if k > 0 {
				dash = ` stroke-dasharray="6 3"`
			}
			if sendEv.Node == re.Node {
				// A message to oneself: a loop above the line.
				lift := d.rowH * 0.45
				d.printf(`<path d="M%s,%s C%s,%s %s,%s %s,%s" fill="none" stroke="%s" stroke-width="%s"%s marker-end="url(#%s)"/></g>`+"\n",
					svgF(x1), svgF(y1), svgF(x1+4), svgF(y1-lift), svgF(max(x2-4, x1+8)), svgF(y2-lift), svgF(x2), svgF(y2), color, width, dash, head)
				if k == 0 {
					labels = append(labels, label{name, x1, y1 - lift*0.75, max(x2, x1+8), y2 - lift*0.75, color})
				}
				continue
			}
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s marker-end="url(#%s)"/></g>`+"\n",
				svgF(x1), svgF(y1), svgF(x2), svgF(y2), color, width, dash, head)
			if k == 0 {
				labels = append(labels, label{name, x1, y1, x2, y2, color})
			}
		}

		// Losses: an arrow that stops short, with a ✕, coloured by cause.
		for _, r := range m.drops {
			de := &d.events[r]
			color, cause := dropColor(de.Reason)
			width := "1.3"
			class := "drop drop-" + strings.ReplaceAll(cause, " ", "-")
			if mk, c, _ := d.markOf(append([]int{m.send, r}, m.dups...)...); mk {
				color, width = c, "2.6"
				class += " marked"
			}
			yt := d.y(de.Node)
			x2, y2 := d.x(de.Time), yt
			tip := svgClip(de.String(), svgMaxTitle)
			if de.Reason != "" {
				tip = "dropped: " + svgClip(de.Reason, svgMaxTitle) + "\n" + tip
			} else {
				tip = "dropped\n" + tip
			}
			if sendEv != nil {
				tip = svgClip(sendEv.String(), svgMaxTitle) + "\n" + tip
			}
			d.printf(`<g class="%s" data-drop="%d"><title>`, class, r)
			d.text(tip)
			d.printf("</title>")
			if sendEv != nil {
				x1, y1 := d.x(sendEv.Time), d.y(sendEv.Node)
				if sendEv.Node == de.Node {
					y1 -= d.rowH * 0.3
				}
				const f = 0.6
				x2, y2 = x1+(x2-x1)*f, y1+(yt-y1)*f
				d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s" stroke-dasharray="5 3"/>`,
					svgF(x1), svgF(y1), svgF(x2), svgF(y2), color, width)
			}
			const s = 4.5
			d.printf(`<path d="M%s,%s L%s,%s M%s,%s L%s,%s" stroke="%s" stroke-width="2.2" stroke-linecap="round"/></g>`+"\n",
				svgF(x2-s), svgF(y2-s), svgF(x2+s), svgF(y2+s), svgF(x2-s), svgF(y2+s), svgF(x2+s), svgF(y2-s), color)
		}

		// Copies neither delivered nor lost among the events drawn: cut off
		// by the truncation if their fate comes later in the trace, else
		// still in flight at the end of the run.
		if sendEv != nil && len(m.recvs)+len(m.drops) < 1+len(m.dups) {
			x1, y1 := d.x(sendEv.Time), d.y(sendEv.Node)
			x2, y2 := d.edge, d.y(m.to)
			if !d.has(m.to) {
				y2 = y1
			}
			if sendEv.Node == m.to {
				y2 = y1 - d.rowH*0.3
			}
			if at, ok := d.later[sendEv.Msg]; ok {
				// Along the way to its receipt, past the edge: stopped at
				// the edge by a bar.
				if xr := d.x(at); xr > x2 && x2 > x1 {
					y2 = y1 + (y2-y1)*(x2-x1)/(xr-x1)
				}
				color, width, class := msgColor, "1.2", "cutoff"
				if marked {
					color, width, class = markColor, "2.6", "cutoff marked"
				}
				d.printf(`<g class="%s" data-send="%d"><title>`, class, m.send)
				d.text(svgClip(sendEv.String(), svgMaxTitle) + "\n(received or lost after the last event drawn)")
				d.printf(`</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s" stroke-opacity="0.6"/>`,
					svgF(x1), svgF(y1), svgF(x2), svgF(y2), color, width)
				d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/></g>`+"\n",
					svgF(x2), svgF(y2-5), svgF(x2), svgF(y2+5), color)
				continue
			}
			color, width, head, class := svgPending, "1.2", "arrow-pending", "pending"
			if marked {
				color, width, head, class = markColor, "2.6", markHead, "pending marked"
			}
			d.printf(`<g class="%s" data-send="%d"><title>`, class, m.send)
			d.text(svgClip(sendEv.String(), svgMaxTitle) + "\n(in flight at the end of the trace)")
			d.printf(`</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s" stroke-dasharray="2 3" marker-end="url(#%s)"/></g>`+"\n",
				svgF(x1), svgF(y1), svgF(x2), svgF(y2), color, width, head)
		}
	}

	// Labels at the middle of their arrows, or nearby along them, where
	// they overlap no other label, dot or line: skipped only where the
	// diagram is crowded (the tooltip still has the message).
	for _, l := range labels {
		text := svgClip(l.text, svgMaxLabel)
		if text == "" {
			continue
		}
		w, h := svgTextWidth(text, 9), 10.0
		for _, f := range []float64{0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8} {
			cx, cy := l.x1+(l.x2-l.x1)*f, l.y1+(l.y2-l.y1)*f
			if cx-w/2 < d.x0-10 || cx+w/2 > d.width-4 {
				continue
			}
			if d.reserve(cx-w/2-1, cy-h/2-1, cx+w/2+1, cy+h/2+1) {
				d.printf(`<text class="msg-label" x="%s" y="%s" text-anchor="middle" font-size="9" fill="%s" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">`,
					svgF(cx), svgF(cy+3.2), l.color)
				d.text(text)
				d.printf("</text>\n")
				break
			}
		}
	}
}

// waitFor draws each wait-for cycle at the time of the event that shows
// it: from the lane of each process that waits, a dashed arc to the lane of
// the process it waits for, bulging right when it goes down and left when
// it goes up, so that a cycle reads as a loop; the arcs of one cycle are
// nested.
func (d *svgDiagram) waitFor() {
	for _, c := range d.cycles {
		e := &d.events[c.at]
		x := d.x(e.Time)
		var names []string
		for _, ed := range c.edges {
			names = append(names, fmt.Sprintf("p%d waits for p%d", ed[0], ed[1]))
		}
		d.printf(`<g class="waitfor" data-at="%d"><title>`, c.at)
		d.text(svgClip(fmt.Sprintf("%s (%s) at %s, #%d: %s", c.what, c.by, FormatNS(e.Time-d.origin), c.at, strings.Join(names, ", ")), svgMaxTitle))
		d.printf("</title>\n")
		for k, ed := range c.edges {
			y1, y2 := d.y(ed[0]), d.y(ed[1])
			dir := 1.0
			if y2 < y1 {
				dir = -1
			}
			bulge := dir * (26 + 10*float64(k))
			d.printf(`<path class="waitfor-edge" data-from="%d" data-to="%d" d="M%s,%s C%s,%s %s,%s %s,%s" fill="none" stroke="%s" stroke-width="2.2" stroke-dasharray="6 3" marker-end="url(#arrow-cycle)"/>`+"\n",
				ed[0], ed[1], svgF(x), svgF(y1), svgF(x+bulge), svgF(y1), svgF(x+bulge), svgF(y2), svgF(x), svgF(y2), svgCycleInk)
		}
		top := d.y(c.edges[0][0])
		for _, ed := range c.edges {
			top = min(top, d.y(ed[0]), d.y(ed[1]))
		}
		d.printf(`<text x="%s" y="%s" font-size="10" font-weight="bold" fill="%s" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">%s</text></g>`+"\n",
			svgF(x+6), svgF(top-14), svgCycleInk, c.what)
	}
}

// points draws the events that are not messages, and a dot at each end of
// a message.
func (d *svgDiagram) points() {
	for i := range d.events {
		e := &d.events[i]
		x, y := d.x(e.Time), d.y(e.Node)
		mk := d.marked[i]
		class := ""
		switch e.Kind {
		case Send, Recv:
			class = "ev"
		case Output:
			class = "output"
		case Input:
			class = "input"
		case Timer:
			class = "timer"
		case Start:
			class = "start"
		case Crash:
			class = "crash"
		case Recover:
			class = "recover"
		case Join:
			class = "join"
		case Leave:
			class = "leave"
		case Drop, Dup:
			if !mk {
				continue // drawn with their message
			}
			class = "net"
		default:
			class = "other"
		}
		if mk {
			class += " marked"
		}
		d.printf(`<g class="%s" data-i="%d"><title>`, class, i)
		d.text(svgClip(e.String(), svgMaxTitle))
		d.printf("</title>")
		_, markColor, _ := d.markOf(i)
		if mk {
			d.printf(`<circle cx="%s" cy="%s" r="8" fill="%s" fill-opacity="0.15" stroke="%s" stroke-width="2"/>`, svgF(x), svgF(y), markColor, markColor)
		}
		ink := func(c string) string {
			if mk {
				return markColor
			}
			return c
		}
		switch e.Kind {
		case Send, Recv:
			d.printf(`<circle cx="%s" cy="%s" r="2.3" fill="%s"/>`, svgF(x), svgF(y), ink(svgInk))
		case Output:
			r := 4.6
			if d.quiet(e) {
				r = 2.4
			}
			d.printf(`<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="#fff" stroke-width="1.2"/>`, svgF(x), svgF(y), svgF(r), ink(svgOutput))
		case Input:
			d.printf(`<path d="M%s,%s L%s,%s L%s,%s z" fill="%s"/>`,
				svgF(x-4.5), svgF(y-11), svgF(x+4.5), svgF(y-11), svgF(x), svgF(y-3), ink(svgInput))
		case Timer:
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.6"/>`, svgF(x), svgF(y-6), svgF(x), svgF(y+6), ink("#7d8790"))
		case Start:
			d.printf(`<rect x="%s" y="%s" width="6" height="6" fill="%s"/>`, svgF(x-3), svgF(y-3), ink("#55606b"))
		case Crash:
			const s = 5.5
			d.printf(`<path d="M%s,%s L%s,%s M%s,%s L%s,%s" stroke="%s" stroke-width="2.6" stroke-linecap="round"/>`,
				svgF(x-s), svgF(y-s), svgF(x+s), svgF(y+s), svgF(x-s), svgF(y+s), svgF(x+s), svgF(y-s), ink("#111"))
		case Recover:
			d.printf(`<circle cx="%s" cy="%s" r="4" fill="#fff" stroke="%s" stroke-width="1.8"/>`, svgF(x), svgF(y), ink(svgInk))
		case Join: // a triangle pointing into the lane
			d.printf(`<path d="M%s,%s L%s,%s L%s,%s z" fill="%s"/>`,
				svgF(x-4), svgF(y-5), svgF(x+4), svgF(y), svgF(x-4), svgF(y+5), ink("#2e7d32"))
		case Leave: // a bar closing the lane
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3"/>`, svgF(x), svgF(y-6), svgF(x), svgF(y+6), ink("#111"))
		default:
			d.printf(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, svgF(x), svgF(y), ink(svgInk))
		}
		d.printf("</g>\n")
		if e.Kind == Output {
			d.outputLabel(i, mk)
		}
	}
}

// layoutOutputs places the outputs' labels above their dots, or below, or
// nowhere if both places are taken.
func (d *svgDiagram) layoutOutputs() {
	for i := range d.events {
		e := &d.events[i]
		if e.Kind != Output {
			continue
		}
		x, y := d.x(e.Time), d.y(e.Node)
		d.block(svgRect{x - 5, y - 5, x + 5, y + 5})
	}
	for i := range d.events {
		e := &d.events[i]
		text := svgClip(svgEventName(e), svgMaxLabel)
		if e.Kind != Output || text == "" || d.quiet(e) {
			continue
		}
		x, y := d.x(e.Time), d.y(e.Node)
		w := svgTextWidth(text, 10)*1.2 + 4 // bold, and a little air between labels
		cx := min(max(x, d.x0-10+w/2), d.width-4-w/2)
		for _, dy := range []float64{-9, 17, -20} {
			if d.reserve(cx-w/2, y+dy-9, cx+w/2, y+dy+2) {
				d.outLabels[i] = [2]float64{cx, y + dy}
				break
			}
		}
	}
}

// outputLabel writes an output's label where layoutOutputs put it.
func (d *svgDiagram) outputLabel(i int, marked bool) {
	at, ok := d.outLabels[i]
	if !ok {
		return
	}
	color := svgOutput
	if marked {
		_, color, _ = d.markOf(i)
	}
	d.printf(`<text class="output-label" x="%s" y="%s" text-anchor="middle" font-size="10" font-weight="bold" fill="%s" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">`,
		svgF(at[0]), svgF(at[1]), color)
	d.text(svgClip(svgEventName(&d.events[i]), svgMaxLabel))
	d.printf("</text>\n")
}

// ticks returns the times of the axis's ticks: round values (1, 2 or 5
// times a power of ten) about every 110 pixels.
func (d *svgDiagram) ticks() []int64 {
	span := float64(d.t1) - float64(d.t0)
	raw := span / max((d.x1-d.x0)/110, 2)
	best, bestErr := 1.0, math.Inf(1)
	for p := 1.0; p <= 1e18; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if e := math.Abs(math.Log(m * p / raw)); e < bestErr {
				best, bestErr = m*p, e
			}
		}
	}
	step := int64(best)
	var out []int64
	first := (d.t0-d.origin)/step*step + d.origin // round since the origin
	if first < d.t0 {
		first += step
	}
	for tk := first; tk <= d.t1 && len(out) < 1000; tk += step {
		out = append(out, tk)
	}
	return out
}

func (d *svgDiagram) axis() {
	y := d.top + float64(d.rows)*d.rowH + 12
	d.printf(`<g class="axis" font-size="10" fill="#555">`+"\n"+`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#555" stroke-width="1"/>`+"\n",
		svgF(d.x0), svgF(y), svgF(d.edge), svgF(y))
	ticks := d.ticks()
	var step int64
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for _, tk := range ticks {
		x := d.x(tk)
		d.printf(`<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#555" stroke-width="1"/>`, svgF(x), svgF(y), svgF(x), svgF(y+5))
		d.printf(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", svgF(x), svgF(y+17), svgTick(tk-d.origin, step))
	}
	caption := "true time"
	if d.origin != 0 {
		caption = "true time since the first event, " + time.Unix(0, d.origin).UTC().Format("2006-01-02 15:04:05.000 UTC")
	}
	d.printf(`<text class="axis-caption" x="%s" y="%s" text-anchor="end" fill="#888">%s</text>`+"\n", svgF(d.edge), svgF(y+31), caption)
	d.printf("</g>\n")
}

// legendItems are the entries of the legend, in order.
func (d *svgDiagram) legendItems() []string {
	var items []string
	for k := range d.types {
		if k == len(svgTypeColors) {
			items = append(items, "type:other")
			break
		}
		items = append(items, "type:"+strconv.Itoa(k))
	}
	if len(d.types) == 0 {
		items = append(items, "message")
	}
	var causes []string
	var pending, cutoff bool
	for _, m := range d.msgs {
		for _, r := range m.drops {
			if _, c := dropColor(d.events[r].Reason); !slices.Contains(causes, c) {
				causes = append(causes, c)
			}
		}
		if m.send >= 0 && len(m.recvs)+len(m.drops) < 1+len(m.dups) {
			_, later := d.later[d.events[m.send].Msg]
			cutoff = cutoff || later
			pending = pending || !later
		}
	}
	slices.Sort(causes)
	for _, c := range causes {
		items = append(items, "drop:"+c)
	}
	if pending {
		items = append(items, "in flight")
	}
	if cutoff {
		items = append(items, "cut off")
	}
	items = append(items, "output", "input", "timer", "start", "crashed", "recovered")
	var kinds []string
	for _, s := range d.opt.Shades {
		if _, _, ok := d.shadeSpan(s); ok && !slices.Contains(kinds, s.Kind) {
			kinds = append(kinds, s.Kind)
			items = append(items, "shade:"+s.Kind)
		}
	}
	if len(d.opt.Mark) > 0 && len(d.marked) > 0 {
		items = append(items, "marked")
	}
	if len(d.cycles) > 0 {
		items = append(items, "wait-for cycle")
	}
	for k := range d.opt.Violations {
		items = append(items, "viol:"+strconv.Itoa(k))
	}
	for k := range d.opt.Spans {
		items = append(items, "span:"+strconv.Itoa(k))
	}
	if _, f := d.cutFrontiers(); len(f) > 0 {
		items = append(items, "cut")
	}
	return items
}

// legendText is what a legend entry says.
func (d *svgDiagram) legendText(it string) string {
	kind, arg, _ := strings.Cut(it, ":")
	n, _ := strconv.Atoi(arg)
	switch kind {
	case "type":
		if arg == "other" {
			return fmt.Sprintf("%d other types", len(d.types)-len(svgTypeColors))
		}
		if d.types[n] == "" {
			return "(no type)"
		}
		return svgClip(d.types[n], svgMaxLabel)
	case "drop":
		return "dropped (" + arg + ")"
	case "shade":
		return arg
	case "viol":
		v := d.opt.Violations[n]
		s := svgClip(v.Name, svgMaxLabel) + " violated"
		if v.Unpromised {
			s += " (not promised)"
		}
		return s + fmt.Sprintf(": %d events", len(v.Events))
	case "span":
		return d.opt.Spans[n].Label
	case "cut off":
		return "cut off (received after the last event drawn)"
	}
	return it
}

// legendLayout places the legend's entries in rows that fit the width,
// starting at y; it returns where each entry goes and the y of the last row.
func (d *svgDiagram) legendLayout(y float64) (pos [][2]float64, last float64) {
	x := d.x0 - 10
	for _, it := range d.legendItems() {
		w := 26 + svgTextWidth(d.legendText(it), 10)
		if x > d.x0-10 && x+w > d.width-12 {
			x, y = d.x0-10, y+20
		}
		pos = append(pos, [2]float64{x, y})
		x += w + 18
	}
	return pos, y
}

func (d *svgDiagram) legend() {
	pos, last := d.legendLayout(d.top + float64(d.rows)*d.rowH + 62)
	d.printf(`<g class="legend" font-size="10" fill="#555">` + "\n")
	cross := func(x, y float64, color string) {
		d.printf(`<path d="M%s,%s L%s,%s M%s,%s L%s,%s" stroke="%s" stroke-width="2.2" stroke-linecap="round"/>`,
			svgF(x+12), svgF(y-4), svgF(x+20), svgF(y+4), svgF(x+12), svgF(y+4), svgF(x+20), svgF(y-4), color)
	}
	for k, it := range d.legendItems() {
		x, y := pos[k][0], pos[k][1]
		kind, arg, _ := strings.Cut(it, ":")
		n, _ := strconv.Atoi(arg)
		text := d.legendText(it)
		switch kind {
		case "message":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3" marker-end="url(#arrow)"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), svgMsg)
		case "type":
			color, head := svgMsgOther, "arrow-other"
			if arg != "other" {
				color, head = d.typeColor(d.types[n])
			}
			d.printf(`<g class="legend-type"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.6" marker-end="url(#%s)"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), color, head)
			d.printf(`<text x="%s" y="%s" fill="%s">`, svgF(x+26), svgF(y+3.5), color)
			d.text(text)
			d.printf("</text></g>\n")
			continue
		case "drop":
			color := svgDrop
			switch arg {
			case "partition":
				color = svgDropPart
			case "receiver down":
				color = svgDropGone
			}
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3" stroke-dasharray="5 3"/>`, svgF(x), svgF(y), svgF(x+14), svgF(y), color)
			cross(x, y, color)
		case "in flight":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.2" stroke-dasharray="2 3" marker-end="url(#arrow-pending)"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), svgPending)
		case "cut off":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.2" stroke-opacity="0.6"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), svgMsgOther)
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`, svgF(x+20), svgF(y-5), svgF(x+20), svgF(y+5), svgMsgOther)
		case "output":
			d.printf(`<circle cx="%s" cy="%s" r="4.6" fill="%s"/>`, svgF(x+10), svgF(y), svgOutput)
		case "input":
			d.printf(`<path d="M%s,%s L%s,%s L%s,%s z" fill="%s"/>`, svgF(x+5.5), svgF(y-4), svgF(x+14.5), svgF(y-4), svgF(x+10), svgF(y+4), svgInput)
		case "timer":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#7d8790" stroke-width="1.6"/>`, svgF(x+10), svgF(y-6), svgF(x+10), svgF(y+6))
		case "start":
			d.printf(`<rect x="%s" y="%s" width="6" height="6" fill="#55606b"/>`, svgF(x+7), svgF(y-3))
		case "crashed":
			d.printf(`<rect x="%s" y="%s" width="20" height="10" rx="2" fill="%s"/>`, svgF(x), svgF(y-5), svgCrashed)
			d.printf(`<path d="M%s,%s L%s,%s M%s,%s L%s,%s" stroke="#111" stroke-width="2" stroke-linecap="round"/>`,
				svgF(x-4), svgF(y-4), svgF(x+4), svgF(y+4), svgF(x-4), svgF(y+4), svgF(x+4), svgF(y-4))
		case "recovered":
			d.printf(`<circle cx="%s" cy="%s" r="4" fill="#fff" stroke="%s" stroke-width="1.8"/>`, svgF(x+10), svgF(y), svgInk)
		case "shade":
			d.printf(`<rect x="%s" y="%s" width="20" height="10" rx="2" fill="%s" fill-opacity="0.45"/>`, svgF(x), svgF(y-5), shadeColor(arg))
		case "marked":
			d.printf(`<circle cx="%s" cy="%s" r="6" fill="%s" fill-opacity="0.15" stroke="%s" stroke-width="2"/>`, svgF(x+10), svgF(y), svgMark, svgMark)
		case "viol":
			color := svgMark
			if d.opt.Violations[n].Unpromised {
				color = svgSoft
			}
			d.printf(`<g class="legend-violation"><title>`)
			d.text(svgClip(d.opt.Violations[n].Name, svgMaxTitle) + ": events " + svgIndexList(d.opt.Violations[n].Events))
			d.printf(`</title><circle cx="%s" cy="%s" r="6" fill="%s" fill-opacity="0.15" stroke="%s" stroke-width="2"/>`, svgF(x+10), svgF(y), color, color)
			d.printf(`<text x="%s" y="%s" fill="%s" font-weight="bold">`, svgF(x+26), svgF(y+3.5), color)
			d.text(text)
			d.printf("</text></g>\n")
			continue
		case "span":
			d.printf(`<rect x="%s" y="%s" width="20" height="9" rx="2" fill="%s" fill-opacity="0.5"/>`, svgF(x), svgF(y-4.5), svgSpanColors[n%len(svgSpanColors)])
		case "cut":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), svgCutColors[0])
		case "wait-for cycle":
			d.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.2" stroke-dasharray="6 3" marker-end="url(#arrow-cycle)"/>`, svgF(x), svgF(y), svgF(x+20), svgF(y), svgCycleInk)
		}
		d.printf(`<text x="%s" y="%s">`, svgF(x+26), svgF(y+3.5))
		d.text(text)
		d.printf("</text>\n")
	}
	d.printf("</g>\n")
	if len(d.events) < d.total {
		d.printf(`<text class="truncated" x="%s" y="%s" font-size="11" font-weight="bold" fill="%s">`, svgF(d.x0-10), svgF(last+24), svgMark)
		last := d.events[len(d.events)-1].Time
		note := fmt.Sprintf("Truncated: only the first %d of %d events are drawn (%s–%s of %s).",
			len(d.events), d.total, svgTick(d.t0-d.origin, d.t1-d.t0), svgTick(last-d.origin, d.t1-d.t0), svgTick(d.tEnd-d.origin, d.t1-d.t0))
		if d.hidden > 0 {
			note += fmt.Sprintf(" %s not drawn.", countOf(d.hidden, "marked event comes later and is", "marked events come later and are"))
		}
		if d.hiddenCycles > 0 {
			note += fmt.Sprintf(" %s not drawn.", countOf(d.hiddenCycles, "wait-for cycle comes later and is", "wait-for cycles come later and are"))
		}
		d.text(note)
		d.printf("</text>\n")
	}
}

// countOf is "1 " + one, or n and many.
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// svgIndexList renders event indices as "#3, #9, #12", at most 20 of them.
func svgIndexList(events []int) string {
	var b strings.Builder
	for k, i := range events {
		if k == 20 {
			fmt.Fprintf(&b, " … (%d more)", len(events)-k)
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d", i)
	}
	return b.String()
}

// shadeColor is the colour of a kind of fault period.
func shadeColor(kind string) string {
	if kind == "partition" {
		return svgPartit
	}
	return svgPause
}

// shadeSpan is where a fault period is drawn; false if it is outside the
// diagram's time.
func (d *svgDiagram) shadeSpan(s Shade) (x0, x1 float64, ok bool) {
	open := s.To <= s.From || s.To > d.t1
	to := s.To
	if open {
		to = d.t1
	}
	if s.From > d.t1 || to < d.t0 {
		return 0, 0, false
	}
	x0, x1 = d.x(max(s.From, d.t0)), d.x(to)
	if open {
		x1 = d.edge
	}
	return x0, x1, true
}

// shades draws the periods of SVGOptions.Shades over the lanes they affect.
func (d *svgDiagram) shades() {
	for k, s := range d.opt.Shades {
		x0, x1, ok := d.shadeSpan(s)
		if !ok {
			continue
		}
		tip := s.Kind
		if s.Label != "" {
			tip += " " + s.Label
		}
		tip += " from " + FormatNS(s.From-d.origin)
		if s.To > s.From {
			tip += " to " + FormatNS(s.To-d.origin)
		} else {
			tip += " to the end"
		}
		d.printf(`<g class="shade shade-%s" data-k="%d"><title>`, strings.ReplaceAll(s.Kind, " ", "-"), k)
		d.text(svgClip(tip, svgMaxTitle))
		d.printf("</title>")
		lanes := s.Nodes
		if len(lanes) == 0 {
			d.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.18"/>`,
				svgF(x0), svgF(d.top), svgF(max(x1-x0, 2)), svgF(float64(d.rows)*d.rowH), shadeColor(s.Kind))
		}
		for _, p := range lanes {
			if !d.has(p) {
				continue
			}
			d.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.35"/>`,
				svgF(x0), svgF(d.y(p)-d.rowH/2+2), svgF(max(x1-x0, 2)), svgF(d.rowH-4), shadeColor(s.Kind))
		}
		d.printf("</g>\n")
	}
}

// laneNameXs are where the process names are repeated along the lanes, so
// that a wide diagram names its lanes wherever it is looked at.
func (d *svgDiagram) laneNameXs() []float64 {
	var xs []float64
	for x := d.x0 + svgLaneNameEvery; x < d.edge-60; x += svgLaneNameEvery {
		xs = append(xs, x)
	}
	return xs
}

// layoutLaneNames places the repeated process names: near each of
// laneNameXs, on a stretch of the lane with no event under the name.
func (d *svgDiagram) layoutLaneNames() {
	xs := d.laneNameXs()
	if len(xs) == 0 {
		return
	}
	at := make([][]float64, d.rows) // events' x on each lane, in order
	for i := range d.events {
		if e := &d.events[i]; e.Kind.IsProcess() {
			r := d.rowOf[e.Node]
			at[r] = append(at[r], d.x(e.Time))
		}
	}
	for r, p := range d.procs {
		slices.Sort(at[r])
		w := 8 + svgTextWidth("p"+strconv.Itoa(int(p)), 10)*1.1
		for _, base := range xs {
			x := base
			for _, dx := range []float64{0, 40, -40, 80, -80, 120} {
				k, _ := slices.BinarySearch(at[r], base+dx-6)
				if k == len(at[r]) || at[r][k] > base+dx+w {
					x = base + dx
					break
				}
			}
			d.laneAt = append(d.laneAt, svgLaneName{x, p})
		}
	}
}

type svgLaneName struct {
	x float64
	p int32
}

// laneNames draws the repeated process names.
func (d *svgDiagram) laneNames() {
	for _, l := range d.laneAt {
		d.printf(`<text class="lane-name" x="%s" y="%s" font-size="10" font-weight="bold" fill="#8a939c" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">p%d</text>`+"\n",
			svgF(l.x+3), svgF(d.y(l.p)-4), l.p)
	}
}

// reserve claims a rectangle for a label; false if it overlaps one already
// claimed.
func (d *svgDiagram) reserve(x0, y0, x1, y1 float64) bool {
	const cell = 64
	r := svgRect{x0, y0, x1, y1}
	cx0, cy0 := int(math.Floor(x0/cell)), int(math.Floor(y0/cell))
	cx1, cy1 := int(math.Floor(x1/cell)), int(math.Floor(y1/cell))
	for cx := cx0; cx <= cx1; cx++ {
		for cy := cy0; cy <= cy1; cy++ {
			for _, o := range d.placed[[2]int{cx, cy}] {
				if r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1 {
					return false
				}
			}
		}
	}
	d.block(r)
	return true
}

// block claims a rectangle whether or not it overlaps others.
func (d *svgDiagram) block(r svgRect) {
	const cell = 64
	cx0, cy0 := int(math.Floor(r.x0/cell)), int(math.Floor(r.y0/cell))
	cx1, cy1 := int(math.Floor(r.x1/cell)), int(math.Floor(r.y1/cell))
	for cx := cx0; cx <= cx1; cx++ {
		for cy := cy0; cy <= cy1; cy++ {
			d.placed[[2]int{cx, cy}] = append(d.placed[[2]int{cx, cy}], r)
		}
	}
}

// printf appends a formatted piece of the document. The format is always
// a format, even without arguments: "100%%" is written "100%".
func (d *svgDiagram) printf(format string, args ...any) {
	d.out = fmt.Appendf(d.out, format, args...)
}

// text appends s escaped for XML character data or an attribute value.
// Characters XML cannot carry at all (most control characters, invalid
// UTF-8) become U+FFFD.
func (d *svgDiagram) text(s string) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '<':
			d.out = append(d.out, "&lt;"...)
		case r == '>':
			d.out = append(d.out, "&gt;"...)
		case r == '&':
			d.out = append(d.out, "&amp;"...)
		case r == '"':
			d.out = append(d.out, "&quot;"...)
		case r == '\'':
			d.out = append(d.out, "&apos;"...)
		case r == '\n':
			d.out = append(d.out, "&#10;"...)
		case r == '\t', r == '\r':
			d.out = append(d.out, ' ')
		case r == utf8.RuneError && n == 1, r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r < 0xE000:
			d.out = append(d.out, "\uFFFD"...)
		default:
			d.out = utf8.AppendRune(d.out, r)
		}
	}
}

// svgEventName is what an event is called in the diagram: its label, or
// else its type.
func svgEventName(e *Event) string {
	if e.Label != "" {
		return e.Label
	}
	return e.Type
}

// svgClip shortens s to at most n runes, ending with "…" if it was cut.
func svgClip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return s[:i] + "…"
		}
		k++
	}
	return s
}

// svgTextWidth estimates the width of s in pixels at the given font size.
func svgTextWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.6
}

// svgF formats a coordinate with at most one decimal.
func svgF(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// svgTick renders a tick's time as FormatNS does, without trailing zeros
// (0, 500µs, 1ms, 1.5ms), and with more digits if FormatNS's three
// decimals cannot tell ticks step apart.
func svgTick(ns, step int64) string {
	if ns == 0 {
		return "0"
	}
	s := FormatNS(ns)
	unit := strings.TrimLeft(s, "-0123456789.")
	scale := map[string]float64{"s": 1e9, "ms": 1e6, "µs": 1e3}[unit]
	if scale > 0 && step > 0 && float64(step) < scale/1000 {
		digits := int(math.Ceil(math.Log10(scale / float64(step))))
		s = strconv.FormatFloat(float64(ns)/scale, 'f', digits, 64) + unit
	}
	num := strings.TrimSuffix(s, unit)
	if strings.Contains(num, ".") {
		num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	}
	return num + unit
}
