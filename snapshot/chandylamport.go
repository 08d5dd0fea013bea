package snapshot

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Chandy and Lamport's snapshot algorithm (Chandy & Lamport, ACM TOCS
// 1985; Coulouris et al. §14.5.3, whose wording the handlers follow):
//
//	Marker receiving rule for process pi
//	  On pi's receipt of a marker message over channel c:
//	    if (pi has not yet recorded its state) it
//	      records its process state now;
//	      records the state of c as the empty set;
//	      turns on recording of messages arriving over other incoming channels;
//	    else
//	      pi records the state of c as the set of messages it has received
//	      over c since it saved its state.
//	    end if
//	Marker sending rule for process pi
//	  After pi has recorded its state, for each outgoing channel c:
//	    pi sends one marker message over c
//	    (before it sends any other message over c).
//
// Any process may begin a snapshot at any time (the Take input) by
// recording its state as if it had received a marker. Snapshots begun at
// once by several processes, or one after another, are told apart by the
// ID each marker carries, and recorded side by side.
//
// Assumes: reliable FIFO channels — the marker must follow, on its
// channel, every message sent before it, and no message sent after it may
// overtake it (a reordering network breaks the channel states and the
// cut's consistency: the tests show it); a strongly connected graph of
// channels, so every process gets a marker; no failures.
//
// Cost: one marker per directed channel per snapshot, 2|E| for a graph of
// |E| edges (n(n−1) on the complete graph); a snapshot is complete, at
// every process, about diameter + 1 message delays after it begins (the
// farthest process records its state after diameter delays, and its
// channels' markers come one delay later).

// ChandyLamport runs App, unchanged, and records snapshots of it.
type ChandyLamport struct {
	App proc.Process

	began     int          // snapshots this process has begun
	recorded  map[ID]bool  // snapshots whose local state is recorded here
	recording []*recording // snapshots with a channel still recording

	// forgetChannels records every channel's state as empty: a broken
	// variant, for the tests (the channels checker catches it).
	forgetChannels bool
}

// recording is one snapshot's channel recording at a process.
type recording struct {
	id   ID
	from []proc.ID   // the incoming channels
	msgs [][]Message // msgs[i]: recorded on from[i] so far
	open []bool      // open[i]: recording from[i] (no marker yet)
	left int         // channels still open
}

func newRecording(id ID, from []proc.ID) *recording {
	r := &recording{id: id, from: from, msgs: make([][]Message, len(from)), open: make([]bool, len(from)), left: len(from)}
	for i := range r.open {
		r.open[i] = true
	}
	return r
}

func (r *recording) channel(from proc.ID) int { return slices.Index(r.from, from) }

// result is the recorded channel states, for the Recorded output.
func (r *recording) result() Recorded {
	out := Recorded{Snap: r.id, Channels: make([]Channel, len(r.from))}
	for i, q := range r.from {
		out.Channels[i] = Channel{From: q, Messages: r.msgs[i]}
		if out.Channels[i].Messages == nil {
			out.Channels[i].Messages = []Message{}
		}
	}
	return out
}

// NewChandyLamport wraps app.
func NewChandyLamport(app proc.Process) *ChandyLamport {
	return &ChandyLamport{App: app, recorded: map[ID]bool{}}
}

func (p *ChandyLamport) Start(env proc.Env)            { p.App.Start(env) }
func (p *ChandyLamport) Timeout(env proc.Env, tag any) { p.App.Timeout(env, tag) }

// Snapshot is the wrapped process's state: a wrapper can be wrapped.
func (p *ChandyLamport) Snapshot() any { return stateOf(p.App) }

// Input begins a snapshot on Take; any other input is the application's.
func (p *ChandyLamport) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Take); ok {
		p.began++
		p.recordState(env, ID{Initiator: env.Self(), Seq: p.began})
		return
	}
	p.App.Input(env, in)
}

// Receive applies the marker receiving rule to a marker; any other
// message is the application's, recorded first on every channel that is
// recording.
func (p *ChandyLamport) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if mk, ok := m.(Marker); ok {
		p.onMarker(env, from, mk.Snap)
		return
	}
	for _, r := range p.recording {
		if i := r.channel(from); i >= 0 && r.open[i] && !p.forgetChannels {
			r.msgs[i] = append(r.msgs[i], record(m))
		}
	}
	p.App.Receive(env, from, m)
}

func (p *ChandyLamport) onMarker(env proc.Env, from proc.ID, id ID) {
	if !p.recorded[id] {
		p.recordState(env, id) // and c's state is the empty set: closed at once below
	}
	i := slices.IndexFunc(p.recording, func(r *recording) bool { return r.id == id })
	if i < 0 {
		return // every channel of id is recorded already (a duplicate marker)
	}
	r := p.recording[i]
	c := r.channel(from)
	if c < 0 || !r.open[c] {
		return
	}
	r.open[c] = false
	r.left--
	if r.left == 0 {
		p.recording = slices.Delete(p.recording, i, i+1)
		env.Output(r.result())
	}
}

// recordState records the process's state for snapshot id, turns on the
// recording of every incoming channel, and applies the marker sending rule.
func (p *ChandyLamport) recordState(env proc.Env, id ID) {
	p.recorded[id] = true
	env.Output(Cut{Snap: id, State: stateOf(p.App)})
	r := newRecording(id, incoming(env))
	for _, q := range env.Neighbors() {
		env.Send(q, Marker{Snap: id})
	}
	if r.left == 0 { // a process with no channels: nothing to wait for
		env.Output(r.result())
		return
	}
	p.recording = append(p.recording, r)
}
