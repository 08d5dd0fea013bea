package epidemic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// facts counts the membership facts a message's label carries:
// "PING(7→p3){alive p2@0,suspect p5@1 by p4}" carries two.
func facts(label string) int {
	n := 0
	for _, s := range []string{"alive p", "suspect p", "dead p", "left p"} {
		n += strings.Count(label, s)
	}
	return n
}

// joinRun runs an open group founded by p0 alone, which the others join
// at the times given, each through a member present then (the
// simulator's choice).
func joinRun(t *testing.T, at []time.Duration, loss float64, seed uint64) *simtest.Recorded {
	t.Helper()
	a := algorithm(t, "members", epidemic.Params{Open: true, Founders: 1})
	var faults []sim.Fault
	for j, d := range at {
		faults = append(faults, sim.Fault{Kind: sim.Join, Node: proc.ID(1 + j), At: d})
	}
	net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, Loss: loss}
	return simtest.Run(t, "gossip", sim.Config{Nodes: 1 + len(at), Seed: seed, New: a.New, Network: net,
		Faults: faults, Deadline: time.Second})
}

// TestJoinAnswerIsTheWholeList: 79 members join a group one after
// another, 2 ms apart; 20 more join at 400 ms, once the first have
// settled. Each of the 20 that joins through one of the first has its
// contact's whole list in the answer to its join (the push-pull of
// memberlist's and Serf's joins: at least the 80 members then present),
// and every member ends up knowing every other.
// Over seeds, with loss. Before, a contact answered with a sample of at
// most 32 facts and the newcomer pulled the rest from another member.
func TestJoinAnswerIsTheWholeList(t *testing.T) {
	const first, later = 79, 20
	var at []time.Duration
	for j := range first {
		at = append(at, time.Duration(5+2*j)*time.Millisecond)
	}
	for j := range later {
		at = append(at, time.Duration(400+5*j)*time.Millisecond)
	}
	const n = 1 + first + later
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		r := joinRun(t, at, 0.02, seed)
		contact := map[int32]int32{} // newcomer → the member it announced itself to
		answers := 0
		for _, e := range r.Trace.Events {
			if e.Kind != trace.Send {
				continue
			}
			if _, ok := contact[e.Node]; !ok && e.Type == "join-req" && e.Node > 0 {
				contact[e.Node] = e.Peer
			}
			if e.Type == "join-ack" && e.Peer > first && e.Node <= first && contact[e.Peer] == e.Node {
				if k := facts(e.Label); k < 1+first {
					t.Errorf("seed %d: p%d answered p%d's join with %d facts, want its whole list (at least %d)", seed, e.Node, e.Peer, k, 1+first)
				}
				answers++
				contact[e.Peer] = -1 // its first answer only
			}
		}
		if answers < later/4 {
			t.Fatalf("seed %d: %d answers by the first members to %d later joins", seed, answers, later)
		}
		knows := learnt(t, r)
		for i := range proc.ID(n) {
			for j := proc.ID(1); j < n; j++ {
				if i != j && !knows[i][j] {
					t.Errorf("seed %d: p%d never learnt of p%d", seed, i, j)
				}
			}
		}
	}
}

// TestListsAreLearntQuietly: a member learnt from a list (a join's answer,
// an exchange of lists) is not disseminated again — that it is alive is
// no news to the group. Forty members join in the first 45 ms, and eight
// more from 400 ms, long after the news of the first forty has died out:
// the eight learn the forty from their contacts' answers, and none of their messages should carry "alive pX@0" for one
// of the forty. (Without loss: a newcomer whose pull is lost learns the
// rest from a periodic exchange, which spreads what it repairs.) Before,
// every newcomer put what
// it learnt from its contact's list into its buffer and piggybacked each
// fact Retransmit·⌈log₁₀(n+1)⌉ times: n newcomers, n² facts of no news.
func TestListsAreLearntQuietly(t *testing.T) {
	const first, later = 40, 8
	var at []time.Duration
	for j := range first {
		at = append(at, time.Duration(5+j)*time.Millisecond)
	}
	for j := range later {
		at = append(at, time.Duration(400+10*j)*time.Millisecond)
	}
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		r := joinRun(t, at, 0, seed)
		stale := 0
		for _, e := range r.Trace.Events {
			if e.Kind != trace.Send || e.Node <= first {
				continue
			}
			switch e.Type {
			case "ping", "ping-req", "ack", "gossip":
			default:
				continue
			}
			for x := 1; x <= first; x++ {
				for _, end := range []string{",", "}"} {
					stale += strings.Count(e.Label, fmt.Sprintf("alive p%d@0%s", x, end))
				}
			}
		}
		if stale > 0 {
			t.Errorf("seed %d: the later members piggybacked or gossiped %d facts of one of the first members alive at incarnation 0", seed, stale)
		}
		knows := learnt(t, r)
		for i := range proc.ID(1 + first + later) {
			for j := proc.ID(1); j <= first+later; j++ {
				if i != j && !knows[i][j] {
					t.Errorf("seed %d: p%d never learnt of p%d", seed, i, j)
				}
			}
		}
	}
}

// learnt is, for each member, the members it came to hold alive (the
// Alive outputs).
func learnt(t *testing.T, r *simtest.Recorded) map[proc.ID]map[proc.ID]bool {
	t.Helper()
	out := map[proc.ID]map[proc.ID]bool{}
	for id, evs := range r.Outputs("alive") {
		out[id] = map[proc.ID]bool{}
		for _, e := range evs {
			var al epidemic.Alive
			if err := json.Unmarshal(e.Data, &al); err != nil {
				t.Fatal(err)
			}
			out[id][al.Member] = true
		}
	}
	return out
}

// TestJoinersTogetherKnowOneAnotherSoon: sixty members join within 3 ms
// through the one founder, with 5% of the datagrams lost. A member whose
// contact answered before it had heard of another joiner learns of that
// one by rumor, and a rumor misses a member now and then; the exchanges
// of lists every two periods in a member's first SyncEvery repair what
// it missed. So every member knows every other within ten periods (100
// ms) of the last join, in every seed (at most 84 ms in these). Before,
// the first exchange came SyncEvery (10) periods after the join, and a
// member the rumor missed waited for it, or the next: 122 to 306 ms.
func TestJoinersTogetherKnowOneAnotherSoon(t *testing.T) {
	const n = 61
	var at []time.Duration
	for j := range n - 1 {
		at = append(at, 5*time.Millisecond+time.Duration(j)*50*time.Microsecond)
	}
	last := at[len(at)-1]
	for seed := uint64(1); seed <= uint64(simtest.Seeds(10, 2)); seed++ {
		r := joinRun(t, at, 0.05, seed)
		type pair struct{ of, about proc.ID }
		when := map[pair]time.Duration{}
		for id, evs := range r.Outputs("alive") {
			for _, e := range evs {
				var al epidemic.Alive
				if err := json.Unmarshal(e.Data, &al); err != nil {
					t.Fatal(err)
				}
				if _, ok := when[pair{id, al.Member}]; !ok {
					when[pair{id, al.Member}] = time.Duration(e.Time)
				}
			}
		}
		var slowest time.Duration
		late := 0
		for i := range proc.ID(n) {
			for j := proc.ID(1); j < n; j++ {
				if i == j {
					continue
				}
				d, ok := when[pair{i, j}]
				if !ok {
					t.Errorf("seed %d: p%d never learnt of p%d", seed, i, j)
				}
				slowest = max(slowest, d-last)
				if d-last > 10*epidemic.DefaultPeriod {
					late++
				}
			}
		}
		if bound := 10 * epidemic.DefaultPeriod; slowest > bound {
			t.Errorf("seed %d: the last of the members learnt the last of the others %v after the last join (%d pairs after %v), want at most %v",
				seed, slowest, late, bound, bound)
		}
	}
}

// TestDeathReachesEveryMemberAtOnce: in an open group (the live
// service's), the member that declares a crashed member dead tells every
// member it holds alive at once, so the last member holds it dead within
// a few network delays of the first — not periods of piggybacking later.
// 64 founders, p7 crashed, over seeds with loss; and the group holds p7
// dead everywhere in the end.
func TestDeathReachesEveryMemberAtOnce(t *testing.T) {
	const n, crashed = 64, 7
	a := algorithm(t, "members", epidemic.Params{Open: true, Founders: n, AnnounceDeaths: true})
	period := epidemic.DefaultPeriod
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		net := sim.Network{Latency: sim.Exponential{MeanD: 100 * time.Microsecond}, Loss: 0.01}
		r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net,
			Faults: []sim.Fault{{Kind: sim.Crash, Node: crashed, At: 200 * time.Millisecond}}, Deadline: 2 * time.Second})
		first, last := time.Duration(-1), time.Duration(0)
		holds := map[int32]bool{}
		for _, e := range r.Trace.Events {
			if e.Kind != trace.Output || e.Type != "dead" {
				continue
			}
			var f struct {
				Member int32 `json:"member"`
			}
			if err := json.Unmarshal(e.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Member != crashed || holds[e.Node] {
				continue
			}
			holds[e.Node] = true
			at := time.Duration(e.Time)
			if first < 0 {
				first = at
			}
			last = at
		}
		if len(holds) != n-1 {
			t.Fatalf("seed %d: %d of the %d others hold p%d dead", seed, len(holds), n-1, crashed)
		}
		if spread := last - first; spread > period/2 {
			t.Errorf("seed %d: the last member held p%d dead %v after the first (period %v)", seed, crashed, spread, period)
		}
	}
}
