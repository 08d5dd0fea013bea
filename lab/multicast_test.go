package lab

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// multicastBreakOptions is a seeded run of multicast algorithm a with n
// processes multicasting concurrently on a jittery network — with
// reordering, or with a process that crashes in the middle of its
// multicasts (its copies reach each other process with probability one
// half while it lives).
func multicastBreakOptions(t *testing.T, f Family, a proc.Algorithm, n int, seed uint64, reorder, crash bool) Options {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "nodes: %d\nseed: %d\nnetwork:\n  latency: uniform:500us,3ms\n  fifo: %v\n", n, seed, a.Assumes.FIFO)
	if reorder && !a.Assumes.FIFO {
		b.WriteString("  reorder: 0.3\n")
	}
	if crash {
		c := int(seed) % n
		b.WriteString("  links:\n")
		for q := range n {
			if q != c {
				fmt.Fprintf(&b, "    - {from: %d, to: %d, loss: 0.5}\n", c, q)
			}
		}
		fmt.Fprintf(&b, "faults:\n  - crash %d at %dms\n", c, 2+seed%5)
	}
	sc, err := scenario.Parse("break search", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options(a)
	o.Scenario = sc
	o.Workload = MulticastLoad(4, 1500*time.Microsecond)
	o.Deadline = 10 * time.Second
	return o
}

// What each multicast algorithm claims not to guarantee, some seeded run
// breaks: the weaker orders break the stronger ones as Coulouris et al.
// state (basic multicast keeps no order; FIFO is not causal; causal is not
// total; total order is not FIFO, nor causal, where channels reorder), and
// a sender that crashes mid-multicast breaks agreement — for the ordered
// multicasts too: ordered multicast does not imply reliability.
func TestMulticastBreaksAreReal(t *testing.T) {
	f, _ := Lookup("multicast")
	sizes := []int{3, 4, 5, 8}
	for _, a := range f.Algorithms {
		for _, prop := range a.Breaks {
			crash := prop == "mc-agreement" || prop == "mc-validity"
			found := false
			for seed := uint64(1); seed <= 100 && !found; seed++ {
				n := sizes[int(seed)%len(sizes)]
				o := multicastBreakOptions(t, f, a, n, seed, seed%2 == 0, crash)
				r, _, err := Sim(o)
				if err != nil {
					t.Fatal(err)
				}
				if c := checkOf(r, prop); !c.OK && c.Status == "violated" {
					found = true
					t.Logf("%s breaks %s: seed %d, %d processes, %s: %s", a.Name, prop, seed, n, r.Network, c.Detail)
				}
				if r.Failed() {
					for _, c := range r.Checks {
						if c.Failed() && !crash {
							t.Errorf("%s, seed %d: a guaranteed property failed: %s", a.Name, seed, c.Counterexample)
						}
					}
				}
			}
			if !found {
				t.Errorf("%s claims not to guarantee %s, but 100 seeded runs never broke it", a.Name, prop)
			}
		}
	}
}

// `cohort compare multicast` measures what the formulas say: exactly, for
// a lone multicast on a constant-latency network; the message counts under
// concurrency too; and the total orders hold messages back.
func TestMulticastCompareMatchesTheory(t *testing.T) {
	nodes := []int{4, 8}
	rows, runs, err := Compare("multicast", nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if len(r.Failed) > 0 || r.Skip != "" {
			t.Errorf("%s N=%d %s: failed %v, skipped %q", r.Algo, r.Nodes, r.Case, r.Failed, r.Skip)
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Algo+"/"+r.Case+"/"+r.Metric] = true
		if r.Measured == nil {
			t.Errorf("%s N=%d %s %s: nothing measured", r.Algo, r.Nodes, r.Case, r.Metric)
			continue
		}
		m := *r.Measured
		sequencer := r.Algo == "total-sequencer" || r.Algo == "fifo-total" || r.Algo == "causal-total"
		switch {
		case r.Case == "sparse" && r.Metric == "latency_msgs" && sequencer:
			// The sequencer's own message takes one hop, the others two.
			if N := float64(r.Nodes); math.Abs(m-(2*N-1)/N) > 1e-9 {
				t.Errorf("%s N=%d: latency %v, want (2N−1)/N", r.Algo, r.Nodes, m)
			}
		case r.Case == "sparse" || (r.Metric == "messages_per_multicast" && r.Theory != nil):
			if r.Theory == nil || math.Abs(m-*r.Theory) > 1e-9 {
				t.Errorf("%s N=%d %s %s: measured %v, theory %v", r.Algo, r.Nodes, r.Case, r.Metric, m, r.Theory)
			}
		case r.Metric == "holdback_max" && strings.Contains(r.Algo, "total") && m == 0:
			t.Errorf("%s N=%d: no message was ever held back under concurrency", r.Algo, r.Nodes)
		case r.Metric == "latency_msgs" && m < 1:
			t.Errorf("%s N=%d %s: latency %v below one message", r.Algo, r.Nodes, r.Case, m)
		}
	}
	f, _ := Lookup("multicast")
	for _, a := range f.Algorithms {
		for _, k := range []string{"sparse/messages_per_multicast", "sparse/latency_msgs", "concurrent/holdback_max"} {
			if !seen[a.Name+"/"+k] {
				t.Errorf("%s: no %s row", a.Name, k)
			}
		}
	}
}

// Basic multicast's acknowledgements converge on the sender: N − 1 per
// multicast, the ack implosion Coulouris et al. describe.
func TestBasicMulticastAckImplosion(t *testing.T) {
	for _, n := range []int{2, 5, 9} {
		r, _ := simulate(t, "multicast", "basic", func(o *Options) {
			o.Nodes = n
			o.Network.Latency = sim.Constant(time.Millisecond)
		})
		if got := r.Metrics["acks_per_multicast"]; got != float64(n-1) {
			t.Errorf("N=%d: %v acknowledgements per multicast, want %d", n, got, n-1)
		}
		if r.Metrics["delivered"] != float64(n)*r.Metrics["multicasts"] {
			t.Errorf("N=%d: %v deliveries of %v multicasts", n, r.Metrics["delivered"], r.Metrics["multicasts"])
		}
	}
}

// Tanenbaum & van Steen's replicated bank account (§6.2). Under basic
// multicast each replica applies its own update first: $1111 at p0, $1110
// at p1. Under a total order every replica applies the two in the same
// order, whatever the seed.
func TestBankDemo(t *testing.T) {
	b, err := BankDemo("basic", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Balances, []int64{111100, 111000}) || b.Agree() {
		t.Errorf("basic: balances %v, want $1111.00 and $1110.00", b.Balances)
	}
	if got := b.Describe(0); got != "deposit $100, then add 1% interest" {
		t.Errorf("p0 applied %q", got)
	}
	if Dollars(b.Balances[1]) != "$1110.00" {
		t.Errorf("Dollars(%d) = %s", b.Balances[1], Dollars(b.Balances[1]))
	}
	for seed := uint64(1); seed <= 20; seed++ {
		if b, _ := BankDemo("basic", 4, seed); b.Agree() {
			t.Errorf("basic, seed %d: the replicas agree (%v); each applies its own update first", seed, b.Balances)
		}
	}
	outcomes := map[int64]int{}
	for _, algo := range []string{"total-sequencer", "total-isis", "total-lamport", "fifo-total", "causal-total"} {
		for n := 2; n <= 5; n++ {
			for seed := uint64(1); seed <= 25; seed++ {
				b, err := BankDemo(algo, n, seed)
				if err != nil {
					t.Fatal(err)
				}
				if !b.Agree() || b.Report.Failed() {
					t.Fatalf("%s, %d replicas, seed %d: balances %v", algo, n, seed, b.Balances)
				}
				for p := range n {
					if len(b.Applied[p]) != 2 {
						t.Fatalf("%s, %d replicas, seed %d: p%d applied %v", algo, n, seed, p, b.Applied[p])
					}
				}
				outcomes[b.Balances[0]]++
			}
		}
	}
	if len(outcomes) != 2 || outcomes[111100] == 0 || outcomes[111000] == 0 {
		t.Errorf("final balances over all runs %v: want both orders to occur, $1111.00 and $1110.00", outcomes)
	}
	if _, err := BankDemo("basic", 1, 1); err == nil || !strings.Contains(err.Error(), "at least 2 replicas, not 1") {
		t.Errorf("one replica: %v", err)
	}
	if _, err := BankDemo("bogus", 2, 1); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("unknown algorithm: %v", err)
	}
}

// The multicast checkers catch a violation planted in a real run and cite
// the planted event.
func TestMulticastCheckersCatchTamperedRealRuns(t *testing.T) {
	seed := uint64(2)
	_, tr := simulate(t, "multicast", "total-sequencer", func(o *Options) {
		o.Nodes, o.Seed = 4, &seed
		fifo := true
		o.Network.FIFO = &fifo
	})
	names := []string{"mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"}
	if res, _ := check.Run(tr, names...); !allOK(res) {
		t.Fatalf("untampered run fails: %+v", res)
	}
	// delivery returns the index of p's k-th delivery.
	delivery := func(tr *trace.Trace, p int32, k int) int {
		for i, e := range tr.Events {
			if e.Kind == trace.Output && e.Type == "deliver" && e.Node == p {
				if k == 0 {
					return i
				}
				k--
			}
		}
		t.Fatalf("p%d has no such delivery", p)
		return -1
	}
	cases := []struct {
		checker string
		tamper  func(tr *trace.Trace) int // returns the index that must be cited
	}{
		{"mc-integrity", func(tr *trace.Trace) int {
			// A body changed on the way.
			i := delivery(tr, 2, 1)
			tr.Events[i].Data = []byte(strings.Replace(string(tr.Events[i].Data), `"body":"m`, `"body":"forged m`, 1))
			return i
		}},
		{"mc-validity", func(tr *trace.Trace) int {
			// p3 forgets to deliver its last message: nothing is in flight
			// to it when the run ends.
			i := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.Output && e.Type == "sent" })
			for j := len(tr.Events) - 1; j >= 0; j-- {
				e := &tr.Events[j]
				if e.Kind == trace.Output && e.Type == "deliver" && e.Node == 3 && strings.Contains(string(e.Data), fmt.Sprintf(`"origin":%d,"seq":1,`, tr.Events[i].Node)) {
					e.Kind, e.Type, e.Data, e.Label = trace.Timer, "t", nil, ""
					return i
				}
			}
			return -1
		}},
		{"total-order", func(tr *trace.Trace) int {
			// p1 delivers its first two messages the other way round.
			a, b := delivery(tr, 1, 0), delivery(tr, 1, 1)
			tr.Events[a].Data, tr.Events[b].Data = tr.Events[b].Data, tr.Events[a].Data
			return b
		}},
	}
	for _, c := range cases {
		broken := &trace.Trace{Header: tr.Header, Events: slices.Clone(tr.Events)}
		want := c.tamper(broken)
		if want < 0 {
			t.Fatalf("%s: nothing to tamper with", c.checker)
		}
		res, err := check.Run(broken, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Status != check.Violated || !slices.Contains(res[0].Events, want) {
			t.Errorf("%s: %s citing %v, want a violation citing event %d", c.checker, res[0], res[0].Events, want)
		}
	}
}
