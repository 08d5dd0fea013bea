package snapshot_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/snapshot"
	"github.com/cohort-go/cohort/trace"
)

var properties = []string{"snapshot-consistent", "snapshot-channels", "bank-conserved"}

func algo(t testing.TB, name string) proc.Algorithm {
	t.Helper()
	i := slices.IndexFunc(snapshot.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("%s is not registered", name)
	}
	return snapshot.Algorithms[i]
}

// topology is the graph of a sweep's run: complete, ring, line or grid by
// seed.
func topology(n int, seed uint64) sim.Topology {
	switch seed % 4 {
	case 1:
		return sim.Ring(n)
	case 2:
		return sim.Line(n)
	case 3:
		return sim.Grid(n)
	}
	return sim.NewFull(n)
}

// bank is a run of the bank workload: payments, and rounds of snapshots
// each begun by initiators processes at once.
func bank(t testing.TB, newProc func(proc.ID, int) proc.Process, n int, seed uint64, net sim.Network, faults []sim.Fault, topo sim.Topology, initiators int) *simtest.Recorded {
	t.Helper()
	w := &lab.SnapshotLoad{Payments: 15, SnapshotTakes: lab.SnapshotTakes{Snapshots: 3, Initiators: initiators, Every: 4 * time.Millisecond}}
	return simtest.Run(t, "snapshot", sim.Config{Nodes: n, Seed: seed, New: newProc, Network: net, Faults: faults, Topology: topo, Workload: w})
}

// TestSweep runs both algorithms over many seeds, inside their
// assumptions — Chandy–Lamport on FIFO channels, Lai–Yang on channels
// that reorder — with jittery latency, pauses, graphs from the complete
// one to a line, and up to every process beginning a snapshot at once:
// every snapshot is a consistent cut, its channel states are the messages
// in flight across it, and the bank's money is all there.
func TestSweep(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 10
	}
	for _, name := range []string{"chandy-lamport", "lai-yang"} {
		a := algo(t, name)
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n := 2 + int(seed%7)
				net, faults := simtest.Within(a.Assumes, n, seed, 40*time.Millisecond)
				if !a.Assumes.FIFO {
					net.Reorder = 0.3 // a lot of it, always
				}
				r := bank(t, a.New, n, seed, net, faults, topology(n, seed), 1+int(seed)%n)
				if got := len(r.Outputs("recorded")); got != n {
					t.Fatalf("seed %d: %d processes recorded snapshots, want %d", seed, got, n)
				}
				for _, p := range properties {
					if v := r.Verdicts(t, p)[p]; !v.OK() {
						t.Fatalf("seed %d (%d nodes, %s; %s): %s\n%s", seed, n, topology(n, seed), simtest.Describe(net, faults), v, v.Counterexample(r.Trace))
					}
				}
			}
		})
	}
}

// markers counts the markers of each snapshot on each directed channel.
func markers(tr *trace.Trace) map[string]map[[2]int32]int {
	out := map[string]map[[2]int32]int{}
	for _, e := range tr.Events {
		if e.Kind != trace.Send || e.Type != "marker" {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(e.Label, "marker("), ")"), ",")
		if out[id] == nil {
			out[id] = map[[2]int32]int{}
		}
		out[id][[2]int32{e.Node, e.Peer}]++
	}
	return out
}

// TestOneMarkerPerChannel: every snapshot sends exactly one marker on
// every directed channel of the graph, and none elsewhere, concurrent
// snapshots included.
func TestOneMarkerPerChannel(t *testing.T) {
	for _, name := range []string{"chandy-lamport", "lai-yang"} {
		a := algo(t, name)
		for seed := uint64(1); seed <= 8; seed++ {
			n := 3 + int(seed%5)
			topo := topology(n, seed)
			net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: a.Assumes.FIFO}
			r := bank(t, a.New, n, seed, net, nil, topo, 2)
			cuts := map[string]bool{}
			for _, es := range r.Outputs("cut") {
				for _, e := range es {
					cuts[strings.TrimPrefix(e.Label, "cut ")] = true
				}
			}
			got := markers(r.Trace)
			if len(cuts) != 6 || len(got) != len(cuts) {
				t.Fatalf("%s seed %d: %d snapshots, markers of %d, want 6 of each", name, seed, len(cuts), len(got))
			}
			for id, channels := range got {
				want := 0
				for p := range n {
					for _, q := range topo.Neighbors(proc.ID(p)) {
						want++
						if c := channels[[2]int32{int32(p), int32(q)}]; c != 1 {
							t.Errorf("%s seed %d %s: %d markers on p%d→p%d, want 1", name, seed, id, c, p, q)
						}
					}
				}
				if len(channels) != want {
					t.Errorf("%s seed %d %s: markers on %d channels, the graph has %d", name, seed, id, len(channels), want)
				}
			}
		}
	}
}

// TestChandyLamportNeedsFIFO: on channels that reorder, a marker can
// overtake a message sent before it (the message is then missing from the
// channel's state, and received inside the cut but sent outside it) or
// be overtaken by one sent after it (recorded though it was not in
// flight): the checkers catch Chandy–Lamport there, and Lai–Yang, in the
// very same runs, holds.
func TestChandyLamportNeedsFIFO(t *testing.T) {
	caught := map[string]int{}
	const seeds = 10
	for seed := uint64(1); seed <= seeds; seed++ {
		net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, Reorder: 0.3}
		cl := bank(t, algo(t, "chandy-lamport").New, 5, seed, net, nil, nil, 2)
		for name, v := range cl.Verdicts(t, properties...) {
			if v.Status == check.Violated {
				caught[name]++
			}
		}
		bank(t, algo(t, "lai-yang").New, 5, seed, net, nil, nil, 2).Hold(t, properties...)
	}
	for _, p := range properties {
		if caught[p] == 0 {
			t.Errorf("%s never caught Chandy–Lamport on reordering channels in %d seeds", p, seeds)
		}
	}
	t.Logf("Chandy–Lamport on reordering channels, runs violating each property out of %d: %v", seeds, caught)
}

// TestForgetfulChandyLamportIsCaught: a Chandy–Lamport that forgets to
// record the channels loses the money in flight: snapshot-channels and
// bank-conserved catch it.
func TestForgetfulChandyLamportIsCaught(t *testing.T) {
	forgetful := func(proc.ID, int) proc.Process {
		return snapshot.NewForgetfulChandyLamport(snapshot.NewBank(snapshot.DefaultBalance))
	}
	net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: true}
	r := bank(t, forgetful, 5, 1, net, nil, nil, 1)
	vs := r.Verdicts(t, properties...)
	if !vs["snapshot-consistent"].OK() {
		t.Errorf("the cut itself is fine: %s", vs["snapshot-consistent"])
	}
	for _, p := range []string{"snapshot-channels", "bank-conserved"} {
		if vs[p].Status != check.Violated {
			t.Errorf("%s: %s, want violated", p, vs[p])
		}
	}
}

// TestLaiYangNeedsNoDuplicates: a duplicated white message is counted
// twice and recorded twice: bank-conserved and snapshot-channels catch
// Lai–Yang on a network that duplicates, outside its assumptions.
func TestLaiYangNeedsNoDuplicates(t *testing.T) {
	caught := false
	for seed := uint64(1); seed <= 10 && !caught; seed++ {
		net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, Duplicate: 0.3}
		r := bank(t, algo(t, "lai-yang").New, 5, seed, net, nil, nil, 1)
		vs := r.Verdicts(t, "snapshot-channels", "bank-conserved")
		caught = vs["snapshot-channels"].Status == check.Violated
	}
	if !caught {
		t.Error("no run of Lai–Yang on a duplicating network was caught in 10 seeds")
	}
}

// TestSameSeedSameTrace: a run replays byte for byte from its seed.
func TestSameSeedSameTrace(t *testing.T) {
	for _, name := range []string{"chandy-lamport", "lai-yang"} {
		a := algo(t, name)
		hash := func() string {
			net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, FIFO: a.Assumes.FIFO, Reorder: map[bool]float64{true: 0, false: 0.3}[a.Assumes.FIFO]}
			h := trace.NewHasher(trace.Header{Nodes: 6, Seed: 9})
			w := &lab.SnapshotLoad{SnapshotTakes: lab.SnapshotTakes{Initiators: 3}}
			simtest.Run(t, "snapshot", sim.Config{Nodes: 6, Seed: 9, New: a.New, Network: net, Workload: w, Trace: h})
			return h.Sum()
		}
		if h1, h2 := hash(), hash(); h1 != h2 {
			t.Errorf("%s: seed 9 gave traces %s and %s", name, h1, h2)
		}
	}
}

// TestCompleteWithinDiameterPlusOne: with a constant delay, a snapshot is
// complete everywhere at most diameter + 1 delays after it begins.
func TestCompleteWithinDiameterPlusOne(t *testing.T) {
	const n, delay = 9, time.Millisecond
	for _, topo := range []*sim.Graph{sim.Line(n), sim.Ring(n), sim.Grid(n)} {
		for _, name := range []string{"chandy-lamport", "lai-yang"} {
			net := sim.Network{Latency: sim.Constant(delay), FIFO: true}
			r := bank(t, algo(t, name).New, n, 3, net, nil, topo, 1)
			begun := map[string]int64{}
			last := map[string]int64{}
			for _, e := range r.Trace.Events {
				if e.Kind != trace.Output {
					continue
				}
				switch e.Type {
				case "cut":
					id := strings.TrimPrefix(e.Label, "cut ")
					if _, ok := begun[id]; !ok {
						begun[id] = e.Time
					}
				case "recorded":
					last[strings.TrimPrefix(e.Label, "recorded ")] = e.Time
				}
			}
			bound := time.Duration(topo.Diameter()+1) * delay
			for id, t0 := range begun {
				if took := time.Duration(last[id] - t0); took > bound {
					t.Errorf("%s on a %s of %d: %s took %v, more than (diameter %d + 1) delays", name, topo, n, id, took, topo.Diameter())
				}
			}
		}
	}
}

// TestWrapsAnyAlgorithm photographs runs of other families, unchanged:
// Ricart–Agrawala's mutual exclusion and anti-entropy gossip, each under
// both snapshot algorithms (Chandy–Lamport on FIFO channels, Lai–Yang on
// reordering ones), with concurrent snapshots. The snapshots are
// consistent and their channels exact, and the wrapped algorithms still
// hold their own properties.
func TestWrapsAnyAlgorithm(t *testing.T) {
	for _, c := range []struct{ family, algo string }{{"mutex", "ricart-agrawala"}, {"gossip", "push-pull"}} {
		f, err := lab.Lookup(c.family)
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.Algorithm(c.algo)
		if err != nil {
			t.Fatal(err)
		}
		for _, wrapped := range []proc.Algorithm{snapshot.WithChandyLamport(a), snapshot.WithLaiYang(a)} {
			lai := strings.HasSuffix(wrapped.Name, "+lai-yang")
			for seed := uint64(1); seed <= 3; seed++ {
				o := f.Options(wrapped)
				o.Streamed = false
				takes := lab.SnapshotTakes{Snapshots: 2, Initiators: 2, Every: 3 * time.Millisecond}
				if o.React == nil {
					o.React = takes
				} else {
					o.React = sim.Combine{o.React, takes}
				}
				fifo, reorder := !lai, 0.0
				if lai {
					reorder = 0.3 // Lai–Yang needs no FIFO
				}
				o.Network.FIFO, o.Network.Reorder = &fifo, &reorder
				s := seed
				o.Nodes, o.Seed = 4, &s
				r, tr, err := lab.Sim(o)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range r.Checks {
					// The snapshot's properties hold whatever the wrapped
					// algorithm assumes of the network.
					if ch.Failed() || strings.HasPrefix(ch.Name, "snapshot-") && !ch.OK {
						t.Errorf("%s seed %d: %s %s: %s\n%s", wrapped.Name, seed, ch.Name, ch.Status, ch.Detail, ch.Counterexample)
					}
				}
				if got := simtest.Count(tr, "recorded"); got != 2*2*4 {
					t.Errorf("%s seed %d: %d recorded outputs, want %d (2 rounds of 2 snapshots at 4 processes)", wrapped.Name, seed, got, 16)
				}
				for _, want := range []string{"snapshot-consistent", "snapshot-channels"} {
					if !slices.ContainsFunc(r.Checks, func(c lab.Check) bool { return c.Name == want }) {
						t.Errorf("%s: %s was not checked", wrapped.Name, want)
					}
				}
			}
		}
	}
}
