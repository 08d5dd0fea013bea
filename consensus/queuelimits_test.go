package consensus_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
)

// outEnv is an Env that keeps the outputs, for applying entries by hand.
type outEnv struct {
	proc.Env
	out []proc.Output
}

func (e *outEnv) Output(o proc.Output) { e.out = append(e.out, o) }
func (e *outEnv) Self() proc.ID        { return 0 }

func op(o consensus.QueueOp) []byte { b, _ := json.Marshal(o); return b }

// The state limit: puts that would take the messages past it are refused
// as full, whatever queue they go to, and a snapshot of the queues held
// at the limit — with every field of every message at its widest and
// the duplicate table past its bound — stays under SnapshotBound.
func TestQueueStateBoundsTheSnapshot(t *testing.T) {
	body := bytes.Repeat([]byte{0xff}, 1000)
	per := consensus.MessageCost(len(body))
	lim := consensus.QueueLimits{Messages: 1 << 20, Bytes: 1 << 40, Queues: 8, State: 50 * per}
	q := consensus.NewQueues(0, 1, consensus.DefaultConfig, lim)
	env := &outEnv{}
	index := uint64(0)
	apply := func(o consensus.QueueOp) proc.Output {
		index++
		env.out = env.out[:0]
		q.Apply(env, index, op(o))
		if len(env.out) == 0 {
			return nil
		}
		return env.out[len(env.out)-1]
	}
	name := func(i int) string { return strings.Repeat(string(rune('a'+i%8)), 128) }
	for i := range 50 {
		if o, ok := apply(consensus.QueueOp{Op: "put", Queue: name(i), Origin: math.MaxUint64, Seq: uint64(i + 1), Body: body}).(consensus.QueuePutDone); !ok || o.ID == 0 {
			t.Fatalf("put %d under the limit: %+v", i, o)
		}
	}
	o := apply(consensus.QueueOp{Op: "put", Queue: name(3), Origin: math.MaxUint64, Seq: 51, Body: []byte("x")})
	if r, ok := o.(consensus.QueueRefused); !ok || !r.Full || !strings.Contains(r.Reason, "snapshot") {
		t.Fatalf("a put past the state limit: %+v, want refused as full, naming the snapshot", o)
	}
	// A transaction that acks as much as it puts fits.
	got := apply(consensus.QueueOp{Op: "get", Queue: name(0), Origin: math.MaxUint64 - 1, Seq: 1, Count: 1, Vis: math.MaxInt64})
	m := got.(consensus.QueueGot).Messages[0]
	o = apply(consensus.QueueOp{Op: "tx", Origin: math.MaxUint64 - 1, Seq: 2, Acks: []consensus.QueueRef{{Queue: name(0), ID: m.ID}},
		Puts: []consensus.QueuePut{{Queue: name(1), Body: body}}})
	if _, ok := o.(consensus.QueueTxDone); !ok {
		t.Fatalf("a transaction that frees what it takes: %+v", o)
	}
	// Lease every message, with the widest numbers, and fill the
	// duplicate table with gaps from many origins.
	apply(consensus.QueueOp{Op: "get", Queue: name(1), Origin: math.MaxUint64 - 2, Seq: math.MaxUint64 / 2, Count: 1000, Vis: math.MaxInt64})
	for org := range uint64(consensus.MaxOrigins + 10) {
		for s := range uint64(20) {
			apply(consensus.QueueOp{Op: "ack", Queue: "none", Origin: math.MaxUint64 - 100 - org, Seq: math.MaxUint64 - 2*s})
		}
	}
	if counted, held := q.Above(); counted != held || held > consensus.MaxAbove || held < consensus.MaxAbove-20 {
		t.Fatalf("the duplicate table holds %d seqs above Done (counted %d): want the bound, %d", held, counted, consensus.MaxAbove)
	}
	snap := q.Snapshot()
	if bound := lim.SnapshotBound(); int64(len(snap)) > bound {
		t.Fatalf("a snapshot of %d bytes, over the bound %d", len(snap), bound)
	}
	t.Logf("snapshot %d bytes, bound %d", len(snap), lim.SnapshotBound())
}

func TestQueueLimitsValidateNamesTheLimit(t *testing.T) {
	for _, c := range []struct {
		l    consensus.QueueLimits
		want string
	}{
		{consensus.QueueLimits{Messages: -1}, "messages -1"},
		{consensus.QueueLimits{Bytes: -5}, "bytes -5"},
		{consensus.QueueLimits{Queues: -2}, "queues -2"},
		{consensus.QueueLimits{State: 64 << 20}, "state 67108864"},
		{consensus.QueueLimits{Queues: 1 << 20}, "queues 1048576"},
	} {
		err := c.l.Validate(64 << 20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c.l, err, c.want)
		}
	}
	if err := consensus.DefaultQueueLimits.Validate(64 << 20); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if err := (consensus.QueueLimits{}).Validate(64 << 20); err != nil {
		t.Errorf("zero (the defaults): %v", err)
	}
}

// A client's put refused because its queue was full leaves its number
// free: sent again with the same origin and seq once there is room, it
// is put — not answered as a duplicate of a put that never happened (a
// relay would then drop the message). A put applied stays a duplicate; a
// node's (not a ClientOrigin) refused put stays refused.
func TestRefusedPutLeavesItsNumberFree(t *testing.T) {
	q := consensus.NewQueues(0, 1, consensus.DefaultConfig, consensus.QueueLimits{Messages: 1})
	env := &outEnv{}
	index := uint64(0)
	apply := func(o consensus.QueueOp) proc.Output {
		index++
		env.out = env.out[:0]
		q.Apply(env, index, op(o))
		return env.out[len(env.out)-1]
	}
	first := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 9 | consensus.ClientOrigin, Seq: 1, Body: []byte("a")}).(consensus.QueuePutDone)
	if r, ok := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 9 | consensus.ClientOrigin, Seq: 2, Body: []byte("b")}).(consensus.QueueRefused); !ok || !r.Full {
		t.Fatal("a put on a full queue was not refused")
	}
	apply(consensus.QueueOp{Op: "ack", Queue: "q", Origin: 10, Seq: 1, IDs: []uint64{first.ID}})
	if d, ok := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 9 | consensus.ClientOrigin, Seq: 2, Body: []byte("b")}).(consensus.QueuePutDone); !ok || d.ID == 0 {
		t.Fatalf("the refused put sent again once there is room: %+v, want it put", d)
	}
	if d, ok := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 9 | consensus.ClientOrigin, Seq: 2, Body: []byte("b")}).(consensus.QueuePutDone); !ok || d.ID != 0 {
		t.Fatalf("the put sent a third time: %+v, want a duplicate (id 0)", d)
	}
	// A node's put refused: sent again, a duplicate (id 0), not put.
	apply(consensus.QueueOp{Op: "ack", Queue: "q", Origin: 10, Seq: 2, IDs: []uint64{first.ID + 1}})
	apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 12, Seq: 1, Body: []byte("fill")})
	if _, ok := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 12, Seq: 2, Body: []byte("d")}).(consensus.QueueRefused); !ok {
		t.Fatal("a put on a full queue was not refused")
	}
	apply(consensus.QueueOp{Op: "ack", Queue: "q", Origin: 10, Seq: 3, IDs: []uint64{first.ID + 2}})
	if d, ok := apply(consensus.QueueOp{Op: "put", Queue: "q", Origin: 12, Seq: 2, Body: []byte("d")}).(consensus.QueuePutDone); !ok || d.ID != 0 {
		t.Fatalf("a node's refused put sent again: %+v, want a duplicate (id 0)", d)
	}
	// A transaction refused (its message is gone) leaves its number free too.
	tx := consensus.QueueOp{Op: "tx", Origin: 11 | consensus.ClientOrigin, Seq: 1, Acks: []consensus.QueueRef{{Queue: "q", ID: first.ID}}}
	if _, ok := apply(tx).(consensus.QueueRefused); !ok {
		t.Fatal("a transaction acking an acked message was not refused")
	}
	tx.Acks = nil
	tx.Puts = []consensus.QueuePut{{Queue: "other", Body: []byte("c")}}
	if _, ok := apply(tx).(consensus.QueueTxDone); !ok {
		t.Fatal("a transaction under the refused one's number was not applied")
	}
}
