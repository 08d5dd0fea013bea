package election

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// superRun is the outcome of one simulated super-peer selection.
type superRun struct {
	graphRun
	out map[proc.ID][]SuperPeer // every SuperPeer output, per process
}

// runSuper runs a super-peer algorithm on topology top (nil: full mesh)
// with an Elect at node 0, until quiescence. With checks it records the
// trace and runs the entries' checkers on it; without, the run is faster.
func runSuper(t *testing.T, newProc func(proc.ID, int) proc.Process, top sim.Topology, n int, seed uint64, checks bool) superRun {
	t.Helper()
	rec := &trace.Recorder{}
	rec.Trace.Header = trace.Header{Format: trace.FormatName, Nodes: n, Family: "election", Seed: seed}
	r := superRun{out: map[proc.ID][]SuperPeer{}}
	cfg := sim.Config{
		Nodes:    n,
		Seed:     seed,
		New:      newProc,
		Topology: top,
		Workload: sim.Script{elect(0, 0)},
		Deadline: time.Minute,
		Observe: func(_ time.Duration, node proc.ID, o proc.Output) {
			if sp, ok := o.(SuperPeer); ok {
				r.out[node] = append(r.out[node], sp)
			}
		},
	}
	if checks {
		cfg.Trace = rec
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != sim.StopQuiescent {
		t.Fatalf("seed %d: run stopped by %s, want quiescence", seed, res.Stop)
	}
	r.trace, r.result, r.sim = &rec.Trace, res, s
	for id := proc.ID(0); int(id) < n; id++ {
		if len(r.out[id]) != 1 {
			t.Fatalf("seed %d: %s output %v, want one SuperPeer", seed, id, r.out[id])
		}
	}
	if checks {
		checkRun(t, fmt.Sprintf("seed %d", seed), r.graphRun, "integrity", "no-duplicates")
	}
	return r
}

// Every process names the successor of its group's key among the ids the
// processes drew (read back from the outputs), and every group that has
// members has exactly one super-peer, one of its own.
func TestSuperPeerPrefixNamesTheKeysSuccessor(t *testing.T) {
	for _, c := range []struct{ n, m, k int }{{64, 32, 3}, {64, 32, 2}, {16, 8, 3}, {40, 6, 3}} {
		for seed := uint64(1); seed <= 5; seed++ {
			what := fmt.Sprintf("n=%d m=%d k=%d seed %d", c.n, c.m, c.k, seed)
			r := runSuper(t, newPrefix(c.m, c.k), nil, c.n, seed, seed == 1)
			if got, want := r.result.Sent, int64(c.n*(c.n-1)); got != want {
				t.Errorf("%s: %d messages, want N(N−1) = %d", what, got, want)
			}
			ids := map[proc.ID]uint64{}
			for p, o := range r.out {
				if o[0].ID>>c.m != 0 {
					t.Fatalf("%s: %s drew %d, more than %d bits", what, p, o[0].ID, c.m)
				}
				ids[p] = o[0].ID
			}
			shift := c.m - c.k
			// want is the successor of key, found by a plain scan.
			want := func(key uint64) proc.ID {
				best := proc.None
				for q := proc.ID(0); int(q) < c.n; q++ {
					if ids[q] >= key && (best == proc.None || ids[q] < ids[best]) {
						best = q // ties keep the smaller process id
					}
				}
				return best
			}
			supers := map[uint64]map[proc.ID]bool{} // group -> super-peers named
			for p := proc.ID(0); int(p) < c.n; p++ {
				o, g := r.out[p][0], ids[p]>>shift
				w := want(g << shift)
				if o.Of != w || o.Self != (w == p) {
					t.Errorf("%s: %s (id %d, group %d) output %+v, want super-peer %s", what, p, ids[p], g, o, w)
				}
				if ids[w]>>shift != g {
					t.Errorf("%s: group %d's super-peer %s is in group %d", what, g, w, ids[w]>>shift)
				}
				if supers[g] == nil {
					supers[g] = map[proc.ID]bool{}
				}
				supers[g][o.Of] = true
			}
			for g, s := range supers {
				if len(s) != 1 {
					t.Errorf("%s: group %d has super-peers %v, want one", what, g, s)
				}
				for sp := range s {
					if !r.out[sp][0].Self {
						t.Errorf("%s: %s is group %d's super-peer but does not say so", what, sp, g)
					}
				}
			}
			if c.n == 64 && len(supers) != 1<<c.k {
				t.Logf("%s: %d of %d groups have members", what, len(supers), 1<<c.k)
			}
		}
	}
}

// hops is the BFS distance from every node to the nearest of sources.
func hops(g *sim.Graph, n int, sources []proc.ID) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = -1
	}
	var q []proc.ID
	for _, s := range sources {
		d[s] = 0
		q = append(q, s)
	}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, v := range g.Neighbors(u) {
			if d[v] < 0 {
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	return d
}

// spread is the largest and the mean distance to the nearest source.
func spread(d []int) (int, float64) {
	mx, sum := 0, 0
	for _, x := range d {
		mx, sum = max(mx, x), sum+x
	}
	return mx, float64(sum) / float64(len(d))
}

// tokenSupers checks a tokens run: exactly want super-peers, and every
// other process names one of them at its true distance, which is the
// distance to the nearest one. It returns the super-peers.
func tokenSupers(t *testing.T, what string, r superRun, g *sim.Graph, n, want int) []proc.ID {
	t.Helper()
	var supers []proc.ID
	for p := proc.ID(0); int(p) < n; p++ {
		if r.out[p][0].Self {
			supers = append(supers, p)
		}
	}
	if len(supers) != want {
		t.Fatalf("%s: %d super-peers %v, want %d (tokens lost or merged)", what, len(supers), supers, want)
	}
	near := hops(g, n, supers)
	for p := proc.ID(0); int(p) < n; p++ {
		o := r.out[p][0]
		if o.Self {
			continue
		}
		if !r.out[o.Of][0].Self {
			t.Errorf("%s: %s names %s, not a super-peer", what, p, o.Of)
			continue
		}
		if d := hops(g, n, []proc.ID{o.Of})[p]; o.Hops != d || d != near[p] {
			t.Errorf("%s: %s names %s at %d hops; it is %d away, the nearest super-peer %d", what, p, o.Of, o.Hops, d, near[p])
		}
	}
	return supers
}

// The tokens are never lost, duplicated or merged, and repelling them
// spreads the super-peers at least about as well as placing them at random.
func TestSuperPeerTokensSpread(t *testing.T) {
	const n, seeds = 64, 10
	tcount := max(1, n/8)
	for _, name := range []string{"grid", "random"} {
		var repelMean, randMean float64
		repelMax, randMax := 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			g := sim.Grid(n)
			if name == "random" {
				var err error
				if g, err = sim.RandomGraph(n, 3, seed); err != nil {
					t.Fatal(err)
				}
			}
			what := fmt.Sprintf("%s seed %d", name, seed)
			r := runSuper(t, newTokens(0, 0, 0), g, n, seed, false)
			supers := tokenSupers(t, what, r, g, n, tcount)
			mx, mean := spread(hops(g, n, supers))
			repelMax, repelMean = max(repelMax, mx), repelMean+mean/seeds

			rnd := rand.New(rand.NewPCG(seed, 0x72616e64))
			var place []proc.ID
			for _, p := range rnd.Perm(n)[:tcount] {
				place = append(place, proc.ID(p))
			}
			mx, mean = spread(hops(g, n, place))
			randMax, randMean = max(randMax, mx), randMean+mean/seeds
		}
		t.Logf("%s(%d), %d super-peers over %d seeds: repelled max %d mean %.2f hops; random max %d mean %.2f hops",
			name, n, tcount, seeds, repelMax, repelMean, randMax, randMean)
		if repelMean > 1.5*randMean {
			t.Errorf("%s: repelled mean distance %.2f is worse than 1.5× random's %.2f", name, repelMean, randMean)
		}
	}
}

// On every test topology, with a few token counts, the run ends with
// exactly T super-peers and everyone attached to a nearest one.
func TestSuperPeerTokensConserved(t *testing.T) {
	for _, tg := range testGraphs(t) {
		for _, count := range []int{0, 1, 3} {
			want := count
			if want == 0 {
				want = max(1, tg.n/8)
			}
			r := runSuper(t, newTokens(0, 0, count), tg.g, tg.n, uint64(tg.n+count), true)
			tokenSupers(t, fmt.Sprintf("%s T=%d", tg.name, want), r, tg.g, tg.n, want)
		}
	}
}

func TestSuperPeerRegistered(t *testing.T) {
	for _, name := range []string{"superpeer-prefix", "superpeer-tokens"} {
		found := false
		for _, a := range Algorithms {
			if a.Name == name {
				found = true
				if len(a.Checks) != 2 || a.Breaks != nil {
					t.Errorf("%s: checks %v, breaks %v", name, a.Checks, a.Breaks)
				}
			}
		}
		if !found {
			t.Errorf("%s is not registered", name)
		}
	}
}
