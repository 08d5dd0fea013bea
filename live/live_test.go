package live_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
)

// transports makes n connected transports: over TCP on loopback, or
// in-process.
// oneNode starts a one-node cluster on the in-process transport, with cfg
// (its Self, N and Transport filled in); it is closed when the test ends.
func oneNode(t *testing.T, cfg live.Config) *live.Node {
	t.Helper()
	nw, err := transport.NewInProc(1, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Self, cfg.N = 0, 1
	cfg.Transport, _ = nw.Endpoint(0)
	node, err := live.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node
}

func transports(t *testing.T, n int, tcp bool) []transport.Transport {
	t.Helper()
	var out []transport.Transport
	if !tcp {
		nw, err := transport.NewInProc(n, transport.InProcConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			ep, _ := nw.Endpoint(proc.ID(i))
			out = append(out, ep)
		}
		return out
	}
	var lns []net.Listener
	addrs := map[proc.ID]string{}
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs[proc.ID(i)] = ln.Addr().String()
	}
	for i := 0; i < n; i++ {
		peers := map[proc.ID]string{}
		for id, a := range addrs {
			if id != proc.ID(i) {
				peers[id] = a
			}
		}
		tr, err := transport.NewTCP(transport.Config{Self: proc.ID(i), Listener: lns[i], Peers: peers,
			Secret: []byte("a test cluster's shared secret")})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// runClocks runs a clock demonstration on n live nodes, traced, until it
// falls silent, and returns the merged trace.
func runClocks(t *testing.T, algo string, n int, tcp bool) *trace.Trace {
	f, _ := registry.Lookup("clocks")
	a, err := f.Algorithm(algo)
	if err != nil {
		t.Fatal(err)
	}
	trs := transports(t, n, tcp)
	bufs := make([]*bytes.Buffer, n)
	var nodes []*live.Node
	var services []*live.Service
	for i := 0; i < n; i++ {
		bufs[i] = &bytes.Buffer{}
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: n, Transport: trs[i],
			NewCodec: func(m []proc.Message) (live.Codec, error) { return wire.NewCodec(m) },
			// Every node runs the service "clocks": one whose peer starts
			// first must not drop its messages.
			Resolve: func(name string) (proc.Algorithm, bool) { return a, name == "clocks" },
			Trace:   bufs[i], TraceFamily: "clocks", TraceAlgo: algo})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	for _, node := range nodes {
		s, err := node.Service("clocks", a)
		if err != nil {
			t.Fatal(err)
		}
		services = append(services, s)
	}
	// The demonstration ticks 20 times a millisecond apart and then falls
	// silent: wait until every message sent has arrived and nothing has
	// happened for a while, within a deadline.
	deadline := time.Now().Add(10 * time.Second)
	var last int64 = -1
	for {
		var sent, received, handled int64
		for _, s := range services {
			st := s.Stats()
			sent, received, handled = sent+st.Sent, received+st.Received, handled+st.Handled
		}
		if sent == received && handled == last && handled >= int64(20*n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not settle: sent %d, received %d, handled %d", sent, received, handled)
		}
		last = handled
		time.Sleep(30 * time.Millisecond)
	}
	var ts []*trace.Trace
	for i, node := range nodes {
		if err := node.Close(); err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(bufs[i])
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	merged, err := live.Merge(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return merged
}

// The clocks family runs live as in the simulator, and its checkers judge
// the live trace the same way: Lamport's correction holds the clock
// condition; uncorrected clocks break it.
func TestClocksLive(t *testing.T) {
	for _, tcp := range []bool{true, false} {
		name := map[bool]string{true: "tcp", false: "inproc"}[tcp]
		t.Run(name, func(t *testing.T) {
			tr := runClocks(t, "lamport", 5, tcp)
			res, err := check.Run(tr, "integrity", "no-duplicates", "clock-condition")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if !r.OK() {
					t.Errorf("lamport, live: %s", r.Counterexample(tr))
				}
			}
			tr = runClocks(t, "physical", 5, tcp)
			res, _ = check.Run(tr, "clock-condition")
			if res[0].OK() {
				t.Error("physical clocks, live: the checker found no violation")
			}
		})
	}
}

// A node killed mid-write leaves a torn last line: resuming cuts it off and
// continues the numbering, the clocks and the message ids, after recording
// that the previous incarnation stopped.
func TestResumeATornTrace(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, trace.Header{Nodes: 2})
	w.Record(&trace.Event{Index: 0, Time: 10, Node: 1, Kind: trace.Start, Peer: -1, VC: trace.DenseVC([]uint64{0, 1})})
	w.Record(&trace.Event{Index: 1, Time: 20, Node: 1, Kind: trace.Send, Msg: 1<<40 | 7, Peer: 0, VC: trace.DenseVC([]uint64{0, 2})})
	w.Flush()
	whole := buf.Len()
	buf.WriteString(`{"i":2,"t":30,"no`) // torn
	r, end, err := live.ResumeFrom(buf.Bytes(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if end != whole || r.Next != 2 || r.LastTime != 20 || r.NextMsg != 7 || r.VC.At(1) != 2 {
		t.Fatalf("resume %+v, end %d (whole %d)", r, end, whole)
	}
	if _, _, err := live.ResumeFrom(buf.Bytes()[:whole], 0); err == nil {
		t.Error("node 0 resumed node 1's trace")
	}
	if r, end, err := live.ResumeFrom(nil, 1); r != nil || end != 0 || err != nil {
		t.Errorf("an empty file: %v %d %v, want a fresh trace", r, end, err)
	}
}

// A node reports the membership its transport knows, a member that joined
// the running cluster included.
func TestNodeMembersFollowTheTransport(t *testing.T) {
	lns := make([]net.Listener, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	secret := []byte("cohort test secret, 32 bytes...!")
	tr, err := transport.NewTCP(transport.Config{Self: 0, Listener: lns[0], Secret: secret,
		Peers: map[proc.ID]string{1: lns[1].Addr().String()}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	n, err := live.NewNode(live.Config{Self: 0, N: 2, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	lns[1].Close()
	if m := n.Members(); len(m) != 2 || m[1] != lns[1].Addr().String() {
		t.Fatalf("members %v", m)
	}
	if err := tr.AddPeer(2, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if m := n.Members(); len(m) != 3 || m[2] != "127.0.0.1:1" {
		t.Errorf("members after a join %v", m)
	}
}

// runMutex runs Ricart–Agrawala on n live nodes, traced (with the
// processes' states if states), every node acquiring at once and leaving
// the section as soon as it enters, until all have left it and every message has
// arrived; it returns each node's trace.
func runMutex(t *testing.T, n int, states bool) []*trace.Trace {
	t.Helper()
	f, _ := registry.Lookup("mutex")
	a, err := f.Algorithm("ricart-agrawala")
	if err != nil {
		t.Fatal(err)
	}
	trs := transports(t, n, false)
	bufs := make([]*bytes.Buffer, n)
	var nodes []*live.Node
	for i := range n {
		bufs[i] = &bytes.Buffer{}
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: n, Transport: trs[i],
			Resolve: func(name string) (proc.Algorithm, bool) { return a, name == "lock" },
			Trace:   bufs[i], TraceFamily: "mutex", TraceAlgo: a.Name, TraceStates: states})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	var services []*live.Service
	exits := make(chan struct{}, n)
	for _, node := range nodes {
		s, err := node.Service("lock", a)
		if err != nil {
			t.Fatal(err)
		}
		s.OnOutput(func(o proc.Output) {
			switch o.Kind() {
			case "enter":
				go s.Input(mutex.Release{})
			case "exit":
				exits <- struct{}{}
			}
		})
		services = append(services, s)
	}
	for _, s := range services {
		if err := s.Input(mutex.Acquire{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-exits:
		case <-deadline:
			t.Fatal("not every node entered and left the critical section")
		}
	}
	for {
		var sent, received int64
		for _, s := range services {
			st := s.Stats()
			sent, received = sent+st.Sent, received+st.Received
		}
		if sent == received {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("sent %d messages, %d arrived", sent, received)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The step that output the last exit may still be under way (its
	// state is recorded as it ends): a Read runs between two steps.
	for _, s := range services {
		if err := s.Read(func(proc.Process) {}); err != nil {
			t.Fatal(err)
		}
	}
	var ts []*trace.Trace
	for i, node := range nodes {
		if err := node.Close(); err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(bufs[i])
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	return ts
}

// With TraceStates a live node records its process's own description of
// its state in the last event of each step, as the simulator's --states
// does: Ricart–Agrawala's HELD in the step that enters the section,
// RELEASED in the step that leaves it, each node's file still in the
// order of its clocks. Without it, no state is recorded.
func TestLiveTraceRecordsStates(t *testing.T) {
	ts := runMutex(t, 3, true)
	for p, tr := range ts {
		var seen []string
		for i, e := range tr.Events {
			if e.Index != i || i > 0 && e.VC.At(p) <= tr.Events[i-1].VC.At(p) {
				t.Fatalf("p%d: event %d (%s) out of order in its file", p, i, e.String())
			}
			if e.State == nil {
				continue
			}
			var d struct{ State string }
			if err := json.Unmarshal(e.State, &d); err != nil || d.State == "" {
				t.Fatalf("p%d: event %d: state %s: %v", p, i, e.State, err)
			}
			seen = append(seen, d.State)
			// The state is the step's last: the next event of the node
			// begins another step (a receipt, a timer or an input).
			if i+1 < len(tr.Events) {
				if k := tr.Events[i+1].Kind; k != trace.Recv && k != trace.Timer && k != trace.Input {
					t.Errorf("p%d: the state at #%d is followed by %s in the same step", p, i, tr.Events[i+1].String())
				}
			}
		}
		enter := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.Output && e.Type == "enter" })
		exit := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.Output && e.Type == "exit" })
		if enter < 0 || exit < 0 {
			t.Fatalf("p%d: no enter or exit in its trace", p)
		}
		stateAt := func(from int) string {
			for _, e := range tr.Events[from:] {
				if e.State != nil {
					var d struct{ State string }
					json.Unmarshal(e.State, &d)
					return d.State
				}
			}
			return ""
		}
		if got := stateAt(enter); got != "HELD" {
			t.Errorf("p%d: the step entering the section describes %q, want HELD (states %v)", p, got, seen)
		}
		if got := stateAt(exit); got != "RELEASED" {
			t.Errorf("p%d: the step leaving the section describes %q, want RELEASED (states %v)", p, got, seen)
		}
	}
	merged, err := live.Merge(ts...)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := check.Run(merged, "ME1", "integrity"); err != nil || !res[0].OK() || !res[1].OK() {
		t.Errorf("the traced run: %v %v", res, err)
	}
	for p, tr := range runMutex(t, 3, false) {
		for _, e := range tr.Events {
			if e.State != nil {
				t.Fatalf("p%d: without TraceStates, %s carries a state", p, e.String())
			}
		}
	}
}
