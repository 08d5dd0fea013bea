package election

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

func TestEchoAnnouncesTheBestNodeFromAnySource(t *testing.T) {
	t.Parallel()
	for _, tg := range testGraphs(t) {
		want := int64(2*tg.g.Edges() + tg.n - 1)
		for seed := uint64(1); seed <= 30; seed++ {
			src := proc.ID(rand.New(rand.NewPCG(seed, 0)).IntN(tg.n))
			what := fmt.Sprintf("%s seed %d source %s", tg.name, seed, src)
			r := runGraph(t, newEcho, tg.g, tg.n, seed, jitter, elect(0, src))
			everyoneElected(t, what, r, tg.n, proc.ID(tg.n-1))
			checkRun(t, what, r, "integrity", "no-duplicates", "E1", "E2", "agreement")
			if got := r.result.Sent; got != want {
				t.Errorf("%s: %d messages %v, want 2|E| + N − 1 = %d", what, got, r.result.ByKind, want)
			}
			if got := r.result.Messages("ack"); got != int64(tg.n-1) {
				t.Errorf("%s: %d acks, want one per tree edge, %d", what, got, tg.n-1)
			}
			if seed == 1 {
				t.Logf("%-26s |E|=%3d messages=%4d (election %d, ack %d, coordinator %d) time=%v",
					tg.name, tg.g.Edges(), r.result.Sent, r.result.Messages("election"),
					r.result.Messages("ack"), r.result.Messages("coordinator"), r.result.VirtualTime)
			}
		}
	}
}

// The echo builds a spanning tree: every process but the source has a
// parent, and following parents leads to the source.
func TestEchoBuildsASpanningTree(t *testing.T) {
	for _, tg := range testGraphs(t) {
		r := runGraph(t, newEcho, tg.g, tg.n, 7, jitter, elect(0, 2))
		for id := proc.ID(0); int(id) < tg.n; id++ {
			p, steps := id, 0
			for p != 2 && steps <= tg.n {
				p = r.sim.Process(p).(*echo).parent
				steps++
				if p == proc.None {
					t.Fatalf("%s: %s's path to the source ends at a process with no parent", tg.name, id)
				}
			}
			if steps > tg.n {
				t.Fatalf("%s: %s's parents form a cycle", tg.name, id)
			}
		}
	}
}

// Several sources at once, or one after another: the largest election
// completes, every process ends with the best node, and the cost is at most
// that of one complete election per source.
func TestEchoConcurrentSources(t *testing.T) {
	t.Parallel()
	for _, tg := range testGraphs(t) {
		one := int64(2*tg.g.Edges() + tg.n - 1)
		for seed := uint64(1); seed <= 15; seed++ {
			rng := rand.New(rand.NewPCG(seed, 1))
			k := 2 + rng.IntN(3)
			var elects []sim.TimedInput
			for range k {
				at := time.Duration(rng.IntN(5000)) * time.Microsecond
				elects = append(elects, elect(at, proc.ID(rng.IntN(tg.n))))
			}
			what := fmt.Sprintf("%s seed %d elects %v", tg.name, seed, elects)
			r := runGraph(t, newEcho, tg.g, tg.n, seed, jitter, elects...)
			everyoneElected(t, what, r, tg.n, proc.ID(tg.n-1))
			checkRun(t, what, r, "integrity", "no-duplicates", "E1", "E2", "agreement")
			if got := r.result.Sent; got > int64(k)*one {
				t.Errorf("%s: %d messages, want at most %d elections × %d", what, got, k, one)
			}
			for id := proc.ID(0); int(id) < tg.n; id++ {
				if ls := r.elected[id]; len(ls) != 1 {
					t.Errorf("%s: %s output %v, want one Elected (the leader never changes)", what, id, ls)
				}
			}
		}
	}
}

// A process alone is its own source, leaf and leader.
func TestEchoSingleProcess(t *testing.T) {
	g := sim.Line(1)
	r := runGraph(t, newEcho, g, 1, 1, jitter, elect(0, 0))
	if r.last(0) != 0 || r.result.Sent != 0 {
		t.Errorf("alone: elected %s with %d messages, want p0 with none", r.last(0), r.result.Sent)
	}
}
