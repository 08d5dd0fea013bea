package multicast

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// footprint counts what a process keeps per message — delivered and
// numbered sets, hold-back queues, orders, proposals being collected,
// retransmission buffers: everything that would grow with the number of
// messages a group has carried if it were not trimmed.
func footprint(t testing.TB, p proc.Process) int {
	n := 0
	switch p := p.(type) {
	case *basic:
		n = p.delivered.size() + len(p.pending)
	case *reliable:
		n = p.received.size()
	case *reliableNack:
		for _, b := range p.buffer {
			n += cap(b.bodies) + len(b.has)
		}
		for _, s := range p.sources {
			n += 1 + len(s.held)
		}
	case *fifo:
		n = len(p.R) + len(p.queue)
		for _, q := range p.queue {
			n += len(q)
		}
	case *causal:
		n = cap(p.queue)
	case *sequencer:
		n = p.done.size() + p.numbered.size() + len(p.held) + cap(p.waiting) + len(p.orders)
		for _, o := range p.orders {
			n += len(o)
		}
	case *isis:
		n = p.done.size() + len(p.pending) + len(p.queue)
		for _, q := range p.queue {
			n += cap(q)
		}
	case *lamportTO:
		for _, q := range p.queue {
			n += cap(q)
		}
	default:
		t.Fatalf("no footprint for %T", p)
	}
	return n
}

// stream has every process multicast, one message after another with
// exponential think times of mean Think, until Total multicasts have been
// asked for; a quarter go to g1 (refused where a process is not in it) and
// a quarter to g2. It schedules each input only when the previous one of
// its process has been answered, so the event queue stays small however
// long the run.
type stream struct {
	Total int
	Think time.Duration
	asked int
}

func (s *stream) Init(c sim.Control) {
	for p := range c.N() {
		s.next(c, proc.ID(p))
	}
}

func (s *stream) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o.(type) {
	case Sent, Refused:
		s.next(c, node)
	}
}

func (s *stream) next(c sim.Control, p proc.ID) {
	if s.asked == s.Total {
		return
	}
	g := []string{"all", "all", "g1", "g2"}[s.asked%4]
	s.asked++
	think := sim.Exponential{MeanD: s.Think}.Sample(c.Rand())
	c.Schedule(think, p, Multicast{Group: g, Body: fmt.Sprintf("m%d", s.asked)})
}

// longRun is a run of Total multicasts among three processes, with the
// processes kept so that their state can be measured as the run goes.
type longRun struct {
	algo    proc.Algorithm
	new     func(proc.ID, int) proc.Process // nil: the algorithm's own
	network sim.Network
	faults  []sim.Fault
	total   int
	seed    uint64

	procs     []proc.Process
	sent      map[msgKey][]proc.ID // members of each message, crossed off as they deliver
	delivered int
	peak      []int // the largest footprint seen, per process
	at        []int // how many messages had been sent when it was seen
}

// run runs it, measuring every process's footprint after every 97th
// delivery, and fails the test if a message is delivered twice or by a
// non-member.
func (l *longRun) run(t *testing.T) {
	t.Helper()
	const n = 3
	mk := l.algo.New
	if l.new != nil {
		mk = l.new
	}
	l.procs = make([]proc.Process, n)
	l.peak, l.at = make([]int, n), make([]int, n)
	l.sent = map[msgKey][]proc.ID{}
	nsent := 0
	observe := func(_ time.Duration, node proc.ID, o proc.Output) {
		switch o := o.(type) {
		case Sent:
			nsent++
			l.sent[msgKey{o.Group, o.Origin, o.Seq}] = o.Members
		case Delivered:
			k := msgKey{o.Group, o.Origin, o.Seq}
			left := l.sent[k]
			i := -1
			for j, p := range left {
				if p == node {
					i = j
				}
			}
			if i < 0 {
				t.Fatalf("%s: %s delivered %v twice, or not being a member", l.algo.Name, node, k)
			}
			if left = append(left[:i], left[i+1:]...); len(left) == 0 {
				delete(l.sent, k) // delivered everywhere: forget it, or the test itself grows
			} else {
				l.sent[k] = left
			}
			l.delivered++
			if l.delivered%97 == 0 {
				for p, x := range l.procs {
					if x == nil {
						continue
					}
					if f := footprint(t, x); f > l.peak[p] {
						l.peak[p], l.at[p] = f, nsent
					}
				}
			}
		}
	}
	nw := l.network
	if nw.Latency == nil {
		nw.Latency = sim.Uniform{Min: 500 * time.Microsecond, Max: 3 * time.Millisecond}
	}
	cfg := sim.Config{Nodes: n, Seed: l.seed, Network: nw, Faults: l.faults, Observe: observe,
		Workload: &stream{Total: l.total, Think: 300 * time.Microsecond},
		New: func(id proc.ID, n int) proc.Process {
			p := mk(id, n)
			l.procs[id] = p
			return p
		}}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
}

// The white-box test of the family's memory: 100,000 multicasts through a
// three-process group, one every 100 µs on average, and what each process
// keeps per message never exceeds a small bound — set by the messages in
// flight, not by the messages carried. Every message is delivered by every
// member, once. (Under the race detector the runs are 10,000 multicasts
// long: the bound is the same.)
func TestLongRunsKeepBoundedState(t *testing.T) {
	total := 100_000
	if raceEnabled || testing.Short() {
		total = 10_000
	}
	const bound = 1000 // entries; one per message carried would be 10⁵
	for _, a := range Algorithms {
		t.Run(a.Name, func(t *testing.T) {
			l := &longRun{algo: a, total: total, seed: 1}
			switch {
			case a.Assumes.FIFO:
				l.network.FIFO = true
			case !a.Assumes.Reliable:
				l.network.Loss, l.network.Duplicate, l.network.Reorder = 0.05, 0.02, 0.1
			default:
				l.network.Reorder = 0.1
			}
			l.run(t)
			if len(l.sent) != 0 {
				t.Errorf("%d messages not delivered by every member", len(l.sent))
			}
			for p, f := range l.peak {
				if f == 0 || f > bound {
					t.Errorf("p%d kept %d entries (after %d multicasts), want 1..%d", p, f, l.at[p], bound)
				}
			}
			t.Logf("%d deliveries; largest footprint per process %v", l.delivered, l.peak)
		})
	}
}

// Messages from a peer that name groups or origins the run does not have
// leave no state behind: a peer cannot make a process grow by making up
// identities.
func TestMadeUpIdentitiesLeaveNoState(t *testing.T) {
	var bad []proc.Message
	for i := range 200 {
		g, o, seq := fmt.Sprintf("x%d", i), proc.ID(50+i), uint64(i+1)
		v := []uint64{seq, seq, seq}
		bad = append(bad,
			bData{Group: g, Origin: 1, Seq: seq}, rData{Group: g, Origin: 1, Seq: seq}, rData{Group: "all", Origin: o, Seq: seq},
			nData{Group: g, Origin: 1, Seq: seq}, nData{Group: "all", Origin: o, Seq: seq}, nSession{Group: g, Origin: 1, Last: seq},
			nRepair{Group: "all", Origin: o, Seq: seq}, nStable{Group: g, Origin: 0, Upto: seq}, nNack{Group: g, Origin: 0, Missing: []uint64{seq}},
			fData{Group: g, Origin: 1, S: seq}, fData{Group: "all", Origin: o, S: seq},
			cData{Group: g, Origin: 1, V: v}, sData{Group: g, Origin: 1, Seq: seq}, sOrder{Group: g, Origin: 1, Seq: seq},
			iData{Group: g, Origin: 1, Seq: seq}, iData{Group: "all", Origin: o, Seq: seq}, iAgreed{Group: g, Origin: 1, Seq: seq},
			lData{Group: g, Origin: 1, Seq: seq, T: seq})
	}
	for _, a := range Algorithms {
		p := a.New(0, 3)
		env := &stubEnv{self: 0, n: 3}
		p.Start(env)
		fresh := footprint(t, p)
		for _, m := range bad {
			p.Receive(env, 1, m)
		}
		if got := footprint(t, p); got != fresh {
			t.Errorf("%s: footprint %d after made-up messages, %d fresh", a.Name, got, fresh)
		}
	}
}
