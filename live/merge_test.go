package live_test

import (
	"strings"
	"testing"

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
