package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/viewer"
)

// viewFamilies is a run of each family for the viewer, with the states
// the algorithm describes.
var viewFamilies = map[string][]string{
	"clocks":       {"--algo", "lamport", "--nodes", "4"},
	"mutex":        {"--algo", "ricart-agrawala", "--nodes", "4"},
	"election":     {"--algo", "bully", "--nodes", "4"},
	"multicast":    {"--algo", "causal", "--nodes", "4"},
	"gossip":       {"--algo", "push", "--nodes", "8"},
	"overlay":      {"--algo", "pastry", "--nodes", "8"},
	"snapshot":     {"--algo", "chandy-lamport", "--nodes", "4"},
	"deadlock":     {"--algo", "cmh", "--nodes", "5"},
	"rpc":          {"--algo", "plain", "--nodes", "3"},
	"consensus":    {"--algo", "raft", "--nodes", "3", "--deadline", "2s"},
	"synchronizer": {"--algo", "alpha", "--nodes", "4"},
}

// A simulated run of every family opens in the viewer: every event,
// every lane, every arrow and every check listed; stepping shows each
// event in the panel, and the algorithm's state where it describes one.
func TestViewerOpensEveryFamily(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	for _, f := range lab.Families() {
		args, ok := viewFamilies[f.Name]
		if !ok {
			t.Errorf("family %s: no run for the viewer in viewFamilies", f.Name)
			continue
		}
		tracePath, reportPath, page := filepath.Join(dir, f.Name+".jsonl"), filepath.Join(dir, f.Name+".json"), filepath.Join(dir, f.Name+".html")
		code, out, errs := cli(t, append(append([]string{"sim", f.Name}, args...), "--seed", "1", "--states", "--trace", tracePath, "--json")...)
		if code > 1 {
			t.Fatalf("sim %s: exit %d: %s", f.Name, code, errs)
		}
		var r lab.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if err := os.WriteFile(reportPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := readTrace(tracePath)
		if err != nil {
			t.Fatal(err)
		}
		if code, _, errs := cli(t, "view", tracePath, "--report", reportPath, "--html", page); code != 0 {
			t.Fatalf("view %s: exit %d: %s", f.Name, code, errs)
		}
		checkFamilyPage(t, ctx, f.Name, "file://"+page, tr, len(r.Checks))
	}
}

// checkFamilyPage opens a family's page and checks what it draws against
// the trace: lanes (one per process the trace names, by its ID, and in a
// trace of a fixed set of processes one per process its header counts),
// events, arrows, message types, the checks listed, the event panel and
// the state panel.
func checkFamilyPage(t *testing.T, ctx context.Context, name, url string, tr *trace.Trace, checks int) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("canvas")))
	if !eval[bool](t, ctx, `typeof window.cohortViewer === "object"`) {
		t.Fatalf("%s: the viewer's script did not finish", name)
	}
	s := eval[struct {
		viewerStats
		Types, States int
	}](t, ctx, `window.cohortViewer.stats()`)
	procs := map[int32]bool{}
	if !tr.Header.Open() {
		for p := range int32(tr.Header.Nodes) {
			procs[p] = true
		}
	}
	types := map[string]bool{}
	states := 0
	for _, e := range tr.Events {
		procs[e.Node] = true
		if e.Peer >= 0 {
			procs[e.Peer] = true
		}
		if e.Kind == trace.Send || e.Kind == trace.Recv || e.Kind == trace.Drop {
			types[e.Type] = true
		}
		if e.State != nil {
			states++
		}
	}
	if len(tr.Events) == 0 {
		t.Fatalf("%s: an empty trace", name)
	}
	var names []string
	for _, p := range slices.Sorted(maps.Keys(procs)) {
		names = append(names, "p"+itoa(int(p)))
	}
	lanes := len(names)
	if got := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(got, names) {
		t.Errorf("%s: lanes %v, want %v", name, fewNames(got), fewNames(names))
	}
	if s.Events != len(tr.Events) || s.Lanes != lanes || s.ArrowsTotal != arrowCount(tr) || s.Types != len(types) || s.States != states {
		t.Errorf("%s: drawn %d events, %d lanes, %d arrows, %d types, %d states; the trace has %d, %d, %d, %d, %d",
			name, s.Events, s.Lanes, s.ArrowsTotal, s.Types, s.States, len(tr.Events), lanes, arrowCount(tr), len(types), states)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#checks li").length`); n != checks {
		t.Errorf("%s: %d checks listed, the run has %d", name, n, checks)
	}
	// Step to the middle event, and to the first with a state.
	mid := len(tr.Events) / 2
	eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(mid)+`)`)
	if p, e := text(t, ctx, "#event"), tr.Events[mid]; !strings.HasPrefix(p, fmt.Sprintf("#%d p%d %s", mid, e.Node, e.Kind)) {
		t.Errorf("%s: the panel at #%d shows %q", name, mid, p)
	}
	if k := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.State != nil }); k >= 0 {
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(k)+`)`)
		if st := text(t, ctx, "#state"); strings.TrimSpace(st) == "" {
			t.Errorf("%s: at #%d, which records a state, the state panel is empty", name, k)
		}
	}
	screenshot(t, ctx, "viewer-"+strings.NewReplacer("/", "-", " ", "-").Replace(name)+".png")
}

// Live traces open in the viewer too, on a time axis from the run's
// first event: the merged traces of 3-process clusters running an
// algorithm of each family that runs on its own as a service (Lamport's
// clocks, the bully election, the α synchronizer, push gossip; Chandy–
// Lamport, CMH and plain RPC only start, with no input to act on), of
// the replicated log behind a lock, of the groups — textbook
// (total-sequencer) and on the replicated log — with every node
// multicasting, and of the DHT with Scribe multicasts, a put and a get;
// the last three from the nodes' traces of their kind (node<i>/group.jsonl,
// groups.jsonl, dht.jsonl), judged by their family's checkers, every one
// of which holds and is listed as holding. The lock service's
// Ricart–Agrawala trace is opened by TestClusterOfProcessesLocks.
func TestViewerOpensLiveTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters of processes")
	}
	ctx := browser(t)
	bin := cohortBinary(t)
	const (
		settle    = iota // wait until the traces stop growing
		grow             // wait for 20 events of each node (gossip never stops)
		lock             // take a lock, then stop (the log's heartbeats never stop)
		multicast        // every node multicasts twice; wait for every delivery
		scribe           // every node joins a Scribe group, two multicast; a put and a get
	)
	for _, c := range []struct {
		name, family, algo string
		kind               string // the nodes' traces: node<i>/<kind>.jsonl ("": node<i>.jsonl)
		args               []string
		wait               int
		holds              []string // checks listed, each holding
	}{
		{name: "clocks", args: []string{"--run", "clocks/lamport"}, wait: settle},
		{name: "election", args: []string{"--run", "election/bully"}, wait: settle},
		{name: "synchronizer", args: []string{"--run", "synchronizer/alpha"}, wait: settle},
		{name: "gossip", args: []string{"--run", "gossip/push"}, wait: grow},
		{name: "snapshot", args: []string{"--run", "snapshot/chandy-lamport"}, wait: settle},
		{name: "deadlock", args: []string{"--run", "deadlock/cmh"}, wait: settle},
		{name: "rpc", args: []string{"--run", "rpc/plain"}, wait: settle},
		{name: "consensus", wait: lock},
		{name: "multicast", algo: "total-sequencer", kind: "group", args: []string{"--group", "total-sequencer"}, wait: multicast,
			holds: []string{"integrity", "no-duplicates", "mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"}},
		{name: "multicast on the log", family: "consensus", algo: "raft-group", kind: "groups", args: []string{"--group", "raft"}, wait: multicast,
			holds: []string{"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness", "group-order"}},
		{name: "overlay", algo: "scribe", kind: "dht", args: []string{"--dht"}, wait: scribe,
			holds: []string{"scribe-delivery", "overlay-lookup", "dht-get"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.family == "" {
				c.family = c.name
			}
			traces := t.TempDir()
			endpoints := startCluster(t, append([]string{"--nodes", "3", "--trace-dir", traces}, c.args...)...)
			var files []string
			for i := range 3 {
				if c.kind == "" {
					files = append(files, filepath.Join(traces, "node"+itoa(i)+".jsonl"))
				} else {
					files = append(files, filepath.Join(traces, "node"+itoa(i), c.kind+".jsonl"))
				}
			}
			switch c.wait {
			case lock:
				if out, err := exec.Command(bin, "lock", "x", "--endpoints", endpoints[0], "--", "true").CombinedOutput(); err != nil {
					t.Fatalf("lock: %v\n%s", err, out)
				}
			case grow:
				waitTracesGrow(t, traces, 3, 20)
			case multicast:
				multicastLive(t, bin, endpoints, files, c.kind)
			case scribe:
				scribeLive(t, bin, endpoints, files)
			default:
				waitTracesSettle(t, traces, 3)
			}
			stopClusters(t)
			merged, tr := mergeLive(t, bin, files)
			if tr.Header.Family != c.family || c.algo != "" && tr.Header.Algo != c.algo {
				t.Fatalf("the merged trace is of %s/%s, want %s/%s", tr.Header.Family, tr.Header.Algo, c.family, c.algo)
			}
			page := filepath.Join(t.TempDir(), "live.html")
			if code, _, errs := cli(t, "view", merged, "--html", page); code != 0 {
				t.Fatalf("view: exit %d: %s", code, errs)
			}
			checkFamilyPage(t, ctx, "live "+c.name, "file://"+page, tr, pageChecks(t, page))
			if c.holds != nil {
				checkLiveVerdicts(t, ctx, bin, merged, tr, c.holds)
			}
			// What the checkers judged: every delivery of every message;
			// both Scribe multicasts, each within the run by the delivery
			// bound, and the put and the get at the key's home.
			outputs, inputs := map[string]int{}, map[string][]int64{}
			for _, e := range tr.Events {
				switch e.Kind {
				case trace.Output:
					outputs[e.Type]++
					var entry consensus.Delivered // an output per log entry, of its messages
					if e.Type == "group-delivered" && json.Unmarshal(e.Data, &entry) == nil {
						outputs["group-message"] += len(entry.Messages)
					}
				case trace.Input:
					inputs[e.Type] = append(inputs[e.Type], e.Time)
				}
			}
			last := tr.Events[len(tr.Events)-1].Time
			switch c.wait {
			case multicast:
				if d := outputs["deliver"] + outputs["group-message"]; d != 18 {
					t.Errorf("%d deliveries in the merged trace, want 3 nodes × 6 messages (%v)", d, outputs)
				}
			case scribe:
				casts := inputs["multicast"]
				if len(casts) != 2 || outputs["received"] != 6 || slices.ContainsFunc(casts, func(at int64) bool { return at+int64(overlay.ScribeDeliveryBound) > last }) {
					t.Errorf("multicasts at %v, %d received, the run ends at %v: want 2, each received by 3 members, judged (the run longer by %v)",
						casts, outputs["received"], last, overlay.ScribeDeliveryBound)
				}
				if len(inputs["put"]) != 1 || len(inputs["get"]) != 1 || outputs["stored"] != 1 || outputs["got"] != 1 {
					t.Errorf("inputs %v, outputs %v: want a put stored and a get answered", inputs, outputs)
				}
			}
			// The axis starts at the first event (trace merge counts from
			// it), whose wall-clock time the header gives; the nodes'
			// clocks are read from it too, not from 1970.
			first := slices.MinFunc(tr.Events, func(a, b trace.Event) int { return cmp.Compare(a.Time, b.Time) })
			got := eval[struct {
				Epoch      string
				T0, MaxLoc int64
			}](t, ctx, `(() => { const d = JSON.parse(document.getElementById("cohort-data").textContent);
				return {epoch: d.epoch, t0: Math.min(...d.events.map((e) => e.t)), maxLoc: Math.max(...d.events.map((e) => e.local))}; })()`)
			if want := time.Unix(0, first.Local-first.Time).UTC().Format(time.RFC3339Nano); got.Epoch != want || got.T0 != 0 || got.MaxLoc > int64(time.Hour) {
				t.Errorf("live times from %q, the first at %d, local clocks up to %d; want from %s, at 0, within the run", got.Epoch, got.T0, got.MaxLoc, want)
			}
			if info := text(t, ctx, "#info"); !strings.Contains(info, "from "+got.Epoch) {
				t.Errorf("the header says %q, not from when the run began", info)
			}
			if c.kind == "group" {
				swappedOrderIsCaught(t, ctx, tr) // (opens another page)
			}
		})
	}
}

// mergeLive merges the nodes' trace files with cohort trace merge, and
// returns the merged trace's file and the trace.
func mergeLive(t *testing.T, bin string, files []string) (string, *trace.Trace) {
	t.Helper()
	merged := filepath.Join(t.TempDir(), "live.jsonl")
	if out, err := exec.Command(bin, append([]string{"trace", "merge", "-o", merged}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	tr, err := readTrace(merged)
	if err != nil {
		t.Fatal(err)
	}
	return merged, tr
}

// pageChecks is how many checks the viewer page lists: those cohort view ran
// on the trace, read from the page's data.
func pageChecks(t *testing.T, page string) int {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), `<script type="application/json" id="cohort-data">`)
	js, _, ok2 := strings.Cut(rest, "</script>")
	var d struct{ Checks []json.RawMessage }
	if !ok || !ok2 || json.Unmarshal([]byte(js), &d) != nil {
		t.Fatalf("%s: no data in the page", page)
	}
	return len(d.Checks)
}

// waitTracesSettle waits until the n nodes' traces in dir stop growing.
func waitTracesSettle(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := int64(-1)
	for {
		var size int64
		for i := range n {
			if st, err := os.Stat(filepath.Join(dir, "node"+itoa(i)+".jsonl")); err == nil {
				size += st.Size()
			}
		}
		if size == last && size > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the traces did not settle")
		}
		last = size
		time.Sleep(500 * time.Millisecond)
	}
}

// Every violation is listed and marked, not only the first: a report
// with two (ME3, not promised by Ricart–Agrawala with JUST-RELEASED, and
// a promised one added to it) marks the events of both, those only in the
// unpromised one's counterexample in the softer colour; clicking each
// highlights its own counterexample.
func TestViewerMarksEveryViolation(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath, _, tr, r := simulate(t, dir)
	k := slices.IndexFunc(r.Checks, func(c lab.Check) bool { return c.Name == "ME3" })
	if k < 0 || r.Checks[k].OK || r.Checks[k].Guaranteed {
		t.Fatalf("the run's ME3: %+v; want a violation not promised", r.Checks)
	}
	me3 := r.Checks[k].Events
	// A promised violation, of two events outside ME3's counterexample.
	var other []int
	for i := range tr.Events {
		if len(other) < 2 && !slices.Contains(me3, i) && tr.Events[i].Kind == trace.Output {
			other = append(other, i)
		}
	}
	k1 := slices.IndexFunc(r.Checks, func(c lab.Check) bool { return c.Name == "ME1" })
	r.Checks[k1] = lab.Check{Name: "ME1", OK: false, Status: "violated", Guaranteed: true, Detail: "two processes in the critical section", Events: other}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(dir, "two.json")
	if err := os.WriteFile(reportPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	openPage(t, ctx, "view", tracePath, "--report", reportPath)
	s := eval[struct {
		Violations, Marked, MarkedSoft int
	}](t, ctx, `window.cohortViewer.stats()`)
	if s.Violations != 2 || s.Marked != len(me3)+len(other) || s.MarkedSoft != len(me3) {
		t.Errorf("%+v; want 2 violations, %d events marked, ME3's %d softer", s, len(me3)+len(other), len(me3))
	}
	items := eval[[]string](t, ctx, `[...document.querySelectorAll("#checks li.violation")].map((li) => li.className + ": " + li.querySelector("b").textContent)`)
	if !slices.Contains(items, "violation: ME1") || !slices.Contains(items, "violation soft: ME3") {
		t.Errorf("violations listed %q; want ME1 (promised) and ME3 (soft)", items)
	}
	for _, c := range []struct {
		name   string
		events []int
	}{{"ME1", other}, {"ME3", me3}} {
		do(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#checks li.violation[data-k="%d"]`, slices.IndexFunc(r.Checks, func(x lab.Check) bool { return x.Name == c.name })))))
		if st := stats(t, ctx); st.Highlighted != len(c.events) || st.Cur != slices.Min(c.events) {
			t.Errorf("after clicking %s: %d highlighted, current #%d; want %d, #%d", c.name, st.Highlighted, st.Cur, len(c.events), slices.Min(c.events))
		}
	}
	screenshot(t, ctx, "viewer-two-violations.png")
}

// Losses are drawn by cause — the network's, a partition's, the
// receiver's crash — each in its colour, with a legend entry each.
func TestViewerMarksLossesByCause(t *testing.T) {
	ctx := browser(t)
	tracePath := filepath.Join(t.TempDir(), "lossy.jsonl")
	if code, _, errs := cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--nodes", "4", "--seed", "1", "--loss", "0.05",
		"--fault", "partition {0,1} | {2,3} from 2ms to 8ms", "--fault", "crash 3 at 10ms", "--trace", tracePath); code > 1 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	tr, err := readTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, e := range tr.Events {
		if e.Kind == trace.Drop {
			switch {
			case e.Reason == "partition":
				want["partition"]++
			case strings.HasPrefix(e.Reason, "receiver "):
				want["receiver down"]++
			default:
				want["loss"]++
			}
		}
	}
	if len(want) != 3 {
		t.Fatalf("losses by cause %v; want all three causes in the run", want)
	}
	openPage(t, ctx, "view", tracePath)
	got := eval[map[string]int](t, ctx, `window.cohortViewer.stats().dropCauses`)
	if !maps.Equal(got, want) {
		t.Errorf("losses drawn by cause %v, want %v", got, want)
	}
	legend := eval[[]string](t, ctx, `[...document.querySelectorAll("#legend li")].map((li) => li.textContent.trim())`)
	colours := map[string]string{}
	for _, c := range []string{"loss", "partition", "receiver down"} {
		entry := "- - ✕ lost (" + c + ")"
		if !slices.Contains(legend, entry) {
			t.Errorf("legend %q has no %q", legend, entry)
		}
		colours[c] = eval[string](t, ctx, `[...document.querySelectorAll("#legend li")].find((li) => li.textContent.includes("lost (`+c+`)")).querySelector("span").style.color`)
	}
	if colours["loss"] == colours["partition"] || colours["partition"] == colours["receiver down"] || colours["loss"] == colours["receiver down"] {
		t.Errorf("the causes share colours: %v", colours)
	}
}

// Labels are left out only where they would overlap: zoomed out on a
// crowded run some are drawn and some not, and zooming in draws more; a
// sparse run has every message labelled. Process names stay put while
// the diagram pans. The Lamport layout puts events
// in one column per Lamport timestamp, every arrow going rightwards.
func TestViewerLabelsByCrowdingAndLamportColumns(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	tracePath, _, tr, _ := simulate(t, dir)
	openPage(t, ctx, "view", tracePath)
	type drawn struct{ Labels, Arrows, Events int }
	fit := eval[drawn](t, ctx, `window.cohortViewer.fit(), window.cohortViewer.stats()`)
	if fit.Labels == 0 || fit.Labels >= fit.Arrows+fit.Events {
		t.Errorf("zoomed out: %d labels for %d arrows and events; want some left out, not all", fit.Labels, fit.Arrows+fit.Events)
	}
	zoomed := eval[drawn](t, ctx, `window.cohortViewer.zoom(8), window.cohortViewer.stats()`)
	if float64(zoomed.Labels)/float64(max(zoomed.Arrows, 1)) <= float64(fit.Labels)/float64(fit.Arrows) {
		t.Errorf("zoomed ×8: %d labels for %d arrows, zoomed out %d for %d; want a larger share labelled", zoomed.Labels, zoomed.Arrows, fit.Labels, fit.Arrows)
	}
	// The process names stay in their gutter wherever the diagram is
	// panned.
	for _, dx := range []int{-3000, 6000} {
		if n := eval[int](t, ctx, fmt.Sprintf(`window.cohortViewer.pan(%d), window.cohortViewer.stats().laneNames`, dx)); n != 4 {
			t.Errorf("panned by %d: %d process names drawn, want 4", dx, n)
		}
	}

	// The Lamport layout: x grows with the Lamport timestamp, equal
	// timestamps share a column.
	eval[any](t, ctx, `window.cohortViewer.setLayout("lamport"), window.cohortViewer.fit()`)
	xs := eval[[]float64](t, ctx, fmt.Sprintf(`Array.from({length: %d}, (_, i) => window.cohortViewer.where(i).x)`, len(tr.Events)))
	for i, a := range tr.Events {
		for j, b := range tr.Events {
			if !a.Kind.IsProcess() || !b.Kind.IsProcess() {
				continue
			}
			if a.Lamport < b.Lamport && !(xs[i] < xs[j]) || a.Lamport == b.Lamport && xs[i] != xs[j] {
				t.Fatalf("Lamport layout: #%d (L=%d) at x=%v, #%d (L=%d) at x=%v", i, a.Lamport, xs[i], j, b.Lamport, xs[j])
			}
		}
	}

	// A sparse run: two processes, every message labelled.
	sparse := filepath.Join(dir, "sparse.jsonl")
	if code, _, errs := cli(t, "sim", "clocks", "--algo", "lamport-figure", "--trace", sparse); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	openPage(t, ctx, "view", sparse)
	s := eval[drawn](t, ctx, `window.cohortViewer.stats()`)
	if s.Labels < s.Arrows {
		t.Errorf("lamport-figure: %d labels for %d arrows; want every message labelled", s.Labels, s.Arrows)
	}
}

// The state panel shows every algorithm that describes its state: the
// field named below at the first event whose recorded state has it
// (Maekawa's vote, the sequencer's next number, ...).
func TestViewerShowsEveryDescribedState(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	for _, c := range []struct{ family, algo, field string }{
		{"mutex", "ricart-agrawala", "deferred"},
		{"mutex", "lamport", "queue"},
		{"mutex", "maekawa", "voted_for"},
		{"mutex", "central", "holder"},
		{"multicast", "total-sequencer", "next_number"},
		{"multicast", "total-isis", "collecting"},
		{"election", "bully", "coordinator"},
		{"election", "ring", "participant"},
		{"deadlock", "cmh", "computations"},
	} {
		tracePath := filepath.Join(dir, c.algo+".jsonl")
		if code, _, errs := cli(t, "sim", c.family, "--algo", c.algo, "--seed", "2", "--states", "--trace", tracePath); code > 1 {
			t.Fatalf("sim %s: exit %d: %s", c.algo, code, errs)
		}
		tr, err := readTrace(tracePath)
		if err != nil {
			t.Fatal(err)
		}
		at := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return strings.Contains(string(e.State), `"`+c.field+`"`) })
		if at < 0 {
			t.Errorf("%s: no state with %q recorded", c.algo, c.field)
			continue
		}
		openPage(t, ctx, "view", tracePath)
		eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(at)+`)`)
		if got := text(t, ctx, "#state"); !strings.Contains(got, c.field) {
			t.Errorf("%s: at #%d the state panel shows %q; want %s in it", c.algo, at, got, c.field)
		}
	}
}

// --listen chooses where the viewer is served.
func TestViewListensWhereTold(t *testing.T) {
	dir := t.TempDir()
	tracePath, _, _, _ := simulate(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free ephemeral port, given back
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url, interrupt := serveCLI(t, "view", tracePath, "--listen", addr)
	if url != "http://"+addr+"/" {
		t.Errorf("served at %s, want http://%s/", url, addr)
	}
	if body := get(t, url); !strings.Contains(body, `id="cohort-data"`) {
		t.Errorf("%s serves no viewer (%d bytes)", url, len(body))
	}
	if code := interrupt(); code != 0 {
		t.Errorf("cohort view exited %d after Ctrl-C", code)
	}
}

// waitTracesGrow waits until each of the n nodes' traces in dir holds at
// least events events.
func waitTracesGrow(t *testing.T, dir string, n, events int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		least := events
		for i := range n {
			b, _ := os.ReadFile(filepath.Join(dir, "node"+itoa(i)+".jsonl"))
			least = min(least, strings.Count(string(b), "\n")-1) // less the header
		}
		if least >= events {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the traces hold %d events at least, not %d", least, events)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// multicastLive has every node of a live cluster multicast twice to the
// group "news", and waits until each node's trace of kind (group: the
// textbook groups, "deliver" outputs; groups: the log's, "group-message")
// records every delivery.
func multicastLive(t *testing.T, bin string, endpoints, files []string, kind string) {
	t.Helper()
	var wg sync.WaitGroup // all at once: concurrent multicasts, for the order to order
	for i, ep := range endpoints {
		for k := range 2 {
			wg.Go(func() {
				if out, err := exec.Command(bin, "multicast", "news", "--send", fmt.Sprintf("m%d.%d", i, k), "--endpoints", ep).CombinedOutput(); err != nil {
					t.Errorf("multicast through node %d: %v\n%s", i, err, out)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	waitTraces(t, files, fmt.Sprintf("%d deliveries", 2*len(endpoints)), func(lines []string) bool {
		if kind == "groups" { // an output per log entry, of its messages
			n := 0
			for _, l := range lines {
				if strings.Contains(l, `"kind":"output"`) && strings.Contains(l, `"type":"group-delivered"`) {
					n += strings.Count(l, `"seq":`)
				}
			}
			return n >= 2*len(endpoints)
		}
		return countLines(lines, `"kind":"output"`, `"type":"deliver"`) >= 2*len(endpoints)
	})
}

// scribeLive has every node of a live cluster with the DHT join the
// Scribe group "news", nodes 0 and 1 multicast to it once its members have
// joined (overlay.ScribeJoinBound, as the nodes' traces tell time), node 0
// put a key and node 2 get it; it waits until every member has received
// both multicasts and the traces run on for overlay.ScribeDeliveryBound,
// so that scribe-delivery judges them.
func scribeLive(t *testing.T, bin string, endpoints, files []string) {
	t.Helper()
	run := func(args ...string) string {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, ep := range endpoints {
		run("scribe", "join", "news", "--endpoints", ep)
	}
	waitTracesUntil(t, files, time.Now().Add(overlay.ScribeJoinBound+100*time.Millisecond))
	run("scribe", "publish", "news", "hello", "--endpoints", endpoints[0])
	run("scribe", "publish", "news", "again", "--endpoints", endpoints[1])
	sent := time.Now()
	run("dht", "put", "k", "v", "--endpoints", endpoints[0])
	if got := run("dht", "get", "k", "--endpoints", endpoints[2]); strings.TrimSpace(got) != "v" {
		t.Fatalf("dht get k through node 2: %q, want v", got)
	}
	waitTraces(t, files, "both multicasts received", func(lines []string) bool {
		return countLines(lines, `"kind":"output"`, `"type":"received"`) == 2
	})
	waitTracesUntil(t, files, sent.Add(overlay.ScribeDeliveryBound+100*time.Millisecond))
}

// checkLiveVerdicts checks a merged live trace's verdicts, by cohort
// trace check and on its page (open in ctx): the checks holds, in that
// order, each holding.
func checkLiveVerdicts(t *testing.T, ctx context.Context, bin, merged string, tr *trace.Trace, holds []string) {
	t.Helper()
	out, err := exec.Command(bin, "trace", "check", merged, "--json").Output()
	if err != nil {
		t.Errorf("trace check: %v\n%s", err, out)
	}
	var r struct {
		Checks []struct {
			Name, Status, Detail string
			OK                   bool
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("trace check --json: %v: %s", err, out)
	}
	var got, want []string
	for _, c := range r.Checks {
		got = append(got, c.Name+" "+c.Status)
	}
	for _, name := range holds {
		want = append(want, name+" ok")
	}
	if !slices.Equal(got, want) {
		t.Errorf("trace check of the live run: %q; want %q", got, want)
	}
	listed := eval[[]string](t, ctx, `[...document.querySelectorAll("#checks li")].map((li) => li.className + " " + li.querySelector("b").textContent)`)
	for i := range want {
		want[i] = "ok " + holds[i]
	}
	if !slices.Equal(listed, want) {
		t.Errorf("the page lists %q; want %q", listed, want)
	}
}

// waitTraces waits until every file's lines satisfy ok.
func waitTraces(t *testing.T, files []string, what string, ok func(lines []string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := true
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all = all && ok(strings.Split(string(b), "\n"))
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the traces %q do not show %s", files, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitTracesUntil waits until every file records an event at or after
// at (a live node's trace gives each event its wall-clock time).
func waitTracesUntil(t *testing.T, files []string, at time.Time) {
	t.Helper()
	waitTraces(t, files, "an event after "+at.Format(time.RFC3339Nano), func(lines []string) bool {
		for i := len(lines) - 1; i > 0; i-- {
			var e struct{ T int64 }
			if json.Unmarshal([]byte(lines[i]), &e) == nil && e.T > 0 {
				return e.T >= at.UnixNano()
			}
		}
		return false
	})
}

// countLines counts the lines holding every one of subs.
func countLines(lines []string, subs ...string) int {
	n := 0
	for _, l := range lines {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) }) {
			n++
		}
	}
	return n
}

// swappedOrderIsCaught edits a live total-order run so that p1 delivers
// two messages the other way round — two of different senders, both
// multicast before p1 delivered the first, if there are such, so that
// only the order changes: cohort trace check finds total order broken
// (exit 1), and the viewer lists the violation and marks its events.
func swappedOrderIsCaught(t *testing.T, ctx context.Context, tr *trace.Trace) {
	t.Helper()
	type msg struct {
		Origin int32
		Seq    uint64
	}
	sent := map[msg]int64{}
	var delivered []int // p1's
	for i, e := range tr.Events {
		var m msg
		switch {
		case e.Kind != trace.Output:
		case e.Type == "sent" && json.Unmarshal(e.Data, &m) == nil:
			sent[m] = e.Time
		case e.Type == "deliver" && e.Node == 1:
			delivered = append(delivered, i)
		}
	}
	at, clean := delivered[:2], false
	for k := 0; k+1 < len(delivered) && !clean; k++ {
		var m1, m2 msg
		d1, d2 := tr.Events[delivered[k]], tr.Events[delivered[k+1]]
		if json.Unmarshal(d1.Data, &m1) == nil && json.Unmarshal(d2.Data, &m2) == nil && m1.Origin != m2.Origin && sent[m2] < d1.Time {
			at, clean = delivered[k:k+2], true
		}
	}
	bad := &trace.Trace{Header: tr.Header, Events: slices.Clone(tr.Events)}
	a, b := &bad.Events[at[0]], &bad.Events[at[1]]
	a.Data, b.Data, a.Label, b.Label = b.Data, a.Data, b.Label, a.Label
	path := filepath.Join(t.TempDir(), "swapped.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Write(f, bad); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, _ := cli(t, "trace", "check", path)
	if code != 1 || !regexp.MustCompile(`total-order\s+violated`).MatchString(out) ||
		clean && !regexp.MustCompile(`mc-integrity\s+ok\s+mc-validity\s+ok\s+mc-agreement\s+ok`).MatchString(out) {
		t.Errorf("trace check of p1's deliveries #%d and #%d swapped (only the order changed: %v): exit %d\n%s", at[0], at[1], clean, code, out)
	}
	openPage(t, ctx, "view", path)
	listed := eval[[]string](t, ctx, `[...document.querySelectorAll("#checks li.violation")].map((li) => li.querySelector("b").textContent)`)
	if s := stats(t, ctx); !slices.Contains(listed, "total-order") || s.Violations == 0 || s.Marked == 0 {
		t.Errorf("the page lists violations %q (%d, %d events marked); want total-order's, marked", listed, s.Violations, s.Marked)
	}
	screenshot(t, ctx, "viewer-live-multicast-swapped.png")
}

// Messages are drawn in their type's colour, the legend's: each type's
// swatch has its own colour, and each arrow, sampled on the canvas a
// quarter of the way from its send, is drawn in its type's.
func TestViewerColoursMessagesByType(t *testing.T) {
	ctx := browser(t)
	ev := []trace.Event{
		{Node: 0, Kind: trace.Send, Msg: 1, Peer: 1, Type: "ping", Time: 1e6},
		{Node: 1, Kind: trace.Recv, Msg: 1, Peer: 0, Type: "ping", Time: 3e6},
		{Node: 1, Kind: trace.Send, Msg: 2, Peer: 0, Type: "pong", Time: 4e6},
		{Node: 0, Kind: trace.Recv, Msg: 2, Peer: 1, Type: "pong", Time: 6e6},
		{Node: 0, Kind: trace.Send, Msg: 3, Peer: 1, Type: "ack", Time: 7e6},
		{Node: 1, Kind: trace.Recv, Msg: 3, Peer: 0, Type: "ack", Time: 9e6},
	}
	tr := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 2}}
	for i, e := range ev {
		e.Index, e.Lamport = i, uint64(i+1)
		tr.Events = append(tr.Events, e)
	}
	page := filepath.Join(t.TempDir(), "types.html")
	if err := writeFile(page, func(w io.Writer) error { return viewer.WriteHTML(w, &viewer.Page{Trace: tr}) }); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("canvas")))
	rgb := func(css string) [3]int {
		var c [3]int
		if _, err := fmt.Sscanf(css, "rgb(%d, %d, %d)", &c[0], &c[1], &c[2]); err != nil {
			t.Fatalf("colour %q: %v", css, err)
		}
		return c
	}
	var swatches [][3]int
	for _, css := range eval[[]string](t, ctx, `[...document.querySelectorAll("#types .swatch")].map((s) => getComputedStyle(s).backgroundColor)`) {
		swatches = append(swatches, rgb(css))
	}
	if len(swatches) != 3 || swatches[0] == swatches[1] || swatches[1] == swatches[2] || swatches[0] == swatches[2] {
		t.Fatalf("legend colours %v, want one of its own for each of 3 types", swatches)
	}
	for k, send := range []int{0, 2, 4} {
		px := eval[[3]int](t, ctx, fmt.Sprintf(`((s, r) => {
			const cv = document.getElementById("canvas"), b = cv.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
			const x = s.x + (r.x - s.x) * 0.25 - b.left, y = s.y + (r.y - s.y) * 0.25 - b.top;
			const d = cv.getContext("2d").getImageData(Math.round(x * dpr) - 2, Math.round(y * dpr) - 2, 5, 5).data;
			let best = [255, 255, 255];
			for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < best[0] + best[1] + best[2]) best = [d[i], d[i + 1], d[i + 2]];
			return best;
		})(window.cohortViewer.where(%d), window.cohortViewer.where(%d))`, send, send+1))
		nearest, dist := -1, 1<<30
		for j, c := range swatches {
			d := (px[0]-c[0])*(px[0]-c[0]) + (px[1]-c[1])*(px[1]-c[1]) + (px[2]-c[2])*(px[2]-c[2])
			if d < dist {
				nearest, dist = j, d
			}
		}
		if nearest != k || dist > 60*60 {
			t.Errorf("the %s arrow is drawn in rgb%v, nearest the legend's colour %d (distance² %d); want its type's, rgb%v", ev[send].Type, px, nearest, dist, swatches[k])
		}
	}
	screenshot(t, ctx, "viewer-types.png")
}
