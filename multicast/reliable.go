package multicast

import "github.com/cohort-go/cohort/proc"

// Reliable multicast, R-multicast over B-multicast (Coulouris et al.:
// validity, integrity and agreement; the construction is the textbook one
// their remark "ordered multicast does not imply reliability" contrasts
// with):
//
//	To R-multicast(g, m):      B-multicast(g, m)
//	On B-deliver(m) at q:      if m ∉ Received:
//	                               Received := Received ∪ {m}
//	                               if q ≠ sender(m): B-multicast(g, m)
//	                               R-deliver(m)
//
// Every member that receives a message for the first time passes it on to
// every other member before delivering it, so if any correct member
// delivers m, every correct member receives it — even when the sender
// crashed after reaching only some of them (agreement). The relays go to
// every member but the relaying one and the origin.
//
// Assumptions: reliable channels (no acknowledgements: a copy sent to a
// correct process arrives); processes fail by crashing. No order is kept.
//
// Cost: (N − 1) copies from the sender and N − 2 relays from each of the
// N − 1 others: (N − 1)² messages per multicast; one message of latency.
type reliable struct {
	groups   groupTable
	seq      counters
	received seen
}

// rData is a copy of a multicast message, from its origin or relayed.
type rData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

func (rData) Kind() string     { return "data" }
func (d rData) String() string { return "DATA " + d.key().String() }
func (d rData) key() msgKey    { return msgKey{d.Group, d.Origin, d.Seq} }

func init() {
	register(proc.Algorithm{
		Name:    "reliable",
		Summary: "R-multicast: every member relays a message on first receipt ((N−1)² messages; agreement even if the sender crashes)",
		Source:  "Coulouris et al. (R-multicast)",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": (N - 1) * (N - 1),
				"latency_msgs":           1,
			}
		},
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies, and N − 2 relays from each of the N − 1 receivers",
		},
		New: func(_ proc.ID, n int) proc.Process {
			return &reliable{groups: Groups(n), seq: counters{}, received: seen{}}
		},
		Breaks:   []string{"fifo-order", "causal-order", "total-order"},
		Messages: []proc.Message{rData{}},
		// Process 0 multicasts and crashes half a millisecond later; its
		// copy to process 1 is lost, but the others relay it.
		Scenario: `nodes: 4
network:
  latency: uniform:500us,3ms
  links:
    - {from: 0, to: 1, loss: 1}
faults:
  - crash 0 at 1500us
inputs:
  - at 1ms node 0 multicast last words
  - at 2ms node 1 multicast one
  - at 2ms node 2 multicast two
  - at 3ms node 1 multicast three
`,
	})
}

func (r *reliable) Start(proc.Env)        {}
func (r *reliable) Timeout(proc.Env, any) {}
func (r *reliable) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		r.multicast(env, m)
	}
}

func (r *reliable) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if d, ok := m.(rData); ok {
		r.onData(env, d)
	}
}

func (r *reliable) multicast(env proc.Env, in Multicast) {
	g, ok := r.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, r.seq.next(g.Name), in.Body)
	d := rData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Body: in.Body}
	r.received.Add(k)
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	if g.Has(env.Self()) {
		deliver(env, k, in.Body)
	}
}

// onData relays the first copy of a message to the other members, then
// delivers it.
func (r *reliable) onData(env proc.Env, d rData) {
	g, ok := r.groups.lookup(d.Group)
	if !ok || !r.groups.process(d.Origin) || !r.received.Add(d.key()) {
		return // not a message of this run, or received already
	}
	g.others(env.Self(), func(q proc.ID) {
		if q != d.Origin {
			env.Send(q, d)
		}
	})
	deliver(env, d.key(), d.Body)
}
