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

// lb builds lock-service traces; one event is 1 ms (checktest.Step).
type lb struct{ *checktest.Builder }

func (b lb) input(p int32, in proc.Input) int {
	data, _ := json.Marshal(in)
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Peer: -1, Type: in.Kind(), Data: data})
}

// open opens session s for a client at p, valid for valid ms from now.
func (b lb) open(p int32, s uint64, valid int) {
	b.input(p, consensus.OpenSession{Tag: s, TTL: time.Second})
	b.Output(p, consensus.Opened{Tag: s, Session: s, TTL: time.Second, Valid: time.Duration(valid) * time.Millisecond})
}

func (b lb) grant(p int32, lock string, s, token uint64) int {
	return b.Output(p, consensus.Granted{Lock: lock, Session: s, Token: token})
}

func TestLockLeasesChecker(t *testing.T) {
	cases := []struct {
		name   string
		build  func(b lb) []int
		detail string
	}{
		{"a handoff after the release", func(b lb) []int {
			b.open(0, 1, 100)
			b.open(1, 2, 100)
			b.grant(0, "x", 1, 5)
			b.input(0, consensus.Release{Session: 1, Seq: 2, Lock: "x"})
			b.grant(1, "x", 2, 7)
			b.grant(0, "x", 2, 7) // the same grant, output by another server
			return nil
		}, ""},
		{"a grant after the holder's reckoning ran out", func(b lb) []int {
			b.open(0, 1, 3) // valid until the 4th ms
			b.open(1, 2, 100)
			b.grant(0, "x", 1, 5)
			for range 3 {
				b.Local(2, trace.Timer)
			}
			b.grant(1, "x", 2, 9)
			return nil
		}, ""},
		{"a grant while the holder still counts on its session", func(b lb) []int {
			b.open(0, 1, 100)
			b.open(1, 2, 100)
			a := b.grant(0, "x", 1, 5)
			c := b.grant(1, "x", 2, 9)
			r := b.input(0, consensus.Release{Session: 1, Seq: 2, Lock: "x"})
			return []int{a, c, r}
		}, `lock "x": session 2 (token 9) is granted it at 6ms while session 1 (token 5) may still hold it: its client lets it go at 7ms`},
		{"a renewal keeps the holder's reckoning alive", func(b lb) []int {
			b.open(0, 1, 8) // valid until the 9th ms, then renewed
			b.open(1, 2, 100)
			a := b.grant(0, "x", 1, 5)
			b.input(0, consensus.KeepAlive{Session: 1, Seq: 1})
			b.Output(0, consensus.KeptAlive{Session: 1, Seq: 1, OK: true, Valid: 50 * time.Millisecond})
			for range 6 {
				b.Local(2, trace.Timer)
			}
			c := b.grant(1, "x", 2, 9) // at 14 ms: the renewal counts until 56 ms
			b.Local(2, trace.Timer)
			return []int{a, c}
		}, "may still hold it"},
		{"a token that goes back", func(b lb) []int {
			b.open(0, 1, 100)
			b.open(1, 2, 100)
			a := b.grant(0, "x", 1, 9)
			b.input(0, consensus.Release{Session: 1, Seq: 2, Lock: "x"})
			c := b.grant(1, "x", 2, 7)
			return []int{a, c}
		}, `lock "x": session 2 was granted token 7 after session 1 had token 9`},
	}
	for _, c := range cases {
		b := lb{checktest.New(3)}
		want := c.build(b)
		res, err := check.Run(&b.Trace, "lock-leases")
		if err != nil {
			t.Fatal(err)
		}
		expectVerdict(t, c.name, "lock-leases", res[0], want, c.detail)
	}
}
