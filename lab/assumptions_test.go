package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

func TestOutsideNamesEveryBrokenAssumption(t *testing.T) {
	loss := 0.2
	reliableFIFO := proc.Assumptions{Reliable: true, FIFO: true}
	for _, c := range []struct {
		name string
		as   proc.Assumptions
		cfg  sim.Config
		want []string // substrings, one per expected entry, in order
	}{
		{"inside", reliableFIFO, sim.Config{Nodes: 3, Network: sim.Network{FIFO: true, Latency: sim.Exponential{MeanD: time.Millisecond}}}, nil},
		{"constant latency is FIFO", reliableFIFO, sim.Config{Nodes: 3}, nil},
		{"loss", reliableFIFO, sim.Config{Nodes: 3, Network: sim.Network{Loss: 0.1}}, []string{"loses messages (loss 0.1)"}},
		{"link loss", reliableFIFO, sim.Config{Nodes: 3, Network: sim.Network{Links: []sim.Link{{From: 0, To: 1, Loss: &loss}}}}, []string{"on link 0→1 (loss 0.2)"}},
		{"duplicates and partitions", proc.Assumptions{Reliable: true}, sim.Config{Nodes: 3, Network: sim.Network{Duplicate: 0.1,
			Partitions: []sim.Partition{{Groups: [][]proc.ID{{0}}}}}}, []string{"duplicates messages", "cuts the network (1 partition(s))"}},
		{"reorder", reliableFIFO, sim.Config{Nodes: 3, Network: sim.Network{FIFO: true, Reorder: 0.5}}, []string{"reorders messages (reorder 0.5)"}},
		{"no fifo", reliableFIFO, sim.Config{Nodes: 3, Network: sim.Network{Latency: sim.Uniform{Min: 1, Max: 5}}}, []string{"not FIFO"}},
		{"unreliable algorithm tolerates loss", proc.Assumptions{}, sim.Config{Nodes: 3, Network: sim.Network{Loss: 0.5}}, nil},
		{"crash where none", proc.Assumptions{}, sim.Config{Nodes: 3, Faults: []sim.Fault{{Kind: sim.Crash, Node: 1}}}, []string{"no process fails"}},
		{"crash-stop tolerates a crash", proc.Assumptions{Failures: "crash-stop"}, sim.Config{Nodes: 3, Faults: []sim.Fault{{Kind: sim.Crash, Node: 1}}}, nil},
		{"recovery where crash-stop", proc.Assumptions{Failures: "crash-stop"}, sim.Config{Nodes: 3, Faults: []sim.Fault{{Kind: sim.Crash, Node: 1}, {Kind: sim.Recover, Node: 1, At: 1}}}, []string{"recovers crashed processes"}},
		{"pause where synchronous", proc.Assumptions{Synchronous: true}, sim.Config{Nodes: 3, Faults: []sim.Fault{{Kind: sim.Pause, Node: 1, Until: 5}}}, []string{"synchronous"}},
		{"churn where fixed", proc.Assumptions{}, sim.Config{Nodes: 3, Churn: []sim.Churn{{Fail: 1, Leave: 1, Until: time.Second}}}, []string{"no process fails", "fixed group"}},
		{"initial where fixed", proc.Assumptions{}, sim.Config{Nodes: 3, Initial: 2}, []string{"fixed group"}},
		{"joins where joins", proc.Assumptions{Joins: true}, sim.Config{Nodes: 3, Initial: 2, Faults: []sim.Fault{{Kind: sim.Join, Node: 2}}}, nil},
		{"leave where only joins", proc.Assumptions{Joins: true}, sim.Config{Nodes: 3, Faults: []sim.Fault{{Kind: sim.Join, Node: 2}, {Kind: sim.Leave, Node: 1, At: 1}}}, []string{"fixed group"}},
	} {
		got := Outside(c.as, &c.cfg)
		if len(got) != len(c.want) {
			t.Errorf("%s: %q, want %d entries like %q", c.name, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: entry %d is %q, want one containing %q", c.name, i, got[i], w)
			}
		}
	}
}
