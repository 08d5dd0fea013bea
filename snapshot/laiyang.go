package snapshot

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Lai and Yang's snapshot algorithm for channels that need not be FIFO
// (Lai & Yang, Information Processing Letters 1987; Kshemkalyani &
// Singhal §4.4), with the channel states of Mattern's variant (Mattern,
// J. Parallel Distrib. Comput. 1993):
//
//	1. Every process is initially white and turns red while taking a
//	   snapshot. The equivalent of the marker sending rule is executed
//	   when a process turns red.
//	2. Every message sent by a white process is coloured white, every
//	   message sent by a red process red.
//	3. Every white process takes its snapshot at its convenience, but no
//	   later than the instant it receives a red message.
//	4. The state of channel c from pi to pj is the white messages sent by
//	   pi on c less the white messages received by pj on c.
//
// A red message is received after its receiver has turned red, so every
// message received inside the cut was sent inside it: the cut is
// consistent whatever the order of delivery. Lai and Yang compute rule 4
// by keeping, at every process, the history of every white message sent
// and received on each channel, sent to the initiator with the snapshot:
// memory that grows with the run. We use Mattern's counters instead,
// which need O(1) per channel and let each process know, by itself, when
// its channels are recorded: on turning red, pi sends on each outgoing
// channel one (red) marker carrying the number of white messages it sent
// on it; pj records the white messages that reach it after it turned red
// — exactly those sent before pi's cut and received after pj's — and the
// channel's state is complete once pj has received, white, as many as the
// marker announced. The marker is also what turns a process red that
// would otherwise never receive a red message.
//
// Several snapshots at once: a process is red or white for each snapshot
// apart. Its colour is, for every initiator, the last of that initiator's
// snapshots it has recorded; a message carries its sender's colour, and is
// red for snapshot p#k if the colour holds p#j for some j ≥ k. A process
// records p#k only after p#(k−1), so "red for p#k" implies "red for every
// earlier snapshot of p": a message piggybacks one entry per initiator.
//
// Assumes: reliable channels without duplication (a lost white message
// never arrives and its channel is never complete; a duplicate is counted
// twice); any order of delivery; a connected graph of channels; no
// failures.
//
// Cost: one marker per directed channel per snapshot, like Chandy–Lamport,
// and the colour on every application message (an entry per initiator);
// complete about diameter + 1 message delays after it begins, as long as
// the white messages in flight do not take longer.

// LaiYang runs App, unchanged but for the colour its messages carry, and
// records snapshots of it. M is the type of App's messages: a concrete
// type (the bank's Money) makes the coloured messages concrete, as the
// live runtime's codec needs; proc.Message takes any (in the simulator).
type LaiYang[M proc.Message] struct {
	App proc.Process

	colour    []ID              // per initiator, the last snapshot recorded here; never modified in place (messages share it)
	sent      map[proc.ID]int   // application messages sent on each outgoing channel
	received  map[proc.ID]int   // application messages received on each incoming channel
	recording []*whiteRecording // snapshots with a channel still recording
}

// Coloured is an application message with its sender's colour. Its kind
// and its label are the application message's: the colour is bookkeeping,
// like a piggybacked clock.
type Coloured[M proc.Message] struct {
	Colour []ID `json:"colour,omitempty"`
	M      M    `json:"m"`
}

func (c Coloured[M]) Kind() string { return c.M.Kind() }

func (c Coloured[M]) String() string {
	if s, ok := any(c.M).(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// redFor reports whether a process of this colour has recorded snapshot id.
func redFor(colour []ID, id ID) bool {
	i := slices.IndexFunc(colour, func(c ID) bool { return c.Initiator == id.Initiator })
	return i >= 0 && colour[i].Seq >= id.Seq
}

// whiteRecording is one snapshot's channel recording at a process.
type whiteRecording struct {
	recording
	got    []int // got[i]: white messages received on from[i], before and after turning red
	expect []int // expect[i]: the white messages from[i] sent on the channel, from its marker; −1 until then
}

// NewLaiYang wraps app, whose messages are all of type M.
func NewLaiYang[M proc.Message](app proc.Process) *LaiYang[M] {
	return &LaiYang[M]{App: app, sent: map[proc.ID]int{}, received: map[proc.ID]int{}}
}

// env gives the application an Env whose sends carry the colour (rule 2).
func (p *LaiYang[M]) env(env proc.Env) proc.Env {
	return appEnv{Env: env, send: func(to proc.ID, m proc.Message) {
		mm, ok := m.(M)
		if !ok {
			panic(fmt.Sprintf("lai-yang at %s: the wrapped process sent a %T, not a %T", env.Self(), m, mm))
		}
		p.sent[to]++
		env.Send(to, Coloured[M]{Colour: p.colour, M: mm})
	}}
}

func (p *LaiYang[M]) Start(env proc.Env)            { p.App.Start(p.env(env)) }
func (p *LaiYang[M]) Timeout(env proc.Env, tag any) { p.App.Timeout(p.env(env), tag) }

// Snapshot is the wrapped process's state: a wrapper can be wrapped.
func (p *LaiYang[M]) Snapshot() any { return stateOf(p.App) }

// Input begins a snapshot on Take (the process turns red for it); any
// other input is the application's.
func (p *LaiYang[M]) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Take); ok {
		p.turnRed(env, ID{Initiator: env.Self(), Seq: p.last(env.Self()) + 1})
		return
	}
	p.App.Input(p.env(env), in)
}

// last is the last snapshot of initiator q recorded here (0: none).
func (p *LaiYang[M]) last(q proc.ID) int {
	if i := slices.IndexFunc(p.colour, func(c ID) bool { return c.Initiator == q }); i >= 0 {
		return p.colour[i].Seq
	}
	return 0
}

// Receive: a marker, or a coloured application message. A red message is
// received only once the process is red for its snapshots (rule 3); a
// white one that arrives after the process turned red was in flight
// across the cut: it is recorded in its channel's state (rule 4).
func (p *LaiYang[M]) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Marker:
		p.redUpTo(env, m.Snap)
		p.onMarker(env, from, m)
	case Coloured[M]:
		for _, c := range m.Colour {
			p.redUpTo(env, c)
		}
		p.received[from]++
		for _, r := range slices.Clone(p.recording) {
			if c := r.channel(from); c >= 0 && r.open[c] && !redFor(m.Colour, r.id) {
				r.msgs[c] = append(r.msgs[c], record(m.M))
				r.got[c]++
				p.maybeClose(env, r, c)
			}
		}
		p.App.Receive(p.env(env), from, m.M)
	default: // from a process that is not wrapped: it has no colour
		p.App.Receive(p.env(env), from, m)
	}
}

// redUpTo turns the process red for id and, first, for every earlier
// snapshot of the same initiator it has not recorded.
func (p *LaiYang[M]) redUpTo(env proc.Env, id ID) {
	for seq := p.last(id.Initiator) + 1; seq <= id.Seq; seq++ {
		p.turnRed(env, ID{Initiator: id.Initiator, Seq: seq})
	}
}

// turnRed records the process's state for id and sends each neighbour a
// marker with the count of white messages sent to it (rule 1).
func (p *LaiYang[M]) turnRed(env proc.Env, id ID) {
	colour := slices.DeleteFunc(slices.Clone(p.colour), func(c ID) bool { return c.Initiator == id.Initiator })
	colour = append(colour, id)
	slices.SortFunc(colour, func(a, b ID) int { return int(a.Initiator) - int(b.Initiator) })
	p.colour = colour
	env.Output(Cut{Snap: id, State: stateOf(p.App)})
	from := incoming(env)
	r := &whiteRecording{recording: *newRecording(id, from), got: make([]int, len(from)), expect: make([]int, len(from))}
	for i, q := range from {
		r.got[i] = p.received[q] // every message received so far was white for id
		r.expect[i] = -1
	}
	for _, q := range env.Neighbors() {
		env.Send(q, Marker{Snap: id, White: p.sent[q]})
	}
	if r.left == 0 {
		env.Output(r.result())
		return
	}
	p.recording = append(p.recording, r)
}

func (p *LaiYang[M]) onMarker(env proc.Env, from proc.ID, m Marker) {
	i := slices.IndexFunc(p.recording, func(r *whiteRecording) bool { return r.id == m.Snap })
	if i < 0 {
		return
	}
	r := p.recording[i]
	if c := r.channel(from); c >= 0 && r.expect[c] < 0 {
		r.expect[c] = m.White
		p.maybeClose(env, r, c)
	}
}

// maybeClose closes channel c of r once all its white messages are in;
// the snapshot is recorded here once every channel is closed.
func (p *LaiYang[M]) maybeClose(env proc.Env, r *whiteRecording, c int) {
	if !r.open[c] || r.expect[c] < 0 || r.got[c] < r.expect[c] {
		return
	}
	r.open[c] = false
	r.left--
	if r.left == 0 {
		p.recording = slices.DeleteFunc(p.recording, func(x *whiteRecording) bool { return x == r })
		env.Output(r.result())
	}
}
