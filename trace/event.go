package trace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Kind is what an event records.
type Kind uint8

// The event kinds. Process events (all but Drop and Dup) belong to the
// history of the process named by Event.Node. Drop and Dup are network
// events: the process never saw them; they are recorded so a run can be
// explained and checked.
const (
	Send    Kind = iota + 1 // Node sent message Msg to Peer
	Recv                    // Node received message Msg from Peer
	Drop                    // the network lost Msg from Peer to Node (Reason says why)
	Dup                     // the network will deliver Msg from Node to Peer twice
	Timer                   // a timer of Node fired (Type is the tag)
	Input                   // Node received an application input
	Output                  // Node produced an output
	Crash                   // Node crashed
	Recover                 // Node recovered with fresh state
	Start                   // Node started (Start was called)
	Join                    // Node joined a running system (absent until now)
	Leave                   // Node left gracefully (after its Leave input)
)

var kindNames = [...]string{"", "send", "recv", "drop", "dup", "timer", "input", "output", "crash", "recover", "start", "join", "leave"}

// String returns the kind's JSON name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if i > 0 && n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q", s)
}

// MarshalJSON encodes the kind as its name.
func (k Kind) MarshalJSON() ([]byte, error) { return []byte(`"` + k.String() + `"`), nil }

// UnmarshalJSON decodes a kind name.
func (k *Kind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("event kind: %w", err)
	}
	v, err := ParseKind(s)
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Stops reports whether the event ends a process's participation: a crash
// or a graceful leave. Checkers treat both as "no longer a member".
func (k Kind) Stops() bool { return k == Crash || k == Leave }

// Begins reports whether the event begins a process's participation with
// fresh state: a start, a recovery or a join.
func (k Kind) Begins() bool { return k == Start || k == Recover || k == Join }

// IsProcess reports whether events of this kind belong to a process history.
func (k Kind) IsProcess() bool { return k != Drop && k != Dup && k != 0 }

// Event is one entry of a trace. Times are nanoseconds since the run began.
type Event struct {
	Index   int             `json:"i"`              // position in the trace, from 0
	Time    int64           `json:"t"`              // true time (ns)
	Node    int32           `json:"node"`           // the process the event happened at
	Kind    Kind            `json:"kind"`           // what happened
	Local   int64           `json:"local"`          // Node's local clock reading (ns)
	Lamport uint64          `json:"lamport"`        // Lamport timestamp (process events)
	VC      VC              `json:"vc,omitzero"`    // vector timestamp, if recorded
	Msg     uint64          `json:"msg,omitempty"`  // message id (send, recv, drop, dup)
	Peer    int32           `json:"peer"`           // other end of a message; -1 if none
	Type    string          `json:"type,omitempty"` // message, input or output kind; timer tag
	Label   string          `json:"label,omitempty"`
	Reason  string          `json:"reason,omitempty"` // why a message was dropped
	Data    json.RawMessage `json:"data,omitempty"`   // the input or output value as JSON
	// Service is the live service the event belongs to ("lock/x",
	// "election/e"), in the trace of a live node that runs several; ""
	// in a simulated run, and for events of the whole node (crash,
	// recover). Checkers judge each service's events apart.
	Service string `json:"svc,omitempty"`
	// State is the process's own description of its state after the step
	// this event ends (proc.Describer), as JSON; recorded only when the
	// run asks for states (sim.Config.States), on the last event of each
	// step of a process that describes itself.
	State json.RawMessage `json:"state,omitempty"`
}

// Header is the first line of a JSONL trace.
type Header struct {
	Format string `json:"format"` // always FormatName
	// Nodes is the number of processes, IDs 0 .. Nodes−1: each has a
	// lane in the pictures, and a vector timestamp an entry. In a trace
	// whose processes may join (IDs > 0), it is at least one more than the
	// highest process ID the trace names: a file that a live node begins
	// says how many founders it knew of, and Read raises it to cover the
	// processes that joined since; there, only the processes the events
	// name have a lane (Trace.Lanes), as IDs may be far apart.
	Nodes int `json:"nodes"`
	// IDs, if not 0, is the ID space of a run that processes join while
	// it runs (a live cluster that takes members): the trace may name any
	// process below IDs, and its vector timestamps grow as processes
	// join. They are written as maps keyed by process ID, {"0":3,"7":1},
	// with the zero entries left out, rather than as arrays of Nodes
	// entries (see Header.AppendEvent). 0: a trace of Nodes processes,
	// as every simulated run's is.
	IDs    int    `json:"ids,omitempty"`
	Family string `json:"family,omitempty"`
	Algo   string `json:"algo,omitempty"`
	Seed   uint64 `json:"seed"`
}

// FormatName identifies Cohort's JSONL trace format and its version.
const FormatName = "cohort-trace/1"

// Open reports whether processes may join the run (IDs is set): its
// vector timestamps grow, and are written keyed by process ID.
func (h *Header) Open() bool { return h.IDs > 0 }

// AppendEvent appends e's JSON encoding in a trace of this header: its
// vector timestamp as a map keyed by process ID if the trace is open,
// else as an array (e.AppendJSON).
func (h *Header) AppendEvent(b []byte, e *Event) []byte { return e.appendJSON(b, h.Open()) }

// AppendJSON appends the event's JSON encoding (no newline) to b, its
// vector timestamp, if any, as an array: entry p is process p's. The
// encoding is canonical: the same event always gives the same bytes, which
// is what makes trace hashes comparable across runs.
func (e *Event) AppendJSON(b []byte) []byte { return e.appendJSON(b, false) }

// appendJSON is AppendJSON, with the vector timestamp keyed by process
// ID if sparse: {"0":3,"7":1}, its nonzero entries in ascending order.
func (e *Event) appendJSON(b []byte, sparse bool) []byte {
	b = append(b, `{"i":`...)
	b = strconv.AppendInt(b, int64(e.Index), 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = append(b, `,"node":`...)
	b = strconv.AppendInt(b, int64(e.Node), 10)
	b = append(b, `,"kind":"`...)
	b = append(b, e.Kind.String()...)
	b = append(b, `","local":`...)
	b = strconv.AppendInt(b, e.Local, 10)
	b = append(b, `,"lamport":`...)
	b = strconv.AppendUint(b, e.Lamport, 10)
	switch {
	case e.VC.IsZero():
	case sparse:
		b = appendSparseVC(append(b, `,"vc":`...), e.VC)
	default:
		b = append(b, `,"vc":[`...)
		for i, v := range e.VC.Dense() {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, v, 10)
		}
		b = append(b, ']')
	}
	if e.Msg != 0 {
		b = append(b, `,"msg":`...)
		b = strconv.AppendUint(b, e.Msg, 10)
	}
	b = append(b, `,"peer":`...)
	b = strconv.AppendInt(b, int64(e.Peer), 10)
	if e.Type != "" {
		b = append(b, `,"type":`...)
		b = appendString(b, e.Type)
	}
	if e.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, e.Label)
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, e.Reason)
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	if e.Service != "" {
		b = append(b, `,"svc":`...)
		b = appendString(b, e.Service)
	}
	if len(e.State) > 0 {
		b = append(b, `,"state":`...)
		b = append(b, e.State...)
	}
	return append(b, '}')
}

// String is a one-line human rendering used in counterexamples:
// "#12 t=3.000ms p2 recv REQ(ts=4,p1) from p1 L=7 VC=[2,3,0]".
func (e *Event) String() string {
	s := fmt.Sprintf("#%d t=%s p%d %s", e.Index, FormatNS(e.Time), e.Node, e.Kind)
	what := e.Label
	if what == "" {
		what = e.Type
	}
	if what != "" {
		s += " " + what
	}
	switch e.Kind {
	case Send, Dup:
		s += fmt.Sprintf(" to p%d", e.Peer)
	case Recv, Drop:
		s += fmt.Sprintf(" from p%d", e.Peer)
	}
	if e.Msg != 0 {
		s += fmt.Sprintf(" msg=%d", e.Msg)
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Kind.IsProcess() {
		s += fmt.Sprintf(" L=%d", e.Lamport)
	}
	if !e.VC.IsZero() {
		s += " VC=" + e.VC.String()
	}
	return s
}

// appendSparseVC appends vc as a JSON object of its nonzero entries keyed
// by process ID, in ascending order: {"0":3,"7":1}.
func appendSparseVC(b []byte, vc VC) []byte {
	b = append(b, '{')
	first := true
	for p, v := range vc.Entries() {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, v, 10)
	}
	return append(b, '}')
}

// FormatVC renders a vector timestamp as "[2,1,0]".
func FormatVC(vc []uint64) string {
	b := []byte{'['}
	for i, v := range vc {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, v, 10)
	}
	return string(append(b, ']'))
}

// FormatNS renders nanoseconds compactly with a unit: 1.500ms, 20s, 350ns.
func FormatNS(ns int64) string {
	switch a := max(ns, -ns); {
	case a >= 1e9:
		return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) + "s"
	case a >= 1e6:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) + "ms"
	case a >= 1e3:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', 3, 64) + "µs"
	default:
		return strconv.FormatInt(ns, 10) + "ns"
	}
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so the output is always valid JSON.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
