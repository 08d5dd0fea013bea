package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReplicatedQueueBesideLocal runs the queue benchmark on the
// replicated queues (three nodes in this process, R3: a put is
// acknowledged once two of the three have it on disk) beside a node's own
// persistent queue (fsync per put), over the Go API and over HTTP, the
// systems taking turns within each run; it prints each system's median
// over the runs. COHORT_QUEUE_BENCH sets each run's duration (default
// 300ms, 100ms under the race detector), COHORT_QUEUE_BENCH_PUBS the
// publishers (default 1,32) and COHORT_QUEUE_BENCH_RUNS the runs (default
// 1).
func TestReplicatedQueueBesideLocal(t *testing.T) {
	dur, pubs, runs := queueBenchEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	systems := []func() (QueueSystem, func(), error){
		func() (QueueSystem, func(), error) { return CohortQueue(t.TempDir(), false) },
		func() (QueueSystem, func(), error) { return CohortReplicatedQueue(t.TempDir(), 3, false) },
		func() (QueueSystem, func(), error) { return CohortQueue(t.TempDir(), true) },
		func() (QueueSystem, func(), error) { return CohortReplicatedQueue(t.TempDir(), 3, true) },
	}
	var rows []string
	for _, p := range pubs {
		results := make([][]QueueResult, len(systems))
		for range runs {
			for i, open := range systems {
				qs, closeIt, err := open()
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunQueue(ctx, qs, QueueConfig{Publishers: p, Duration: dur})
				closeIt()
				if err != nil {
					t.Fatal(err)
				}
				if r.Puts == 0 || r.GetsPerSec == 0 {
					t.Fatalf("%s: nothing measured: %+v", qs.Name, r)
				}
				results[i] = append(results[i], r)
			}
		}
		for _, rs := range results {
			rows = append(rows, medianQueueResult(rs).String())
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%v per run, medians of %d run(s), 128-byte messages; load average %s\n%s\n%s", dur, runs, strings.TrimSpace(string(load)), QueueHeader, strings.Join(rows, "\n"))
}

// medianQueueResult is the run with the median puts/s, its gets/s
// replaced by the median gets/s.
func medianQueueResult(rs []QueueResult) QueueResult {
	byPuts := slices.Clone(rs)
	slices.SortFunc(byPuts, func(a, b QueueResult) int { return int(a.PutsPerSec - b.PutsPerSec) })
	m := byPuts[len(byPuts)/2]
	gets := make([]float64, len(rs))
	for i, r := range rs {
		gets[i] = r.GetsPerSec
	}
	slices.Sort(gets)
	m.GetsPerSec = gets[len(gets)/2]
	if len(rs) > 1 {
		m.System = fmt.Sprintf("%s ×%d", m.System, len(rs))
	}
	return m
}
