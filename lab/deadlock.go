package lab

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// DeadlockLoad is the deadlock family's workload: every process runs Txns
// transactions one after another, each wanting Want resources of other
// processes drawn at random (the AND model: it waits for all of them),
// holding them for an exponential time of mean Hold once it has them all,
// then releasing them. Between its transactions a process thinks for an
// exponential time of mean Hold·(1−c)/c, c the Contention: at c = 1 it
// asks again at once, at c = 0.1 it holds resources about a tenth of the
// time. A transaction aborted by the detector is retried, wanting the same
// resources, after a random backoff of up to 2·Hold; it counts as done
// only when it commits. The run ends when every process has committed its
// transactions.
type DeadlockLoad struct {
	// Txns per process; 0 means 10.
	Txns int
	// Want is the resources per transaction; 0 means 2. At most N−1.
	Want int
	// Contention, in (0, 1]; 0 means 0.5.
	Contention float64
	// Hold is the mean time a transaction holds its resources; 0 means 1 ms.
	Hold time.Duration

	left []int       // per process, transactions still to commit
	res  [][]proc.ID // per process, the current transaction's resources
	done int         // processes that have committed all theirs
}

// DefaultDeadlockContention is the contention of the family's default runs.
const DefaultDeadlockContention = 0.5

func (w *DeadlockLoad) hold() time.Duration { return cmp.Or(w.Hold, time.Millisecond) }

func (w *DeadlockLoad) think(c sim.Control) time.Duration {
	ct := cmp.Or(w.Contention, DefaultDeadlockContention)
	mean := float64(w.hold()) * (1 - ct) / ct
	return time.Duration(c.Rand().ExpFloat64() * mean)
}

// Init schedules every process's first transaction.
func (w *DeadlockLoad) Init(c sim.Control) {
	n := c.N()
	w.left, w.res, w.done = make([]int, n), make([][]proc.ID, n), 0
	for p := range n {
		w.left[p] = cmp.Or(w.Txns, 10)
		w.next(c, proc.ID(p), w.think(c))
	}
}

// next begins a fresh transaction at p after d.
func (w *DeadlockLoad) next(c sim.Control, p proc.ID, d time.Duration) {
	n := c.N()
	want := min(cmp.Or(w.Want, 2), n-1)
	var res []proc.ID
	for _, r := range c.Rand().Perm(n) {
		if len(res) == want {
			break
		}
		if r != int(p) {
			res = append(res, proc.ID(r))
		}
	}
	slices.Sort(res)
	w.res[p] = res
	c.Schedule(d, p, deadlock.Begin{Res: res})
}

// Observe closes the loop: a transaction that holds everything finishes
// after its hold; a released one is followed by the next after a think; an
// aborted one is retried after a backoff.
func (w *DeadlockLoad) Observe(c sim.Control, p proc.ID, o proc.Output) {
	switch o.(type) {
	case deadlock.Acquired:
		c.Schedule(time.Duration(c.Rand().ExpFloat64()*float64(w.hold())), p, deadlock.Finish{})
	case deadlock.Released:
		if w.left[p]--; w.left[p] > 0 {
			w.next(c, p, w.think(c))
		} else {
			w.done++
		}
	case deadlock.Aborted:
		c.Schedule(time.Duration(c.Rand().Int64N(2*int64(w.hold())+1)), p, deadlock.Begin{Res: w.res[p]})
	}
}

// Done: every process has committed its transactions.
func (w *DeadlockLoad) Done(func(proc.ID) bool) bool { return w.left != nil && w.done == len(w.left) }

// deadlockMetrics measures a deadlock run from its trace:
//
//   - deadlocks_formed: events that put a process on a cycle of the
//     wait-for graph; deadlocks_detected: those followed by a real
//     declaration in their component while still deadlocked;
//   - phantom_detections: declarations of deadlocks that were not (the
//     timeout detector's false detections); aborts: transactions aborted;
//     commits: transactions that finished;
//   - probe_messages: the probes sent (CMH);
//   - detection_latency_ms: the median time from a deadlock's forming to
//     its declaration;
//   - detection_bound_ms: the bound deadlock-detected holds the detector to.
func deadlockMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := map[string]*float64{}
	t := f.Trace
	if t == nil {
		return m, th
	}
	if f.Algo == "cmh-or" {
		return deadlockORMetrics(t), th
	}
	var probes, aborts, commits float64
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send && e.Type == "probe":
			probes++
		case e.Kind == trace.Output && e.Type == "aborted":
			aborts++
		case e.Kind == trace.Output && e.Type == "released":
			commits++
		}
	}
	m["probe_messages"], m["aborts"], m["commits"] = probes, aborts, commits
	r, err := check.AnalyzeDeadlocks(t)
	if err != nil {
		return m, th
	}
	m["deadlocks_formed"] = float64(r.Formed)
	m["deadlocks_detected"] = float64(r.Detected)
	m["phantom_detections"] = float64(len(r.Phantoms))
	if len(r.Latencies) > 0 {
		m["detection_latency_ms"] = median(r.Latencies) / 1e6
	}
	if r.Bound >= 0 {
		m["detection_bound_ms"] = float64(r.Bound) / 1e6
	}
	return m, th
}

func median(xs []int64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}

// deadlockCases: CMH and the timeout detector at low and high contention,
// the timeout at three values of T, on the family's network (one-way
// delays of 0.5 to 2 ms) with 1 ms holds; CMH for the OR model on its own
// workload (waits for any one of two) at the same contentions; metrics
// summed over a few seeds, so that there are deadlocks to count.
var deadlockCases = func() []compareCase {
	var cases []compareCase
	metrics := []string{"deadlocks_formed", "deadlocks_detected", "phantom_detections", "aborts", "probe_messages", "detection_latency_ms"}
	orMetrics := []string{"deadlocks_formed", "deadlocks_detected", "phantom_detections", "aborts", "query_messages", "reply_messages", "messages_per_detection", "edges_per_detection", "detection_latency_ms"}
	for _, c := range []float64{0.3, 0.9} {
		cases = append(cases, compareCase{
			name:    fmt.Sprintf("OR model, contention %.1f", c),
			algos:   []string{"cmh-or"},
			metrics: orMetrics,
			run:     deadlockRun(c, 0),
		})
	}
	for _, c := range []float64{0.3, 0.9} {
		cases = append(cases, compareCase{
			name:    fmt.Sprintf("contention %.1f", c),
			algos:   []string{"cmh"},
			metrics: metrics,
			run:     deadlockRun(c, 0),
		})
		for _, T := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
			cases = append(cases, compareCase{
				name:    fmt.Sprintf("contention %.1f, T=%v", c, T),
				algos:   []string{"timeout"},
				metrics: metrics,
				run:     deadlockRun(c, T),
			})
		}
	}
	return cases
}()

// DeadlockCompareSeeds is how many seeds each comparison case sums.
const DeadlockCompareSeeds = 5

// deadlockRun runs a case at contention c (and wait T, if not 0) over
// DeadlockCompareSeeds seeds from seed, and reports the counts summed and
// the median of the runs' median latencies.
func deadlockRun(c float64, T time.Duration) func(Family, proc.Algorithm, int, uint64) (*Report, error) {
	return func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		if T > 0 {
			var err error
			if a, err = deadlock.WithWait(a, T); err != nil {
				return nil, err
			}
		}
		var total *Report
		var latencies []float64
		for s := seed; s < seed+DeadlockCompareSeeds; s++ {
			o := f.Options(a)
			o.Nodes, o.Seed = n, &s
			switch w := o.Workload.(type) {
			case *DeadlockLoad:
				w.Contention = c
			case *DeadlockORLoad:
				w.Contention = c
			}
			r, _, err := Sim(o)
			if err != nil {
				return nil, err
			}
			if l, ok := r.Metrics["detection_latency_ms"]; ok {
				latencies = append(latencies, l)
			}
			if total == nil {
				total = r
				continue
			}
			for k, v := range r.Metrics {
				total.Metrics[k] += v
			}
			for _, ch := range r.Checks {
				if !ch.OK {
					total.Checks = append(total.Checks, ch)
				}
			}
		}
		if len(latencies) > 0 {
			slices.Sort(latencies)
			total.Metrics["detection_latency_ms"] = latencies[len(latencies)/2]
		}
		if a.Name == "cmh-or" {
			perDetection(total.Metrics)
		}
		return total, nil
	}
}
