package node

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
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

// sendEnv records what a process sends and the timers it sets.
type sendEnv struct {
	self   proc.ID
	sent   []proc.ID
	timers []time.Duration
}

func (e *sendEnv) Self() proc.ID                   { return e.self }
func (e *sendEnv) N() int                          { return MaxIDs }
func (e *sendEnv) Neighbors() []proc.ID            { return nil }
func (e *sendEnv) Now() time.Duration              { return 0 }
func (e *sendEnv) Send(to proc.ID, _ proc.Message) { e.sent = append(e.sent, to) }
func (e *sendEnv) SetTimer(d time.Duration, _ any) proc.TimerID {
	e.timers = append(e.timers, d)
	return proc.TimerID(len(e.timers))
}
func (e *sendEnv) CancelTimer(proc.TimerID) {}
func (e *sendEnv) Storage() proc.Storage    { return nil }
func (e *sendEnv) Rand() *rand.Rand         { return rand.New(rand.NewPCG(1, 2)) }
func (e *sendEnv) Output(proc.Output)       {}

// A node that joined announces itself to every founder, and again, at
// growing intervals, to each founder it has not heard — one whose address
// it did not know yet, or that was down — until it has heard them all. A
// founder announces once, to the other founders only.
func TestJoinerAnnouncesAgainToFoundersUnheard(t *testing.T) {
	a := kindsAlgorithm(Kinds{"lock": raftLock}, founderState{}, 3)
	env := &sendEnv{self: 5}
	p := a.New(5, MaxIDs)
	p.Start(env)
	if !slices.Equal(env.sent, []proc.ID{0, 1, 2}) || !slices.Equal(env.timers, []time.Duration{joinedRetry}) {
		t.Fatalf("at start: sent to %v, timers %v; want every founder, and a retry after %v", env.sent, env.timers, joinedRetry)
	}
	p.Receive(env, 1, kindsAnnounce{Kinds: "lock=raft-lock", Reply: true})
	env.sent, env.timers = nil, nil
	p.Timeout(env, nil)
	if !slices.Equal(env.sent, []proc.ID{0, 2}) || !slices.Equal(env.timers, []time.Duration{2 * joinedRetry}) {
		t.Fatalf("founder 1 heard: sent to %v, timers %v; want founders 0 and 2 again, and a retry after %v", env.sent, env.timers, 2*joinedRetry)
	}
	for range 20 {
		env.timers = nil
		p.Timeout(env, nil)
	}
	if !slices.Equal(env.timers, []time.Duration{joinedRetryMax}) {
		t.Fatalf("after many rounds: timers %v; want %v", env.timers, joinedRetryMax)
	}
	p.Receive(env, 0, kindsAnnounce{Kinds: "lock=raft-lock", Reply: true})
	p.Receive(env, 2, kindsAnnounce{Kinds: "lock=raft-lock", Reply: true})
	env.sent, env.timers = nil, nil
	p.Timeout(env, nil)
	if len(env.sent) > 0 || len(env.timers) > 0 {
		t.Fatalf("every founder heard: sent to %v, timers %v; want nothing more", env.sent, env.timers)
	}

	founder := &sendEnv{self: 1}
	a.New(1, MaxIDs).Start(founder)
	if !slices.Equal(founder.sent, []proc.ID{0, 2}) || len(founder.timers) > 0 {
		t.Fatalf("a founder at start: sent to %v, timers %v; want the other founders, no retry", founder.sent, founder.timers)
	}
}
