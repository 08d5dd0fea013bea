package live_test

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/trace"
)

// TestMergeCountsFromTheFirstEvent checks that a merged live trace's times
// count from the run's first event, as a simulated trace's do, not from
// 1970, and that each event keeps its node's wall-clock reading as Local.
func TestMergeCountsFromTheFirstEvent(t *testing.T) {
	const wall = 1_764_125_216_000_000_000
	node := func(id int32, times ...int64) *trace.Trace {
		tr := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 2}}
		for i, at := range times {
			tr.Events = append(tr.Events, trace.Event{Index: i, Node: id, Kind: trace.Timer, Peer: -1, Time: wall + at, Local: wall + at})
		}
		return tr
	}
	m, err := live.Merge(node(0, 5e6, 9e6), node(1, 2e6, 7e6))
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, e := range m.Events {
		got = append(got, e.Time)
		if e.Local < wall {
			t.Errorf("event %d: local clock %d lost", e.Index, e.Local)
		}
	}
	want := []int64{0, 3e6, 5e6, 7e6}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("times %v, want %v", got, want)
		}
	}
}

// Traces of different runs — a node's group trace and another's DHT
// trace — are not merged.
func TestMergeRefusesTracesOfDifferentRuns(t *testing.T) {
	group := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 3, Family: "multicast", Algo: "total-sequencer"}}
	dht := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 3, Family: "overlay", Algo: "scribe"}}
	if _, err := live.Merge(group, dht); err == nil || !strings.Contains(err.Error(), "multicast/total-sequencer and overlay/scribe") {
		t.Errorf("merging a group trace and a DHT trace: %v", err)
	}
	if _, err := live.Merge(group, group); err != nil {
		t.Errorf("merging two group traces: %v", err)
	}
}

// ConsistentCut leaves out what follows sends a node's file does not
// hold yet, and everything causally after it: node 1's file ends before
// its reply to node 0, so node 0's receipt of the reply, and its later
// events, are cut; files that hold every send lose nothing.
func TestConsistentCutOfFilesStillBeingWritten(t *testing.T) {
	ev := func(node int32, i int, at int64, kind trace.Kind, peer int32, msg uint64, vc ...uint64) trace.Event {
		return trace.Event{Index: i, Node: node, Kind: kind, Peer: peer, Msg: msg, VC: trace.DenseVC(vc), Time: at}
	}
	hdr := trace.Header{Format: trace.FormatName, Nodes: 2}
	n0 := &trace.Trace{Header: hdr, Events: []trace.Event{
		ev(0, 0, 1, trace.Send, 1, 1, 1, 0),
		ev(0, 1, 4, trace.Recv, 1, 2, 2, 2), // node 1's reply
		ev(0, 2, 5, trace.Timer, -1, 0, 3, 2),
	}}
	n1 := &trace.Trace{Header: hdr, Events: []trace.Event{
		ev(1, 0, 2, trace.Recv, 0, 1, 1, 1),
		ev(1, 1, 3, trace.Send, 0, 2, 1, 2),
	}}
	if _, cut := live.ConsistentCut([]*trace.Trace{n0, n1}); cut != 0 {
		t.Fatalf("whole files: %d events cut, want 0", cut)
	}
	partial := &trace.Trace{Header: hdr, Events: n1.Events[:1]} // the reply not written yet
	ts, cut := live.ConsistentCut([]*trace.Trace{n0, partial})
	if cut != 2 || len(ts[0].Events) != 1 || len(ts[1].Events) != 1 || len(n0.Events) != 3 {
		t.Fatalf("cut %d, kept %d and %d events (the input now %d); want 2 cut, 1 and 1 kept, the input untouched",
			cut, len(ts[0].Events), len(ts[1].Events), len(n0.Events))
	}
	m, err := live.Merge(ts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, whole := range [][]*trace.Trace{ts, {n0, n1}} {
		m, err := live.Merge(whole...)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := check.Run(m, "integrity"); err != nil || !res[0].OK() {
			t.Fatalf("integrity of the merged %d events: %v %v", len(m.Events), res, err)
		}
	}
	m, _ = live.Merge(n0, partial)
	if res, _ := check.Run(m, "integrity"); res[0].OK() {
		t.Fatal("the files merged uncut pass integrity: the cut is not needed")
	}
}
