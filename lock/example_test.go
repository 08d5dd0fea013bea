package lock_test

import (
	"context"
	"fmt"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/registry"
)

// Three nodes in one process (in-process transport) run Ricart–Agrawala
// behind a lock named "jobs"; node 1 takes it, does its work and gives it
// back, then node 2 does. A cluster of `cohort node` processes over TCP
// works the same way; only the transport differs.
func Example() {
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	nodes, stop, err := livetest.New(3, live.Config{Resolve: lock.Resolver(ra)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	for _, i := range []int{1, 2} {
		l, err := lock.New(nodes[i], "jobs", ra)
		if err != nil {
			fmt.Println(err)
			return
		}
		token, err := l.Lock(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("node %d holds %q (fencing token > 0: %v)\n", i, l.Name(), token > 0)
		l.Unlock()
	}
	// Output:
	// node 1 holds "jobs" (fencing token > 0: true)
	// node 2 holds "jobs" (fencing token > 0: true)
}
