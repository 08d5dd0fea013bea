package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/trace"
)

type rb struct{ *checktest.Builder }

func (b rb) leader(p int32, term, last uint64) int {
	return b.Output(p, consensus.Elected{Term: term, LastIndex: last})
}
func (b rb) applied(p int32, index, digest uint64) int {
	return b.Output(p, consensus.Applied{Index: index, Digest: digest})
}

func TestRaftCheckers(t *testing.T) {
	cases := []struct {
		name    string
		checker string
		build   func(b rb) []int
		detail  string
	}{
		{"one leader per term", "raft-election-safety", func(b rb) []int {
			b.leader(0, 1, 0)
			b.leader(1, 2, 3)
			b.leader(0, 3, 5)
			return nil
		}, ""},
		{"two leaders of one term", "raft-election-safety", func(b rb) []int {
			a := b.leader(0, 2, 0)
			c := b.leader(2, 2, 0)
			return []int{a, c}
		}, "p0 and p2 both became leader of term 2"},
		{"a leader that forgot its term, elected again in it", "raft-election-safety", func(b rb) []int {
			a := b.leader(1, 1, 0)
			b.Local(1, trace.Crash)
			b.Local(1, trace.Recover)
			c := b.leader(1, 1, 0)
			return []int{a, c}
		}, "p1 and p1 both became leader of term 1"},
		{"the same entries everywhere, re-applied after a restart", "raft-state-machine-safety", func(b rb) []int {
			for p := int32(0); p < 3; p++ {
				b.applied(p, 1, 11)
				b.applied(p, 2, 22)
			}
			b.Local(2, trace.Crash)
			b.Local(2, trace.Recover)
			b.applied(2, 1, 11)
			b.applied(2, 2, 22)
			b.applied(2, 3, 33)
			return nil
		}, ""},
		{"different entries at one index", "raft-state-machine-safety", func(b rb) []int {
			b.applied(0, 1, 11)
			a := b.applied(0, 2, 22)
			b.applied(1, 1, 11)
			c := b.applied(1, 2, 99)
			return []int{a, c}
		}, "p0 and p1 applied different entries at index 2"},
		{"a gap in what one server applied", "raft-state-machine-safety", func(b rb) []int {
			b.applied(0, 1, 11)
			g := b.applied(0, 3, 33)
			return []int{g}
		}, "p0 applied entry 3 after entry 1"},
		{"a leader holds what earlier terms committed", "raft-leader-completeness", func(b rb) []int {
			b.leader(0, 1, 0)
			b.applied(1, 1, 11)
			b.applied(1, 2, 22)
			b.leader(2, 2, 2)
			return nil
		}, ""},
		{"a stale leader of an earlier term need not hold later commits", "raft-leader-completeness", func(b rb) []int {
			b.leader(0, 2, 0)
			b.applied(0, 1, 11) // committed in term 2
			b.leader(1, 1, 0)   // elected in term 1, announced late (it was paused)
			return nil
		}, ""},
		{"a follower that installs a snapshot goes on after it", "raft-state-machine-safety", func(b rb) []int {
			b.applied(0, 1, 11)
			b.applied(0, 2, 22)
			b.applied(0, 3, 33)
			b.applied(1, 1, 11)
			b.Output(1, consensus.Restored{Index: 3, Digest: 33})
			b.applied(1, 4, 44)
			b.applied(0, 4, 44)
			return nil
		}, ""},
		{"a snapshot of other entries", "raft-state-machine-safety", func(b rb) []int {
			a := b.applied(0, 1, 11)
			b.applied(0, 2, 22)
			c := b.Output(1, consensus.Restored{Index: 1, Digest: 99})
			return []int{a, c}
		}, "p0 and p1 applied different entries at index 1"},
		{"a snapshot that goes back", "raft-state-machine-safety", func(b rb) []int {
			b.applied(0, 1, 11)
			b.applied(0, 2, 22)
			c := b.Output(0, consensus.Restored{Index: 1, Digest: 11})
			return []int{c}
		}, "p0 restored a snapshot up to entry 1 after applying entry 2"},
		{"a leader missing a committed entry", "raft-leader-completeness", func(b rb) []int {
			b.leader(0, 1, 0)
			b.applied(0, 1, 11)
			a := b.applied(0, 2, 22)
			c := b.leader(2, 2, 1)
			return []int{a, c}
		}, "p2 became leader of term 2 with a log ending at 1, but entry 2 had been committed"},
	}
	for _, c := range cases {
		b := rb{checktest.New(3)}
		want := c.build(b)
		res, err := check.Run(&b.Trace, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, c.checker, res[0], want, c.detail)
	}
}
