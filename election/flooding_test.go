package election

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// jitter is the latency of the election tests: up to 2ms, under half of
// flooding's default 10ms round.
var jitter = sim.Uniform{Min: 500 * time.Microsecond, Max: 2 * time.Millisecond}

func TestFloodingElectsTheLargestIDOnEveryGraph(t *testing.T) {
	t.Parallel()
	for _, tg := range testGraphs(t) {
		for _, starters := range [][]proc.ID{{0}, {proc.ID(tg.n / 2)}, nil} {
			var elects []sim.TimedInput
			for _, p := range starters {
				elects = append(elects, elect(0, p))
			}
			if starters == nil { // everyone starts at once, as in the textbook's synchronous model
				for p := range tg.n {
					elects = append(elects, elect(0, proc.ID(p)))
				}
			}
			what := fmt.Sprintf("%s starters %v", tg.name, starters)
			r := runGraph(t, newFlooding(0, 0), tg.g, tg.n, 1, jitter, elects...)
			everyoneElected(t, what, r, tg.n, proc.ID(tg.n-1))
			checkRun(t, what, r, "integrity", "no-duplicates", "E1", "E2", "agreement")

			rounds := tg.n - 1
			bound := int64(2 * tg.g.Edges() * rounds)
			if got := r.result.Messages("leader"); got > bound || got != r.result.Sent {
				t.Errorf("%s: %d leader messages (%d sent), want at most 2·|E|·D = %d", what, got, r.result.Sent, bound)
			}
			for p := range tg.n {
				if f := r.sim.Process(proc.ID(p)).(*flooding); f.round != rounds || !f.elected {
					t.Fatalf("%s: p%d ended in round %d (elected %v), want round %d", what, p, f.round, f.elected, rounds)
				}
			}
			if starters != nil && starters[0] == 0 {
				t.Logf("%-26s |E|=%3d D=%2d rounds=%2d messages=%5d (2|E|D=%5d) time=%v",
					tg.name, tg.g.Edges(), tg.g.Diameter(), rounds, r.result.Sent, bound, r.result.VirtualTime)
			}
		}
	}
}

// With the diameter known, D rounds suffice and cost 2·|E|·D messages.
func TestFloodingWithKnownDiameter(t *testing.T) {
	t.Parallel()
	for _, tg := range testGraphs(t) {
		d := tg.g.Diameter()
		for seed := uint64(1); seed <= 3; seed++ {
			r := runGraph(t, newFlooding(0, d), tg.g, tg.n, seed, jitter, elect(0, proc.ID(seed)%proc.ID(tg.n)))
			everyoneElected(t, tg.name, r, tg.n, proc.ID(tg.n-1))
			if got, want := r.result.Sent, int64(2*tg.g.Edges()*d); got != want {
				t.Errorf("%s seed %d: %d messages, want 2·|E|·D = %d", tg.name, seed, got, want)
			}
		}
	}
}

// Fewer rounds than the diameter leave the far end of a line unaware of the
// largest id: the bound D is needed.
func TestFloodingTooFewRoundsMissesTheLeader(t *testing.T) {
	const n = 8
	g := sim.Line(n)
	r := runGraph(t, newFlooding(0, n-2), g, n, 1, jitter, elect(0, 0))
	if got := r.last(0); got == n-1 {
		t.Errorf("p0 elected p%d after %d rounds on a line of diameter %d", got, n-2, n-1)
	}
	if got := r.last(1); got != n-1 {
		t.Errorf("p1 elected %s after %d rounds, want p%d (within %d hops)", got, n-2, n-1, n-2)
	}
}

// A late Elect, or one at a process that has finished, changes nothing.
func TestFloodingIgnoresRepeatedElect(t *testing.T) {
	const n = 8
	g := sim.Ring(n)
	r := runGraph(t, newFlooding(0, 0), g, n, 1, jitter, elect(0, 3), elect(time.Millisecond, 3), elect(5*time.Second, 5))
	everyoneElected(t, "ring", r, n, n-1)
	if got, want := r.result.Sent, int64(2*g.Edges()*(n-1)); got != want {
		t.Errorf("%d messages, want %d", got, want)
	}
	for id := proc.ID(0); id < n; id++ {
		if len(r.elected[id]) != 1 {
			t.Errorf("%s output %v, want one Elected", id, r.elected[id])
		}
	}
}

func TestFloodingRegistered(t *testing.T) {
	for _, a := range Algorithms {
		if a.Name == "flooding" {
			if a.Assumes.Topology != "graph" || !a.Assumes.Synchronous {
				t.Errorf("flooding assumes %v", a.Assumes)
			}
			return
		}
	}
	t.Error("flooding is not registered")
}
