// Package group is Cohort's group communication for applications: a named
// group on a live cluster, every node a member, whose multicasts are
// delivered in the order of one of the multicast family's algorithms
// (total-sequencer and total-isis give every member the same order).
//
//	g, err := group.New(node, "accounts", algo)
//	id, err := g.Multicast(ctx, []byte("deposit 100"))
//	ds, wait := g.Deliveries(ctx)
//	for d := range ds { apply(d.Body) } // the same order on every node
//
// Deliveries are never dropped: a stream buffers what its reader has not
// taken yet, up to MaxBacklog messages and MaxBacklogBytes, and ends with
// ErrSlowReader beyond that rather than skip one.
package group

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

// DefaultAlgorithm is the algorithm behind a node's groups unless its
// configuration names another.
const DefaultAlgorithm = "total-sequencer"

// Algorithm finds a multicast algorithm by name; the error lists them.
func Algorithm(name string) (proc.Algorithm, error) { return registry.Find("multicast", name) }

// Resolver is a live.Config.Resolve for a cluster whose groups all run
// algorithm a: a node joins group "group/x" when the first message for it
// arrives.
func Resolver(a proc.Algorithm) func(string) (proc.Algorithm, bool) {
	return func(service string) (proc.Algorithm, bool) {
		name, ok := strings.CutPrefix(service, "group/")
		return a, ok && ValidName(name) == nil
	}
}

// ValidName checks a group's name.
func ValidName(name string) error { return httpapi.ValidName("group", name) }

// MaxBody bounds a multicast's payload: a transport frame (1 MiB) less
// room for the message's envelope (service and group names, header,
// a traced run's vector clock). At 1 MiB a message fit no frame: its
// sender delivered it and acknowledged it, and no other member got it.
const MaxBody = transport.DefaultMaxFrame - 64<<10

// MaxBacklog bounds the deliveries a stream holds for a slow reader, and
// MaxBacklogBytes their bodies' bytes.
const (
	MaxBacklog      = 1 << 20
	MaxBacklogBytes = 64 << 20
)

// ErrSlowReader ends a delivery stream whose reader fell MaxBacklog
// messages (or MaxBacklogBytes) behind.
var ErrSlowReader = errors.New("delivery stream ended: the reader fell too far behind")

// ErrOverflow: this member dropped a message it could not hold back, its
// hold-back queue being full (multicast.Overflow: a gap that did not
// fill, as after a restart that lost the group's state); it can no
// longer deliver every message of the group in order. Its delivery
// streams end with it, and multicasts through it fail with it.
var ErrOverflow = errors.New("this member's hold-back queue overflowed: it dropped a message and can no longer deliver the group's messages")

// ID identifies a multicast: its origin node and that node's number for
// it. A node numbers its multicasts from 1 again after a restart; on the
// replicated backend Inc, the sending incarnation (a random number drawn
// each time the node starts, never 0), tells such messages apart, so
// (Origin, Inc, Seq) names one message for ever — as its position does.
// The textbook backends leave Inc 0: they do not survive a restart.
type ID struct {
	Origin proc.ID `json:"origin"`
	Inc    uint64  `json:"inc,omitempty"`
	Seq    uint64  `json:"seq"`
}

// Delivery is a message delivered to this node. Pos is its position in
// the group on the replicated backend (1, 2, …; 0 on the others).
type Delivery struct {
	ID
	Pos  uint64 `json:"pos,omitempty"`
	Body []byte `json:"body"`
}

// Group is a named group on one node. Its methods are safe for concurrent
// use.
type Group struct {
	svc  *live.Service
	name string

	inMu     sync.Mutex // orders Multicast inputs with their waiters
	pendMu   sync.Mutex
	pending  []*sending      // one per Multicast input, in input order, until the algorithm takes it (Sent)
	awaiting map[ID]*sending // taken, until this node delivers it
	window   int             // multicasts under way at most (see admit)

	subMu   sync.Mutex
	subs    map[*stream]struct{}
	broken  error // ErrOverflow, once the algorithm dropped a message
	dropped int   // messages the algorithm dropped (multicast.Overflow)
}

type result struct {
	id  ID
	err error
}

// sending is one Multicast call's wait.
type sending struct {
	ch   chan result   // buffered: one result
	took chan struct{} // closed once the algorithm took the input (or refused it)
	id   ID            // set once Sent names it
	gone bool          // the call returned; nothing waits any more
}

// New joins the group called name on node n, run by algorithm a of the
// multicast family. Every node must use the same algorithm for a group.
func New(n *live.Node, name string, a proc.Algorithm) (*Group, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if a.Family != "multicast" {
		return nil, fmt.Errorf("group %q: %s is not a multicast algorithm", name, a.Name)
	}
	svc, err := n.Service("group/"+name, a)
	if err != nil {
		return nil, err
	}
	g := &Group{svc: svc, name: name, subs: map[*stream]struct{}{}, awaiting: map[ID]*sending{}, window: svc.Window()}
	svc.OnOutput(g.output)
	return g, nil
}

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// output runs in the service's goroutine for every output.
func (g *Group) output(o proc.Output) {
	switch o := o.(type) {
	case multicast.Sent:
		g.taken(ID{Origin: o.Origin, Seq: o.Seq})
	case multicast.Refused:
		g.resolve(result{err: fmt.Errorf("group %q: multicast refused: %s", g.name, o.Reason)})
	case multicast.Overflow:
		g.overflowed(o)
	case multicast.Delivered:
		d := Delivery{ID: ID{Origin: o.Origin, Seq: o.Seq}, Body: []byte(o.Body)}
		g.pendMu.Lock()
		if w := g.awaiting[d.ID]; w != nil {
			delete(g.awaiting, d.ID)
			w.ch <- result{id: d.ID}
		}
		g.pendMu.Unlock()
		g.subMu.Lock()
		for s := range g.subs {
			s.push(d)
		}
		g.subMu.Unlock()
	}
}

// overflowed: the algorithm dropped message o rather than hold it back.
// The member can no longer deliver the group's messages: its listeners
// get an error rather than silence, and the multicasts waiting for their
// delivery here end with it.
func (g *Group) overflowed(o multicast.Overflow) {
	err := fmt.Errorf("group %q: %w (message %d of node %d dropped, %d bytes held back)", g.name, ErrOverflow, o.Seq, o.Origin, o.Held)
	g.subMu.Lock()
	g.dropped++
	first := g.broken == nil
	if first {
		g.broken = err
		for s := range g.subs {
			s.fail(err)
		}
	}
	g.subMu.Unlock()
	if !first {
		return
	}
	g.pendMu.Lock()
	for id, w := range g.awaiting {
		delete(g.awaiting, id)
		w.ch <- result{err: err}
	}
	g.pendMu.Unlock()
}

// failed is the error the group ended with (ErrOverflow), or nil.
func (g *Group) failed() error {
	g.subMu.Lock()
	defer g.subMu.Unlock()
	return g.broken
}

// Dropped counts the messages this member dropped rather than hold back
// (see ErrOverflow).
func (g *Group) Dropped() int {
	g.subMu.Lock()
	defer g.subMu.Unlock()
	return g.dropped
}

// resolve answers the oldest Multicast input the algorithm has not taken.
func (g *Group) resolve(r result) {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	if w := g.oldest(); w != nil {
		close(w.took)
		w.ch <- r
	}
}

// taken: the algorithm took the oldest Multicast input as message id (its
// Sent always comes before the message's delivery here); it is answered
// once this node delivers it.
func (g *Group) taken(id ID) {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	w := g.oldest()
	if w == nil {
		return
	}
	close(w.took)
	if !w.gone {
		w.id = id
		g.awaiting[id] = w
	}
}

// oldest takes the oldest pending Multicast input off the list (nil if
// none). The caller holds pendMu.
func (g *Group) oldest() *sending {
	if len(g.pending) == 0 {
		return nil
	}
	w := g.pending[0]
	g.pending = g.pending[1:]
	return w
}

// Multicast sends body to every member of the group, this node included,
// and returns the message's identity once this node has delivered it —
// not merely once the algorithm took it: a message the group cannot
// deliver (its sequencer is dead, this member restarted and lost the
// group's state) is never acknowledged, and the call ends with ctx.
// Ending that way, the message may still be delivered later.
func (g *Group) Multicast(ctx context.Context, body []byte) (ID, error) {
	if len(body) > MaxBody {
		return ID{}, fmt.Errorf("group %q: a %d-byte message is over the %d-byte limit", g.name, len(body), MaxBody)
	}
	if err := g.failed(); err != nil {
		return ID{}, err
	}
	if err := g.admit(ctx); err != nil { // holds inMu on success
		return ID{}, err
	}
	w := &sending{ch: make(chan result, 1), took: make(chan struct{})}
	g.pendMu.Lock()
	g.pending = append(g.pending, w)
	g.pendMu.Unlock()
	err := g.svc.Input(multicast.Multicast{Group: "all", Body: string(body)})
	if err != nil {
		g.pendMu.Lock()
		g.pending = g.pending[:len(g.pending)-1]
		g.pendMu.Unlock()
	} else {
		// The next admission looks once this message's sends are queued.
		select {
		case <-w.took:
		case <-g.svc.Done():
		}
	}
	g.inMu.Unlock()
	if err != nil {
		return ID{}, err
	}
	select {
	case r := <-w.ch:
		return r.id, r.err
	case <-g.svc.Done():
		g.forget(w)
		return ID{}, live.ErrClosed
	case <-ctx.Done():
		g.forget(w)
		return ID{}, fmt.Errorf("group %q: not delivered here yet (%w); it may still be", g.name, ctx.Err())
	}
}

// admit waits while this node has a window of multicasts under way
// (live.Service.Window), or is congested (live.Node.Congested): the
// textbook algorithms assume reliable channels, and a message a full
// queue refuses would stall the group. It is how a sender that outruns
// the group — the sequencer's own node, which delivers its messages at
// once — is slowed to the pace of the slowest connected member.
//
// On success it returns holding inMu, so that the multicast it admits is
// counted before anyone else's admission looks.
func (g *Group) admit(ctx context.Context) error {
	wait := 100 * time.Microsecond
	for {
		g.inMu.Lock()
		if g.underWay() < g.window && !g.svc.Congested() {
			return nil
		}
		g.inMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("group %q: the node is congested (%w)", g.name, ctx.Err())
		case <-g.svc.Done():
			t.Stop()
			return live.ErrClosed
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// underWay counts the multicasts under way: given to the algorithm and
// not yet delivered here.
func (g *Group) underWay() int {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	return len(g.pending) + len(g.awaiting)
}

// forget stops waiting for w's message.
func (g *Group) forget(w *sending) {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	w.gone = true
	if g.awaiting[w.id] == w {
		delete(g.awaiting, w.id)
	}
}

// Deliveries streams the messages this node delivers from now on, in
// delivery order, until ctx ends or the node closes; then the channel
// closes, and the returned function says why (nil when ctx ended).
func (g *Group) Deliveries(ctx context.Context) (<-chan Delivery, func() error) {
	s := &stream{wake: make(chan struct{}, 1)}
	g.subMu.Lock()
	g.subs[s] = struct{}{}
	if g.broken != nil {
		s.failed = g.broken
	}
	g.subMu.Unlock()
	return s.run(ctx, g.svc.Done(), func() {
		g.subMu.Lock()
		delete(g.subs, s)
		g.subMu.Unlock()
	})
}

// run hands the stream's deliveries to a channel until ctx ends (nil),
// done closes (live.ErrClosed) or the reader falls too far behind
// (ErrSlowReader); then it calls leave, closes the channel, and the
// returned function says why.
func (s *stream) run(ctx context.Context, done <-chan struct{}, leave func()) (<-chan Delivery, func() error) {
	out := make(chan Delivery, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		defer leave()
		for {
			batch, err := s.take()
			for _, d := range batch {
				select {
				case out <- d: // room: no need to watch ctx (a cheaper send)
					continue
				default:
				}
				select {
				case out <- d:
				case <-ctx.Done():
					errc <- nil
					return
				}
			}
			s.give(batch)
			if err != nil {
				errc <- err
				return
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				errc <- nil
				return
			case <-done:
				errc <- live.ErrClosed
				return
			}
		}
	}()
	return out, func() error { return <-errc }
}

// stream is one reader's backlog.
type stream struct {
	mu       sync.Mutex
	backlog  []Delivery
	bytes    int // of the backlog's bodies
	overflow bool
	failed   error // ends the stream once its backlog is read
	wake     chan struct{}
	spare    []Delivery // a backlog taken and read, for the next one
}

// fail ends the stream with err after what it holds.
func (s *stream) fail(err error) {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) push(d Delivery) { s.pushAll([]Delivery{d}) }

// pushAll adds ds to the backlog, all or none: a backlog that would grow
// past its bounds overflows (the reader gets what it holds, then
// ErrSlowReader).
func (s *stream) pushAll(ds []Delivery) {
	size := 0
	for _, d := range ds {
		size += len(d.Body)
	}
	s.mu.Lock()
	if len(s.backlog)+len(ds) > MaxBacklog || s.bytes+size > MaxBacklogBytes {
		s.overflow = true
	} else if !s.overflow && s.failed == nil {
		s.backlog = append(s.backlog, ds...)
		s.bytes += size
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// give hands back a backlog take returned, once read: its array holds the
// next one.
func (s *stream) give(b []Delivery) {
	if cap(b) == 0 || cap(b) > 2*MaxBacklog {
		return
	}
	clear(b)
	s.mu.Lock()
	if s.spare == nil {
		s.spare = b[:0]
	}
	s.mu.Unlock()
}

func (s *stream) take() ([]Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.backlog
	s.backlog, s.bytes, s.spare = s.spare, 0, nil
	switch {
	case len(b) > 0:
	case s.overflow:
		return nil, ErrSlowReader
	case s.failed != nil:
		return nil, s.failed
	}
	return b, nil
}
