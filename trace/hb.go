package trace

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/logical"
)

// HB is the happened-before relation → of a trace (Lamport 1978): a → b if
// a and b are events of the same process and a comes first, if a is the send
// of a message and b a receipt of it, or by transitivity. Only process
// events take part (Kind.IsProcess); Drop and Dup are the network's and are
// related to nothing.
//
// NewHB gives every process event a vector timestamp computed from the
// trace's structure alone (process order and message ids), never from the
// recorded VC fields, so that checkers can judge those. Entry p of an
// event's vector is the number of events of process p that happened before
// it or are it; that makes
//
//	a → b  ⇔  a ≠ b and VC(a)[node(a)] <= VC(b)[node(a)]
//
// a constant-time test. Memory is one word per event per process that has
// events, O(events × active processes): HB is meant for the traces of
// small runs. The processes without an event (in a trace whose processes
// join, every ID below the highest one named) take no room in a vector.
//
// An HB never changes after NewHB and is safe for concurrent use.
type HB struct {
	n         int
	node      []int32  // node of event i; -1 for network events
	col       []int32  // process p's entry in a row; -1 if p has no process event
	cols      []int32  // the process of each entry of a row, ascending
	vc        []uint64 // the entries of event i's vector: vc[i*w : (i+1)*w], w = len(cols)
	send      []int    // for a matched receive, the index of its send; else -1
	history   [][]int  // per process, its events' indexes in order
	unmatched []int    // receives with no earlier send of their message id
}

// NewHB computes the happened-before relation of t. A receive whose message
// id has no earlier send is tolerated: it gets no send edge and is listed by
// Unmatched (judging it is the integrity checker's job). A duplicated message
// has one send and links to every receive of it; a message id sent more than
// once links its receives to the first send. The error, which wraps
// ErrFormat, is for a trace whose events cannot be placed at all: a header
// with no nodes, an index out of sequence, a node out of range or an unknown
// kind.
func NewHB(t *Trace) (*HB, error) {
	n := t.Header.Nodes
	if n < 1 {
		return nil, fmt.Errorf("%w: header names %d nodes, want at least 1", ErrFormat, n)
	}
	h := &HB{
		n:       n,
		node:    make([]int32, len(t.Events)),
		col:     make([]int32, n),
		send:    make([]int, len(t.Events)),
		history: make([][]int, n),
	}
	for p := range h.col {
		h.col[p] = -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Index != i:
			return nil, fmt.Errorf("%w: event %d has index %d", ErrFormat, i, e.Index)
		case e.Kind == 0 || e.Kind > Leave:
			return nil, fmt.Errorf("%w: event %d: unknown kind %d", ErrFormat, i, e.Kind)
		case e.Node < 0 || int(e.Node) >= n:
			return nil, fmt.Errorf("%w: event %d: node %d out of range 0..%d", ErrFormat, i, e.Node, n-1)
		}
		if e.Kind.IsProcess() {
			h.col[e.Node] = 0 // has an entry; numbered below
		}
	}
	for p, c := range h.col {
		if c == 0 {
			h.col[p] = int32(len(h.cols))
			h.cols = append(h.cols, int32(p))
		}
	}
	h.vc = make([]uint64, len(t.Events)*len(h.cols))
	sends := make(map[uint64]int) // message id → index of its first send
	for i := range t.Events {
		e := &t.Events[i]
		h.send[i] = -1
		if !e.Kind.IsProcess() {
			h.node[i] = -1
			continue
		}
		p := int(e.Node)
		h.node[i] = e.Node
		v := h.row(i)
		if hist := h.history[p]; len(hist) > 0 {
			copy(v, h.row(hist[len(hist)-1]))
		}
		switch e.Kind {
		case Send:
			if _, dup := sends[e.Msg]; !dup {
				sends[e.Msg] = i
			}
		case Recv:
			s, ok := sends[e.Msg]
			if !ok {
				h.unmatched = append(h.unmatched, i)
				break
			}
			h.send[i] = s
			logical.MergeInto(v, h.row(s))
		}
		v[h.col[p]]++
		h.history[p] = append(h.history[p], i)
	}
	return h, nil
}

func (h *HB) row(i int) []uint64 {
	w := len(h.cols)
	return h.vc[i*w : (i+1)*w : (i+1)*w]
}

// process reports whether i is the index of a process event.
func (h *HB) process(i int) bool { return i >= 0 && i < len(h.node) && h.node[i] >= 0 }

// Nodes is the number of processes.
func (h *HB) Nodes() int { return h.n }

// Before reports whether event a happened before event b (a → b). It is
// false if either is not a process event of the trace.
func (h *HB) Before(a, b int) bool {
	if a == b || !h.process(a) || !h.process(b) {
		return false
	}
	p := h.col[h.node[a]]
	return h.row(a)[p] <= h.row(b)[p]
}

// Concurrent reports whether a and b are distinct process events with
// neither a → b nor b → a.
func (h *HB) Concurrent(a, b int) bool {
	return a != b && h.process(a) && h.process(b) && !h.Before(a, b) && !h.Before(b, a)
}

// VC returns event i's vector timestamp as the trace's structure implies
// it, as an array of Nodes entries indexed by process ID; nil if i is
// not a process event. Clock gives the same vector in its compact form.
func (h *HB) VC(i int) []uint64 {
	if !h.process(i) {
		return nil
	}
	v := make([]uint64, h.n)
	for k, x := range h.row(i) {
		v[h.cols[k]] = x
	}
	return v
}

// Clock returns event i's vector timestamp as the trace's structure
// implies it: as VC gives it if every process has events, else without
// the room of the processes that have none, in the form Read would hold
// it in an open trace (CompactVC).
// The zero VC if i is not a process event.
func (h *HB) Clock(i int) VC {
	if !h.process(i) {
		return VC{}
	}
	if len(h.cols) == h.n { // every process has events: as VC gives it
		return DenseVC(slices.Clone(h.row(i)))
	}
	keys, vals := make([]int, 0, len(h.cols)), make([]uint64, 0, len(h.cols))
	for k, x := range h.row(i) {
		keys, vals = append(keys, int(h.cols[k])), append(vals, x)
	}
	return sparseVC(keys, vals)
}

// Entry returns entry p of event i's vector timestamp, VC(i)[p]: the
// number of events of process p that happened before i or are i. It reads
// the vector in place, without the copy VC makes, for the algorithms that
// read many of them (the lattice of consistent global states). It is 0 if
// i is not a process event or p is not a process.
func (h *HB) Entry(i, p int) uint64 {
	if !h.process(i) || p < 0 || p >= h.n || h.col[p] < 0 {
		return 0
	}
	return h.vc[i*len(h.cols)+int(h.col[p])]
}

// Send returns the index of the send that receive recv received; false if
// recv is not a receive or its message has no earlier send.
func (h *HB) Send(recv int) (int, bool) {
	if recv < 0 || recv >= len(h.send) || h.send[recv] < 0 {
		return -1, false
	}
	return h.send[recv], true
}

// Unmatched returns the indexes of the receives whose message id has no
// earlier send, in trace order.
func (h *HB) Unmatched() []int { return append([]int(nil), h.unmatched...) }

// History returns the indexes of node's events in order (its history);
// nil if there is no such node.
func (h *HB) History(node int) []int {
	if node < 0 || node >= h.n {
		return nil
	}
	return append([]int(nil), h.history[node]...)
}

// A Cut is a prefix of every process's history (Chandy & Lamport 1985;
// Coulouris et al. on global states): Cut[p] is how many of process p's
// events it contains. Its frontier is the last event of each prefix. A cut
// is consistent if, for every event it contains, it contains every event
// that happened before it.
//
// Methods that take a Cut read a missing or negative entry as 0 and an entry
// beyond the end of a history as the whole history.
type Cut []int

// prefix is how many events of process p the cut c contains.
func (h *HB) prefix(c Cut, p int) int {
	if p >= len(c) {
		return 0
	}
	return min(max(c[p], 0), len(h.history[p]))
}

// Consistent reports whether cut c is consistent. It suffices that every
// receive in the cut has its send in the cut: any chain of → edges ending in
// the cut then stays in it, since a prefix holds every earlier event of its
// process. If c is not consistent, witness is a (send, receive) pair of
// event indexes with the receive inside the cut and the send outside (the
// earliest such receive in the trace); otherwise it is {-1, -1}.
func (h *HB) Consistent(c Cut) (ok bool, witness [2]int) {
	witness = [2]int{-1, -1}
	for p := range h.n {
		for _, r := range h.history[p][:h.prefix(c, p)] {
			s := h.send[r]
			if s < 0 {
				continue
			}
			q := int(h.node[s])
			inside := h.Entry(s, q) <= uint64(h.prefix(c, q))
			if !inside && (witness[1] < 0 || r < witness[1]) {
				witness = [2]int{s, r}
			}
		}
	}
	return witness[1] < 0, witness
}

// Frontier returns, for each process, the index of the last event of its
// prefix in c, or -1 if the prefix is empty.
func (h *HB) Frontier(c Cut) []int {
	f := make([]int, h.n)
	for p := range h.n {
		f[p] = -1
		if k := h.prefix(c, p); k > 0 {
			f[p] = h.history[p][k-1]
		}
	}
	return f
}

// CutAt returns the cut of t holding every process event that happened at or
// before true time at (ns). In a trace whose receives never precede their
// sends in true time, as every simulated trace, it is consistent. Events of
// nodes outside the header's range are left out.
func CutAt(t *Trace, at int64) Cut {
	c := make(Cut, max(t.Header.Nodes, 0))
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind.IsProcess() && e.Time <= at && e.Node >= 0 && int(e.Node) < len(c) {
			c[e.Node]++
		}
	}
	return c
}
