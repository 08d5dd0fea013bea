package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/trace"
)

// smallTrace is p0 sending one message to p1, whose label tries to close
// the page's script element.
func smallTrace() *trace.Trace {
	const hostile = `</script><script>alert(1)</script>`
	return &trace.Trace{
		Header: trace.Header{Format: trace.FormatName, Nodes: 2, Family: "clocks", Algo: "lamport", Seed: 1},
		Events: []trace.Event{
			{Index: 0, Time: 0, Node: 0, Kind: trace.Start, Lamport: 1, Peer: -1},
			{Index: 1, Time: 10, Node: 0, Kind: trace.Send, Lamport: 2, Msg: 1, Peer: 1, Type: "m", Label: hostile, VC: trace.DenseVC([]uint64{2, 0})},
			{Index: 2, Time: 30, Node: 1, Kind: trace.Recv, Lamport: 3, Msg: 1, Peer: 0, Type: "m", Label: hostile, VC: trace.DenseVC([]uint64{2, 1})},
			{Index: 3, Time: 40, Node: 1, Kind: trace.Output, Lamport: 4, Peer: -1, Type: "done", Data: json.RawMessage(`{"x":"</script>"}`)},
		},
	}
}

// embedded returns the JSON data a page carries.
func embedded(t *testing.T, page []byte) data {
	t.Helper()
	_, rest, ok := bytes.Cut(page, []byte(`<script type="application/json" id="cohort-data">`))
	if !ok {
		t.Fatal("the page has no data element")
	}
	js, _, ok := bytes.Cut(rest, []byte("</script>"))
	if !ok {
		t.Fatal("the data element is not closed")
	}
	var d data
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatalf("the embedded data is not JSON: %v", err)
	}
	return d
}

func TestPageEmbedsTheRunAndNeedsNoNetwork(t *testing.T) {
	tr := smallTrace()
	page, err := Render(&Page{Trace: tr, Checks: []Check{{Name: "ME3", Status: "violated", Events: []int{1, 2}}},
		Shades: []trace.Shade{{Kind: "pause", Nodes: []int32{1}, From: 5, To: 20}},
		Graphs: []trace.WaitForGraph{{By: "declared by p1", Edges: []trace.WaitFor{{From: 1, To: 0, At: 2}}}}})
	if err != nil {
		t.Fatal(err)
	}
	d := embedded(t, page)
	if len(d.Events) != len(tr.Events) || d.Events[1].Label != tr.Events[1].Label || !sameJSON(d.Events[3].Data, tr.Events[3].Data) {
		t.Errorf("the embedded events differ from the trace's: %+v", d.Events)
	}
	if len(d.Checks) != 1 || d.Checks[0].Name != "ME3" || len(d.Checks[0].Events) != 2 {
		t.Errorf("embedded checks = %+v", d.Checks)
	}
	if len(d.Shades) != 1 || d.Shades[0].Kind != "pause" || d.Shades[0].To != 20 {
		t.Errorf("embedded shades = %+v", d.Shades)
	}
	if len(d.Graphs) != 1 || d.Graphs[0].By != "declared by p1" || len(d.Graphs[0].Edges) != 1 || d.Graphs[0].Edges[0].At != 2 {
		t.Errorf("embedded graphs = %+v", d.Graphs)
	}
	if d.Title != "lamport (clocks)" {
		t.Errorf("title = %q, want one made from the header", d.Title)
	}
	// Self-contained: no external script, style or request of any kind.
	s := string(page)
	for _, bad := range []string{"http://", "https://", " src=", "<link", "@import", "url("} {
		if strings.Contains(s, bad) {
			t.Errorf("the page contains %q: it must open with no network", bad)
		}
	}
	// Exactly the page's own two scripts (data and code): the trace's
	// strings cannot open or close one.
	if n := strings.Count(s, "<script"); n != 2 {
		t.Errorf("the page has %d <script> elements, want 2", n)
	}
	if n := strings.Count(s, "</script>"); n != 2 {
		t.Errorf("the page has %d </script> tags, want 2", n)
	}
	for _, placeholder := range []string{"{{TITLE}}", "{{CSS}}", "{{JS}}", "{{DATA}}"} {
		if strings.Contains(s, placeholder) {
			t.Errorf("placeholder %s left in the page", placeholder)
		}
	}
}

func TestTitleIsEscaped(t *testing.T) {
	page, err := Render(&Page{Title: `<b>"x"</b>`, Trace: smallTrace()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<title>&lt;b&gt;&quot;x&quot;&lt;/b&gt; — Cohort viewer</title>") {
		t.Error("the title is not escaped in <title>")
	}
}

func TestEmptyTraceRenders(t *testing.T) {
	page, err := Render(&Page{Trace: &trace.Trace{Header: trace.Header{Nodes: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := embedded(t, page); d.Events == nil || d.Checks == nil || d.Shades == nil {
		t.Errorf("empty lists must be [] for the script, got %+v", d)
	}
	if _, err := Render(&Page{}); err == nil {
		t.Error("a page with no trace rendered")
	}
}

func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	p := &Page{Trace: smallTrace()}
	go func() { done <- Serve(ctx, "127.0.0.1:0", p, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not start")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("url = %q, want one on 127.0.0.1", url)
	}
	want, _ := Render(p)
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(body, want) || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / = %d %q, %d bytes; want the rendered page", res.StatusCode, res.Header.Get("Content-Type"), len(body))
	}
	if res, err := http.Get(url + "other"); err != nil || res.StatusCode != 404 {
		t.Errorf("GET /other: %v %v, want 404", res.StatusCode, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop when its context ended")
	}
	// A bad address is an error, not a hang.
	if err := Serve(context.Background(), "127.0.0.1:-1", p, nil); err == nil {
		t.Error("Serve on a bad address succeeded")
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// A live trace is stamped with wall-clock times: the page gives them from
// the first event (a JavaScript number cannot hold them exactly) and says
// when that was.
func TestWallClockTimesAreGivenFromTheFirstEvent(t *testing.T) {
	tr := smallTrace()
	const epoch = int64(1_764_126_000_123_456_789)
	for i := range tr.Events {
		tr.Events[i].Time += epoch
		tr.Events[i].Local = tr.Events[i].Time + 7
	}
	page, err := Render(&Page{Trace: tr, Shades: []trace.Shade{{Kind: "partition", From: epoch + 5, To: epoch + 20}, {Kind: "pause", From: epoch + 25}}})
	if err != nil {
		t.Fatal(err)
	}
	d := embedded(t, page)
	if d.Epoch != "2025-11-26T03:00:00.123456789Z" {
		t.Errorf("epoch = %q", d.Epoch)
	}
	for i, e := range d.Events {
		if want := tr.Events[i].Time - epoch; e.Time != want || e.Local != want+7 {
			t.Errorf("event %d at t=%d local=%d, want %d and %d", i, e.Time, e.Local, want, want+7)
		}
	}
	if s := d.Shades; s[0].From != 5 || s[0].To != 20 || s[1].From != 25 || s[1].To != 0 {
		t.Errorf("shades = %+v, want them from the first event (an open one still open)", s)
	}
}

// A merged live trace counts its times from its first event already, and
// keeps each node's wall-clock readings as local times: the page gives
// those from the first event's reading, and says when that was.
func TestMergedLiveTraceLocalClocksAreGivenFromTheFirstEvent(t *testing.T) {
	tr := smallTrace()
	const epoch = int64(1_764_126_000_123_456_789)
	for i := range tr.Events {
		tr.Events[i].Local = epoch + tr.Events[i].Time + int64(i%2)*3 // one node's clock 3ns ahead
	}
	page, err := Render(&Page{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	d := embedded(t, page)
	if want := time.Unix(0, tr.Events[0].Local-tr.Events[0].Time).UTC().Format(time.RFC3339Nano); d.Epoch != want {
		t.Errorf("epoch = %q, want %q", d.Epoch, want)
	}
	for i, e := range d.Events {
		base := tr.Events[0].Local - tr.Events[0].Time
		if e.Time != tr.Events[i].Time || e.Local != tr.Events[i].Local-base {
			t.Errorf("event %d at t=%d local=%d, want %d and %d", i, e.Time, e.Local, tr.Events[i].Time, tr.Events[i].Local-base)
		}
	}
}

// A live trace that a member joined with a high process ID embeds its
// clocks keyed by process ID, as the file holds them, not as arrays of
// 60,001 entries each.
func TestPageKeepsSparseClocksSparse(t *testing.T) {
	tr, err := trace.Read(strings.NewReader(`{"format":"cohort-trace/1","nodes":3,"ids":65536,"seed":0}
{"i":0,"t":0,"node":60000,"kind":"start","local":0,"lamport":1,"vc":{"60000":1},"peer":-1}
{"i":1,"t":1,"node":60000,"kind":"send","local":1,"lamport":2,"vc":{"60000":2},"msg":5,"peer":1}
{"i":2,"t":2,"node":1,"kind":"recv","local":2,"lamport":4,"vc":{"1":1,"60000":2},"msg":5,"peer":60000}
`))
	if err != nil {
		t.Fatal(err)
	}
	page, err := Render(&Page{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`"vc":{"1":1,"60000":2}`)) {
		t.Errorf("the receipt's clock is not embedded keyed by process ID")
	}
	d := embedded(t, page)
	if e := d.Events[2]; e.VC.At(60000) != 2 || e.VC.At(1) != 1 || !e.VC.Sparse() {
		t.Errorf("embedded receipt's clock: entries 1 and 60000 are %d and %d, sparse %v; want 1, 2, true", e.VC.At(1), e.VC.At(60000), e.VC.Sparse())
	}
	if len(page) > 1<<20 {
		t.Errorf("a page of three events takes %d bytes", len(page))
	}
}

// A figure is drawn inline: its SVG document without the XML
// declaration and the namespace, so that the page names no address.
func TestFiguresAreInline(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text class="mark-label">π</text></svg>
`
	page, err := Render(&Page{Trace: smallTrace(), Figures: []Figure{{Title: "plot", SVG: doc}}})
	if err != nil {
		t.Fatal(err)
	}
	d := embedded(t, page)
	if len(d.Figures) != 1 || d.Figures[0].SVG != `<svg width="10" height="10"><text class="mark-label">π</text></svg>` {
		t.Errorf("figures %+v", d.Figures)
	}
	if strings.Contains(string(page), "http://") {
		t.Error("the page names an address")
	}
}
