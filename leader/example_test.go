package leader_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
)

// Three nodes in one process stand in an election named "scheduler";
// bully with a failure detector makes the highest live candidate lead, and
// every node learns it.
func Example() {
	cfg := election.LeaderConfig{Heartbeat: 20 * time.Millisecond, Timeout: 250 * time.Millisecond, Quorum: true}
	nodes, stop, err := livetest.New(3, live.Config{Resolve: leader.Resolver(cfg)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	var es []*leader.Election
	for _, n := range nodes {
		e, err := leader.New(n, "scheduler", cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		es = append(es, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, i := range []int{0, 2} { // nodes 0 and 2 are candidates
		go es[i].Campaign(ctx)
	}
	for i, e := range es {
		l, err := e.WaitFor(ctx, func(l leader.Leadership) bool { return l.Leader == 2 })
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("node %d sees leader %v\n", i, l.Leader)
	}
	// Output:
	// node 0 sees leader p2
	// node 1 sees leader p2
	// node 2 sees leader p2
}
