package check_test

import (
	"encoding/json"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// TestOverlayLookup: runs of four nodes where a lookup of a key next to
// p2's nodeId is delivered at its home, elsewhere, after the home
// crashed, never, or not yet; and a live cluster's, whose trace records
// no starts (its nodes were running when it began) and whose hops are
// "dht-route" messages.
func TestOverlayLookup(t *testing.T) {
	key := overlay.NodeID(2)
	key.Lo++ // p2 is the home of key among p0..p3
	if h := overlay.Home(key, []proc.ID{0, 1, 2, 3}); h != 2 {
		t.Fatalf("home of %s is %v, want p2", key, h)
	}
	without2 := overlay.Home(key, []proc.ID{0, 1, 3})
	start := func() *checktest.Builder {
		b := checktest.New(4)
		for p := range int32(4) {
			b.Local(p, trace.Start)
		}
		return b
	}
	lookup := func(b *checktest.Builder, at int32) int {
		data, _ := json.Marshal(overlay.Lookup{Key: key})
		return b.Add(trace.Event{Node: at, Kind: trace.Input, Peer: -1, Type: "lookup", Data: data})
	}
	for _, c := range []struct {
		name  string
		build func(b *checktest.Builder)
		want  check.Status
		live  bool
	}{
		{"delivered at the home", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Recv(b.Send(0, 2, "route"))
			b.Output(2, overlay.Delivered{Key: key, Hops: 1})
		}, check.OK, false},
		{"delivered elsewhere", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Recv(b.Send(0, 1, "route"))
			b.Output(1, overlay.Delivered{Key: key, Hops: 1})
		}, check.Violated, false},
		{"the home crashed: the next closest", func(b *checktest.Builder) {
			b.Local(2, trace.Crash)
			lookup(b, 0)
			b.Output(int32(without2), overlay.Delivered{Key: key})
		}, check.OK, false},
		{"never delivered, nothing in flight", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Recv(b.Send(0, 3, "route"))
		}, check.Violated, false},
		{"not delivered yet: a message in flight", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Send(0, 3, "route")
		}, check.Unknown, false},
		{"delivered without a lookup", func(b *checktest.Builder) {
			b.Output(2, overlay.Delivered{Key: key})
		}, check.Violated, false},
		{"live: delivered at the home", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Recv(b.Send(0, 2, "dht-route"))
			b.Output(2, overlay.Delivered{Key: key, Hops: 1})
		}, check.OK, true},
		{"live: delivered elsewhere", func(b *checktest.Builder) {
			lookup(b, 0)
			b.Recv(b.Send(0, 1, "dht-route"))
			b.Output(1, overlay.Delivered{Key: key, Hops: 1})
		}, check.Violated, true},
		{"live: the home crashed: the next closest", func(b *checktest.Builder) {
			b.Local(2, trace.Crash)
			lookup(b, 0)
			b.Output(int32(without2), overlay.Delivered{Key: key})
		}, check.OK, true},
	} {
		b := start()
		if c.live {
			b = checktest.New(4)
			for p := range int32(4) { // the nodes were running: each has an event before the run's
				b.Local(p, trace.Timer)
			}
		}
		c.build(b)
		rs, err := check.Run(&b.Trace, "overlay-lookup")
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].Status != c.want {
			t.Errorf("%s: %s, want %s", c.name, rs[0], c.want)
		}
	}
}
