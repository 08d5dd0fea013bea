package lab

import (
	"time"

	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// MutexLoad is the mutex family's closed-loop workload: every process
// thinks (Think), acquires, and once it has left the critical section
// thinks again, Rounds times. (Leaving is MutexHold's business.) A nil
// Think keeps every process requesting again at once: saturation.
//
// With probability Tell a process that has just requested also tells a
// random other process, which requests at once if it is idle —
// Coulouris et al.'s counterexample to ME3 as a workload: A requests, then
// sends m to B; B requests after receiving m.
type MutexLoad struct {
	Rounds int
	Think  sim.Dist
	Tell   float64

	left []int  // rounds left per process
	busy []bool // requesting or inside
	gen  []int  // invalidates a pending think when a process requests early
}

// DefaultMutexLoad: five rounds per process with an exponential think time
// of 5 ms and a one-in-four chance of telling another process — contended,
// but not saturated, with the default 1 ms hold.
func DefaultMutexLoad() *MutexLoad {
	return &MutexLoad{Rounds: 5, Think: sim.Exponential{MeanD: 5 * time.Millisecond}, Tell: 0.25}
}

// Done reports that every round of every process that is up has been
// served (a crashed process will not ask again).
func (w *MutexLoad) Done(up func(proc.ID) bool) bool {
	if w.left == nil {
		return false
	}
	for id := range w.left {
		if up(proc.ID(id)) && (w.left[id] > 0 || w.busy[id]) {
			return false
		}
	}
	return true
}

// Restarted forgets what a process that crashed was doing: its request
// died with it; the recovered process thinks and asks anew.
func (w *MutexLoad) Restarted(c sim.Control, id proc.ID) {
	w.busy[id] = false
	w.think(c, id)
}

func (w *MutexLoad) Init(c sim.Control) {
	n := c.N()
	w.left, w.busy, w.gen = make([]int, n), make([]bool, n), make([]int, n)
	for id := range w.left {
		w.left[id] = w.Rounds
		w.think(c, proc.ID(id))
	}
}

// think requests after a think time, unless the process requests earlier.
func (w *MutexLoad) think(c sim.Control, id proc.ID) {
	var d time.Duration
	if w.Think != nil {
		d = w.Think.Sample(c.Rand())
	}
	w.gen[id]++
	g := w.gen[id]
	c.After(d, func() {
		if w.gen[id] == g {
			w.request(c, id)
		}
	})
}

func (w *MutexLoad) request(c sim.Control, id proc.ID) {
	if w.busy[id] || w.left[id] == 0 {
		return
	}
	w.gen[id]++
	w.left[id]--
	w.busy[id] = true
	c.Schedule(0, id, mutex.Acquire{})
	if n := c.N(); w.Tell > 0 && n > 1 && c.Rand().Float64() < w.Tell {
		to := proc.ID(c.Rand().IntN(n - 1))
		if to >= id {
			to++
		}
		c.Schedule(0, id, mutex.Tell{To: to})
	}
}

func (w *MutexLoad) Observe(c sim.Control, id proc.ID, o proc.Output) {
	switch o.(type) {
	case mutex.Exit:
		w.busy[id] = false
		w.think(c, id)
	case mutex.Told:
		w.request(c, id)
	}
}

// MutexHold is the application inside the critical section: a process that
// entered releases after Hold. It runs beside every workload, scripted or
// generated.
type MutexHold struct{ Hold time.Duration }

func (MutexHold) Init(sim.Control) {}
func (h MutexHold) Observe(c sim.Control, id proc.ID, o proc.Output) {
	if _, ok := o.(mutex.Enter); ok {
		c.Schedule(h.Hold, id, mutex.Release{})
	}
}

// mutexMetrics measures a run against Coulouris et al.'s evaluation
// criteria: messages per entry, the client delay of uncontended requests
// and the synchronization delay between an exit and the next entry when
// someone was waiting (both in units of the mean one-way latency), and
// throughput.
func mutexMetrics(f Finished) (map[string]float64, map[string]*float64) {
	t := f.Trace
	lat := float64(f.MeanLatency)
	type req struct {
		node           int32
		acquire, enter int64 // times; enter < 0 while pending
		contended      bool
	}
	var reqs []*req
	pending := map[int32]*req{} // requested, not yet entered
	holding := int32(-1)
	var entries, exits int
	var first, last int64 = -1, 0
	var syncDelays, clientDelays []float64
	var lastExit int64 = -1
	waitedAtExit := false
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Input && e.Type == "acquire":
			r := &req{node: e.Node, acquire: e.Time, enter: -1}
			r.contended = holding >= 0 || len(pending) > 0
			for _, o := range pending {
				o.contended = true
			}
			pending[e.Node] = r
			reqs = append(reqs, r)
			if first < 0 {
				first = e.Time
			}
		case e.Kind == trace.Output && e.Type == "enter":
			entries++
			if r := pending[e.Node]; r != nil {
				r.enter = e.Time
				delete(pending, e.Node)
				if !r.contended {
					clientDelays = append(clientDelays, float64(r.enter-r.acquire)/lat)
				}
			}
			if lastExit >= 0 && waitedAtExit {
				syncDelays = append(syncDelays, float64(e.Time-lastExit)/lat)
			}
			lastExit = -1
			holding = e.Node
		case e.Kind == trace.Output && e.Type == "exit":
			exits++
			holding = -1
			lastExit = e.Time
			waitedAtExit = len(pending) > 0
			last = e.Time
		case e.Kind.Stops():
			delete(pending, e.Node)
			if holding == e.Node {
				holding = -1
			}
		}
	}
	m := map[string]float64{"entries": float64(entries)}
	if entries > 0 {
		// The algorithm's messages only: the workload's application
		// messages (mutex.App, sent on Tell) are not its cost.
		algo := f.Result.Sent - f.Result.Messages(mutex.App{}.Kind())
		m["messages_per_entry"] = float64(algo) / float64(entries)
	}
	if len(clientDelays) > 0 {
		m["client_delay_msgs"] = mean(clientDelays)
	}
	if len(syncDelays) > 0 {
		m["sync_delay_msgs"] = mean(syncDelays)
	}
	if exits > 0 && last > first {
		m["throughput_per_s"] = float64(exits) / (float64(last-first) / 1e9)
	}
	return m, mutexTheory(f.Algo, f.Nodes)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func mutexTheory(algo string, n int) map[string]*float64 {
	return theoryOf("mutex", algo, n, "messages_per_entry", "client_delay_msgs", "sync_delay_msgs")
}
