package dht_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// A member that joins a running cluster is traced with the founders: its
// DHT and membership traces, and the founders' traces of its messages,
// have vector clocks that grow as it joins (an entry keyed by its ID),
// and every kind's files merge into one trace in which each receipt
// follows its send and every clock is the one happened-before implies —
// the checkers of the kind's family hold on it, and its processes are
// the founders and the member that joined.
func TestJoinedMemberIsTraced(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of 4 nodes over TCP")
	}
	dir := t.TempDir()
	c := newTracedCluster(t, 3, dir)
	for _, s := range c.servers {
		<-s.Ready()
	}
	const joined = proc.ID(5) // ids 3 and 4 never join: their lanes stay empty
	c.join(joined, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for k := range 6 {
		at := c.ids()[k%4]
		if r, err := c.servers[at].Put(ctx, fmt.Sprint("key-", k), "v"); err != nil || !r.Found {
			t.Fatalf("put key-%d at p%d: %+v %v", k, at, r, err)
		}
	}
	for k := range 6 {
		at := c.ids()[(k+1)%4]
		if r, err := c.servers[at].Get(ctx, fmt.Sprint("key-", k)); err != nil || r.Value != "v" {
			t.Fatalf("get key-%d at p%d: %+v %v", k, at, r, err)
		}
	}
	for _, id := range c.ids() {
		if err := c.Nodes[id].Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"dht", "members"} {
		var ts []*trace.Trace
		for _, id := range []proc.ID{0, 1, 2, joined} {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("node", int(id)), kind+".jsonl"))
			if err != nil {
				t.Fatalf("node %d has no %s trace: %v", id, kind, err)
			}
			tr, err := trace.Read(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("node %d's %s trace: %v", id, kind, err)
			}
			if !tr.Header.Open() || !bytes.Contains(b, []byte(`"vc":{`)) {
				t.Fatalf("node %d's %s trace is not open (header %+v)", id, kind, tr.Header)
			}
			ts = append(ts, tr)
		}
		m, err := live.Merge(ts...)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Nodes != int(joined)+1 {
			t.Errorf("%s: merged trace of %d processes, want %d (0..%d)", kind, m.Header.Nodes, joined+1, joined)
		}
		// What crossed between the joined member and the founders: sends
		// and their receipts, both ways.
		var from, to int
		for _, e := range m.Events {
			switch {
			case e.Kind == trace.Recv && e.Node == int32(joined):
				from++
			case e.Kind == trace.Recv && e.Peer == int32(joined):
				to++
			}
		}
		if from == 0 || to == 0 {
			t.Errorf("%s: the joined member received %d messages, the founders %d of it", kind, from, to)
		}
		// Round trip: the merged trace is written and read back as it is.
		var buf bytes.Buffer
		if err := trace.Write(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := trace.Read(&buf)
		if err != nil {
			t.Fatalf("%s: the merged trace does not read back: %v", kind, err)
		}
		names := []string{"integrity", "no-duplicates", "clock-condition"}
		if kind == "dht" {
			names = append(names, "overlay-lookup", "dht-get")
		}
		results, err := check.Run(back, names...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if !r.OK() {
				t.Errorf("%s: %s: %v\n%s", kind, r.Name, r, r.Counterexample(back))
			}
		}
		if !slices.ContainsFunc(back.Events, func(e trace.Event) bool { return e.VC.Len() > int(joined) && e.Node < 3 }) {
			t.Errorf("%s: no founder's clock counts the joined member's events", kind)
		}
	}
}
