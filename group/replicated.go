package group

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/internal/halt"
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
	origin uint64        // this incarnation's sender id: its low 16 bits are the node's, the rest (never 0) the ID's Inc
	retry  time.Duration // the first wait before an unacknowledged multicast is proposed again (package backoff)
	seq    atomic.Uint64
	window chan struct{} // one token per unacknowledged multicast

	proposals atomic.Uint64     // multicasts given to the log, copies included
	progress  *backoff.Progress // wakes resend when the log moves after a quiet spell

	halted halt.State // this node's copy of the log's groups: consensus.Halted, until consensus.Resumed

	ackMu   sync.Mutex // the multicasts' side: apart from mu, which deliveries hold for a whole entry
	acks    map[uint64]*unacked
	stopped bool // the service stopped: the multicasts waiting were told

	mu      sync.Mutex
	groups  map[string]*logGroup
	scratch []Delivery // deliver's
}

// unacked is a multicast waiting for its answer: what to send again, and
// when.
type unacked struct {
	ch  chan answer // buffered, 1; sent to under ackMu only, while in acks
	in  consensus.Send
	due time.Time
	b   backoff.Backoff // the waits between its proposals
}

// answer ends a multicast's wait: its acknowledgement, or why it gets none.
type answer struct {
	ack consensus.Sent
	err error
}

// waits recycles the waits of answered multicasts, each with its
// channel: a multicast then allocates nothing of its own (a wait is
// taken out of acks, under ackMu, before it is put back, so nothing
// refers to it then).
var waits = sync.Pool{New: func() any { return &unacked{ch: make(chan answer, 1)} }}

// tell gives u its answer, unless it has one. The caller holds ackMu.
func (u *unacked) tell(a answer) {
	select {
	case u.ch <- a:
	default:
	}
}

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
	r := &Replicated{svc: svc, self: n.Self(), origin: (rand.Uint64N(1<<46)+1)<<16 | uint64(n.Self())&0xffff,
		retry: 2 * cfg.ElectionTimeout, progress: backoff.NewProgress(2 * cfg.ElectionTimeout), window: make(chan struct{}, consensus.Window/2),
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

// resend proposes again the multicasts not yet acknowledged, each after
// its wait (package backoff: doubling from the retry interval up to
// backoff.Max, with jitter), and all at once, their waits started over,
// when the log moves again at this node after a quiet spell (a partition
// healed, a leader elected): one goroutine for all of them, rather than a
// timer each. Once the service stops, it tells them so (they wait on
// their own channels only: a channel every waiter watches would be a lock
// they all take).
func (r *Replicated) resend() {
	tick := time.NewTicker(r.retry / 4)
	defer tick.Stop()
	var due []consensus.Send
	resumed := r.progress.Resumed()
	for {
		moved := false
		select {
		case <-tick.C:
		case <-resumed:
			resumed, moved = r.progress.Resumed(), true
		case <-r.svc.Done():
			r.ackMu.Lock()
			r.stopped = true
			for _, u := range r.acks {
				u.tell(answer{err: live.ErrClosed})
			}
			r.ackMu.Unlock()
			return
		}
		now := time.Now()
		r.ackMu.Lock()
		for _, u := range r.acks {
			if moved {
				u.b.Reset()
			}
			if moved || !now.Before(u.due) {
				due = append(due, u.in)
				u.due = now.Add(u.b.Next())
			}
		}
		r.ackMu.Unlock()
		slices.SortFunc(due, func(a, b consensus.Send) int { return cmp.Compare(a.Seq, b.Seq) })
		for i, in := range due {
			r.proposals.Add(1)
			if r.svc.Input(in) != nil { // the same number: applied once
				return // stopped; the senders see it
			}
			due[i] = consensus.Send{}
		}
		due = due[:0]
	}
}

// output runs in the service's goroutine for every output, in log order:
// an entry's deliveries (consensus.Delivered), then the acknowledgements
// of the sends this node took (consensus.Acked).
func (r *Replicated) output(o proc.Output) {
	switch o := o.(type) {
	case consensus.Applied, consensus.Restored:
		r.progress.Moved()
	case consensus.Halted:
		r.halt(o)
	case consensus.LostState:
		halt.LostState(slog.Default(), "replicated groups", o)
	case consensus.Resumed:
		if r.halted.Resume() {
			slog.Info("replicated groups resumed: this node restored the leader's snapshot, past the entry it could not apply; it serves the groups again", "entry", o.Index)
		}
	case consensus.Acked:
		r.ackMu.Lock()
		for _, a := range o.Sent {
			if a.Origin != r.origin {
				continue
			}
			if u := r.acks[a.Seq]; u != nil {
				u.tell(answer{ack: a})
			}
		}
		r.ackMu.Unlock()
	case consensus.Delivered:
		r.mu.Lock()
		defer r.mu.Unlock()
		ms := o.Messages
		for len(ms) > 0 { // a run of messages to one group at a time
			k := 1
			for k < len(ms) && ms[k].Group == ms[0].Group {
				k++
			}
			r.deliver(ms[0].Group, ms[:k])
			ms = ms[k:]
		}
	}
}

// halt ends this node's part once its copy of the groups halted
// (consensus.Halted: a committed entry it cannot apply): the multicasts
// waiting here and the listeners here get ErrHalted, and so does every
// call after; the other nodes serve the groups.
func (r *Replicated) halt(h consensus.Halted) {
	if !r.halted.Halt(h) {
		return
	}
	slog.Error("replicated groups halted: a committed entry this node cannot apply; it serves the groups no more, the other nodes do, until the leader's snapshot covers the entry or it restarts able to read it",
		"entry", h.Index, "reason", h.Reason)
	err := r.Halted()
	r.ackMu.Lock()
	for _, u := range r.acks {
		u.tell(answer{err: err})
	}
	r.ackMu.Unlock()
	r.mu.Lock()
	for _, g := range r.groups {
		for s := range g.subs {
			s.fail(err)
		}
	}
	r.mu.Unlock()
}

// Halted is why this node's copy of the groups halted (wrapping
// ErrHalted), or nil.
func (r *Replicated) Halted() error {
	h := r.halted.At()
	if h == nil {
		return nil
	}
	return fmt.Errorf("%w at entry %d of the log, which it cannot apply (%s): the other nodes serve the groups", ErrHalted, h.Index, h.Reason)
}

// ErrHalted: this node's copy of the groups met a committed entry it
// cannot apply (written by a newer version, or damaged) and halted.
var ErrHalted = errors.New("this node's replica of the groups halted")

// deliver keeps messages of group name, consecutive in the log, and hands
// them to the group's listeners. The caller holds mu.
func (r *Replicated) deliver(name string, ms []consensus.GroupMessage) {
	g := r.groups[name]
	if g == nil {
		if len(r.groups) >= MaxGroups {
			return
		}
		g = &logGroup{subs: map[*stream]uint64{}}
		r.groups[name] = g
	}
	ds := r.scratch[:0]
	for _, m := range ms {
		d := Delivery{ID: ID{Origin: proc.ID(m.Origin & 0xffff), Inc: m.Origin >> 16, Seq: m.Seq}, Pos: m.Pos, Body: m.Body}
		if n := len(g.recent); n > g.head {
			last := g.recent[n-1].Pos
			if d.Pos <= last {
				continue // a snapshot's replay of what we delivered already
			}
			if d.Pos > last+1 {
				// A snapshot from far ahead: positions last+1 … d.Pos-1
				// will never be delivered here.
				g.recent, g.head, g.bytes = nil, 0, 0
				for s := range g.subs {
					s.fail(fmt.Errorf("group %q: %w: positions %d to %d were compacted before this node received them", name, ErrCompacted, last+1, d.Pos-1))
				}
			}
		}
		g.recent = append(g.recent, d)
		g.bytes += len(d.Body)
		ds = append(ds, d)
	}
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
	if len(ds) > 0 {
		for s, next := range g.subs {
			// What the listener has had (a replay) is skipped; a jump
			// past what it is owed ends it.
			k := 0
			for next != 0 && k < len(ds) && ds[k].Pos < next {
				k++
			}
			switch {
			case k == len(ds):
			case next != 0 && ds[k].Pos > next:
				s.fail(fmt.Errorf("group %q: %w: positions %d to %d were compacted before this node received them", name, ErrCompacted, next, ds[k].Pos-1))
				delete(g.subs, s)
			default:
				s.pushAll(ds[k:])
				g.subs[s] = ds[len(ds)-1].Pos + 1
			}
		}
	}
	clear(ds) // the bodies are the log's: not kept alive by the scratch
	r.scratch = ds[:0]
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
	case r.window <- struct{}{}: // room: no need to watch ctx (a cheaper send)
	default:
		select {
		case r.window <- struct{}{}:
		case <-ctx.Done():
			return Delivery{}, ctx.Err()
		}
	}
	defer func() { <-r.window }()
	seq := r.seq.Add(1)
	in := consensus.Send{Group: name, Origin: r.origin, Seq: seq, Body: body}
	u := waits.Get().(*unacked)
	u.in, u.b = in, backoff.New(r.retry, r.origin, seq)
	u.due = time.Now().Add(u.b.Next())
	r.ackMu.Lock()
	if r.stopped || r.halted.At() != nil {
		r.ackMu.Unlock()
		u.in = consensus.Send{}
		waits.Put(u)
		if err := r.Halted(); err != nil {
			return Delivery{}, err
		}
		return Delivery{}, live.ErrClosed
	}
	r.acks[seq] = u
	r.ackMu.Unlock()
	defer func() {
		r.ackMu.Lock()
		delete(r.acks, seq)
		r.ackMu.Unlock()
		select { // nothing sends to it now: empty, it serves another
		case <-u.ch:
		default:
		}
		u.in = consensus.Send{} // the body is the caller's
		waits.Put(u)
	}()
	// Sends that reach the service while it works share an entry
	// (consensus.Groups gathers them): under load an entry carries many,
	// and a message alone goes at once. resend proposes it again until it
	// is acknowledged.
	r.proposals.Add(1)
	if err := r.svc.Input(in); err != nil {
		return Delivery{}, err
	}
	var a answer
	select {
	case a = <-u.ch:
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
	switch {
	case a.err != nil:
		return Delivery{}, a.err
	case a.ack.Refused != "":
		return Delivery{}, fmt.Errorf("group %q: %w: %s", name, ErrTooManyGroups, a.ack.Refused)
	}
	return Delivery{ID: ID{Origin: r.self, Inc: r.origin >> 16, Seq: seq}, Pos: a.ack.Pos, Body: body}, nil
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
	if err := r.Halted(); err != nil { // under mu: halt fails the listeners it finds
		r.mu.Unlock()
		return nil, nil, err
	}
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
