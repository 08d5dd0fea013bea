package live_test

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
)

// transports makes n connected transports: over TCP on loopback, or
// in-process.
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
	w.Record(&trace.Event{Index: 0, Time: 10, Node: 1, Kind: trace.Start, Peer: -1, VC: []uint64{0, 1}})
	w.Record(&trace.Event{Index: 1, Time: 20, Node: 1, Kind: trace.Send, Msg: 1<<40 | 7, Peer: 0, VC: []uint64{0, 2}})
	w.Flush()
	whole := buf.Len()
	buf.WriteString(`{"i":2,"t":30,"no`) // torn
	r, end, err := live.ResumeFrom(buf.Bytes(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if end != whole || r.Next != 2 || r.LastTime != 20 || r.NextMsg != 7 || r.VC[1] != 2 {
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
