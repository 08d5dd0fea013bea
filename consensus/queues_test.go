package consensus_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var queueChecks = []string{"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness", "queue-delivery"}

func queueClients(stop time.Duration) *lab.QueueClients {
	return &lab.QueueClients{Producers: 2, Consumers: 4, Queues: 2, Window: 4, ReleaseEvery: 10, TxEvery: 10,
		Every: 10 * time.Millisecond, Hold: 5 * time.Millisecond, Vis: 100 * time.Millisecond,
		Think: 2 * time.Millisecond, Retry: 50 * time.Millisecond, Stop: stop}
}

// Snapshots every 256 entries: servers that restart or fall behind catch
// up from snapshots as well as from the log.
func queuesConfig() consensus.Config {
	cfg := consensus.DefaultConfig
	cfg.CompactEvery = 256
	return cfg
}

func newQueues(id proc.ID, n int) proc.Process {
	return consensus.NewQueues(id, n, queuesConfig(), consensus.DefaultQueueLimits)
}

// TestQueuesUnderFaults runs the replicated queues under the nemesis —
// crashes (some losing unsynced writes) and recoveries, partitions,
// pauses, loss, duplication, reordering, clocks drifting by up to 1% —
// and judges every run: no message leased to two consumers at once by
// their reckoning, none leased again once acked, each queue's messages
// first leased in the order of their ids with none acknowledged skipped,
// and the log safe. The consumers ack, release, and consume-and-produce
// in transactions. Liveness: once the faults are over, with a majority
// up, the consumers drain every acknowledged put and ack it.
func TestQueuesUnderFaults(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	seeds := simtest.Seeds(100, 3)
	type figures struct{ puts, leases, txs, expired, lost int }
	bySeed := make([]figures, seeds+1)
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) {
		n := 3 + 2*int(seed%2)
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		w := queueClients(2800 * time.Millisecond)
		if seed%3 == 0 {
			// Leases longer than an election, held through changes of leader.
			w.Vis, w.Hold, w.Consumers, w.Every = 600*time.Millisecond, 300*time.Millisecond, 8, 150*time.Millisecond
		}
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed, New: newQueues,
			Network: net, Faults: faults, Clocks: clocks,
			Workload: w, Deadline: 5 * time.Second})
		r.Hold(t, queueChecks...)
		if upMajority(r.Sim, n) {
			if err := drained(r.Trace.Events); err != nil {
				t.Errorf("seed %d: liveness: %v", seed, err)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
		bySeed[seed] = figures{r.Count("queue-put-done"), r.Count("queue-got"), r.Count("queue-tx-done"), r.Count("queue-expired"), int(r.Result.WritesLost)}
	})
	if !all || t.Failed() {
		return
	}
	var puts, leases, txs, expired, lost int
	for _, f := range bySeed[1:] {
		puts, leases, txs, expired, lost = puts+f.puts, leases+f.leases, txs+f.txs, expired+f.expired, lost+f.lost
	}
	t.Logf("%d runs: %d put acknowledgements, %d get answers, %d transactions, %d lease expiries output, %d unsynced writes lost at crashes", seeds, puts, leases, txs, expired, lost)
	if expired == 0 && seeds > 10 {
		t.Error("no lease ever expired: the faults never tested the leases")
	}
}

// drained checks that every acknowledged put was acked by a consumer.
func drained(events []trace.Event) error {
	put := map[uint64]string{}
	acked := map[uint64]bool{}
	for _, e := range events {
		if e.Kind != trace.Output {
			continue
		}
		switch e.Type {
		case "queue-put-done":
			var p consensus.QueuePutDone
			if json.Unmarshal(e.Data, &p) == nil && p.ID > 0 {
				put[p.ID] = p.Queue
			}
		case "queue-acked":
			var a consensus.QueueAcked
			if json.Unmarshal(e.Data, &a) == nil && !a.Released {
				for _, id := range a.IDs {
					acked[id] = true
				}
			}
		case "queue-tx-done":
			var d consensus.QueueTxDone
			if json.Unmarshal(e.Data, &d) == nil {
				for _, id := range d.Acked {
					acked[id] = true
				}
			}
		}
	}
	for id, q := range put {
		if !acked[id] {
			return fmt.Errorf("message %d of queue %s was put and acknowledged, and never acked by a consumer (%d put, %d acked)", id, q, len(put), len(acked))
		}
	}
	return nil
}

// The planted bugs: each makes the nemesis produce a run that
// queue-delivery rejects.
func TestQueueDeliveryCatchesBrokenQueueServers(t *testing.T) {
	apply := func(bug func(q *consensus.Queues, env proc.Env, index uint64, data []byte) bool) func(id proc.ID, n int) proc.Process {
		return func(id proc.ID, n int) proc.Process {
			return consensus.NewQueuesApplying(id, n, queuesConfig(), consensus.DefaultQueueLimits, func(q *consensus.Queues, env proc.Env, index uint64, data []byte) error {
				if !bug(q, env, index, data) {
					return q.Apply(env, index, data)
				}
				return nil
			})
		}
	}
	op := func(data []byte) consensus.QueueOp {
		o, _ := consensus.DecodeQueueOp(data)
		return o
	}
	for name, mk := range map[string]func(id proc.ID, n int) proc.Process{
		// An ack that puts the message back (a lost acknowledgement).
		"requeues acked messages": apply(func(q *consensus.Queues, env proc.Env, index uint64, data []byte) bool {
			o := op(data)
			if o.Op != "ack" {
				return false
			}
			o.Op = "release"
			b, _ := json.Marshal(o)
			q.Apply(env, index, b)
			env.Output(consensus.QueueAcked{Queue: o.Queue, Origin: o.Origin, Seq: o.Seq, Index: index, IDs: o.IDs})
			return true
		}),
		// A stack, not a queue.
		"delivers newest first": apply(func(q *consensus.Queues, env proc.Env, index uint64, data []byte) bool {
			if op(data).Op != "get" {
				return false
			}
			q.ReverseReady()
			q.Apply(env, index, data)
			q.ReverseReady()
			return true
		}),
		// A new leader that expires the leases it inherits at once.
		"takes over without extending": func(id proc.ID, n int) proc.Process {
			return queueOblivious{consensus.NewQueues(id, n, queuesConfig(), consensus.DefaultQueueLimits), new(bool)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 300; seed++ {
				net, faults, clocks := nemesis(3, seed, time.Second, 0.01)
				w := queueClients(1500 * time.Millisecond)
				// Consumers that hold messages through a change of leader
				// (leases longer than an election), and others ready to take
				// them.
				w.Vis, w.Hold, w.Consumers = 600*time.Millisecond, 500*time.Millisecond, 8
				r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: seed, New: mk, Network: net, Faults: faults, Clocks: clocks,
					Workload: w, Deadline: 2 * time.Second})
				if v := r.Verdicts(t, "queue-delivery")["queue-delivery"]; !v.OK() {
					t.Logf("seed %d: %s", seed, v)
					return
				}
			}
			t.Error("300 runs: queue-delivery found nothing wrong")
		})
	}
}

type queueOblivious struct {
	*consensus.Queues
	led *bool
}

func (f queueOblivious) after(env proc.Env) {
	if f.Leading() && !*f.led {
		f.ForgetLeaseDeadlines(env)
	}
	*f.led = f.Leading()
}

func (f queueOblivious) Input(env proc.Env, in proc.Input) { f.Queues.Input(env, in); f.after(env) }
func (f queueOblivious) Receive(env proc.Env, from proc.ID, m proc.Message) {
	f.Queues.Receive(env, from, m)
	f.after(env)
}
func (f queueOblivious) Timeout(env proc.Env, tag any) { f.Queues.Timeout(env, tag); f.after(env) }

// MaxBatchBytes bounds the entries' data an AppendEntries carries (one
// entry at least): a server that comes back after a crash catches up
// in many small messages, and every queue property holds.
func TestAppendEntriesWithinMaxBatchBytes(t *testing.T) {
	cfg := queuesConfig()
	cfg.MaxBatchBytes = 2048
	var sent, multi int
	watch := func(m proc.Message) {
		a, ok := m.(consensus.AppendEntries)
		if !ok {
			return
		}
		size := 0
		for _, en := range a.Entries {
			size += len(en.Data)
		}
		if len(a.Entries) > 1 && size > cfg.MaxBatchBytes {
			t.Fatalf("an AppendEntries of %d entries carries %d bytes, over %d", len(a.Entries), size, cfg.MaxBatchBytes)
		}
		sent++
		if len(a.Entries) > 1 {
			multi++
		}
	}
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: 7,
		New: func(id proc.ID, n int) proc.Process {
			return watched{consensus.NewQueues(id, n, cfg, consensus.DefaultQueueLimits), watch}
		},
		Network:  sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond}},
		Faults:   []sim.Fault{{Kind: sim.Crash, Node: 2, At: 200 * time.Millisecond}, {Kind: sim.Recover, Node: 2, At: 600 * time.Millisecond}},
		Workload: queueClients(time.Second), Deadline: 2 * time.Second})
	r.Hold(t, queueChecks...)
	if multi == 0 {
		t.Errorf("%d AppendEntries, none with more than one entry: the bound was never tested", sent)
	}
	if err := drained(r.Trace.Events); err != nil {
		t.Error(err)
	}
	t.Logf("%d AppendEntries, %d with more than one entry", sent, multi)
}

// watched shows a server's messages to watch as it sends them.
type watched struct {
	*consensus.Queues
	watch func(proc.Message)
}

type watchEnv struct {
	proc.Env
	watch func(proc.Message)
}

func (e watchEnv) Send(to proc.ID, m proc.Message) { e.watch(m); e.Env.Send(to, m) }

func (w watched) Start(env proc.Env)                { w.Queues.Start(watchEnv{env, w.watch}) }
func (w watched) Input(env proc.Env, in proc.Input) { w.Queues.Input(watchEnv{env, w.watch}, in) }
func (w watched) Timeout(env proc.Env, tag any)     { w.Queues.Timeout(watchEnv{env, w.watch}, tag) }
func (w watched) Receive(env proc.Env, from proc.ID, m proc.Message) {
	w.Queues.Receive(watchEnv{env, w.watch}, from, m)
}

// TestQueuesUnderMembershipChanges: the replicated queues' servers are
// added and removed one at a time, every 60 ms, while producers and
// consumers work and the nemesis crashes, partitions and pauses them
// (the queues' log follows the cluster's voters live, `cohort cluster
// add|remove`). No message is leased to two consumers at once, none again
// once acked, none skipped; the log stays safe; the configurations
// change.
func TestQueuesUnderMembershipChanges(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	seeds := simtest.Seeds(100, 3)
	type figures struct{ changes, puts, leases int }
	bySeed := make([]figures, seeds+1)
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) {
		n := 5
		initial := []proc.ID{0, 1, 2}
		cfg := queuesConfig()
		cfg.Members = initial
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		re := &reconfigurer{Every: 60 * time.Millisecond, Stop: 2500 * time.Millisecond, members: initial}
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed,
			New: func(id proc.ID, n int) proc.Process {
				return consensus.NewQueues(id, n, cfg, consensus.DefaultQueueLimits)
			},
			Network: net, Faults: faults, Clocks: clocks,
			Workload: sim.Combine{queueClients(2800 * time.Millisecond), re},
			Deadline: 5 * time.Second})
		r.Hold(t, queueChecks...)
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
		bySeed[seed] = figures{re.changes, r.Count("queue-put-done"), r.Count("queue-got")}
	})
	if !all || t.Failed() {
		return
	}
	var changes, puts, leases int
	for _, f := range bySeed[1:] {
		changes, puts, leases = changes+f.changes, puts+f.puts, leases+f.leases
	}
	t.Logf("%d runs: %d configurations committed, %d put acknowledgements, %d get answers", seeds, changes, puts, leases)
	if changes < 3*seeds {
		t.Errorf("only %d configurations committed in %d runs: the changes were not exercised", changes, seeds)
	}
}

// Leased messages stay with their consumers under a leader whose lease
// has lapsed for good: every link takes 80 ms one way, so a heartbeat
// round's acknowledgements come back after the lease it would give has
// run out (twice 80 ms against about 147), and the leader, hearing its
// followers all the while, stays leader — the condition under which the
// lock service once refused every KeepAlive while its sweep went on
// expiring sessions (TestSessionsOutliveALapsedLease). The queues hold
// because nothing of theirs reads that lease: a get, an ack, a release
// and a transaction are each an entry, and a lease's deadline is set
// when its get applies at the leader, after the get went to the leader
// and through the log; an ack, which only has to reach the leader, sent
// while the lease is valid by its consumer's reckoning, enters the log
// before the leader could propose the lease's expiry. The test checks
// that no lease whose consumer acked, released or transacted it in time
// expires under it (a leader that refused acks while its lease lapsed,
// as the lock service refused KeepAlives, fails it at once), that no
// message is held by two consumers at once, and that the queues drain
// (the run goes on long after the puts stop: a transaction puts another
// message, a release gives one back).
func TestQueueLeasesOutliveALapsedLease(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		// A get is answered about 340 ms after it is sent (forwarded,
		// replicated, committed, applied by the server asked); a consumer
		// holds its message 400 ms more and acks it well within the 980
		// ms it counts on.
		w := &lab.QueueClients{Producers: 2, Consumers: 6, Queues: 2, Window: 4, ReleaseEvery: 10, TxEvery: 10,
			Every: 400 * time.Millisecond, Hold: 400 * time.Millisecond, Vis: time.Second,
			Think: 2 * time.Millisecond, Retry: time.Second, Stop: 3 * time.Second}
		var lapsed, led int
		r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: seed,
			New: func(id proc.ID, n int) proc.Process {
				return lapseWatch{consensus.NewQueues(id, n, queuesConfig(), consensus.DefaultQueueLimits), &lapsed, &led}
			},
			Network:  sim.Network{Latency: sim.Constant(80 * time.Millisecond)},
			Workload: w, Deadline: 10 * time.Second})
		r.Hold(t, queueChecks...)
		if err := drained(r.Trace.Events); err != nil {
			t.Errorf("seed %d: liveness: %v", seed, err)
		}
		if err := keptInTime(r.Trace.Events); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		if lapsed*10 < led*9 {
			t.Errorf("seed %d: the leader held its lease at %d of its %d events: the test no longer tests a lapsed lease", seed, led-lapsed, led)
		}
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("seed %d: %d acked, %d leases expired, the lease lapsed at %d of the leader's %d events", seed, r.Count("queue-acked"), r.Count("queue-expired"), lapsed, led)
	}
}

// keptInTime checks that no lease expired whose consumer acked, released
// or transacted its message under it: the workload does so only while
// the lease is valid by its reckoning.
func keptInTime(events []trace.Event) error {
	type lease struct{ id, token uint64 }
	kept := map[lease]bool{}
	var x struct {
		ID    uint64   `json:"id"`
		IDs   []uint64 `json:"ids"`
		Token uint64   `json:"token"`
		Acks  []consensus.QueueRef
	}
	for _, e := range events {
		x.ID, x.IDs, x.Token, x.Acks = 0, nil, 0, nil
		switch {
		case e.Kind == trace.Input && (e.Type == "queue-ack" || e.Type == "queue-release" || e.Type == "queue-tx"):
			if json.Unmarshal(e.Data, &x) != nil {
				return fmt.Errorf("%s %s: not an operation", e.Type, e.Data)
			}
			for _, id := range x.IDs {
				kept[lease{id, x.Token}] = true
			}
			for _, a := range x.Acks {
				kept[lease{a.ID, a.Token}] = true
			}
		case e.Kind == trace.Output && e.Type == "queue-expired":
			if json.Unmarshal(e.Data, &x) != nil {
				return fmt.Errorf("%s %s: not an expiry", e.Type, e.Data)
			}
			if kept[lease{x.ID, x.Token}] {
				return fmt.Errorf("message %d expired under lease %d at %v, though its consumer had acked or released it in time", x.ID, x.Token, time.Duration(e.Time))
			}
		}
	}
	return nil
}

// lapseWatch counts the events after which its server is the ready
// leader (led), and those at which its lease has lapsed (lapsed).
type lapseWatch struct {
	*consensus.Queues
	lapsed, led *int
}

func (w lapseWatch) after(env proc.Env) {
	if r := w.Raft(); r.Ready() {
		*w.led++
		if env.Now() >= r.Lease() {
			*w.lapsed++
		}
	}
}

func (w lapseWatch) Input(env proc.Env, in proc.Input) { w.Queues.Input(env, in); w.after(env) }
func (w lapseWatch) Timeout(env proc.Env, tag any)     { w.Queues.Timeout(env, tag); w.after(env) }
func (w lapseWatch) Receive(env proc.Env, from proc.ID, m proc.Message) {
	w.Queues.Receive(env, from, m)
	w.after(env)
}

// A committed entry one server cannot apply (it cannot decode it: a
// newer version wrote it, or it is damaged) halts that server, which
// outputs Halted once and nothing of the queues after it — no entry
// applied, no put, get or ack answered — and leads no more; the others
// apply every entry and serve the clients, and every check holds on the
// run. Before, the server skipped the entry and went on from a state
// the others no longer had: here, the get it skipped left a message
// ready there that was leased everywhere else.
//
// Once the leader's snapshot covers the entry, the leader sends it to
// the halted server, which restores it and resumes (Resumed, at the
// snapshot's last entry, past the one it halted at) and applies every
// entry after it with the same digests as the others (the checks);
// before, it stayed halted until a restart. A leader that never
// compacts has no such snapshot: the server stays halted.
func TestQueuesHaltAtAnEntryTheyCannotApply(t *testing.T) {
	for _, compact := range []int{0, 256} {
		for seed := uint64(1); seed <= uint64(simtest.Seeds(10, 2)); seed++ {
			haltAndResume(t, seed, compact)
			if t.Failed() {
				return
			}
		}
	}
}

func haltAndResume(t *testing.T, seed uint64, compact int) {
	const odd = proc.ID(2) // the server that cannot apply one entry
	var bad uint64         // that entry
	cfg := queuesConfig()
	cfg.CompactEvery = compact
	mk := func(id proc.ID, n int) proc.Process {
		return consensus.NewQueuesApplying(id, n, cfg, consensus.DefaultQueueLimits, func(q *consensus.Queues, env proc.Env, index uint64, data []byte) error {
			if id == odd && bad == 0 && index > 40 {
				if op, _ := consensus.DecodeQueueOp(data); op.Op == "get" {
					bad = index
				}
			}
			if id == odd && index == bad {
				return q.Apply(env, index, append([]byte{'?'}, data...))
			}
			return q.Apply(env, index, data)
		})
	}
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: seed, New: mk, Workload: queueClients(800 * time.Millisecond), Deadline: 2 * time.Second})
	r.Hold(t, queueChecks...)
	if err := drained(r.Trace.Events); err != nil {
		t.Errorf("seed %d: liveness: %v", seed, err)
	}
	var resumedAt uint64
	halted, resumed, appliedAfter, applied := 0, 0, uint64(0), map[int32]uint64{}
	for _, e := range r.Trace.Events {
		if e.Kind != trace.Output {
			continue
		}
		switch {
		case e.Type == "halted":
			var h consensus.Halted
			if json.Unmarshal(e.Data, &h) != nil || e.Node != int32(odd) || h.Index != bad || h.Reason == "" {
				t.Fatalf("seed %d: %s at p%d, want p%d halted at entry %d, with its reason", seed, e.Data, e.Node, odd, bad)
			}
			halted++
		case e.Type == "resumed":
			var m consensus.Resumed
			if json.Unmarshal(e.Data, &m) != nil || e.Node != int32(odd) || halted != 1 || m.Index < bad {
				t.Fatalf("seed %d: %s at p%d, want p%d resumed after its halt at entry %d, at it or past it", seed, e.Data, e.Node, odd, bad)
			}
			resumed++
			resumedAt = m.Index
		case halted > resumed && e.Node == int32(odd) && (e.Type == "applied" || e.Type == "leader" || len(e.Type) > 6 && e.Type[:6] == "queue-"):
			t.Errorf("seed %d: p%d output %s %s while it halted", seed, odd, e.Type, e.Data)
		case e.Type == "applied":
			var a consensus.Applied
			if json.Unmarshal(e.Data, &a) == nil {
				applied[e.Node] = a.Index
				if e.Node == int32(odd) && resumed > 0 && appliedAfter == 0 {
					appliedAfter = a.Index
				}
			}
		}
	}
	if bad == 0 || halted != 1 {
		t.Fatalf("seed %d: %d halted outputs (entry %d), want one", seed, halted, bad)
	}
	if applied[0] <= bad || applied[1] <= bad {
		t.Fatalf("seed %d: applied up to %v, want the others beyond %d", seed, applied, bad)
	}
	switch {
	case compact == 0 && (resumed != 0 || applied[int32(odd)] != bad-1):
		t.Fatalf("seed %d, no snapshots: %d resumed, p%d applied up to %d, want it halted after %d", seed, resumed, odd, applied[int32(odd)], bad-1)
	case compact > 0 && resumed != 1:
		t.Fatalf("seed %d: p%d resumed %d times, want once: from the leader's snapshot", seed, odd, resumed)
	case compact > 0 && (appliedAfter != 0 && appliedAfter != resumedAt+1 || applied[int32(odd)] <= resumedAt):
		t.Fatalf("seed %d: p%d resumed at %d, then applied %d to %d; want on from %d", seed, odd, resumedAt, appliedAfter, applied[int32(odd)], resumedAt+1)
	}
}
