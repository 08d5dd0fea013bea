package mutex

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// mkValidQuorums reports the first way sets fail to be voting sets for n
// processes: pᵢ ∉ Vᵢ, an id out of range or repeated, or two disjoint sets.
func mkValidQuorums(sets [][]proc.ID, n int) error {
	if len(sets) != n {
		return fmt.Errorf("%d voting sets for %d processes", len(sets), n)
	}
	member := make([][]bool, n)
	for i, v := range sets {
		if !slices.IsSorted(v) || len(slices.Compact(slices.Clone(v))) != len(v) {
			return fmt.Errorf("V%d = %v is not sorted and free of repeats", i, v)
		}
		member[i] = make([]bool, n)
		for _, id := range v {
			if id < 0 || int(id) >= n {
				return fmt.Errorf("V%d holds p%d, out of range", i, id)
			}
			member[i][id] = true
		}
		if !member[i][i] {
			return fmt.Errorf("p%d is not in its own set V%d = %v", i, i, v)
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !slices.ContainsFunc(sets[j], func(id proc.ID) bool { return member[i][id] }) {
				return fmt.Errorf("V%d = %v and V%d = %v do not intersect", i, sets[i], j, sets[j])
			}
		}
	}
	return nil
}

func mkSizes(sets [][]proc.ID) (lo, hi int) {
	lo = math.MaxInt
	for _, v := range sets {
		lo, hi = min(lo, len(v)), max(hi, len(v))
	}
	return lo, hi
}

// Every pair of voting sets intersects, for every n up to 200; the largest
// set has ⌈2√n⌉ − 1 members, less than one above the grid's 2√n − 1.
func TestGridQuorumsIntersect(t *testing.T) {
	for n := 1; n <= 200; n++ {
		sets := GridQuorums(n)
		if err := mkValidQuorums(sets, n); err != nil {
			t.Fatalf("n = %d: %v", n, err)
		}
		_, k := mkSizes(sets)
		if want := int(math.Ceil(2*math.Sqrt(float64(n)))) - 1; k != want {
			t.Errorf("n = %d: largest set %d, want ⌈2√n⌉−1 = %d", n, k, want)
		}
		if float64(k) >= 2*math.Sqrt(float64(n)) {
			t.Errorf("n = %d: K = %d is not below 2√n − 1 + 1 = %.2f", n, k, 2*math.Sqrt(float64(n)))
		}
	}
	if GridQuorums(0) != nil || GridQuorums(-3) != nil {
		t.Error("GridQuorums of no processes is not nil")
	}
}

// For a perfect square the sets are the textbook's grid: K = M = 2√N − 1.
func TestGridQuorumsSquare(t *testing.T) {
	for s := 1; s <= 10; s++ {
		n := s * s
		sets := GridQuorums(n)
		in := make([]int, n) // M: how many sets each process is in
		for i, v := range sets {
			if len(v) != 2*s-1 {
				t.Errorf("n = %d: |V%d| = %d, want 2√N−1 = %d", n, i, len(v), 2*s-1)
			}
			for _, id := range v {
				in[id]++
				if int(id)/s != i/s && int(id)%s != i%s {
					t.Errorf("n = %d: p%d in V%d is in neither its row nor its column", n, id, i)
				}
			}
		}
		for id, m := range in {
			if m != 2*s-1 {
				t.Errorf("n = %d: p%d is in %d sets, want M = %d", n, id, m, 2*s-1)
			}
		}
	}
	if got := fmt.Sprint(GridQuorums(9)[4]); got != "[p1 p3 p4 p5 p7]" {
		t.Errorf("n = 9: V4 = %s, want the middle row and column [p1 p3 p4 p5 p7]", got)
	}
}

// The sizes for the report: K (largest set), the smallest set and 2√n − 1.
func TestGridQuorumsSizes(t *testing.T) {
	var b strings.Builder
	for n := 4; n <= 64; n++ {
		lo, hi := mkSizes(GridQuorums(n))
		fmt.Fprintf(&b, "n=%d K=%d min=%d 2√n−1=%.2f\n", n, hi, lo, 2*math.Sqrt(float64(n))-1)
	}
	t.Logf("voting set sizes:\n%s", b.String())
}

// mkDeadlockRun is the textbook's deadlock: N = 4, p0, p1 and p2 request at
// once; each votes for itself, p3 votes for p1; p0 waits for p1's vote and
// p1 for p0's.
func mkDeadlockRun(t *testing.T, newP func(proc.ID, int) proc.Process) (map[string]check.Result, string) {
	t.Helper()
	script := sim.Script{
		{At: 0, Node: 0, Input: Acquire{}},
		{At: 0, Node: 1, Input: Acquire{}},
		{At: 0, Node: 2, Input: Acquire{}},
	}
	hold := &closedLoop{Rounds: 0, Hold: sim.Constant(time.Millisecond)}
	tr, _ := mkRun(t, 4, 1, newP, sim.Network{}, nil, sim.Combine{script, hold})
	rs := mkCheck(t, tr, "ME1", "ME2", "ME3")
	return rs, rs["ME2"].Counterexample(tr)
}

func TestMaekawaDeadlocks(t *testing.T) {
	rs, ce := mkDeadlockRun(t, newMaekawa)
	if !rs["ME1"].OK() {
		t.Errorf("ME1: %v", rs["ME1"])
	}
	me2 := rs["ME2"]
	if me2.Status != check.Violated || !strings.Contains(me2.Detail, "deadlock") ||
		!strings.Contains(me2.Detail, "p0 waits for p1") || !strings.Contains(me2.Detail, "p1 waits for p0") {
		t.Fatalf("ME2 = %v, want the deadlock p0 → p1 → p0", me2)
	}
	t.Logf("the textbook's deadlock, as the checker reports it:\n%s", ce)
}

// mkOutOfOrderRun is a run in which a request that happened before another
// is served after it, on the 3×3 grid (Vᵢ = row ∪ column). p7 is in the
// critical section (0–5 ms); p4 asks at 2.5 ms and p8 at 3 ms, so p7
// queues p4, then p8 (p4's timestamp ⟨3,4⟩ is also the smaller one), and
// p7's release gives its vote to p4. p4 enters, and its release reaches
// p3, which then asks: p8's request happened before p3's (p8 → p7 → p4 →
// p3). But p8's requests to p5 and p6, the voters it shares with p3,
// travel slow links (20 ms): both are free when p3 asks, so p3 collects its
// whole set and enters first. Timestamps do not help: the shared voters
// never see p8's request in time.
func mkOutOfOrderRun(t *testing.T, newP func(proc.ID, int) proc.Process) (map[string]check.Result, string) {
	t.Helper()
	ms := time.Millisecond
	script := sim.Script{
		{At: 0, Node: 7, Input: Acquire{}},
		{At: 2500 * time.Microsecond, Node: 4, Input: Acquire{}},
		{At: 3 * ms, Node: 8, Input: Acquire{}},
		{At: 11500 * time.Microsecond, Node: 3, Input: Acquire{}},
	}
	hold := &closedLoop{Hold: sim.Constant(3 * ms)}
	net := sim.Network{Latency: sim.Constant(ms), FIFO: true, Links: []sim.Link{
		{From: 8, To: 5, Latency: sim.Constant(20 * ms)},
		{From: 8, To: 6, Latency: sim.Constant(20 * ms)},
	}}
	tr, _ := mkRun(t, 9, 1, newP, net, nil, sim.Combine{script, hold})
	if got := mkCount(tr, "exit"); got != 4 {
		t.Fatalf("%d exits, want 4 (all four requests served)", got)
	}
	rs := mkCheck(t, tr, "ME1", "ME2", "ME3")
	return rs, rs["ME3"].Counterexample(tr)
}

func TestMaekawaOutOfOrder(t *testing.T) {
	rs, ce := mkOutOfOrderRun(t, newMaekawa)
	if !rs["ME1"].OK() || !rs["ME2"].OK() {
		t.Errorf("ME1: %v; ME2: %v", rs["ME1"], rs["ME2"])
	}
	if me3 := rs["ME3"]; me3.Status != check.Violated || !strings.Contains(me3.Detail, "p8's request") || !strings.Contains(me3.Detail, "p3 entered first") {
		t.Fatalf("ME3 = %v, want p8's request served after p3's", me3)
	}
	t.Logf("served out of happened-before order:\n%s", ce)
}

// The basic algorithm: ME1 in every run; deadlocks (ME2) in nearly all
// runs with contention — two processes in each other's sets that request
// within a message time of each other each keep their own vote.
func TestMaekawaSweep(t *testing.T) {
	t.Parallel()
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for _, c := range []struct {
		n     int
		think time.Duration
	}{{4, 20 * time.Millisecond}, {7, 50 * time.Millisecond}, {9, 100 * time.Millisecond}} {
		var sw mkSweep
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			tr, res := mkRun(t, c.n, seed, newMaekawa, mkJitter(false), nil, mkLoad(3, c.think))
			rs := mkCheck(t, tr, "ME1", "ME2")
			if !rs["ME1"].OK() {
				t.Fatalf("n = %d seed %d: %s", c.n, seed, rs["ME1"].Counterexample(tr))
			}
			sw.add(seed, tr, res, rs)
		}
		t.Logf("maekawa n = %d, think ≤ %v: %d runs, %d deadlocked (ME2, first seed %d)",
			c.n, c.think, sw.runs, sw.broke["ME2"], sw.first["ME2"])
		if c.n == 9 {
			t.Logf("a deadlock found by the sweep:\n%s", sw.example["ME2"])
		}
		if sw.broke["ME2"] == 0 {
			t.Errorf("n = %d: no deadlock in %d runs", c.n, sw.runs)
		}
	}
}

// Without contention an entry costs 3(K−1) messages: K−1 requests, votes
// and releases (the own vote is local).
func TestMaekawaUncontendedCost(t *testing.T) {
	for _, n := range []int{1, 4, 9, 10, 16} {
		for _, newP := range []func(proc.ID, int) proc.Process{newMaekawa, newMaekawaSafe} {
			var script sim.Script
			for id := range n {
				script = append(script, sim.TimedInput{At: time.Duration(id) * 10 * time.Millisecond, Node: proc.ID(id), Input: Acquire{}})
			}
			hold := &closedLoop{Hold: sim.Constant(time.Millisecond)}
			tr, res := mkRun(t, n, 1, newP, sim.Network{}, nil, sim.Combine{script, hold})
			if got := mkCount(tr, "exit"); got != n {
				t.Fatalf("n = %d: %d exits, want %d", n, got, n)
			}
			sets := GridQuorums(n)
			want := 0
			for _, v := range sets {
				want += 3 * (len(v) - 1)
			}
			if res.Sent != int64(want) {
				t.Errorf("n = %d: %d messages for %d sequential entries, want Σ3(|Vᵢ|−1) = %d (%v)", n, res.Sent, n, want, res.ByKind)
			}
		}
	}
}

func TestMaekawaRegistered(t *testing.T) {
	for _, name := range []string{"maekawa", "maekawa-safe", "decentralized"} {
		i := slices.IndexFunc(Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
		if i < 0 {
			t.Fatalf("%s is not registered", name)
		}
		a := Algorithms[i]
		if a.Family != "mutex" || a.New == nil || a.Source == "" || a.Summary == "" {
			t.Errorf("%s: incomplete entry %+v", name, a)
		}
		for _, b := range a.Breaks {
			if _, ok := check.Lookup(b); !ok {
				t.Errorf("%s breaks %q, which is no checker", name, b)
			}
		}
	}
}
