package viewer

import (
	"os"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

// Pair merges two runs in time order: b's processes and messages moved
// past a's, each run's checks named after it and pointing at the same
// events as before.
func TestPairMergesTwoRuns(t *testing.T) {
	a, b := smallTrace(), smallTrace()
	for i := range b.Events {
		b.Events[i].Time += 5 // 5, 15, 35, 45 against a's 0, 10, 30, 40
	}
	p, err := Pair(&Page{Trace: a, Checks: []Check{{Name: "ME1", Status: "violated", Events: []int{1, 2}}}},
		&Page{Title: "after", Trace: b, Checks: []Check{{Name: "ME1", Status: "violated", Events: []int{2, 3}, Edges: []Edge{{From: 0, To: 1, At: 2}}}},
			Shades: []trace.Shade{{Kind: "pause", Nodes: []int32{1}, From: 1, To: 2}, {Kind: "partition", From: 3, To: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Trace
	if tr.Header.Nodes != 4 || len(tr.Events) != 8 {
		t.Fatalf("merged: %d nodes, %d events; want 4 and 8", tr.Header.Nodes, len(tr.Events))
	}
	for i, e := range tr.Events {
		if e.Index != i || i > 0 && e.Time < tr.Events[i-1].Time {
			t.Fatalf("event %d: %v out of order", i, e.String())
		}
	}
	// b's send (p0 → p1, msg 1) is now p2 → p3, msg 2.
	if e := tr.Events[3]; e.Kind != trace.Send || e.Node != 2 || e.Peer != 3 || e.Msg != 2 {
		t.Errorf("b's send merged as %v", e.String())
	}
	// Vector clocks move with their processes: b's receipt, [2,1] in b,
	// is [0,0,2,1]; a's send, [2,0], is [2,0,0,0]. Every recorded clock
	// is the one the pair's happened-before implies.
	if e := tr.Events[3]; !slices.Equal(e.VC.Dense(), []uint64{0, 0, 2, 0}) {
		t.Errorf("b's send has VC %v, want [0 0 2 0]", e.VC)
	}
	hb, err := trace.NewHB(tr)
	if err != nil {
		t.Fatal(err)
	}
	clocks := 0
	for i, e := range tr.Events {
		if !e.VC.IsZero() {
			clocks++
			if want := hb.VC(i); !slices.Equal(e.VC.Dense(), want) {
				t.Errorf("%v: recorded VC %v, happened-before implies %v", e.String(), e.VC, want)
			}
		}
	}
	if clocks != 4 {
		t.Errorf("%d events with clocks, want 4 (two of each run)", clocks)
	}
	if len(p.Runs) != 2 || p.Runs[1] != (Run{Title: "after", First: 2, Nodes: 2}) || p.Runs[0].Title != "lamport" {
		t.Errorf("runs %+v", p.Runs)
	}
	if len(p.Checks) != 2 || p.Checks[0].Name != "A: ME1" || p.Checks[1].Name != "B: ME1" {
		t.Fatalf("checks %+v", p.Checks)
	}
	for k, c := range p.Checks {
		src := []*trace.Trace{a, b}[k]
		want := []int{1, 2}
		if k == 1 {
			want = []int{2, 3}
		}
		for j, i := range c.Events {
			if got, was := tr.Events[i], src.Events[want[j]]; got.Time != was.Time || got.Kind != was.Kind {
				t.Errorf("%s: event %d is %v, was %v", c.Name, i, got.String(), was.String())
			}
		}
	}
	// b's wait-for edge p0 → p1 at its event 2 is p2 → p3 at that event's
	// new place.
	if e := p.Checks[1].Edges; len(e) != 1 || e[0].From != 2 || e[0].To != 3 || tr.Events[e[0].At].Time != b.Events[2].Time || tr.Events[e[0].At].Node != 3 {
		t.Errorf("B's edges %+v", e)
	}
	if p.Checks[0].Edges != nil {
		t.Errorf("A's check gained edges %+v", p.Checks[0].Edges)
	}
	if len(p.Shades) != 2 || p.Shades[0].Nodes[0] != 3 || len(p.Shades[1].Nodes) != 2 || p.Shades[1].Nodes[0] != 2 {
		t.Errorf("shades %+v: want b's moved to its processes, a whole-run one on b's only", p.Shades)
	}
	if _, err := Render(p); err != nil {
		t.Fatal(err)
	}
}

// A page names the processes of its trace, a lane each: in a live trace
// whose founders 1 and 2 took in a member that joined as 60000, those
// three, not 60,001. Two such runs side by side keep their clocks by
// process ID and name six processes, b's moved past a's highest ID.
func TestPageNamesOnlyTheProcessesOfTheTrace(t *testing.T) {
	f, err := os.Open("../trace/testdata/joined.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(&Page{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	if d := embedded(t, b); !slices.Equal(d.Procs, []int32{1, 2, 60000}) {
		t.Errorf("procs %v, want [1 2 60000]", d.Procs)
	}
	p, err := Pair(&Page{Trace: tr, Shades: []trace.Shade{{Kind: "partition", From: 1, To: 2}}}, &Page{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Trace.Header.Open() || p.Runs[1].First != 60001 {
		t.Fatalf("pair: header %+v, runs %+v; want an open trace, b's processes from 60001", p.Trace.Header, p.Runs)
	}
	for _, e := range p.Trace.Events {
		if !e.VC.IsZero() && !e.VC.Sparse() && e.VC.Len() > 64 {
			t.Fatalf("%v: a vector of %d entries, want it kept by process ID", e.String(), e.VC.Len())
		}
	}
	if s := p.Shades[0].Nodes; !slices.Equal(s, []int32{1, 2, 60000}) {
		t.Errorf("a's whole-run shade over %v, want its processes 1, 2, 60000", s)
	}
	b, err = Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := embedded(t, b); !slices.Equal(d.Procs, []int32{1, 2, 60000, 60002, 60003, 120001}) {
		t.Errorf("pair: procs %v, want [1 2 60000 60002 60003 120001]", d.Procs)
	}
}
