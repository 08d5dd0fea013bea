package check_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

type qb struct{ *checktest.Builder }

func (b qb) input(p int32, in proc.Input) int {
	data, _ := json.Marshal(in)
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Peer: -1, Type: in.Kind(), Data: data})
}

func TestQueueDeliveryChecker(t *testing.T) {
	step := time.Duration(checktest.Step)
	get := func(origin, seq uint64) consensus.QueueGet {
		return consensus.QueueGet{Queue: "q", Origin: origin, Seq: seq, Visibility: 10 * step}
	}
	got := func(origin, seq, token uint64, valid time.Duration, ids ...uint64) consensus.QueueGot {
		g := consensus.QueueGot{Queue: "q", Origin: origin, Seq: seq, Token: token, Valid: valid}
		for _, id := range ids {
			g.Messages = append(g.Messages, consensus.QueueMessage{ID: id})
		}
		return g
	}
	put := func(id uint64) consensus.QueuePutDone {
		return consensus.QueuePutDone{Queue: "q", Origin: 9, Seq: id, ID: id}
	}
	cases := []struct {
		name   string
		build  func(b qb) []int
		detail string
	}{
		{"leased, acked, the next leased; a lease that runs out goes to another", func(b qb) []int {
			b.Output(0, put(1))
			b.Output(0, put(2))
			b.input(1, get(1, 1))
			b.Output(0, got(1, 1, 10, 3*step, 1))
			b.Output(1, got(1, 1, 10, 3*step, 1)) // every server outputs it
			b.input(1, consensus.QueueAck{Queue: "q", Origin: 1, Seq: 2, IDs: []uint64{1}})
			b.Output(0, consensus.QueueAcked{Queue: "q", Origin: 1, Seq: 2, Index: 11, IDs: []uint64{1}})
			b.input(1, get(1, 3))
			b.Output(0, got(1, 3, 12, 2*step, 2))
			b.Local(0, trace.Timer)
			b.Local(0, trace.Timer)
			b.input(2, get(2, 1))
			b.Output(0, got(2, 1, 14, 2*step, 2))
			return nil
		}, ""},
		{"two consumers at once", func(b qb) []int {
			b.Output(0, put(1))
			b.input(1, get(1, 1))
			a := b.Output(0, got(1, 1, 10, 5*step, 1))
			b.input(2, get(2, 1))
			c := b.Output(0, got(2, 1, 12, 5*step, 1))
			return []int{a, c}
		}, "message 1 of queue \"q\" is leased (entry 12)"},
		{"leased again after the ack", func(b qb) []int {
			b.Output(0, put(1))
			b.input(1, get(1, 1))
			b.Output(0, got(1, 1, 10, step, 1))
			b.Output(0, consensus.QueueAcked{Queue: "q", Origin: 1, Seq: 2, Index: 11, IDs: []uint64{1}})
			b.Local(0, trace.Timer)
			b.input(2, get(2, 1))
			c := b.Output(0, got(2, 1, 12, step, 1))
			return []int{c}
		}, "acked at entry 11 and leased again at entry 12"},
		{"an acknowledged put skipped", func(b qb) []int {
			a := b.Output(0, put(1))
			b.Output(0, put(2))
			b.input(1, get(1, 1))
			c := b.Output(0, got(1, 1, 10, step, 2))
			return []int{a, c}
		}, "message 1, acknowledged, was skipped"},
		{"first leases out of order", func(b qb) []int {
			b.input(1, get(1, 1))
			a := b.Output(0, got(1, 1, 10, step, 2))
			b.input(1, get(1, 2))
			c := b.Output(0, got(1, 2, 11, step, 1))
			return []int{a, c}
		}, "message 1 was first leased (entry 11) after message 2"},
	}
	for _, c := range cases {
		b := qb{checktest.New(3)}
		want := c.build(b)
		res, err := check.Run(&b.Trace, "queue-delivery")
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, "queue-delivery", res[0], want, c.detail)
	}
}
