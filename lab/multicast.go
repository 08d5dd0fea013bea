package lab

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// DefaultMulticastLoad is the multicast family's default workload: every
// process multicasts Count messages to the group "all", separated by
// exponential think times (a Poisson process per node) — several
// processes multicasting concurrently.
func DefaultMulticastLoad() sim.Workload { return MulticastLoad(3, 2*time.Millisecond) }

// MulticastLoad has every process multicast count messages to "all", with
// exponential think times of the given mean. The bodies name the sender
// and the message: "m2.0" is p2's first.
func MulticastLoad(count int, think time.Duration) sim.Workload {
	return sim.Poisson{
		Make: func(node proc.ID, i int) proc.Input {
			return multicast.Multicast{Group: "all", Body: fmt.Sprintf("m%d.%d", node, i)}
		},
		Think: sim.Exponential{MeanD: think},
		Count: count,
	}
}

// multicastMetrics measures a run against the textbooks' costs:
//
//   - multicasts and delivered: the "sent" and "deliver" outputs;
//   - messages_per_multicast: every message sent (copies, acknowledgements,
//     orders, proposals, relays, sessions ...) over the multicasts;
//   - acks_per_multicast: the "ack" messages alone, where there are any
//     (basic multicast's ack implosion, the Lamport order's (N−1)²);
//   - latency_msgs: from a multicast to the last delivery of the message,
//     in units of the network's mean one-way latency, averaged over the
//     messages delivered anywhere;
//   - holdback_max: the largest hold-back queue any process reported
//     ("holdback" outputs; 0 for algorithms that never hold back).
//
// The theory is given when every multicast went from a member to the
// whole run (group "all"), the situation the textbooks' formulas describe.
func multicastMetrics(f Finished) (map[string]float64, map[string]*float64) {
	t := f.Trace
	type msg struct {
		sent, last int64
		delivered  bool
	}
	msgs := map[string]*msg{}
	var order []string
	whole := true
	var multicasts, delivered, acks, holdbackMax float64
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send && e.Type == "ack":
			acks++
		case e.Kind == trace.Output && e.Type == "sent":
			var s multicast.Sent
			if json.Unmarshal(e.Data, &s) != nil {
				continue
			}
			multicasts++
			k := fmt.Sprintf("%d/%d/%s", s.Origin, s.Seq, s.Group)
			if msgs[k] == nil {
				order = append(order, k)
			}
			msgs[k] = &msg{sent: e.Time}
			whole = whole && len(s.Members) == f.Nodes && s.Group == "all"
		case e.Kind == trace.Output && e.Type == "deliver":
			var d multicast.Delivered
			if json.Unmarshal(e.Data, &d) != nil {
				continue
			}
			delivered++
			if m := msgs[fmt.Sprintf("%d/%d/%s", d.Origin, d.Seq, d.Group)]; m != nil {
				m.last, m.delivered = max(m.last, e.Time), true
			}
		case e.Kind == trace.Output && e.Type == "holdback":
			var h multicast.Holdback
			if json.Unmarshal(e.Data, &h) == nil {
				holdbackMax = max(holdbackMax, float64(h.Len))
			}
		}
	}
	m := map[string]float64{"multicasts": multicasts, "delivered": delivered, "holdback_max": holdbackMax}
	if multicasts > 0 {
		m["messages_per_multicast"] = float64(f.Result.Sent) / multicasts
		if acks > 0 {
			m["acks_per_multicast"] = acks / multicasts
		}
	}
	var lat []float64
	for _, k := range order {
		if x := msgs[k]; x.delivered {
			lat = append(lat, float64(x.last-x.sent)/float64(f.MeanLatency))
		}
	}
	if len(lat) > 0 && f.MeanLatency > 0 {
		m["latency_msgs"] = mean(lat)
	}
	th := map[string]*float64{}
	if whole && multicasts > 0 {
		th = theoryOf("multicast", f.Algo, f.Nodes, "messages_per_multicast", "latency_msgs")
	}
	return m, th
}

// multicastOptions is a comparison run of a with n processes on a FIFO
// network of the given latency (every multicast algorithm may assume FIFO).
func multicastOptions(f Family, a proc.Algorithm, n int, seed uint64, latency string) (Options, error) {
	o := f.Options(a)
	sc, err := scenario.Parse("comparison", []byte(fmt.Sprintf("nodes: %d\nnetwork:\n  latency: %s\n  fifo: true\n", n, latency)))
	if err != nil {
		return o, err
	}
	o.Scenario, o.Seed = sc, &seed
	o.Deadline = 10 * time.Second
	return o, nil
}

// multicastCases are the constructed situations of `cohort compare
// multicast`.
var multicastCases = []compareCase{
	{
		// Every process multicasts once, far apart from the others, on a
		// constant 1 ms network: the cost and latency of one multicast.
		name: "sparse", metrics: []string{"messages_per_multicast", "latency_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			o, err := multicastOptions(f, a, n, seed, compareLatency.String())
			if err != nil {
				return nil, err
			}
			const gap = 50 * time.Millisecond // longer than any algorithm's tail (reliable-nack's sessions: 30 ms)
			var script sim.Script
			for p := 0; p < n; p++ {
				script = append(script, sim.TimedInput{At: gap * time.Duration(p+1), Node: proc.ID(p),
					Input: multicast.Multicast{Group: "all", Body: fmt.Sprintf("m%d", p)}})
			}
			o.Workload = script
			r, _, err := Sim(o)
			return r, err
		},
		theory: func(algo string, n int, metric string) *float64 {
			th := theoryOf("multicast", algo, n, "messages_per_multicast", "latency_msgs", "messages_per_lone_multicast")
			if lone := th["messages_per_lone_multicast"]; metric == "messages_per_multicast" && lone != nil {
				return lone // a lone multicast: what the algorithm says it costs when nothing follows it
			}
			return th[metric]
		},
	},
	{
		// Every process multicasts five times, Poisson with a mean think
		// time of 2 ms, on a jittery FIFO network (0.5–1.5 ms): concurrent
		// multicasts, and hold-back queues.
		name: "concurrent", metrics: []string{"messages_per_multicast", "latency_msgs", "holdback_max"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			o, err := multicastOptions(f, a, n, seed, "uniform:500us,1500us")
			if err != nil {
				return nil, err
			}
			o.Workload = MulticastLoad(5, 2*time.Millisecond)
			r, _, err := Sim(o)
			return r, err
		},
		theory: func(algo string, n int, metric string) *float64 {
			if metric == "messages_per_multicast" {
				return theoryOf("multicast", algo, n, metric)[metric]
			}
			return nil
		},
	},
}

// The replicated bank account of Tanenbaum & van Steen §6.2: $1000 on every
// replica; one process deposits $100 while another adds 1% interest.
// Applied in different orders the replicas end at $1111 and $1110.
const (
	bankStart    = 100_000 // cents
	bankDeposit  = "deposit $100"
	bankInterest = "add 1% interest"
)

// BankRun is one run of the bank demonstration.
type BankRun struct {
	Algo   string
	Report *Report
	Trace  *trace.Trace
	// Balances is each replica's final balance, in cents.
	Balances []int64
	// Applied is the updates each replica applied, in order.
	Applied [][]string
}

// Agree reports whether every replica ends with the same balance.
func (b *BankRun) Agree() bool {
	for _, x := range b.Balances {
		if x != b.Balances[0] {
			return false
		}
	}
	return true
}

// Dollars renders cents as "$1111.00".
func Dollars(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

// BankDemo runs the replicated account with multicast algorithm algo on n
// replicas (n ≥ 2): at 1 ms, p0 multicasts the deposit and p1 the
// interest; every replica applies what it delivers, in delivery order.
// The network is FIFO with 0.5–3 ms of latency, so the seed decides the
// order of the copies.
func BankDemo(algo string, n int, seed uint64) (*BankRun, error) {
	return bankDemo(algo, n, seed, false)
}

// BankDemoStates is BankDemo with each replica's state recorded after
// every step (Options.States): its balance and the updates it applied,
// beside the multicast algorithm's own description, for the viewer.
func BankDemoStates(algo string, n int, seed uint64) (*BankRun, error) {
	return bankDemo(algo, n, seed, true)
}

func bankDemo(algo string, n int, seed uint64, states bool) (*BankRun, error) {
	if n < 2 {
		return nil, fmt.Errorf("%w: the bank demo needs at least 2 replicas, not %d", ErrInput, n)
	}
	f, err := Lookup("multicast")
	if err != nil {
		return nil, err
	}
	a, err := f.Algorithm(algo)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	o, err := multicastOptions(f, a, n, seed, "uniform:500us,3ms")
	if err != nil {
		return nil, err
	}
	if states {
		o.States = true
		inner := o.Algo.New
		o.Algo.New = func(id proc.ID, n int) proc.Process { return &bankReplica{Process: inner(id, n), balance: bankStart} }
	}
	o.Workload = sim.Script{
		{At: time.Millisecond, Node: 0, Input: multicast.Multicast{Group: "all", Body: bankDeposit}},
		{At: time.Millisecond, Node: 1, Input: multicast.Multicast{Group: "all", Body: bankInterest}},
	}
	r, tr, err := Sim(o)
	if err != nil {
		return nil, err
	}
	b := &BankRun{Algo: algo, Report: r, Trace: tr, Balances: make([]int64, n), Applied: make([][]string, n)}
	for p := range b.Balances {
		b.Balances[p] = bankStart
	}
	for _, e := range tr.Events {
		if e.Kind != trace.Output || e.Type != "deliver" {
			continue
		}
		var d multicast.Delivered
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		switch d.Body {
		case bankDeposit:
			b.Balances[e.Node] += 10_000
		case bankInterest:
			b.Balances[e.Node] = b.Balances[e.Node] * 101 / 100
		default:
			continue
		}
		b.Applied[e.Node] = append(b.Applied[e.Node], d.Body)
	}
	return b, nil
}

// bankReplica is a replica of the account over a multicast process: it
// applies each update the process delivers (watching its outputs), and
// describes its balance (proc.Describer).
type bankReplica struct {
	proc.Process
	balance int64
	applied []string
}

// bankEnv passes a replica's outputs on, applying the deliveries.
type bankEnv struct {
	proc.Env
	r *bankReplica
}

func (e bankEnv) Output(o proc.Output) {
	if d, ok := o.(multicast.Delivered); ok {
		switch d.Body {
		case bankDeposit:
			e.r.balance += 10_000
			e.r.applied = append(e.r.applied, d.Body)
		case bankInterest:
			e.r.balance = e.r.balance * 101 / 100
			e.r.applied = append(e.r.applied, d.Body)
		}
	}
	e.Env.Output(o)
}

func (r *bankReplica) Start(env proc.Env) { r.Process.Start(bankEnv{env, r}) }
func (r *bankReplica) Receive(env proc.Env, from proc.ID, m proc.Message) {
	r.Process.Receive(bankEnv{env, r}, from, m)
}
func (r *bankReplica) Timeout(env proc.Env, tag any)     { r.Process.Timeout(bankEnv{env, r}, tag) }
func (r *bankReplica) Input(env proc.Env, in proc.Input) { r.Process.Input(bankEnv{env, r}, in) }

// Describe implements proc.Describer.
func (r *bankReplica) Describe() any {
	d := struct {
		Balance   string   `json:"balance"`
		Applied   []string `json:"applied"`
		Multicast any      `json:"multicast,omitempty"`
	}{Balance: Dollars(r.balance), Applied: append([]string{}, r.applied...)}
	if m, ok := r.Process.(proc.Describer); ok {
		d.Multicast = m.Describe()
	}
	return d
}

// Describe renders a replica's updates: "deposit $100, then add 1% interest".
func (b *BankRun) Describe(p int) string {
	if len(b.Applied[p]) == 0 {
		return "nothing applied"
	}
	return strings.Join(b.Applied[p], ", then ")
}
