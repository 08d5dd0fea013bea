package group

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// Replicated is the group service on a replicated log (consensus.Groups,
// one Raft group for every group of the cluster, named "groups"): the
// total order is the log's, a multicast returns once its entry is
// committed — an acknowledged message is never lost while a majority's
// disks survive — and every message has a position in its group (1, 2,
// …) from which a listener can resume, on any node, as long as the node
// still keeps it (the last LiveRetain messages of each group; a node
// that restarted keeps what its snapshot retained and what it replayed).
type Replicated struct {
	svc    *live.Service
	self   proc.ID
	origin uint64 // this incarnation's sender id; its low 16 bits are the node's
	retry  time.Duration
	seq    atomic.Uint64
	window chan struct{} // one token per unacknowledged multicast

	mu     sync.Mutex
	acks   map[uint64]*unacked
	groups map[string]*logGroup
}

// unacked is a multicast waiting for its acknowledgement: what to send
// again, and when.
type unacked struct {
	ch  chan consensus.Sent // buffered, 1; sent to under mu only
	in  consensus.Send
	due time.Time
}

// ackChans recycles the channels of acknowledged multicasts.
var ackChans = sync.Pool{New: func() any { return make(chan consensus.Sent, 1) }}

// logGroup is what a node keeps of a group: its last messages and its
// listeners.
type logGroup struct {
	recent []Delivery // consecutive positions, oldest first, from recent[head]
	head   int
	bytes  int
	subs   map[*stream]uint64 // each listener's next position (0: the next delivered)
}

// kept is what the group keeps, oldest first.
func (g *logGroup) kept() []Delivery { return g.recent[g.head:] }

// Bounds of the replicated backend.
const (
	// LiveRetain and LiveRetainBytes bound the messages a node keeps per
	// group for listeners that resume from a position.
	LiveRetain      = 4096
	LiveRetainBytes = 8 << 20
	// MaxReplicatedBody bounds a message: each is a log entry.
	MaxReplicatedBody = 64 << 10
	// MaxGroups bounds the groups: the replicated state refuses a message
	// to a new group past it (ErrTooManyGroups).
	MaxGroups = consensus.MaxGroups
)

// ServiceName is the replicated group service's name on every node.
const ServiceName = "groups"

// ErrTooManyGroups: the cluster keeps MaxGroups groups, and a message to
// another was refused.
var ErrTooManyGroups = errors.New("too many groups")

// ErrCompacted: a listener asked for a position this node no longer keeps.
var ErrCompacted = errors.New("position no longer kept here")

// ReplicatedAlgorithm is the algorithm behind Replicated with cfg.
func ReplicatedAlgorithm(cfg consensus.Config) proc.Algorithm {
	return consensus.RaftGroupAlgorithm(cfg, consensus.DefaultRetain)
}

// Service is the live service that runs the log.
func (r *Replicated) Service() *live.Service { return r.svc }

// NewReplicated starts (or joins) the replicated group service on node n.
// Every node of the cluster must use the same cfg.
func NewReplicated(n *live.Node, cfg consensus.Config) (*Replicated, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	svc, err := n.Service(ServiceName, ReplicatedAlgorithm(cfg))
	if err != nil {
		return nil, err
	}
	r := &Replicated{svc: svc, self: n.Self(), origin: rand.Uint64()<<16 | uint64(n.Self())&0xffff,
		retry: 2 * cfg.ElectionTimeout, window: make(chan struct{}, consensus.Window/2),
		acks: map[uint64]*unacked{}, groups: map[string]*logGroup{}}
	svc.OnOutput(r.output)
	// The service may have started before we subscribed (a peer's message
	// starts it, and a restart replays its snapshot at once): ask it for
	// what it keeps.
	if err := svc.Input(consensus.Replay{}); err != nil {
		return nil, err
	}
	go r.resend()
	return r, nil
}

// resend sends again, every retry, the multicasts not yet acknowledged:
// one goroutine for all of them, rather than a timer each.
func (r *Replicated) resend() {
	tick := time.NewTicker(r.retry / 4)
	defer tick.Stop()
	var due []consensus.Send
	for {
		select {
		case <-tick.C:
		case <-r.svc.Done():
			return
		}
		now := time.Now()
		r.mu.Lock()
		for _, u := range r.acks {
			if !now.Before(u.due) {
				due = append(due, u.in)
				u.due = now.Add(r.retry)
			}
		}
		r.mu.Unlock()
		slices.SortFunc(due, func(a, b consensus.Send) int { return cmp.Compare(a.Seq, b.Seq) })
		for i, in := range due {
			if r.svc.Input(in) != nil { // the same number: applied once
				return // stopped; the senders see it
			}
			due[i] = consensus.Send{}
		}
		due = due[:0]
	}
}

// output runs in the service's goroutine for every output, in log order.
func (r *Replicated) output(o proc.Output) {
	switch o := o.(type) {
	case consensus.Sent:
		if o.Origin == r.origin {
			r.mu.Lock()
			if u := r.acks[o.Seq]; u != nil {
				select {
				case u.ch <- o:
				default:
				}
			}
			r.mu.Unlock()
		}
	case consensus.GroupMessage:
		d := Delivery{ID: ID{Origin: proc.ID(o.Origin & 0xffff), Seq: o.Seq}, Pos: o.Pos, Body: o.Body}
		r.mu.Lock()
		defer r.mu.Unlock()
		g := r.groups[o.Group]
		if g == nil {
			if len(r.groups) >= MaxGroups {
				return
			}
			g = &logGroup{subs: map[*stream]uint64{}}
			r.groups[o.Group] = g
		}
		if n := len(g.recent); n > g.head {
			last := g.recent[n-1].Pos
			if d.Pos <= last {
				return // a snapshot's replay of what we delivered already
			}
			if d.Pos > last+1 {
				// A snapshot from far ahead: positions last+1 … d.Pos-1
				// will never be delivered here.
				g.recent, g.head, g.bytes = nil, 0, 0
				for s := range g.subs {
					s.fail(fmt.Errorf("group %q: %w: positions %d to %d were compacted before this node received them", o.Group, ErrCompacted, last+1, d.Pos-1))
				}
			}
		}
		g.recent = append(g.recent, d)
		g.bytes += len(d.Body)
		for len(g.recent)-g.head > LiveRetain || (g.bytes > LiveRetainBytes && len(g.recent)-g.head > 1) {
			g.bytes -= len(g.recent[g.head].Body)
			g.recent[g.head] = Delivery{}
			g.head++
		}
		if g.head > len(g.recent)/2 { // amortized: the dropped half goes at once
			k := copy(g.recent, g.recent[g.head:]) // in place: the array is reused
			clear(g.recent[k:])
			g.recent, g.head = g.recent[:k], 0
		}
		for s, next := range g.subs {
			switch {
			case next == 0 || d.Pos == next:
				s.push(d)
				g.subs[s] = d.Pos + 1
			case d.Pos > next: // the node jumped past what the listener is owed
				s.fail(fmt.Errorf("group %q: %w: positions %d to %d were compacted before this node received them", o.Group, ErrCompacted, next, d.Pos-1))
				delete(g.subs, s)
			}
			// d.Pos < next: a replay of what the listener has had
		}
	}
}

// Multicast sends body to group name and returns once it is committed:
// its identity and its position in the group. If ctx ends first the
// message may or may not be delivered.
func (r *Replicated) Multicast(ctx context.Context, name string, body []byte) (Delivery, error) {
	if err := ValidName(name); err != nil {
		return Delivery{}, err
	}
	if len(body) > MaxReplicatedBody {
		return Delivery{}, fmt.Errorf("group %q: a %d-byte message is over the %d-byte limit", name, len(body), MaxReplicatedBody)
	}
	select {
	case r.window <- struct{}{}:
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
	defer func() { <-r.window }()
	seq := r.seq.Add(1)
	in := consensus.Send{Group: name, Origin: r.origin, Seq: seq, Body: body}
	u := &unacked{ch: ackChans.Get().(chan consensus.Sent), in: in, due: time.Now().Add(r.retry)}
	r.mu.Lock()
	r.acks[seq] = u
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.acks, seq)
		r.mu.Unlock()
		select { // nothing sends to it now: empty, it serves another
		case <-u.ch:
		default:
		}
		ackChans.Put(u.ch)
	}()
	// Sends that reach the service while it works share an entry
	// (consensus.Groups gathers them): under load an entry carries many,
	// and a message alone goes at once. resend sends it again every
	// retry until it is acknowledged.
	if err := r.svc.Input(in); err != nil {
		return Delivery{}, err
	}
	select {
	case a := <-u.ch:
		if a.Refused != "" {
			return Delivery{}, fmt.Errorf("group %q: %w: %s", name, ErrTooManyGroups, a.Refused)
		}
		return Delivery{ID: ID{Origin: r.self, Seq: seq}, Pos: a.Pos, Body: body}, nil
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	case <-r.svc.Done():
		return Delivery{}, live.ErrClosed
	}
}

// Deliveries streams group name's messages as this node delivers them,
// from position from (0: from the next one on), until ctx ends or the
// node closes; then the channel closes and the returned function says why.
// A position not yet delivered here is waited for. ErrCompacted: this
// node no longer keeps position from (at once, or when the first delivery
// shows it, on a node that kept nothing of the group when asked).
func (r *Replicated) Deliveries(ctx context.Context, name string, from uint64) (<-chan Delivery, func() error, error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	s := &stream{wake: make(chan struct{}, 1)}
	r.mu.Lock()
	g := r.groups[name]
	if g == nil {
		if len(r.groups) >= MaxGroups {
			r.mu.Unlock()
			return nil, nil, fmt.Errorf("this node keeps %d groups, the most it may", MaxGroups)
		}
		g = &logGroup{subs: map[*stream]uint64{}}
		r.groups[name] = g
	}
	next := from
	if from > 0 {
		kept := g.kept()
		switch {
		case len(kept) > 0 && from < kept[0].Pos:
			r.mu.Unlock()
			return nil, nil, fmt.Errorf("group %q: %w (the oldest is %d)", name, ErrCompacted, kept[0].Pos)
		}
		// Nothing kept: the group is new here, or the node has just
		// restarted and not yet replayed it. The listener waits for from;
		// if the first delivery comes after it, the positions between
		// were compacted, and it is told so then (see output).
		for _, d := range kept {
			if d.Pos >= from {
				s.push(d)
				next = d.Pos + 1
			}
		}
	}
	g.subs[s] = next
	r.mu.Unlock()
	out, wait := s.run(ctx, r.svc.Done(), func() {
		r.mu.Lock()
		delete(g.subs, s)
		r.mu.Unlock()
	})
	return out, wait, nil
}
