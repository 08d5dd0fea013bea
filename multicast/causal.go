package multicast

import (
	"slices"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// Causally ordered multicast, CO-multicast (Coulouris et al., causal
// ordering with vector timestamps; Tanenbaum & van Steen §6.2, causally
// ordered multicasting). Process p_i keeps, per group, a vector V_g^i whose
// entry j counts the messages from p_j to g that p_i has delivered (its own
// entry: the messages it has sent):
//
//	To CO-multicast(g, m):            V_g^i[i] := V_g^i[i] + 1
//	                                  B-multicast(g, ⟨V_g^i, m⟩)
//	On B-deliver(⟨V_g^j, m⟩) from p_j: place it in the hold-back queue;
//	    wait until V_g^j[j] = V_g^i[j] + 1    (the next message from p_j)
//	           and V_g^j[k] ≤ V_g^i[k], k ≠ j (p_i has delivered everything
//	                                           p_j had when it sent m)
//	    CO-deliver(m); V_g^i[j] := V_g^i[j] + 1
//
// The wait is logical.Deliverable. A message's number is its origin's entry
// in the vector it carries.
//
// Causal order here is Coulouris et al.'s:
// multicast(g, m) → multicast(g, m′) when the sender of m′ had delivered m
// (or something m precedes) before multicasting m′, or sent both. A receipt
// still held back does not count: the process has not seen the message yet.
//
// Assumptions: reliable channels, in any order; processes fail by
// crashing; groups need not be closed (an outsider's vector counts only its
// own messages). As for FIFO, a sender that crashes mid-multicast breaks
// agreement, not order — and more than for FIFO: a member that missed the
// crashed sender's message holds back for ever every message that causally
// follows it, from correct senders too, so validity goes as well.
// Concurrent messages are not ordered (no total order); causal order
// implies FIFO order.
//
// Cost: N − 1 messages per multicast, each carrying N integers.
type causal struct {
	groups groupTable
	n      int
	V      map[string]logical.Vector
	queue  []cData // the hold-back queue, in order of arrival
	hb     holdback
}

// cData is a multicast message with its sender's vector.
type cData struct {
	Group  string
	Origin proc.ID
	V      []uint64
	Body   string
}

func (cData) Kind() string { return "data" }
func (d cData) String() string {
	return "DATA " + d.key().String() + " " + logical.Vector(d.V).String()
}
func (d cData) key() msgKey {
	var seq uint64
	if int(d.Origin) >= 0 && int(d.Origin) < len(d.V) {
		seq = d.V[d.Origin]
	}
	return msgKey{d.Group, d.Origin, seq}
}

func init() {
	register(proc.Algorithm{
		Name:    "causal",
		Summary: "CO-multicast: vector timestamps and the textbook delivery condition (N−1 messages, N integers each)",
		Source:  "Coulouris et al. (CO-multicast); Tanenbaum & van Steen §6.2",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": N - 1,
				"latency_msgs":           1,
			}
		},
		New: func(_ proc.ID, n int) proc.Process {
			return &causal{groups: Groups(n), n: n, V: map[string]logical.Vector{}}
		},
		Breaks:   []string{"mc-validity", "mc-agreement", "total-order"},
		Messages: []proc.Message{cData{}},
	})
}

func (c *causal) Start(proc.Env)        {}
func (c *causal) Timeout(proc.Env, any) {}

func (c *causal) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		c.multicast(env, m)
	}
}

func (c *causal) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if d, ok := m.(cData); ok {
		c.onData(env, d)
	}
}

func (c *causal) vector(group string) logical.Vector {
	v, ok := c.V[group]
	if !ok {
		v = logical.New(c.n)
		c.V[group] = v
	}
	return v
}

func (c *causal) multicast(env proc.Env, in Multicast) {
	g, ok := c.groups.accept(env, in, false)
	if !ok {
		return
	}
	v := c.vector(g.Name)
	v.Increment(env.Self())
	k := sent(env, g, v[env.Self()], in.Body)
	d := cData{Group: g.Name, Origin: env.Self(), V: v.Copy(), Body: in.Body}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	if g.Has(env.Self()) {
		deliver(env, k, in.Body)
	}
}

func (c *causal) onData(env proc.Env, d cData) {
	if _, ok := c.groups.lookup(d.Group); !ok || d.Origin < 0 || int(d.Origin) >= c.n || len(d.V) != c.n {
		return // not a message of this run
	}
	k := d.key()
	if k.Seq <= c.vector(d.Group)[d.Origin] || slices.ContainsFunc(c.queue, func(h cData) bool { return h.key() == k }) {
		return // delivered or held already
	}
	if !c.hb.hold(env, k, d.Body, logical.Deliverable(c.vector(d.Group), d.V, d.Origin)) {
		return
	}
	c.queue = append(c.queue, d)
	for i := 0; i < len(c.queue); i++ {
		h := c.queue[i]
		v := c.vector(h.Group)
		if !logical.Deliverable(v, h.V, h.Origin) {
			continue
		}
		c.queue = slices.Delete(c.queue, i, i+1)
		c.hb.release(h.Body)
		v[h.Origin]++
		deliver(env, h.key(), h.Body)
		i = -1 // a delivery may make earlier messages deliverable
	}
	c.hb.note(env, len(c.queue))
}
