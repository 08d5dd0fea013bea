package consensus_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var groupChecks = []string{"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness", "group-order"}

func senders(stop time.Duration) *lab.GroupSenders {
	return &lab.GroupSenders{Senders: 3, Groups: 2, Window: 4, Every: 2 * time.Millisecond, Retry: 50 * time.Millisecond, Stop: stop}
}

// retain 64 and snapshots every 256 entries: members that restart or
// fall behind catch up from snapshots as well as from the log.
func newGroups(id proc.ID, n int) proc.Process {
	cfg := consensus.DefaultConfig
	cfg.CompactEvery = 256
	return consensus.NewGroups(id, n, cfg, 64)
}

// TestGroupsUnderFaults runs the group service under the nemesis and
// judges every run: one order per group on every member, no message
// twice, no gaps, and every acknowledged message where its
// acknowledgement says. Liveness: once the faults are over, every
// acknowledged message reaches every member that is up.
func TestGroupsUnderFaults(t *testing.T) {
	t.Parallel() // a long sweep of independent simulated runs: beside the others
	seeds := 100
	if testing.Short() || raceEnabled {
		seeds = 6
	}
	var delivered, acked int
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := 3 + 2*int(seed%2)
		net, faults, clocks := nemesis(n, seed, 2*time.Second, 0.01)
		r := simtest.Run(t, "consensus", sim.Config{Nodes: n, Seed: seed, New: newGroups,
			Network: net, Faults: faults, Clocks: clocks,
			Workload: senders(2800 * time.Millisecond), Deadline: 3500 * time.Millisecond})
		r.Hold(t, groupChecks...)
		if upMajority(r.Sim, n) {
			if err := caughtUp(r.Trace.Events, r.Sim, n); err != nil {
				t.Errorf("seed %d: liveness: %v", seed, err)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d: %s", seed, simtest.Describe(net, faults))
		}
		delivered += r.Count("group-message")
		acked += r.Count("group-sent")
	}
	t.Logf("%d runs: %d deliveries, %d acknowledgements output", seeds, delivered, acked)
}

// caughtUp checks that every server up at the end delivered, since it
// last started, every group's messages up to the highest position
// acknowledged anywhere.
func caughtUp(events []trace.Event, s *sim.Sim, n int) error {
	acked := map[string]uint64{}
	last := make([]map[string]uint64, n)
	for _, e := range events {
		switch {
		case e.Kind == trace.Crash || e.Kind == trace.Recover:
			last[e.Node] = nil
		case e.Kind == trace.Output && e.Type == "group-sent":
			var a consensus.Sent
			if json.Unmarshal(e.Data, &a) == nil {
				acked[a.Group] = max(acked[a.Group], a.Pos)
			}
		case e.Kind == trace.Output && e.Type == "group-message":
			var m consensus.GroupMessage
			if json.Unmarshal(e.Data, &m) == nil {
				if last[e.Node] == nil {
					last[e.Node] = map[string]uint64{}
				}
				last[e.Node][m.Group] = max(last[e.Node][m.Group], m.Pos)
			}
		}
	}
	for id := range proc.ID(n) {
		if !s.Up(id) {
			continue
		}
		for g, p := range acked {
			if last[id][g] < p {
				return fmt.Errorf("p%d delivered group %s up to %d, but %d was acknowledged", id, g, last[id][g], p)
			}
		}
	}
	return nil
}

// careless is a group server that forgets which messages it applied: a
// retried send is delivered twice.
type careless struct{ *consensus.Groups }

func (c careless) Receive(env proc.Env, from proc.ID, m proc.Message) {
	c.Groups.Receive(env, from, m)
	c.ForgetOrigins()
}

func TestGroupOrderCatchesDuplicates(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		net, faults, clocks := nemesis(3, seed, time.Second, 0.01)
		r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: seed, New: func(id proc.ID, n int) proc.Process {
			return careless{newGroups(id, n).(*consensus.Groups)}
		}, Network: net, Faults: faults, Clocks: clocks, Workload: senders(1500 * time.Millisecond), Deadline: 2 * time.Second})
		if v := r.Verdicts(t, "group-order")["group-order"]; !v.OK() {
			t.Logf("seed %d: %s", seed, v)
			return
		}
	}
	t.Error("300 runs of servers without duplicate suppression: no message delivered twice")
}

// FuzzDecodeSends: any entry decodes to messages or an error, never a
// panic; a batch decodes to what was encoded.
func FuzzDecodeSends(f *testing.F) {
	f.Add([]byte("g\x01\x02\x01xbody"), "x", []byte("hello"), uint64(7))
	f.Add([]byte("G\x02"), "", []byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, raw []byte, name string, body []byte, seq uint64) {
		consensus.DecodeSends(raw)
		in := consensus.SendBatch{Sends: []consensus.Send{{Group: name, Origin: 3, Seq: seq, Body: body}, {Group: "g", Origin: 4, Seq: 1}}}
		out, err := consensus.DecodeSends(in.Encode())
		if err != nil || len(out) != 2 || out[0].Group != name || out[0].Seq != seq || string(out[0].Body) != string(body) || out[1].Origin != 4 {
			t.Fatalf("round trip of %+v: %+v, %v", in, out, err)
		}
		one, err := consensus.DecodeSends(in.Sends[0].Encode())
		if err != nil || len(one) != 1 || string(one[0].Body) != string(body) {
			t.Fatalf("round trip of %+v: %+v, %v", in.Sends[0], one, err)
		}
	})
}

// TestLogDigestIsFNV1a: the log's running digest is FNV-1a (64 bits) of
// the previous digest, the data's length and the data — the function
// snapshots written by earlier versions carry, so a restarted server's
// digests go on where they left off.
func TestLogDigestIsFNV1a(t *testing.T) {
	for _, c := range []struct {
		prev uint64
		data []byte
	}{{0, nil}, {0, []byte("x")}, {0xdeadbeef, []byte("hello, log")}, {1 << 63, make([]byte, 300)}} {
		h := fnv.New64a()
		h.Write(binary.LittleEndian.AppendUint64(nil, c.prev))
		h.Write(binary.AppendUvarint(nil, uint64(len(c.data))))
		h.Write(c.data)
		if got, want := consensus.DigestStep(c.prev, 5, c.data), h.Sum64(); got != want {
			t.Errorf("digest after %x and %d bytes: %x, want %x", c.prev, len(c.data), got, want)
		}
	}
}
