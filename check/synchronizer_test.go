package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/synchronizer"
)

type sy struct{ *checktest.Builder }

func (b sy) round(p int32, r int) int { return b.Output(p, synchronizer.Round{Round: r}) }

// send is a message of round r, labelled as the synchronizers label it.
func (b sy) send(from, to int32, r int) int {
	i := b.Send(from, to, "leader")
	m := election.FloodLeader{Round: r, Leader: proc.ID(from)}
	b.Trace.Events[i].Label = synchronizer.Payload[election.FloodLeader]{Round: r, M: m}.String()
	return i
}

func (b sy) recv(send int) int {
	i := b.Recv(send)
	b.Trace.Events[i].Label = b.Trace.Events[send].Label
	return i
}

func TestSynchronizerCheckers(t *testing.T) {
	cases := []struct {
		name    string
		checker string
		build   func(b sy) []int
		detail  string
	}{
		{"every message of round 1 arrives in round 1, or early", "sync-safe", func(b sy) []int {
			b.round(0, 1)
			s := b.send(0, 1, 1)
			early := b.send(0, 2, 1)
			b.recv(early) // p2 has not begun round 1 yet: kept for round 2
			b.round(1, 1)
			b.round(2, 1)
			b.recv(s)
			b.round(0, 2)
			b.round(1, 2)
			b.round(2, 2)
			return nil
		}, ""},
		{"a message of round 1 after its receiver began round 2", "sync-safe", func(b sy) []int {
			b.round(0, 1)
			b.round(1, 1)
			s := b.send(0, 1, 1)
			r2 := b.round(1, 2)
			late := b.recv(s)
			return []int{s, r2, late}
		}, "p1 received a message of round 1 from p0 in round 2"},
		{"rounds one after another, all to the same end", "sync-rounds", func(b sy) []int {
			for r := 1; r <= 3; r++ {
				for p := int32(0); p < 4; p++ {
					b.round(p, r)
				}
			}
			return nil
		}, ""},
		{"a round skipped", "sync-rounds", func(b sy) []int {
			b.round(0, 1)
			one := b.round(1, 1)
			three := b.round(1, 3)
			return []int{one, three}
		}, "p1 began round 3 after round 1"},
		{"a process left behind", "sync-rounds", func(b sy) []int {
			var behind int
			for p := int32(0); p < 4; p++ {
				if i := b.round(p, 1); p == 2 {
					behind = i
				}
			}
			ahead := b.round(0, 2)
			b.round(1, 2)
			b.round(3, 2)
			return []int{behind, ahead}
		}, "p2 ended in round 1, p0 in round 2"},
	}
	for _, c := range cases {
		b := sy{checktest.New(4)}
		want := c.build(b)
		res, err := check.Run(&b.Trace, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, c.checker, res[0], want, c.detail)
	}
}
