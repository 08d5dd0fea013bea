package group_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
)

// Three nodes in one process form the group "accounts" under the default
// totally ordered multicast; node 0 and then node 1 multicast, and every
// node delivers both messages, in the same order.
func Example() {
	a, _ := group.Algorithm(group.DefaultAlgorithm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, stop, err := livetest.New(3, live.Config{Resolve: group.Resolver(a)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	var gs []*group.Group
	var feeds []<-chan group.Delivery
	for _, n := range nodes {
		g, err := group.New(n, "accounts", a)
		if err != nil {
			fmt.Println(err)
			return
		}
		feed, _ := g.Deliveries(ctx)
		gs, feeds = append(gs, g), append(feeds, feed)
	}
	got := make([][]string, 3)
	next := func(i int) { got[i] = append(got[i], string((<-feeds[i]).Body)) }
	if _, err := gs[0].Multicast(ctx, []byte("deposit 100")); err != nil {
		fmt.Println(err)
		return
	}
	next(1) // node 1 has delivered node 0's message: its own comes after
	if _, err := gs[1].Multicast(ctx, []byte("add 1% interest")); err != nil {
		fmt.Println(err)
		return
	}
	for i := range got {
		for len(got[i]) < 2 {
			next(i)
		}
		fmt.Printf("node %d delivered %q\n", i, got[i])
	}
	// Output:
	// node 0 delivered ["deposit 100" "add 1% interest"]
	// node 1 delivered ["deposit 100" "add 1% interest"]
	// node 2 delivered ["deposit 100" "add 1% interest"]
}
