package lab

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// RPCLoad is the rpc family's workload: the clients (every process but
// the server, process 0) make Calls calls in all, one at a time each,
// with semantics Sem and exponential think times of mean Think between
// them; and, if asked, the server and the clients crash and restart at
// random (crash-restarts drawn from the run's seed, with exponential gaps
// of mean ServerCrashEvery and ClientCrashEvery, each down for Downtime).
// It counts, as it sees the outputs, how often each call ran: the
// metrics of a run that keeps no trace.
type RPCLoad struct {
	// Calls is the calls made, in all; 0 means 200.
	Calls int
	// Sem is the calls' semantics; 0: the stubs' default, at-most-once.
	Sem rpc.Semantics
	// Work is how long each call's procedure runs at the server; 0: the
	// stubs' default (5ms).
	Work time.Duration
	// Think is the mean time between a call's return and the client's
	// next call; 0 means 1ms.
	Think time.Duration
	// ServerCrashEvery and ClientCrashEvery are the mean times between
	// crash-restarts of the server and of each client; 0: none.
	ServerCrashEvery, ClientCrashEvery time.Duration
	// Downtime is how long a crashed process stays down; 0 means 10ms.
	Downtime time.Duration
	// NoThrottle turns the clients' retry throttle off (RPCAlgo): every
	// call gets its five attempts.
	NoThrottle bool

	issued, ended, abandoned int
	restarts                 [2]int // of the server, of the clients
	ok                       int
	errs                     map[string]int
	busy                     map[proc.ID]bool // clients with a call in progress
	runs                     map[[2]uint64][]uint8
	running                  int // executions in progress at the server
	calls                    int // per client
}

// RPCAlgo returns algorithm a of the rpc family as a run with workload
// w runs it: without the retry throttle if w says so.
func RPCAlgo(a proc.Algorithm, w sim.Workload) proc.Algorithm {
	if l, ok := w.(*RPCLoad); ok && l.NoThrottle {
		return rpc.WithConfig(a, func(c *rpc.Config) { c.Retry.MaxTokens = -1 })
	}
	return a
}

// callEstimate bounds a call's duration with think time and retries
// (five attempts under loss take about 30ms), for the horizon of the
// crash schedule.
const callEstimate = 60 * time.Millisecond

// Faults draws the crash-restart schedule over a generous estimate of the
// time the calls take (a run that takes longer sees no crashes at its
// end; the metrics server_restarts and client_restarts count the crashes
// the run saw). A run ends when its calls are done, before the rest of
// the schedule.
func (w *RPCLoad) Faults(n int, seed uint64) []sim.Fault {
	if n < 2 {
		return nil
	}
	horizon := time.Duration(cmp.Or(w.Calls, 200)/(n-1)+1) * callEstimate
	r := rand.New(rand.NewPCG(seed, 0x727063)) // "rpc"
	down := cmp.Or(w.Downtime, 10*time.Millisecond)
	var faults []sim.Fault
	schedule := func(id proc.ID, every time.Duration) {
		if every <= 0 {
			return
		}
		for at := time.Duration(0); ; {
			at += time.Duration(r.ExpFloat64()*float64(every)) + time.Millisecond
			if at > horizon {
				return
			}
			faults = append(faults, sim.Fault{Kind: sim.Crash, Node: id, At: at}, sim.Fault{Kind: sim.Recover, Node: id, At: at + down})
			at += down
		}
	}
	schedule(0, w.ServerCrashEvery)
	for c := 1; c < n; c++ {
		schedule(proc.ID(c), w.ClientCrashEvery)
	}
	return faults
}

// Init starts every client's first call.
func (w *RPCLoad) Init(c sim.Control) {
	w.errs, w.busy, w.runs = map[string]int{}, map[proc.ID]bool{}, map[[2]uint64][]uint8{}
	w.calls = cmp.Or(w.Calls, 200)
	for id := 1; id < c.N(); id++ {
		w.next(c, proc.ID(id))
	}
}

// next makes client id's next call after a think time, if calls are left.
func (w *RPCLoad) next(c sim.Control, id proc.ID) {
	if w.issued >= w.calls {
		return
	}
	w.issued++
	w.busy[id] = true
	think := time.Duration(c.Rand().ExpFloat64() * float64(cmp.Or(w.Think, time.Millisecond)))
	c.Schedule(think, id, rpc.Call{Sem: w.Sem, Work: w.Work})
}

// Observe counts executions and returns, and makes the next call.
func (w *RPCLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case rpc.Executed:
		w.running++
		k := [2]uint64{uint64(o.Client), o.Epoch}
		r := w.runs[k]
		for uint64(len(r)) <= o.Seq {
			r = append(r, 0)
		}
		if r[o.Seq] < 255 {
			r[o.Seq]++
		}
		w.runs[k] = r
	case rpc.Done, rpc.Killed:
		w.running = max(0, w.running-1)
	case rpc.Returned:
		w.ended++
		if o.OK {
			w.ok++
		} else {
			w.errs[o.Err]++
		}
		w.busy[node] = false
		w.next(c, node)
	}
}

// Restarted: a client that crashed lost the call it was making (it is
// abandoned) and makes the next; a restarted server runs nothing.
func (w *RPCLoad) Restarted(c sim.Control, node proc.ID) {
	if node == 0 {
		w.running = 0
		w.restarts[0]++
		return
	}
	w.restarts[1]++
	if w.busy[node] {
		w.abandoned++
		w.busy[node] = false
	}
	w.next(c, node)
}

// Done: every call made has ended or was abandoned, and nothing runs at
// the server.
func (w *RPCLoad) Done(up func(proc.ID) bool) bool {
	return w.issued >= w.calls && w.ended+w.abandoned >= w.issued && w.running == 0 && up(0)
}

// rpcMetrics measures an rpc run: from the workload (so a run without a
// trace has them) the calls, their executions and failures; from the
// trace, if kept, the orphans a client crash left.
//
//   - calls, returned_ok, failed_calls (returned an error: by kind in
//     failed_timeout, failed_throttled, failed_crashed, failed_killed),
//     abandoned_calls (the client crashed first);
//   - executions_per_call: executions over calls made;
//     executions_per_call_max; duplicate_executions: calls that ran more
//     than once; unexecuted_calls: calls that never ran;
//   - orphans: executions running for a client that had crashed since
//     the call began; orphans_left: those still running at the end;
//     orphan_life_ms_max: the longest time one ran after its client's
//     crash; orphan_after_reboot_ms_max: after its client's reboot;
//   - server_restarts, client_restarts: the crash-restarts the run saw.
func rpcMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := theoryOf("rpc", f.Algo, f.Nodes, "messages_per_call")
	w, ok := f.Workload.(*RPCLoad)
	if !ok || w.errs == nil {
		return m, th
	}
	m["calls"] = float64(w.issued)
	m["returned_ok"] = float64(w.ok)
	failed := 0
	for _, e := range []string{rpc.ErrTimeout, rpc.ErrThrottled, rpc.ErrCrashed, rpc.ErrKilled} {
		m["failed_"+e] = float64(w.errs[e])
		failed += w.errs[e]
	}
	m["failed_calls"] = float64(failed)
	m["abandoned_calls"] = float64(w.abandoned)
	m["server_restarts"], m["client_restarts"] = float64(w.restarts[0]), float64(w.restarts[1])
	var execs, dups, most, ran int
	for _, r := range w.runs {
		for _, n := range r {
			execs += int(n)
			most = max(most, int(n))
			if n > 1 {
				dups++
			}
			if n > 0 {
				ran++
			}
		}
	}
	m["duplicate_executions"] = float64(dups)
	m["executions_per_call_max"] = float64(most)
	m["unexecuted_calls"] = float64(w.issued - ran)
	if w.issued > 0 {
		m["executions_per_call"] = float64(execs) / float64(w.issued)
		m["messages_per_call"] = float64(f.Result.Sent) / float64(w.issued)
	}
	if f.Trace != nil {
		orphanMetrics(f.Trace, m)
	}
	return m, th
}

// orphanMetrics finds the orphans in a trace: executions at the server
// (exec to done, killed or the server's crash) of a call whose client
// crashed while it ran.
func orphanMetrics(t *trace.Trace, m map[string]float64) {
	type run struct {
		call       [3]uint64 // client, epoch, seq
		begin, end int64     // end -1: still running
	}
	var runs []*run
	open := map[[3]uint64][]*run{}
	crashes := map[int32][]int64{}
	reboots := map[int32][]int64{}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Crash && e.Node == 0:
			for k, rs := range open {
				for _, r := range rs {
					r.end = e.Time
				}
				delete(open, k)
			}
		case e.Kind == trace.Crash:
			crashes[e.Node] = append(crashes[e.Node], e.Time)
		case e.Kind == trace.Recover:
			reboots[e.Node] = append(reboots[e.Node], e.Time)
		case e.Kind == trace.Output && (e.Type == "exec" || e.Type == "done" || e.Type == "killed"):
			var id rpc.CallID
			if json.Unmarshal(e.Data, &id) != nil {
				continue
			}
			k := [3]uint64{uint64(id.Client), id.Epoch, id.Seq}
			if e.Type == "exec" {
				r := &run{call: k, begin: e.Time, end: -1}
				runs = append(runs, r)
				open[k] = append(open[k], r)
			} else if rs := open[k]; len(rs) > 0 {
				rs[0].end = e.Time
				open[k] = rs[1:]
			}
		}
	}
	end := t.Events[len(t.Events)-1].Time
	var orphans, left float64
	var life, afterReboot int64
	for _, r := range runs {
		c := int32(r.call[0])
		stop := r.end
		if stop < 0 {
			stop = end
		}
		// the client's first crash while the execution ran
		crash := int64(-1)
		for _, tc := range crashes[c] {
			if tc >= r.begin && tc < stop {
				crash = tc
				break
			}
		}
		if crash < 0 {
			continue
		}
		orphans++
		if r.end < 0 {
			left++
		}
		life = max(life, stop-crash)
		for _, tr := range reboots[c] {
			if tr > crash {
				afterReboot = max(afterReboot, stop-tr)
				break
			}
		}
	}
	m["orphans"] = orphans
	m["orphans_left"] = left
	m["orphan_life_ms_max"] = float64(life) / 1e6
	m["orphan_after_reboot_ms_max"] = float64(afterReboot) / 1e6
}

// rpcCondition is one network and crash setting of the comparison.
type rpcCondition struct {
	name           string
	loss, dup      float64
	serverCrashes  time.Duration
	clientCrashes  time.Duration
	orphanRemedies bool
}

var rpcConditions = []rpcCondition{
	{name: "clean"},
	{name: "loss 10%", loss: 0.1},
	{name: "loss 20%", loss: 0.2},
	{name: "loss 30%", loss: 0.3},
	{name: "dup 10%", dup: 0.1},
	{name: "dup 30%", dup: 0.3},
	{name: "server crash /100ms", serverCrashes: 100 * time.Millisecond},
	{name: "server crash /30ms", serverCrashes: 30 * time.Millisecond},
	{name: "loss 30% dup 10% crash /100ms", loss: 0.3, dup: 0.1, serverCrashes: 100 * time.Millisecond},
}

// RPCCompareCalls is the calls of each comparison run.
const RPCCompareCalls = 1000

// rpcCases: every semantics in every condition, with the plain stubs;
// and the orphan remedies under client crashes.
var rpcCases = func() []compareCase {
	var cases []compareCase
	for _, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce} {
		for _, cond := range rpcConditions {
			cases = append(cases, compareCase{
				name:    sem.String() + ", " + cond.name,
				algos:   []string{"plain"},
				metrics: []string{"executions_per_call", "executions_per_call_max", "duplicate_executions", "failed_calls", "calls"},
				run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
					w := &RPCLoad{Calls: RPCCompareCalls, Sem: sem, ServerCrashEvery: cond.serverCrashes, NoThrottle: true}
					return rpcRun(f, a, n, seed, w, cond.loss, cond.dup)
				},
			})
		}
	}
	// gRPC's throttle (maxTokens 10, tokenRatio 0.1) stops the retries
	// once more than about one attempt in eleven fails.
	for _, sem := range []rpc.Semantics{rpc.AtLeastOnce, rpc.AtMostOnce} {
		for _, loss := range []float64{0.1, 0.3} {
			cases = append(cases, compareCase{
				name:    fmt.Sprintf("%s, loss %.0f%%, throttled", sem, 100*loss),
				algos:   []string{"plain"},
				metrics: []string{"executions_per_call", "executions_per_call_max", "duplicate_executions", "failed_calls", "calls"},
				run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
					return rpcRun(f, a, n, seed, &RPCLoad{Calls: RPCCompareCalls, Sem: sem}, loss, 0)
				},
			})
		}
	}
	cases = append(cases, compareCase{
		name:    "client crashes /100ms with 40ms procedures",
		metrics: []string{"orphans", "orphans_left", "orphan_life_ms_max", "orphan_after_reboot_ms_max"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			w := rpcWithClientCrashes().(*RPCLoad)
			return rpcRun(f, a, n, seed, w, 0, 0)
		},
		notes: map[string]string{
			"orphan_life_ms_max":         "plain: up to the procedure's 40ms; expiration: at most the lease, 15ms; extermination, reincarnation: the downtime, 10ms, plus a delay",
			"orphan_after_reboot_ms_max": "extermination, reincarnation: one message delay after the reboot",
		},
	})
	return cases
}()

func rpcRun(f Family, a proc.Algorithm, n int, seed uint64, w *RPCLoad, loss, dup float64) (*Report, error) {
	o := f.Options(a)
	o.Nodes, o.Seed, o.Workload, o.Algo = n, &seed, w, RPCAlgo(a, w)
	o.Network = NetworkFlags{Loss: &loss, Duplicate: &dup}
	r, _, err := Sim(o)
	return r, err
}

// rpcWithClientCrashes is the default workload of the orphan remedies:
// the clients crash and restart (down for 10ms), and each procedure runs
// for 40ms, so that there are orphans to remedy.
func rpcWithClientCrashes() sim.Workload {
	return &RPCLoad{ClientCrashEvery: 100 * time.Millisecond, Work: 40 * time.Millisecond}
}
