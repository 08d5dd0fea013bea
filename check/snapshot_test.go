package check_test

import (
	"bytes"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/snapshot"
	"github.com/cohort-go/cohort/trace"
)

// TestSnapshotCheckers: two accounts of 100 and one snapshot S = p0#1,
// with $10 from p0 to p1 in flight across the cut or not, recorded or
// not; cuts that are consistent, or that a message crosses backwards; a
// receipt that prompted the cut, or that the application handled first;
// a snapshot that never finished.
func TestSnapshotCheckers(t *testing.T) {
	S := snapshot.ID{Initiator: 0, Seq: 1}
	ten := snapshot.Message{Kind: "money", Label: "$10 #1", Body: snapshot.Money{Amount: 10, N: 1}}
	pay := func(b *checktest.Builder, from, to int32, label string) int {
		i := b.Send(from, to, "money")
		b.Trace.Events[i].Label = label
		return i
	}
	cut := func(b *checktest.Builder, p int32, balance int64) int {
		return b.Output(p, snapshot.Cut{Snap: S, State: balance})
	}
	recorded := func(b *checktest.Builder, p, from int32, msgs ...snapshot.Message) int {
		return b.Output(p, snapshot.Recorded{Snap: S, Channels: []snapshot.Channel{{From: proc.ID(from), Messages: msgs}}})
	}
	// inFlight: p0 pays $10, records (90), p1 records (100), then gets
	// the $10 — in flight across the cut — and p0's marker.
	inFlight := func(b *checktest.Builder, p1Records ...snapshot.Message) {
		s := pay(b, 0, 1, "$10 #1")
		cut(b, 0, 90)
		m01 := b.Send(0, 1, "marker")
		cut(b, 1, 100)
		m10 := b.Send(1, 0, "marker")
		b.Recv(s)
		b.Recv(m01)
		recorded(b, 1, 0, p1Records...)
		b.Recv(m10)
		recorded(b, 0, 1)
	}
	const (
		ok, bad, unknown = check.OK, check.Violated, check.Unknown
	)
	for _, c := range []struct {
		name                     string
		build                    func(b *checktest.Builder)
		consistent, chans, money check.Status
	}{
		{"the money in flight recorded", func(b *checktest.Builder) { inFlight(b, ten) }, ok, ok, ok},
		{"the channel's state forgotten", func(b *checktest.Builder) { inFlight(b) }, ok, bad, bad},
		{"a message recorded twice", func(b *checktest.Builder) { inFlight(b, ten, ten) }, ok, bad, bad},
		{"nothing in flight", func(b *checktest.Builder) {
			b.Recv(pay(b, 0, 1, "$10 #1"))
			cut(b, 0, 90)
			m01 := b.Send(0, 1, "marker")
			b.Recv(m01) // the marker prompts p1's cut: its receipt is outside
			cut(b, 1, 110)
			m10 := b.Send(1, 0, "marker")
			recorded(b, 1, 0)
			b.Recv(m10)
			recorded(b, 0, 1)
		}, ok, ok, ok},
		{"a red message received inside the cut", func(b *checktest.Builder) {
			cut(b, 0, 100)
			m01 := b.Send(0, 1, "marker")
			s := pay(b, 0, 1, "$10 #1") // sent outside p0's cut
			b.Recv(s)                   // ... and received inside p1's
			b.Recv(m01)
			cut(b, 1, 110)
			m10 := b.Send(1, 0, "marker")
			recorded(b, 1, 0)
			b.Recv(m10)
			recorded(b, 0, 1)
		}, bad, ok, bad},
		{"a red message that prompts the cut (Lai–Yang)", func(b *checktest.Builder) {
			cut(b, 0, 100)
			s := pay(b, 0, 1, "$10 #1") // red: sent outside p0's cut
			b.Recv(s)
			cut(b, 1, 100) // recorded before the $10 is handed on
			m10 := b.Send(1, 0, "marker")
			m01 := b.Send(0, 1, "marker")
			b.Recv(m01)
			recorded(b, 1, 0)
			b.Recv(m10)
			recorded(b, 0, 1)
		}, ok, ok, ok},
		{"a red message handled before the cut", func(b *checktest.Builder) {
			cut(b, 0, 100)
			s := pay(b, 0, 1, "$10 #1")
			b.Recv(s)
			b.Output(1, proc.Stamp{C: 1}) // the application acts on it ...
			cut(b, 1, 110)                // ... then p1 records
			m10 := b.Send(1, 0, "marker")
			m01 := b.Send(0, 1, "marker")
			b.Recv(m01)
			recorded(b, 1, 0)
			b.Recv(m10)
			recorded(b, 0, 1)
		}, bad, ok, bad},
		{"p1 never records, nothing in flight", func(b *checktest.Builder) {
			cut(b, 0, 100)
			b.Recv(b.Send(0, 1, "marker"))
		}, bad, bad, ok},
		{"p1 has not recorded yet, a marker in flight", func(b *checktest.Builder) {
			cut(b, 0, 100)
			b.Send(0, 1, "marker")
		}, unknown, unknown, ok},
		{"balances that do not add up", func(b *checktest.Builder) {
			cut(b, 0, 100)
			m01 := b.Send(0, 1, "marker")
			cut(b, 1, 95)
			m10 := b.Send(1, 0, "marker")
			b.Recv(m01)
			recorded(b, 1, 0)
			b.Recv(m10)
			recorded(b, 0, 1)
		}, ok, ok, bad},
	} {
		b := checktest.New(2)
		for p := range int32(2) {
			b.Local(p, trace.Start)
			b.Output(p, snapshot.Opened{Balance: 100})
		}
		c.build(b)
		rs, err := check.Run(&b.Trace, "snapshot-consistent", "snapshot-channels", "bank-conserved")
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []check.Status{c.consistent, c.chans, c.money} {
			if rs[i].Status != want {
				t.Errorf("%s: %s, want %s\n%s", c.name, rs[i], want, rs[i].Counterexample(&b.Trace))
			}
		}
	}
}

// FuzzSnapshotCheckers: whatever trace Read accepts — cut and recorded
// outputs with any data, any number of nodes in the header — the
// snapshot checkers judge it without panicking, in time and memory
// bounded by the trace's events. Run the fuzzer with
//
//	go test -run='^$' -fuzz=FuzzSnapshotCheckers ./check
func FuzzSnapshotCheckers(f *testing.F) {
	S := snapshot.ID{Initiator: 0, Seq: 1}
	b := checktest.New(2)
	b.Output(0, snapshot.Opened{Balance: 100})
	s := b.Send(0, 1, "money")
	b.Output(0, snapshot.Cut{Snap: S, State: int64(90)})
	m := b.Send(0, 1, "marker")
	b.Output(1, snapshot.Cut{Snap: S, State: int64(100)})
	b.Recv(s)
	b.Recv(m)
	b.Output(1, snapshot.Recorded{Snap: S, Channels: []snapshot.Channel{{From: 0, Messages: []snapshot.Message{{Kind: "money", Body: snapshot.Money{Amount: 10}}}}}})
	var seed bytes.Buffer
	if err := trace.Write(&seed, &b.Trace); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add(bytes.Replace(seed.Bytes(), []byte(`"nodes":2`), []byte(`"nodes":2147483647`), 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := trace.Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		rs, err := check.Run(tr, "snapshot-consistent", "snapshot-channels", "bank-conserved")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Status != check.OK && r.Status != check.Violated && r.Status != check.Unknown {
				t.Fatalf("%s: status %d", r.Name, r.Status)
			}
			for _, i := range r.Events {
				if i < 0 || i >= len(tr.Events) {
					t.Fatalf("%s cites event %d of %d", r.Name, i, len(tr.Events))
				}
			}
		}
	})
}
