package mutex

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestMajorityNeeds(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 8: 5, 9: 5} {
		if got := majNeed(n); got != want {
			t.Errorf("majNeed(%d) = %d, want %d", n, got, want)
		}
	}
}

// Alone, a requester enters with its own vote and ⌊N/2⌋ others, and
// releases every vote: with N = 5, four requests, two votes at least,
// four releases.
func TestMajorityUncontended(t *testing.T) {
	run := raScript(t, raAlgorithm(t, "ricart-agrawala-majority"), 5, sim.Network{}, sim.Script{
		raAt(0, 2, Acquire{}), raAt(5, 2, Release{}), raAt(10, 4, Acquire{}), raAt(15, 4, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{2, 4}) {
		t.Fatalf("entry order %v, want [2 4]", got)
	}
	m := run.res.Messages
	if m("request") != 8 || m("reply") != 8 || m("release") != 8 {
		t.Errorf("%d requests, %d votes, %d releases; want 4 of each per entry", m("request"), m("reply"), m("release"))
	}
	for _, e := range run.tr.Events {
		if e.Kind == trace.Output && e.Type == "enter" && e.Node == 2 && e.Time != 2e6 {
			t.Errorf("p2 entered at %s, want 2ms (one round trip)", trace.FormatNS(e.Time))
		}
	}
}

// Two processes that request at once each vote for themselves and wait
// for the other's vote for ever: the textbook's majority rule alone
// deadlocks. The Waiting and Lent outputs show the cycle p0 → p1 → p0.
func TestMajorityDeadlocks(t *testing.T) {
	for _, n := range []int{2, 3} {
		var script sim.Script
		for p := range n {
			script = append(script, raAt(0, proc.ID(p), Acquire{}))
		}
		run := raScript(t, raAlgorithm(t, "ricart-agrawala-majority"), n, sim.Network{}, script)
		if run.entries != 0 {
			t.Errorf("n=%d: %d entries, want a deadlock with none", n, run.entries)
		}
		raMust(t, run, "ME2", false)
		me2 := raCheck(t, run.tr, "ME2")[0]
		if !strings.HasPrefix(me2.Detail, "deadlock: p0 waits for p1, p1 waits for p") {
			t.Errorf("n=%d: %s; want the wait-for cycle through p0 and p1", n, me2.Detail)
		}
		lent := map[int32]string{}
		for _, e := range run.tr.Events {
			if e.Kind == trace.Output && e.Type == "lent" {
				lent[e.Node] = e.Label
			}
		}
		for p := range n {
			if want := "lent to " + proc.ID(p).String(); lent[int32(p)] != want {
				t.Errorf("n=%d: p%d's last Lent %q, want %q (its own vote)", n, p, lent[int32(p)], want)
			}
		}
	}
}

// First-come voting does not respect happened-before: p1 requests after
// it received (and voted for) p0's request, but its requests reach the
// other voters first, over faster links, and win their votes.
func TestMajorityBreaksME3(t *testing.T) {
	slow := sim.Constant(10 * time.Millisecond)
	net := sim.Network{FIFO: true, Links: []sim.Link{{From: 0, To: 2, Latency: slow}, {From: 0, To: 3, Latency: slow}, {From: 0, To: 4, Latency: slow}}}
	run := raScript(t, raAlgorithm(t, "ricart-agrawala-majority"), 5, net, sim.Script{
		raAt(0, 0, Acquire{}),   // votes for itself; p1 votes for p0 at 1ms
		raAt(1.5, 1, Acquire{}), // after p0's request: p2, p3, p4 vote for p1 at 2.5ms
		raAt(5, 1, Release{}),
		raAt(30, 0, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{1, 0}) {
		t.Fatalf("entry order %v, want [1 0]", got)
	}
	raMust(t, run, "ME1", true)
	raMust(t, run, "ME2", true)
	raMust(t, run, "ME3", false)
}
