package election

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// electionRun is one simulated run of an election algorithm.
type electionRun struct {
	Nodes    int
	Seed     uint64
	New      func(proc.ID, int) proc.Process
	Ring     bool       // ring topology
	Latency  sim.Dist   // nil: 1 ms
	Links    []sim.Link // per-link overrides
	Faults   []sim.Fault
	Initial  int          // processes present at the start; 0: all
	Churn    []sim.Churn  // random joins, failures and leaves
	Inputs   sim.Script   // scripted Elect inputs
	Workload sim.Workload // instead of Inputs
	FIFO     bool
	Cuts     []sim.Partition
	Deadline time.Duration // 0: 10 s
	Clocks   sim.ClockModel
}

// run runs r in the simulator until quiescence (at most 10 s of virtual
// time) and returns the trace and the figures.
func (r electionRun) run(t *testing.T) (*trace.Trace, sim.Result) {
	t.Helper()
	cfg := sim.Config{Nodes: r.Nodes, Seed: r.Seed, New: r.New, Faults: r.Faults,
		Network:  sim.Network{Latency: r.Latency, Links: r.Links, FIFO: r.FIFO, Partitions: r.Cuts},
		Deadline: 10 * time.Second, Clocks: r.Clocks, Initial: r.Initial, Churn: r.Churn}
	if r.Deadline > 0 {
		cfg.Deadline = r.Deadline
	}
	if r.Ring {
		cfg.Topology = sim.Ring(r.Nodes)
	}
	cfg.Workload = r.Workload
	if cfg.Workload == nil && r.Inputs != nil {
		cfg.Workload = r.Inputs
	}
	run := simtest.Run(t, "election", cfg)
	return run.Trace, run.Result
}

// electAt is a scripted Elect input.
func electAt(at time.Duration, node proc.ID) sim.TimedInput {
	return sim.TimedInput{At: at, Node: node, Input: Elect{}}
}

// finalLeaders returns the last elected value of every process that is up at
// the end of the run (None for ⊥; a crash or recovery resets it), and the
// largest id of those processes.
func finalLeaders(tr *trace.Trace) (map[proc.ID]proc.ID, proc.ID) {
	n := tr.Header.Nodes
	up := make([]bool, n)
	for i := range up {
		up[i] = true
	}
	elected := make([]proc.ID, n)
	for i := range elected {
		elected[i] = proc.None
	}
	for _, e := range tr.Events {
		switch e.Kind {
		case trace.Crash:
			up[e.Node], elected[e.Node] = false, proc.None
		case trace.Recover:
			up[e.Node], elected[e.Node] = true, proc.None
		case trace.Output:
			if e.Type == "elected" {
				var o Elected
				if json.Unmarshal(e.Data, &o) == nil {
					elected[e.Node] = o.Leader
				}
			}
		}
	}
	live := map[proc.ID]proc.ID{}
	top := proc.None
	for i := 0; i < n; i++ {
		if up[i] {
			live[proc.ID(i)] = elected[i]
			top = proc.ID(i)
		}
	}
	return live, top
}

// judge returns the violations of E1, E2 and agreement in tr: from the
// checkers of package check when they are registered, otherwise from the
// final Elected outputs.
func judge(t *testing.T, tr *trace.Trace) []string {
	t.Helper()
	res, err := check.Run(tr, "E1", "E2", "agreement")
	if err == nil {
		var bad []string
		for _, r := range res {
			if r.Status != check.OK {
				bad = append(bad, r.Counterexample(tr))
			}
		}
		return bad
	}
	if !errors.Is(err, check.ErrUnknownChecker) {
		t.Fatal(err)
	}
	live, top := finalLeaders(tr)
	var bad []string
	seen := proc.None
	for id := proc.ID(0); int(id) < tr.Header.Nodes; id++ {
		l, ok := live[id]
		if !ok {
			continue
		}
		if l != proc.None && l != top {
			bad = append(bad, fmt.Sprintf("E1: %s elected %s, largest live id is %s", id, l, top))
		}
		if l == proc.None {
			bad = append(bad, fmt.Sprintf("E2: %s never elected", id))
		}
		if l != proc.None {
			if seen != proc.None && l != seen {
				bad = append(bad, fmt.Sprintf("agreement: %s elected %s, another process %s", id, l, seen))
			}
			seen = l
		}
	}
	return bad
}

// sends counts the messages of each kind sent at or after from, and by
// sender and receiver: "election 4→5".
func sends(tr *trace.Trace, from time.Duration) (byKind map[string]int, links map[string]int) {
	byKind, links = map[string]int{}, map[string]int{}
	for _, e := range tr.Events {
		if e.Kind == trace.Send && e.Time >= int64(from) {
			byKind[e.Type]++
			links[fmt.Sprintf("%s %d→%d", e.Type, e.Node, e.Peer)]++
		}
	}
	return byKind, links
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// lastElected is the time of the last Elected output.
func lastElected(tr *trace.Trace) time.Duration {
	var at int64
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "elected" {
			at = e.Time
		}
	}
	return time.Duration(at)
}

// detector is a perfect failure detector as a workload: it gives Elect to
// the processes in First at time 0, then every Every until Until tells each
// live process whose coordinator has crashed, or which knows none, to elect.
type detector struct {
	crashAt map[proc.ID]time.Duration
	first   []proc.ID
	every   time.Duration
	until   time.Duration

	elected map[proc.ID]proc.ID
	told    map[proc.ID]proc.ID
}

func newDetector(faults []sim.Fault, first []proc.ID) *detector {
	d := &detector{crashAt: map[proc.ID]time.Duration{}, first: first,
		every: 5 * time.Millisecond, until: 200 * time.Millisecond,
		elected: map[proc.ID]proc.ID{}, told: map[proc.ID]proc.ID{}}
	for _, f := range faults {
		if f.Kind == sim.Crash {
			d.crashAt[f.Node] = f.At
		}
	}
	return d
}

func (d *detector) crashed(id proc.ID, now time.Duration) bool {
	at, ok := d.crashAt[id]
	return ok && at <= now
}

func (d *detector) Init(c sim.Control) {
	for _, p := range d.first {
		c.Schedule(0, p, Elect{})
	}
	var tick func()
	tick = func() {
		now := c.Now()
		for i := 0; i < c.N(); i++ {
			p := proc.ID(i)
			if d.crashed(p, now) {
				continue
			}
			l, ok := d.elected[p]
			if !ok {
				l = proc.None
			}
			if (l == proc.None && now >= 50*time.Millisecond) || (l != proc.None && d.crashed(l, now)) {
				if t, ok := d.told[p]; !ok || t != l {
					d.told[p] = l
					c.Schedule(0, p, Elect{})
				}
			}
		}
		if now+d.every <= d.until {
			c.After(d.every, tick)
		}
	}
	c.After(d.every, tick)
}

func (d *detector) Observe(_ sim.Control, node proc.ID, o proc.Output) {
	if e, ok := o.(Elected); ok {
		d.elected[node] = e.Leader
	}
}

// randomCrashes crashes up to n−1 distinct processes at random times in
// [0, within).
func randomCrashes(r *rand.Rand, n int, within time.Duration) []sim.Fault {
	k := r.IntN(n)
	var fs []sim.Fault
	for _, i := range r.Perm(n)[:k] {
		fs = append(fs, sim.Fault{Kind: sim.Crash, Node: proc.ID(i), At: time.Duration(r.Int64N(int64(within)))})
	}
	return fs
}
