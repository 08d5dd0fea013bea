package check_test

import (
	"encoding/json"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

type found struct {
	ID      uint32                  `json:"id"`
	Name    string                  `json:"name"`
	K       int                     `json:"k"`
	Holders []check.DiscoveryHolder `json:"holders"`
}

func (found) Kind() string { return "found" }

func input(b *checktest.Builder, node int32, typ, name string) int {
	data, _ := json.Marshal(map[string]string{"name": name})
	return b.Add(trace.Event{Node: node, Kind: trace.Input, Peer: -1, Type: typ, Data: data})
}

func holders(ids ...int32) []check.DiscoveryHolder {
	var hs []check.DiscoveryHolder
	for _, id := range ids {
		hs = append(hs, check.DiscoveryHolder{Node: id})
	}
	return hs
}

func TestDiscoveryFindable(t *testing.T) {
	runFixtures(t, "discovery-findable", []fixture{
		{name: "every live holder, and only the last find judged", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 0, "advertise", "x")
			input(b, 1, "advertise", "x")
			b.Output(2, found{Name: "x", Holders: holders(0)}) // too early: not the last
			b.Output(2, found{Name: "x", Holders: holders(1, 0)})
			b.Output(0, found{Name: "x", K: 1, Holders: holders(0)})
			return &b.Trace, nil
		}},
		{name: "a crashed holder is not owed", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 0, "advertise", "x")
			input(b, 1, "advertise", "x")
			b.Local(1, trace.Crash)
			b.Output(2, found{Name: "x", Holders: holders(0)})
			return &b.Trace, nil
		}},
		{name: "a live holder missing", detail: "p2's last find of x answered 1 holders of 2 live (k=0); not found: p1", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 0, "advertise", "x")
			ad := input(b, 1, "advertise", "x")
			f := b.Output(2, found{Name: "x", Holders: holders(0)})
			return &b.Trace, []int{ad, f}
		}},
		{name: "fewer than k", detail: "answered 1 holders of 2 live (k=2)", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			a0 := input(b, 0, "advertise", "x")
			input(b, 1, "advertise", "x")
			f := b.Output(2, found{Name: "x", K: 2, Holders: holders(1)})
			return &b.Trace, []int{a0, f}
		}},
	})
}

func TestDiscoveryFresh(t *testing.T) {
	runFixtures(t, "discovery-fresh", []fixture{
		{name: "only live holders", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 0, "advertise", "x")
			input(b, 1, "advertise", "x")
			input(b, 1, "withdraw", "x")
			b.Output(2, found{Name: "x", Holders: holders(0)})
			return &b.Trace, nil
		}},
		{name: "a withdrawn holder", detail: "p2's last find of x names p1, which does not hold it then", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 1, "advertise", "x")
			input(b, 1, "withdraw", "x")
			f := b.Output(2, found{Name: "x", Holders: holders(1)})
			return &b.Trace, []int{f}
		}},
		{name: "a holder back from a crash that did not advertise again", detail: "names p1", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			input(b, 1, "advertise", "x")
			b.Local(1, trace.Crash)
			b.Local(1, trace.Recover)
			f := b.Output(2, found{Name: "x", Holders: holders(1)})
			return &b.Trace, []int{f}
		}},
	})
}
