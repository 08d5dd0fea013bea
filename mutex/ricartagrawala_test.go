package mutex

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// A worked example with scalar Lamport timestamps: processes P1, P2, P3
// stamp events T(e) = 10·L(e) + id, and request with T = 421, 112 and 143.
// Here P1, P2, P3 are p0, p1, p2, and a request's stamp (L, p) is
// T = 10·L + p+1; the clocks start one tick before L = 42, 11, 14. All
// three request at once; they must enter in the order of the stamps: P2,
// P3, P1.
func TestRicartAgrawalaFigureExample(t *testing.T) {
	start := []uint64{41, 10, 13}
	a := raAlgorithm(t, "ricart-agrawala")
	a.New = func(id proc.ID, n int) proc.Process { return &ricartAgrawala{clock: start[id]} }
	run := raScript(t, a, 3, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(0, 1, Acquire{}), raAt(0, 2, Acquire{}),
		raAt(10, 1, Release{}), raAt(20, 2, Release{}), raAt(30, 0, Release{}),
	})
	stamps := map[int32]int{}
	for _, e := range run.tr.Events {
		var c, p int
		if e.Kind == trace.Send && e.Type == "request" {
			if _, err := fmt.Sscanf(e.Label, "REQ(%d.%d)", &c, &p); err != nil {
				t.Fatalf("request label %q: %v", e.Label, err)
			}
			stamps[e.Node] = 10*c + p + 1
		}
	}
	if want := map[int32]int{0: 421, 1: 112, 2: 143}; fmt.Sprint(stamps) != fmt.Sprint(want) {
		t.Errorf("request stamps T = 10·L + id: %v, want %v", stamps, want)
	}
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{1, 2, 0}) {
		t.Errorf("entered in the order %v, want P2, P3, P1 = [1 2 0] (112 < 143 < 421)", got)
	}
	if run.res.Sent != 3*2*2 {
		t.Errorf("%d messages for 3 entries, want 2(N−1) = 4 each", run.res.Sent)
	}
	raMust(t, run, "ME1", true)
	raMust(t, run, "ME2", true)
	raMust(t, run, "ME3", true)
}

// Tanenbaum & van Steen §6.3, three processes: P0 and P2 want the resource
// at the same moment; P0 has the lower timestamp and wins; when it is done
// it sends its OK to P2, which goes ahead. P1 is not interested and answers
// both at once.
func TestRicartAgrawalaThreeProcesses(t *testing.T) {
	a := raAlgorithm(t, "ricart-agrawala")
	run := raScript(t, a, 3, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(0, 2, Acquire{}), raAt(5, 0, Release{}), raAt(10, 2, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 2}) {
		t.Errorf("entered in the order %v, want [0 2]", got)
	}
	// P2 defers nothing it receives from P0 (P0's stamp is lower); P0 defers
	// P2's request until it leaves at 5ms: P2's last reply leaves P0 then.
	var deferred []string
	for _, e := range run.tr.Events {
		if e.Kind == trace.Send && e.Type == "reply" && e.Node == 0 {
			deferred = append(deferred, trace.FormatNS(e.Time))
		}
	}
	if !slices.Equal(deferred, []string{"5.000ms"}) {
		t.Errorf("P0 replied to P2 at %v, want once, when it left at 5ms", deferred)
	}
}

func TestRicartAgrawalaSingleProcess(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "ricart-agrawala-jr", "ricart-agrawala-majority", "suzuki-kasami", "raymond"} {
		run := raScript(t, raAlgorithm(t, name), 1, sim.Network{}, sim.Script{
			raAt(0, 0, Acquire{}), raAt(1, 0, Release{}), raAt(2, 0, Acquire{}), raAt(3, 0, Release{}),
		})
		if run.entries != 2 || run.res.Sent != 0 {
			t.Errorf("%s alone: %d entries and %d messages, want 2 and 0", name, run.entries, run.res.Sent)
		}
	}
}

// JUST-RELEASED: a process that re-enters while nobody else asked sends
// nothing; the base algorithm pays 2(N−1) each time.
func TestJustReleasedReentersWithoutMessages(t *testing.T) {
	const n, rounds = 5, 4
	var script sim.Script
	for k := range rounds {
		script = append(script, raAt(float64(10*k), 3, Acquire{}), raAt(float64(10*k+5), 3, Release{}))
	}
	for _, c := range []struct {
		name string
		want []int
	}{
		{"ricart-agrawala", []int{8, 8, 8, 8}},
		{"ricart-agrawala-jr", []int{8, 0, 0, 0}},
	} {
		run := raScript(t, raAlgorithm(t, c.name), n, sim.Network{}, script)
		if got := raSendsPerEntry(run.tr); !slices.Equal(got, c.want) {
			t.Errorf("%s: messages per entry %v, want %v (2(N−1) = %d)", c.name, got, c.want, 2*(n-1))
		}
	}
}

// A request that reaches a JUST-RELEASED process ends the privilege: it
// replies, and must ask again next time.
func TestJustReleasedEndsWhenAnotherAsks(t *testing.T) {
	run := raScript(t, raAlgorithm(t, "ricart-agrawala-jr"), 3, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(5, 0, Release{}), // p0 enters, leaves: JUST-RELEASED
		raAt(10, 1, Acquire{}), raAt(15, 1, Release{}), // p1 asks: p0 replies, RELEASED
		raAt(20, 0, Acquire{}), raAt(25, 0, Release{}), // p0 must ask again
		raAt(30, 0, Acquire{}), raAt(35, 0, Release{}), // and now re-enters for free
	})
	if got := raSendsPerEntry(run.tr); !slices.Equal(got, []int{4, 4, 4, 0}) {
		t.Errorf("messages per entry %v, want [4 4 4 0]", got)
	}
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 1, 0, 0}) {
		t.Errorf("entry order %v, want [0 1 0 0]", got)
	}
}

// A request that arrives while the holder is in the critical section after
// a free re-entry is deferred and answered on exit, like in HELD.
func TestJustReleasedDefersWhileHeld(t *testing.T) {
	run := raScript(t, raAlgorithm(t, "ricart-agrawala-jr"), 2, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(5, 0, Release{}),
		raAt(10, 0, Acquire{}), // free re-entry at 10ms
		raAt(11, 1, Acquire{}), // arrives at 12ms, deferred
		raAt(20, 0, Release{}), raAt(30, 1, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 0, 1}) {
		t.Fatalf("entry order %v, want [0 0 1]", got)
	}
	for _, e := range run.tr.Events {
		if e.Kind == trace.Output && e.Type == "enter" && e.Node == 1 && e.Time != 21e6 {
			t.Errorf("p1 entered at %s, want 21ms: one message after p0 left at 20ms", trace.FormatNS(e.Time))
		}
	}
}

// JUST-RELEASED loses ME3, with FIFO channels too. p1 replies to p0's
// request, then requests itself; its request to p0 is slow (20 ms). p2
// replies to p0 after p1's request reached it, so p0's entry at 11ms, its
// exit into JUST-RELEASED and its next Acquire at 13ms all happened after
// p1's Acquire; yet p0 re-enters at once, ahead of p1.
func TestJustReleasedBreaksME3(t *testing.T) {
	net := sim.Network{FIFO: true, Links: []sim.Link{
		{From: 1, To: 0, Latency: &raSeqLatency{ds: []time.Duration{time.Millisecond, 20 * time.Millisecond}}},
		{From: 0, To: 2, Latency: sim.Constant(10 * time.Millisecond)},
	}}
	run := raScript(t, raAlgorithm(t, "ricart-agrawala-jr"), 3, net, sim.Script{
		raAt(0, 0, Acquire{}),  // REQ p0 → p1 (1ms), p0 → p2 (10ms)
		raAt(3, 1, Acquire{}),  // after replying to p0; REQ p1 → p0 arrives at 23ms
		raAt(12, 0, Release{}), // p0 entered at 11ms: JUST-RELEASED
		raAt(13, 0, Acquire{}), // re-enters at once
		raAt(14, 0, Release{}),
		raAt(30, 1, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 0, 1}) {
		t.Fatalf("entry order %v, want [0 0 1]", got)
	}
	raMust(t, run, "ME1", true)
	raMust(t, run, "ME2", true)
	raMust(t, run, "ME3", false)
}
