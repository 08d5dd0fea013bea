package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/viewer"
)

// openPage writes the viewer of the cohort command's output with --html
// and opens it in the browser.
func openPage(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	page := filepath.Join(t.TempDir(), "page.html")
	if code, _, errs := cli(t, append(args, "--html", page)...); code != 0 {
		t.Fatalf("cohort %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	do(t, ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("canvas")))
	return page
}

// cohort sim --states records each process's own description of its
// state, and the panel shows it at the stepped event: Ricart–Agrawala's
// state, request, replies and deferred queue.
func TestViewerShowsDescribedState(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "ra.jsonl")
	if code, _, errs := cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--nodes", "3", "--seed", "1", "--states", "--trace", tracePath); code != 0 {
		t.Fatalf("sim --states: exit %d: %s", code, errs)
	}
	tr, err := readTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	// A WANTED state with replies awaited, and the event after it on the
	// same lane that carries none: the first of its next step.
	wanted, after, states := -1, -1, 0
	for i, e := range tr.Events {
		if e.State == nil {
			continue
		}
		states++
		var d struct{ State, Request string }
		if err := json.Unmarshal(e.State, &d); err != nil {
			t.Fatalf("event %d: state %s: %v", i, e.State, err)
		}
		if wanted < 0 && d.State == "WANTED" && d.Request != "" {
			wanted = i
		}
	}
	if wanted < 0 {
		t.Fatal("no WANTED state recorded")
	}
	for i := wanted + 1; i < len(tr.Events); i++ {
		if e := tr.Events[i]; e.Node == tr.Events[wanted].Node && e.Kind.IsProcess() {
			if e.State == nil {
				after = i
			}
			break
		}
	}
	openPage(t, ctx, "view", tracePath)
	if s := eval[int](t, ctx, `window.cohortViewer.stats().states`); s != states {
		t.Errorf("the page counts %d described states, the trace has %d", s, states)
	}
	eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(wanted)+`)`)
	got := text(t, ctx, "#state")
	for _, want := range []string{"stateWANTED", "request" + stateField(t, tr.Events[wanted], "request"), "replies", "deferred"} {
		if !strings.Contains(got, want) {
			t.Errorf("at #%d the state panel shows %q; want it to contain %q", wanted, got, want)
		}
	}
	// An event without a state of its own shows the state its step left,
	// recorded on the step's last event.
	if after >= 0 {
		end := stepEnd(tr, after)
		if end < 0 {
			t.Fatalf("#%d's step records no state", after)
		}
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(after)+`)`)
		if got := text(t, ctx, "#state"); !strings.Contains(got, "as of #"+itoa(end)+", the end of its step") {
			t.Errorf("at #%d (no state of its own) the panel shows %q; want the state as of #%d, the end of its step", after, got, end)
		}
	}
	// Event 0, the first step: its state, if the step recorded one.
	eval[int](t, ctx, `window.cohortViewer.jump(0)`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#state").length`); (n != 0) != (stepEnd(tr, 0) >= 0) {
		t.Errorf("event 0: %d state panels, its step's state at #%d", n, stepEnd(tr, 0))
	}
	screenshot(t, ctx, "viewer-state.png")
}

// screenshot keeps the page's picture as a test artefact.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := step(ctx)
	defer cancel()
	buf, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := artefact(t, name)
	if err := os.WriteFile(shot, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

func itoa(i int) string { return strconv.Itoa(i) }

func stateField(t *testing.T, e trace.Event, k string) string {
	var m map[string]any
	if err := json.Unmarshal(e.State, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[k].(string)
	return s
}

// stepEnd is the event that records the state event i's step left: the
// first on its process's lane from i on that carries a state, before the
// next step begins (a receipt, a timer, an input, a start, a recovery or
// a join) or the process stops; -1 if none does.
func stepEnd(tr *trace.Trace, i int) int {
	p := tr.Events[i].Node
	for j := i; j < len(tr.Events); j++ {
		e := tr.Events[j]
		if e.Node != p || !e.Kind.IsProcess() {
			continue
		}
		if j > i && (e.Kind.Begins() || e.Kind == trace.Recv || e.Kind == trace.Timer || e.Kind == trace.Input || e.Kind.Stops()) {
			return -1
		}
		if e.State != nil {
			return j
		}
		if e.Kind.Stops() {
			return -1
		}
	}
	return -1
}

// cohort sim --view records the states it shows; a run without --states
// or --view keeps the trace (and its hash) it always had.
func TestSimViewRecordsStates(t *testing.T) {
	url, interrupt := serveCLI(t, "sim", "mutex", "--algo", "maekawa", "--nodes", "4", "--seed", "3", "--view")
	if body := get(t, url); !strings.Contains(body, `"state":{"state":"WANTED","votes":[`) {
		t.Errorf("sim --view serves no described Maekawa state (%d bytes)", len(body))
	}
	interrupt()
	hash := func(args ...string) string {
		code, out, errs := cli(t, append([]string{"sim", "mutex", "--algo", "maekawa", "--nodes", "4", "--seed", "3", "--json"}, args...)...)
		if code > 1 {
			t.Fatalf("sim: exit %d: %s", code, errs)
		}
		var r struct {
			SHA string `json:"trace_sha256"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.SHA
	}
	plain, states := hash(), hash("--states")
	if plain == states || plain == "" {
		t.Errorf("the hash with --states (%s) is that without (%s)", states, plain)
	}
	if again := hash("--states"); again != states {
		t.Errorf("--states twice: hashes %s and %s", states, again)
	}
}

// Processes collapse into one lane: picked by clicking their names, then
// "collapse". The messages within the group are hidden, those to and from
// it end on its lane; "expand" brings the lanes back.
func TestViewerCollapsesProcesses(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath, _, tr, _ := simulate(t, dir)
	openPage(t, ctx, "view", tracePath)
	before := stats(t, ctx)
	if before.Lanes != 4 {
		t.Fatalf("%d lanes, want 4", before.Lanes)
	}
	// Arrows between p2 and p3, which the collapsed lane hides.
	within := 0
	sends := map[uint64]trace.Event{}
	for _, e := range tr.Events {
		if e.Kind == trace.Send {
			sends[e.Msg] = e
		}
	}
	fated := map[uint64]bool{}
	for _, e := range tr.Events {
		if e.Kind != trace.Recv && e.Kind != trace.Drop {
			continue
		}
		fated[e.Msg] = true
		if s, ok := sends[e.Msg]; ok && s.Node >= 2 && e.Node >= 2 && s.Node != e.Node {
			within++
		}
	}
	for m, s := range sends {
		if !fated[m] && s.Node >= 2 && s.Peer >= 2 && s.Node != s.Peer {
			within++
		}
	}
	if within == 0 {
		t.Fatal("no message between p2 and p3 in the run")
	}
	// Click the names of p2 and p3 in the gutter, then "collapse".
	for _, p := range []int32{2, 3} {
		i := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Node == p })
		at := eval[struct{ X, Y float64 }](t, ctx, `window.cohortViewer.where(`+itoa(i)+`)`)
		x := eval[float64](t, ctx, `document.getElementById("canvas").getBoundingClientRect().left`) + 20
		do(t, ctx, chromedp.MouseClickXY(x, at.Y))
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#collapse")))
	s := eval[struct {
		Lanes, Groups, WithinGroups, Arrows, ArrowsTotal int
	}](t, ctx, `window.cohortViewer.stats()`)
	if s.Lanes != 3 || s.Groups != 1 || s.WithinGroups != within || s.Arrows != before.Arrows-within {
		t.Errorf("collapsed p2 and p3: %+v; want 3 lanes, 1 group, %d arrows within it hidden, %d drawn", s, within, before.Arrows-within)
	}
	if names := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(names, []string{"p0", "p1", "p2–p3"}) {
		t.Errorf("lanes %v, want p0, p1, p2–p3", names)
	}
	// An event of p3 is drawn on the group's lane, as one of p2.
	i2 := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Node == 2 })
	i3 := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Node == 3 })
	y2 := eval[float64](t, ctx, `window.cohortViewer.where(`+itoa(i2)+`).y`)
	y3 := eval[float64](t, ctx, `window.cohortViewer.where(`+itoa(i3)+`).y`)
	if y2 != y3 {
		t.Errorf("p2's events at y=%v, p3's at y=%v: not one lane", y2, y3)
	}
	screenshot(t, ctx, "viewer-collapsed.png")
	do(t, ctx, chromedp.Click(chromedp.CSS("#expand")))
	if s := stats(t, ctx); s.Lanes != 4 || s.Arrows != before.Arrows {
		t.Errorf("expanded: %d lanes, %d arrows; want 4 and %d", s.Lanes, s.Arrows, before.Arrows)
	}
	// Collapsing all four leaves one lane and no arrow but self-sends.
	if s := eval[struct{ Lanes, Arrows int }](t, ctx, `window.cohortViewer.collapse([0,1,2,3])`); s.Lanes != 1 || s.Arrows != 0 {
		t.Errorf("all collapsed: %+v, want one lane and no arrows", s)
	}
}

// A deadlock's wait-for cycle is drawn between the lanes where it is
// declared (CMH's deadlock outputs) or where a checker found it (basic
// Maekawa's ME2), and listed: clicking it goes to the declaration.
func TestViewerDrawsWaitForCycles(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "cmh.jsonl")
	if code, _, errs := cli(t, "sim", "deadlock", "--algo", "cmh", "--nodes", "5", "--seed", "1", "--trace", tracePath); code != 0 {
		t.Fatalf("sim deadlock: exit %d: %s", code, errs)
	}
	tr, err := readTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	type declared struct {
		at    int
		cycle []int
	}
	var want []declared
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "deadlock" {
			var d struct{ Cycle []int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			want = append(want, declared{e.Index, d.Cycle})
		}
	}
	if len(want) == 0 {
		t.Fatal("the run declares no deadlock")
	}
	openPage(t, ctx, "view", tracePath)
	type cycle struct {
		At            int
		Text, By, Src string
	}
	got := eval[[]cycle](t, ctx, `window.cohortViewer.cycles()`)
	if len(got) != len(want) {
		t.Fatalf("%d cycles listed, want %d: %+v", len(got), len(want), got)
	}
	first := want[0]
	var names []string
	for _, p := range append(first.cycle, first.cycle[0]) {
		names = append(names, "p"+itoa(p))
	}
	if text := strings.Join(names, " → "); got[0].At != first.at || got[0].Text != text {
		t.Errorf("first cycle %+v, want %s at #%d", got[0], text, first.at)
	}
	// Click it in the list: the declaration is current, its edges drawn.
	do(t, ctx, chromedp.Click(chromedp.CSS("#cycles li")))
	s := eval[struct{ Cur, Cycles, CycleEdges int }](t, ctx, `window.cohortViewer.stats()`)
	if s.Cur != first.at || s.CycleEdges < len(first.cycle) {
		t.Errorf("after clicking the cycle: %+v; want #%d current and its %d edges drawn", s, first.at, len(first.cycle))
	}
	if p := text(t, ctx, "#event"); !strings.Contains(p, "wait-for cycle (declared by p"+itoa(int(tr.Events[first.at].Node))+"): "+got[0].Text) {
		t.Errorf("the panel at the declaration shows %q", p)
	}
	screenshot(t, ctx, "viewer-cycle.png")

	// Basic Maekawa deadlocks; ME2's verdict gives the cycle's edges.
	if code, _, errs := cli(t, "sim", "mutex", "--algo", "maekawa", "--nodes", "4", "--seed", "3", "--trace", filepath.Join(dir, "mk.jsonl")); code != 0 {
		t.Fatalf("sim maekawa: exit %d: %s", code, errs)
	}
	openPage(t, ctx, "view", filepath.Join(dir, "mk.jsonl"))
	got = eval[[]cycle](t, ctx, `window.cohortViewer.cycles()`)
	if len(got) != 1 || got[0].By != "ME2" || got[0].Text != "p0 → p1 → p0" || got[0].Src != "edges" {
		t.Errorf("Maekawa's cycles: %+v; want ME2's p0 → p1 → p0, from its edges", got)
	}
	if s := eval[struct{ CycleEdges int }](t, ctx, `window.cohortViewer.showCycle(0)`); s.CycleEdges != 2 {
		t.Errorf("Maekawa's cycle: %d edges drawn, want 2", s.CycleEdges)
	}

	// The OR model declares no cycle: the viewer draws, at p3's
	// declaration, the wait-for graph p3 reached (the knot p1, p2, p3).
	orPath := filepath.Join(dir, "or.jsonl")
	if code, _, errs := cli(t, "sim", "deadlock", "--scenario", "../../deadlock/testdata/or-knot.yaml", "--trace", orPath); code != 0 {
		t.Fatalf("sim cmh-or: exit %d: %s", code, errs)
	}
	openPage(t, ctx, "view", orPath)
	got = eval[[]cycle](t, ctx, `window.cohortViewer.cycles()`)
	if len(got) != 1 || got[0].By != "declared by p3" || got[0].Src != "graph" || !strings.Contains(got[0].Text, "p2 → p3") {
		t.Errorf("cmh-or's graphs: %+v; want the one p3 declared on, p2 → p3 in it", got)
	}
	if s := eval[struct{ CycleEdges int }](t, ctx, `window.cohortViewer.showCycle(0)`); s.CycleEdges != 4 {
		t.Errorf("cmh-or's graph: %d edges drawn, want 4", s.CycleEdges)
	}
	screenshot(t, ctx, "viewer-or-graph.png")
}

// Two runs one above the other on one time scale: cohort view A B.
func TestViewerShowsTwoRunsSideBySide(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	for _, c := range []struct{ algo, file string }{{"ricart-agrawala", a}, {"lamport", b}} {
		if code, _, errs := cli(t, "sim", "mutex", "--algo", c.algo, "--nodes", "3", "--seed", "4", "--trace", c.file); code != 0 {
			t.Fatalf("sim %s: exit %d: %s", c.algo, code, errs)
		}
	}
	ta, err := readTrace(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := readTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	openPage(t, ctx, "view", a, b)
	s := eval[struct {
		Lanes, Runs, Events, ArrowsTotal, Violations int
	}](t, ctx, `window.cohortViewer.stats()`)
	if s.Lanes != 6 || s.Runs != 2 || s.Events != len(ta.Events)+len(tb.Events) || s.ArrowsTotal != arrowCount(ta)+arrowCount(tb) {
		t.Errorf("two runs: %+v; want 6 lanes, 2 runs, %d events, %d arrows", s, len(ta.Events)+len(tb.Events), arrowCount(ta)+arrowCount(tb))
	}
	if names := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(names, []string{"A:p0", "A:p1", "A:p2", "B:p0", "B:p1", "B:p2"}) {
		t.Errorf("lanes %v", names)
	}
	checks := eval[[]string](t, ctx, `[...document.querySelectorAll("#checks li b")].map((b) => b.textContent)`)
	if !slices.Contains(checks, "A: ME1") || !slices.Contains(checks, "B: ME3") {
		t.Errorf("checks listed %v; want each run's, named after it", checks)
	}
	// One time scale: the first receipt of each run is drawn at its time,
	// on the same axis; zooming moves both.
	firstRecv := func(tr *trace.Trace) trace.Event {
		return tr.Events[slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.Recv })]
	}
	ra, rb := firstRecv(ta), firstRecv(tb)
	type pt struct{ X, Y float64 }
	// Where the merged page put them: find each by time and lane.
	idx := func(run int, e trace.Event) int {
		return eval[int](t, ctx, fmt.Sprintf(`(() => { const d = JSON.parse(document.getElementById("cohort-data").textContent);
			return d.events.findIndex((x) => x.t === %d && x.node === %d && x.kind === "recv"); })()`, e.Time, int(e.Node)+3*run))
	}
	ia, ib := idx(0, ra), idx(1, rb)
	// Each run's clocks move with its processes: B's receipt counts no
	// event of A's processes, its own entries three places on.
	for run, k := range []int{ia, ib} {
		vc := []trace.Event{ra, rb}[run].VC.Dense()
		want := make([]uint64, 6)
		copy(want[3*run:], vc)
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(k)+`)`)
		if p, w := text(t, ctx, "#event"), "vector clock"+strings.ReplaceAll(trace.FormatVC(want), ",", ", "); len(vc) == 0 || !strings.Contains(p, w) {
			t.Errorf("run %c's first receipt: panel %q; want %q", 'A'+run, p, w)
		}
	}
	pa := eval[pt](t, ctx, `window.cohortViewer.where(`+itoa(ia)+`)`)
	pb := eval[pt](t, ctx, `window.cohortViewer.where(`+itoa(ib)+`)`)
	scale := (pb.X - pa.X) / float64(rb.Time-ra.Time)
	if ra.Time == rb.Time && pa.X != pb.X || ra.Time != rb.Time && !(scale > 0) {
		t.Errorf("A's receipt at t=%d drawn at x=%v, B's at t=%d at x=%v: not one time scale", ra.Time, pa.X, rb.Time, pb.X)
	}
	if pb.Y <= pa.Y {
		t.Errorf("B's lanes (y=%v) are not below A's (y=%v)", pb.Y, pa.Y)
	}
	eval[viewerStats](t, ctx, `window.cohortViewer.zoom(3)`)
	qa := eval[pt](t, ctx, `window.cohortViewer.where(`+itoa(ia)+`)`)
	qb := eval[pt](t, ctx, `window.cohortViewer.where(`+itoa(ib)+`)`)
	if d0, d1 := pb.X-pa.X, qb.X-qa.X; ra.Time != rb.Time && (d1 < 2.9*d0 || d1 > 3.1*d0) {
		t.Errorf("zoomed ×3: the two receipts %v apart, were %v: the runs do not zoom together", d1, d0)
	}
	screenshot(t, ctx, "viewer-pair.png")

	if code, _, errs := cli(t, "view", a, b, "--report", a); code != 2 || !strings.Contains(errs, "--report") {
		t.Errorf("view A B --report: exit %d, %q; want 2 naming --report", code, errs)
	}
}

// The bank demonstration in the viewer: basic multicast above total
// order, each replica's balance in its state after every delivery.
func TestBankDemoView(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	url, interrupt := serveCLI(t, "sim", "multicast", "--demo", "bank", "--seed", "2", "--view", "--trace", filepath.Join(dir, "bank.jsonl"))
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("canvas")))
	if s := eval[struct{ Runs, Lanes, States int }](t, ctx, `window.cohortViewer.stats()`); s.Runs != 2 || s.Lanes != 4 || s.States == 0 {
		t.Errorf("bank --view: %+v; want two runs of two replicas, with states", s)
	}
	// Every delivery: the balance it left in the panel, the update it
	// delivered applied (not the balance before it, recorded at the end
	// of the replica's step before).
	type delivery struct {
		I, Node int
		Body    string
	}
	all := eval[[]delivery](t, ctx, `(() => { const d = JSON.parse(document.getElementById("cohort-data").textContent);
		return d.events.filter((e) => e.kind === "output" && e.type === "deliver").map((e) => ({i: e.i, node: e.node, body: e.data.body})); })()`)
	if len(all) != 8 {
		t.Fatalf("deliveries %v, want 2 at each of 4 replicas", all)
	}
	applied := map[int][]string{}
	for _, d := range all {
		applied[d.Node] = append(applied[d.Node], d.Body)
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(d.I)+`)`)
		st := text(t, ctx, "#state")
		if want := "applied" + strings.Join(applied[d.Node], ", "); !strings.Contains(st, "balance$") || !strings.Contains(st, want) {
			t.Errorf("at delivery #%d (%s at replica %d) the state panel shows %q; want the balance after it, %q", d.I, d.Body, d.Node, st, want)
		}
	}
	// Each replica's last delivery: its balance in the panel.
	last := make([]int, 4)
	for _, d := range all {
		last[d.Node] = d.I
	}
	var balances []string
	for _, i := range last {
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(i)+`)`)
		st := text(t, ctx, "#state")
		_, after, ok := strings.Cut(st, "balance")
		if !ok {
			t.Fatalf("at #%d the state panel shows %q, no balance", i, st)
		}
		balances = append(balances, strings.Fields(strings.SplitN(after, "applied", 2)[0])[0])
	}
	// Basic multicast: at this seed the replicas apply the updates in
	// different orders and disagree; total order: they agree.
	if balances[0] == balances[1] || balances[2] != balances[3] {
		t.Errorf("balances %v: want A's two replicas to differ and B's to agree", balances)
	}
	screenshot(t, ctx, "viewer-bank.png")
	interrupt()
}

// sim --view serves a multicast run and a replayed schedule too.
func TestSimViewMulticastAndSchedule(t *testing.T) {
	url, interrupt := serveCLI(t, "sim", "multicast", "--algo", "causal", "--nodes", "3", "--seed", "1", "--view")
	if body := get(t, url); !strings.Contains(body, `"algo":"causal"`) || !strings.Contains(body, `"name":"causal-order"`) {
		t.Errorf("sim multicast --view does not serve the run (%d bytes)", len(body))
	}
	interrupt()

	sched := filepath.Join(t.TempDir(), "jr.sched")
	if code, out, errs := cli(t, "explore", "mutex", "--algo", "ricart-agrawala-jr", "--inputs", "0:acquire,1:acquire,0:acquire",
		"--check", "ME3", "--schedule", sched, "--json"); code != 1 {
		t.Fatalf("explore: exit %d\n%s%s", code, out, errs)
	}
	url, interrupt = serveCLI(t, "sim", "mutex", "--schedule", sched, "--view")
	if body := get(t, url); !strings.Contains(body, `"name":"ME3","ok":false,"status":"violated"`) {
		t.Errorf("sim --schedule --view does not serve the replay with its ME3 violation (%d bytes)", len(body))
	}
	interrupt()
}

// cohort compare --html draws the comparison's rows as charts: one per
// metric and case, every measured figure a dot, every theory figure a
// square; --view serves the same page.
func TestCompareCharts(t *testing.T) {
	ctx := browser(t)
	code, out, errs := cli(t, "compare", "mutex", "--nodes", "4,8", "--json")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	var rep struct{ Rows []viewer.ChartRow }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	charts := map[string]bool{}
	measured, theory := 0, 0
	for _, r := range rep.Rows {
		charts[r.Metric+"/"+r.Case] = true
		if r.Measured != nil {
			measured++
		}
		if r.Theory != nil {
			theory++
		}
	}
	page := filepath.Join(t.TempDir(), "charts.html")
	if code, _, errs := cli(t, "compare", "mutex", "--nodes", "4,8", "--html", page); code != 0 {
		t.Fatalf("compare --html: exit %d: %s", code, errs)
	}
	do(t, ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("charts")))
	s := eval[struct{ Charts, Series, Measured, Theory int }](t, ctx, `window.cohortCharts.stats()`)
	if s.Charts != len(charts) || s.Measured != measured || s.Theory != theory {
		t.Errorf("charts %+v; want %d charts, %d measured points, %d theory points", s, len(charts), measured, theory)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(".chart circle.measured-pt").length`); n != measured {
		t.Errorf("%d measured dots in the page, want %d", n, measured)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(".chart rect.theory-pt").length`); n != theory {
		t.Errorf("%d theory squares in the page, want %d", n, theory)
	}
	screenshot(t, ctx, "compare-charts.png")

	url, interrupt := serveCLI(t, "compare", "election", "--nodes", "4", "--view")
	if body := get(t, url); !strings.Contains(body, `"algo":"bully"`) || !strings.Contains(body, "window.cohortCharts") {
		t.Errorf("compare --view does not serve the charts (%d bytes)", len(body))
	}
	if code := interrupt(); code != 0 {
		t.Errorf("compare --view exited %d after Ctrl-C", code)
	}
}

// A clock plot (cohort sim clocks --plot) marks the run's accuracy α as
// the band ±α around true time and its precision π as the clocks' spread
// where it is reached, with the figures the report measures.
func TestClockPlotMarksPrecisionAndAccuracy(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	plot := filepath.Join(dir, "ntp.svg")
	code, out, errs := cli(t, "sim", "clocks", "--algo", "ntp", "--seed", "1", "--plot", plot, "--json")
	if code != 0 {
		t.Fatalf("sim clocks --plot: exit %d: %s", code, errs)
	}
	var r struct{ Metrics map[string]float64 }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate("file://"+plot), chromedp.WaitReady(chromedp.CSS("svg")))
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll("text.mark-label")].map((e) => e.textContent)`)
	want := []string{"+α accuracy " + trace.FormatNS(int64(r.Metrics["accuracy_ns"])), "−α", "π precision " + trace.FormatNS(int64(r.Metrics["precision_ns"]))}
	if !slices.Equal(labels, want) {
		t.Errorf("marks %q, want %q", labels, want)
	}
	// ±α lie either side of the zero line, at the same distance.
	ys := eval[[]float64](t, ctx, `[...document.querySelectorAll("line.mark")].map((l) => +l.getAttribute("y1"))`)
	zero := eval[float64](t, ctx, `+document.querySelector("line.zero").getAttribute("y1")`)
	if len(ys) != 3 || math.Abs((ys[0]-zero)+(ys[1]-zero)) > 0.2 || ys[0] >= zero {
		t.Errorf("mark lines at y=%v, zero at %v: want +α above and −α below, as far", ys, zero)
	}
	screenshot(t, ctx, "clock-plot.png")
}

// The viewer shows a clock synchronization run's clock plot beside its
// diagram (Figures; over the diagram when clicked), accuracy α and
// precision π marked as cohort sim --plot marks them, with the figures
// the report measures; a run whose processes read no clocks has none.
func TestViewerShowsClockPlot(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	jl, page := filepath.Join(dir, "ntp.jsonl"), filepath.Join(dir, "ntp.html")
	code, out, errs := cli(t, "sim", "clocks", "--algo", "ntp", "--seed", "1", "--trace", jl, "--json")
	if code != 0 {
		t.Fatalf("sim clocks: exit %d: %s", code, errs)
	}
	var r struct{ Metrics map[string]float64 }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, "view", jl, "--html", page); code != 0 {
		t.Fatalf("view: exit %d: %s", code, errs)
	}
	do(t, ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("canvas")))
	if figs := eval[[]string](t, ctx, `window.cohortViewer.figures()`); len(figs) != 1 || !strings.Contains(figs[0], "precision") {
		t.Fatalf("figures %q, want the clock plot", figs)
	}
	if hidden := eval[bool](t, ctx, `document.getElementById("figure").hidden`); !hidden {
		t.Error("a figure is shown before it is clicked")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#figures li")))
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll("#figure svg text.mark-label")].map((e) => e.textContent)`)
	want := []string{"+α accuracy " + trace.FormatNS(int64(r.Metrics["accuracy_ns"])), "−α", "π precision " + trace.FormatNS(int64(r.Metrics["precision_ns"]))}
	if !slices.Equal(labels, want) {
		t.Errorf("marks %q, want %q", labels, want)
	}
	if w := eval[float64](t, ctx, `document.querySelector("#figure svg").getBoundingClientRect().width`); w < 300 {
		t.Errorf("the plot is %v pixels wide", w)
	}
	screenshot(t, ctx, "viewer-clock-plot.png")
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	if hidden := eval[bool](t, ctx, `document.getElementById("figure").hidden`); !hidden {
		t.Error("Esc does not go back to the diagram")
	}

	lamport := filepath.Join(dir, "lamport.jsonl")
	if code, _, errs := cli(t, "sim", "clocks", "--algo", "lamport", "--seed", "1", "--trace", lamport); code != 0 {
		t.Fatalf("sim clocks lamport: exit %d: %s", code, errs)
	}
	openPage(t, ctx, "view", lamport)
	if n := eval[int](t, ctx, `window.cohortViewer.figures().length`); n != 0 || !eval[bool](t, ctx, `document.getElementById("figures-section").hidden`) {
		t.Errorf("Lamport's clocks: %d figures; want none, and no Figures section", n)
	}
}

// The viewer draws a checker's wait-for cycle from the verdict's edges,
// not from its text: a report whose ME2 edges say p2 ⇄ p3 while its text
// still says p0 ⇄ p1 is drawn as p2 ⇄ p3, at the latest event of the
// edges; the same report without edges falls back on the text.
func TestViewerDrawsCycleFromVerdictEdges(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "mk.jsonl")
	code, out, errs := cli(t, "sim", "mutex", "--algo", "maekawa", "--nodes", "4", "--seed", "3", "--trace", tracePath, "--json")
	if code > 1 {
		t.Fatalf("sim maekawa: exit %d: %s", code, errs)
	}
	var r lab.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	k := slices.IndexFunc(r.Checks, func(c lab.Check) bool { return c.Name == "ME2" })
	if k < 0 || r.Checks[k].OK || len(r.Checks[k].Edges) != 2 {
		t.Fatalf("the report's ME2: %+v; want a deadlock with two edges", r.Checks)
	}
	me2 := &r.Checks[k]
	if e := me2.Edges; e[0].From != 0 || e[0].To != 1 || e[1].From != 1 || e[1].To != 0 || !strings.Contains(me2.Detail, "p0 waits for p1") {
		t.Fatalf("ME2: %+v, %q; want the cycle p0 → p1 → p0 in its edges and its text", e, me2.Detail)
	}
	// Edges that say otherwise than the text: p2 waits for p3, shown by
	// an event of p2's, and p3 for p2, by one of p3's.
	tr, err := readTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	at2 := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Node == 2 })
	at3 := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Node == 3 })
	me2.Edges = []check.Edge{{From: 2, To: 3, At: at2}, {From: 3, To: 2, At: at3}}
	report := func(name string) string {
		b, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	openPage(t, ctx, "view", tracePath, "--report", report("edges.json"))
	type cycle struct {
		At            int
		Text, By, Src string
	}
	got := eval[[]cycle](t, ctx, `window.cohortViewer.cycles()`)
	if want := (cycle{max(at2, at3), "p2 → p3 → p2", "ME2", "edges"}); len(got) != 1 || got[0] != want {
		t.Fatalf("cycles %+v, want [%+v]", got, want)
	}
	s := eval[struct{ Cur, CycleEdges int }](t, ctx, `window.cohortViewer.showCycle(0)`)
	if s.Cur != max(at2, at3) || s.CycleEdges != 2 {
		t.Errorf("showing the cycle: %+v; want #%d current and 2 edges drawn", s, max(at2, at3))
	}
	screenshot(t, ctx, "viewer-cycle-edges.png")

	me2.Edges = nil
	openPage(t, ctx, "view", tracePath, "--report", report("text.json"))
	if got := eval[[]cycle](t, ctx, `window.cohortViewer.cycles()`); len(got) != 1 || got[0].Src != "detail" || got[0].Text != "p0 → p1, p1 → p0" {
		t.Errorf("without edges: cycles %+v; want p0 → p1, p1 → p0 read from the text", got)
	}
}

// cohort sim position --view serves charts of the runs, which have no
// trace: GPS's position error against the timestamps' error beside
// c·σ·PDOP on a log scale, GNP's error, and Vivaldi's error by round —
// the same run as without --view, its figures measured at more rounds.
func TestSimPositionView(t *testing.T) {
	ctx := browser(t)
	code, out, errs := cli(t, "sim", "position", "--algo", "vivaldi", "--nodes", "200", "--seed", "1", "--json")
	if code != 0 {
		t.Fatalf("sim position: exit %d: %s", code, errs)
	}
	var rep struct {
		ByRound []struct {
			Round          int     `json:"round"`
			MedianRelError float64 `json:"median_rel_error"`
		} `json:"by_round"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.ByRound) != 4 {
		t.Fatalf("vivaldi's report %q: %v", out, err)
	}
	url, interrupt := serveCLI(t, "sim", "position", "--nodes", "200", "--seed", "1", "--view")
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("charts")))
	s := eval[struct{ Charts, Series, Measured, Theory int }](t, ctx, `window.cohortCharts.stats()`)
	// gps: 4 noise levels, measured and theory; gnp: median and p90; vivaldi:
	// both at 10 rounds.
	if s.Charts != 3 || s.Measured != 4+2+20 || s.Theory != 4 {
		t.Errorf("charts %+v; want 3 charts, 26 measured points, 4 theory points", s)
	}
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll(".chart text.x-label")].map((e) => e.textContent)`)
	if want := []string{"timestamp error σ (ns) · log scale", "hosts", "round (one sample per node)"}; !slices.Equal(labels, want) {
		t.Errorf("x axes %q, want %q", labels, want)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.chart[data-metric^="vivaldi"] circle.measured-pt').length`); n != 20 {
		t.Errorf("vivaldi's chart has %d dots, want 20", n)
	}
	// The page's figures at rounds 1, 10, 100 and 1000 are the report's.
	type row struct {
		Algo     string
		X        float64
		Measured float64
	}
	rows := eval[[]row](t, ctx, `JSON.parse(document.getElementById("cohort-data").textContent).rows`)
	for _, b := range rep.ByRound {
		k := slices.IndexFunc(rows, func(r row) bool { return r.Algo == "vivaldi median" && r.X == float64(b.Round) })
		if k < 0 || rows[k].Measured != b.MedianRelError {
			t.Errorf("round %d: the page charts %+v, the report says %v", b.Round, rows[k:min(k+1, len(rows))], b.MedianRelError)
		}
	}
	if first, last := rep.ByRound[0].MedianRelError, rep.ByRound[3].MedianRelError; !(last < first) {
		t.Errorf("vivaldi's error went from %v to %v: the chart would show no convergence", first, last)
	}

	// The maps: GNP's and Vivaldi's nodes, each at its true place and at
	// its estimate, the line between them and the estimate coloured by
	// the node's error; the worst nodes named.
	type mapNode struct {
		ID       int
		Truth    [2]float64
		Estimate *[2]float64
		Error    float64
	}
	type nodeMap struct {
		Title string
		Nodes []mapNode
	}
	maps := eval[[]nodeMap](t, ctx, `JSON.parse(document.getElementById("cohort-data").textContent).maps`)
	m := eval[struct{ Maps, MapNodes, Estimates int }](t, ctx, `window.cohortCharts.stats()`)
	if len(maps) != 2 || m.Maps != 2 || m.MapNodes != 400 || m.Estimates != 400 {
		t.Fatalf("maps %+v (%d in the data); want GNP's and Vivaldi's, 200 nodes each, every one estimated", m, len(maps))
	}
	for k, mp := range maps {
		sel := fmt.Sprintf(`document.querySelectorAll(".chart.map")[%d]`, k)
		drawn := eval[struct{ Truth, Estimates, Offsets int }](t, ctx, `({truth: `+sel+`.querySelectorAll("circle.truth-pt").length, estimates: `+sel+`.querySelectorAll("circle.estimate-pt").length, offsets: `+sel+`.querySelectorAll("line.offset").length})`)
		if drawn.Truth != 200 || drawn.Estimates != 200 || drawn.Offsets != 200 {
			t.Errorf("%s: drawn %+v, want 200 of each", mp.Title, drawn)
		}
		// Estimates beside the truth: aligned, most nodes are near
		// their true place on the 150 ms wide plane.
		var offs, errs []float64
		worst := mp.Nodes[0]
		for _, n := range mp.Nodes {
			offs = append(offs, math.Hypot(n.Estimate[0]-n.Truth[0], n.Estimate[1]-n.Truth[1]))
			errs = append(errs, n.Error)
			if n.Error > worst.Error {
				worst = n
			}
		}
		slices.Sort(offs)
		slices.Sort(errs)
		if med := offs[len(offs)/2]; !(med < 30) {
			t.Errorf("%s: median distance from the truth %.1f ms: the estimates are not aligned on it", mp.Title, med)
		}
		// Errors visible: the worst node is named first, its dot redder
		// than the best's.
		list := eval[string](t, ctx, sel+`.querySelector(".worst-list").textContent`)
		if !strings.HasPrefix(list, fmt.Sprintf("largest: node %d (", worst.ID)) {
			t.Errorf("%s: %q, want node %d first", mp.Title, list, worst.ID)
		}
		fills := eval[[]string](t, ctx, `[...`+sel+`.querySelectorAll("circle.estimate-pt")].sort((a, b) => a.dataset.error - b.dataset.error).map((c) => c.getAttribute("fill"))`)
		if fills[0] == fills[len(fills)-1] {
			t.Errorf("%s: the best and the worst node are both %s", mp.Title, fills[0])
		}
		tip := eval[string](t, ctx, sel+`.querySelector("circle.estimate-pt[data-id='`+itoa(worst.ID)+`'] title").textContent`)
		if !strings.HasPrefix(tip, fmt.Sprintf("node %d: true place (", worst.ID)) || !strings.Contains(tip, "ms off; median relative error of its RTTs") {
			t.Errorf("%s: worst node's tooltip %q", mp.Title, tip)
		}
	}
	if !strings.HasPrefix(maps[1].Title, "vivaldi") {
		t.Errorf("second map %q, want Vivaldi's", maps[1].Title)
	}
	screenshot(t, ctx, "position-charts.png")
	if code := interrupt(); code != 0 {
		t.Errorf("sim position --view exited %d after Ctrl-C", code)
	}
}

// docs/viewer.png, the README's picture of the viewer: Ricart–Agrawala
// with JUST-RELEASED (the run of viewRunArgs, its states recorded) open on
// its ME3 counterexample, at the entry that breaks the order, with that
// process's state in the panel. COHORT_UPDATE_DOCS=1 writes it into
// docs/; otherwise it is a test artefact.
func TestDocsViewerPicture(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath, reportPath := filepath.Join(dir, "ra.jsonl"), filepath.Join(dir, "ra.json")
	code, out, errs := cli(t, append(slices.Clone(viewRunArgs), "--states", "--trace", tracePath, "--json")...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(reportPath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var r lab.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	k := slices.IndexFunc(r.Checks, func(c lab.Check) bool { return c.Name == "ME3" })
	if k < 0 || r.Checks[k].OK || len(r.Checks[k].Events) == 0 {
		t.Fatalf("no ME3 violation in the run: %+v", r.Checks)
	}
	tr, err := readTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	// The first entry the counterexample cites: the one out of order.
	entry := -1
	for _, i := range r.Checks[k].Events {
		if e := tr.Events[i]; entry < 0 && e.Kind == trace.Output && e.Type == "enter" {
			entry = i
		}
	}
	if entry < 0 {
		t.Fatalf("ME3's counterexample %v cites no entry", r.Checks[k].Events)
	}
	page := filepath.Join(dir, "ra.html")
	if code, _, errs := cli(t, "view", tracePath, "--report", reportPath, "--title", "mutex/ricart-agrawala-jr — 4 nodes, seed 11", "--html", page); code != 0 {
		t.Fatalf("view: exit %d: %s", code, errs)
	}
	do(t, ctx, chromedp.EmulateViewport(1400, 700), chromedp.Navigate("file://"+page+"#check=ME3"), chromedp.WaitVisible(chromedp.ID("canvas")))
	eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(entry)+`)`)
	if s := stats(t, ctx); s.Cur != entry || s.Marked != len(r.Checks[k].Events) {
		t.Errorf("at #%d with %d events marked; want #%d, and ME3's %d", s.Cur, s.Marked, entry, len(r.Checks[k].Events))
	}
	if got := text(t, ctx, "#state"); !strings.Contains(got, "stateHELD") || !strings.Contains(got, "deferred") {
		t.Errorf("the state panel at ME3's entry shows %q; want HELD and its deferred requests", got)
	}
	sctx, cancel := step(ctx)
	defer cancel()
	buf, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	shot := artefact(t, "viewer.png")
	if os.Getenv("COHORT_UPDATE_DOCS") == "1" {
		shot = filepath.Join("..", "..", "docs", "viewer.png")
	}
	if err := os.WriteFile(shot, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("picture: %s", shot)
}
