package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/trace"
)

// oldMessage and oldSent are the outputs of earlier versions: one per
// message and acknowledgement.
type oldMessage consensus.GroupMessage

func (oldMessage) Kind() string { return "group-message" }

type oldSent consensus.Sent

func (oldSent) Kind() string { return "group-sent" }

func TestGroupOrderChecker(t *testing.T) {
	msg := func(pos, seq uint64, body string) consensus.GroupMessage {
		return consensus.GroupMessage{Group: "g", Pos: pos, Origin: 7, Seq: seq, Body: []byte(body)}
	}
	delivered := func(ms ...consensus.GroupMessage) consensus.Delivered {
		return consensus.Delivered{Messages: ms}
	}
	acked := func(seq, pos uint64) consensus.Acked {
		return consensus.Acked{Sent: []consensus.Sent{{Group: "g", Origin: 7, Seq: seq, Pos: pos}}}
	}
	cases := []struct {
		name   string
		build  func(b *checktest.Builder) []int
		detail string
	}{
		{"one order, acknowledged where delivered", func(b *checktest.Builder) []int {
			b.Output(0, delivered(msg(1, 1, "a")))
			b.Output(0, acked(1, 1))
			b.Output(1, delivered(msg(1, 1, "a"), msg(2, 2, "b")))
			b.Output(0, delivered(msg(2, 2, "b")))
			b.Local(1, trace.Crash)
			b.Local(1, trace.Recover)
			b.Output(1, delivered(msg(2, 2, "b"))) // a restarted member starts where it can
			return nil
		}, ""},
		{"two members disagree on a position", func(b *checktest.Builder) []int {
			a := b.Output(0, delivered(msg(1, 1, "a")))
			c := b.Output(1, delivered(msg(1, 2, "b")))
			return []int{a, c}
		}, "position 1: p1 delivered 7/2, where p0 delivered 7/1"},
		{"a message at two positions", func(b *checktest.Builder) []int {
			a := b.Output(0, delivered(msg(1, 1, "a")))
			c := b.Output(0, delivered(msg(2, 1, "a")))
			return []int{a, c}
		}, "7/1 was delivered at positions 1 and 2"},
		{"a message at two positions of one entry", func(b *checktest.Builder) []int {
			a := b.Output(0, delivered(msg(1, 1, "a"), msg(2, 1, "a")))
			return []int{a}
		}, "7/1 was delivered at positions 1 and 2"},
		{"a gap", func(b *checktest.Builder) []int {
			b.Output(0, delivered(msg(1, 1, "a")))
			c := b.Output(0, delivered(msg(3, 3, "c")))
			return []int{c}
		}, "p0 delivered position 3 after 1"},
		{"a gap inside an entry", func(b *checktest.Builder) []int {
			c := b.Output(0, delivered(msg(1, 1, "a"), msg(3, 3, "c")))
			return []int{c}
		}, "p0 delivered position 3 after 1"},
		{"an acknowledgement of another position", func(b *checktest.Builder) []int {
			a := b.Output(0, delivered(msg(1, 1, "a")))
			c := b.Output(0, acked(2, 1))
			return []int{a, c}
		}, "7/2 was acknowledged at position 1, where 7/1 was delivered"},
		{"an earlier version's trace, one output a message", func(b *checktest.Builder) []int {
			a := b.Output(0, oldMessage(msg(1, 1, "a")))
			b.Output(0, oldSent{Group: "g", Origin: 7, Seq: 1, Pos: 1})
			c := b.Output(1, oldMessage(msg(1, 2, "b")))
			return []int{a, c}
		}, "position 1: p1 delivered 7/2, where p0 delivered 7/1"},
	}
	for _, c := range cases {
		b := checktest.New(3)
		want := c.build(b)
		res, err := check.Run(&b.Trace, "group-order")
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, "group-order", res[0], want, c.detail)
	}
}
