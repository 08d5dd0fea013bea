package transport

import (
	"errors"
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
