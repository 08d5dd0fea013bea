package logical_test

import (
	"errors"
	"math"
	"testing"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

func TestLamportRules(t *testing.T) {
	var l logical.Lamport // zero value: reads 0, steps by 1
	if got := l.Now(); got != 0 {
		t.Fatalf("zero clock reads %d, want 0", got)
	}
	if got := l.Tick(); got != 1 {
		t.Errorf("Tick = %d, want 1", got)
	}
	if got := l.Send(); got != 2 {
		t.Errorf("Send = %d, want 2", got)
	}
	// Receipt of an older timestamp: max keeps the local count, then tick.
	if got := l.Recv(1); got != 3 {
		t.Errorf("Recv(1) = %d, want 3", got)
	}
	// Receipt of a newer timestamp: jump to it, then tick.
	if got := l.Recv(10); got != 11 {
		t.Errorf("Recv(10) = %d, want 11", got)
	}
	if got := l.Now(); got != 11 {
		t.Errorf("Now = %d, want 11", got)
	}
	if got := l.Advance(5); got != 16 {
		t.Errorf("Advance(5) = %d, want 16", got)
	}
}

func TestLamportRate(t *testing.T) {
	l := logical.NewLamport(100, 7)
	if got := l.Tick(); got != 107 {
		t.Errorf("Tick = %d, want 107", got)
	}
	if got := l.Recv(200); got != 207 {
		t.Errorf("Recv(200) = %d, want 207", got)
	}
	z := logical.NewLamport(0, 0)
	if z.Rate() != 1 || z.Tick() != 1 {
		t.Errorf("rate 0 should step by 1")
	}
}

func TestLamportWitness(t *testing.T) {
	l := logical.NewLamport(50, 8)
	if got := l.Witness(10); got != 50 {
		t.Errorf("Witness of an earlier send moved the clock to %d, want 50", got)
	}
	if got := l.Witness(50); got != 51 {
		t.Errorf("Witness(50) at 50 = %d, want 51", got)
	}
	if got := l.Witness(60); got != 61 {
		t.Errorf("Witness(60) = %d, want 61", got)
	}
}

// TestLamportDriftingClocks reproduces the figure of Tanenbaum & van Steen
// §6.2 in which Lamport's rule corrects three clocks that run at different
// rates. P1, P2 and P3 of the figure are processes 0, 1 and 2; their clocks
// advance 6, 8 and 10 units per tick. Each message is sent at the reading
// of the sender's clock and, on arrival, the receiver's clock is moved past
// it with Witness.
func TestLamportDriftingClocks(t *testing.T) {
	clocks := []logical.Lamport{
		logical.NewLamport(0, 6),  // P1: 0, 6, 12, 18, ...
		logical.NewLamport(0, 8),  // P2: 0, 8, 16, 24, ...
		logical.NewLamport(0, 10), // P3: 0, 10, 20, 30, ...
	}
	type message struct {
		name       string
		from, to   proc.ID
		sendTick   int    // global tick at which it is sent
		recvTick   int    // global tick at which it arrives
		sentAt     uint64 // sender's reading: ts(m)
		arrivesAt  uint64 // receiver's reading on arrival, before correction
		receivedAt uint64 // receiver's reading after correction
	}
	script := []message{
		{"m1", 0, 1, 1, 2, 6, 16, 16},  // fine
		{"m2", 1, 2, 3, 4, 24, 40, 40}, // fine
		{"m3", 2, 1, 6, 7, 60, 56, 61}, // impossible: P2 moves to 61
		{"m4", 1, 0, 8, 9, 69, 54, 70}, // 69 = 61+8; impossible: P1 moves to 70
	}
	ts := make([]uint64, len(script)) // ts[i]: the timestamp m_i carries
	for tick := 1; tick <= 9; tick++ {
		for i := range clocks {
			clocks[i].Tick()
		}
		for i, m := range script {
			if m.sendTick != tick {
				continue
			}
			ts[i] = clocks[m.from].Now()
			if ts[i] != m.sentAt {
				t.Errorf("%s: %v sends at %d, want %d", m.name, m.from, ts[i], m.sentAt)
			}
		}
		for i, m := range script {
			if m.recvTick != tick {
				continue
			}
			if got := clocks[m.to].Now(); got != m.arrivesAt {
				t.Errorf("%s: arrives when %v reads %d, want %d", m.name, m.to, got, m.arrivesAt)
			}
			got := clocks[m.to].Witness(ts[i])
			if got != m.receivedAt {
				t.Errorf("%s: %v corrected to %d, want %d", m.name, m.to, got, m.receivedAt)
			}
			if got <= ts[i] {
				t.Errorf("%s: received at %d, not later than sent at %d", m.name, got, ts[i])
			}
		}
	}
	// After correction each clock keeps its own rate from the corrected value.
	for i, want := range []uint64{70, 69 + 8, 90} {
		if got := clocks[i].Now(); got != want {
			t.Errorf("after the run P%d reads %d, want %d", i+1, got, want)
		}
	}
}

func TestTimestampOrder(t *testing.T) {
	tests := []struct {
		a, b logical.Timestamp
		want int
	}{
		{logical.Timestamp{C: 1, P: 0}, logical.Timestamp{C: 2, P: 0}, -1},
		{logical.Timestamp{C: 3, P: 0}, logical.Timestamp{C: 2, P: 5}, +1},
		{logical.Timestamp{C: 4, P: 1}, logical.Timestamp{C: 4, P: 2}, -1}, // tie broken by id
		{logical.Timestamp{C: 4, P: 2}, logical.Timestamp{C: 4, P: 1}, +1},
		{logical.Timestamp{C: 4, P: 2}, logical.Timestamp{C: 4, P: 2}, 0},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := tt.a.Less(tt.b); got != (tt.want < 0) {
			t.Errorf("%v.Less(%v) = %v", tt.a, tt.b, got)
		}
	}
	if got := (logical.Timestamp{C: 4, P: 2}).String(); got != "(4,p2)" {
		t.Errorf("String = %q, want %q", got, "(4,p2)")
	}
}

// TestScalarForm uses the scalar form T(e) = 10·L(e) + id of Lamport
// timestamps (ties broken by process id, Lamport 1978), with processes 1..3
// and initial timestamps P1: 421, P2: 112, P3: 143.
func TestScalarForm(t *testing.T) {
	const m = 10
	cases := []struct {
		l  uint64
		id proc.ID
		ts uint64
	}{
		{42, 1, 421},
		{11, 2, 112},
		{14, 3, 143},
	}
	for _, s := range cases {
		if got := logical.Scalar(s.l, s.id, m); got != s.ts {
			t.Errorf("Scalar(%d, %d, %d) = %d, want %d", s.l, s.id, m, got, s.ts)
		}
		got, err := logical.CheckedScalar(s.l, s.id, m)
		if err != nil || got != s.ts {
			t.Errorf("CheckedScalar(%d, %d, %d) = %d, %v; want %d", s.l, s.id, m, got, err, s.ts)
		}
		c, p, err := logical.SplitScalar(s.ts, m)
		if err != nil || c != s.l || p != s.id {
			t.Errorf("SplitScalar(%d, %d) = %d, %v, %v; want %d, %v", s.ts, m, c, p, err, s.l, s.id)
		}
	}
}

func TestScalarErrors(t *testing.T) {
	bad := []struct {
		c uint64
		p proc.ID
		m uint64
	}{
		{1, 3, 3},                      // p == m
		{1, 4, 3},                      // p > m
		{1, -1, 3},                     // negative process
		{1, 0, 0},                      // no room for any process
		{math.MaxUint64 / 10, 6, 10},   // overflows by the process id
		{math.MaxUint64/10 + 1, 0, 10}, // overflows by the product
	}
	for _, b := range bad {
		if s, err := logical.CheckedScalar(b.c, b.p, b.m); !errors.Is(err, logical.ErrScalarRange) {
			t.Errorf("CheckedScalar(%d, %d, %d) = %d, %v; want ErrScalarRange", b.c, b.p, b.m, s, err)
		}
		logical.Scalar(b.c, b.p, b.m) // meaningless but must not panic
	}
	if _, err := logical.CheckedScalar(math.MaxUint64/10, 5, 10); err != nil {
		t.Errorf("largest scalar rejected: %v", err)
	}
	for _, m := range []uint64{0, math.MaxInt32 + 2, math.MaxUint64} {
		if _, _, err := logical.SplitScalar(12345, m); !errors.Is(err, logical.ErrScalarRange) {
			t.Errorf("SplitScalar(12345, %d): err = %v, want ErrScalarRange", m, err)
		}
	}
	c, p, err := logical.SplitScalar(math.MaxUint64, math.MaxInt32+1)
	if err != nil || p != math.MaxInt32 || c*(math.MaxInt32+1)+uint64(p) != math.MaxUint64 {
		t.Errorf("SplitScalar with the largest multiplier = %d, %d, %v", c, p, err)
	}
}
