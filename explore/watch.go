package explore

import (
	"slices"

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
//   - ME1 and ME3: an Enter output. ME1's violation is an enter while
//     another is in the critical section; ME3's, a process entering while
//     (or before) one whose request happened before its own has not; an
//     acquire, an exit or a crash only ever closes or voids a request,
//     and a new request cannot have happened before an earlier one.
//   - commit-consistency: a committed or aborted output.
//   - integrity and no-duplicates are kept exactly, event by event, in a
//     table of the run's messages by id (sent, from, to, type, receipts,
//     duplicates): a mismatch marks the checker.
type watcher struct {
	name    string
	outputs []string // outputs that may break it
	msgs    uint8    // 1: integrity, 2: no-duplicates
	always  bool     // not known: run on every new state
}

func watchersOf(names []string) []watcher {
	ws := make([]watcher, len(names))
	for i, name := range names {
		w := watcher{name: name}
		switch name {
		case "ME1", "ME3":
			w.outputs = []string{"enter"}
		case "commit-consistency":
			w.outputs = []string{"committed", "aborted"}
		case "integrity":
			w.msgs = 1
		case "no-duplicates":
			w.msgs = 2
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
// broken, and the message table.
type watch struct {
	dirty uint64
	msgs  []msgRec
}

func (w *watch) clone() watch { return watch{dirty: w.dirty, msgs: slices.Clone(w.msgs)} }

// observe takes a step's events.
func (w *watch) observe(ws []watcher, evs []trace.Event) {
	for i := range evs {
		e := &evs[i]
		if e.Kind == trace.Output {
			for j := range ws {
				if slices.Contains(ws[j].outputs, e.Type) {
					w.dirty |= 1 << uint(j)
				}
			}
			continue
		}
		var bad uint8 // 1: integrity, 2: no-duplicates
		switch e.Kind {
		case trace.Send, trace.Recv, trace.Drop, trace.Dup:
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
