package mutex

import (
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/sim"
)

// The holder re-enters for free; anyone else pays N−1 requests and the
// token.
func TestSuzukiKasamiCost(t *testing.T) {
	const n = 5
	run := raScript(t, raAlgorithm(t, "suzuki-kasami"), n, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(1, 0, Release{}), // p0 holds the token
		raAt(2, 0, Acquire{}), raAt(3, 0, Release{}),
		raAt(10, 3, Acquire{}), raAt(15, 3, Release{}), // REQ to all, token from p0
		raAt(20, 3, Acquire{}), raAt(25, 3, Release{}), // p3 keeps the token
		raAt(30, 1, Acquire{}), raAt(35, 1, Release{}),
	})
	if got := raSendsPerEntry(run.tr); !slices.Equal(got, []int{0, 0, n, 0, n}) {
		t.Errorf("messages per entry %v, want [0 0 %d 0 %d]", got, n, n)
	}
}

// Under contention the token goes round the queue: everyone requests at
// once; p0, the holder, enters for free and every other entry costs N.
func TestSuzukiKasamiContended(t *testing.T) {
	for _, n := range raSizes {
		run := raSimulate(t, sim.Config{Nodes: n, Seed: 1, New: raAlgorithm(t, "suzuki-kasami").New,
			Network:  sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 5 * time.Millisecond}},
			Workload: &closedLoop{Rounds: 1, Think: sim.Constant(0), Hold: sim.Constant(time.Millisecond)}})
		if run.entries != n || run.res.Sent != int64(n*(n-1)) || run.res.Messages("token") != int64(n-1) {
			t.Errorf("n=%d: %d entries, %d messages (%d token), want %d, N(N−1) = %d, N−1",
				n, run.entries, run.res.Sent, run.res.Messages("token"), n, n*(n-1))
		}
	}
}

// The token's queue is filled in id order at each exit, not in the order
// of the requests: p2 requests at 1ms; p1 learns of it (p2's request
// reaches it at 2ms) and requests at 3ms; p0 leaves at 5ms and queues p1
// before p2, so p1 enters first although p2's request happened before.
func TestSuzukiKasamiBreaksME3(t *testing.T) {
	run := raScript(t, raAlgorithm(t, "suzuki-kasami"), 3, sim.Network{}, sim.Script{
		raAt(0, 0, Acquire{}), raAt(1, 2, Acquire{}), raAt(3, 1, Acquire{}),
		raAt(5, 0, Release{}), raAt(10, 1, Release{}), raAt(15, 2, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("entry order %v, want [0 1 2]", got)
	}
	raMust(t, run, "ME1", true)
	raMust(t, run, "ME2", true)
	raMust(t, run, "ME3", false)
}
