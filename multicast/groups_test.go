package multicast

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestGroupsRule(t *testing.T) {
	ids := func(xs ...proc.ID) []proc.ID { return xs }
	cases := []struct {
		n           int
		all, g1, g2 []proc.ID
	}{
		{1, ids(0), ids(0), ids(0)},
		{2, ids(0, 1), ids(0, 1), ids(0, 1)},
		{3, ids(0, 1, 2), ids(0, 1), ids(0, 1, 2)},
		{4, ids(0, 1, 2, 3), ids(0, 1, 2), ids(1, 2, 3)},
		{8, ids(0, 1, 2, 3, 4, 5, 6, 7), ids(0, 1, 2, 3, 4), ids(3, 4, 5, 6, 7)},
	}
	for _, c := range cases {
		gs := Groups(c.n)
		if len(gs) != 3 || gs[0].Name != "all" || gs[1].Name != "g1" || gs[2].Name != "g2" {
			t.Fatalf("n=%d: groups %+v", c.n, gs)
		}
		for i, want := range [][]proc.ID{c.all, c.g1, c.g2} {
			if !slices.Equal(gs[i].Members, want) {
				t.Errorf("n=%d: %s = %v, want %v", c.n, gs[i].Name, gs[i].Members, want)
			}
		}
		if gs[0].Open || gs[1].Open || !gs[2].Open {
			t.Errorf("n=%d: all and g1 must be closed, g2 open", c.n)
		}
	}
	// From four processes on, g1 and g2 overlap in exactly two.
	for n := 4; n <= 20; n++ {
		gs := Groups(n)
		var common []proc.ID
		for _, p := range gs[1].Members {
			if gs[2].Has(p) {
				common = append(common, p)
			}
		}
		if want := []proc.ID{proc.ID(n/2 - 1), proc.ID(n / 2)}; !slices.Equal(common, want) {
			t.Errorf("n=%d: g1 ∩ g2 = %v, want %v", n, common, want)
		}
	}
}

func TestInputs(t *testing.T) {
	good := []struct {
		args []string
		want Multicast
	}{
		{[]string{"hello", "world"}, Multicast{Group: "all", Body: "hello world"}},
		{[]string{"@g2", "deposit", "100"}, Multicast{Group: "g2", Body: "deposit 100"}},
		{nil, Multicast{Group: "all"}},
	}
	for _, c := range good {
		in, err := Inputs("multicast", c.args)
		if err != nil || in != c.want {
			t.Errorf("multicast %v = %v, %v; want %v", c.args, in, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"acquire", nil, `unknown input "acquire"`},
		{"multicast", []string{"@g9", "x"}, `unknown group "g9"`},
	} {
		if _, err := Inputs(c.name, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want one containing %s", c.name, c.args, err, c.want)
		}
	}
}

// outputs returns every output of kind, with its process.
func outputsOf[T any](tr *trace.Trace, kind string) (nodes []int32, values []T) {
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == kind {
			var v T
			if json.Unmarshal(e.Data, &v) == nil {
				nodes, values = append(nodes, e.Node), append(values, v)
			}
		}
	}
	return nodes, values
}

// A closed group refuses a sender from outside; an open one delivers its
// message to every member and not to the sender. The Lamport total order
// refuses outsiders even to the open group.
func TestClosedAndOpenGroups(t *testing.T) {
	// Six processes: g1 = {p0..p3}, g2 = {p2..p5}. p5 sends to both.
	script := sim.Script{
		{At: time.Millisecond, Node: 5, Input: Multicast{Group: "g1", Body: "knock"}},
		{At: time.Millisecond, Node: 5, Input: Multicast{Group: "g2", Body: "member"}},
		{At: 2 * time.Millisecond, Node: 0, Input: Multicast{Group: "g2", Body: "outsider"}},
	}
	for _, a := range Algorithms {
		t.Run(a.Name, func(t *testing.T) {
			r := simRun{Algo: a.Name, Nodes: 6, Seed: 1, Inputs: script}
			r.Network.FIFO = a.Assumes.FIFO
			tr := r.run(t)
			for name, v := range verdicts(t, tr) {
				if !v.OK() {
					t.Errorf("%s: %s", name, v.Counterexample(tr))
				}
			}
			refusedAt, refused := outputsOf[Refused](tr, "refused")
			_, sent := outputsOf[Sent](tr, "sent")
			closedOnly := a.Name == "total-lamport"
			wantRefused := []int32{5}
			if closedOnly {
				wantRefused = []int32{5, 0}
			}
			if !slices.Equal(refusedAt, wantRefused) || refused[0].Group != "g1" || !strings.Contains(refused[0].Reason, "p5 is not a member of g1") {
				t.Errorf("refused at %v: %+v; want at %v, p5's send to g1 first", refusedAt, refused, wantRefused)
			}
			if len(sent) != 3-len(wantRefused) {
				t.Errorf("sent %+v", sent)
			}
			got := map[string][]int32{}
			at, ds := outputsOf[Delivered](tr, "deliver")
			for i, d := range ds {
				got[d.Body] = append(got[d.Body], at[i])
			}
			for _, want := range []struct {
				body string
				at   []int32
			}{{"member", []int32{2, 3, 4, 5}}, {"outsider", []int32{2, 3, 4, 5}}, {"knock", nil}} {
				if want.body == "outsider" && closedOnly {
					want.at = nil
				}
				g := slices.Sorted(slices.Values(got[want.body]))
				if !slices.Equal(g, want.at) {
					t.Errorf("%q delivered at %v, want %v", want.body, g, want.at)
				}
			}
		})
	}
}

// crossGroupInversion finds two processes that deliver a message of g1 and
// one of g2 in opposite orders.
func crossGroupInversion(tr *trace.Trace) (string, bool) {
	pos := map[int32]map[string]int{}
	at, ds := outputsOf[Delivered](tr, "deliver")
	var g1, g2 []string
	for i, d := range ds {
		l := label(d.Origin, d.Seq, d.Group)
		if pos[at[i]] == nil {
			pos[at[i]] = map[string]int{}
		}
		pos[at[i]][l] = i
		switch {
		case d.Group == "g1" && !slices.Contains(g1, l):
			g1 = append(g1, l)
		case d.Group == "g2" && !slices.Contains(g2, l):
			g2 = append(g2, l)
		}
	}
	procs := slices.Sorted(func(yield func(int32) bool) {
		for p := range pos {
			if !yield(p) {
				return
			}
		}
	})
	for _, a := range g1 {
		for _, b := range g2 {
			for _, p := range procs {
				for _, q := range procs {
					pa, ok1 := pos[p][a]
					pb, ok2 := pos[p][b]
					qa, ok3 := pos[q][a]
					qb, ok4 := pos[q][b]
					if ok1 && ok2 && ok3 && ok4 && pa < pb && qb < qa {
						return proc.ID(p).String() + " delivers " + a + " before " + b + ", " + proc.ID(q).String() + " after", true
					}
				}
			}
		}
	}
	return "", false
}

// Every order is per group: with one sequencer (or one agreement, or one
// queue) per group, the two processes in both g1 and g2 may deliver a
// message of each in opposite orders, while each group's total order holds.
func TestTotalOrderIsPerGroup(t *testing.T) {
	for _, name := range []string{"total-sequencer", "total-isis", "total-lamport", "fifo-total", "causal-total"} {
		a := algorithm(t, name)
		found := false
		for seed := uint64(1); seed <= 60 && !found; seed++ {
			r := simRun{Algo: name, Nodes: 4, Seed: seed,
				Load: &load{Count: 4, Think: time.Millisecond, Groups: []string{"g1", "g2"}}}
			r.Network.FIFO = a.Assumes.FIFO
			tr := r.run(t)
			if v := verdicts(t, tr)["total-order"]; !v.OK() {
				t.Fatalf("%s: %s", describe(r), v.Counterexample(tr))
			}
			if why, ok := crossGroupInversion(tr); ok {
				found = true
				t.Logf("%s, %s: %s", name, describe(r), why)
			}
		}
		if !found {
			t.Errorf("%s: no run delivered messages of g1 and g2 in opposite orders at the common members", name)
		}
	}
}

// Coulouris et al.: ordered multicast does not imply reliability. The
// origin of a message crashes after its copy reached the sequencer but not
// p3; p3 blocks at that message's number and delivers only a prefix of
// what the others deliver: agreement breaks, total order does not.
func TestTotalOrderIsNotReliable(t *testing.T) {
	one := 1.0
	r := simRun{Algo: "total-sequencer", Nodes: 4, Seed: 1,
		Network: sim.Network{Latency: sim.Constant(time.Millisecond),
			Links: []sim.Link{{From: 2, To: 3, Loss: &one}}},
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 2, At: 3 * time.Millisecond}},
		Inputs: sim.Script{
			{At: time.Millisecond, Node: 1, Input: Multicast{Body: "m"}},
			{At: 2 * time.Millisecond, Node: 2, Input: Multicast{Body: "m′ (its origin crashes)"}},
			{At: 5 * time.Millisecond, Node: 0, Input: Multicast{Body: "m″"}},
		}}
	tr := r.run(t)
	v := verdicts(t, tr)
	if !v["total-order"].OK() || !v["fifo-order"].OK() {
		t.Errorf("order broken: %s; %s", v["total-order"], v["fifo-order"])
	}
	if !strings.Contains(v["mc-agreement"].Detail, "p3 never delivered p2#1") {
		t.Errorf("agreement: %s, want p3 missing p2#1", v["mc-agreement"])
	}
	d := deliveries(tr)
	if !slices.Equal(d[3], []string{"p1#1"}) || !slices.Equal(d[0], []string{"p1#1", "p2#1", "p0#1"}) || !slices.Equal(d[1], d[0]) {
		t.Errorf("deliveries %v: want p0 and p1 to deliver p1#1 p2#1 p0#1, and p3 the prefix p1#1", d)
	}
}

// R-multicast against B-multicast on the same run: the sender's copy to p1
// is lost and the sender crashes before it could repair. Basic multicast
// leaves p1 without the message; reliable multicast's relays reach it.
func TestReliableSurvivesTheSendersCrash(t *testing.T) {
	one := 1.0
	for _, c := range []struct {
		algo  string
		agree bool
	}{{"basic", false}, {"reliable", true}} {
		r := simRun{Algo: c.algo, Nodes: 4, Seed: 1,
			Network: sim.Network{Latency: sim.Constant(time.Millisecond), Links: []sim.Link{{From: 0, To: 1, Loss: &one}}},
			Faults:  []sim.Fault{{Kind: sim.Crash, Node: 0, At: 1500 * time.Microsecond}},
			Inputs:  sim.Script{{At: time.Millisecond, Node: 0, Input: Multicast{Body: "last words"}}}}
		tr := r.run(t)
		v := verdicts(t, tr)
		if v["mc-agreement"].OK() != c.agree {
			t.Errorf("%s: agreement %s, want ok=%v", c.algo, v["mc-agreement"], c.agree)
		}
		got := deliveries(tr)
		if has := len(got[1]) == 1; has != c.agree {
			t.Errorf("%s: p1 delivered %v", c.algo, got[1])
		}
	}
}

// A lost last message is found by the session messages and repaired: the
// partition cuts p0 off while it multicasts its last message; nothing
// later from p0 shows the gap but the SESSION messages.
func TestNackRepairsALostLastMessage(t *testing.T) {
	r := simRun{Algo: "reliable-nack", Nodes: 4, Seed: 1,
		Network: sim.Network{Latency: sim.Constant(time.Millisecond),
			Partitions: []sim.Partition{{Groups: [][]proc.ID{{0}}, From: 1500 * time.Microsecond, To: 2500 * time.Microsecond}}},
		Inputs: sim.Script{
			{At: time.Millisecond, Node: 0, Input: Multicast{Body: "first"}},
			{At: 2 * time.Millisecond, Node: 0, Input: Multicast{Body: "last"}},
		}}
	tr := r.run(t)
	for name, v := range verdicts(t, tr) {
		if !v.OK() && name != "causal-order" && name != "total-order" {
			t.Errorf("%s", v.Counterexample(tr))
		}
	}
	kinds := map[string]int{}
	for _, e := range tr.Events {
		if e.Kind == trace.Send {
			kinds[e.Type]++
		}
	}
	if kinds["nack"] != 3 || kinds["repair"] != 3 || kinds["session"] == 0 {
		t.Errorf("messages by kind %v: want 3 NACKs and 3 repairs after the sessions", kinds)
	}
	for p := int32(1); p < 4; p++ {
		if got := deliveries(tr)[p]; !slices.Equal(got, []string{"p0#1", "p0#2"}) {
			t.Errorf("p%d delivered %v", p, got)
		}
	}
}

// The same seed gives the same run, event for event; another seed does
// not.
func TestRunsAreDeterministic(t *testing.T) {
	for _, a := range Algorithms {
		r := simRun{Algo: a.Name, Nodes: 5, Seed: 7, Load: &load{Count: 3, Think: time.Millisecond, Groups: []string{"all", "g1", "g2"}}}
		r.Network.Loss = 0.05
		enc := func(tr *trace.Trace) string {
			var b strings.Builder
			for i := range tr.Events {
				b.Write(tr.Events[i].AppendJSON(nil))
			}
			return b.String()
		}
		x, y := enc(r.run(t)), enc(r.run(t))
		if x != y {
			t.Errorf("%s: two runs with seed 7 differ", a.Name)
		}
		r.Seed = 8
		if enc(r.run(t)) == x {
			t.Errorf("%s: seeds 7 and 8 give the same run", a.Name)
		}
	}
}

// stubEnv is an Env for feeding a process messages by hand.
type stubEnv struct {
	self proc.ID
	n    int
	out  []proc.Output
}

func (e *stubEnv) Self() proc.ID                            { return e.self }
func (e *stubEnv) N() int                                   { return e.n }
func (e *stubEnv) Neighbors() []proc.ID                     { return nil }
func (e *stubEnv) Now() time.Duration                       { return 0 }
func (e *stubEnv) Send(proc.ID, proc.Message)               {}
func (e *stubEnv) SetTimer(time.Duration, any) proc.TimerID { return 1 }
func (e *stubEnv) CancelTimer(proc.TimerID)                 {}
func (e *stubEnv) Storage() proc.Storage                    { return nil }
func (e *stubEnv) Rand() *rand.Rand                         { return rand.New(rand.NewPCG(1, 2)) }
func (e *stubEnv) Output(o proc.Output)                     { e.out = append(e.out, o) }

// Messages from a peer that make no sense — an unknown group, an origin
// out of range, a vector of the wrong length — are dropped, not a panic.
func TestNonsenseFromPeersIsDropped(t *testing.T) {
	bad := []proc.Message{
		bData{Group: "nope", Origin: 9, Seq: 1}, bAck{Group: "all", Origin: -4, Seq: 7},
		rData{Group: "nope", Origin: 1, Seq: 1},
		nData{Group: "nope", Origin: 1, Seq: 3}, nSession{Group: "all", Origin: 1, Last: 1 << 40}, nNack{Group: "all", Origin: 0, Missing: []uint64{0, 99}}, nRepair{Group: "g1", Origin: 2, Seq: 0},
		fData{Group: "nope", Origin: 7, S: 2},
		cData{Group: "all", Origin: 7, V: []uint64{1}}, cData{Group: "nope", Origin: 1, V: []uint64{0, 1, 0}},
		sData{Group: "all", Origin: 42, Seq: 1}, sOrder{Group: "nope", Origin: 99, S: 0}, sData{Group: "g7", Origin: 1, Seq: 1},
		iData{Group: "nope", Origin: 1}, iPropose{Group: "all", Origin: 0, Seq: 77}, iAgreed{Group: "all", Origin: 1, Seq: 5},
		lData{Group: "nope", Origin: 1, T: 3}, lAck{Group: "all", Origin: 8, T: 1},
	}
	for _, a := range Algorithms {
		p := a.New(0, 3)
		env := &stubEnv{self: 0, n: 3}
		p.Start(env)
		for _, m := range bad {
			for _, from := range []proc.ID{1, -1, 17} {
				p.Receive(env, from, m)
			}
		}
		if a.Name == "causal-total" {
			// A vector of the wrong length, on an otherwise good message.
			p.Receive(env, 1, sData{Group: "all", Origin: 1, Seq: 1, V: []uint64{1}})
		}
		for _, o := range env.out {
			if _, ok := o.(Delivered); ok {
				t.Errorf("%s delivered %v from nonsense", a.Name, o)
			}
		}
	}
}
