package explore

import (
	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/trace"
)

// Checking safety incrementally. A safety checker reads a whole trace,
// and a state's trace is its parent's and one step's events; the parent's
// was judged ok. For the checkers below the explorer knows which events
// can turn an ok trace into a violated one, so it runs a checker on a new
// state only when a step since the last state judged on the path brought
// such an event (it is then run on the whole trace, as before, and gives
// the same verdict and counterexample). A checker it does not know is run
// on every new state.
//
//   - ME1 and ME3: an Enter output, and only one that can break them.
//     ME1's violation is an enter while another is in the critical
//     section; ME3's, a process entering while (or before) one whose
//     request happened before its own has not; an acquire, an exit or a
//     crash only ever closes or voids a request, and a new request cannot
//     have happened before an earlier one. The run follows the requests
//     as the checkers pair them (mutexWatch): who is inside, whose
//     request is open, and, by vector clocks restricted to acquires
//     (Mattern 1989; Fidge 1988) kept as the run goes, which acquires
//     each process has heard of. An enter marks ME1 only if someone is
//     inside, and ME3 only if another process's open request happened
//     before the entering one's: most enters mark neither, and ME3 no
//     longer rebuilds happened-before for them.
//   - commit-consistency: a committed output after an aborted one, or an
//     aborted output after a committed one (the run keeps which it saw).
//   - deadlock-detected and or-deadlock-detected: a deadlock (a cycle of
//     the AND model's wait-for graph, a knot of the OR model's) standing
//     before or after some event of the steps (check.DeadlockWatch keeps
//     the graph); deadlock-no-phantom and or-deadlock-no-phantom: a
//     "deadlock" output. A deadlock late past the bound is late while it
//     stands, and the bound only grows with the trace, so a trace with no
//     deadlock since the last judgement is judged as it was then; one
//     that ends in a deadlock is judged every time (it is then unknown,
//     or late).
//   - integrity and no-duplicates are kept exactly, event by event, in a
//     table of the run's messages by id (sent, from, to, type, receipts,
//     duplicates): a mismatch marks the checker.
type watcher struct {
	name    string
	msgs    uint8 // 1: integrity, 2: no-duplicates
	mutex   uint8 // 1: ME1, 2: ME3
	decides bool  // commit-consistency
	dl      uint8 // 1: (or-)deadlock-detected, 2: (or-)deadlock-no-phantom
	dlModel int   // of dl: 0, the AND model; 1, the OR model
	always  bool  // not known: run on every new state
}

func watchersOf(names []string) []watcher {
	ws := make([]watcher, len(names))
	for i, name := range names {
		w := watcher{name: name}
		switch name {
		case "ME1":
			w.mutex = 1
		case "ME3":
			w.mutex = 2
		case "commit-consistency":
			w.decides = true
		case "integrity":
			w.msgs = 1
		case "no-duplicates":
			w.msgs = 2
		case "deadlock-detected":
			w.dl = 1
		case "deadlock-no-phantom":
			w.dl = 2
		case "or-deadlock-detected":
			w.dl, w.dlModel = 1, 1
		case "or-deadlock-no-phantom":
			w.dl, w.dlModel = 2, 1
		default:
			w.always = true
		}
		ws[i] = w
	}
	return ws
}

// msgRec is what a run's trace says of one message so far.
type msgRec struct {
	from, to    int32
	typ         string
	sent        bool
	recvs, dups int32
}

// maxWatchedMsgs bounds the message ids kept; past it the message
// checkers are run on every new state.
const maxWatchedMsgs = 1 << 20

// watch is a run's part of incremental checking: the checkers (by index
// in Config.Safety) that events since the last judged state may have
// broken, the message table, and the requests for mutual exclusion.
type watch struct {
	dirty uint64
	msgs  []msgRec
	mx    mutexWatch
	// decided: 1, a committed output seen; 2, an aborted one.
	decided uint8
	// dl follows the wait-for graph of the AND model (0) and the OR
	// model (1), where dlOn.
	dl   [2]check.DeadlockWatch
	dlOn [2]bool
}

func (w *watch) clone() watch {
	var c watch
	w.copyTo(&c)
	return c
}

// copyTo makes *c a copy of w, in c's storage.
func (w *watch) copyTo(c *watch) {
	c.dirty, c.decided = w.dirty, w.decided
	c.msgs = append(c.msgs[:0], w.msgs...)
	w.mx.copyTo(&c.mx)
	for m := range w.dl {
		if c.dlOn[m] = w.dlOn[m]; w.dlOn[m] {
			w.dl[m].CopyTo(&c.dl[m])
		}
	}
}

// observe takes a step's events.
func (w *watch) observe(ws []watcher, evs []trace.Event) {
	var mutex, msgs uint8
	for j := range ws {
		mutex |= ws[j].mutex
		msgs |= ws[j].msgs
	}
	var dlBad [2]uint8 // by model: 1, a deadlock stood; 2, a declaration
	for m := range w.dl {
		if w.dlOn[m] && w.dl[m].Standing() {
			dlBad[m] |= 1
		}
	}
	for i := range evs {
		e := &evs[i]
		for m := range w.dl {
			if !w.dlOn[m] {
				continue
			}
			if w.dl[m].Observe(e) {
				dlBad[m] |= 2
			}
			if w.dl[m].Standing() {
				dlBad[m] |= 1
			}
		}
		if mutex != 0 {
			if bad := w.mx.observe(e, mutex); bad != 0 {
				for j := range ws {
					if ws[j].mutex&bad != 0 {
						w.dirty |= 1 << uint(j)
					}
				}
			}
		}
		if e.Kind == trace.Output {
			var d uint8
			switch e.Type {
			case "committed":
				d = 1
			case "aborted":
				d = 2
			}
			w.decided |= d
			split := d != 0 && (w.decided == 3 || e.Service != "")
			for j := range ws {
				if ws[j].decides && split {
					w.dirty |= 1 << uint(j)
				}
			}
			continue
		}
		var bad uint8 // 1: integrity, 2: no-duplicates
		switch e.Kind {
		case trace.Send, trace.Recv, trace.Drop, trace.Dup:
			if msgs == 0 {
				break // no one reads the table: it stays empty
			}
			if e.Msg >= maxWatchedMsgs {
				bad = 3
				break
			}
			for uint64(len(w.msgs)) <= e.Msg {
				w.msgs = append(w.msgs, msgRec{})
			}
			m := &w.msgs[e.Msg]
			switch e.Kind {
			case trace.Send:
				if m.sent {
					bad |= 1
					break
				}
				m.sent, m.from, m.to, m.typ = true, e.Node, e.Peer, e.Type
			default:
				from, to := e.Peer, e.Node
				if e.Kind == trace.Dup {
					from, to = e.Node, e.Peer
				}
				if !m.sent || m.from != from || m.to != to || (e.Kind == trace.Recv && m.typ != e.Type) {
					bad |= 1
				}
				switch e.Kind {
				case trace.Dup:
					m.dups++
				case trace.Recv:
					if m.recvs++; m.recvs > 1+m.dups {
						bad |= 2
					}
				}
			}
		}
		if bad != 0 {
			for j := range ws {
				if ws[j].msgs&bad != 0 {
					w.dirty |= 1 << uint(j)
				}
			}
		}
	}
	for m := range w.dl {
		if w.dlOn[m] && !w.dl[m].Sure() {
			dlBad[m] = 3
		}
	}
	for j := range ws {
		if ws[j].dl&dlBad[ws[j].dlModel] != 0 {
			w.dirty |= 1 << uint(j)
		}
	}
}

// due returns the checkers to run on a new state, and marks them judged.
func (w *watch) due(ws []watcher, names []string, buf []string) []string {
	buf = buf[:0]
	for j, x := range ws {
		if x.always || w.dirty&(1<<uint(j)) != 0 || j >= 64 {
			buf = append(buf, names[j])
		}
	}
	w.dirty = 0
	return buf
}

// mutexWatch follows a run's requests for the critical section as
// check.requests pairs them, to tell which enters can break ME1 and ME3.
// Per process: its open request (the last acquire or enter not closed by
// an exit or a crash), and know, a vector clock over acquires only:
// know[p][q] is how many of q's acquires happened before p's last event
// (a process's history known to p is a prefix of it, so counting its
// acquires is as good as counting its events). A message carries its
// sender's row, taken at its first send; a receipt merges it.
type mutexWatch struct {
	n      int     // processes; 0: not started
	know   []int32 // n×n: row p is process p's
	sent   []int32 // by message id, n each: the sender's row at the send
	open   []openRequest
	inside int // requests entered, never exited, and no longer open
	broken bool
}

type openRequest struct {
	acquire int32   // which of its process's acquires (from 1); 0: none (entered without one)
	entered bool    // entered, not exited
	knew    []int32 // the process's row at the acquire
	live    bool
}

func (m *mutexWatch) copyTo(c *mutexWatch) {
	c.n, c.inside, c.broken = m.n, m.inside, m.broken
	c.know = append(c.know[:0], m.know...)
	c.sent = append(c.sent[:0], m.sent...)
	if len(c.open) != len(m.open) {
		c.open = make([]openRequest, len(m.open))
	}
	for i, o := range m.open {
		knew := append(c.open[i].knew[:0], o.knew...)
		c.open[i] = o
		c.open[i].knew = knew
	}
}

func (m *mutexWatch) start(n int) {
	m.n = n
	m.know = make([]int32, n*n)
	m.open = make([]openRequest, n)
}

func (m *mutexWatch) row(p int32) []int32 { return m.know[int(p)*m.n : int(p+1)*m.n] }

// observe takes one event and returns the checkers it may have broken
// (1: ME1, 2: ME3), of those in want. What it does not follow (a trace
// of several services, a message id past maxWatchedMsgs, a watch not
// started) marks every enter, as before.
func (m *mutexWatch) observe(e *trace.Event, want uint8) uint8 {
	if m.broken || e.Service != "" || e.Node < 0 || int(e.Node) >= m.n {
		if e.Kind == trace.Output && e.Type == "enter" {
			return want
		}
		return 0
	}
	p := e.Node
	o := &m.open[p]
	switch {
	case e.Kind == trace.Send:
		if e.Msg >= maxWatchedMsgs {
			m.broken = true
			return 0
		}
		for uint64(len(m.sent)) < (e.Msg+1)*uint64(m.n) {
			m.sent = append(m.sent, -1)
		}
		if s := m.sent[int(e.Msg)*m.n:][:m.n]; s[0] < 0 { // the first send
			copy(s, m.row(p))
		}
	case e.Kind == trace.Recv:
		if uint64(len(m.sent)) >= (e.Msg+1)*uint64(m.n) {
			if s := m.sent[int(e.Msg)*m.n:][:m.n]; s[0] >= 0 {
				r := m.row(p)
				for q := range r {
					r[q] = max(r[q], s[q])
				}
			}
		}
	case e.Kind == trace.Input && e.Type == "acquire":
		if o.live && o.entered {
			m.inside++ // replaced, never exited: inside for good
		}
		r := m.row(p)
		r[p]++
		*o = openRequest{acquire: r[p], knew: append(o.knew[:0], r...), live: true}
	case e.Kind == trace.Output && e.Type == "enter":
		var bad uint8
		inside := m.inside
		for q := range m.open {
			if m.open[q].live && m.open[q].entered {
				inside++
			}
		}
		if inside > 0 {
			bad |= 1
		}
		if !o.live || o.entered {
			if o.live {
				m.inside++
			}
			*o = openRequest{entered: true, live: true, knew: o.knew[:0]}
			return bad & want
		}
		o.entered = true
		if o.acquire > 0 {
			for q := range m.open {
				a := &m.open[q]
				if int32(q) != p && a.live && !a.entered && a.acquire > 0 && o.knew[q] >= a.acquire {
					bad |= 2 // q's request happened before p's, and q is not in yet
				}
			}
		}
		return bad & want
	case e.Kind == trace.Output && e.Type == "exit":
		if o.live && o.entered {
			o.live = false
		}
	case e.Kind.Stops():
		o.live = false
	}
	return 0
}
