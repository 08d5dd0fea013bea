package rpc

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// hostEnv is a hand-driven Env: it records what the stub sends and
// outputs, and keeps its storage.
type hostEnv struct {
	self    proc.ID
	st      *proc.MemStorage
	sent    []proc.Message
	outputs []proc.Output
	timers  proc.TimerID
}

func (e *hostEnv) Self() proc.ID                            { return e.self }
func (e *hostEnv) N() int                                   { return 2 }
func (e *hostEnv) Neighbors() []proc.ID                     { return nil }
func (e *hostEnv) Now() time.Duration                       { return 0 }
func (e *hostEnv) Send(_ proc.ID, m proc.Message)           { e.sent = append(e.sent, m) }
func (e *hostEnv) SetTimer(time.Duration, any) proc.TimerID { e.timers++; return e.timers }
func (e *hostEnv) CancelTimer(proc.TimerID)                 {}
func (e *hostEnv) Rand() *rand.Rand                         { return rand.New(rand.NewPCG(1, 1)) }
func (e *hostEnv) Output(o proc.Output)                     { e.outputs = append(e.outputs, o) }
func (e *hostEnv) Storage() proc.Storage                    { return e.st }

func executes(os []proc.Output) []Execute {
	var xs []Execute
	for _, o := range os {
		if x, ok := o.(Execute); ok {
			xs = append(xs, x)
		}
	}
	return xs
}

// A server whose host runs the procedures: Execute out, Finished in, the
// result stored (synced) before the reply; after a restart on the same
// log, a retransmission gets the stored result without a second
// execution, and a call that was running at the crash gets ErrCrashed.
func TestHostRunsTheProcedure(t *testing.T) {
	cfg := Config{Host: true}
	env := &hostEnv{st: proc.NewMemStorage(nil)}
	s := NewServer(cfg)
	s.Start(env)
	req := Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Attempt: 1, Proc: "add", Args: []byte("2,3")}
	s.Receive(env, 1, req)
	xs := executes(env.outputs)
	if len(xs) != 1 || xs[0].Proc != "add" || string(xs[0].Args) != "2,3" || len(env.sent) != 0 {
		t.Fatalf("after the request: executes %v, sent %v", xs, env.sent)
	}
	s.Input(env, Finished{Exec: xs[0].Exec, Data: []byte("5")})
	if len(env.sent) != 1 || string(env.sent[0].(Reply).Data) != "5" {
		t.Fatalf("after Finished: sent %v", env.sent)
	}
	// A second call, left running at the crash.
	s.Receive(env, 1, Request{Epoch: 1, Seq: 2, Sem: AtMostOnce, Attempt: 1, Proc: "add"})

	env2 := &hostEnv{st: proc.NewMemStorage(env.st.Log())}
	s2 := NewServer(cfg)
	s2.Start(env2)
	s2.Receive(env2, 1, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Attempt: 2, Proc: "add", Args: []byte("2,3")})
	s2.Receive(env2, 1, Request{Epoch: 1, Seq: 2, Sem: AtMostOnce, Attempt: 2, Proc: "add"})
	if xs := executes(env2.outputs); len(xs) != 0 {
		t.Fatalf("after the restart the retransmissions ran again: %v", xs)
	}
	if len(env2.sent) != 2 || string(env2.sent[0].(Reply).Data) != "5" || env2.sent[1].(Reply).Err != ErrCrashed {
		t.Fatalf("after the restart: sent %v; want the stored result and ErrCrashed", env2.sent)
	}
	// A failure of the procedure is stored and replayed alike.
	s2.Receive(env2, 1, Request{Epoch: 1, Seq: 3, Sem: AtMostOnce, Attempt: 1, Proc: "div"})
	x := executes(env2.outputs)[0]
	s2.Input(env2, Finished{Exec: x.Exec, Fail: "division by zero"})
	env3 := &hostEnv{st: proc.NewMemStorage(env2.st.Log())}
	s3 := NewServer(cfg)
	s3.Start(env3)
	s3.Receive(env3, 1, Request{Epoch: 1, Seq: 3, Sem: AtMostOnce, Attempt: 2, Proc: "div"})
	if len(env3.sent) != 1 || env3.sent[0].(Reply).Fail != "division by zero" {
		t.Fatalf("replayed failure: %v", env3.sent)
	}
}

// The client: a call's reference comes back in Returned with the reply's
// data; Cancel ends a call at once with ErrCanceled and asks the server
// to kill it.
func TestClientRefAndCancel(t *testing.T) {
	env := &hostEnv{self: 1, st: proc.NewMemStorage(nil)}
	c := NewClient(Config{Host: true})
	c.Start(env)
	c.Input(env, Call{Ref: 41, Proc: "add", Args: []byte("x")})
	c.Input(env, Call{Ref: 42, Proc: "slow"})
	r1 := env.sent[0].(Request)
	if r1.Proc != "add" || string(r1.Args) != "x" {
		t.Fatalf("request %+v", r1)
	}
	c.Receive(env, 0, Reply{Epoch: r1.Epoch, Seq: r1.Seq, Data: []byte("y")})
	c.Input(env, Cancel{Ref: 42})
	var rets []Returned
	for _, o := range env.outputs {
		if r, ok := o.(Returned); ok {
			rets = append(rets, r)
		}
	}
	if len(rets) != 2 || rets[0].Ref != 41 || string(rets[0].Data) != "y" || rets[1].Ref != 42 || rets[1].Err != ErrCanceled {
		t.Fatalf("returned %+v", rets)
	}
	if k, ok := env.sent[len(env.sent)-1].(Kill); !ok || k.Seq != 2 || k.Old != k.Epoch {
		t.Fatalf("last sent %v; want a kill of call 2 of this epoch", env.sent[len(env.sent)-1])
	}
}
