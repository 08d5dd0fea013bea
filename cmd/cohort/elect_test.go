package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cohort elect: a campaign runs the command while leading and passes its
// exit status on; a watcher sees the leader come and go; --get prints the
// view; bad usage names the problem.
func TestElectCommand(t *testing.T) {
	endpoints := startCluster(t, "--nodes", "3", "--inproc")
	bin := cohortBinary(t)

	watch := exec.Command(bin, "elect", "jobs", "--endpoints", endpoints[0], "--json", "--timeout", "4s")
	var watched strings.Builder
	watch.Stdout = &watched
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)

	cmd := exec.Command(bin, "elect", "jobs", "--campaign", "--endpoints", endpoints[2], "--",
		"sh", "-c", `echo "leader=$COHORT_LEADER election=$COHORT_ELECTION token=$COHORT_FENCING_TOKEN"; sleep 0.5; exit 3`)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("campaign: %v, want the command's status 3", err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "leader=2 election=jobs token=") || strings.HasSuffix(got, "token=") || strings.HasSuffix(got, "token=0") {
		t.Fatalf("command saw %q", got)
	}
	get, err := exec.Command(bin, "elect", "jobs", "--get", "--json", "--endpoints", endpoints[1]).Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Leader int `json:"leader"`
		Node   int `json:"node"`
	}
	if err := json.Unmarshal(get, &v); err != nil || v.Leader != -1 || v.Node != 1 {
		t.Fatalf("--get after the campaign ended: %s (%v), want no leader", get, err)
	}
	_ = watch.Wait()
	var leaders []int
	for _, line := range strings.Split(strings.TrimSpace(watched.String()), "\n") {
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("watch printed %q", line)
		}
		leaders = append(leaders, v.Leader)
	}
	if len(leaders) < 3 || leaders[0] != -1 || !containsInt(leaders, 2) || leaders[len(leaders)-1] != -1 {
		t.Fatalf("watch saw leaders %v, want -1 … 2 … -1", leaders)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"elect", "a b", "--endpoints", endpoints[0]}, `election name "a b"`},
		{[]string{"elect", "x", "--endpoints", endpoints[0], "--", "true"}, "needs --campaign"},
		{[]string{"elect", "x", "--campaign", "--endpoints", endpoints[0]}, "usage"},
		{[]string{"elect", "x", "--campaign", "--ttl", "1ms", "--endpoints", endpoints[0], "--", "true"}, "--ttl 1ms"},
		{[]string{"elect", "x", "--get", "--endpoints", "127.0.0.1:1"}, "127.0.0.1:1"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("cohort %s: %v %s, want an error naming %s", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// cohort bench elect on real processes: kill -9 of the leader, failover
// measured on every survivor, side by side with etcd. The figures are the
// benchmark's to report; the test checks that they are failovers: no
// faster than the failure detector can notice a death, and complete.
func TestBenchElect(t *testing.T) {
	bin := cohortBinary(t)
	out, err := exec.Command(bin, "bench", "elect", "--nodes", "3", "--runs", "2", "--json").Output()
	if err != nil {
		t.Fatalf("bench elect: %v\n%s", err, out)
	}
	var r struct {
		Nodes     int     `json:"nodes"`
		TimeoutMs float64 `json:"timeout_ms"`
		Cohort    struct {
			Runs int       `json:"runs"`
			Ms   []float64 `json:"ms"`
		} `json:"cohort"`
		Etcd *struct {
			Ms []float64 `json:"ms"`
		} `json:"etcd"`
		Ratio float64 `json:"etcd_over_cohort"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if r.Nodes != 3 || r.Cohort.Runs != 2 || len(r.Cohort.Ms) != 2 || r.Etcd == nil || len(r.Etcd.Ms) != 2 || r.Ratio <= 0 {
		t.Fatalf("report %s", out)
	}
	for _, ms := range r.Cohort.Ms {
		// The survivors stop hearing the leader at the kill; they cannot
		// notice before the timeout, less one heartbeat of slack.
		if ms < r.TimeoutMs-50 {
			t.Errorf("failover in %.1f ms, before the %v ms timeout could expire: a false suspicion", ms, r.TimeoutMs)
		}
	}
	t.Logf("failover ms: cohort %v, etcd %v", r.Cohort.Ms, r.Etcd.Ms)
}
