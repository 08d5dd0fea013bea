package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

type el struct{ *checktest.Builder }

func (b el) elect(p int32) int {
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Type: "elect", Peer: -1})
}
func (b el) campaign(p int32) int {
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Type: "campaign", Peer: -1})
}
func (b el) resign(p int32) int {
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Type: "resign", Peer: -1})
}
func (b el) elected(p int32, leader proc.ID) int {
	return b.Output(p, election.Elected{Leader: leader})
}

func TestElectionCheckers(t *testing.T) {
	cases := []struct {
		name    string
		checker string
		build   func(b el) []int
		detail  string
	}{
		{"everyone agrees on the largest live id", "E1", func(b el) []int {
			b.Local(3, trace.Crash)
			b.elect(0)
			for p := int32(0); p < 3; p++ {
				b.elected(p, 2)
			}
			return nil
		}, ""},
		{"a leader that crashed", "E1", func(b el) []int {
			b.elect(0)
			first := b.elected(0, 3)
			for p := int32(1); p < 4; p++ {
				b.elected(p, 3)
			}
			c := b.Local(3, trace.Crash)
			return []int{first, c} // the earliest finding: p0's, with p3's crash
		}, "p0 ended with elected = p3, which crashed"},
		{"the bully algorithm's unreliable timeout: p3 slow, not crashed", "E1", func(b el) []int {
			// p2 thinks p3 crashed and announces itself; p3 announces too.
			// p2 receives p3's message after sending its own (elected2 =
			// p3); p1 receives p3's first, then p2's (elected1 = p2).
			b.elect(1)
			b.elected(2, 2)
			b.elected(3, 3)
			b.elected(2, 3)
			b.elected(1, 3)
			e := b.elected(1, 2)
			b.elected(0, 3)
			return []int{e}
		}, "p1 ended with elected = p2; the largest live id is p3"},
		{"⊥ is allowed by E1", "E1", func(b el) []int {
			b.elect(0)
			b.elected(0, 3)
			b.elected(3, 3)
			return nil
		}, ""},
		{"candidates by choice: the largest candidate leads, not the largest id", "E1", func(b el) []int {
			b.campaign(0)
			b.campaign(1)
			for p := int32(0); p < 3; p++ {
				b.elected(p, 1)
			}
			return nil
		}, ""},
		{"candidates by choice: a lower candidate leads while a higher one stands", "E1", func(b el) []int {
			b.campaign(1)
			b.campaign(2)
			e := b.elected(0, 1)
			b.elected(1, 1)
			return []int{e}
		}, "p0 ended with elected = p1; the largest live candidate is p2"},
		{"candidates by choice: the leader resigned, nobody stands", "E2", func(b el) []int {
			b.campaign(1)
			for p := int32(0); p < 3; p++ {
				b.elected(p, 1)
			}
			b.resign(1)
			for p := int32(0); p < 3; p++ {
				b.elected(p, proc.None)
			}
			return nil
		}, ""},
		{"candidates by choice: one resigned, another stands and nobody leads", "E2", func(b el) []int {
			b.campaign(1)
			b.campaign(2)
			b.elected(0, 2)
			b.resign(2)
			last := b.elected(0, proc.None)
			b.Local(1, trace.Timer)
			b.Local(2, trace.Timer)
			return []int{last}
		}, "p0 is live but its elected is still ⊥"},
		{"everyone decided", "E2", func(b el) []int {
			b.elect(0)
			for p := int32(0); p < 4; p++ {
				b.elected(p, 3)
			}
			return nil
		}, ""},
		{"a live process never decided", "E2", func(b el) []int {
			b.elect(0)
			b.elected(0, 3)
			b.elected(1, 3)
			last := b.Local(2, trace.Timer)
			b.elected(3, 3)
			return []int{last}
		}, "p2 is live but its elected is still ⊥"},
		{"a crashed process need not decide", "E2", func(b el) []int {
			b.elect(0)
			b.Local(2, trace.Crash)
			b.elected(0, 3)
			b.elected(1, 3)
			b.elected(3, 3)
			return nil
		}, ""},
		{"a recovered process must decide again", "E2", func(b el) []int {
			b.elect(0)
			for p := int32(0); p < 4; p++ {
				b.elected(p, 3)
			}
			b.Local(1, trace.Crash)
			r := b.Local(1, trace.Recover)
			return []int{r}
		}, "p1 is live but its elected is still ⊥"},
		{"no election, nothing to decide", "E2", func(b el) []int {
			b.Local(0, trace.Timer)
			return nil
		}, ""},
		{"churn: a process that never joined need not decide", "E2", func(b el) []int {
			for p := int32(0); p < 3; p++ {
				b.Local(p, trace.Start)
			}
			b.elect(0)
			b.Local(2, trace.Leave)
			b.elected(0, 1)
			b.elected(1, 1)
			return nil
		}, ""},
		{"churn: the largest id is that of the present processes", "E1", func(b el) []int {
			for p := int32(0); p < 3; p++ {
				b.Local(p, trace.Start)
			}
			b.elect(0)
			b.Local(2, trace.Leave)
			b.elected(0, 1)
			b.elected(1, 1)
			return nil
		}, ""},
		{"churn: a process that joined must decide", "E2", func(b el) []int {
			for p := int32(0); p < 3; p++ {
				b.Local(p, trace.Start)
			}
			b.elect(0)
			for p := int32(0); p < 3; p++ {
				b.elected(p, 2)
			}
			j := b.Local(3, trace.Join)
			return []int{j}
		}, "p3 is live but its elected is still ⊥"},
		{"churn: a leader that left", "E1", func(b el) []int {
			for p := int32(0); p < 3; p++ {
				b.Local(p, trace.Start)
			}
			b.elect(0)
			first := b.elected(0, 2)
			b.elected(1, 2)
			b.elected(2, 2)
			l := b.Local(2, trace.Leave)
			return []int{first, l}
		}, "p0 ended with elected = p2, which left"},
		{"a live process with no event at all never decided", "E2", func(b el) []int {
			b.elect(0)
			for p := int32(0); p < 3; p++ {
				b.elected(p, 3)
			}
			return []int{} // p3 has no event to cite: reported all the same
		}, "p3 is live but its elected is still ⊥"},
		{"two leaders", "agreement", func(b el) []int {
			b.elect(0)
			a := b.elected(0, 3)
			c := b.elected(1, 2)
			return []int{a, c}
		}, "p0 believes in p3, p1 in p2"},
		{"one leader", "agreement", func(b el) []int {
			b.elect(0)
			b.elected(0, 2)
			b.elected(1, 2)
			return nil
		}, ""},
	}
	for _, c := range cases {
		b := el{checktest.New(4)}
		want := c.build(b)
		res, err := check.Run(&b.Trace, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, c.checker, res[0], want, c.detail)
	}
}
