package mutex

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// raRun is one recorded run.
type raRun struct {
	tr      *trace.Trace
	res     sim.Result
	entries int // Enter outputs
}

func raSimulate(t *testing.T, cfg sim.Config) raRun {
	t.Helper()
	r := simtest.Run(t, "mutex", cfg)
	run := raRun{tr: r.Trace, res: r.Result, entries: r.Count("enter")}
	return run
}

// raLoop runs algorithm a with n processes under the closed-loop workload:
// rounds acquisitions per process, latencies uniform in 1–10 ms, think times
// uniform in 0–8 ms (so requests overlap often), hold times in 0–3 ms.
func raLoop(t *testing.T, a proc.Algorithm, n int, seed uint64, fifo bool, rounds int) raRun {
	t.Helper()
	return raSimulate(t, sim.Config{
		Nodes: n, Seed: seed, New: a.New,
		Network: sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 10 * time.Millisecond}, FIFO: fifo},
		Workload: &closedLoop{Rounds: rounds,
			Think: sim.Uniform{Max: 8 * time.Millisecond},
			Hold:  sim.Uniform{Max: 3 * time.Millisecond}},
	})
}

func raAlgorithm(t *testing.T, name string) proc.Algorithm {
	t.Helper()
	i := slices.IndexFunc(Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("%s is not registered", name)
	}
	return Algorithms[i]
}

// raJudge runs the mutual exclusion checkers ME1–ME3 on a run.
func raJudge(t *testing.T, tr *trace.Trace) []check.Result {
	t.Helper()
	return raCheck(t, tr, "ME1", "ME2", "ME3")
}

// raCheck runs the named checkers on a run.
func raCheck(t *testing.T, tr *trace.Trace, names ...string) []check.Result {
	t.Helper()
	rs, err := check.Run(tr, names...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// raSizes are the numbers of processes of the sweeps.
var raSizes = []int{2, 3, 5, 8}

// raSeeds is how many seeds each sweep runs per process count.
func raSeeds() uint64 { return uint64(simtest.Seeds(100, 20)) }

// TestRASweep runs every algorithm of these files over many seeds with
// contention and jitter, FIFO on for odd seeds and off for even ones, and
// judges each run with every checker of its entry (integrity, duplicates,
// ME1–ME3). Every property the entry does not list in Breaks must hold on
// every run; one it lists must break on some run of the sweep or of the
// scripted test raBrokenBy names. A deadlock must show as a wait-for
// cycle: a request stuck without one would be a lost message or a bug.
func TestRASweep(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "ricart-agrawala-jr", "ricart-agrawala-majority", "suzuki-kasami", "raymond"} {
		a := raAlgorithm(t, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			broken := map[string]int{}
			first := map[string]string{}
			runs := 0
			var cost []string
			for _, n := range raSizes {
				var sent, entries int64
				for seed := uint64(1); seed <= raSeeds(); seed++ {
					fifo := seed%2 == 1
					run := raLoop(t, a, n, seed, fifo, 3)
					runs++
					for _, r := range raCheck(t, run.tr, a.Checks...) {
						if r.OK() {
							continue
						}
						if !slices.Contains(a.Breaks, r.Name) {
							t.Fatalf("n=%d seed %d fifo=%v: %s", n, seed, fifo, r.Counterexample(run.tr))
						}
						if r.Name == "ME2" && !strings.HasPrefix(r.Detail, "deadlock: ") {
							t.Fatalf("n=%d seed %d fifo=%v: stuck without a wait-for cycle: %s", n, seed, fifo, r.Counterexample(run.tr))
						}
						broken[r.Name]++
						broken[fmt.Sprintf("%s n=%d", r.Name, n)]++
						broken[fmt.Sprintf("%s fifo=%v", r.Name, fifo)]++
						if first[r.Name] == "" {
							first[r.Name] = fmt.Sprintf("n=%d seed %d fifo=%v: %s", n, seed, fifo, r.Counterexample(run.tr))
						}
					}
					raCheckCost(t, name, n, seed, run)
					if run.entries == raCountInputs(run.tr, "acquire") { // not deadlocked
						sent += run.res.Sent
						entries += int64(run.entries)
					}
				}
				cost = append(cost, fmt.Sprintf("n=%d: %.2f", n, float64(sent)/float64(max(entries, 1))))
			}
			t.Logf("%s: messages per entry (runs without deadlock): %s", name, strings.Join(cost, ", "))
			t.Logf("%d runs; violations of the properties in Breaks %v: %v", runs, a.Breaks, broken)
			for _, b := range a.Breaks {
				if first[b] != "" {
					t.Logf("first %s violation: %s", b, first[b])
				}
				if broken[b] == 0 && raBrokenBy[name+" "+b] == "" {
					t.Errorf("%s lists %s in Breaks, but no run of the sweep broke it and no test shows it", name, b)
				}
			}
		})
	}
}

// raBrokenBy names the scripted test that shows a broken property the
// random sweep may miss.
var raBrokenBy = map[string]string{
	"ricart-agrawala-jr ME3":       "TestJustReleasedBreaksME3",
	"ricart-agrawala-majority ME3": "TestMajorityBreaksME3",
	"suzuki-kasami ME3":            "TestSuzukiKasamiBreaksME3",
	"raymond ME3":                  "TestRaymondBreaksME3",
}

// raCheckCost pins each algorithm's message count on one run.
func raCheckCost(t *testing.T, name string, n int, seed uint64, run raRun) {
	t.Helper()
	sent, e := run.res.Sent, int64(run.entries)
	m := run.res.Messages
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("n=%d seed %d: %s", n, seed, fmt.Sprintf(format, args...))
	}
	switch name {
	case "ricart-agrawala":
		if sent != 2*int64(n-1)*e {
			fail("%d messages for %d entries, want 2(N−1) = %d each", sent, e, 2*(n-1))
		}
	case "ricart-agrawala-jr":
		if sent > 2*int64(n-1)*e || m("request") != m("reply") {
			fail("%d messages (%d requests, %d replies) for %d entries, want at most 2(N−1) = %d each",
				sent, m("request"), m("reply"), e, 2*(n-1))
		}
	case "ricart-agrawala-majority":
		acquires := int64(raCountInputs(run.tr, "acquire"))
		if m("request") != int64(n-1)*acquires || m("release") != int64(n-1)*e || m("reply") > int64(n-1)*acquires {
			fail("%d requests, %d votes, %d releases for %d acquires and %d entries", m("request"), m("reply"), m("release"), acquires, e)
		}
	case "suzuki-kasami":
		if m("request") != int64(n-1)*m("token") || sent > int64(n)*e {
			fail("%d requests and %d token messages for %d entries, want N−1 requests per token message", m("request"), m("token"), e)
		}
	case "raymond":
		if d := int64(raTreeDiameter(n)); sent > 2*d*e {
			fail("%d messages for %d entries, more than 2·diameter = %d each", sent, e, 2*d)
		}
	}
}

// raCountInputs counts the inputs of a kind ("acquire").
func raCountInputs(tr *trace.Trace, kind string) int { return tr.Count(trace.Input, kind) }

// raEnterOrder lists the processes in the order they entered.
func raEnterOrder(tr *trace.Trace) []int32 {
	var order []int32
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "enter" {
			order = append(order, e.Node)
		}
	}
	return order
}

// raSendsPerEntry counts, for each Enter, the messages sent since the
// previous one (since the start for the first).
func raSendsPerEntry(tr *trace.Trace) []int {
	var per []int
	c := 0
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.Send:
			c++
		case e.Kind == trace.Output && e.Type == "enter":
			per = append(per, c)
			c = 0
		}
	}
	return per
}

// raScript runs a fixed script of inputs with constant 1 ms latency.
func raScript(t *testing.T, a proc.Algorithm, n int, net sim.Network, script sim.Script) raRun {
	t.Helper()
	if net.Latency == nil {
		net.Latency = sim.Constant(time.Millisecond)
	}
	return raSimulate(t, sim.Config{Nodes: n, Seed: 1, New: a.New, Network: net, Workload: script})
}

// raAt is a scripted input at ms milliseconds.
func raAt(ms float64, p proc.ID, in proc.Input) sim.TimedInput {
	return sim.TimedInput{At: time.Duration(ms * float64(time.Millisecond)), Node: p, Input: in}
}

// raMust asserts that the named property held (ok) or broke (!ok) in run.
func raMust(t *testing.T, run raRun, name string, ok bool) {
	t.Helper()
	for _, v := range raJudge(t, run.tr) {
		if v.Name == name && v.OK() != ok {
			if ok {
				t.Errorf("%s", v.Counterexample(run.tr))
			} else {
				t.Errorf("%s held; this run was built to break it", name)
			}
		}
	}
}
