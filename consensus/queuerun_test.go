package consensus_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/consensus"
)

// A stream's runs of puts: each number applied once (a copy answered
// with id 0), in order after the run before (one that overtakes it is
// refused whole), and a full queue applies a prefix whose refused puts
// keep their numbers free for the resend.
func TestQueuePutRuns(t *testing.T) {
	q := consensus.NewQueues(0, 1, consensus.DefaultConfig, consensus.QueueLimits{Messages: 6})
	env := &outEnv{}
	index := uint64(0)
	const o = consensus.ClientOrigin | 7
	run := func(seq, after uint64, n int) consensus.QueuePutRunDone {
		t.Helper()
		var bodies [][]byte
		for i := range n {
			bodies = append(bodies, fmt.Appendf(nil, "m%d", seq+uint64(i)))
		}
		index++
		env.out = env.out[:0]
		q.Apply(env, index, op(consensus.QueueOp{Op: "run", Queue: "jobs", Origin: o, Seq: seq, After: after, Bodies: bodies}))
		done, ok := env.out[len(env.out)-1].(consensus.QueuePutRunDone)
		// The answer names its run whole, first number, the put it
		// follows and how many: another run may share its first number.
		if !ok || done.Origin != o || done.Seq != seq || done.After != after || done.Puts != n {
			t.Fatalf("run %d: the last output %+v, want its QueuePutRunDone", seq, env.out[len(env.out)-1])
		}
		return done
	}
	if d := run(1, 0, 3); !slices.Equal(d.IDs, []uint64{1, 2, 3}) || d.Reason != "" {
		t.Fatalf("run 1-3: %+v", d)
	}
	if d := run(6, 5, 2); len(d.IDs) != 0 || d.Reason == "" || !d.Early {
		t.Fatalf("run 6-7 after 5, not applied: %+v, want refused", d)
	}
	// Resent from 2, with 4 and 5 new: 2 and 3 are copies.
	if d := run(2, 0, 4); !slices.Equal(d.IDs, []uint64{0, 0, 4, 5}) || d.Reason != "" {
		t.Fatalf("run 2-5 resent: %+v", d)
	}
	// The queue holds 6 at most: 6 goes in, 7 and 8 are refused.
	if d := run(6, 5, 3); !slices.Equal(d.IDs, []uint64{6}) || !d.Full {
		t.Fatalf("run 6-8 on a queue with room for one: %+v", d)
	}
	if d := run(9, 8, 1); len(d.IDs) != 0 || d.Full || !d.Early {
		t.Fatalf("run 9 after the refused 8: %+v, want refused, not as full", d)
	}
	got := 0
	for _, s := range q.Stats() {
		got += s.Ready
	}
	if got != 6 {
		t.Fatalf("the queue holds %d messages, want 6", got)
	}
	// Room again: 7 is judged afresh.
	index++
	q.Apply(env, index, op(consensus.QueueOp{Op: "get", Queue: "jobs", Origin: 99, Seq: 1, Count: 1, Vis: 1e9}))
	index++
	q.Apply(env, index, op(consensus.QueueOp{Op: "ack", Queue: "jobs", Origin: 99, Seq: 2, IDs: []uint64{1}}))
	if d := run(7, 6, 1); !slices.Equal(d.IDs, []uint64{7}) {
		t.Fatalf("run 7 resent once there is room: %+v", d)
	}
}
