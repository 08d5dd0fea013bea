package bench

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

func TestPercentileIsNearestRank(t *testing.T) {
	// 1ms … 100ms, shuffled and sorted again.
	var sample []time.Duration
	for i := 1; i <= 100; i++ {
		sample = append(sample, time.Duration(i)*time.Millisecond)
	}
	rand.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	slices.Sort(sample)
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{1, 1 * time.Millisecond}, {50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {99.5, 100 * time.Millisecond}, {100, 100 * time.Millisecond}} {
		if got := percentile(sample, c.p); got != c.want {
			t.Errorf("p%v of 1..100ms = %v, want %v", c.p, got, c.want)
		}
	}
	small := []time.Duration{10, 20, 30, 40, 50, 60, 70}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 40}, {99, 70}, {14, 10}, {15, 20}} {
		if got := percentile(small, c.p); got != c.want {
			t.Errorf("p%v of %v = %v, want %v", c.p, small, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one value = %v, want it", got)
	}
}

func TestPointCountsGrantsWithinTheRun(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := &contention{start: t0, end: at(1000), grants: []grant{
		{acquired: at(10), released: at(11)},
		{acquired: at(13), released: at(14)}, // handoff 2ms
		{acquired: at(20), released: at(20)}, // 6ms
		{acquired: at(999), released: at(1000)},
		{acquired: at(1002), released: at(1003)}, // after the end: not counted
	}}
	p := r.point(2)
	if p.Clients != 2 || p.AcquisitionsPerS != 4 {
		t.Errorf("point = %+v, want 2 clients and 4 acquisitions/s", p)
	}
	// Handoffs 2ms, 6ms, 979ms.
	if p.HandoffP50Ms != 6 || p.HandoffP99Ms != 979 {
		t.Errorf("handoff p50 %vms p99 %vms, want 6 and 979", p.HandoffP50Ms, p.HandoffP99Ms)
	}
}

func mutexAlgorithm(t *testing.T, name string) proc.Algorithm {
	t.Helper()
	a, err := registry.Find("mutex", name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkContention checks the mechanics of a run: the lock was taken, the
// grants as recorded never overlap, and their fencing tokens rise. The
// figures count only the grants that returned within the run, and a
// loaded machine may fit none in a short one (a replicated lock's grant
// took longer than 300 ms): they are checked for consistency alone;
// TestPointCountsGrantsWithinTheRun checks how they are counted.
func checkContention(t *testing.T, r *contention, clients int, everyClient bool) {
	t.Helper()
	p := r.point(clients)
	t.Logf("%d clients: %.0f acquisitions/s, handoff p50 %.3fms p99 %.3fms (%d grants)",
		clients, p.AcquisitionsPerS, p.HandoffP50Ms, p.HandoffP99Ms, len(r.grants))
	if len(r.grants) == 0 {
		t.Fatalf("no acquisitions: %+v", p)
	}
	if p.AcquisitionsPerS < 0 || p.HandoffP50Ms < 0 || p.HandoffP99Ms < p.HandoffP50Ms {
		t.Errorf("%+v: want 0 <= p50 <= p99", p)
	}
	seen := map[int]bool{}
	for i, g := range r.grants {
		seen[g.client] = true
		if g.released.Before(g.acquired) {
			t.Fatalf("grant %d released at %v, before it was acquired at %v", i, g.released, g.acquired)
		}
		if i == 0 {
			continue
		}
		prev := r.grants[i-1]
		if g.token <= prev.token {
			t.Fatalf("grant %d: token %d after %d", i, g.token, prev.token)
		}
		if !g.acquired.After(prev.released) {
			t.Fatalf("grant %d acquired at %v, before grant %d began its release at %v", i, g.acquired, i-1, prev.released)
		}
	}
	if everyClient && len(seen) != clients {
		t.Errorf("%d of %d clients got the lock", len(seen), clients)
	}
}

func TestCohortContention(t *testing.T) {
	for _, a := range []proc.Algorithm{mutexAlgorithm(t, "ricart-agrawala"), lock.ReplicatedAlgorithm(consensus.DefaultConfig)} {
		t.Run(a.Name, func(t *testing.T) {
			cl, err := startLockCluster(LockNodes, a, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.close()
			ctx := context.Background()
			cs, err := cl.contenders(ctx, 4, "test")
			if err != nil {
				t.Fatal(err)
			}
			r, err := contend(ctx, cs, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			// Ricart–Agrawala grants in timestamp order, the replicated
			// lock in the order of its queue: nobody starves.
			checkContention(t, r, 4, true)
		})
	}
}

// The etcd side runs where etcd is installed (apt-get install etcd-server).
func TestEtcdContention(t *testing.T) {
	path, err := FindEtcd()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := startEtcd(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	cs, err := e.contenders(ctx, 4, "test", 10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := contend(ctx, cs, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	checkContention(t, r, 4, false)
}

func TestRunLockWithoutEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	var progress strings.Builder
	r, err := RunLock(context.Background(), LockConfig{Clients: []int{1, 3}, Duration: 200 * time.Millisecond,
		Algorithm: mutexAlgorithm(t, "ricart-agrawala"), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cohort) != 2 || r.Cohort[0].Clients != 1 || r.Cohort[1].Clients != 3 {
		t.Fatalf("cohort points %+v, want clients 1 and 3", r.Cohort)
	}
	for _, p := range r.Cohort {
		if p.AcquisitionsPerS <= 0 {
			t.Errorf("no acquisitions with %d clients", p.Clients)
		}
	}
	if r.RAHandoffP50us <= 0 || r.OneWayP50us <= 0 || r.HandoffOverOneWay <= 0 || r.OneWayIdleP50us <= 0 ||
		r.HandoffOverIdleOneWay <= 0 || r.RAIdleHandoffP50us <= 0 || r.IdleHandoffOverIdleOneWay <= 0 {
		t.Errorf("node-to-node figures missing: %+v", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"etcd":[]`, `"ratio":[]`, `"acquisitions_per_s":`, `"handoff_p50_ms":`, `"handoff_p99_ms":`,
		`"ra_handoff_p50_us":`, `"one_way_p50_us":`, `"handoff_over_one_way":`, `"one_way_idle_p50_us":`,
		`"handoff_over_idle_one_way":`, `"ra_idle_handoff_p50_us":`, `"idle_handoff_over_idle_one_way":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	if !strings.Contains(progress.String(), "cohort: 3 clients") {
		t.Errorf("progress: %q", progress.String())
	}
	if _, err := RunLock(context.Background(), LockConfig{Clients: []int{0}, Duration: time.Second,
		Algorithm: mutexAlgorithm(t, "ricart-agrawala")}); err == nil {
		t.Error("0 clients accepted")
	}
}

// On the replicated backend the run measures the disk under the logs, with
// the nodes' five writers at once and with one alone, so that its figures
// can be read against the disk's own.
func TestRunLockMeasuresTheDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	r, err := RunLock(context.Background(), LockConfig{Clients: []int{2}, Duration: 200 * time.Millisecond,
		Algorithm: lock.ReplicatedAlgorithm(consensus.DefaultConfig)})
	if err != nil {
		t.Fatal(err)
	}
	if r.DiskSyncP50us <= 0 || r.DiskSyncOneP50us <= 0 {
		t.Errorf("disk figures missing: five writers %v µs, one %v µs", r.DiskSyncP50us, r.DiskSyncOneP50us)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"disk_sync_p50_us":`, `"disk_sync_one_p50_us":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}
