package live

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// blob is a large message; blobs sends k of them, each of size bytes, to
// member To.
type blob struct{ B []byte }
type blobs struct {
	To      proc.ID
	K, Size int
}

func (blob) Kind() string  { return "blob" }
func (blobs) Kind() string { return "blobs" }

type blobber struct{}

func (blobber) Start(proc.Env)                          {}
func (blobber) Receive(proc.Env, proc.ID, proc.Message) {}
func (blobber) Timeout(proc.Env, any)                   {}
func (blobber) Input(env proc.Env, in proc.Input) {
	b := in.(blobs)
	for range b.K {
		env.Send(b.To, blob{B: make([]byte, b.Size)})
	}
}

// A member that takes nothing (dead, or cut off: the transport's queue to
// it full) costs the services of a node at most maxMemberHeld in all,
// however many services send to it and however much: two services
// sending 96 MiB each to it hold no more than maxMemberHeld between them,
// in the ledger and in the heap, and count the rest as dropped.
func TestHeldForAMemberIsBoundedInBytes(t *testing.T) {
	tr := &refusing{}
	tr.decode = func([]byte) int { return 0 }
	tr.set(transport.ErrBackpressure)
	node, err := NewNode(Config{Self: 0, N: 3, Transport: tr,
		NewCodec: func(m []proc.Message) (Codec, error) { return wire.NewCodec(m) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const size, k = 1 << 20, 96
	var svcs []*Service
	for _, name := range []string{"a", "b"} {
		s, err := node.Service(name, proc.Algorithm{Family: "test", Name: "blobber", Messages: []proc.Message{blob{}},
			New: func(proc.ID, int) proc.Process { return blobber{} }})
		if err != nil {
			t.Fatal(err)
		}
		for range k { // one an event: each is held while it fits
			if err := s.Input(blobs{To: 1, K: 1, Size: size}); err != nil {
				t.Fatal(err)
			}
		}
		svcs = append(svcs, s)
	}
	// Wait until each has handled its input: held or dropped every blob.
	// Each blob is a mebibyte copied three times, which the race detector
	// makes a few seconds of CPU in all, and a loaded machine many more of
	// wall time: what is bounded is the wait for the next blob (a service
	// that stopped handling its inputs), not for all of them.
	const stall = 30 * time.Second
	for _, s := range svcs {
		done, deadline := int64(-1), time.Time{}
		for {
			s.turn.Lock()
			n := int64(len(s.held[1]))
			s.turn.Unlock()
			if n+s.Stats().Dropped == k {
				break
			}
			if d := n + s.Stats().Dropped; d != done {
				done, deadline = d, time.Now().Add(stall)
			}
			if time.Now().After(deadline) {
				t.Fatalf("service %s: %d blobs held, %d dropped, none more in %v; want %d in all", s.name, n, s.Stats().Dropped, stall, k)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var dropped int64
	for _, s := range svcs {
		dropped += s.Stats().Dropped
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	held, grown := node.held.bytes(1), int64(after.HeapAlloc)-int64(before.HeapAlloc)
	t.Logf("held for member 1: %d MiB in the ledger; the heap grew %d MiB; %d messages dropped", held>>20, grown>>20, dropped)
	if held > maxMemberHeld {
		t.Errorf("the services hold %d bytes for member 1, more than maxMemberHeld = %d", held, maxMemberHeld)
	}
	if slack := int64(16 << 20); grown > maxMemberHeld+slack {
		t.Errorf("the heap grew by %d MiB while the services held messages for member 1: more than maxMemberHeld (%d MiB) and %d MiB of slack", grown>>20, maxMemberHeld>>20, slack>>20)
	}
	if fits := int64(maxMemberHeld / (size + 64)); dropped < 2*k-fits {
		t.Errorf("%d messages dropped, want at least %d (all but those that fit in maxMemberHeld)", dropped, 2*k-fits)
	}
	node.Close()
	if h := node.held.bytes(-1); h != 0 {
		t.Errorf("the node counts %d bytes held once it closed, want 0", h)
	}
}

// limited is refusing that also refuses, as the TCP transport does, a
// batch of more payloads than its queue takes (max).
type limited struct {
	refusing
	max int
}

func (l *limited) Send(to proc.ID, p []byte) error { return l.SendBatch(to, [][]byte{p}) }
func (l *limited) SendBatch(to proc.ID, ps [][]byte) error {
	if len(ps) > l.max {
		return transport.ErrBackpressure
	}
	return l.refusing.SendBatch(to, ps)
}

// More messages held for a member than the transport's queue takes at
// once go out once it takes them again, in order: the transport takes a
// batch whole or not at all, so the held messages are not offered all
// in one.
func TestHeldMessagesBeyondTheQueuesBoundGoOut(t *testing.T) {
	tr := &limited{max: 8}
	s := fanService(t, tr, &tr.decode, 2)
	tr.set(transport.ErrBackpressure)
	const k = 100
	to := make([]proc.ID, k)
	for i := range to {
		to[i] = 1
	}
	if err := s.Input(fan{To: to}); err != nil {
		t.Fatal(err)
	}
	tr.set(nil)
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < k && time.Now().Before(deadline) {
		for _, call := range strings.Fields(tr.take()) {
			_, notes, _ := strings.Cut(call, ":")
			got = append(got, strings.Split(notes, ",")...)
		}
		runtime.Gosched()
	}
	want := make([]string, k)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sent again %d messages %q; want the %d held, in order", len(got), got, k)
	}
	for deadline := time.Now().Add(10 * time.Second); s.node.held.bytes(-1) != 0; { // counted off just after the send
		if time.Now().After(deadline) {
			t.Fatalf("the node counts %d bytes held 10 s after all were sent, want 0", s.node.held.bytes(-1))
		}
		time.Sleep(time.Millisecond)
	}
}

// A retry that the transport refuses copies nothing: what waits for a
// dead member costs no work in proportion to its size each time it is
// offered again (it was copied whole at every retry, a thousand times a
// second), and retries come less often while none gets through. A retry
// returns, whatever is held (one message, or a batch and one more).
func TestRetryingHeldMessagesCopiesNothing(t *testing.T) {
	for _, c := range []struct{ held, takes int }{{1, 0}, {2000, 0}, {heldBatch + 1, heldBatch}} {
		// A retry that spins holds turn: the node could not close and the
		// test would hang, so the run ends instead.
		watchdog := time.AfterFunc(20*time.Second, func() {
			panic(fmt.Sprintf("%d held, the transport taking %d: retries have not returned after 20 s", c.held, c.takes))
		})
		tr := &taking{n: c.takes}
		s := fanService(t, tr, &tr.decode, 2)
		tr.set(transport.ErrBackpressure)
		to := make([]proc.ID, c.held)
		for i := range to {
			to[i] = 1
		}
		if err := s.Input(fan{To: to}); err != nil {
			t.Fatal(err)
		}
		// Once the input is handled (every message held), take turn, as
		// the caller of retryHeld does, and keep it.
		for deadline := time.Now().Add(10 * time.Second); ; {
			s.turn.Lock()
			if len(s.held[1]) == c.held {
				break
			}
			s.turn.Unlock()
			if time.Now().After(deadline) {
				t.Fatalf("%d messages sent to a member that takes nothing: not all held after 10 s", c.held)
			}
			time.Sleep(time.Millisecond)
		}
		tr.set(nil)
		s.retryHeld()
		left := c.held - c.takes
		if len(s.held[1]) != left {
			t.Errorf("%d held, the transport taking %d: %d left, want %d", c.held, c.takes, len(s.held[1]), left)
		}
		held := s.heldBytes
		allocs := testing.AllocsPerRun(20, s.retryHeld)
		if allocs > 30 {
			t.Errorf("a refused retry of %d held messages allocates %.0f times, want a few (no copies)", left, allocs)
		}
		if s.heldBytes != held || len(s.held[1]) != left {
			t.Errorf("after refused retries: %d bytes, %d messages held; want %d, %d", s.heldBytes, len(s.held[1]), held, left)
		}
		if s.retryWait != heldRetryMax {
			t.Errorf("after 20 refused retries the next waits %v, want heldRetryMax = %v", s.retryWait, heldRetryMax)
		}
		s.turn.Unlock()
		watchdog.Stop()
	}
}

// taking is refusing that, once refuse is unset, takes n payloads and
// then refuses every Send with ErrBackpressure.
type taking struct {
	refusing
	n int
}

func (r *taking) Send(to proc.ID, p []byte) error { return r.SendBatch(to, [][]byte{p}) }
func (r *taking) SendBatch(to proc.ID, ps [][]byte) error {
	r.mu.Lock()
	refused := r.refuse != nil || len(ps) > r.n
	if !refused {
		r.n -= len(ps)
	}
	r.mu.Unlock()
	if refused {
		return transport.ErrBackpressure
	}
	return r.refusing.SendBatch(to, ps)
}
