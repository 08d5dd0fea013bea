package livetest

import (
	"testing"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

func TestStartNumbersTheNodesAndClosesThem(t *testing.T) {
	var nodes []*live.Node
	t.Run("cluster", func(t *testing.T) {
		nodes = Start(t, 3, live.Config{})
		for i, n := range nodes {
			if n.Self() != proc.ID(i) || n.N() != 3 {
				t.Errorf("node %d: self %v of %d", i, n.Self(), n.N())
			}
		}
	})
	// The subtest has ended: its cleanup closed the nodes.
	for _, n := range nodes {
		if _, err := n.Service("x", proc.Algorithm{Name: "x"}); err != live.ErrClosed {
			t.Errorf("node %v after the test: %v, want ErrClosed", n.Self(), err)
		}
	}
	if _, _, err := New(0, live.Config{}); err == nil {
		t.Error("a cluster of 0 nodes started")
	}
}

// A Cluster's founders know one another and their number; a newcomer
// knows its contact and N = 1; each node's services are started once,
// with its contact; Kill stops a node.
func TestClusterFoundersAndNewcomers(t *testing.T) {
	contacts := map[proc.ID]proc.ID{}
	c := NewCluster(t, Cluster{Founders: 3, Secret: []byte("livetest secret, 32 bytes long.."),
		Services: func(id proc.ID, node *live.Node, contact proc.ID) {
			if _, again := contacts[id]; again {
				t.Errorf("node %d's services started twice", id)
			}
			contacts[id] = contact
		}})
	c.Join(7, 1)
	for id, want := range map[proc.ID]proc.ID{0: proc.None, 1: proc.None, 2: proc.None, 7: 1} {
		if contacts[id] != want {
			t.Errorf("node %d started with contact %d, want %d", id, contacts[id], want)
		}
	}
	for id, n := range c.Nodes {
		wantN := 3
		if id == 7 {
			wantN = 1
		}
		if n.Self() != id || n.N() != wantN {
			t.Errorf("node %d: self %v of %d, want of %d", id, n.Self(), n.N(), wantN)
		}
	}
	if len(c.Addrs) != 4 || c.Addrs[7] == "" {
		t.Errorf("addresses %v", c.Addrs)
	}
	c.Kill(7)
	if _, ok := c.Nodes[7]; ok || len(c.Nodes) != 3 {
		t.Errorf("after Kill(7): nodes %v", c.Nodes)
	}
}
