package e2e

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/proc"
)

// agreeOn waits until every node in which sees leader in election "e2e",
// and returns how long that took.
func agreeOn(t *testing.T, step string, eps []string, which []int, want proc.ID, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, i := range which {
		c := &leader.Client{Endpoints: []string{eps[i]}}
		for {
			v, err := c.Get(ctx, "e2e")
			if err == nil && v.Leader == want {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: node %d sees leader %d (%v), want %d within %v", step, i, v.Leader, err, want, within)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// The leader service in containers: every node stands in election "e2e"
// from boot. Killing the leader with SIGKILL hands the lead to the next
// node; a leader cut off from the network is replaced, and when it comes
// back every node follows it again; the killed node, restarted, bullies its
// way back.
func TestDockerElection(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatal("docker-compose is not installed (apt-get install docker-compose)")
	}
	compose := up(t, "campaign: [e2e]\n")
	eps := endpoints()
	all := []int{0, 1, 2, 3, 4}
	agreeOn(t, "healthy cluster", eps, all, 4, 30*time.Second)

	run(t, time.Minute, nil, "docker", "kill", "-s", "KILL", "cohort-node4")
	d := agreeOn(t, "after kill -9 of the leader", eps, []int{0, 1, 2, 3}, 3, 10*time.Second)
	t.Logf("failover after kill -9 of node4 (as seen by polling): %v", d)

	net := project + "_cohortnet"
	run(t, time.Minute, nil, "docker", "network", "disconnect", net, "cohort-node3")
	agreeOn(t, "while the leader node3 is cut off", eps, []int{0, 1, 2}, 2, 10*time.Second)
	// (node3's API is unreachable too: its published port goes through
	// the network it was cut from.)
	run(t, time.Minute, nil, "docker", "network", "connect", "--alias", "node3", net, "cohort-node3")
	agreeOn(t, "after node3 is reconnected", eps, []int{0, 1, 2, 3}, 3, 15*time.Second)

	compose("start", "node4")
	waitHealthy(t, eps[4])
	agreeOn(t, "after node4 restarted", eps, all, 4, 15*time.Second)
}
