package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// A node that joins the cluster and is added to the voters of the locks'
// replicated log is traced with the founders: the nodes' traces of the
// log (locks.jsonl) merge into one run in which the joined voter's
// appends, votes and acknowledgements are linked to the founders' and
// every clock is the one happened-before implies, and Raft's safety
// properties hold on it.
func TestJoinedVoterIsTraced(t *testing.T) {
	dir := t.TempDir()
	c := newTracedJoinCluster(t, 3, dir)
	c.votersAre(0, 1, 2)
	c.lockAt(0, "jobs")
	c.start(3, c.listen(3))
	c.eventually("node 3 alive at node 1", func() error { return c.nodes[1].mayVote(context.Background(), 3) })
	// (A leader just elected refuses a change until an entry of its term
	// is committed: ask again.)
	c.eventually("node 3 added to the voters", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.client(1).Add(ctx, 3)
		return err
	})
	c.votersAre(0, 1, 2, 3)
	c.lockAt(3, "jobs")
	c.lockAt(2, "other")
	for _, id := range []proc.ID{3, 0, 1, 2} {
		c.stop(id)
	}

	var ts []*trace.Trace
	for id := range 4 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("node", id), "locks.jsonl"))
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		tr, err := trace.Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("node %d's trace: %v", id, err)
		}
		ts = append(ts, tr)
	}
	// The nodes stopped one after another: what the last sent to one
	// already stopped is cut with what depends on it.
	kept, _ := live.ConsistentCut(ts)
	m, err := live.Merge(kept...)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Header.Open() || m.Header.Nodes != 4 {
		t.Fatalf("merged header %+v: want an open trace of 4 processes", m.Header)
	}
	voter := map[trace.Kind]int{}
	for _, e := range m.Events {
		if e.Node == 3 && (e.Kind == trace.Send || e.Kind == trace.Recv) {
			voter[e.Kind]++
		}
	}
	if voter[trace.Send] == 0 || voter[trace.Recv] == 0 {
		t.Fatalf("the joined voter's traffic: %v", voter)
	}
	results, err := check.Run(m, "integrity", "no-duplicates", "clock-condition",
		"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s: %v\n%s", r.Name, r, r.Counterexample(m))
		}
	}
}
