package node

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
)

// A founder that hears nobody starts once its wait is over, however the
// clock moves between the cases of a round: here each reading of the
// clock is a whole wait later than the one before, so a round that read
// it once for each case would find the deadline still ahead in the first
// (start: nobody against, time is up) and past in the second (refuse,
// naming a founder against) — and index a founder that does not exist.
func TestFounderHearingNobodyStartsWhenTheWaitIsOver(t *testing.T) {
	const wait = time.Hour
	base, readings := time.Now(), atomic.Int64{}
	foundersClock = func() time.Time {
		return base.Add(time.Duration(readings.Add(1)-1) * wait)
	}
	t.Cleanup(func() { foundersClock = time.Now })

	net, err := transport.NewInProc(3, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := net.Endpoint(0)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := live.NewNode(live.Config{Self: 0, N: 3, Transport: ep, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := ln.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the founders' check panicked, founders 1 and 2 unheard: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recording sync.WaitGroup
	defer recording.Wait()
	if err := checkFounders(ctx, ln, 0, 3, Kinds{"lock": "raft-lock"}, wait, "", founderState{}, &recording, quiet); err != nil {
		t.Fatalf("founder 0, hearing nobody against it: %v; want it to start", err)
	}
	if n := readings.Load(); n < 3 {
		t.Fatalf("the clock was read %d times: the wait cannot have run out", n)
	}
}
