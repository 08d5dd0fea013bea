package lab

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// GroupSenders are the workload of the raft-group algorithm: Senders
// senders, each with its own origin id, multicast to one of Groups groups
// through a server, keeping up to Window messages unacknowledged; a
// message unacknowledged for Retry goes again, with the same number, to
// a random server. They send until Stop and resend until Stop + 10·Retry.
type GroupSenders struct {
	Senders, Groups, Window int
	Every, Retry, Stop      time.Duration
	ss                      []groupSender
}

type groupSender struct {
	origin  uint64
	node    proc.ID
	seq     uint64
	pending map[uint64]consensus.Send
}

// DefaultGroupSenders: 3 senders on 2 groups, a message every 2 ms each,
// up to 4 unacknowledged, retries after 50 ms, for a second.
func DefaultGroupSenders() sim.Workload {
	return &GroupSenders{Senders: 3, Groups: 2, Window: 4, Every: 2 * time.Millisecond, Retry: 50 * time.Millisecond, Stop: time.Second}
}

func (w *GroupSenders) Init(c sim.Control) {
	w.ss = make([]groupSender, w.Senders)
	for i := range w.ss {
		s := &w.ss[i]
		s.origin, s.node, s.pending = c.Rand().Uint64()|1, proc.ID(c.Rand().IntN(c.N())), map[uint64]consensus.Send{}
		c.After(time.Duration(c.Rand().Int64N(int64(w.Every)+1)), func() { w.tick(c, s) })
	}
}

// tick sends s's next message if its window has room.
func (w *GroupSenders) tick(c sim.Control, s *groupSender) {
	if c.Now() >= w.Stop {
		return
	}
	if len(s.pending) < w.Window {
		s.seq++
		m := consensus.Send{Group: "g" + strconv.Itoa(c.Rand().IntN(w.Groups)), Origin: s.origin, Seq: s.seq,
			Body: []byte(fmt.Sprintf("%x/%d", s.origin&0xffff, s.seq))}
		s.pending[m.Seq] = m
		w.send(c, s, m)
	}
	c.After(w.Every, func() { w.tick(c, s) })
}

func (w *GroupSenders) send(c sim.Control, s *groupSender, m consensus.Send) {
	c.Schedule(0, s.node, m)
	c.After(w.Retry, func() {
		if _, ok := s.pending[m.Seq]; ok && c.Now() < w.Stop+10*w.Retry {
			s.node = proc.ID(c.Rand().IntN(c.N())) // no answer: try another
			w.send(c, s, m)
		}
	})
}

func (w *GroupSenders) Observe(c sim.Control, node proc.ID, o proc.Output) {
	if acked, ok := o.(consensus.Acked); ok {
		for _, a := range acked.Sent {
			for i := range w.ss {
				if w.ss[i].origin == a.Origin {
					delete(w.ss[i].pending, a.Seq)
				}
			}
		}
	}
}
