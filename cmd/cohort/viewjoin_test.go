package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.yaml.in/yaml/v3"

	"github.com/cohort-go/cohort/trace"
)

// A live DHT that a node joins is traced whole: three founders started by
// `cluster up --members --dht --trace-dir`, and node 4, which joins them
// with trace_dir: of its own, take part in Scribe multicasts, a put and a
// get. The four nodes' dht.jsonl files — their vector clocks grow as node
// 4 joins, keyed by process ID — merge into one trace of processes 0..4
// (3 never joins), on which the overlay's checkers hold, by trace check
// and on the viewer's page, which draws the joined node's lane and shows
// its clocks by process.
func TestViewerOpensLiveTraceWithAJoinedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four node processes")
	}
	ctx := browser(t)
	bin := cohortBinary(t)
	dir, traces := t.TempDir(), t.TempDir()
	eps := startCluster(t, "--nodes", "3", "--members", "--dht", "--algo", "mutex/ricart-agrawala", "--dir", dir, "--trace-dir", traces)
	founder, ports := founderAndPorts(t, dir, 2)
	const joined = 4
	joinedTraces := filepath.Join(traces, fmt.Sprint("node", joined))
	cfg := fmt.Sprintf("id: %d\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\ndht: true\ntrace_dir: %s\n", joined, ports[0], ports[1], founder.Secret, joinedTraces)
	path := filepath.Join(dir, "joiner.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	joiner := exec.Command(bin, "node", "--config", path, "--join", "0@"+founder.Peers[0])
	joiner.Stderr = os.Stderr
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	stopJoiner := func() {
		_ = joiner.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- joiner.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = joiner.Process.Kill()
			<-done
			t.Error("the joined node did not stop within 20s of SIGTERM")
		}
	}
	t.Cleanup(func() {
		if joiner.ProcessState == nil {
			stopJoiner()
		}
	})
	waitAPI(t, ports[1])
	waitUntil(t, "a put through the joined node", func() bool {
		code, _, _ := cli(t, "dht", "put", "hello", "world", "--endpoints", ports[1])
		return code == 0
	})
	all := append(append([]string{}, eps...), ports[1])
	var files []string
	for i := range 3 {
		files = append(files, filepath.Join(traces, "node"+itoa(i), "dht.jsonl"))
	}
	files = append(files, filepath.Join(joinedTraces, "dht.jsonl"))
	scribeLive(t, bin, all, files)
	stopJoiner()
	stopClusters(t)

	merged, tr := mergeLive(t, bin, files)
	if h := tr.Header; h.Family != "overlay" || h.Algo != "scribe" || !h.Open() || h.Nodes != joined+1 {
		t.Fatalf("merged header %+v: want overlay/scribe, open, of %d processes", h, joined+1)
	}
	received, fromJoined, toJoined := 0, 0, 0
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.Output && e.Type == "received":
			received++
		case e.Kind == trace.Recv && e.Peer == joined:
			fromJoined++
		case e.Kind == trace.Recv && e.Node == joined:
			toJoined++
		}
	}
	if received != 8 || fromJoined == 0 || toJoined == 0 {
		t.Errorf("%d multicasts received (want 2 × 4 members); the founders received %d messages of node %d, it %d of theirs",
			received, fromJoined, joined, toJoined)
	}
	page := filepath.Join(t.TempDir(), "live.html")
	if code, _, errs := cli(t, "view", merged, "--html", page); code != 0 {
		t.Fatalf("view: exit %d: %s", code, errs)
	}
	checkFamilyPage(t, ctx, "live overlay with a joined node", "file://"+page, tr, pageChecks(t, page))
	checkLiveVerdicts(t, ctx, bin, merged, tr, []string{"scribe-delivery", "overlay-lookup", "dht-get"})
	// The panel gives a clock of the joined node by process.
	k := -1
	for i, e := range tr.Events {
		if e.Node == joined && e.Kind == trace.Recv {
			k = i
			break
		}
	}
	eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(k)+`)`)
	want := fmt.Sprintf("p%d:%d", joined, tr.Events[k].VC.At(int(joined)))
	if p := text(t, ctx, "#event"); !strings.Contains(p, "{p") || !strings.Contains(p, want) {
		t.Errorf("the panel at #%d (a receipt at node %d) shows %q; want its clock by process, with %s", k, joined, p, want)
	}
}

// founderAndPorts reads node 0's node.yaml that cluster up wrote in dir
// (its secret and peers, for a node that joins), and picks n free ports.
func founderAndPorts(t *testing.T, dir string, n int) (nodeConfig, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "node0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var founder nodeConfig
	if err := yaml.Unmarshal(b, &founder); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return founder, ports
}

// A live trace whose founders 1 and 2 took in a member that joined as
// 60000 is drawn on three lanes, p1, p2 and p60000 from the top — not on
// 60,001, one per ID up to the highest — each message between its own
// processes' lanes, on a time axis from the run's first event; a process
// is filtered and collapsed by its ID; and the run beside itself draws
// six lanes.
func TestViewerDrawsALiveTracesProcessesByID(t *testing.T) {
	ctx := browser(t)
	const file = "../../trace/testdata/joined.jsonl"
	tr, err := readTrace(file)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Nodes != 60001 {
		t.Fatalf("the fixture names processes up to %d, want 60000", tr.Header.Nodes-1)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "joined.html")
	if code, _, errs := cli(t, "view", file, "--html", page); code != 0 {
		t.Fatalf("view: exit %d: %s", code, errs)
	}
	do(t, ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("canvas")))
	s := stats(t, ctx)
	if s.Lanes != 3 || s.Processes != 3 || s.Events != len(tr.Events) || s.ArrowsTotal != 3 || s.Arrows != 3 {
		t.Errorf("drawn: %+v; want 3 lanes of 3 processes, %d events, 3 arrows", s, len(tr.Events))
	}
	want := []string{"p1", "p2", "p60000"}
	if names := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(names, want) {
		t.Errorf("lanes %v, want %v", fewNames(names), want)
	}
	// Every event on its process's lane, the lanes in ID order.
	laneY := map[int32]float64{}
	for i, e := range tr.Events {
		y := eval[struct{ X, Y float64 }](t, ctx, `window.cohortViewer.where(`+itoa(i)+`)`).Y
		if prev, ok := laneY[e.Node]; ok && prev != y {
			t.Errorf("#%d of p%d drawn at y=%v, p%d's lane is at y=%v", i, e.Node, y, e.Node, prev)
		}
		laneY[e.Node] = y
	}
	if !(laneY[1] < laneY[2] && laneY[2] < laneY[60000]) {
		t.Errorf("lanes at y %v; want p1 above p2 above p60000", laneY)
	}
	if info := text(t, ctx, "#info"); !strings.Contains(info, "3 processes") || !strings.Contains(info, "from 2025-11-26T02:46:56.001Z") {
		t.Errorf("the header says %q; want 3 processes, from the first event's time", info)
	}
	eval[int](t, ctx, `window.cohortViewer.jump(5)`)
	if p := text(t, ctx, "#event"); !strings.HasPrefix(p, "#5 p60000 send hello to p1") || !strings.Contains(p, "5ms after 2025-11-26T02:46:56.001Z") {
		t.Errorf("the panel at #5 shows %q", p)
	}
	if n := eval[int](t, ctx, `window.cohortViewer.filterProcess(60000, false)`); n != 2 {
		t.Errorf("without p60000: %d lanes, want 2", n)
	}
	eval[int](t, ctx, `window.cohortViewer.filterProcess(60000, true)`)
	eval[viewerStats](t, ctx, `window.cohortViewer.collapse([2, 60000])`)
	if names := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(names, []string{"p1", "{p2,p60000}"}) {
		t.Errorf("p2 and p60000 collapsed: lanes %v", fewNames(names))
	}
	eval[viewerStats](t, ctx, `window.cohortViewer.expand()`)
	screenshot(t, ctx, "viewer-joined-60000.png")

	pair := filepath.Join(dir, "pair.html")
	if code, _, errs := cli(t, "view", file, file, "--html", pair); code != 0 {
		t.Fatalf("view (two runs): exit %d: %s", code, errs)
	}
	do(t, ctx, chromedp.Navigate("file://"+pair), chromedp.WaitVisible(chromedp.ID("canvas")))
	want = []string{"A:p1", "A:p2", "A:p60000", "B:p1", "B:p2", "B:p60000"}
	if names := eval[[]string](t, ctx, `window.cohortViewer.lanes()`); !slices.Equal(names, want) {
		t.Errorf("two runs: lanes %v, want %v", fewNames(names), want)
	}
	if s := stats(t, ctx); s.Lanes != 6 || s.ArrowsTotal != 6 {
		t.Errorf("two runs: %+v; want 6 lanes, 6 arrows", s)
	}
}

// fewNames is a list of lane names to print: the first ones and the
// last, and how many there are.
func fewNames(names []string) string {
	if len(names) <= 8 {
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v … %s (%d lanes)", names[:6], names[len(names)-1], len(names))
}
