package snapshot

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// ID names one snapshot: the process that began it and how many it had
// begun, this one included (1, 2, ...).
type ID struct {
	Initiator proc.ID `json:"initiator"`
	Seq       int     `json:"seq"`
}

// String renders the ID as "p0#1".
func (s ID) String() string { return fmt.Sprintf("%s#%d", s.Initiator, s.Seq) }

func (s ID) less(t ID) bool {
	return s.Initiator < t.Initiator || s.Initiator == t.Initiator && s.Seq < t.Seq
}

// Take is the input that makes a process begin a new snapshot.
type Take struct{}

func (Take) Kind() string { return "take" }

// Marker is the snapshots' control message, one per channel per snapshot.
// In Chandy–Lamport it separates, on a FIFO channel, the messages sent
// before the sender recorded its state from those sent after. In Lai–Yang
// it is the red control message that carries White: how many messages the
// sender sent on this channel while white (before it recorded), so the
// receiver knows how many to wait for.
type Marker struct {
	Snap  ID  `json:"snap"`
	White int `json:"white,omitempty"`
}

func (Marker) Kind() string { return "marker" }

func (m Marker) String() string {
	if m.White > 0 {
		return fmt.Sprintf("marker(%s,white=%d)", m.Snap, m.White)
	}
	return fmt.Sprintf("marker(%s)", m.Snap)
}

// Cut is output when the process records its local state for Snap: it is
// the process's frontier event in the cut. State is what the wrapped
// process's Snapshot returned (nil if it is not a Snapshotter).
type Cut struct {
	Snap  ID  `json:"snap"`
	State any `json:"state"`
}

func (Cut) Kind() string     { return "cut" }
func (c Cut) String() string { return "cut " + c.Snap.String() }

// Recorded is output when the process has recorded the state of every
// incoming channel for Snap: the process's part of the snapshot is done.
type Recorded struct {
	Snap     ID        `json:"snap"`
	Channels []Channel `json:"channels"`
}

func (Recorded) Kind() string     { return "recorded" }
func (r Recorded) String() string { return "recorded " + r.Snap.String() }

// Channel is the recorded state of the channel From → the process: the
// application messages in flight on it across the cut, in arrival order.
type Channel struct {
	From     proc.ID   `json:"from"`
	Messages []Message `json:"messages"`
}

// Message is one recorded message: its kind, its label (its String, as
// the trace shows it) and the message itself.
type Message struct {
	Kind  string       `json:"kind"`
	Label string       `json:"label,omitempty"`
	Body  proc.Message `json:"body"`
}

func record(m proc.Message) Message {
	r := Message{Kind: m.Kind(), Body: m}
	if s, ok := m.(fmt.Stringer); ok {
		r.Label = s.String()
	}
	return r
}

// Snapshotter is implemented by a process that can say what its state is.
// Snapshot returns a value (encoded in the trace as JSON) that does not
// change when the process does.
type Snapshotter interface {
	Snapshot() any
}

func stateOf(p proc.Process) any {
	if s, ok := p.(Snapshotter); ok {
		return s.Snapshot()
	}
	return nil
}

// incoming is a process's incoming channels, in order: its neighbours.
func incoming(env proc.Env) []proc.ID {
	return slices.Clone(env.Neighbors())
}

// appEnv is the Env the wrapped process sees: its sends go through send,
// so the wrapper sees (and may colour) them; everything else is the
// host's Env.
type appEnv struct {
	proc.Env
	send func(to proc.ID, m proc.Message)
}

func (e appEnv) Send(to proc.ID, m proc.Message) { e.send(to, m) }
