package consensus_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// wiped is a Raft server restarted on an empty disk, with the same
// identity: what an operator who deletes a node's data directory and
// starts it again from its config makes.
type wiped struct {
	*consensus.Raft
	disk *proc.MemStorage
}

type wipedEnv struct {
	proc.Env
	disk *proc.MemStorage
}

func (e wipedEnv) Storage() proc.Storage { return e.disk }

func (w wiped) Start(env proc.Env) { w.Raft.Start(wipedEnv{env, w.disk}) }
func (w wiped) Receive(env proc.Env, f proc.ID, m proc.Message) {
	w.Raft.Receive(wipedEnv{env, w.disk}, f, m)
}
func (w wiped) Timeout(env proc.Env, tag any)     { w.Raft.Timeout(wipedEnv{env, w.disk}, tag) }
func (w wiped) Input(env proc.Env, in proc.Input) { w.Raft.Input(wipedEnv{env, w.disk}, in) }

// TestWipedFollowerIsCaughtUp: follower p0 of three acknowledges a busy
// log for a second (p2 leads, from 0.27 s), then restarts with its disk
// wiped. The leader reports it (LostState naming p0) and sends it the
// log again; p0 catches up, and the leader sends it, in every 100 ms,
// about as many AppendEntries as it sends the healthy p1. Before, the
// leader kept retrying from the entry after p0's old match, which p0
// rejected at once, and answered every rejection with a full pipeline: a
// storm of AppendEntries, and p0 never caught up.
func TestWipedFollowerIsCaughtUp(t *testing.T) {
	const down, up, end = time.Second, 1050 * time.Millisecond, 2500 * time.Millisecond
	const victim, lead, other = 0, 2, 1
	const maxEvents = 200_000
	incarnations := 0
	mk := func(id proc.ID, n int) proc.Process {
		r := consensus.New(id, n, consensus.DefaultConfig, consensus.NewKV())
		if id != victim {
			return r
		}
		if incarnations++; incarnations == 1 {
			return r
		}
		return wiped{r, proc.NewMemStorage(nil)}
	}
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: 1, New: mk,
		Network:  sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond}},
		Faults:   []sim.Fault{{Kind: sim.Crash, Node: victim, At: down}, {Kind: sim.Recover, Node: victim, At: up}},
		Workload: clients(end - 200*time.Millisecond), Deadline: end, MaxEvents: maxEvents})
	if n := r.Sim.Events(); n >= maxEvents {
		t.Fatalf("the run stopped after %d events at %v, of %v: a storm of messages (a healthy run takes about 15,000)", n, r.Sim.Now(), end)
	}
	if n := r.Count("leader"); n != 1 {
		t.Fatalf("%d leaderships, want 1 (p%d's, for the whole run)", n, lead)
	}
	// AppendEntries sent by the leader to p0 and to p1, per 100 ms from
	// the restart on.
	const window = 100 * time.Millisecond
	toWiped, toOther := map[int64]int{}, map[int64]int{}
	reported := false
	for _, e := range r.Trace.Events {
		switch {
		case e.Kind == trace.Send && e.Node == int32(lead) && e.Type == "append" && e.Time >= int64(up):
			w := (e.Time - int64(up)) / int64(window)
			if e.Peer == victim {
				toWiped[w]++
			} else if e.Peer == int32(other) {
				toOther[w]++
			}
		case e.Kind == trace.Output && e.Type == "lost-state" && e.Node == int32(lead):
			var l consensus.LostState
			if json.Unmarshal(e.Data, &l) == nil && l.Server == victim {
				reported = true
			}
			t.Logf("p%d at %v: %s", e.Node, time.Duration(e.Time), e.Label)
		}
	}
	most, total := 0, 0
	for w := range int64((end - up) / window) {
		most, total = max(most, toWiped[w]), total+toWiped[w]
		if toWiped[w] > toOther[w]+10 {
			t.Errorf("%v–%v after the restart: the leader sent the wiped p%d %d AppendEntries, the healthy p%d %d",
				time.Duration(w)*window, time.Duration(w+1)*window, victim, toWiped[w], other, toOther[w])
		}
	}
	t.Logf("%d events; the leader sent the wiped p%d %d AppendEntries in %v after its restart, at most %d in 100 ms", r.Sim.Events(), victim, total, end-up, most)
	if !reported {
		t.Errorf("the leader did not report that p%d lost its log (no lost-state output naming it)", victim)
	}
	leader := r.Sim.Process(lead).(*consensus.Raft)
	wipe := r.Sim.Process(victim).(wiped).Raft
	if wipe.Commit() != leader.LastIndex() || leader.Commit() != leader.LastIndex() {
		t.Errorf("p%d did not catch up: it committed %d of the leader p%d's %d entries (the leader %d)",
			victim, wipe.Commit(), lead, leader.LastIndex(), leader.Commit())
	}
}
