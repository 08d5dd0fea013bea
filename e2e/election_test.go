package e2e

import (
	"context"
	"os/exec"
	"strconv"
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
		c := &leader.Client{Endpoints: []string{eps[i]}, Token: apiToken}
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
	compose := up(t, "campaign: [e2e]\nlock: ricart-agrawala\n") // the textbook backend: bully-fd
	eps := endpoints()
	all := []int{0, 1, 2, 3, 4}
	agreeOn(t, "healthy cluster", eps, all, 4, 30*time.Second)

	run(t, time.Minute, nil, "docker", "kill", "-s", "KILL", container(4))
	d := agreeOn(t, "after kill -9 of the leader", eps, []int{0, 1, 2, 3}, 3, 10*time.Second)
	t.Logf("failover after kill -9 of node4 (as seen by polling): %v", d)

	net := project + "_cohortnet"
	run(t, time.Minute, nil, "docker", "network", "disconnect", net, container(3))
	agreeOn(t, "while the leader node3 is cut off", eps, []int{0, 1, 2}, 2, 10*time.Second)
	// (node3's API is unreachable too: its published port goes through
	// the network it was cut from.)
	run(t, time.Minute, nil, "docker", "network", "connect", "--alias", "node3", net, container(3))
	agreeOn(t, "after node3 is reconnected", eps, []int{0, 1, 2, 3}, 3, 15*time.Second)

	compose("start", "node4")
	waitHealthy(t, eps[4])
	agreeOn(t, "after node4 restarted", eps, all, 4, 15*time.Second)
}

// agreeOnAny waits until every node in which sees one leader, not among
// not, in election "e2e", and returns it and its term.
func agreeOnAny(t *testing.T, step string, eps []string, which []int, not []proc.ID, within time.Duration) (proc.ID, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		var views []leader.View
		for _, i := range which {
			v, err := (&leader.Client{Endpoints: []string{eps[i]}, Token: apiToken}).Get(ctx, "e2e")
			if err != nil {
				break
			}
			views = append(views, v)
		}
		if len(views) == len(which) {
			same := views[0].Leader != proc.None
			for _, v := range views {
				same = same && v.Leader == views[0].Leader && v.Term == views[0].Term
			}
			for _, p := range not {
				same = same && views[0].Leader != p
			}
			if same {
				return views[0].Leader, views[0].Term
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: nodes %v do not agree on a leader (not %v) within %v: %+v", step, which, not, within, views)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func others(all []int, out ...proc.ID) []int {
	var is []int
	for _, i := range all {
		keep := true
		for _, o := range out {
			keep = keep && proc.ID(i) != o
		}
		if keep {
			is = append(is, i)
		}
	}
	return is
}

// The leader service on the replicated log, in containers: every node
// stands in election "e2e" from boot, holding it by a session of the
// election timeout. kill -9 of the leader's container: the others agree on
// a new leader within the session's TTL plus a Raft election; the new
// leader cut off the network: the majority side agrees on another, and
// when it returns it follows that one (a leadership does not flap back);
// the killed node, restarted from its data directory, follows too. Terms
// rise at every change.
func TestDockerReplicatedElection(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatal("docker-compose is not installed (apt-get install docker-compose)")
	}
	compose := up(t, "campaign: [e2e]\n")
	eps := endpoints()
	all := []int{0, 1, 2, 3, 4}
	first, t1 := agreeOnAny(t, "healthy cluster", eps, all, nil, 30*time.Second)

	start := time.Now()
	run(t, time.Minute, nil, "docker", "kill", "-s", "KILL", container(int(first)))
	second, t2 := agreeOnAny(t, "after kill -9 of the leader", eps, others(all, first), []proc.ID{first}, 10*time.Second)
	t.Logf("failover after kill -9 of node%d: node%d leads after %v (as seen by polling)", first, second, time.Since(start))

	net := project + "_cohortnet"
	run(t, time.Minute, nil, "docker", "network", "disconnect", net, container(int(second)))
	third, t3 := agreeOnAny(t, "while the leader is cut off", eps, others(all, first, second), []proc.ID{first, second}, 15*time.Second)
	run(t, time.Minute, nil, "docker", "network", "connect", "--alias", "node"+itoa(second), net, container(int(second)))
	if l, _ := agreeOnAny(t, "after the reconnection", eps, others(all, first), nil, 15*time.Second); l != third {
		t.Fatalf("after the reconnection node%d leads, want node%d still", l, third)
	}

	compose("start", "node"+itoa(first))
	waitHealthy(t, eps[first])
	l, t4 := agreeOnAny(t, "after the killed node restarted", eps, all, nil, 15*time.Second)
	if l != third || t4 != t3 || !(t1 < t2 && t2 < t3) {
		t.Fatalf("leaders %d, %d, %d then %d; terms %d, %d, %d, %d: want the last leader kept and terms rising", first, second, third, l, t1, t2, t3, t4)
	}
}

func itoa(p proc.ID) string { return strconv.Itoa(int(p)) }
