package check

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cohort-go/cohort/trace"
)

// The multicast checkers read the multicast family's contract from a
// trace:
//
//   - a "sent" output at the multicaster, {"origin", "seq", "group",
//     "members", "body"}: the message (origin, seq, group) was multicast to
//     those members;
//   - a "deliver" output, {"origin", "seq", "group", "body"}: the process
//     delivered that message.
//
// A process is correct if it never crashes in the trace (crash-stop: one
// that crashed and recovered is not correct either). The properties are
// those of Coulouris et al.'s group communication, per group:
//
//   - mc-integrity: a process delivers a message at most once, only if it
//     was multicast (before, in the trace), only as a member of its group,
//     and with the body it was multicast with;
//   - mc-validity: if a correct process multicasts m, every correct
//     member of group(m) delivers m — the multicaster too, if a member;
//   - mc-agreement: if a correct process delivers m, every correct member
//     of group(m) delivers m;
//   - fifo-order: if a process multicasts m and then m′ to the same group,
//     a process that delivers m′ has delivered m before;
//   - causal-order: if multicast(g, m) → multicast(g, m′), a process that
//     delivers m′ has delivered m before;
//   - total-order: if a process delivers m before m′ (both of group g),
//     any process that delivers m′ has delivered m before.
//
// The orders are judged at every process, correct or not: an algorithm
// that orders does so up to a crash. Skipping counts as disorder: a
// process that delivers m′ without m breaks FIFO, causal and total order
// as Coulouris et al. state them ("will deliver m before m′"), while one
// that stops early keeps them — ordered multicast does not imply
// reliability.
//
// Happened-before for causal-order is Coulouris et al.'s, over multicast
// and deliver events: multicast(m) → multicast(m′) when one process
// multicast both, in that order, or the process that multicast m′ had
// delivered m, or a message that m precedes, before it did — following only
// messages of the group (happened-before "induced only by messages sent
// between the members of g"). The receipt of a message that a process holds
// back does not count: the process has not seen it yet. (The trace's
// happened-before, which counts every receipt, would blame CO-multicast
// itself for a message it correctly held back.)
//
// mc-validity and mc-agreement are liveness properties. A correct member
// that has not delivered a message it should is a violation only if the
// run ended with no message in flight to it; otherwise the verdict is
// Unknown: run longer to tell.

var mcIntegrity = checker{
	name:  "mc-integrity",
	doc:   "multicast integrity: a process delivers a message at most once, only if it was multicast, only as a member of its group, with its body",
	check: checkMCIntegrity,
}

var mcValidity = checker{
	name:  "mc-validity",
	doc:   "multicast validity: every correct member delivers every message a correct process multicast",
	check: checkMCValidity,
}

var mcAgreement = checker{
	name:  "mc-agreement",
	doc:   "multicast agreement: if a correct process delivers a message, every correct member of its group does",
	check: checkMCAgreement,
}

var fifoOrder = checker{
	name:  "fifo-order",
	doc:   "FIFO order: a process that delivers m′ has delivered every message its sender multicast to the group before m′",
	check: checkFIFOOrder,
}

var causalOrder = checker{
	name:  "causal-order",
	doc:   "causal order: a process that delivers m′ has delivered every message of its group whose multicast happened before m′'s",
	check: checkCausalOrder,
}

var totalOrder = checker{
	name:  "total-order",
	doc:   "total order: if a process delivers m before m′ (same group), every process that delivers m′ delivered m before it",
	check: checkTotalOrder,
}

func init() {
	Register(mcIntegrity)
	Register(mcValidity)
	Register(mcAgreement)
	Register(fifoOrder)
	Register(causalOrder)
	Register(totalOrder)
}

// mcKey is a message's identity.
type mcKey struct {
	origin int32
	seq    uint64
	group  string
}

func (k mcKey) String() string {
	s := fmt.Sprintf("p%d#%d", k.origin, k.seq)
	if k.group != "all" {
		s += "/" + k.group
	}
	return s
}

// mcMsg is one multicast message and what became of it.
type mcMsg struct {
	key     mcKey
	index   int // its position in mcRun.msgs
	sent    int // the "sent" output
	node    int32
	members []int32
	body    string
	at      map[int32]int // process → its (first) delivery of the message
}

// mcDelivery is one delivery of a known message.
type mcDelivery struct {
	msg *mcMsg
	at  int
}

// mcRun is a trace read as multicasts and deliveries.
type mcRun struct {
	n       int
	msgs    []*mcMsg // in the order of their "sent" outputs
	byKey   map[mcKey]*mcMsg
	deliv   [][]mcDelivery // per process, in trace order, first deliveries of known messages
	crashed []int          // per process: its first crash, or -1
	last    []int          // per process: its last event, or -1
	bad     []finding      // integrity findings
	event   map[int]*mcMsg // the message of each sent output and counted delivery, by event index
}

func (r *mcRun) correct(p int32) bool { return r.crashed[p] < 0 }

func readMulticast(t *trace.Trace) (*mcRun, error) {
	n := t.Header.Nodes
	if n < 1 {
		return nil, fmt.Errorf("%w: header names %d nodes", trace.ErrFormat, n)
	}
	r := &mcRun{n: n, byKey: map[mcKey]*mcMsg{}, event: map[int]*mcMsg{}, deliv: make([][]mcDelivery, n), crashed: make([]int, n), last: make([]int, n)}
	for p := range n {
		r.crashed[p], r.last[p] = -1, -1
	}
	type payload struct {
		Origin  int32   `json:"origin"`
		Seq     uint64  `json:"seq"`
		Group   string  `json:"group"`
		Members []int32 `json:"members"`
		Body    string  `json:"body"`
	}
	for i := range t.Events {
		e := &t.Events[i]
		p := e.Node
		if p < 0 || int(p) >= n {
			return nil, fmt.Errorf("%w: event %d: node %d out of range 0..%d", trace.ErrFormat, i, p, n-1)
		}
		if e.Kind.IsProcess() {
			r.last[p] = i
		}
		if e.Kind.Stops() && r.crashed[p] < 0 {
			r.crashed[p] = i
		}
		if e.Kind != trace.Output || (e.Type != "sent" && e.Type != "deliver") {
			continue
		}
		var o payload
		if err := json.Unmarshal(e.Data, &o); err != nil {
			return nil, fmt.Errorf("%w: event %d: %s output: %v", trace.ErrFormat, i, e.Type, err)
		}
		k := mcKey{o.Origin, o.Seq, o.Group}
		m := r.byKey[k]
		if e.Type == "sent" {
			if m != nil {
				r.bad = append(r.bad, finding{fmt.Sprintf("%s was multicast twice (#%d, #%d): identities must be unique", k, m.sent, i), []int{m.sent, i}})
				continue
			}
			m = &mcMsg{key: k, index: len(r.msgs), sent: i, node: p, members: o.Members, body: o.Body, at: map[int32]int{}}
			r.msgs = append(r.msgs, m)
			r.byKey[k] = m
			r.event[i] = m
			continue
		}
		switch {
		case m == nil:
			r.bad = append(r.bad, finding{fmt.Sprintf("p%d delivered %s, which had not been multicast", p, k), []int{i}})
		case hasDelivered(m, p):
			r.bad = append(r.bad, finding{fmt.Sprintf("p%d delivered %s twice (#%d, #%d)", p, k, m.at[p], i), []int{m.at[p], i}})
		default:
			m.at[p] = i
			r.deliv[p] = append(r.deliv[p], mcDelivery{m, i})
			r.event[i] = m
			if !slices.Contains(m.members, p) {
				r.bad = append(r.bad, finding{fmt.Sprintf("p%d delivered %s but is not a member of %s %v", p, k, k.group, m.members), []int{m.sent, i}})
			}
			if o.Body != m.body {
				r.bad = append(r.bad, finding{fmt.Sprintf("p%d delivered %s with body %q; it was multicast with %q", p, k, o.Body, m.body), []int{m.sent, i}})
			}
		}
	}
	return r, nil
}

func hasDelivered(m *mcMsg, p int32) bool {
	_, ok := m.at[p]
	return ok
}

func checkMCIntegrity(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	return verdict(r.bad)
}

// livenessVerdict turns the findings of a liveness property into a
// Result: violations if some member missing a message had nothing in flight
// to it; else Unknown if some did; else OK.
func livenessVerdict(t *trace.Trace, r *mcRun, missing []mcMissing) Result {
	flying := inFlight(t)
	var fs []finding
	var open []mcMissing
	for _, m := range missing {
		if flying[m.p] > 0 {
			open = append(open, m)
			continue
		}
		events := []int{m.msg.sent}
		if r.last[m.p] >= 0 {
			events = append(events, r.last[m.p])
		}
		fs = append(fs, finding{fmt.Sprintf("p%d never delivered %s, %s", m.p, m.msg.key, m.why), events})
	}
	if len(fs) > 0 || len(open) == 0 {
		return verdict(fs)
	}
	m := open[0]
	return Result{Status: Unknown, Events: []int{m.msg.sent}, Detail: fmt.Sprintf(
		"p%d had not delivered %s (%s) when the run ended, with %d message(s) still in flight to it: run longer to tell",
		m.p, m.msg.key, m.why, flying[m.p])}
}

type mcMissing struct {
	p   int32
	msg *mcMsg
	why string
}

func checkMCValidity(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	var missing []mcMissing
	for _, m := range r.msgs {
		if !r.correct(m.node) {
			continue
		}
		for _, q := range m.members {
			if q >= 0 && int(q) < r.n && r.correct(q) && !hasDelivered(m, q) {
				missing = append(missing, mcMissing{q, m, fmt.Sprintf("multicast at #%d by p%d, which did not crash", m.sent, m.node)})
			}
		}
	}
	return livenessVerdict(t, r, missing)
}

func checkMCAgreement(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	var missing []mcMissing
	for _, m := range r.msgs {
		first := int32(-1) // a correct process that delivered m
		for _, p := range slices.Sorted(mapKeys(m.at)) {
			if r.correct(p) {
				first = p
				break
			}
		}
		if first < 0 {
			continue
		}
		for _, q := range m.members {
			if q >= 0 && int(q) < r.n && r.correct(q) && !hasDelivered(m, q) {
				missing = append(missing, mcMissing{q, m, fmt.Sprintf("which the correct p%d delivered at #%d", first, m.at[first])})
			}
		}
	}
	res := livenessVerdict(t, r, missing)
	if res.Status == Violated {
		// Cite the delivery the others lack, too.
		for _, mm := range missing {
			if slices.Contains(res.Events, mm.msg.sent) {
				for _, p := range slices.Sorted(mapKeys(mm.msg.at)) {
					if r.correct(p) {
						res.Events = append(res.Events, mm.msg.at[p])
						break
					}
				}
				break
			}
		}
		slices.Sort(res.Events)
		res.Events = slices.Compact(res.Events)
	}
	return res
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// deliveredBefore returns q's delivery of first, and whether it came
// before index at.
func deliveredBefore(first *mcMsg, q int32, at int) (int, bool) {
	i, ok := first.at[q]
	return i, ok && i < at
}

// orderFinding describes q delivering second without first before it,
// citing q's deliveries and the events in cite.
func orderFinding(q int32, first, second *mcMsg, why string, cite ...int) finding {
	d2 := second.at[q]
	events := append([]int{d2}, cite...)
	var what string
	if d1, ok := first.at[q]; ok {
		what = fmt.Sprintf("p%d delivered %s (#%d) before %s (#%d)", q, second.key, d2, first.key, d1)
		events = append(events, d1)
	} else {
		what = fmt.Sprintf("p%d delivered %s (#%d) without ever delivering %s", q, second.key, d2, first.key)
	}
	return finding{what + ", " + why, events}
}

func checkFIFOOrder(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	// Each sender's messages to each group, in the order multicast.
	type stream struct {
		origin int32
		group  string
	}
	streams := map[stream][]*mcMsg{}
	for _, m := range r.msgs {
		s := stream{m.key.origin, m.key.group}
		streams[s] = append(streams[s], m)
	}
	var fs []finding
	// Consecutive pairs suffice: if every process that delivers m_{k+1}
	// delivered m_k before it, the same holds for any earlier m_j.
	for _, m := range r.msgs {
		s := streams[stream{m.key.origin, m.key.group}]
		i := slices.Index(s, m)
		if i == 0 {
			continue
		}
		prev := s[i-1]
		for _, q := range slices.Sorted(mapKeys(m.at)) {
			if _, ok := deliveredBefore(prev, q, m.at[q]); !ok {
				fs = append(fs, orderFinding(q, prev, m, fmt.Sprintf("which p%d multicast first (#%d, then #%d)", m.node, prev.sent, m.sent), prev.sent, m.sent))
			}
		}
	}
	return verdict(fs)
}

// bitset is a set of message indexes.
type bitset []uint64

func (b *bitset) add(i int) {
	for i/64 >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}
func (b *bitset) union(o bitset) {
	for len(*b) < len(o) {
		*b = append(*b, 0)
	}
	for i, w := range o {
		(*b)[i] |= w
	}
}
func (b bitset) each(f func(i int)) {
	for wi, w := range b {
		for w != 0 {
			i := bits.TrailingZeros64(w)
			f(wi*64 + i)
			w &^= 1 << i
		}
	}
}

// maxCausalMessages bounds the messages whose causal pasts are computed
// (each past is a bitset over all messages).
const maxCausalMessages = 20000

func checkCausalOrder(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	if len(r.msgs) > maxCausalMessages {
		return Result{Status: Unknown, Detail: fmt.Sprintf("%d messages: causal-order judges at most %d", len(r.msgs), maxCausalMessages)}
	}
	// past[p][g]: the messages of group g that p's next multicast to g
	// will causally follow. before[m]: the messages m causally follows.
	type pg struct {
		p int32
		g string
	}
	past := map[pg]bitset{}
	before := make([]bitset, len(r.msgs))
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Recover || e.Kind == trace.Join:
			for k := range past {
				if k.p == e.Node {
					delete(past, k) // fresh state: it remembers nothing
				}
			}
		case e.Kind == trace.Output && e.Type == "sent" && r.event[i] != nil:
			m := r.event[i]
			k := pg{e.Node, m.key.group}
			b := past[k]
			before[m.index] = slices.Clone(b)
			b.add(m.index)
			past[k] = b
		case e.Kind == trace.Output && e.Type == "deliver" && r.event[i] != nil:
			m := r.event[i]
			k := pg{e.Node, m.key.group}
			b := past[k]
			b.union(before[m.index])
			b.add(m.index)
			past[k] = b
		}
	}
	var fs []finding
	for _, m2 := range r.msgs {
		for _, q := range slices.Sorted(mapKeys(m2.at)) {
			at := m2.at[q]
			before[m2.index].each(func(i int) {
				m1 := r.msgs[i]
				if _, ok := deliveredBefore(m1, q, at); ok {
					return
				}
				why := fmt.Sprintf("though multicast(%s) → multicast(%s)", m1.key, m2.key)
				cite := []int{m1.sent, m2.sent}
				if m1.node == m2.node {
					why += fmt.Sprintf(": p%d multicast both", m1.node)
				} else if d, ok := m1.at[m2.node]; ok && d < m2.sent {
					why += fmt.Sprintf(": p%d delivered %s (#%d) before multicasting %s", m2.node, m1.key, d, m2.key)
					cite = append(cite, d)
				}
				fs = append(fs, orderFinding(q, m1, m2, why, cite...))
			})
		}
	}
	return verdict(fs)
}

func checkTotalOrder(t *trace.Trace) Result {
	r, err := readMulticast(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	// For every process p and consecutive m, m′ of one group in p's
	// deliveries, every q that delivered m′ must have delivered m before.
	// Consecutive pairs suffice, as for FIFO.
	for p := range r.n {
		last := map[string]*mcMsg{}
		for _, d := range r.deliv[p] {
			m2 := d.msg
			m1 := last[m2.key.group]
			last[m2.key.group] = m2
			if m1 == nil {
				continue
			}
			for _, q := range slices.Sorted(mapKeys(m2.at)) {
				if q == int32(p) {
					continue
				}
				if _, ok := deliveredBefore(m1, q, m2.at[q]); !ok {
					fs = append(fs, orderFinding(q, m1, m2,
						fmt.Sprintf("while p%d delivered %s (#%d) before %s (#%d)", p, m1.key, m1.at[int32(p)], m2.key, m2.at[int32(p)]),
						m1.at[int32(p)], m2.at[int32(p)]))
				}
			}
		}
	}
	return verdict(fs)
}
