package mutex

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
)

// The textbook's deadlock scenario runs to the end: p0 has the earliest
// request, so p1 relinquishes p1's vote to it.
func TestMaekawaSafeNoDeadlock(t *testing.T) {
	rs, _ := mkDeadlockRun(t, newMaekawaSafe)
	for _, name := range []string{"ME1", "ME2", "ME3"} {
		if !rs[name].OK() {
			t.Errorf("%v", rs[name])
		}
	}
}

// Timestamps do not give ME3: the shared voters never see the earlier
// request in time (see mkOutOfOrderRun).
func TestMaekawaSafeOutOfOrder(t *testing.T) {
	rs, ce := mkOutOfOrderRun(t, newMaekawaSafe)
	if !rs["ME1"].OK() || !rs["ME2"].OK() {
		t.Errorf("ME1: %v; ME2: %v", rs["ME1"], rs["ME2"])
	}
	if rs["ME3"].Status != check.Violated {
		t.Fatalf("ME3 = %v, want p8's request served after p3's", rs["ME3"])
	}
	t.Logf("served out of happened-before order:\n%s", ce)
}

// ME1 and ME2 hold over seed sweeps with heavy contention and jittery
// FIFO links; the cost per entry stays within 3(K−1) .. 6(K−1).
func TestMaekawaSafeSweep(t *testing.T) {
	t.Parallel()
	seeds := 15
	if testing.Short() {
		seeds = 5
	}
	for _, c := range []struct {
		n     int
		think time.Duration
	}{{2, time.Millisecond}, {4, 2 * time.Millisecond}, {5, 2 * time.Millisecond}, {9, 3 * time.Millisecond}, {12, 3 * time.Millisecond}, {16, 5 * time.Millisecond}} {
		var sw mkSweep
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			tr, res := mkRun(t, c.n, seed, newMaekawaSafe, mkJitter(true), nil, mkLoad(3, c.think))
			rs := mkCheck(t, tr, "ME1", "ME2")
			for _, name := range []string{"ME1", "ME2"} {
				if !rs[name].OK() {
					t.Fatalf("n = %d seed %d: %s", c.n, seed, rs[name].Counterexample(tr))
				}
			}
			if got := mkCount(tr, "exit"); got != 3*c.n {
				t.Fatalf("n = %d seed %d: %d exits, want %d", c.n, seed, got, 3*c.n)
			}
			sw.add(seed, tr, res, rs)
		}
		_, k := mkSizes(GridQuorums(c.n))
		per, root := sw.perEntry(), math.Sqrt(float64(c.n))
		t.Logf("maekawa-safe n = %d (K = %d): %d runs, %.1f messages per entry = %.2f√N (uncontended 3(K−1) = %d)",
			c.n, k, sw.runs, per, per/root, 3*(k-1))
		if per < float64(3*(k-1)) || per > float64(6*(k-1)) {
			t.Errorf("n = %d: %.1f messages per entry, outside 3(K−1) .. 6(K−1) = %d .. %d", c.n, per, 3*(k-1), 6*(k-1))
		}
	}
}

// The inquire/failed exchange is exercised: under contention voters do
// send INQUIRE and FAILED, and requesters RELINQUISH.
func TestMaekawaSafeUsesInquire(t *testing.T) {
	kinds := map[string]int64{}
	for seed := uint64(1); seed <= 20; seed++ {
		_, res := mkRun(t, 9, seed, newMaekawaSafe, mkJitter(true), nil, mkLoad(3, 2*time.Millisecond))
		for _, k := range res.ByKind {
			kinds[k.Kind] += k.Count
		}
	}
	for _, k := range []string{"request", "vote", "release", "inquire", "relinquish", "failed"} {
		if kinds[k] == 0 {
			t.Errorf("no %q message in 20 contended runs: %v", k, kinds)
		}
	}
	if kinds["request"] != kinds["release"] {
		t.Errorf("%d requests but %d releases: every request is released once", kinds["request"], kinds["release"])
	}
	if kinds["vote"] != kinds["request"]+kinds["relinquish"] {
		t.Errorf("%d votes, want requests + relinquishes = %d (a vote per request, and one more per vote given back)",
			kinds["vote"], kinds["request"]+kinds["relinquish"])
	}
	var b strings.Builder
	for _, k := range []string{"request", "vote", "failed", "inquire", "relinquish", "release"} {
		fmt.Fprintf(&b, "%s=%d ", k, kinds[k])
	}
	t.Logf("n = 9, 20 runs: %s", b.String())
}

// FIFO is a real assumption: on reordering links a FAILED can overtake
// the VOTE sent after it, the requester then believes it lost where it
// holds the vote, and requesters deadlock.
func TestMaekawaSafeNeedsFIFO(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		tr, _ := mkRun(t, 9, seed, newMaekawaSafe, mkJitter(false), nil, mkLoad(3, 2*time.Millisecond))
		rs := mkCheck(t, tr, "ME1", "ME2")
		if !rs["ME1"].OK() {
			t.Fatalf("seed %d: %s", seed, rs["ME1"].Counterexample(tr))
		}
		if rs["ME2"].Status == check.Violated {
			t.Logf("seed %d, without FIFO:\n%s", seed, rs["ME2"].Counterexample(tr))
			return
		}
	}
	t.Error("no deadlock in 60 runs on reordering links")
}
