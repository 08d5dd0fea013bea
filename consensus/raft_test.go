package consensus_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var checks = []string{"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness", "linearizable-kv"}

// clients: five closed-loop clients of the key-value store on three keys.
func clients(stop time.Duration) *lab.KVClients {
	return &lab.KVClients{Clients: 5, Keys: 3, Think: time.Millisecond, Retry: 50 * time.Millisecond, Stop: stop}
}

// kv is the raft-kv algorithm: the store on Raft.
var kv = consensus.Algorithms[1]

// nemesis draws, from seed, a schedule of faults over the first horizon of
// a run of n servers: crashes (most followed by a recovery, which loses a
// random part of what was not synced), partitions (a minority cut off,
// the leader's side at random, or one server cut from all), pauses, and
// clocks that drift by up to maxDrift. Loss, duplication and reordering
// are on throughout.
func nemesis(n int, seed uint64, horizon time.Duration, maxDrift float64) (sim.Network, []sim.Fault, sim.ClockModel) {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d))
	net := sim.Network{
		Latency:   sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond},
		Loss:      0.05 * rng.Float64(),
		Duplicate: 0.02 * rng.Float64(),
		Reorder:   0.1 * rng.Float64(),
	}
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(horizon))) }
	var faults []sim.Fault
	for range 1 + rng.IntN(4) {
		p, c := proc.ID(rng.IntN(n)), at()
		kind := sim.Crash
		if rng.IntN(2) == 0 {
			kind = sim.CrashInSync // at the worst moment for the disk
		}
		faults = append(faults, sim.Fault{Kind: kind, Node: p, At: c})
		if rng.IntN(4) > 0 {
			faults = append(faults, sim.Fault{Kind: sim.Recover, Node: p, At: c + time.Duration(rng.Int64N(int64(horizon/4)))})
		}
	}
	for range rng.IntN(3) {
		from := at()
		perm := rng.Perm(n)
		k := 1 + rng.IntN((n-1)/2) // the minority side
		var a, b []proc.ID
		for i, p := range perm {
			if i < k {
				a = append(a, proc.ID(p))
			} else {
				b = append(b, proc.ID(p))
			}
		}
		net.Partitions = append(net.Partitions, sim.Partition{Groups: [][]proc.ID{a, b}, From: from, To: from + time.Duration(rng.Int64N(int64(horizon/3)))})
	}
	for range rng.IntN(3) {
		p, from := proc.ID(rng.IntN(n)), at()
		faults = append(faults, sim.Fault{Kind: sim.Pause, Node: p, At: from, Until: from + time.Duration(rng.Int64N(int64(horizon/5)))})
	}
	drift := make([]float64, n)
	for i := range drift {
		drift[i] = (2*rng.Float64() - 1) * maxDrift
	}
	clocks := func(id proc.ID) sim.HWClock { return sim.HWClock{Drift: drift[id]} }
	return net, faults, clocks
}

// TestRaftSafetyUnderFaults: hundreds of seeded schedules of crashes that
// lose unsynced writes, partitions, pauses, loss, duplication, reordering
// and drifting clocks; every checker holds in every run. Liveness: the
// faults stop by 2.7 s (the last recovery, partition or pause ends) and
// the clients by 3 s; when a majority is up, by 3.5 s one of them leads
// and every server that is up has committed the leader's whole log.
func TestRaftSafetyUnderFaults(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	seeds := 300
	if testing.Short() || raceEnabled {
		seeds = 4 // the simulator is single-threaded: a few runs under the detector; CI runs all 300 without it
	}
	type figures struct{ leaders, applied, lost, held int }
	run := func(t *testing.T, seed uint64) figures {
		n := 3 + 2*int(seed%2)
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		var leases leaseCheck
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed, New: kv.New,
			Network: net, Faults: faults, Clocks: clocks,
			Workload: clients(3 * time.Second),
			Deadline: 3500 * time.Millisecond, Until: leases.until(n, clocks)})
		r.Hold(t, checks...)
		if leases.err != nil {
			t.Errorf("seed %d: %v", seed, leases.err)
		}
		if err := converged(r.Sim, n); err != nil {
			t.Errorf("seed %d: liveness: %v", seed, err)
			consensus.DumpRaft(t, r.Sim, n)
		}
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
		return figures{r.Count("leader"), r.Count("applied"), int(r.Result.WritesLost), leases.held}
	}
	bySeed := make([]figures, seeds+1)
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) { bySeed[seed] = run(t, seed) })
	if !all || t.Failed() {
		return
	}
	var runs, leaders, applied, lost, held int
	add := func(f figures) {
		runs++
		leaders, applied, lost, held = leaders+f.leaders, applied+f.applied, lost+f.lost, held+f.held
	}
	for _, f := range bySeed[1:] {
		add(f)
	}
	// A few runs may lose no unsynced write: then a few more, until one
	// does (the storage faults must be exercised).
	for seed := uint64(seeds) + 1; lost == 0 && seed <= uint64(4*seeds); seed++ {
		add(run(t, seed))
	}
	t.Logf("%d runs: %d leaderships, %d entries applied, %d unsynced writes lost at crashes, a lease held after %d events",
		runs, leaders, applied, lost, held)
	if lost == 0 {
		t.Error("no crash lost an unsynced write: the storage faults were not exercised")
	}
	if held == 0 {
		t.Error("no leader ever held a lease: the lease check checked nothing")
	}
}

type leaser interface {
	Lease() time.Duration
	Leader() (proc.ID, uint64)
}

// leaseCheck checks, after every event, that at most one server believes
// it holds the leader's lease (Lease() after its own clock's reading).
type leaseCheck struct {
	err  error
	held int // events after which some server held a lease
}

func (l *leaseCheck) until(n int, clocks sim.ClockModel) func(*sim.Sim) bool {
	return func(s *sim.Sim) bool {
		if l.err != nil {
			return false
		}
		holder := proc.None
		for id := range proc.ID(n) {
			if !s.Up(id) {
				continue
			}
			r := s.Process(id).(leaser)
			if lease := r.Lease(); lease > 0 && lease > clocks(id).Read(s.Now()) {
				if holder != proc.None {
					_, t1 := s.Process(holder).(leaser).Leader()
					_, t2 := r.Leader()
					l.err = fmt.Errorf("at %v both p%d (term %d) and p%d (term %d) hold the leader's lease",
						s.Now(), holder, t1, id, t2)
					return false
				}
				holder = id
			}
		}
		if holder != proc.None {
			l.held++
		}
		return false
	}
}

func term(r *consensus.Raft) uint64 { _, t := r.Leader(); return t }

// converged checks that, if a majority of the latest configuration (that
// of the up server with the longest log) is up, one of them is the leader
// and every one has committed the leader's whole log.
func converged(s *sim.Sim, n int) error {
	var up []*consensus.Raft
	var lead, latest *consensus.Raft
	for id := range proc.ID(n) {
		if s.Up(id) {
			r := s.Process(id).(*consensus.Raft)
			up = append(up, r)
			if r.IsLeader() && (lead == nil || term(r) > term(lead)) {
				lead = r
			}
			if latest == nil || r.LastIndex() > latest.LastIndex() {
				latest = r
			}
		}
	}
	if latest == nil {
		return nil
	}
	members := latest.Members()
	var voters []*consensus.Raft
	for _, r := range up {
		if slices.Contains(members, proc.ID(r.Self())) {
			voters = append(voters, r)
		}
	}
	if len(voters) < len(members)/2+1 {
		return nil // no majority: nothing is promised
	}
	if lead == nil {
		return fmt.Errorf("%d of the %d members %v up and no leader", len(voters), len(members), members)
	}
	for _, r := range voters {
		if r.Commit() != lead.LastIndex() {
			return fmt.Errorf("p%d committed %d of the leader p%d's %d entries (term %d, p%d in term %d)",
				r.Self(), r.Commit(), lead.Self(), lead.LastIndex(), term(lead), r.Self(), term(r))
		}
	}
	return nil
}

func TestRaftCommitsWithoutFaults(t *testing.T) {
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 5, Seed: 1, New: kv.New,
		Network:  sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond}},
		Workload: clients(time.Second),
		Deadline: 1200 * time.Millisecond})
	r.Hold(t, checks...)
	if n := r.Count("leader"); n != 1 {
		t.Errorf("%d leaderships without faults, want 1", n)
	}
	per := r.Outputs("kv-result")
	for p := range proc.ID(5) {
		if len(per[p]) < 1000 {
			t.Errorf("p%d answered %d operations, want at least 1000", p, len(per[p]))
		}
	}
}

// amnesiac is a Raft server whose storage silently drops its term and
// vote: the bug stable storage exists to prevent. After a restart it may
// vote twice in a term.
type amnesiac struct{ *consensus.Raft }

type amnesiacEnv struct{ proc.Env }

type forgetful struct{ proc.Storage }

func (f forgetful) Append(rec []byte) {
	if rec[0] != consensus.RecState {
		f.Storage.Append(rec)
	}
}

func (e amnesiacEnv) Storage() proc.Storage { return forgetful{e.Env.Storage()} }

func (a amnesiac) Start(env proc.Env) { a.Raft.Start(amnesiacEnv{env}) }
func (a amnesiac) Receive(env proc.Env, f proc.ID, m proc.Message) {
	a.Raft.Receive(amnesiacEnv{env}, f, m)
}
func (a amnesiac) Timeout(env proc.Env, tag any)     { a.Raft.Timeout(amnesiacEnv{env}, tag) }
func (a amnesiac) Input(env proc.Env, in proc.Input) { a.Raft.Input(amnesiacEnv{env}, in) }

// mutant is the run of a hunt for a planted bug: three servers made by
// newServer under the nemesis of seed, with the key-value clients.
func mutant(seed uint64, newServer func(id proc.ID, n int) proc.Process) (sim.Config, sim.ClockModel) {
	net, faults, clocks := nemesis(3, seed, time.Second, 0.01)
	return sim.Config{Nodes: 3, Seed: seed, New: newServer, Network: net, Faults: faults, Clocks: clocks,
		Workload: clients(1500 * time.Millisecond), Deadline: 2 * time.Second}, clocks
}

// quickRestarts adds to cfg's faults, for each server, four crashes at
// random moments of the first second, each over within 1–20 ms: a server
// that forgets its vote is most likely to vote again in the same term
// when it comes back before the election is over.
func quickRestarts(cfg *sim.Config, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x7265))
	for p := range proc.ID(cfg.Nodes) {
		for range 4 {
			at := time.Duration(rng.Int64N(int64(time.Second)))
			cfg.Faults = append(cfg.Faults, sim.Fault{Kind: sim.Crash, Node: p, At: at},
				sim.Fault{Kind: sim.Recover, Node: p, At: at + time.Millisecond + time.Duration(rng.Int64N(int64(19*time.Millisecond)))})
		}
	}
}

// pauses pauses each of the n servers in turn, in an order and for times
// (300 to 450 ms, more than a session's TTL) drawn from seed: whichever
// leads is paused once, the others elect a new leader and expire the
// sessions the paused one was renewing, and the paused leader wakes up
// believing it still leads — the process pause that leases must survive
// (Gray and Cheriton's leases; Raft thesis §6.4). Only the links' latency
// besides: no loss, crash or drift to dilute the schedule.
func pauses(n int, seed uint64) (sim.Network, []sim.Fault) {
	rng := rand.New(rand.NewPCG(seed, 0x7061757365))
	var faults []sim.Fault
	at := 150*time.Millisecond + time.Duration(rng.Int64N(int64(100*time.Millisecond)))
	for _, p := range rng.Perm(n) {
		until := at + 300*time.Millisecond + time.Duration(rng.Int64N(int64(150*time.Millisecond)))
		faults = append(faults, sim.Fault{Kind: sim.Pause, Node: proc.ID(p), At: at, Until: until})
		at = until + 20*time.Millisecond
	}
	return sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}}, faults
}

// TestCheckersCatchAForgetfulServer: the same sweep with servers that do
// not persist their vote, and quick restarts besides, finds two leaders in
// one term, and the checker says so with the seed. Correct servers under
// the same schedules break nothing.
func TestCheckersCatchAForgetfulServer(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		cfg, _ := mutant(seed, func(id proc.ID, n int) proc.Process {
			return amnesiac{consensus.New(id, n, consensus.DefaultConfig, consensus.NewKV())}
		})
		quickRestarts(&cfg, seed)
		r := simtest.Run(t, "consensus", cfg)
		for _, name := range checks {
			if v := r.Verdicts(t, name)[name]; !v.OK() {
				t.Logf("seed %d: %s", seed, v)
				for control := uint64(1); control <= max(seed, 5); control++ {
					cfg, _ := mutant(control, kv.New)
					quickRestarts(&cfg, control)
					simtest.Run(t, "consensus", cfg).Hold(t, checks...)
				}
				return
			}
		}
	}
	t.Error("400 runs of servers that forget their votes broke nothing the checkers see")
}

// greedy is a Raft server that counts its lease to the end of the
// followers' longest election timeout (2·ElectionTimeout) after the last
// answer, rather than their shortest after the round was sent: the
// mistake a lease invites.
type greedy struct{ *consensus.Raft }

func (g greedy) Lease() time.Duration {
	if g.Raft.Lease() == 0 {
		return 0
	}
	return slices.Max(g.LastAck()) + 2*g.Cfg().ElectionTimeout
}

// TestLeaseCheckCatchesAGreedyLeader: the lease check finds a deposed
// leader that still believes in its lease, with the servers paused in
// turn (whichever leads wakes up after the others have elected another);
// correct leaders under the same schedules do not.
func TestLeaseCheckCatchesAGreedyLeader(t *testing.T) {
	run := func(seed uint64, newServer func(id proc.ID, n int) proc.Process) error {
		cfg, clocks := mutant(seed, newServer)
		cfg.Network, cfg.Faults = pauses(3, seed)
		var leases leaseCheck
		cfg.Until = leases.until(3, clocks)
		simtest.Run(t, "consensus", cfg)
		return leases.err
	}
	for seed := uint64(1); seed <= 300; seed++ {
		err := run(seed, func(id proc.ID, n int) proc.Process {
			return greedy{consensus.New(id, n, consensus.DefaultConfig, consensus.NewKV())}
		})
		if err != nil {
			t.Logf("seed %d: %v", seed, err)
			for control := uint64(1); control <= max(seed, 5); control++ {
				if err := run(control, kv.New); err != nil {
					t.Errorf("seed %d: correct leaders: %v", control, err)
				}
			}
			return
		}
	}
	t.Error("300 runs of leaders that overestimate their leases: no two leases overlapped")
}

// staleReader is a raft-kv server that answers a get from its own copy at
// once, without the log: the shortcut that makes reads stale.
type staleReader struct {
	*consensus.Raft
	kv *consensus.KV
}

func (s staleReader) Input(env proc.Env, in proc.Input) {
	var op consensus.KVOp
	if p, ok := in.(consensus.Propose); ok && json.Unmarshal(p.Data, &op) == nil && op.Op == "get" {
		v, found := s.kv.Get(op.Key)
		env.Output(consensus.KVResult{Client: op.Client, Seq: op.Seq, Value: v, Found: found, OK: true})
		return
	}
	s.Raft.Input(env, in)
}

// TestLinearizabilityCatchesStaleReads: servers that read their own copy
// answer, under partitions and lagging followers, with values a
// linearizable store could not have returned; the checker finds one.
func TestLinearizabilityCatchesStaleReads(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		cfg, _ := mutant(seed, func(id proc.ID, n int) proc.Process {
			kv := consensus.NewKV()
			return staleReader{consensus.New(id, n, consensus.DefaultConfig, kv), kv}
		})
		r := simtest.Run(t, "consensus", cfg)
		if v := r.Verdicts(t, "linearizable-kv")["linearizable-kv"]; !v.OK() {
			t.Logf("seed %d: %s", seed, v)
			return
		}
	}
	t.Error("100 runs of servers that read their own copies: every history was linearizable")
}

// reconfigurer asks a random server, every Every until Stop, to add a
// server or remove one, keeping between three and n members as far as it
// knows (from the leaders' Configured outputs); it follows redirects.
type reconfigurer struct {
	Every, Stop time.Duration
	members     []proc.ID
	changes     int // configurations committed
}

func (w *reconfigurer) Init(c sim.Control) {
	var tick func()
	tick = func() {
		if c.Now() >= w.Stop {
			return
		}
		var in proc.Input
		out := []proc.ID{}
		for p := range proc.ID(c.N()) {
			if !slices.Contains(w.members, p) {
				out = append(out, p)
			}
		}
		if len(out) > 0 && (len(w.members) <= 3 || c.Rand().IntN(2) == 0) {
			in = consensus.AddServer{ID: out[c.Rand().IntN(len(out))]}
		} else {
			in = consensus.RemoveServer{ID: w.members[c.Rand().IntN(len(w.members))]}
		}
		c.Schedule(0, proc.ID(c.Rand().IntN(c.N())), in)
		c.After(w.Every, tick)
	}
	c.After(w.Every, tick)
}

func (w *reconfigurer) Observe(c sim.Control, node proc.ID, o proc.Output) {
	if conf, ok := o.(consensus.Configured); ok {
		w.members = conf.Members
		w.changes++
	}
}

// TestMembershipChangesUnderFaults: servers are added and removed one at
// a time, every 60 ms, while the nemesis crashes, partitions and pauses
// them; every checker holds, linearizability included, and the cluster
// converges on its latest configuration.
func TestMembershipChangesUnderFaults(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	seeds := 200
	if testing.Short() || raceEnabled {
		seeds = 4
	}
	type figures struct{ changes, leaders int }
	bySeed := make([]figures, seeds+1)
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) {
		n := 5
		initial := []proc.ID{0, 1, 2}
		cfg := consensus.DefaultConfig
		cfg.Members = initial
		cfg.CompactEvery = 512 // snapshots carry configurations too
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		re := &reconfigurer{Every: 60 * time.Millisecond, Stop: 2500 * time.Millisecond, members: initial}
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed,
			New:     func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) },
			Network: net, Faults: faults, Clocks: clocks,
			Workload: sim.Combine{clients(3 * time.Second), re},
			Deadline: 3500 * time.Millisecond})
		r.Hold(t, checks...)
		if err := converged(r.Sim, n); err != nil {
			t.Errorf("seed %d: liveness: %v", seed, err)
			consensus.DumpRaft(t, r.Sim, n)
		}
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
		bySeed[seed] = figures{re.changes, r.Count("leader")}
	})
	if !all || t.Failed() {
		return
	}
	var changes, leaders int
	for _, f := range bySeed[1:] {
		changes, leaders = changes+f.changes, leaders+f.leaders
	}
	t.Logf("%d runs: %d configurations committed, %d leaderships", seeds, changes, leaders)
	if changes < 3*seeds {
		t.Errorf("only %d configurations committed in %d runs: the changes were not exercised", changes, seeds)
	}
}

func TestScenarioInputs(t *testing.T) {
	in := consensus.Algorithms[0].Inputs
	if got, err := in("add-server", []string{"3"}); err != nil || got != (consensus.AddServer{ID: 3}) {
		t.Errorf("add-server 3 = %v, %v", got, err)
	}
	if got, err := in("remove-server", []string{"0"}); err != nil || got != (consensus.RemoveServer{ID: 0}) {
		t.Errorf("remove-server 0 = %v, %v", got, err)
	}
	if got, err := in("propose", []string{"x", "y"}); err != nil || string(got.(consensus.Propose).Data) != "x y" {
		t.Errorf("propose x y = %v, %v", got, err)
	}
	for _, bad := range []struct {
		name string
		args []string
		want string
	}{
		{"add-server", []string{"-1"}, `server id "-1"`},
		{"add-server", []string{"a"}, `server id "a"`},
		{"remove-server", nil, `takes one server id`},
		{"propose", nil, `needs the data`},
		{"elect", nil, `unknown input "elect"`},
	} {
		if _, err := in(bad.name, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %v: error %v, want one with %q", bad.name, bad.args, err, bad.want)
		}
	}
}

// adder asks every server, at At, to add server ID, and records what the
// leader answers.
type adder struct {
	At       time.Duration
	ID       proc.ID
	refused  []string
	configed [][]proc.ID
	at       []time.Duration // when each configuration was committed
	index    uint64          // the last one's entry
}

func (w *adder) Init(c sim.Control) {
	for p := range proc.ID(c.N()) {
		c.Schedule(w.At, p, consensus.AddServer{ID: w.ID})
	}
}

func (w *adder) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case consensus.Refused:
		w.refused = append(w.refused, o.Reason)
	case consensus.Configured:
		w.configed = append(w.configed, o.Members)
		w.at = append(w.at, c.Now())
		w.index = o.Index
	}
}

// TestNewServerCatchesUpFirst: a server is added only once it has caught
// up with the leader's log as a learner (thesis §4.2.1). Added while it is
// down, it is refused, and the configuration stays as it was — before, it
// became a member at once, and a fourth member that never answers makes
// every commit need all three others. Added while it is up, behind by
// the whole log, it is added, and by the time the configuration commits
// it holds the log, but for what a round shorter than an election timeout
// adds.
func TestNewServerCatchesUpFirst(t *testing.T) {
	cfg := consensus.DefaultConfig
	cfg.Members = []proc.ID{0, 1, 2}
	mk := func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) }
	net := sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}, FIFO: true}

	down := &adder{At: time.Second, ID: 3}
	simtest.Run(t, "consensus", sim.Config{Nodes: 4, Seed: 1, New: mk, Network: net,
		Faults:   []sim.Fault{{Kind: sim.Crash, Node: 3, At: 0}},
		Workload: sim.Combine{clients(3 * time.Second), down}, Deadline: 3 * time.Second})
	if len(down.configed) != 0 || len(down.refused) == 0 || !strings.Contains(down.refused[len(down.refused)-1], "p3 did not catch up") {
		t.Fatalf("p3 down: configured %v, refused %q; want refused, nothing configured", down.configed, down.refused)
	}

	up := &adder{At: time.Second, ID: 3}
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 4, Seed: 1, New: mk, Network: net,
		Workload: sim.Combine{clients(3 * time.Second), up}, Deadline: 3 * time.Second})
	if len(up.configed) != 1 || !slices.Equal(up.configed[0], []proc.ID{0, 1, 2, 3}) {
		t.Fatalf("p3 up: configured %v, refused %q; want [0 1 2 3] once", up.configed, up.refused)
	}
	// What p3 held, by its acknowledgements, when the configuration that
	// adds it committed.
	var held uint64
	for _, e := range r.Trace.Events {
		var term, match uint64
		var ok bool
		if e.Kind == trace.Send && e.Node == 3 && e.Time < int64(up.at[0]) {
			if _, err := fmt.Sscanf(e.Label, "ACK(t=%d,%t,match=%d)", &term, &ok, &match); err == nil && ok {
				held = max(held, match)
			}
		}
	}
	t.Logf("p3 held %d entries when the configuration at %v committed: index %d", held, up.at[0], up.index)
	if held+200 < up.index {
		t.Errorf("p3 held %d entries when it was added at entry %d: it had not caught up", held, up.index)
	}
	r.Hold(t, checks...)
}

// TestSnapshotsInChunks: a server that comes back after the others have
// compacted their logs many times is brought up to date by snapshots in
// chunks of 16 bytes (Figure 13's offset and done), under the nemesis's
// faults: every checker holds, every server up at the end holds the
// leader's whole log, and chunks were sent past the first.
func TestSnapshotsInChunks(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	cfg := consensus.DefaultConfig
	cfg.CompactEvery, cfg.SnapshotChunk = 32, 16
	mk := func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) }
	seeds := simtest.Seeds(40, 3)
	bySeed := make([]int, seeds+1) // chunks sent past a snapshot's first
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) {
		n := 3 + 2*int(seed%2)
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		// One server is away from the start until after many compactions.
		faults = append(faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(n - 1), At: 0},
			sim.Fault{Kind: sim.Recover, Node: proc.ID(n - 1), At: 2 * time.Second})
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed, New: mk,
			Network: net, Faults: faults, Clocks: clocks,
			Workload: clients(3 * time.Second), Deadline: 3500 * time.Millisecond})
		r.Hold(t, checks...)
		if err := converged(r.Sim, n); err != nil {
			t.Errorf("seed %d: liveness: %v", seed, err)
		}
		for _, e := range r.Trace.Events {
			if e.Kind == trace.Send && e.Type == "snapshot" && strings.Contains(e.Label, "bytes=") && !strings.Contains(e.Label, "bytes=0+") {
				bySeed[seed]++
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
	})
	if !all || t.Failed() {
		return
	}
	chunks := 0
	for _, c := range bySeed {
		chunks += c
	}
	if chunks == 0 {
		t.Error("no chunk past a snapshot's first was sent: the chunking was not exercised")
	}
	t.Logf("%d runs: %d chunks sent past the first", seeds, chunks)
}

// changer asks the servers in To, at At, to make change In, and records
// the answers: the leader's Configured, and Refused wherever it appears.
type changer struct {
	steps    []changeStep
	refused  map[proc.ID][]string
	configed [][]proc.ID
}

type changeStep struct {
	At time.Duration
	To []proc.ID
	In proc.Input
}

func (w *changer) Init(c sim.Control) {
	w.refused = map[proc.ID][]string{}
	for _, s := range w.steps {
		for _, p := range s.To {
			c.Schedule(s.At, p, s.In)
		}
	}
}

func (w *changer) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case consensus.Refused:
		w.refused[node] = append(w.refused[node], o.Reason)
	case consensus.Configured:
		w.configed = append(w.configed, o.Members)
	}
}

// TestChangesForwardedToTheLeader: with Forward, a follower passes an
// AddServer or RemoveServer to the leader (as a live node's API does, for
// an operator who asks any node), and the leader's refusal comes back to
// it: asked of all three servers at once, p3 is added once and the two
// followers hear that it is catching up (or, asked later, a member
// already). A removed server is sent the log until it holds its removal:
// p0, removed through p3, ends knowing it votes no more — before, it was
// never told and went on believing itself a voter (seeds 1 and 4, where
// p2 leads).
func TestChangesForwardedToTheLeader(t *testing.T) {
	cfg := consensus.DefaultConfig
	cfg.Members, cfg.Forward = []proc.ID{0, 1, 2}, true
	mk := func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) }
	net := sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}, FIFO: true}
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		w := &changer{steps: []changeStep{
			{At: time.Second, To: []proc.ID{0, 1, 2}, In: consensus.AddServer{ID: 3}},
			{At: 2 * time.Second, To: []proc.ID{3}, In: consensus.RemoveServer{ID: 0}},
		}}
		// The clients stop before the removal: a server that is sent
		// entries answers, and is sent the next ones; it is an idle log
		// that would leave it uninformed.
		r := simtest.Run(t, "consensus", sim.Config{Nodes: 4, Seed: seed, New: mk, Network: net,
			Workload: sim.Combine{clients(1500 * time.Millisecond), w}, Deadline: 3 * time.Second})
		r.Hold(t, checks...)
		// (A removed leader commits its removal, and its successor may
		// report the same configuration again.)
		w.configed = slices.CompactFunc(w.configed, slices.Equal)
		if len(w.configed) != 2 || !slices.Equal(w.configed[0], []proc.ID{0, 1, 2, 3}) || !slices.Equal(w.configed[1], []proc.ID{1, 2, 3}) {
			t.Fatalf("seed %d: configured %v, refused %q; want [0 1 2 3] then [1 2 3]", seed, w.configed, w.refused)
		}
		followers := 0
		for p, rs := range w.refused {
			for _, why := range rs {
				if !strings.Contains(why, "p3 is catching up") && !strings.Contains(why, "p3 is a member already") {
					t.Errorf("seed %d: p%d was refused: %s", seed, p, why)
				}
			}
			followers++
		}
		if followers != 2 {
			t.Errorf("seed %d: refusals at %d servers (%q); want the two followers'", seed, followers, w.refused)
		}
		for id := range proc.ID(4) {
			ms, committed := r.Sim.Process(id).(*consensus.Raft).Configuration()
			if !slices.Equal(ms, []proc.ID{1, 2, 3}) {
				t.Errorf("seed %d: p%d follows %v (committed %v); want [1 2 3]", seed, id, ms, committed)
			}
		}
	}
}

// resigner asks the leader, at At, to remove itself, and records when
// the removal committed and when the next leader was elected.
type resigner struct {
	At                     time.Duration
	leader, removed        proc.ID
	committedAt, electedAt time.Duration
}

func (w *resigner) Init(c sim.Control) {
	w.leader, w.removed = proc.None, proc.None
	c.After(w.At, func() {
		w.removed = w.leader
		c.Schedule(0, w.leader, consensus.RemoveServer{ID: w.leader})
	})
}

func (w *resigner) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case consensus.Elected:
		w.leader = node
		if w.committedAt > 0 && w.electedAt == 0 {
			w.electedAt = c.Now()
		}
	case consensus.Configured:
		if w.removed != proc.None && !slices.Contains(o.Members, w.removed) && w.committedAt == 0 {
			w.committedAt = c.Now()
		}
	}
}

// TestRemovedLeaderHandsOver: a leader that removes itself steps down once
// its removal is committed and hands over (TimeoutNow, thesis §3.10): the
// next leader is elected within a heartbeat and a few message delays
// (50 ms here, where an election timeout is 150 ms). Before, the others
// waited out its silence — an election timeout or more (150 ms here)
// without a leader.
func TestRemovedLeaderHandsOver(t *testing.T) {
	cfg := consensus.DefaultConfig
	mk := func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) }
	net := sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}, FIFO: true}
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		w := &resigner{At: time.Second}
		r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: seed, New: mk, Network: net,
			Workload: sim.Combine{clients(2 * time.Second), w}, Deadline: 2 * time.Second})
		r.Hold(t, checks...)
		gap := w.electedAt - w.committedAt
		t.Logf("seed %d: p%d removed at %v, the next leader elected %v later", seed, w.removed, w.committedAt, gap)
		if w.committedAt == 0 || w.electedAt == 0 || gap > cfg.ElectionTimeout/3 {
			t.Errorf("seed %d: removal committed at %v, next leader at %v: want one within %v", seed, w.committedAt, w.electedAt, cfg.ElectionTimeout/3)
		}
	}
}

// A follower removed while it was down is told when it comes back: it
// campaigns, believing itself a voter, and the leader answers by sending
// it the log until it holds its removal (as one removed while up is sent
// it), instead of leaving it to campaign for ever.
func TestServerRemovedWhileDownIsToldWhenItReturns(t *testing.T) {
	cfg := consensus.DefaultConfig
	cfg.Members, cfg.Forward = []proc.ID{0, 1, 2, 3}, true
	mk := func(id proc.ID, n int) proc.Process { return consensus.New(id, n, cfg, consensus.NewKV()) }
	net := sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}, FIFO: true}
	// Down from 1 s; removed at 2 s, once the others have a leader for
	// sure; the leader stops telling it after 10 election timeouts
	// (1.5 s); it returns at 5 s.
	down := sim.Fault{Kind: sim.Crash, Node: 0, At: time.Second}
	up := sim.Fault{Kind: sim.Recover, Node: 0, At: 5 * time.Second}
	for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 2)); seed++ {
		w := &changer{steps: []changeStep{{At: 2 * time.Second, To: []proc.ID{1, 2, 3}, In: consensus.RemoveServer{ID: 0}}}}
		r := simtest.Run(t, "consensus", sim.Config{Nodes: 4, Seed: seed, New: mk, Network: net,
			Faults:   []sim.Fault{down, up},
			Workload: sim.Combine{clients(800 * time.Millisecond), w}, Deadline: 7 * time.Second})
		r.Hold(t, checks...)
		for id := range proc.ID(4) {
			ms, committed := r.Sim.Process(id).(*consensus.Raft).Configuration()
			if !slices.Equal(ms, []proc.ID{1, 2, 3}) {
				t.Errorf("seed %d: p%d follows %v (committed %v); want [1 2 3]", seed, id, ms, committed)
			}
		}
	}
}
