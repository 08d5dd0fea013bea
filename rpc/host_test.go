package rpc

import (
	"fmt"
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

// A call named by a key runs once whoever sends it: a request of another
// client under the same key while it runs waits for its reply, one after
// it ends gets the stored result, before and after a restart; a key
// left running at the crash answers ErrCrashed; the table keeps the last
// Config.Keys ended calls, and its log is compacted with it.
func TestKeyedCallsRunOnceWhoeverSendsThem(t *testing.T) {
	cfg := Config{Host: true, Keys: 3, Compact: 256}
	env := &hostEnv{st: proc.NewMemStorage(nil)}
	s := NewServer(cfg)
	s.Start(env)
	s.Receive(env, 1, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Attempt: 1, Proc: "add", Args: []byte("2,3"), Key: "job-1"})
	s.Receive(env, 2, Request{Epoch: 4, Seq: 9, Sem: AtLeastOnce, Attempt: 1, Proc: "add", Args: []byte("2,3"), Key: "job-1"})
	xs := executes(env.outputs)
	if len(xs) != 1 || len(env.sent) != 0 {
		t.Fatalf("two clients, one key: executes %v, sent %v", xs, env.sent)
	}
	s.Input(env, Finished{Exec: xs[0].Exec, Data: []byte("5")})
	if len(env.sent) != 2 {
		t.Fatalf("after Finished: sent %v; want a reply to each client", env.sent)
	}
	for i, want := range []Reply{{Epoch: 1, Seq: 1, Result: 1, Data: []byte("5")}, {Epoch: 4, Seq: 9, Result: 9, Data: []byte("5")}} {
		if r := env.sent[i].(Reply); r.Epoch != want.Epoch || r.Seq != want.Seq || string(r.Data) != "5" {
			t.Fatalf("reply %d: %+v, want %+v", i, r, want)
		}
	}
	s.Receive(env, 1, Request{Epoch: 1, Seq: 2, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-2"})

	env2 := &hostEnv{st: proc.NewMemStorage(env.st.Log())}
	s2 := NewServer(cfg)
	s2.Start(env2)
	s2.Receive(env2, 2, Request{Epoch: 5, Seq: 1, Sem: AtMostOnce, Attempt: 1, Proc: "add", Key: "job-1"})
	s2.Receive(env2, 2, Request{Epoch: 5, Seq: 2, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-2"})
	if xs := executes(env2.outputs); len(xs) != 0 {
		t.Fatalf("after the restart keys ran again: %v", xs)
	}
	if len(env2.sent) != 2 || string(env2.sent[0].(Reply).Data) != "5" || env2.sent[0].(Reply).Seq != 1 ||
		env2.sent[1].(Reply).Err != ErrCrashed {
		t.Fatalf("after the restart: sent %v; want the stored result and ErrCrashed", env2.sent)
	}
	// Bounded: past three ended keys the oldest are forgotten (a key that
	// comes back after that runs again), and the log stays short.
	for i := range 20 {
		s2.Receive(env2, 1, Request{Epoch: 1, Seq: uint64(10 + i), Sem: AtMostOnce, Proc: "add", Key: fmt.Sprint("k", i)})
		xs := executes(env2.outputs)
		s2.Input(env2, Finished{Exec: xs[len(xs)-1].Exec, Data: []byte("x")})
	}
	if n := s2.TableSize(); n != 3 {
		t.Fatalf("table of %d keys, want 3", n)
	}
	if size := env2.st.Size(); size > 256+64 {
		t.Fatalf("log of %d bytes after compaction past 256", size)
	}
	before := len(executes(env2.outputs))
	s2.Receive(env2, 1, Request{Epoch: 1, Seq: 40, Sem: AtMostOnce, Proc: "add", Key: "job-1"})
	s2.Receive(env2, 1, Request{Epoch: 1, Seq: 41, Sem: AtMostOnce, Proc: "add", Key: "k19"})
	if after := len(executes(env2.outputs)); after != before+1 {
		t.Fatalf("a forgotten key and a remembered one: %d executions, want 1", after-before)
	}
	env3 := &hostEnv{st: proc.NewMemStorage(env2.st.Log())}
	s3 := NewServer(cfg)
	s3.Start(env3)
	s3.Receive(env3, 2, Request{Epoch: 6, Seq: 1, Sem: AtMostOnce, Proc: "add", Key: "k18"})
	if len(executes(env3.outputs)) != 0 || len(env3.sent) != 1 || string(env3.sent[0].(Reply).Data) != "x" {
		t.Fatalf("after a compacted log's restart: executes %v, sent %v", executes(env3.outputs), env3.sent)
	}
}

// bgStorage is storage that syncs in the background (a
// proc.BackgroundSyncer), counting the syncs begun; the test fires their
// timers.
type bgStorage struct {
	*proc.MemStorage
	syncs int
}

func (s *bgStorage) Sync()        { s.syncs++ }
func (s *bgStorage) SyncThen(any) { s.syncs++ }

type bgEnv struct {
	hostEnv
	st *bgStorage
}

func (e *bgEnv) Storage() proc.Storage { return e.st }

// Under group commit the requests and results that arrive while a sync
// is under way share the next one; nothing runs and no reply leaves
// before the sync that covers it; a call killed while its entry waits
// for a sync never runs. (A sync with no other call under way is made at
// once.)
func TestGroupCommitSharesSyncs(t *testing.T) {
	cfg := Config{Host: true, GroupCommit: true}
	env := &bgEnv{st: &bgStorage{MemStorage: proc.NewMemStorage(nil)}}
	s := NewServer(cfg)
	s.Start(env)
	check := func(what string, execs, syncs int) {
		t.Helper()
		if n := len(executes(env.outputs)); n != execs || env.st.syncs != syncs {
			t.Fatalf("%s: %d executions, %d syncs; want %d, %d", what, n, env.st.syncs, execs, syncs)
		}
	}
	s.Receive(env, 1, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Proc: "a"})
	check("the first request, alone", 1, 1)
	s.Receive(env, 1, Request{Epoch: 1, Seq: 2, Sem: AtMostOnce, Proc: "b"})
	check("a second, beside it", 1, 2)
	s.Receive(env, 2, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Proc: "c", Key: "k"})
	s.Receive(env, 1, Request{Epoch: 1, Seq: 3, Sem: AtMostOnce, Proc: "d"})
	s.Receive(env, 1, Kill{Epoch: 1, Old: 1, Seq: 3})
	check("two more during its sync", 1, 2)
	s.Timeout(env, syncedTimer{})
	check("after that sync", 2, 3)
	s.Timeout(env, syncedTimer{})
	check("after the next, shared", 3, 3)
	sent := len(env.sent) // the kill's ack
	for _, x := range executes(env.outputs) {
		s.Input(env, Finished{Exec: x.Exec, Data: []byte(x.Proc)})
	}
	if len(env.sent) != sent || env.st.syncs != 4 {
		t.Fatalf("replies before their results were synced: %v (%d syncs)", env.sent[sent:], env.st.syncs)
	}
	s.Timeout(env, syncedTimer{})
	s.Timeout(env, syncedTimer{})
	if len(env.sent) != sent+3 || env.st.syncs != 5 {
		t.Fatalf("after the results' syncs: sent %v, %d syncs; want three replies, 5", env.sent[sent:], env.st.syncs)
	}
	s.Receive(env, 1, Request{Epoch: 1, Seq: 3, Sem: AtMostOnce, Proc: "d", Attempt: 2})
	if r, ok := env.sent[len(env.sent)-1].(Reply); !ok || r.Seq != 3 || r.Err != ErrKilled {
		t.Fatalf("the killed call's retransmission: %v", env.sent[len(env.sent)-1])
	}
}

// A call named by a key outlives the reboot of the client that sent it,
// under every remedy against orphans: its key's owner resends it through
// another client, which gets the one run's result; one that nobody
// resends within a lease is killed as an orphan, and a later resend
// learns so (never a second run).
func TestKeyedCallsAreNotOrphanedByTheirClientsReboot(t *testing.T) {
	reboot := map[Orphans]proc.Message{
		Extermination: Kill{Epoch: 2, Old: 1, Seq: 1},
		Reincarnation: NewEpoch{Epoch: 2},
		Expiration:    nil, // client 1 stops renewing
	}
	for o, m := range reboot {
		t.Run(o.String(), func(t *testing.T) {
			killed := func(env *hostEnv) int {
				n := 0
				for _, out := range env.outputs {
					if _, ok := out.(Killed); ok {
						n++
					}
				}
				return n
			}
			// Resent through client 2 after client 1's reboot.
			env := &hostEnv{st: proc.NewMemStorage(nil)}
			s := NewServer(Config{Host: true, Orphans: o})
			s.Start(env)
			s.Receive(env, 1, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-1"})
			x := executes(env.outputs)[0]
			if m != nil {
				s.Receive(env, 1, m)
			}
			if killed(env) != 0 {
				t.Fatalf("killed at its client's reboot: %v", env.outputs)
			}
			s.Receive(env, 2, Request{Epoch: 7, Seq: 3, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-1"})
			if o == Expiration {
				// The new requester's renewal extends the lease (a new
				// timer replaces the one that would have lapsed).
				before := env.timers
				s.Receive(env, 2, Renew{Epoch: 7, Seq: 3})
				if env.timers == before {
					t.Fatal("the new requester's renewal did not extend the lease")
				}
			} else if s.Timeout(env, leaseTimer{N: x.Exec}); killed(env) != 0 {
				t.Fatalf("killed though a resend came within the lease: %v", env.outputs)
			}
			s.Input(env, Finished{Exec: x.Exec, Data: []byte("5")})
			last := env.sent[len(env.sent)-1].(Reply)
			if last.Epoch != 7 || last.Seq != 3 || string(last.Data) != "5" || len(executes(env.outputs)) != 1 {
				t.Fatalf("the resend's reply %+v after %d executions, want client 2's, once", last, len(executes(env.outputs)))
			}

			// Not resent: killed once the lease runs out.
			env = &hostEnv{st: proc.NewMemStorage(nil)}
			s = NewServer(Config{Host: true, Orphans: o})
			s.Start(env)
			s.Receive(env, 1, Request{Epoch: 1, Seq: 1, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-2"})
			x = executes(env.outputs)[0]
			if m != nil {
				s.Receive(env, 1, m)
			}
			s.Timeout(env, leaseTimer{N: x.Exec})
			if killed(env) != 1 {
				t.Fatalf("an orphan nobody resent: %v, want it killed", env.outputs)
			}
			s.Receive(env, 2, Request{Epoch: 7, Seq: 4, Sem: AtMostOnce, Attempt: 1, Proc: "slow", Key: "job-2"})
			if r := env.sent[len(env.sent)-1].(Reply); r.Err != ErrKilled || len(executes(env.outputs)) != 1 {
				t.Fatalf("a resend after the kill: %+v, want ErrKilled and no second run", r)
			}
		})
	}
}
