package election

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func newChangRoberts(proc.ID, int) proc.Process { return &changRoberts{elected: proc.None} }

// Coulouris et al.: the worst case of the ring algorithm is a starter whose
// anticlockwise neighbour holds the largest id: N−1 messages to reach it, N
// to take its id round, N for the ELECTED message: 3N−1.
func TestRingWorstCase(t *testing.T) {
	for _, n := range []int{4, 8, 16} {
		tr, res := electionRun{Nodes: n, Seed: 1, New: newChangRoberts, Ring: true,
			Inputs: sim.Script{electAt(0, 0)}, // p0's anticlockwise neighbour is p(N−1)
		}.run(t)
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("n=%d: %v", n, bad)
		}
		byKind, _ := sends(tr, 0)
		if byKind["election"] != 2*n-1 || byKind["elected"] != n {
			t.Errorf("n=%d: %v, want election 2N−1 = %d, elected N = %d", n, byKind, 2*n-1, n)
		}
		if got := total(byKind); got != 3*n-1 {
			t.Errorf("n=%d: %d messages, want 3N−1 = %d", n, got, 3*n-1)
		}
		// The last process elects after 3N−2 message delays; the ELECTED
		// message's return to the coordinator makes the textbook's 3N−1.
		if turn := lastElected(tr); turn != time.Duration(3*n-2)*time.Millisecond {
			t.Errorf("n=%d: last elected at %v, want 3N−2 messages", n, turn)
		}
		if res.VirtualTime != time.Duration(3*n-1)*time.Millisecond {
			t.Errorf("n=%d: run ended at %v, want 3N−1 messages", n, res.VirtualTime)
		}
	}
}

// Two elections circulating at once (Chang & Roberts 1979). p0 and p4 of 8
// start together. p0's message (carrying 1, 2, 3 as it goes) reaches p4, a
// participant that has sent a larger id, and is dropped there: 4 messages.
// p4's is replaced by 7 at p7 and goes round to p7: 3 + 8 messages. Then 8
// ELECTED messages: 23 in all, against 15 + 15 for two separate elections.
func TestRingConcurrentElectionsExtinguished(t *testing.T) {
	tr, _ := electionRun{Nodes: 8, Seed: 1, New: newChangRoberts, Ring: true,
		Inputs: sim.Script{electAt(0, 0), electAt(0, 4)},
	}.run(t)
	if bad := judge(t, tr); len(bad) > 0 {
		t.Fatal(bad)
	}
	byKind, _ := sends(tr, 0)
	if byKind["election"] != 15 || byKind["elected"] != 8 {
		t.Errorf("messages %v, want election 15, elected 8", byKind)
	}
	// p4 receives ELECTION(p3), the remains of p0's election, and sends
	// only its own ELECTION(p4) and, later, p7's.
	var got, sent []string
	for _, e := range tr.Events {
		if e.Node == 4 && e.Type == "election" {
			switch e.Kind {
			case trace.Recv:
				got = append(got, e.Label)
			case trace.Send:
				sent = append(sent, e.Label)
			}
		}
	}
	if !slices.Equal(got, []string{"ELECTION(p3)", "ELECTION(p7)"}) || !slices.Equal(sent, []string{"ELECTION(p4)", "ELECTION(p7)"}) {
		t.Errorf("p4 received %v and sent %v; want ELECTION(p3) dropped", got, sent)
	}
}

// Without crashes the ring algorithm keeps E1, E2 and agreement whoever
// starts, however many start, with jittery channels (FIFO is not needed).
func TestRingSweep(t *testing.T) {
	for _, n := range []int{3, 5, 8} {
		for seed := uint64(1); seed <= 50; seed++ {
			r := rand.New(rand.NewPCG(seed, uint64(n)))
			var in sim.Script
			for _, p := range r.Perm(n)[:1+r.IntN(n)] {
				in = append(in, electAt(time.Duration(r.Int64N(int64(3*time.Millisecond))), proc.ID(p)))
			}
			tr, _ := electionRun{Nodes: n, Seed: seed, New: newChangRoberts, Ring: true,
				Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond},
				Inputs:  in,
			}.run(t)
			if bad := judge(t, tr); len(bad) > 0 {
				t.Errorf("n=%d seed %d inputs %v: %v", n, seed, in, bad)
			}
		}
	}
}

// The list variant without failures: one turn of ELECTION, one of
// COORDINATOR, each acknowledged: 4N messages, and every process elects
// the largest id.
func TestRingListNoFailures(t *testing.T) {
	for _, n := range []int{4, 8} {
		tr, _ := electionRun{Nodes: n, Seed: 1, New: NewRingList(0), Ring: true,
			Inputs: sim.Script{electAt(0, 2)},
		}.run(t)
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("n=%d: %v", n, bad)
		}
		byKind, _ := sends(tr, 0)
		if byKind["election"] != n || byKind["coordinator"] != n || byKind["ack"] != 2*n {
			t.Errorf("n=%d: %v, want election N, coordinator N, ack 2N", n, byKind)
		}
	}
}

// A crashed successor is skipped: with p3 and p4 of 8 down, p2 tries p3,
// then p4, then passes to p5, and the list elects p7 among the six live.
func TestRingListSkipsCrashed(t *testing.T) {
	tr, _ := electionRun{Nodes: 8, Seed: 1, New: NewRingList(0), Ring: true,
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 3}, {Kind: sim.Crash, Node: 4}},
		Inputs: sim.Script{electAt(time.Millisecond, 0)},
	}.run(t)
	if bad := judge(t, tr); len(bad) > 0 {
		t.Fatal(bad)
	}
	_, links := sends(tr, 0)
	for _, l := range []string{"election 2→3", "election 2→4", "election 2→5", "coordinator 2→3", "coordinator 2→4", "coordinator 2→5"} {
		if links[l] != 1 {
			t.Errorf("%s sent %d times, want 1", l, links[l])
		}
	}
	byKind, _ := sends(tr, 0)
	// 6 live: 6 ELECTION + 6 COORDINATOR delivered, 2+2 lost to the crashed.
	if byKind["election"] != 8 || byKind["coordinator"] != 8 || byKind["ack"] != 12 {
		t.Errorf("messages %v, want election 8, coordinator 8, ack 12", byKind)
	}
}

// Random crash-stop failures before and during the election, jittery
// latency inside the ack timeout, a perfect failure detector: E1, E2 and
// agreement hold.
func TestRingListSweep(t *testing.T) {
	for _, n := range []int{3, 5, 8} {
		for seed := uint64(1); seed <= 50; seed++ {
			r := rand.New(rand.NewPCG(seed, uint64(n)))
			faults := randomCrashes(r, n, 30*time.Millisecond)
			first := []proc.ID{proc.ID(r.IntN(n))}
			if r.IntN(2) == 0 {
				first = append(first, proc.ID(r.IntN(n)))
			}
			tr, _ := electionRun{Nodes: n, Seed: seed, New: NewRingList(0), Ring: true,
				Latency:  sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond},
				Faults:   faults,
				Workload: newDetector(faults, first),
			}.run(t)
			if bad := judge(t, tr); len(bad) > 0 {
				t.Errorf("n=%d seed %d faults %v: %v", n, seed, faults, bad)
			}
		}
	}
}
