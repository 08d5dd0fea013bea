package consensus_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
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
		seeds = 3
	}
	type figures struct{ delivered, acked int }
	bySeed := make([]figures, seeds+1)
	all := simtest.Sweep(t, 1, uint64(seeds), func(t *testing.T, seed uint64) {
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
		d, a := groupOutputs(r.Trace.Events)
		bySeed[seed] = figures{d, a}
	})
	if !all {
		return
	}
	var delivered, acked int
	for _, f := range bySeed[1:] {
		delivered, acked = delivered+f.delivered, acked+f.acked
	}
	t.Logf("%d runs: %d deliveries, %d acknowledgements output", seeds, delivered, acked)
}

// groupOutputs counts the messages delivered and the sends acknowledged
// in a trace.
func groupOutputs(events []trace.Event) (delivered, acked int) {
	for _, e := range events {
		var out struct {
			Messages []json.RawMessage `json:"messages"`
			Sent     []json.RawMessage `json:"sent"`
		}
		if e.Kind == trace.Output && (e.Type == "group-delivered" || e.Type == "group-acked") && json.Unmarshal(e.Data, &out) == nil {
			delivered += len(out.Messages)
			acked += len(out.Sent)
		}
	}
	return delivered, acked
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
		case e.Kind == trace.Output && e.Type == "group-acked":
			var out consensus.Acked
			if json.Unmarshal(e.Data, &out) == nil {
				for _, a := range out.Sent {
					acked[a.Group] = max(acked[a.Group], a.Pos)
				}
			}
		case e.Kind == trace.Output && e.Type == "group-delivered":
			var out consensus.Delivered
			if json.Unmarshal(e.Data, &out) == nil {
				if last[e.Node] == nil {
					last[e.Node] = map[string]uint64{}
				}
				for _, m := range out.Messages {
					last[e.Node][m.Group] = max(last[e.Node][m.Group], m.Pos)
				}
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
// panic; an entry decodes to what was encoded.
func FuzzDecodeSends(f *testing.F) {
	f.Add([]byte("g\x01\x02\x01xbody"), "x", []byte("hello"), uint64(7))
	f.Add([]byte("G\x02"), "", []byte{}, uint64(1))
	f.Add([]byte("V\x02\x01\x03\x01\x01x\x00"), "", []byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, raw []byte, name string, body []byte, seq uint64) {
		consensus.DecodeSends(raw)
		in := []consensus.Send{{Group: name, Origin: 3, Seq: seq, Body: body}, {Group: "g", Origin: 4, Seq: 1}}
		via, out, err := consensus.DecodeSends(consensus.EncodeSends(2, in))
		if err != nil || via != 2 || len(out) != 2 || out[0].Group != name || out[0].Seq != seq || string(out[0].Body) != string(body) || out[1].Origin != 4 {
			t.Fatalf("round trip of %+v: via %d, %+v, %v", in, via, out, err)
		}
		via, one, err := consensus.DecodeSends(consensus.EncodeSends(0, in[:1]))
		if err != nil || via != 0 || len(one) != 1 || string(one[0].Body) != string(body) {
			t.Fatalf("round trip of %+v: via %d, %+v, %v", in[0], via, one, err)
		}
	})
}

// TestOnlyTheServerThatTookASendAcknowledgesIt: every server delivers an
// entry's messages, and only the server named in it acknowledges them
// (its sender waits there); an entry written before servers were named
// is acknowledged by every server, as it was then.
func TestOnlyTheServerThatTookASendAcknowledgesIt(t *testing.T) {
	sends := []consensus.Send{{Group: "g", Origin: 7, Seq: 1, Body: []byte("a")}, {Group: "g", Origin: 7, Seq: 2, Body: []byte("b")}}
	old := []byte("g\x07\x03\x01gc") // origin 7, seq 3, group "g", body "c"
	for self := range proc.ID(3) {
		env := &recorder{store: proc.NewMemStorage(nil), self: self}
		g := consensus.NewGroups(self, 3, consensus.DefaultConfig, 16)
		g.Apply(env, 1, consensus.EncodeSends(1, sends))
		g.Apply(env, 2, old)
		g.Apply(env, 3, consensus.EncodeSends(2, sends[:1])) // a copy, taken by p2
		var delivered, acked []string
		for _, o := range env.outs {
			switch o := o.(type) {
			case consensus.Delivered:
				for _, m := range o.Messages {
					delivered = append(delivered, fmt.Sprintf("%d:%s", m.Pos, m.Body))
				}
			case consensus.Acked:
				for _, a := range o.Sent {
					acked = append(acked, fmt.Sprintf("%d/%d@%d", a.Origin, a.Seq, a.Pos))
				}
			}
		}
		want := map[proc.ID]string{0: "[7/3@3]", 1: "[7/1@1 7/2@2 7/3@3]", 2: "[7/3@3 7/1@0]"}[self]
		if fmt.Sprint(delivered) != "[1:a 2:b 3:c]" || fmt.Sprint(acked) != want {
			t.Errorf("p%d delivered %v and acknowledged %v, want [1:a 2:b 3:c] and %s", self, delivered, acked, want)
		}
	}
}

// TestLogDigestIsFNV1aOfTheCRC: the log's running digest is FNV-1a (64
// bits) of the previous digest, the data's length and the data's CRC-32C:
// servers of one version digest alike, whatever the snapshot they
// started from holds.
func TestLogDigestIsFNV1aOfTheCRC(t *testing.T) {
	for _, c := range []struct {
		prev uint64
		data []byte
	}{{0, nil}, {0, []byte("x")}, {0xdeadbeef, []byte("hello, log")}, {1 << 63, make([]byte, 300)}} {
		h := fnv.New64a()
		h.Write(binary.LittleEndian.AppendUint64(nil, c.prev))
		h.Write(binary.AppendUvarint(nil, uint64(len(c.data))))
		h.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(c.data, crc32.MakeTable(crc32.Castagnoli))))
		if got, want := consensus.DigestStep(c.prev, 5, c.data), h.Sum64(); got != want {
			t.Errorf("digest after %x and %d bytes: %x, want %x", c.prev, len(c.data), got, want)
		}
	}
	if consensus.DigestStep(0, 1, []byte("ab")) == consensus.DigestStep(0, 1, []byte("ba")) {
		t.Error("two entries of one length digest alike")
	}
}
