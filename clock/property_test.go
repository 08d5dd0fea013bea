package clock_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// vectorGen draws vectors of 0 to 6 small entries, so that equal and
// ordered pairs are common.
var vectorGen = rapid.Custom(func(t *rapid.T) logical.Vector {
	return logical.Vector(rapid.SliceOfN(rapid.Uint64Range(0, 4), 0, 6).Draw(t, "entries"))
})

// leq reports whether a[k] <= b[k] for every k, missing entries being 0.
func leq(a, b logical.Vector) bool {
	for k := range max(len(a), len(b)) {
		if entry(a, k) > entry(b, k) {
			return false
		}
	}
	return true
}

func entry(v logical.Vector, k int) uint64 {
	if k < len(v) {
		return v[k]
	}
	return 0
}

func TestCompareProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := vectorGen.Draw(t, "a"), vectorGen.Draw(t, "b")
		ab, ba := logical.Compare(a, b), logical.Compare(b, a)
		// The definition: a < b iff a <= b entry-wise and a != b.
		want := logical.Concurrent
		switch le, ge := leq(a, b), leq(b, a); {
		case le && ge:
			want = logical.Equal
		case le:
			want = logical.Before
		case ge:
			want = logical.After
		}
		if ab != want {
			t.Fatalf("Compare(%v, %v) = %v, want %v", a, b, ab, want)
		}
		// Antisymmetry: a < b iff b > a; Equal and Concurrent are symmetric.
		if (ab == logical.Before) != (ba == logical.After) || (ab == logical.After) != (ba == logical.Before) {
			t.Fatalf("Compare(%v, %v) = %v but Compare(b, a) = %v", a, b, ab, ba)
		}
		if (ab == logical.Equal) != (ba == logical.Equal) || (ab == logical.Concurrent) != (ba == logical.Concurrent) {
			t.Fatalf("Compare(%v, %v) = %v but Compare(b, a) = %v", a, b, ab, ba)
		}
		if logical.Compare(a, a) != logical.Equal {
			t.Fatalf("Compare(%v, itself) = %v", a, logical.Compare(a, a))
		}
	})
}

func TestMergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := vectorGen.Draw(t, "a"), vectorGen.Draw(t, "b")
		aIn, bIn := a.Copy(), b.Copy()

		ab := a.Copy()
		ab.Merge(b)
		ba := b.Copy()
		ba.Merge(a)
		if !slices.Equal(ab, ba) {
			t.Fatalf("not commutative: %v∨%v = %v, %v∨%v = %v", a, b, ab, b, a, ba)
		}
		if len(ab) != max(len(a), len(b)) {
			t.Fatalf("%v∨%v = %v has the wrong length", a, b, ab)
		}
		aa := a.Copy()
		aa.Merge(a)
		if !slices.Equal(aa, a) {
			t.Fatalf("not idempotent: %v∨%v = %v", a, a, aa)
		}
		// An upper bound of both, and the least: each entry is one of theirs.
		if !leq(a, ab) || !leq(b, ab) {
			t.Fatalf("%v∨%v = %v is not an upper bound", a, b, ab)
		}
		for k := range ab {
			if ab[k] != entry(a, k) && ab[k] != entry(b, k) {
				t.Fatalf("%v∨%v = %v: entry %d is neither's", a, b, ab, k)
			}
		}
		if !slices.Equal(a, aIn) || !slices.Equal(b, bIn) {
			t.Fatalf("merging into a copy changed an operand")
		}
	})
}

func TestScalarProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.Uint64Range(1, 1000).Draw(t, "m")
		draw := func(label string) logical.Timestamp {
			return logical.Timestamp{
				C: rapid.Uint64Range(0, 1<<40).Draw(t, label+".C"),
				P: proc.ID(rapid.Uint64Range(0, m-1).Draw(t, label+".P")),
			}
		}
		x, y := draw("x"), draw("y")
		sx, err := logical.CheckedScalar(x.C, x.P, m)
		if err != nil || sx != logical.Scalar(x.C, x.P, m) {
			t.Fatalf("CheckedScalar(%v, %d) = %d, %v; Scalar = %d", x, m, sx, err, logical.Scalar(x.C, x.P, m))
		}
		sy := logical.Scalar(y.C, y.P, m)
		if got, want := cmp(sx, sy), x.Compare(y); got != want {
			t.Fatalf("scalars %d, %d compare %d; pairs %v, %v compare %d", sx, sy, got, x, y, want)
		}
		c, p, err := logical.SplitScalar(sx, m)
		if err != nil || (logical.Timestamp{C: c, P: p}) != x {
			t.Fatalf("SplitScalar(%d, %d) = %d, %v, %v; want %v", sx, m, c, p, err, x)
		}
	})
}

func cmp(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return +1
	}
	return 0
}

// TestClockConditions runs random message passing among 2 to 5 processes,
// stamps every event with both clocks following the rules of
// Tanenbaum & van Steen §6.2, and checks the stamps against happens-before
// computed from the run's graph: the strong clock condition for vectors,
// the clock condition for Lamport clocks, and that the (C, pid) pairs order
// all events totally.
func TestClockConditions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "n")
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		// Lamport clocks may step by more than 1, and receive either by
		// Recv or, like a physical clock, by Tick then Witness.
		witness := rapid.Bool().Draw(t, "witness")

		type event struct {
			p    proc.ID
			vc   logical.Vector
			lc   uint64
			pred []int // events with an edge to this one
		}
		type message struct {
			to   proc.ID
			send int // index of the send event
			vc   logical.Vector
			lc   uint64
		}
		var (
			events   []event
			inFlight []message
			vcs      = make([]logical.Vector, n)
			lcs      = make([]logical.Lamport, n)
			last     = make([]int, n) // last event at each process, or -1
		)
		for i := range n {
			vcs[i] = logical.New(n)
			lcs[i] = logical.NewLamport(0, rapid.Uint64Range(1, 4).Draw(t, "rate"))
			last[i] = -1
		}
		record := func(p proc.ID, from int) int {
			e := event{p: p, vc: vcs[p].Copy(), lc: lcs[p].Now()}
			if last[p] >= 0 {
				e.pred = append(e.pred, last[p])
			}
			if from >= 0 {
				e.pred = append(e.pred, from)
			}
			events = append(events, e)
			last[p] = len(events) - 1
			return last[p]
		}

		for range steps {
			action := rapid.IntRange(0, 2).Draw(t, "action")
			if action == 2 && len(inFlight) == 0 {
				action = 0
			}
			switch action {
			case 0: // local event: rule 1
				p := proc.ID(rapid.IntRange(0, n-1).Draw(t, "p"))
				vcs[p].Increment(p)
				lcs[p].Tick()
				record(p, -1)
			case 1: // send: rules 1 and 2
				p := proc.ID(rapid.IntRange(0, n-1).Draw(t, "p"))
				q := proc.ID(rapid.IntRange(0, n-1).Draw(t, "to"))
				vcs[p].Increment(p)
				m := message{to: q, vc: vcs[p].Copy(), lc: lcs[p].Send()}
				m.send = record(p, -1)
				inFlight = append(inFlight, m)
			case 2: // receive any message in flight: rule 3
				i := rapid.IntRange(0, len(inFlight)-1).Draw(t, "msg")
				m := inFlight[i]
				inFlight = slices.Delete(inFlight, i, i+1)
				p := m.to
				vcs[p].Merge(m.vc)
				vcs[p].Increment(p)
				if witness {
					lcs[p].Tick()
					lcs[p].Witness(m.lc)
				} else {
					lcs[p].Recv(m.lc)
				}
				record(p, m.send)
			}
		}

		// Happens-before by reachability. Every edge goes from an earlier
		// event to a later one, so one pass in order closes the relation.
		hb := make([][]bool, len(events)) // hb[a][b]: a → b
		for b, e := range events {
			hb[b] = make([]bool, len(events))
			for _, x := range e.pred {
				hb[x][b] = true
				for a := range x {
					hb[a][b] = hb[a][b] || hb[a][x]
				}
			}
		}

		for a, ea := range events {
			// Entry j of V(a) counts the events at j that a knows of:
			// those that happened before a, and a itself.
			for j := range n {
				var known uint64
				for x, ex := range events {
					if ex.p == proc.ID(j) && (x == a || hb[x][a]) {
						known++
					}
				}
				if ea.vc[j] != known {
					t.Fatalf("event %d at %v: V = %v, but %d events at p%d happened before it", a, ea.p, ea.vc, known, j)
				}
			}
			for b, eb := range events {
				if a == b {
					continue
				}
				// Strong clock condition: a → b ⇔ V(a) < V(b).
				if got := ea.vc.Before(eb.vc); got != hb[a][b] {
					t.Fatalf("events %d, %d: %v < %v is %v, but a → b is %v", a, b, ea.vc, eb.vc, got, hb[a][b])
				}
				concurrent := !hb[a][b] && !hb[b][a]
				if got := ea.vc.Concurrent(eb.vc); got != concurrent {
					t.Fatalf("events %d, %d: Concurrent(%v, %v) = %v, want %v", a, b, ea.vc, eb.vc, got, concurrent)
				}
				// Clock condition: a → b ⇒ C(a) < C(b).
				ta, tb := logical.Timestamp{C: ea.lc, P: ea.p}, logical.Timestamp{C: eb.lc, P: eb.p}
				if hb[a][b] && !(ea.lc < eb.lc) {
					t.Fatalf("events %d → %d but C = %d, %d", a, b, ea.lc, eb.lc)
				}
				// Ties broken by process id: a total order of distinct events.
				if ta.Compare(tb) == 0 {
					t.Fatalf("events %d and %d share the timestamp %v", a, b, ta)
				}
			}
		}
	})
}

// TestCausalDelivery runs random causal multicast among 2 to 5 processes,
// holding back each message until Deliverable admits it, and checks that
// every process delivers a message only after all messages that causally
// precede it, and that once the network is empty every message has been
// delivered everywhere.
func TestCausalDelivery(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "n")
		steps := rapid.IntRange(1, 40).Draw(t, "steps")

		type message struct {
			id     int
			sender proc.ID
			vc     logical.Vector
		}
		type arrival struct {
			to proc.ID
			m  message
		}
		var (
			deps     [][]bool // deps[id][x]: message x causally precedes message id
			inFlight []arrival
			vcs      = make([]logical.Vector, n) // entry k: messages of k delivered
			pending  = make([][]message, n)
			has      = make([][]bool, n) // has[p][id]: p sent or delivered id
			sent     = 0
		)
		for p := range n {
			vcs[p] = logical.New(n)
		}
		grow := func() {
			for p := range n {
				has[p] = append(has[p], false)
			}
		}
		deliverReady := func(p proc.ID) {
			for progress := true; progress; {
				progress = false
				for i, m := range pending[p] {
					if !logical.Deliverable(vcs[p], m.vc, m.sender) {
						continue
					}
					for x, before := range deps[m.id] {
						if before && !has[p][x] {
							t.Fatalf("%v delivers message %d from %v before message %d, which precedes it", p, m.id, m.sender, x)
						}
					}
					if has[p][m.id] {
						t.Fatalf("%v delivers message %d twice", p, m.id)
					}
					has[p][m.id] = true
					vcs[p].Merge(m.vc)
					pending[p] = slices.Delete(pending[p], i, i+1)
					progress = true
					break
				}
			}
		}
		receive := func(i int) {
			a := inFlight[i]
			inFlight = slices.Delete(inFlight, i, i+1)
			pending[a.to] = append(pending[a.to], a.m)
			deliverReady(a.to)
		}

		for range steps {
			if len(inFlight) > 0 && rapid.Bool().Draw(t, "receive") {
				receive(rapid.IntRange(0, len(inFlight)-1).Draw(t, "arrival"))
				continue
			}
			p := proc.ID(rapid.IntRange(0, n-1).Draw(t, "sender"))
			grow()
			vcs[p].Increment(p)
			m := message{id: sent, sender: p, vc: vcs[p].Copy()}
			sent++
			// Everything p has sent or delivered precedes m.
			deps = append(deps, slices.Clone(has[p]))
			has[p][m.id] = true
			for q := range n {
				if proc.ID(q) != p {
					inFlight = append(inFlight, arrival{to: proc.ID(q), m: m})
				}
			}
		}
		for len(inFlight) > 0 {
			receive(rapid.IntRange(0, len(inFlight)-1).Draw(t, "arrival"))
		}
		for p := range n {
			if len(pending[p]) > 0 {
				t.Fatalf("p%d never delivers %d messages; its vector is %v", p, len(pending[p]), vcs[p])
			}
			for id := range sent {
				if !has[p][id] {
					t.Fatalf("p%d never sees message %d", p, id)
				}
			}
		}
	})
}
