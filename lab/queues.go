package lab

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// QueueClients are the workload of the replicated queues
// (consensus.Queues): Producers put to one of Queues queues every Every,
// keeping up to Window puts unacknowledged and resending one unanswered
// for Retry, with the same number, to a random server, until Stop.
// Consumers get from a queue with visibility Vis (one message at a time),
// work on it for Hold and ack it — or, one time in ReleaseEvery, release
// it, and one time in TxEvery ack it and put a message derived from it
// in one transaction (QueueTx) — provided the lease is still valid by their reckoning (Valid from
// when they sent the get); else they drop it and let it expire. An
// operation unanswered for Retry goes again, with the same number, to a
// random server, which the consumer keeps asking from then on. The
// consumers go on after Stop, draining the queues, until the run ends.
type QueueClients struct {
	Producers, Consumers, Queues, Window int
	ReleaseEvery, TxEvery                int
	Every, Hold, Vis, Think, Retry, Stop time.Duration

	ps []queueProducer
	cs []queueConsumer
}

type queueProducer struct {
	origin  uint64
	seq     uint64
	pending map[uint64]bool
}

type queueConsumer struct {
	origin uint64
	node   proc.ID // the server it asks, until one goes unanswered
	seq    uint64  // the operation under way
	sent   time.Duration
	op     proc.Input
	done   bool // its answer came
}

// DefaultQueueClients: 2 producers and 3 consumers on 2 queues, a put
// every 2 ms each, leases of 100 ms held 5 ms, for a second.
func DefaultQueueClients() sim.Workload {
	return &QueueClients{Producers: 2, Consumers: 3, Queues: 2, Window: 4, ReleaseEvery: 10, TxEvery: 10,
		Every: 2 * time.Millisecond, Hold: 5 * time.Millisecond, Vis: 100 * time.Millisecond,
		Think: 2 * time.Millisecond, Retry: 50 * time.Millisecond, Stop: time.Second}
}

func (w *QueueClients) Init(c sim.Control) {
	w.ps = make([]queueProducer, w.Producers)
	for i := range w.ps {
		p := &w.ps[i]
		p.origin, p.pending = c.Rand().Uint64()|1, map[uint64]bool{}
		c.After(time.Duration(c.Rand().Int64N(int64(w.Every)+1)), func() { w.tick(c, p) })
	}
	w.cs = make([]queueConsumer, w.Consumers)
	for i := range w.cs {
		k := &w.cs[i]
		k.origin, k.node = c.Rand().Uint64()|1, w.server(c)
		c.After(time.Duration(c.Rand().Int64N(int64(w.Think)+1)), func() { w.get(c, k) })
	}
}

func (w *QueueClients) server(c sim.Control) proc.ID { return proc.ID(c.Rand().IntN(c.N())) }

func (w *QueueClients) queue(c sim.Control) string {
	return "q" + strconv.Itoa(c.Rand().IntN(w.Queues))
}

func (w *QueueClients) tick(c sim.Control, p *queueProducer) {
	if c.Now() >= w.Stop {
		return
	}
	if len(p.pending) < w.Window {
		p.seq++
		m := consensus.QueuePut{Queue: w.queue(c), Origin: p.origin, Seq: p.seq, Body: []byte(fmt.Sprintf("%x/%d", p.origin&0xffff, p.seq))}
		p.pending[m.Seq] = true
		w.put(c, p, m)
	}
	c.After(w.Every, func() { w.tick(c, p) })
}

func (w *QueueClients) put(c sim.Control, p *queueProducer, m consensus.QueuePut) {
	c.Schedule(0, w.server(c), m)
	c.After(w.Retry, func() {
		if p.pending[m.Seq] && c.Now() < w.Stop+10*w.Retry {
			w.put(c, p, m)
		}
	})
}

// get starts consumer k's next get.
func (w *QueueClients) get(c sim.Control, k *queueConsumer) {
	k.seq++
	k.op, k.sent, k.done = consensus.QueueGet{Queue: w.queue(c), Origin: k.origin, Seq: k.seq, Visibility: w.Vis}, c.Now(), false
	w.send(c, k, k.seq)
}

// send gives consumer k's operation seq to a server, and again to another
// while it goes unanswered.
func (w *QueueClients) send(c sim.Control, k *queueConsumer, seq uint64) {
	c.Schedule(0, k.node, k.op)
	c.After(w.Retry, func() {
		if k.seq == seq && !k.done {
			k.node = w.server(c)
			w.send(c, k, seq)
		}
	})
}

// finish starts consumer k's work on what it got, or its next get.
func (w *QueueClients) finish(c sim.Control, k *queueConsumer, got consensus.QueueGot) {
	if len(got.Messages) == 0 {
		c.After(w.Think, func() { w.get(c, k) })
		return
	}
	until, ids := k.sent+got.Valid, []uint64{got.Messages[0].ID}
	c.After(w.Hold, func() {
		if c.Now() >= until {
			w.get(c, k) // too late: the message goes to another consumer
			return
		}
		k.seq++
		ack := consensus.QueueAck{Queue: got.Queue, Origin: k.origin, Seq: k.seq, IDs: ids, Token: got.Token}
		switch x := c.Rand().IntN(100); {
		case w.ReleaseEvery > 0 && x%w.ReleaseEvery == 0:
			k.op = consensus.QueueRelease(ack)
		case w.TxEvery > 0 && x%w.TxEvery == 1:
			// Consume and produce at once: ack it and put its successor
			// on another queue, in one transaction.
			k.op = consensus.QueueTx{Origin: k.origin, Seq: k.seq,
				Acks: []consensus.QueueRef{{Queue: got.Queue, ID: ids[0], Token: got.Token}},
				Puts: []consensus.QueuePut{{Queue: w.queue(c), Body: append([]byte("tx:"), got.Messages[0].Body...)}}}
		default:
			k.op = ack
		}
		k.done = false
		w.send(c, k, k.seq)
	})
}

func (w *QueueClients) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case consensus.QueuePutDone:
		for i := range w.ps {
			if w.ps[i].origin == o.Origin {
				delete(w.ps[i].pending, o.Seq)
			}
		}
	case consensus.QueueRefused:
		for i := range w.ps {
			if w.ps[i].origin == o.Origin {
				delete(w.ps[i].pending, o.Seq)
			}
		}
		w.answered(c, o.Origin, o.Seq, nil)
	case consensus.QueueGot:
		w.answered(c, o.Origin, o.Seq, &o)
	case consensus.QueueAcked:
		w.answered(c, o.Origin, o.Seq, nil)
	case consensus.QueueTxDone:
		w.answered(c, o.Origin, o.Seq, nil)
	}
}

// answered takes the first answer to a consumer's operation.
func (w *QueueClients) answered(c sim.Control, origin, seq uint64, got *consensus.QueueGot) {
	for i := range w.cs {
		k := &w.cs[i]
		if k.origin != origin || k.seq != seq || k.done {
			continue
		}
		k.done = true
		if got != nil {
			w.finish(c, k, *got)
		} else {
			c.After(w.Think, func() { w.get(c, k) })
		}
	}
}
