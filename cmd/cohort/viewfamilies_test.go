package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
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
// the trace: lanes, events, arrows, message types, the checks listed, the
// event panel and the state panel.
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
	lanes := tr.Header.Nodes
	types := map[string]bool{}
	states := 0
	for _, e := range tr.Events {
		lanes = max(lanes, int(e.Node)+1, int(e.Peer)+1)
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
	screenshot(t, ctx, "viewer-"+strings.ReplaceAll(name, "/", "-")+".png")
}
