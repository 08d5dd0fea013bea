package check_test

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// mcb builds multicast traces: "sent" and "deliver" outputs, by name.
type mcb struct{ *checktest.Builder }

func newMC(n int) mcb { return mcb{checktest.New(n)} }

var all4 = []proc.ID{0, 1, 2, 3}

// sent outputs p's multicast number seq to group all (members 0..3).
func (b mcb) sent(p int32, seq uint64) int { return b.sentTo(p, seq, "all", all4, "") }

func (b mcb) sentTo(p int32, seq uint64, group string, members []proc.ID, body string) int {
	return b.Output(p, multicast.Sent{Origin: proc.ID(p), Seq: seq, Group: group, Members: members, Body: body})
}

// deliver outputs q's delivery of origin's number seq in group all.
func (b mcb) deliver(q, origin int32, seq uint64) int { return b.deliverIn(q, origin, seq, "all", "") }

func (b mcb) deliverIn(q, origin int32, seq uint64, group, body string) int {
	return b.Output(q, multicast.Delivered{Origin: proc.ID(origin), Seq: seq, Group: group, Body: body})
}

// everyone delivers origin's seq at p0..p3, in that order.
func (b mcb) everyone(origin int32, seq uint64) {
	for q := int32(0); q < 4; q++ {
		b.deliver(q, origin, seq)
	}
}

func mcFixtures(build func(b mcb) []int) func() (*trace.Trace, []int) {
	return func() (*trace.Trace, []int) {
		b := newMC(4)
		want := build(b)
		return &b.Trace, want
	}
}

func TestMulticastIntegrity(t *testing.T) {
	runFixtures(t, "mc-integrity", []fixture{
		{"each member delivers once", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.everyone(0, 1)
			return nil
		}), ""},
		{"never multicast", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			d := b.deliver(2, 0, 2)
			return []int{d}
		}), "p2 delivered p0#2, which had not been multicast"},
		{"delivered before it was multicast", mcFixtures(func(b mcb) []int {
			d := b.deliver(2, 0, 1)
			b.sent(0, 1)
			return []int{d}
		}), "p2 delivered p0#1, which had not been multicast"},
		{"twice", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			d1 := b.deliver(1, 0, 1)
			d2 := b.deliver(1, 0, 1)
			return []int{d1, d2}
		}), "p1 delivered p0#1 twice"},
		{"not a member", mcFixtures(func(b mcb) []int {
			s := b.sentTo(0, 1, "g1", []proc.ID{0, 1}, "")
			d := b.deliverIn(3, 0, 1, "g1", "")
			return []int{s, d}
		}), "p3 delivered p0#1/g1 but is not a member of g1"},
		{"another body", mcFixtures(func(b mcb) []int {
			s := b.sentTo(0, 1, "all", all4, "deposit 100")
			d := b.deliverIn(1, 0, 1, "all", "deposit 1000")
			return []int{s, d}
		}), `p1 delivered p0#1 with body "deposit 1000"; it was multicast with "deposit 100"`},
		{"one identity for two messages", mcFixtures(func(b mcb) []int {
			s1 := b.sent(0, 1)
			s2 := b.sent(0, 1)
			return []int{s1, s2}
		}), "p0#1 was multicast twice"},
	})
}

func TestMulticastValidityAndAgreement(t *testing.T) {
	runFixtures(t, "mc-validity", []fixture{
		{"every correct member delivers", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.everyone(0, 1)
			return nil
		}), ""},
		{"a member never delivers", mcFixtures(func(b mcb) []int {
			s := b.sent(1, 1)
			b.deliver(0, 1, 1)
			b.deliver(1, 1, 1)
			last := b.Local(2, trace.Timer)
			b.deliver(3, 1, 1)
			return []int{s, last}
		}), "p2 never delivered p1#1, multicast at #0 by p1, which did not crash"},
		{"the multicaster crashed: no obligation", mcFixtures(func(b mcb) []int {
			b.sent(1, 1)
			b.deliver(1, 1, 1)
			b.Local(1, trace.Crash)
			return nil
		}), ""},
		{"a crashed member need not deliver", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.Local(3, trace.Crash)
			for q := int32(0); q < 3; q++ {
				b.deliver(q, 0, 1)
			}
			return nil
		}), ""},
		{"a crashed and recovered member is not correct", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.Local(3, trace.Crash)
			b.Local(3, trace.Recover)
			for q := int32(0); q < 3; q++ {
				b.deliver(q, 0, 1)
			}
			return nil
		}), ""},
		{"an outsider's message to an open group", mcFixtures(func(b mcb) []int {
			s := b.sentTo(3, 1, "g2", []proc.ID{1, 2}, "")
			b.deliverIn(1, 3, 1, "g2", "")
			last := b.Local(2, trace.Timer)
			return []int{s, last}
		}), "p2 never delivered p3#1/g2"},
	})
	runFixtures(t, "mc-agreement", []fixture{
		{"the sender crashed mid-multicast", mcFixtures(func(b mcb) []int {
			s := b.sent(0, 1)
			b.deliver(0, 0, 1)
			d := b.deliver(1, 0, 1)
			b.Local(0, trace.Crash)
			b.deliver(2, 0, 1)
			last := b.Local(3, trace.Timer)
			return []int{s, d, last}
		}), "p3 never delivered p0#1, which the correct p1 delivered at #2"},
		{"only the crashed sender delivered", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.deliver(0, 0, 1)
			b.Local(0, trace.Crash)
			return nil
		}), ""},
		{"nobody delivered", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			return nil
		}), ""},
	})
}

// A member still waiting with messages in flight to it may yet deliver:
// the verdict is unknown, not a violation.
func TestMulticastLivenessWithMessagesInFlight(t *testing.T) {
	b := newMC(4)
	s := b.sent(0, 1)
	b.deliver(0, 0, 1)
	b.Recv(b.Send(0, 1, "data"))
	b.deliver(1, 0, 1)
	b.Recv(b.Send(0, 2, "data"))
	b.deliver(2, 0, 1)
	b.Send(0, 3, "data") // still travelling when the run ends
	for _, name := range []string{"mc-validity", "mc-agreement"} {
		res, err := check.Run(&b.Trace, name)
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if r.Status != check.Unknown || !strings.Contains(r.Detail, "p3 had not delivered p0#1") || !strings.Contains(r.Detail, "1 message(s) still in flight") || len(r.Events) != 1 || r.Events[0] != s {
			t.Errorf("%s: %s %v, want unknown citing #%d", name, r, r.Events, s)
		}
	}
}

func TestFIFOOrder(t *testing.T) {
	runFixtures(t, "fifo-order", []fixture{
		{"in order", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(0, 2)
			b.everyone(0, 1)
			b.everyone(0, 2)
			return nil
		}), ""},
		{"out of order", mcFixtures(func(b mcb) []int {
			s1 := b.sent(0, 1)
			s2 := b.sent(0, 2)
			b.deliver(1, 0, 1)
			d2 := b.deliver(2, 0, 2)
			d1 := b.deliver(2, 0, 1)
			b.deliver(1, 0, 2)
			return []int{s1, s2, d2, d1}
		}), "p2 delivered p0#2 (#3) before p0#1 (#4), which p0 multicast first"},
		{"skipped", mcFixtures(func(b mcb) []int {
			s1 := b.sent(0, 1)
			s2 := b.sent(0, 2)
			d2 := b.deliver(3, 0, 2)
			return []int{s1, s2, d2}
		}), "p3 delivered p0#2 (#2) without ever delivering p0#1"},
		{"stopping early is not disorder", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(0, 2)
			b.deliver(3, 0, 1)
			return nil
		}), ""},
		{"different groups are not ordered", mcFixtures(func(b mcb) []int {
			b.sentTo(0, 1, "all", all4, "")
			b.sentTo(0, 1, "g1", []proc.ID{0, 1, 2}, "")
			b.deliverIn(1, 0, 1, "g1", "")
			b.deliverIn(1, 0, 1, "all", "")
			return nil
		}), ""},
	})
}

func TestCausalOrder(t *testing.T) {
	runFixtures(t, "causal-order", []fixture{
		{"a reply after its question", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.deliver(1, 0, 1)
			b.sent(1, 1)
			b.deliver(2, 0, 1)
			b.deliver(2, 1, 1)
			return nil
		}), ""},
		{"a reply before its question", mcFixtures(func(b mcb) []int {
			s0 := b.sent(0, 1)
			d := b.deliver(1, 0, 1)
			s1 := b.sent(1, 1)
			r := b.deliver(2, 1, 1)
			q := b.deliver(2, 0, 1)
			return []int{s0, d, s1, r, q}
		}), "p2 delivered p1#1 (#3) before p0#1 (#4), though multicast(p0#1) → multicast(p1#1): p1 delivered p0#1 (#1) before multicasting p1#1"},
		{"through a third message", mcFixtures(func(b mcb) []int {
			// p0#1 → p1#1 → p2#1 (p1 delivered p0#1; p2 delivered both);
			// p3 delivers p2#1 first.
			s0 := b.sent(0, 1)
			b.deliver(1, 0, 1)
			b.sent(1, 1)
			d0 := b.deliver(2, 0, 1)
			b.deliver(2, 1, 1)
			s2 := b.sent(2, 1)
			d := b.deliver(3, 2, 1)
			return []int{s0, d0, s2, d}
		}), "p3 delivered p2#1 (#6) without ever delivering p0#1, though multicast(p0#1) → multicast(p2#1): p2 delivered p0#1 (#3) before multicasting p2#1 (and 1 more)"},
		{"the sender's own order", mcFixtures(func(b mcb) []int {
			s1 := b.sent(0, 1)
			s2 := b.sent(0, 2)
			d2 := b.deliver(1, 0, 2)
			d1 := b.deliver(1, 0, 1)
			return []int{s1, s2, d2, d1}
		}), "p0 multicast both"},
		{"a receipt held back is not a delivery", mcFixtures(func(b mcb) []int {
			// p1 receives p0's message but holds it back (no delivery)
			// before it multicasts: the two are concurrent.
			b.sent(0, 1)
			b.Recv(b.Send(0, 1, "data"))
			b.sent(1, 1)
			b.deliver(2, 1, 1)
			b.deliver(2, 0, 1)
			return nil
		}), ""},
		{"other groups do not count", mcFixtures(func(b mcb) []int {
			b.sentTo(0, 1, "g1", []proc.ID{0, 1, 2}, "")
			b.deliverIn(1, 0, 1, "g1", "")
			b.sent(1, 1)
			b.deliver(2, 1, 1)
			b.deliverIn(2, 0, 1, "g1", "")
			return nil
		}), ""},
	})
}

func TestTotalOrder(t *testing.T) {
	runFixtures(t, "total-order", []fixture{
		{"the same order everywhere", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(1, 1)
			for q := int32(0); q < 4; q++ {
				b.deliver(q, 1, 1)
				b.deliver(q, 0, 1)
			}
			return nil
		}), ""},
		{"opposite orders", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(1, 1)
			a1 := b.deliver(0, 0, 1)
			a2 := b.deliver(0, 1, 1)
			c2 := b.deliver(2, 1, 1)
			c1 := b.deliver(2, 0, 1)
			return []int{a1, a2, c2, c1}
		}), "p2 delivered p1#1 (#4) before p0#1 (#5), while p0 delivered p0#1 (#2) before p1#1 (#3)"},
		{"a skip", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(1, 1)
			a1 := b.deliver(0, 0, 1)
			a2 := b.deliver(0, 1, 1)
			c2 := b.deliver(3, 1, 1)
			return []int{a1, a2, c2}
		}), "p3 delivered p1#1 (#4) without ever delivering p0#1"},
		{"a prefix (ordering does not imply reliability)", mcFixtures(func(b mcb) []int {
			b.sent(0, 1)
			b.sent(1, 1)
			b.deliver(0, 0, 1)
			b.deliver(0, 1, 1)
			b.deliver(3, 0, 1)
			return nil
		}), ""},
		{"two groups in opposite orders", mcFixtures(func(b mcb) []int {
			b.sentTo(0, 1, "g1", []proc.ID{0, 1, 2}, "")
			b.sentTo(3, 1, "g2", []proc.ID{1, 2, 3}, "")
			b.deliverIn(1, 0, 1, "g1", "")
			b.deliverIn(1, 3, 1, "g2", "")
			b.deliverIn(2, 3, 1, "g2", "")
			b.deliverIn(2, 0, 1, "g1", "")
			return nil
		}), ""},
	})
}

// Malformed traces give unknown, never a panic.
func TestMulticastCheckersOnMalformedTraces(t *testing.T) {
	b := newMC(2)
	b.Add(trace.Event{Node: 0, Kind: trace.Output, Peer: -1, Type: "sent", Data: []byte(`{"seq":"x"}`)})
	for _, name := range []string{"mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"} {
		res, err := check.Run(&b.Trace, name)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Status != check.Unknown || !strings.Contains(res[0].Detail, "event 0") {
			t.Errorf("%s: %s, want unknown naming event 0", name, res[0])
		}
	}
}
