package viewer

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cohort-go/cohort/trace"
)

// MaxEvents is the largest trace the viewer opens: the page holds every
// event in the browser's memory (about 150 bytes each as JSON).
const MaxEvents = 1_000_000

// Page is what the viewer shows: a trace and what is known about its run.
type Page struct {
	Title string       // the page's title; if empty, one is made from the trace header
	Trace *trace.Trace // the run
	// Checks are the checkers' verdicts on the run, in the order listed.
	Checks []Check
	// Shades are the run's fault periods that the trace does not record
	// as events (partitions, pauses), shaded over the lanes they affect.
	// Crashes are taken from the trace itself.
	Shades []trace.Shade
	// Graphs are wait-for graphs to draw as declared cycles are, each at
	// the latest event its edges name: the OR model's, whose
	// declarations name no cycle (lab.Family.Graphs).
	Graphs []trace.WaitForGraph
	// Runs, if set, says the trace holds several runs, one above the
	// other on one time scale (Pair): each run's processes, its lanes,
	// are labelled with its letter and its title. nil: one run.
	Runs []Run
	// Figures are charts of the run, listed beside the diagram and shown
	// over it when clicked: a clock synchronization run's clock offsets
	// with its accuracy and precision marked (lab.OffsetPlot).
	Figures []Figure
}

// Figure is a chart of a run: a standalone SVG document (as
// trace.WriteLinePlot writes one), drawn inline in the page.
type Figure struct {
	Title string `json:"title"`
	SVG   string `json:"svg"`
}

// inlineSVG is an SVG document as an element of the page: without its
// XML declaration, and without the namespace, which HTML implies.
func inlineSVG(doc string) string {
	doc = strings.TrimSpace(doc)
	if _, rest, ok := strings.Cut(doc, "?>"); ok && strings.HasPrefix(doc, "<?xml") {
		doc = strings.TrimSpace(rest)
	}
	return strings.Replace(doc, ` xmlns="http://www.w3.org/2000/svg"`, "", 1)
}

// Run is one of the runs of a page that shows several (Pair): processes
// First .. First+Nodes-1 of the page's trace are its processes 0 .. Nodes-1.
type Run struct {
	Title string `json:"title"`
	First int    `json:"first"`
	Nodes int    `json:"nodes"`
}

// Check is one checker's verdict as the viewer lists it.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Status string `json:"status"` // "ok", "violated", "unknown"
	// Promised is false for a property the algorithm does not promise:
	// its violation is expected, and drawn in a softer colour.
	Promised bool   `json:"promised"`
	Detail   string `json:"detail,omitempty"`
	Events   []int  `json:"events,omitempty"` // the counterexample (trace indices)
	// Edges, for a deadlock, are its wait-for cycle's edges
	// (check.Result.Edges): the viewer draws them at the latest event
	// that shows one. Without them it reads the cycle from Detail.
	Edges []Edge `json:"edges,omitempty"`
}

// Edge is an edge of a wait-for cycle, as the checkers report it.
type Edge = trace.WaitFor

// data is the JSON embedded in the page (read by viewer.js as DATA),
// without its events: they follow in their canonical encoding
// (trace.Header.AppendEvent: a vector clock is an array, or, in a trace
// whose processes join, an object keyed by process ID), which is many
// times faster than reflection.
type data struct {
	Title  string       `json:"title"`
	Header trace.Header `json:"header"`
	// Procs are the processes drawn, a lane each, by ID (trace.Lanes):
	// not every ID up to the highest, in a trace that processes join.
	Procs  []int32 `json:"procs"`
	Checks []Check `json:"checks"`
	Shades []shade `json:"shades"`
	Runs   []Run   `json:"runs,omitempty"`
	Graphs []graph `json:"graphs,omitempty"`
	// Figures are Page.Figures, their documents inline.
	Figures []Figure `json:"figures,omitempty"`
	// Epoch is the wall-clock time of the first event of a live trace,
	// whose times (and local clock readings) are then given from it: a
	// JavaScript number cannot hold nanoseconds since 1970 exactly. A
	// merged live trace's times count from its first event already; its
	// local clock readings are given from that event's.
	Epoch  string        `json:"epoch,omitempty"`
	Events []trace.Event `json:"events,omitempty"` // only for decoding, in the tests
}

// wallClock is a time (ns) no simulated run reaches (11.5 days) and every
// wall-clock reading since 1970 passes, as in the SVG.
const wallClock = 1e15

// graph is a wait-for graph as viewer.js reads it.
type graph struct {
	By    string `json:"by"`
	Edges []Edge `json:"edges"`
}

type shade struct {
	Kind  string  `json:"kind"`
	Nodes []int32 `json:"nodes"`
	From  int64   `json:"from"`
	To    int64   `json:"to"`
	Label string  `json:"label,omitempty"`
}

//go:embed assets/viewer.html
var pageHTML string

//go:embed assets/viewer.css
var pageCSS string

//go:embed assets/viewer.js
var pageJS string

// ErrTooLarge is returned for a trace of more than MaxEvents events.
var ErrTooLarge = errors.New("trace too large for the viewer")

// WriteHTML writes the viewer with p embedded as one self-contained HTML
// document: no external script, style, font or request.
func WriteHTML(w io.Writer, p *Page) error {
	b, err := Render(p)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Render returns the page WriteHTML writes.
func Render(p *Page) ([]byte, error) {
	if p.Trace == nil {
		return nil, errors.New("viewer: no trace")
	}
	if n := len(p.Trace.Events); n > MaxEvents {
		return nil, fmt.Errorf("%w: %d events, the viewer opens at most %d (cut the run short: cohort sim --deadline)", ErrTooLarge, n, MaxEvents)
	}
	d := data{Title: p.Title, Header: p.Trace.Header, Procs: p.Trace.Lanes(), Checks: p.Checks, Runs: p.Runs}
	if d.Checks == nil {
		d.Checks = []Check{}
	}
	for _, g := range p.Graphs {
		d.Graphs = append(d.Graphs, graph{By: g.By, Edges: g.Edges})
	}
	for _, f := range p.Figures {
		d.Figures = append(d.Figures, Figure{Title: f.Title, SVG: inlineSVG(f.SVG)})
	}
	// origin is subtracted from the times, localOrigin from the local
	// clocks' wall-clock readings.
	var origin, localOrigin int64
	if len(p.Trace.Events) > 0 {
		first := 0
		for i := range p.Trace.Events {
			if p.Trace.Events[i].Time < p.Trace.Events[first].Time {
				first = i
			}
		}
		origin, localOrigin = p.Trace.Events[first].Time, p.Trace.Events[first].Time
		switch e := &p.Trace.Events[first]; {
		case origin >= wallClock:
			d.Epoch = time.Unix(0, origin).UTC().Format(time.RFC3339Nano)
		case e.Local >= wallClock:
			// A merged live trace: its times count from the first event
			// already, its nodes' clocks read wall-clock time, given from
			// the first event's reading too.
			origin, localOrigin = 0, e.Local-e.Time
			d.Epoch = time.Unix(0, localOrigin).UTC().Format(time.RFC3339Nano)
		default:
			origin, localOrigin = 0, 0
		}
	}
	d.Shades = []shade{}
	for _, s := range p.Shades {
		from, to := s.From-origin, s.To
		if to > 0 {
			to -= origin
		}
		d.Shades = append(d.Shades, shade{Kind: s.Kind, Nodes: s.Nodes, From: from, To: to, Label: s.Label})
	}
	if d.Title == "" {
		switch h := p.Trace.Header; {
		case h.Algo != "" && h.Family != "":
			d.Title = h.Algo + " (" + h.Family + ")"
		case h.Algo+h.Family != "":
			d.Title = h.Algo + h.Family
		default:
			d.Title = "trace"
		}
	}
	js, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	js = append(js[:len(js)-1], `,"events":[`...)
	for i := range p.Trace.Events {
		if i > 0 {
			js = append(js, ',')
		}
		e := p.Trace.Events[i]
		e.Time -= origin
		if e.Local >= wallClock {
			e.Local -= localOrigin
		}
		js = p.Trace.Header.AppendEvent(js, &e) // an open trace's clocks by process ID
	}
	js = append(js, "]}"...)
	// Outside JSON's strings there is no '<': escaping every one keeps any
	// string of the trace ("</script>") from closing the element that
	// holds the data, and leaves the JSON's meaning unchanged.
	js = bytes.ReplaceAll(js, []byte("<"), []byte(`\u003c`))
	var title bytes.Buffer
	escapeText(&title, d.Title)
	r := strings.NewReplacer(
		"{{TITLE}}", title.String(),
		"{{CSS}}", pageCSS,
		"{{JS}}", pageJS,
	)
	head, tail, _ := strings.Cut(r.Replace(pageHTML), "{{DATA}}")
	out := make([]byte, 0, len(head)+len(js)+len(tail))
	out = append(out, head...)
	out = append(out, js...)
	return append(out, tail...), nil
}

// Pair returns a page that shows run a above run b on one time scale:
// one trace whose first processes are a's and the next b's (b's process
// p is a.Nodes+p), its events merged in time order (a's first at equal
// times), b's message ids moved past a's, each run's checks named after
// it ("A: ME1") with their events renumbered, and each vector timestamp
// moved to its run's processes (b's entry p is entry a.Nodes+p of the
// pair's; the other run's entries are 0, as no message crosses between
// the runs). Zoom, pan and the time axis are shared; Lamport time is each
// run's own. If either run's processes join (trace.Header.Open), so do
// the pair's: its vectors are kept by process ID, and only the processes
// the runs name have a lane, however far apart their IDs.
func Pair(a, b *Page) (*Page, error) {
	if a.Trace == nil || b.Trace == nil {
		return nil, errors.New("viewer: no trace")
	}
	ta, tb := a.Trace, b.Trace
	// A run's processes are those its header counts and any other its
	// events name (an open trace's header may count only its founders).
	na, nb := int32(max(ta.Header.Nodes, ta.Processes())), int32(max(tb.Header.Nodes, tb.Processes()))
	var msgs uint64
	for i := range ta.Events {
		msgs = max(msgs, ta.Events[i].Msg)
	}
	out := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: int(na + nb), Family: ta.Header.Family, Seed: ta.Header.Seed}}
	open := ta.Header.Open() || tb.Header.Open()
	if open {
		out.Header.IDs = int(na + nb)
	}
	if ta.Header.Algo != "" && tb.Header.Algo != "" {
		out.Header.Algo = ta.Header.Algo + " | " + tb.Header.Algo
	}
	out.Events = make([]trace.Event, 0, len(ta.Events)+len(tb.Events))
	ia, ib := make([]int, len(ta.Events)), make([]int, len(tb.Events)) // old index -> new
	for i, j := 0, 0; i < len(ta.Events) || j < len(tb.Events); {
		if j == len(tb.Events) || i < len(ta.Events) && ta.Events[i].Time <= tb.Events[j].Time {
			e := ta.Events[i]
			ia[i] = len(out.Events)
			e.Index = len(out.Events)
			e.VC = placeVC(e.VC, 0, na+nb, open)
			out.Events = append(out.Events, e)
			i++
			continue
		}
		e := tb.Events[j]
		ib[j] = len(out.Events)
		e.Index = len(out.Events)
		e.Node += na
		if e.Peer >= 0 {
			e.Peer += na
		}
		if e.Msg != 0 {
			e.Msg += msgs
		}
		e.VC = placeVC(e.VC, na, na+nb, open)
		out.Events = append(out.Events, e)
		j++
	}
	title := func(p *Page, letter string) string {
		if p.Title != "" {
			return p.Title
		}
		if h := p.Trace.Header; h.Algo != "" {
			return h.Algo
		}
		return "run " + letter
	}
	page := &Page{
		Title: title(a, "A") + "  vs  " + title(b, "B"),
		Trace: out,
		Runs:  []Run{{Title: title(a, "A"), First: 0, Nodes: int(na)}, {Title: title(b, "B"), First: int(na), Nodes: int(nb)}},
	}
	for k, side := range []struct {
		p     *Page
		index []int
		off   int32
	}{{a, ia, 0}, {b, ib, na}} {
		letter := string(rune('A' + k))
		for _, c := range side.p.Checks {
			c.Name = letter + ": " + c.Name
			evs := make([]int, 0, len(c.Events))
			for _, i := range c.Events {
				if i >= 0 && i < len(side.index) {
					evs = append(evs, side.index[i])
				}
			}
			c.Events = evs
			edges := make([]Edge, 0, len(c.Edges))
			for _, e := range c.Edges {
				if e.At >= 0 && e.At < len(side.index) {
					edges = append(edges, Edge{From: e.From + side.off, To: e.To + side.off, At: side.index[e.At]})
				}
			}
			if len(edges) == 0 {
				edges = nil
			}
			c.Edges = edges
			page.Checks = append(page.Checks, c)
		}
		for _, sh := range side.p.Shades {
			nodes := make([]int32, 0, len(sh.Nodes))
			for _, n := range sh.Nodes {
				nodes = append(nodes, n+side.off)
			}
			if len(sh.Nodes) == 0 { // the whole run
				for _, n := range side.p.Trace.Lanes() {
					nodes = append(nodes, n+side.off)
				}
			}
			sh.Nodes = nodes
			page.Shades = append(page.Shades, sh)
		}
	}
	return page, nil
}

func escapeText(b *bytes.Buffer, s string) {
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").WriteString(b, s)
}

// Handler serves the page at / (and nothing else).
func Handler(p *Page) (http.Handler, error) {
	b, err := Render(p)
	if err != nil {
		return nil, err
	}
	return pageHandler(b), nil
}

func pageHandler(b []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/index.html" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(b)
	})
}

// Serve listens on addr ("127.0.0.1:0" for a free port), calls ready with
// the page's URL once it accepts connections, and serves p until ctx ends.
func Serve(ctx context.Context, addr string, p *Page, ready func(url string)) error {
	b, err := Render(p)
	if err != nil {
		return err
	}
	return ServePage(ctx, addr, b, ready)
}

// ServePage serves a page made by Render or RenderCharts as Serve does.
func ServePage(ctx context.Context, addr string, page []byte, ready func(url string)) error {
	h := pageHandler(page)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		// The page is served whole in one response: there is nothing to
		// drain, and a browser's idle keep-alive must not hold up Ctrl-C.
		srv.Close()
	}()
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/")
	}
	err = srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// placeVC returns vector timestamp vc of a run whose processes begin at
// process first of a pair of n processes: entry p of vc is entry first+p
// of the result, which is by process ID if the pair is open. None stays
// none.
func placeVC(vc trace.VC, first, n int32, open bool) trace.VC {
	if vc.IsZero() {
		return trace.VC{}
	}
	if open {
		var ids []int
		var c []uint64
		for p, x := range vc.Entries() {
			ids, c = append(ids, int(first)+p), append(c, x)
		}
		return trace.SparseVC(ids, c)
	}
	out := make([]uint64, n)
	for p, c := range vc.Entries() {
		out[first+int32(p)] = c
	}
	return trace.DenseVC(out)
}
