package transport

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TestInProcLatency: each payload arrives no earlier than the latency after
// it was sent, and in order.
func TestInProcLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	nw, err := NewInProc(2, InProcConfig{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	a, _ := nw.Endpoint(0)
	b, _ := nw.Endpoint(1)
	box := newInbox()
	arrived := make(chan time.Time, 10)
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(from proc.ID, p []byte) {
		box.handle(from, p)
		arrived <- time.Now()
	})
	sentAt := time.Now()
	for i := range uint64(10) {
		if err := a.Send(1, seqPayload(i, 8)); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		select {
		case at := <-arrived:
			if d := at.Sub(sentAt); d < latency {
				t.Errorf("delivered after %v, before the latency %v", d, latency)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("payload not delivered")
		}
	}
	box.check(t)
}

// TestInProcClosedEndpoint: payloads to a closed endpoint are dropped and
// counted; the sender is not blocked.
func TestInProcClosedEndpoint(t *testing.T) {
	nw, err := NewInProc(2, InProcConfig{QueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	if _, err := nw.Endpoint(2); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("Endpoint(2) of 2: %v", err)
	}
	a, _ := nw.Endpoint(0)
	b, _ := nw.Endpoint(1)
	a.Send(1, []byte("queued, then dropped by Close"))
	b.Close()
	for range 10 {
		if err := a.Send(1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if s := a.Stats().Peers[1]; s.Dropped != 11 || s.Connected || s.Queued != 0 {
		t.Errorf("stats %+v: want 11 dropped", s)
	}
	if _, err := NewInProc(0, InProcConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewInProc(0): %v", err)
	}
}

// TestInProcIsolate: while an endpoint is cut off, what it sends and what
// is sent to it is dropped and counted, Send succeeding; once it is joined
// again, payloads flow both ways.
func TestInProcIsolate(t *testing.T) {
	nw, err := NewInProc(3, InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	got := make(chan string, 10)
	for i := range proc.ID(3) {
		e, _ := nw.Endpoint(i)
		e.Start(func(from proc.ID, p []byte) { got <- from.String() + ">" + i.String() + " " + string(p) })
	}
	a, _ := nw.Endpoint(0)
	b, _ := nw.Endpoint(1)
	if err := nw.Isolate(0, true); err != nil {
		t.Fatal(err)
	}
	for _, send := range []func() error{
		func() error { return a.Send(1, []byte("lost")) },
		func() error { return b.Send(0, []byte("lost")) },
	} {
		if err := send(); err != nil {
			t.Fatalf("Send while cut off: %v; want it to succeed (and the payload lost)", err)
		}
	}
	if err := b.Send(2, []byte("between the others")); err != nil {
		t.Fatal(err)
	}
	nw.Isolate(0, false)
	if err := a.Send(1, []byte("after")); err != nil {
		t.Fatal(err)
	}
	var delivered []string
	for range 2 {
		select {
		case g := <-got:
			delivered = append(delivered, g)
		case <-time.After(5 * time.Second):
			t.Fatalf("delivered %q only; want the payloads between the others and after the cut", delivered)
		}
	}
	slices.Sort(delivered)
	if want := []string{"p0>p1 after", "p1>p2 between the others"}; !slices.Equal(delivered, want) {
		t.Errorf("delivered %q, want %q (nothing sent while cut off)", delivered, want)
	}
	if da, db := a.Stats().Peers[1].Dropped, b.Stats().Peers[0].Dropped; da != 1 || db != 1 {
		t.Errorf("dropped %d from 0 to 1 and %d from 1 to 0, want 1 each", da, db)
	}
	if err := nw.Isolate(3, true); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("Isolate(3) of 3: %v", err)
	}
}
