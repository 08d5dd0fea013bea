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
