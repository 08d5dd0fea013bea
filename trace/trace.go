package trace

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
)

// Trace is a whole run in memory.
type Trace struct {
	Header Header
	Events []Event
}

// Sink receives events as a host produces them, in order. The event is only
// valid during the call; a sink that keeps it must copy it (its VC and Data
// slices are not reused by the simulator, so a shallow copy suffices).
type Sink interface {
	Record(e *Event)
}

// Recorder is a Sink that keeps every event in memory.
type Recorder struct {
	Trace Trace
}

// Record implements Sink.
func (r *Recorder) Record(e *Event) { r.Trace.Events = append(r.Trace.Events, *e) }

// Tee returns a Sink that records to every non-nil sink given, in order; nil
// if there are none.
func Tee(sinks ...Sink) Sink {
	var live []Sink
	for _, s := range sinks {
		if s != nil {
			live = append(live, s)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return tee(live)
}

type tee []Sink

func (t tee) Record(e *Event) {
	for _, s := range t {
		s.Record(e)
	}
}

// Hasher is a Sink that computes the SHA-256 of the trace's canonical JSONL
// encoding (the header line and every event line, as Writer writes them).
// Two runs with equal hashes produced byte-identical traces.
type Hasher struct {
	h      hash.Hash
	header Header
	buf    []byte
	events int64
}

// NewHasher starts a hash with the header line.
func NewHasher(h Header) *Hasher {
	x := &Hasher{h: sha256.New(), header: h}
	x.h.Write(headerLine(h))
	return x
}

// Record implements Sink.
func (x *Hasher) Record(e *Event) {
	x.buf = append(x.header.AppendEvent(x.buf[:0], e), '\n')
	x.h.Write(x.buf)
	x.events++
}

// Events is the number of events recorded so far.
func (x *Hasher) Events() int64 { return x.events }

// Sum returns the hex SHA-256 of everything recorded so far.
func (x *Hasher) Sum() string { return hex.EncodeToString(x.h.Sum(nil)) }

func headerLine(h Header) []byte {
	h.Format = FormatName
	b, _ := json.Marshal(h) // a struct of strings and ints cannot fail
	return append(b, '\n')
}

// Writer is a Sink that writes JSON Lines. Call Flush when the run ends and
// check its error: Record cannot return one, so the first write error is
// kept and reported by Flush.
type Writer struct {
	w      *bufio.Writer
	header Header
	buf    []byte
	err    error
}

// NewWriter writes the header line and returns a Writer for the events.
func NewWriter(w io.Writer, h Header) *Writer {
	x := NewEventWriter(w, h)
	_, x.err = x.w.Write(headerLine(h))
	return x
}

// NewEventWriter returns a Writer that appends events to a trace whose
// header h is already written (a node continuing its trace after a
// restart).
func NewEventWriter(w io.Writer, h Header) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16), header: h}
}

// Record implements Sink.
func (x *Writer) Record(e *Event) {
	if x.err != nil {
		return
	}
	x.buf = append(x.header.AppendEvent(x.buf[:0], e), '\n')
	_, x.err = x.w.Write(x.buf)
}

// Flush writes buffered lines and returns the first error met.
func (x *Writer) Flush() error {
	if x.err != nil {
		return x.err
	}
	return x.w.Flush()
}

// Write writes a whole trace as JSON Lines.
func Write(w io.Writer, t *Trace) error {
	x := NewWriter(w, t.Header)
	for i := range t.Events {
		x.Record(&t.Events[i])
	}
	return x.Flush()
}

// ErrFormat is wrapped by every error Read returns for a malformed trace.
var ErrFormat = errors.New("malformed trace")

// MaxLine is the longest line Read accepts (bytes).
const MaxLine = 16 << 20

// Read parses a JSONL trace. Errors name the line and what is wrong with it;
// the events must be numbered 0, 1, 2 ... in order, name existing nodes, and
// link receives to messages by id (that they do so correctly is for the
// checkers to judge).
//
// A vector timestamp is an array of Nodes entries, or, in a trace whose
// processes may join (Header.IDs), an array of at most IDs entries or an
// object keyed by process ID ({"0":3,"7":1}; an absent entry is 0).
// Either way, Event.VC holds it indexed by process ID — in an open
// trace without its trailing zeros, and by process ID only (sparse) when
// that is the smaller form (see VC): the vector grows as processes join,
// and an absent entry is 0, as logical.Vector reads it — while Header.Nodes is raised to one more than the highest process ID
// the trace names (so that every process has a lane).
func Read(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	t := &Trace{}
	line, header := 0, false
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if !header {
			header = true
			if err := strictUnmarshal(text, &t.Header); err != nil {
				return nil, fmt.Errorf("%w: line %d (header): %v", ErrFormat, line, err)
			}
			if t.Header.Format != FormatName {
				return nil, fmt.Errorf("%w: line %d: format %q, want %q", ErrFormat, line, t.Header.Format, FormatName)
			}
			if t.Header.Nodes < 1 || t.Header.Nodes > math.MaxInt32 {
				return nil, fmt.Errorf("%w: line %d: nodes = %d, want 1..%d", ErrFormat, line, t.Header.Nodes, math.MaxInt32)
			}
			if h := t.Header; h.IDs != 0 && (h.IDs < h.Nodes || h.IDs > MaxIDs) {
				return nil, fmt.Errorf("%w: line %d: ids = %d, want 0 or nodes (%d) .. %d", ErrFormat, line, h.IDs, h.Nodes, MaxIDs)
			}
			continue
		}
		w := wireEvent{Event: Event{Peer: -1}}
		if err := strictUnmarshal(text, &w); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		e := w.Event
		var err error
		if e.VC, err = t.parseVC(w.VC); err != nil {
			return nil, fmt.Errorf("%w: line %d: vector timestamp: %v", ErrFormat, line, err)
		}
		if err := t.validate(&e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		// Keep Data and State canonical (compact), so a trace read back
		// re-encodes to the same bytes and the same hash.
		e.Data, e.State = compact(e.Data), compact(e.State)
		t.Events = append(t.Events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line+1, err)
	}
	if !header {
		return nil, fmt.Errorf("%w: empty input, want a header line", ErrFormat)
	}
	if t.Header.Open() {
		t.Header.Nodes = max(t.Header.Nodes, t.Processes())
	}
	// The checkers keep state per process: a header may not claim more
	// processes than the trace can be about, so that what a reader
	// allocates for them is bounded by the trace's own size.
	if t.Header.Nodes > len(t.Events)+MaxIdleNodes {
		return nil, fmt.Errorf("%w: header: nodes = %d, but the trace holds %d events (a trace may claim at most %d more processes than it has events)",
			ErrFormat, t.Header.Nodes, len(t.Events), MaxIdleNodes)
	}
	return t, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return raw
	}
	return c.Bytes()
}

// MaxIdleNodes is how many processes without an event a trace may have.
const MaxIdleNodes = 1 << 16

// MaxIDs bounds the ID space of a trace whose processes may join
// (Header.IDs): that of a live cluster that takes members.
const MaxIDs = 1 << 16

// Lanes are the processes a picture of t gives a lane, in increasing
// order of ID: every process an event names, as its node or its peer,
// and, in a trace of a fixed set of processes (not Header.Open), every
// process 0 .. Nodes−1 its header counts, even one without an event. A
// trace that processes join names its members by ID, and the IDs may be
// far apart (founders 0..2 and a member 60000 that joined): only the
// processes it names have a lane, not every ID up to the highest.
func (t *Trace) Lanes() []int32 { return lanes(&t.Header, t.Events) }

// lanes are Trace.Lanes of a header and some of its events.
func lanes(h *Header, events []Event) []int32 {
	var out []int32
	seen := map[int32]bool{}
	if !h.Open() {
		// Bounded by Read (MaxIdleNodes more than the events).
		for p := range int32(max(h.Nodes, 0)) {
			out = append(out, p)
			seen[p] = true
		}
	}
	add := func(p int32) {
		if p >= 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for i := range events {
		add(events[i].Node)
		add(events[i].Peer)
	}
	slices.Sort(out)
	return out
}

// Processes is one more than the highest process ID t names, as an
// event's node or peer or in a vector timestamp; 0 if none.
func (t *Trace) Processes() int {
	n := 0
	for i := range t.Events {
		e := &t.Events[i]
		n = max(n, int(e.Node)+1, int(e.Peer)+1, e.VC.Len())
	}
	return n
}

// wireEvent is an event as a line of the file holds it: its vector
// timestamp is checked and laid out by parseVC, which knows the header.
type wireEvent struct {
	Event
	VC rawVC `json:"vc"`
}

// rawVC is a vector timestamp as written: an array of entries, or an
// object of entries keyed by process ID (keys holds them: decimal, in
// the order written). It is parsed by hand, without reflection: every
// event of a trace may carry one.
type rawVC struct {
	set    bool // the field was there, and not null
	object bool
	keys   []int
	vals   []uint64
}

// UnmarshalJSON implements json.Unmarshaler. b is one well-formed JSON
// value (the decoder has scanned it).
func (r *rawVC) UnmarshalJSON(b []byte) error {
	if err := r.parse(b); err != nil {
		return fmt.Errorf("vector timestamp: %w", err)
	}
	return nil
}

func (r *rawVC) parse(b []byte) error {
	*r = rawVC{}
	at := func(i int) byte { // b's byte i; 0 past its end
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	i := skipSpace(b, 0)
	switch {
	case bytes.HasPrefix(b[i:], []byte("null")):
		return nil
	case at(i) == '[':
	case at(i) == '{':
		r.object = true
	default:
		return errors.New("want an array or an object")
	}
	r.set = true
	end := byte(']')
	if r.object {
		end = '}'
	}
	i = skipSpace(b, i+1)
	if at(i) == end {
		return nil
	}
	entries := bytes.Count(b, []byte{','}) + 1 // (no string holds one: keys are digits)
	r.vals = make([]uint64, 0, entries)
	if r.object {
		r.keys = make([]int, 0, entries)
	}
	for {
		if r.object {
			// A key: a process ID, in decimal, with no escapes.
			q := bytes.IndexByte(b[min(i+1, len(b)):], '"')
			if at(i) != '"' || q < 0 {
				return errors.New("want a key")
			}
			k := string(b[i+1 : i+1+q])
			p, err := strconv.Atoi(k)
			if err != nil || p < 0 || strconv.Itoa(p) != k {
				return fmt.Errorf("key %q is not a process ID", k)
			}
			r.keys = append(r.keys, p)
			if i = skipSpace(b, i+q+2); at(i) != ':' {
				return errors.New("want a colon after a key")
			}
			i = skipSpace(b, i+1)
		}
		j := i
		for at(j) >= '0' && at(j) <= '9' {
			j++
		}
		v, err := strconv.ParseUint(string(b[i:j]), 10, 64)
		next := skipSpace(b, j)
		if err != nil || at(next) != ',' && at(next) != end {
			return fmt.Errorf("entry %d, %.12q...: want a count (0 .. 2^64−1)", len(r.vals), b[i:])
		}
		r.vals = append(r.vals, v)
		if at(next) == end {
			return nil
		}
		i = skipSpace(b, next+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// parseVC lays out a vector timestamp. An object is read only in an open
// trace; there, trailing zeros are cut off, so that an array and an
// object read alike, and the vector is held in the smaller form
// (CompactVC). null or absent: none.
func (t *Trace) parseVC(r rawVC) (VC, error) {
	if !r.set {
		return VC{}, nil
	}
	open := t.Header.Open()
	switch {
	case !r.object && !open:
		return DenseVC(r.vals), nil // its length is checked by validate
	case !r.object && len(r.vals) > t.Header.IDs:
		return VC{}, fmt.Errorf("%d entries, in an ID space of %d", len(r.vals), t.Header.IDs)
	case !r.object:
		return CompactVC(r.vals), nil
	case !open:
		return VC{}, errors.New("a map keyed by process ID, in a trace whose header names no ID space (ids)")
	}
	for _, p := range r.keys {
		if p >= t.Header.IDs {
			return VC{}, fmt.Errorf("process %d beyond the ID space 0..%d", p, t.Header.IDs-1)
		}
	}
	return sparseVC(r.keys, r.vals), nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func (t *Trace) validate(e *Event) error {
	if e.Index != len(t.Events) {
		return fmt.Errorf("event index %d, want %d", e.Index, len(t.Events))
	}
	if e.Kind == 0 {
		return errors.New(`missing field "kind"`)
	}
	n := int32(t.Header.Nodes)
	if t.Header.Open() {
		n = int32(t.Header.IDs) // the vector's length is checked by parseVC
	} else if !e.VC.IsZero() && e.VC.Len() != int(n) {
		return fmt.Errorf("vector timestamp has %d entries, want %d", e.VC.Len(), n)
	}
	if e.Node < 0 || e.Node >= n {
		return fmt.Errorf("node %d out of range 0..%d", e.Node, n-1)
	}
	if e.Peer < -1 || e.Peer >= n {
		return fmt.Errorf("peer %d out of range -1..%d", e.Peer, n-1)
	}
	switch e.Kind {
	case Send, Recv, Drop, Dup:
		if e.Msg == 0 {
			return fmt.Errorf("%s event without a message id", e.Kind)
		}
		if e.Peer < 0 {
			return fmt.Errorf("%s event without a peer", e.Kind)
		}
	}
	if len(t.Events) > 0 && e.Time < t.Events[len(t.Events)-1].Time {
		return fmt.Errorf("time %d goes back from %d", e.Time, t.Events[len(t.Events)-1].Time)
	}
	return nil
}

// Count is the number of events of the trace of a kind and, unless typ is
// "", of that type: t.Count(Output, "enter") counts the entries.
func (t *Trace) Count(kind Kind, typ string) int {
	n := 0
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == kind && (typ == "" || e.Type == typ) {
			n++
		}
	}
	return n
}
