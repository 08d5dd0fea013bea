package epidemic

import (
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Push-sum (Kempe, Dobra & Gehrke 2003, Algorithm 1). Every node i keeps
// a sum sᵢ and a weight wᵢ; its estimate of the aggregate is sᵢ/wᵢ:
//
//	every round t:  let {(ŝᵣ, ŵᵣ)} be the pairs sent to i in round t − 1
//	                sᵢ := Σᵣ ŝᵣ,  wᵢ := Σᵣ ŵᵣ
//	                choose a target fₜ(i) uniformly at random
//	                send (½sᵢ, ½wᵢ) to fₜ(i) and to i itself
//	                sᵢ/wᵢ is the estimate of the aggregate in round t
//
// Here the half a node sends itself is kept, and a share is added when it
// arrives, which is the same sums without the self-message. The aggregate
// depends on the initial mass (Params.Aggregate):
//
//	average:  sᵢ = xᵢ, wᵢ = 1 at every node          → Σx / n
//	sum:      sᵢ = xᵢ, wᵢ = 1 at node 0, 0 elsewhere  → Σx
//	count:    sᵢ = 1,  wᵢ = 1 at node 0, 0 elsewhere  → n
//
// where xᵢ is given by the Value input (0 without one). Mass is conserved:
// Σsᵢ and Σwᵢ, counting the shares in flight, never change; Kempe et al.
// show that the estimates are then within a relative error ε of the
// aggregate at every node after O(log n + log 1/ε + log 1/δ) rounds, with
// probability 1 − δ.
//
// Assumptions: reliable channels and no failures: a lost share or a
// crashed node takes its mass with it, and every estimate then converges
// to a wrong value (Kempe et al. discuss recovering lost mass; this is the
// basic protocol). A node outputs State after every change of (s, w).
//
// Cost: one message per node and round, of two numbers.
type pushSum struct {
	p    *Params // shared by every process of the run
	s, w float64
}

// Share is a half of a node's mass.
type Share struct{ S, W float64 }

func (Share) Kind() string { return "share" }

// String renders the share exactly (the shortest decimal that reads back
// as the same float64): the mass checker reads it from traces.
func (s Share) String() string { return "SHARE(s=" + fmtFloat(s.S) + ",w=" + fmtFloat(s.W) + ")" }

// State reports a push-sum node's mass after a change; its estimate is S/W.
type State struct {
	S float64 `json:"s"`
	W float64 `json:"w"`
}

func (State) Kind() string { return "state" }
func (s State) String() string {
	return "s=" + fmtFloat(s.S) + " w=" + fmtFloat(s.W)
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func init() {
	builders["push-sum"] = func(p Params) func(proc.ID, int) proc.Process {
		return func(proc.ID, int) proc.Process { return &pushSum{p: &p} }
	}
	register(proc.Algorithm{
		Name:    "push-sum",
		Summary: "push-sum aggregation: halve (sum, weight) each round with a random node; estimates of the average, sum or count converge, mass conserved",
		Source:  "Kempe, Dobra & Gehrke 2003 (push-sum)",
		Assumes: proc.Assumptions{Reliable: true, Failures: "none"},
		New:     builders["push-sum"](Params{}.withDefaults()),
		Theory: func(n int) map[string]float64 {
			return map[string]float64{"messages_per_node_round": 1}
		},
		Checks:   []string{"integrity", "push-sum-mass", "push-sum-error"},
		Messages: []proc.Message{Share{}},
		Scenario: "nodes: 32\nstop:\n  deadline: 10s\n",
	})
}

func (p *pushSum) Start(env proc.Env) {
	switch {
	case p.p.Aggregate == "count" && env.Self() == 0:
		p.s, p.w = 1, 1
	case p.p.Aggregate == "count":
		p.s = 1
	case p.p.Aggregate == "average" || env.Self() == 0:
		p.w = 1
	}
	env.Output(State{p.s, p.w})
	env.SetTimer(nextRound(env, p.p.Period), round{})
}

func (p *pushSum) Input(env proc.Env, in proc.Input) {
	if v, ok := in.(Value); ok && p.p.Aggregate != "count" {
		p.s += v.X
		env.Output(State{p.s, p.w})
	}
}

func (p *pushSum) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(round); !ok {
		return
	}
	if q := peers(env, 1, nil); len(q) > 0 {
		p.s, p.w = p.s/2, p.w/2
		env.Send(q[0], Share{p.s, p.w})
		env.Output(State{p.s, p.w})
	}
	env.SetTimer(nextRound(env, p.p.Period), round{})
}

func (p *pushSum) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if sh, ok := m.(Share); ok {
		p.s += sh.S
		p.w += sh.W
		env.Output(State{p.s, p.w})
	}
}
