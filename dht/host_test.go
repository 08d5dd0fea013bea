package dht

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
)

// fakeEnv records what a process sends and outputs; time stands still
// unless the test moves it.
type fakeEnv struct {
	self  proc.ID
	now   time.Duration
	sent  []sent
	outs  []proc.Output
	timer proc.TimerID
}

type sent struct {
	to proc.ID
	m  proc.Message
}

func (e *fakeEnv) Self() proc.ID                   { return e.self }
func (e *fakeEnv) N() int                          { return 1 << 16 }
func (e *fakeEnv) Neighbors() []proc.ID            { return nil }
func (e *fakeEnv) Now() time.Duration              { return e.now }
func (e *fakeEnv) Send(to proc.ID, m proc.Message) { e.sent = append(e.sent, sent{to, m}) }
func (e *fakeEnv) SetTimer(time.Duration, any) proc.TimerID {
	e.timer++
	return e.timer
}
func (e *fakeEnv) CancelTimer(proc.TimerID) {}
func (e *fakeEnv) Rand() *rand.Rand         { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Output(o proc.Output)     { e.outs = append(e.outs, o) }
func (e *fakeEnv) Storage() proc.Storage    { return nil }

// alone is the founder of a one-node overlay: the home of every key and
// the root of every group.
func alone(t *testing.T) (*host, *fakeEnv) {
	t.Helper()
	env := &fakeEnv{self: 0}
	h := newHost(0, Live, 1, proc.None)
	h.Start(env)
	env.outs = nil
	return h, env
}

// TestAnswersGoToTheirOrigin: a request asked here is answered here; one
// routed here from another node is answered to that node, under its
// reference.
func TestAnswersGoToTheirOrigin(t *testing.T) {
	h, env := alone(t)
	k := KeyID("color")
	h.Input(env, request{Ref: 1, In: overlay.Put{Key: k, Value: "blue"}})
	h.Input(env, request{Ref: 2, In: overlay.Get{Key: k}})
	var answers []answer
	for _, o := range env.outs {
		if a, ok := o.(answer); ok {
			answers = append(answers, a)
		}
	}
	if len(answers) != 2 || answers[0].Ref != 1 || answers[1].Ref != 2 || answers[1].Value != "blue" || !answers[1].Found {
		t.Fatalf("answers %+v; want the put's (ref 1), then the get's (ref 2) with blue", answers)
	}
	env.sent = nil
	h.Receive(env, 5, routeMsg{R: overlay.Route{Key: k, Op: overlay.OpGet, Hops: 2}, Origin: 5, Ref: 9})
	var reply *replyMsg
	for _, s := range env.sent {
		if r, ok := s.m.(replyMsg); ok && s.to == 5 {
			reply = &r
		}
	}
	if reply == nil || reply.Ref != 9 || reply.Value != "blue" || reply.Hops != 2 {
		t.Fatalf("sent %+v; want a reply to p5 under ref 9 with blue", env.sent)
	}
}

// TestMulticastDeliveredOnceWithItsBody: a multicast carries its body to
// the member, and the same id again is not delivered twice.
func TestMulticastDeliveredOnceWithItsBody(t *testing.T) {
	h, env := alone(t)
	g := KeyID("news")
	h.Input(env, overlay.JoinGroup{Group: g})
	h.Input(env, publish{Group: g, ID: 7, Body: "hello"})
	h.Input(env, publish{Group: g, ID: 7, Body: "hello"})
	var got []delivery
	for _, o := range env.outs {
		if d, ok := o.(delivery); ok {
			got = append(got, d)
		}
	}
	if len(got) != 1 || got[0].Body != "hello" || got[0].ID != 7 {
		t.Fatalf("deliveries %+v (outputs %+v, sent %+v); want one of hello", got, env.outs, env.sent)
	}
}

// TestHeldBodiesAreBounded: past maxHeld the oldest bodies are dropped,
// down to half of it; past bodyTTL all are.
func TestHeldBodiesAreBounded(t *testing.T) {
	h, env := alone(t)
	body := strings.Repeat("x", 1<<20)
	for i := range 100 {
		env.now = time.Duration(i) * time.Millisecond
		h.hold(env, bodyKey{ID: uint64(i)}, body)
	}
	if h.held > maxHeld {
		t.Fatalf("held %d bytes, more than %d", h.held, maxHeld)
	}
	if _, ok := h.bodies[bodyKey{ID: 0}]; ok {
		t.Error("the oldest body was kept")
	}
	if _, ok := h.bodies[bodyKey{ID: 99}]; !ok {
		t.Error("the newest body was dropped")
	}
	env.now += bodyTTL + 2*time.Second
	h.swept = 0
	h.sweep(env)
	if len(h.bodies) != 0 || h.held != 0 {
		t.Errorf("after bodyTTL: %d bodies, %d bytes held", len(h.bodies), h.held)
	}
}
