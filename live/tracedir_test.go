package live_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/trace"
)

// With TraceDir, each kind of service has its own trace on the node —
// lock/a and lock/b in lock.jsonl, resource/c in resource.jsonl — with
// its own clocks, which count its events alone; a cluster restarted on
// its directories continues each file after a crash and a recovery.
func TestTraceDirHasATracePerKind(t *testing.T) {
	const n = 2
	a, _ := registry.Find("mutex", "ricart-agrawala")
	dir := t.TempDir()
	services := []string{"lock/a", "lock/b", "resource/c"}
	var trs []transport.Transport
	start := func(i int) *live.Node {
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: n, Transport: trs[i],
			Resolve:  func(string) (proc.Algorithm, bool) { return a, true },
			TraceDir: filepath.Join(dir, fmt.Sprint("node", i))})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		return node
	}
	// lockAll has every node take and release every service's lock.
	lockAll := func(nodes []*live.Node) {
		exits := make(chan struct{}, n*len(services))
		for _, node := range nodes {
			for _, name := range services {
				s, err := node.Service(name, a)
				if err != nil {
					t.Fatal(err)
				}
				cancel := s.OnOutput(func(o proc.Output) {
					switch o.Kind() {
					case "enter":
						go s.Input(mutex.Release{})
					case "exit":
						exits <- struct{}{}
					}
				})
				defer cancel()
				if err := s.Input(mutex.Acquire{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		deadline := time.After(10 * time.Second)
		for range n * len(services) {
			select {
			case <-exits:
			case <-deadline:
				t.Fatal("not every node took every lock")
			}
		}
	}
	var before []map[string]*trace.Trace
	for incarnation := range 2 {
		trs = transports(t, n, false)
		nodes := []*live.Node{start(0), start(1)}
		lockAll(nodes)
		for i, node := range nodes {
			if err := node.Close(); err != nil {
				t.Fatal(err)
			}
			if incarnation == 0 {
				before = append(before, readKinds(t, dir, i))
			}
		}
	}
	for i := range n {
		for kind, tr := range readKinds(t, dir, i) {
			if tr.Header.Family != "mutex" || tr.Header.Algo != "ricart-agrawala" || tr.Header.Nodes != n {
				t.Errorf("node%d/%s.jsonl: header %+v", i, kind, tr.Header)
			}
			enters := 0
			for k, e := range tr.Events {
				if e.Index != k || int(e.VC.At(i)) != k+1 {
					t.Fatalf("node%d/%s.jsonl: event %d is #%d at %v: its clock counts another kind's events", i, kind, k, e.Index, e.VC)
				}
				if e.Service != "" && live.ServiceKind(e.Service) != kind {
					t.Errorf("node%d/%s.jsonl: event %d of service %s", i, kind, k, e.Service)
				}
				if e.Kind == trace.Output && e.Type == "enter" {
					enters++
				}
			}
			locks := map[string]int{"lock": 2, "resource": 1}[kind]
			if enters != 2*locks {
				t.Errorf("node%d/%s.jsonl: %d entries, want %d: the services of the kind, twice", i, kind, enters, 2*locks)
			}
			// The restart continues the file: the first incarnation's
			// events, then a crash and a recovery.
			old := before[i][kind]
			if next := tr.Events[len(old.Events):]; len(old.Events) == 0 || len(next) < 2 || next[0].Kind != trace.Crash || next[1].Kind != trace.Recover {
				t.Errorf("node%d/%s.jsonl: %d events before the restart, then %v", i, kind, len(old.Events), next[:min(2, len(next))])
			}
		}
	}
}

// readKinds reads node i's traces in dir, by kind.
func readKinds(t *testing.T, dir string, i int) map[string]*trace.Trace {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, fmt.Sprint("node", i), "*.jsonl"))
	if err != nil || len(files) != 2 {
		t.Fatalf("node%d's traces: %q (%v); want lock.jsonl and resource.jsonl", i, files, err)
	}
	out := map[string]*trace.Trace{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[filepath.Base(path[:len(path)-len(".jsonl")])] = tr
	}
	return out
}
