package lab

import (
	"strconv"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// LockClients are the workload of the raft-lock algorithm: Clients
// clients of the lock service, each talking to one server (another when
// that one stops answering). A client opens a session of TTL and keeps it
// alive every TTL/4; then, until Stop, it asks for one of Locks locks,
// holds it for Hold once granted — no longer than its reckoning allows
// (consensus.Locks: the last renewal's send time plus its validity) —
// releases it, thinks for Think and asks again. Operations unanswered for
// Retry are sent again, with the same number, to another server. A client
// whose session is gone opens a new one. At Stop each client closes its
// session.
type LockClients struct {
	Clients, Locks                int
	TTL, Hold, Think, Retry, Stop time.Duration
	cs                            []lockClient
}

type lockClient struct {
	id     int
	node   proc.ID
	tag    uint64 // of the open under way; 0: none
	sess   uint64 // 0: none
	seq    uint64 // of the last operation sent
	lock   string // asked for or held
	state  lockClientState
	valid  time.Duration            // the session may be counted on until then
	kaSent map[uint64]time.Duration // keepalives under way: seq → sent
	kaSeq  uint64
	heard  time.Duration // when the server last answered a keepalive
	opened time.Duration // when the open under way was first sent
	token  uint64        // of the last grant to this client
}

type lockClientState uint8

const (
	lcIdle lockClientState = iota
	lcOpening
	lcAcquiring
	lcHolding
	lcReleasing
)

// DefaultLockClients: 5 clients on 2 locks, sessions of 300 ms, locks held
// for 5 ms, 2 ms of thought, retries after 50 ms, for a second.
func DefaultLockClients() sim.Workload {
	return &LockClients{Clients: 5, Locks: 2, TTL: 300 * time.Millisecond, Hold: 5 * time.Millisecond,
		Think: 2 * time.Millisecond, Retry: 50 * time.Millisecond, Stop: time.Second}
}

func (w *LockClients) Init(c sim.Control) {
	w.cs = make([]lockClient, w.Clients)
	for i := range w.cs {
		cl := &w.cs[i]
		cl.id, cl.node, cl.kaSent = i, proc.ID(c.Rand().IntN(c.N())), map[uint64]time.Duration{}
		c.After(time.Duration(c.Rand().Int64N(int64(w.Think)+1)), func() { w.open(c, cl) })
	}
}

func (w *LockClients) running(c sim.Control) bool { return c.Now() < w.Stop }

// open opens a session; until it is open, it asks again every Retry.
func (w *LockClients) open(c sim.Control, cl *lockClient) {
	if !w.running(c) {
		return
	}
	cl.state, cl.tag, cl.sess = lcOpening, c.Rand().Uint64()|1, 0
	sent, tag := c.Now(), cl.tag
	var ask func()
	ask = func() {
		if cl.state != lcOpening || cl.tag != tag || !w.running(c) {
			return
		}
		c.Schedule(0, cl.node, consensus.OpenSession{Tag: tag, TTL: w.TTL})
		c.After(w.Retry, func() {
			if cl.state == lcOpening && cl.tag == tag {
				cl.node = proc.ID(c.Rand().IntN(c.N()))
				ask()
			}
		})
	}
	// The session counts from the first request: whichever copy the log
	// took was sent at or after it.
	cl.opened = sent
	ask()
}

// keepalive renews cl's session every TTL/4 while it is open.
func (w *LockClients) keepalive(c sim.Control, cl *lockClient, sess uint64) {
	if cl.sess != sess {
		return
	}
	if c.Now()-cl.heard > w.TTL/2 {
		cl.node = proc.ID(c.Rand().IntN(c.N())) // no answers: try another server
		cl.heard = c.Now()
	}
	cl.kaSeq++
	cl.kaSent[cl.kaSeq] = c.Now()
	c.Schedule(0, cl.node, consensus.KeepAlive{Session: sess, Seq: cl.kaSeq})
	for seq, at := range cl.kaSent { // forget keepalives that can no longer matter
		if c.Now()-at > w.TTL {
			delete(cl.kaSent, seq)
		}
	}
	c.After(w.TTL/4, func() { w.keepalive(c, cl, sess) })
}

// send sends cl's operation op until the state it was sent in is left.
func (w *LockClients) send(c sim.Control, cl *lockClient, in proc.Input) {
	state, seq := cl.state, cl.seq
	c.Schedule(0, cl.node, in)
	c.After(w.Retry, func() {
		if cl.state == state && cl.seq == seq && cl.sess != 0 && c.Now() < w.Stop+10*w.Retry {
			cl.node = proc.ID(c.Rand().IntN(c.N()))
			w.send(c, cl, in)
		}
	})
}

func (w *LockClients) acquire(c sim.Control, cl *lockClient) {
	if cl.sess == 0 || cl.state != lcIdle {
		return
	}
	if !w.running(c) {
		cl.seq++
		c.Schedule(0, cl.node, consensus.CloseSession{Session: cl.sess, Seq: cl.seq})
		cl.sess = 0
		return
	}
	cl.state, cl.seq = lcAcquiring, cl.seq+1
	cl.lock = "l" + strconv.Itoa(c.Rand().IntN(w.Locks))
	w.send(c, cl, consensus.Acquire{Session: cl.sess, Seq: cl.seq, Lock: cl.lock})
}

func (w *LockClients) release(c sim.Control, cl *lockClient) {
	if cl.state != lcHolding || cl.sess == 0 {
		return
	}
	cl.state, cl.seq = lcReleasing, cl.seq+1
	w.send(c, cl, consensus.Release{Session: cl.sess, Seq: cl.seq, Lock: cl.lock})
}

// lost: cl's session is over; it starts again with a new one.
func (w *LockClients) lost(c sim.Control, cl *lockClient) {
	cl.sess, cl.state = 0, lcIdle
	c.After(w.Think, func() {
		if cl.sess == 0 && cl.state == lcIdle {
			w.open(c, cl)
		}
	})
}

func (w *LockClients) Observe(c sim.Control, node proc.ID, o proc.Output) {
	for i := range w.cs {
		cl := &w.cs[i]
		switch o := o.(type) {
		case consensus.Opened:
			if cl.state == lcOpening && o.Tag == cl.tag {
				cl.sess, cl.state, cl.tag = o.Session, lcIdle, 0
				cl.valid, cl.heard = cl.opened+o.Valid, c.Now()
				w.keepalive(c, cl, o.Session)
				w.acquire(c, cl)
			}
		case consensus.KeptAlive:
			if o.Session != cl.sess || cl.sess == 0 {
				continue
			}
			cl.heard = c.Now()
			switch {
			case o.OK:
				if at, ok := cl.kaSent[o.Seq]; ok {
					cl.valid = max(cl.valid, at+o.Valid)
				}
			case o.Gone:
				w.lost(c, cl)
			}
		case consensus.Granted:
			// Every server outputs every grant, and one catching up
			// outputs old ones: only a token above the last counts.
			if cl.state == lcAcquiring && o.Session == cl.sess && o.Lock == cl.lock && o.Token > cl.token {
				cl.state, cl.token = lcHolding, o.Token
				hold := min(w.Hold, max(cl.valid-c.Now(), 0))
				c.After(hold, func() { w.release(c, cl) })
			}
		case consensus.Released:
			if cl.state == lcReleasing && o.Session == cl.sess && o.Lock == cl.lock && o.Token == cl.token {
				cl.state = lcIdle
				c.After(w.Think, func() { w.acquire(c, cl) })
			}
		case consensus.Closed:
			if o.Session == cl.sess && cl.sess != 0 {
				w.lost(c, cl)
			}
		case consensus.LockRefused: // "session is not open", or worse
			if o.Session == cl.sess && cl.sess != 0 {
				w.lost(c, cl)
			}
		}
	}
}
