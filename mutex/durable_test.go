package mutex

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// TestTokensRiseAcrossARestart: Ricart–Agrawala and Lamport's algorithm
// stamp their requests with a Lamport clock, and the stamp is the fencing
// token; the central server counts its grants, p0 being the server. Others take the lock many times, so the clocks run far ahead; then
// p0 crashes and restarts (idle, so the lock is not stuck), and takes the
// lock: its token must exceed every earlier one. (Its clock, or count,
// restarted at 0 before it kept a bound on stable storage: tokens went
// back, or repeated.)
func TestTokensRiseAcrossARestart(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "lamport", "central"} {
		t.Run(name, func(t *testing.T) {
			var script sim.Script
			for k := range 30 { // p1 and p2 take turns: the clocks run up
				p := proc.ID(1 + k%2)
				script = append(script, raAt(float64(10*k), p, Acquire{}), raAt(float64(10*k+5), p, Release{}))
			}
			script = append(script, raAt(400, 0, Acquire{}), raAt(405, 0, Release{}))
			var tokens []uint64
			var who []proc.ID
			raSimulate(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, name).New,
				Network:  sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
				Workload: script,
				Faults: []sim.Fault{{Kind: sim.Crash, Node: 0, At: 320 * time.Millisecond},
					{Kind: sim.Recover, Node: 0, At: 330 * time.Millisecond}},
				Observe: func(_ time.Duration, p proc.ID, o proc.Output) {
					if e, ok := o.(Enter); ok {
						tokens, who = append(tokens, e.Token), append(who, p)
					}
				}})
			if len(tokens) != 31 || who[30] != 0 {
				t.Fatalf("%d entries (%v), want 31, the last p0's", len(tokens), who)
			}
			for i := 1; i < len(tokens); i++ {
				if tokens[i] <= tokens[i-1] {
					t.Fatalf("entry %d (p%d): token %d after %d", i, who[i], tokens[i], tokens[i-1])
				}
			}
		})
	}
}
