package lab

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// RaftClients is the consensus family's default workload: every Interval
// a client proposes a fresh value ("c<k>") to a random server, until Stop.
// RaftRetry answers the servers that are not the leader.
type RaftClients struct {
	Interval, Stop time.Duration
	next           int
}

// DefaultRaftClients proposes every 2 ms for a second.
func DefaultRaftClients() sim.Workload {
	return &RaftClients{Interval: 2 * time.Millisecond, Stop: time.Second}
}

func (w *RaftClients) Init(c sim.Control) {
	var tick func()
	tick = func() {
		if c.Now() >= w.Stop {
			return
		}
		w.next++
		c.Schedule(0, proc.ID(c.Rand().IntN(c.N())), consensus.Propose{Data: []byte("c" + strconv.Itoa(w.next))})
		c.After(w.Interval, tick)
	}
	c.After(w.Interval, tick)
}

func (w *RaftClients) Observe(sim.Control, proc.ID, proc.Output) {}

// RaftRetry answers a NotLeader: after Retry, the proposal goes to the
// leader the server named, or else to another random server. It gives up
// at Stop (0: never).
type RaftRetry struct{ Retry, Stop time.Duration }

func (w RaftRetry) Init(sim.Control) {}

func (w RaftRetry) Observe(c sim.Control, node proc.ID, o proc.Output) {
	nl, ok := o.(consensus.NotLeader)
	if !ok || w.Stop > 0 && c.Now() >= w.Stop {
		return
	}
	to := nl.Leader
	if to == proc.None || to == node {
		to = proc.ID(c.Rand().IntN(c.N()))
	}
	c.Schedule(w.Retry, to, consensus.Propose{Data: nl.Data})
}

// consensusMetrics: leaderships, entries committed (the highest index
// applied anywhere), proposals made and redirected, and messages per
// committed entry.
func consensusMetrics(f Finished) (map[string]float64, map[string]*float64) {
	var leaders, proposals, redirects, sends float64
	var committed uint64
	for _, e := range f.Trace.Events {
		switch {
		case e.Kind == trace.Send:
			sends++
		case e.Kind == trace.Input && e.Type == "propose":
			proposals++
		case e.Kind == trace.Output && e.Type == "leader":
			leaders++
		case e.Kind == trace.Output && e.Type == "not-leader":
			redirects++
		case e.Kind == trace.Output && e.Type == "applied":
			var a consensus.Applied
			if json.Unmarshal(e.Data, &a) == nil {
				committed = max(committed, a.Index)
			}
		}
	}
	m := map[string]float64{"leaderships": leaders, "committed": float64(committed),
		"proposals": proposals, "redirected": redirects}
	if committed > 0 {
		m["messages_per_entry"] = sends / float64(committed)
	}
	return m, map[string]*float64{}
}
