package live

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// note is the test algorithm's message; fan is its input: send note i to
// To[i], for every i.
type note struct{ I int }
type fan struct{ To []proc.ID }

func (note) Kind() string { return "note" }
func (fan) Kind() string  { return "fan" }

type fanner struct{}

func (fanner) Start(proc.Env)                          {}
func (fanner) Receive(proc.Env, proc.ID, proc.Message) {}
func (fanner) Timeout(proc.Env, any)                   {}
func (fanner) Input(env proc.Env, in proc.Input) {
	for i, to := range in.(fan).To {
		env.Send(to, note{I: i})
	}
}

// batching records what the host hands it: each Send or SendBatch, as
// "to:notes".
type batching struct {
	mu     sync.Mutex
	calls  []string
	decode func([]byte) int
}

func (b *batching) Start(transport.Handler) error { return nil }
func (b *batching) Addr() net.Addr                { return nil }
func (b *batching) Stats() transport.Stats        { return transport.Stats{} }
func (b *batching) Close() error                  { return nil }
func (b *batching) Send(to proc.ID, p []byte) error {
	return b.SendBatch(to, [][]byte{p})
}
func (b *batching) SendBatch(to proc.ID, ps [][]byte) error {
	var notes []string
	for _, p := range ps {
		notes = append(notes, fmt.Sprint(b.decode(p)))
	}
	b.mu.Lock()
	b.calls = append(b.calls, fmt.Sprintf("%d:%s", to, strings.Join(notes, ",")))
	b.mu.Unlock()
	return nil
}

// fanService runs the fan service on node 0 of n over tr, and sets
// *decode to read a payload's note.
func fanService(t *testing.T, tr Transport, decode *func([]byte) int, n int) *Service {
	node, err := NewNode(Config{Self: 0, N: n, Transport: tr,
		NewCodec: func(m []proc.Message) (Codec, error) { return wire.NewCodec(m) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	s, err := node.Service("fan", proc.Algorithm{Family: "test", Name: "fan", Messages: []proc.Message{note{}},
		New: func(proc.ID, int) proc.Process { return fanner{} }})
	if err != nil {
		t.Fatal(err)
	}
	*decode = func(p []byte) int {
		_, body, flagged, err := splitService(p)
		if err == nil && flagged {
			_, _, body, err = readTrailer(body, n)
		}
		var m proc.Message
		if err == nil {
			m, err = s.codec.Decode(body)
		}
		if err != nil {
			t.Errorf("undecodable payload: %v", err)
			return -1
		}
		return m.(note).I
	}
	return s
}

func (b *batching) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.Join(b.calls, " ")
	b.calls = nil
	return s
}

// The messages an event sends go out when it has been handled: those to one
// member together, the members in the order of their first message. With
// Inputs, the messages of all the inputs go out together.
func TestMessagesLeaveTogetherPerMember(t *testing.T) {
	tr := &batching{}
	s := fanService(t, tr, &tr.decode, 4)
	for !s.turn.TryLock() { // started, and idle
		runtime.Gosched()
	}
	s.turn.Unlock()
	if err := s.Input(fan{To: []proc.ID{2, 1, 2, 3, 1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := tr.take(), "2:0,2 1:1,4 3:3"; got != want {
		t.Errorf("one event: sent %q, want %q", got, want)
	}
	if err := s.Inputs(fan{To: []proc.ID{1}}, fan{To: []proc.ID{2, 1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := tr.take(), "1:0,1 2:0"; got != want {
		t.Errorf("two inputs given together: sent %q, want %q", got, want)
	}
}

// refusing is batching that refuses every Send with refuse while it is
// set.
type refusing struct {
	batching
	refuse error
}

func (r *refusing) Send(to proc.ID, p []byte) error { return r.SendBatch(to, [][]byte{p}) }
func (r *refusing) SendBatch(to proc.ID, ps [][]byte) error {
	r.mu.Lock()
	err := r.refuse
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.batching.SendBatch(to, ps)
}

func (r *refusing) set(err error) {
	r.mu.Lock()
	r.refuse = err
	r.mu.Unlock()
}

// Messages a full queue refuses are held and sent again, in order, once
// the transport takes them — a reliable-channel algorithm must not lose
// them to a burst (a total-order group stalled for good on one). What the
// transport refuses for another reason (the node is closing) is dropped
// and counted.
func TestRefusedMessagesAreSentAgainInOrder(t *testing.T) {
	tr := &refusing{}
	s := fanService(t, tr, &tr.decode, 3)
	tr.set(transport.ErrBackpressure)
	if err := s.Input(fan{To: []proc.ID{1, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Input(fan{To: []proc.ID{1}}); err != nil { // behind the held ones
		t.Fatal(err)
	}
	if got := tr.take(); got != "" {
		t.Fatalf("sent %q while the queues were full", got)
	}
	tr.set(nil)
	got := map[string][]string{} // per member, the notes in the order sent
	n := 0
	deadline := time.Now().Add(10 * time.Second)
	for n < 4 && time.Now().Before(deadline) {
		for _, call := range strings.Fields(tr.take()) {
			to, notes, _ := strings.Cut(call, ":")
			got[to] = append(got[to], strings.Split(notes, ",")...)
			n += len(strings.Split(notes, ","))
		}
		time.Sleep(time.Millisecond)
	}
	if !slices.Equal(got["1"], []string{"0", "1", "0"}) || !slices.Equal(got["2"], []string{"2"}) {
		t.Fatalf("sent again %q, want member 1: 0 1 0, member 2: 2 (in order, per member)", got)
	}
	if d := s.Stats().Dropped; d != 0 {
		t.Errorf("%d messages dropped", d)
	}
	if h := s.node.held.bytes(-1); h != 0 {
		t.Errorf("the node counts %d bytes held once all were sent, want 0", h)
	}

	tr.set(transport.ErrClosed)
	if err := s.Input(fan{To: []proc.ID{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if d := s.Stats().Dropped; d != 2 {
		t.Errorf("refused by a closing transport: %d dropped, want 2", d)
	}
}

// TestDropWarningsAreRateLimited: a peer flooding a node with garbage
// costs the log one line a second, which counts the drops.
func TestDropWarningsAreRateLimited(t *testing.T) {
	var out strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &out}, nil))
	node, err := NewNode(Config{Self: 0, N: 2, Transport: &batching{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	for range 1000 {
		node.deliver(1, []byte{0xff, 0xff, 0xff})
	}
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Count(out.String(), "\n")
	if lines < 1 || lines > 2 {
		t.Fatalf("1000 malformed payloads logged %d lines, want 1 (2 if a second passed):\n%s", lines, out.String())
	}
	if !strings.Contains(out.String(), "drops=1 ") && !strings.Contains(out.String(), "drops=1\n") {
		t.Fatalf("the first line should count 1 drop:\n%s", out.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
