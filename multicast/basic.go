package multicast

import (
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Basic multicast, B-multicast (Coulouris et al., the basic multicast
// primitive): a correct process eventually delivers the message,
// as long as the multicaster does not crash.
//
//	To B-multicast(g, m):   for each p ∈ g: send(p, m)
//	On receive(m) at p:     B-deliver(m)
//
// send is Coulouris et al.'s reliable one-to-one operation, built here the
// usual way: the receiver acknowledges every copy, and the sender sends
// again, every RTO, to the members that have not acknowledged, up to
// Retries times (then it gives the member up for crashed). A receiver
// delivers the first copy and acknowledges every copy. The acknowledgements
// are what Coulouris et al. call ack implosion: N − 1 of them converge on
// the sender of every multicast.
//
// Assumptions: channels may lose messages (the acknowledgements repair
// that); processes fail by crashing. A sender that crashes while some
// copies are still unacknowledged leaves those members without the message
// while others delivered it: agreement is not guaranteed, and no order is.
//
// Cost: N − 1 copies and N − 1 acknowledgements per multicast; one message
// of latency.
type basic struct {
	cfg       BasicConfig
	groups    groupTable
	seq       counters
	delivered seen
	pending   map[msgKey]*basicPending // my multicasts not yet acknowledged by every member
}

// basicPending is a multicast waiting for acknowledgements.
type basicPending struct {
	data    bData
	unacked []proc.ID
	tries   int
	timer   proc.TimerID
}

// BasicConfig sets the acknowledgement timeout and the number of
// retransmissions to a silent member.
type BasicConfig struct {
	RTO     time.Duration // default 5 ms
	Retries int           // default 8
}

// DefaultBasic is the registered entry's configuration.
var DefaultBasic = BasicConfig{RTO: 5 * time.Millisecond, Retries: 8}

// bData is a copy of a multicast message.
type bData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

// bAck acknowledges a copy to its origin.
type bAck struct {
	Group  string
	Origin proc.ID
	Seq    uint64
}

func (bData) Kind() string     { return "data" }
func (d bData) String() string { return "DATA " + d.key().String() }
func (d bData) key() msgKey    { return msgKey{d.Group, d.Origin, d.Seq} }
func (bAck) Kind() string      { return "ack" }
func (a bAck) String() string  { return "ACK " + msgKey{a.Group, a.Origin, a.Seq}.String() }

// basicRetry is the tag of a multicast's retransmission timer.
type basicRetry struct{ key msgKey }

func (basicRetry) Kind() string { return "rto" }

// NewBasic builds basic multicast processes; zero fields take DefaultBasic's.
func NewBasic(cfg BasicConfig) func(proc.ID, int) proc.Process {
	if cfg.RTO <= 0 {
		cfg.RTO = DefaultBasic.RTO
	}
	if cfg.Retries <= 0 {
		cfg.Retries = DefaultBasic.Retries
	}
	return func(_ proc.ID, n int) proc.Process {
		return &basic{cfg: cfg, groups: Groups(n), seq: counters{}, delivered: seen{}, pending: map[msgKey]*basicPending{}}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "basic",
		Summary: "B-multicast: a copy to every member, acknowledged (N−1 copies + N−1 acks; no agreement, no order)",
		Source:  "Coulouris et al. (B-multicast)",
		Assumes: proc.Assumptions{Failures: "crash-stop"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": 2 * (N - 1),
				"latency_msgs":           1,
			}
		},
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies and N − 1 acknowledgements: the ack implosion at the sender",
		},
		New:    NewBasic(DefaultBasic),
		Breaks: []string{"mc-agreement", "fifo-order", "causal-order", "total-order"},
		Messages: []proc.Message{
			bData{}, bAck{},
		},
	})
}

func (b *basic) Start(proc.Env) {}

func (b *basic) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		b.multicast(env, m)
	}
}

func (b *basic) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case bData:
		b.onData(env, from, m)
	case bAck:
		b.onAck(env, from, m)
	}
}

func (b *basic) Timeout(env proc.Env, tag any) {
	if t, ok := tag.(basicRetry); ok {
		b.retry(env, t.key)
	}
}

// multicast B-multicasts: a copy to every other member, and delivery at
// once if the sender is a member.
func (b *basic) multicast(env proc.Env, in Multicast) {
	g, ok := b.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, b.seq.next(g.Name), in.Body)
	d := bData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Body: in.Body}
	if g.Has(env.Self()) {
		b.delivered.Add(k)
		deliver(env, k, in.Body)
	}
	p := &basicPending{data: d}
	g.others(env.Self(), func(q proc.ID) {
		env.Send(q, d)
		p.unacked = append(p.unacked, q)
	})
	if len(p.unacked) > 0 {
		p.timer = env.SetTimer(b.cfg.RTO, basicRetry{k})
		b.pending[k] = p
	}
}

// onData B-delivers the first copy and acknowledges every copy.
func (b *basic) onData(env proc.Env, from proc.ID, d bData) {
	if g, ok := b.groups.lookup(d.Group); !ok || !g.Has(env.Self()) || d.Origin != from {
		return // not a message of this run
	}
	env.Send(from, bAck{Group: d.Group, Origin: d.Origin, Seq: d.Seq})
	if k := d.key(); b.delivered.Add(k) {
		deliver(env, k, d.Body)
	}
}

func (b *basic) onAck(env proc.Env, from proc.ID, a bAck) {
	k := msgKey{a.Group, a.Origin, a.Seq}
	p := b.pending[k]
	if p == nil {
		return
	}
	for i, q := range p.unacked {
		if q == from {
			p.unacked = append(p.unacked[:i], p.unacked[i+1:]...)
			break
		}
	}
	if len(p.unacked) == 0 {
		env.CancelTimer(p.timer)
		delete(b.pending, k)
	}
}

// retry sends the message again to the members that have not acknowledged
// it, or gives them up after Retries attempts.
func (b *basic) retry(env proc.Env, k msgKey) {
	p := b.pending[k]
	if p == nil {
		return
	}
	if p.tries >= b.cfg.Retries {
		delete(b.pending, k)
		return
	}
	p.tries++
	for _, q := range p.unacked {
		env.Send(q, p.data)
	}
	p.timer = env.SetTimer(b.cfg.RTO, basicRetry{k})
}
