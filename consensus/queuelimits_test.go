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
