package rpc_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var jitter = sim.Uniform{Min: 500 * time.Microsecond, Max: 2 * time.Millisecond}

// TestCheckersCatchBrokenStubs: each checker catches a stub that breaks
// its property, in runs where the correct stubs hold it.
func TestCheckersCatchBrokenStubs(t *testing.T) {
	noThrottle := rpc.DefaultConfig()
	noThrottle.Retry.MaxTokens = -1
	cases := []struct {
		name, broken, checker string
		cfg                   rpc.Config
		sem                   rpc.Semantics
		net                   sim.Network
		serverCrashes         time.Duration
	}{
		// The server runs every request: a duplicate the network makes
		// runs the procedure twice.
		{"no table, at-most-once", "no-filter", "rpc-at-most-once", rpc.DefaultConfig(), rpc.AtMostOnce,
			sim.Network{Latency: jitter, Duplicate: 0.3}, 0},
		{"no table, maybe", "no-filter", "rpc-maybe", rpc.DefaultConfig(), rpc.Maybe,
			sim.Network{Latency: jitter, Duplicate: 0.3}, 0},
		// The table is not on stable storage: a retransmission after a
		// restart runs a call again that ran before the crash.
		{"volatile table", "volatile", "rpc-at-most-once", noThrottle, rpc.AtMostOnce,
			sim.Network{Latency: jitter, Loss: 0.3}, 20 * time.Millisecond},
		// The client returns a result it never got.
		{"claimed result", "claim", "rpc-at-least-once", noThrottle, rpc.AtLeastOnce,
			sim.Network{Latency: jitter, Loss: 0.7}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caught := false
			for seed := uint64(1); seed <= 10 && !caught; seed++ {
				w := &lab.RPCLoad{Calls: 100, Sem: c.sem, ServerCrashEvery: c.serverCrashes}
				r := run(t, rpc.NewBroken(c.cfg, c.broken), 3, seed, c.net, w)
				v := r.Verdicts(t, c.checker)[c.checker]
				if v.OK() {
					continue
				}
				caught = true
				if v.Status.String() != "violated" || len(v.Events) == 0 {
					t.Fatalf("seed %d: %s, want a violation with its events", seed, v)
				}
				w = &lab.RPCLoad{Calls: 100, Sem: c.sem, ServerCrashEvery: c.serverCrashes}
				good := run(t, rpc.New(c.cfg), 3, seed, c.net, w)
				if v := good.Verdicts(t, c.checker)[c.checker]; !v.OK() {
					t.Fatalf("seed %d: the correct stubs: %s", seed, v)
				}
			}
			if !caught {
				t.Fatalf("%s never caught the %s stubs in 10 seeds", c.checker, c.broken)
			}
		})
	}
}

// TestExactlyOnceIsImpossible: two runs in which the server crashes
// after it received an at-most-once call, and restarts. In the first it
// crashes while syncing the call's entry to its log, before the
// procedure starts; in the second, while the procedure runs. The client
// sees the same in both — its retransmission answered with "crashed" —
// but the procedure ran in one and not in the other: no stub can promise
// exactly once. (An at-least-once call would have run again in both.)
func TestExactlyOnceIsImpossible(t *testing.T) {
	cfg := rpc.DefaultConfig()
	cfg.Work = 10 * time.Millisecond
	call := sim.Script{{At: time.Millisecond, Node: 1, Input: rpc.Call{Sem: rpc.AtMostOnce}}}
	net := sim.Network{Latency: sim.Constant(time.Millisecond)}
	outcome := func(seed uint64, crash sim.Fault) (execs int, ret rpc.Returned) {
		r := simtest.Run(t, "rpc", sim.Config{Nodes: 2, Seed: seed, New: rpc.New(cfg), Network: net, Workload: call,
			Faults: []sim.Fault{crash, {Kind: sim.Recover, Node: 0, At: 5 * time.Millisecond}}})
		for _, e := range r.Trace.Events {
			if e.Kind == trace.Output && e.Type == "return" {
				if err := json.Unmarshal(e.Data, &ret); err != nil {
					t.Fatal(err)
				}
			}
		}
		if v := r.Verdicts(t, "rpc-at-most-once")["rpc-at-most-once"]; !v.OK() {
			t.Fatalf("seed %d: %s", seed, v)
		}
		return r.Count("exec"), ret
	}
	// The request arrives at 2ms; a crash in the sync that follows keeps
	// the entry on some seeds (the disk kept the write), loses it on
	// others (then the retransmission runs the call: not this case).
	var before rpc.Returned
	found := false
	for seed := uint64(1); seed <= 20 && !found; seed++ {
		execs, ret := outcome(seed, sim.Fault{Kind: sim.CrashInSync, Node: 0, At: time.Millisecond})
		if execs == 0 && ret.Err == rpc.ErrCrashed {
			before, found = ret, true
		}
	}
	if !found {
		t.Fatal("no seed kept the entry of a call the server crashed before running")
	}
	execs, during := outcome(1, sim.Fault{Kind: sim.Crash, Node: 0, At: 3 * time.Millisecond})
	if execs != 1 || during.Err != rpc.ErrCrashed {
		t.Fatalf("crash while running: %d executions, return %+v; want 1 and %q", execs, during, rpc.ErrCrashed)
	}
	if before.OK || before.Err != during.Err || before.CallID != during.CallID {
		t.Fatalf("the client told the runs apart: %+v and %+v", before, during)
	}
}

// TestRetryBudget: with every message lost, a call is attempted five
// times, gRPC's cap; the five timeouts take five of the client's ten
// tokens, which leaves it at the threshold, so the next calls are not
// retried at all. A maybe call is sent once.
func TestRetryBudget(t *testing.T) {
	for _, sem := range []rpc.Semantics{rpc.AtLeastOnce, rpc.AtMostOnce} {
		r := run(t, algo(t, "plain").New, 2, 1, sim.Network{Latency: jitter, Loss: 1}, &lab.RPCLoad{Calls: 4, Sem: sem})
		rets := returns(t, r)
		want := []rpc.Returned{{Attempts: 5, Err: rpc.ErrTimeout}, {Attempts: 1, Err: rpc.ErrThrottled}, {Attempts: 1, Err: rpc.ErrThrottled}, {Attempts: 1, Err: rpc.ErrThrottled}}
		if len(rets) != len(want) {
			t.Fatalf("%s: %d returns, want %d", sem, len(rets), len(want))
		}
		for i, o := range rets {
			if o.OK || o.Attempts != want[i].Attempts || o.Err != want[i].Err {
				t.Errorf("%s: call %d: %+v, want %d attempts and %q", sem, i+1, o, want[i].Attempts, want[i].Err)
			}
		}
	}
	r := run(t, algo(t, "plain").New, 2, 1, sim.Network{Latency: jitter, Loss: 1}, &lab.RPCLoad{Calls: 3, Sem: rpc.Maybe})
	for _, o := range returns(t, r) {
		if o.OK || o.Attempts != 1 || o.Err != rpc.ErrTimeout {
			t.Errorf("maybe: %+v, want one attempt and a timeout", o)
		}
	}
	if got := r.Trace.Count(trace.Send, "request"); got != 3 {
		t.Errorf("maybe: %d requests for 3 calls", got)
	}
}

// TestDuplicateTableBounded: at-most-once under loss, duplication and
// server crash-restarts, with a small compaction threshold: the table
// never holds more than two calls per client (the one in progress and
// the last, until the next request acknowledges it), the durable log
// stays near the threshold, and no call runs twice across the restarts
// and compactions.
func TestDuplicateTableBounded(t *testing.T) {
	cfg := rpc.DefaultConfig()
	cfg.Compact = 512
	var srv *rpc.Server
	newProc := func(id proc.ID, n int) proc.Process {
		if id == 0 {
			srv = rpc.NewServer(cfg)
			return srv
		}
		return rpc.NewClient(cfg)
	}
	const n = 4
	most := 0
	w := &lab.RPCLoad{Calls: 1500, Sem: rpc.AtMostOnce, ServerCrashEvery: 30 * time.Millisecond}
	c := sim.Config{Nodes: n, Seed: 3, New: newProc, Network: sim.Network{Latency: jitter, Loss: 0.2, Duplicate: 0.1},
		Faults: w.Faults(n, 3), Workload: w,
		Observe: func(time.Duration, proc.ID, proc.Output) { most = max(most, srv.TableSize()) }}
	c.Until = func(s *sim.Sim) bool { return w.Done(s.Up) }
	r := simtest.Run(t, "rpc", c)
	if v := r.Verdicts(t, "rpc-at-most-once")["rpc-at-most-once"]; !v.OK() {
		t.Fatal(v.Counterexample(r.Trace))
	}
	if most > 2*(n-1) {
		t.Errorf("the table held %d calls of %d clients", most, n-1)
	}
	size := 0
	for _, rec := range r.Sim.Durable(0) {
		size += len(rec)
	}
	if size > cfg.Compact+64 {
		t.Errorf("the durable log is %d bytes, compaction at %d", size, cfg.Compact)
	}
	if r.Trace.Count(trace.Crash, "") < 10 || r.Count("exec") < 500 {
		t.Errorf("%d crashes, %d executions: the run did not exercise the table", r.Trace.Count(trace.Crash, ""), r.Count("exec"))
	}
}
